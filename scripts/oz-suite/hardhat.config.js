// Hardhat config for timing OpenZeppelin Contracts' own suite against an outside node
// (scripts/oz-suite.sh copies it into the OZ checkout as hardhat.oz-suite.config.js and runs
// `hardhat --config hardhat.oz-suite.config.js ...`). It keeps the project's own config
// whole and changes only what the comparison needs:
//  - solc comes from solc-js (npm `solc`, wasm): Hardhat would otherwise download a native solc
//    from binaries.soliditylang.org, which this machine cannot reach;
//  - one `http` network, `bench`, at OZ_RPC_URL (the node under test), with the accounts the
//    node itself unlocks (anvil's and Hearth's 20 dev accounts: the suite signs through
//    eth_sendTransaction, as it does against `hardhat node`);
//  - mocha: a 20 s timeout per test, as in the runs of BENCHMARKS.md sessions 14 and 17
//    (Hardhat's default is 40 s; the project's .mocharc.js 4 s is for plain mocha), and a
//    reporter that prints spec output and writes counts and every failure, with its file, to
//    OZ_RESULT_JSON, after every file, so a run that is killed or aborted still leaves counts.
const path = require('path');
const fs = require('fs');
const config = require('./hardhat.config.js');
const { subtask, extendProvider } = require('hardhat/config');
const {
  TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD,
  TASK_TEST_GET_TEST_FILES,
} = require('hardhat/builtin-tasks/task-names');

subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async ({ solcVersion }, hre, runSuper) => {
  const solcPkg = require('solc/package.json');
  if (solcPkg.version !== solcVersion) {
    // Any other version: let Hardhat do as it does (and fail here, offline).
    return runSuper();
  }
  return {
    compilerPath: require.resolve('solc/soljson.js'),
    isSolcJs: true,
    version: solcVersion,
    longVersion: require('solc').version(),
  };
});

// OZ_EXCLUDE: test files (paths from the project root, space-separated) left out of a run that
// names no files, after Hardhat's own listing (and the project's own filter of it).
subtask(TASK_TEST_GET_TEST_FILES, async (args, hre, runSuper) => {
  const files = await runSuper(args);
  if (args.testFiles && args.testFiles.length) return files;
  const out = new Set((process.env.OZ_EXCLUDE || '').split(/\s+/).filter(Boolean)
    .map(f => path.resolve(hre.config.paths.root, f)));
  return files.filter(f => !out.has(f));
});

config.networks = config.networks || {};
config.networks.bench = {
  url: process.env.OZ_RPC_URL || 'http://127.0.0.1:8545',
  // Per JSON-RPC request (Hardhat's default 20 s): above mocha's 20 s, so a slow node shows as
  // a test's timeout, not as a request's error.
  timeout: 60000,
};

// OZ_WAIT_MINED=1: after each eth_sendTransaction / eth_sendRawTransaction, poll for the receipt
// before handing the hash back, so a node that answers before it mines (anvil) looks to the
// suite like one that answers once mined (Hardhat, Hearth). The suite is written for the
// latter: hardhat-chai-matchers reads the receipt once right after the send ("receipt should
// not be null"), and loadFixture takes its evm_snapshot right after the fixture's last send.
// Off by default; when on, it applies to every backend of the run (one more call per send).
// Not while the suite has turned automine off (test/helpers/txpool.js batches sends that way).
//
// What the wait cost, reported in OZ_RESULT_JSON: sends waited for, ms spent waiting, the sends
// that took over a second to show a receipt, and those given up on after OZ_WAIT_MINED_MS.
const waitStats = { sends: 0, waitedMs: 0, slow: 0, gaveUp: 0 };
if (process.env.OZ_WAIT_MINED === '1') {
  const maxMs = Number(process.env.OZ_WAIT_MINED_MS || 5000);
  extendProvider(async provider => {
    const { ProviderWrapper } = require('hardhat/plugins');
    class WaitMined extends ProviderWrapper {
      automine = true;
      async request(args) {
        const res = await this._wrappedProvider.request(args);
        if (args.method === 'evm_setAutomine') this.automine = !!(args.params && args.params[0]);
        if (this.automine && (args.method === 'eth_sendTransaction' || args.method === 'eth_sendRawTransaction')) {
          // Bounded in time: a transaction the node never mines goes on as it would without
          // the wait (the test then fails or times out as it would have).
          const ask = { method: 'eth_getTransactionReceipt', params: [res] };
          const t0 = Date.now();
          let got = false;
          for (let i = 0; !got && Date.now() - t0 < maxMs; i++) {
            got = (await this._wrappedProvider.request(ask)) !== null;
            if (!got) await new Promise(ok => setTimeout(ok, i < 10 ? 1 : 5));
          }
          const ms = Date.now() - t0;
          waitStats.sends++;
          waitStats.waitedMs += ms;
          if (ms > 1000) waitStats.slow++;
          if (!got) waitStats.gaveUp++;
        }
        return res;
      }
    }
    return new WaitMined(provider);
  });
}

// A spec reporter that also keeps counts per file. Mocha takes a constructor as `reporter`.
const Mocha = require('mocha');
const { Spec } = Mocha.reporters;
const {
  EVENT_RUN_BEGIN,
  EVENT_RUN_END,
  EVENT_SUITE_BEGIN,
  EVENT_SUITE_END,
  EVENT_TEST_FAIL,
  EVENT_TEST_PASS,
  EVENT_TEST_PENDING,
} = Mocha.Runner.constants;

class CountingSpec extends Spec {
  constructor(runner, options) {
    super(runner, options);
    const out = process.env.OZ_RESULT_JSON;
    const root = process.cwd() + path.sep;
    // planned: the tests mocha found; aborted: mocha stopped the run (an error thrown after a
    // test had passed, e.g. a promise nobody awaited rejecting: the project's
    // hardhat/async-test-sanity.js turns unhandled rejections into uncaught errors), in `file`.
    const res = {
      passing: 0, failing: 0, pending: 0, planned: 0, ended: false, aborted: false, file: null,
      files: {}, failures: [],
    };
    const fileOf = t => (t.file || (t.parent && t.parent.file) || '?').replace(root, '');
    const per = f => (res.files[f] = res.files[f] || { passing: 0, failing: 0, pending: 0 });
    const save = () => out && fs.writeFileSync(out, JSON.stringify({ ...res, wait: waitStats }, null, 1));
    runner.on(EVENT_RUN_BEGIN, () => { res.planned = runner.total; save(); });
    runner.on(EVENT_SUITE_BEGIN, s => { if (s.file) res.file = s.file.replace(root, ''); });
    runner.on(EVENT_TEST_PASS, t => { res.passing++; per(fileOf(t)).passing++; });
    runner.on(EVENT_TEST_PENDING, t => { res.pending++; per(fileOf(t)).pending++; });
    runner.on(EVENT_TEST_FAIL, (t, err) => {
      // Hooks fail too ("before each" hook ...): counted as failures, as mocha does.
      res.failing++;
      per(fileOf(t)).failing++;
      res.failures.push({
        file: fileOf(t),
        title: t.fullTitle(),
        error: String((err && err.message) || err).split('\n')[0].slice(0, 300),
      });
    });
    // After each top-level file's suite: a killed or aborted run still leaves what it did.
    runner.on(EVENT_SUITE_END, s => { if (s.parent && s.parent.root) save(); });
    runner.on(EVENT_RUN_END, () => { res.ended = true; res.aborted = !!runner._abort; save(); });
  }
}

config.mocha = {
  ...(config.mocha || {}),
  timeout: Number(process.env.OZ_MOCHA_TIMEOUT || 20000),
  reporter: CountingSpec,
};

module.exports = config;
