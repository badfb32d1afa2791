// The kill -9 campaign (issue 15), run by scripts/crash-soak.sh: N cycles of mixed load on ONE
// datadir, each ended by SIGKILL at a random moment while load is in flight, then a restart and
// a check, through JSON-RPC, of everything the node acknowledged before.
//
//   node scripts/crash-soak.mjs N   (the .sh sets HEARTH_BIN, SOAK_DIR, SHARED_DIR, SEED, JS_DIR)
//
// Modes alternate by restarting with other flags: odd cycles automine, even cycles interval
// mining (--block-time 0.2). The load, from the 10 dev accounts at once: eth_sendTransaction
// and signed eth_sendRawTransaction (EIP-1559, legacy, EIP-2930) ETH transfers, deploys of
// 24,015 bytes of generated initcode (a 24,000-byte contract) and of BenchToken, and
// BenchToken.hashLoop calls with a 29M gas limit.
//
// Acknowledged: with automine, the node answered the send with a hash (the receipt exists when
// it does); with interval mining, a receipt was seen. Kept across cycles: every acknowledged
// hash with its receipt's block and status, and every block hash seen per number (during the
// load, and every block walked after a restart). After each restart: every acknowledged receipt
// must be there in the same block with the same status ("lost" otherwise), every block hash
// seen before unchanged ("changed" otherwise). Then the blocks mined since the last check are
// walked (parent hashes linked), and the state at the head must equal what those blocks and
// their receipts imply: each tracked account's nonce is the number of its transactions on chain
// and its balance is the genesis balance minus value and gas paid plus value received (and
// priority fees for the coinbase); each deployed contract's code hash is that of the code it
// was created with. And the address index agrees with those blocks: each dev sender's
// transactions are all in its Otterscan search (ots_searchTransactionsBefore, paged), and
// everything a search lists is a transaction of the chain (none of a block the kill cut off).
//
// SEED fixes the schedule: each cycle's mode and kill delay, and the sequence of values, targets
// and code each sender draws. Where exactly the kill lands inside the node, and so how many
// transactions a cycle gets through, still depends on timing.
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";

const jsDir = process.env.JS_DIR ?? "/tmp/hearth-js";
const { ethers } = await import(`${jsDir}/node_modules/ethers/lib.esm/index.js`);

const CYCLES = Number(process.argv[2]);
const BIN = process.env.HEARTH_BIN;
const WORK = process.env.SOAK_DIR;
const SHARED = process.env.SHARED_DIR;
const SEED = Number(process.env.SEED);
// Proof that the checks can fail: just before the first kill, "revert" rolls the chain back to
// where the load began (evm_revert), "balance" sets a tracked balance (anvil_setBalance). Either
// must end the run with exit 1.
const SABOTAGE = process.env.SOAK_SABOTAGE ?? "";
if (!["", "revert", "balance"].includes(SABOTAGE)) {
  console.error(`SOAK_SABOTAGE must be revert or balance, got ${SABOTAGE}`);
  process.exit(2);
}
if (!Number.isInteger(CYCLES) || CYCLES < 1 || !BIN || !WORK || !SHARED || !Number.isInteger(SEED)) {
  console.error("run through scripts/crash-soak.sh N");
  process.exit(2);
}
const DATADIR = `${WORK}/chain`;
const MNEMONIC = "test test test test test test test test test test test junk";
const CHAIN_ID = 31337n;
const INTERVAL_FLAGS = ["--block-time", "0.2"];
// A kill lands between these many milliseconds after the load starts.
const KILL_MIN_MS = 500;
const KILL_MAX_MS = 3000;
// Bounds on every wait, so a hung node fails the run instead of stalling it.
const START_TIMEOUT_MS = 30_000;
const RPC_TIMEOUT_MS = 60_000;
// hashLoop(30000) uses about 22.1M gas (its memory grows each round), under the 29M limit.
const HASH_LOOP_ROUNDS = 30_000n;
const BIG_GAS = 29_000_000n;
const RUNTIME_BYTES = 24_000;
const GWEI = 1_000_000_000n;

const token = JSON.parse(readFileSync(`${SHARED}/peers/build/BenchToken.json`, "utf8"));
const TOKEN_INITCODE = token.bytecode.startsWith("0x") ? token.bytecode : `0x${token.bytecode}`;
const TOKEN_CODE_HASH = ethers.keccak256(
  token.deployedBytecode.startsWith("0x") ? token.deployedBytecode : `0x${token.deployedBytecode}`,
);
const HASH_LOOP_DATA =
  `0x${token.methodIdentifiers["hashLoop(uint256)"]}` + HASH_LOOP_ROUNDS.toString(16).padStart(64, "0");

// mulberry32: small, seedable, good enough to pick delays and values.
const prng = (seed) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};
const schedule = prng(SEED);
const plan = Array.from({ length: CYCLES }, (_, i) => ({
  interval: i % 2 === 1,
  killAfterMs: Math.round(KILL_MIN_MS + schedule() * (KILL_MAX_MS - KILL_MIN_MS)),
  seed: Math.floor(schedule() * 2 ** 32),
}));

const log = (line) => process.stderr.write(`${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hex = (n) => `0x${BigInt(n).toString(16)}`;
const lower = (a) => a.toLowerCase();

// ---- JSON-RPC over HTTP ----------------------------------------------------------------------

/** A JSON-RPC error answer: the node is up and refused or failed the request. */
class RpcError extends Error {
  constructor(method, error) {
    super(`${method}: ${error.code} ${error.message}`);
    this.code = error.code;
  }
}
let url = null;
const post = async (body) => {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(RPC_TIMEOUT_MS),
  });
  return res.json();
};
const rpc = async (method, params = []) => {
  const body = await post({ jsonrpc: "2.0", id: 1, method, params });
  if (body.error) throw new RpcError(method, body.error);
  return body.result;
};
// Many calls in batches of `size`; every answer must be a result.
const batch = async (calls, size = 500) => {
  const out = [];
  for (let i = 0; i < calls.length; i += size) {
    const chunk = calls.slice(i, i + size);
    const body = await post(chunk.map(([method, params], id) => ({ jsonrpc: "2.0", id, method, params })));
    if (!Array.isArray(body)) throw new RpcError("batch", body.error ?? { code: 0, message: "not a batch answer" });
    const byId = new Map(body.map((item) => [item.id, item]));
    chunk.forEach(([method], id) => {
      const item = byId.get(id);
      if (!item || item.error) throw new RpcError(method, item?.error ?? { code: 0, message: "no answer" });
      out.push(item.result);
    });
  }
  return out;
};

// ---- the node --------------------------------------------------------------------------------

let node = null; // { child, exited (a promise of its exit), logPath, gone (it has exited) }
let starts = 0;
const tail = (path, lines = 15) => {
  try {
    return readFileSync(path, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
};
const fail = (why) => {
  log(`crash-soak: FAIL: ${why}`);
  if (node) log(`last node log (${node.logPath}):\n${tail(node.logPath)}`);
  stopNode("SIGKILL");
  process.exit(1);
};

// Anything unexpected (a check's request refused, a malformed answer) ends the run the same way,
// with the node's log.
process.on("uncaughtException", (e) => fail(e.stack ?? String(e)));
process.on("unhandledRejection", (e) => fail(e?.stack ?? String(e)));

const startNode = async (interval) => {
  starts += 1;
  const logPath = `${WORK}/node-${starts}.log`;
  const fd = openSync(logPath, "w");
  const args = ["--dev", "--datadir", DATADIR, "--http.port", "0", ...(interval ? INTERVAL_FLAGS : [])];
  const child = spawn(BIN, args, { stdio: ["ignore", fd, fd] });
  closeSync(fd);
  // The .sh kills this pid if the driver itself dies.
  writeFileSync(`${WORK}/hearth.pid`, String(child.pid));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  node = { child, exited, logPath, gone: false };
  exited.then(() => { node && node.child === child && (node.gone = true); });
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const m = /listening on (http:\/\/[0-9.:]+)/.exec(readFileSync(logPath, "utf8"));
    if (m) { url = m[1]; break; }
    if (node.gone) fail(`hearth exited on start ${starts} (${args.join(" ")})`);
    if (Date.now() > deadline) fail(`hearth did not report its address within ${START_TIMEOUT_MS} ms`);
    await sleep(25);
  }
};
const stopNode = (signal) => {
  if (node && !node.gone) node.child.kill(signal);
};

// ---- what the node told us, kept across cycles -------------------------------------------------

const acked = new Map(); // tx hash -> { kind, cycle, receipt: {block, blockHash, status} | null }
const seenBlocks = new Map(); // number -> hash, as served during a load or walked after a restart
const ackedByKind = new Map();
let walkedTo = 0; // blocks 0..walkedTo are in the ledger
const chainHashes = new Map(); // number -> hash of every walked block
const chainTxs = new Set(); // hash of every transaction of the walked blocks
const sentBy = new Map(); // lowercase sender -> hashes of its walked transactions
const balances = new Map(); // lowercase address -> expected balance (bigint)
const nonces = new Map(); // lowercase address -> transactions on chain
const contracts = new Map(); // lowercase address -> expected code hash, for every contract created
const runtimeHash = new Map(); // initcode keccak -> keccak of the code it deploys
let lost = 0;
let changed = 0;
let mismatches = 0;
const problems = [];
const problem = (kind, line) => {
  if (kind === "lost") lost += 1;
  else if (kind === "changed") changed += 1;
  else mismatches += 1;
  if (problems.length < 20) {
    problems.push(line);
    log(`  ${kind}: ${line}`);
  } else if (problems.length === 20) {
    problems.push("(more not shown)");
    log("  (more problems not shown)");
  }
};

const seeBlock = (number, hash, where) => {
  const n = Number(number);
  const known = seenBlocks.get(n);
  if (known === undefined) seenBlocks.set(n, hash);
  else if (known !== hash) problem("changed", `block ${n} was ${known}, ${where} says ${hash}`);
};
const ack = (hash, kind, cycle, receipt) => {
  if (acked.has(hash)) return;
  acked.set(hash, { kind, cycle, receipt: null });
  ackedByKind.set(kind, (ackedByKind.get(kind) ?? 0) + 1);
  if (receipt) noteReceipt(hash, receipt, "its receipt");
};
const noteReceipt = (hash, r, where) => {
  const entry = acked.get(hash);
  entry.receipt = { block: Number(r.blockNumber), blockHash: r.blockHash, status: r.status };
  seeBlock(r.blockNumber, r.blockHash, `${where} of ${hash}`);
};

// ---- accounts and transactions -------------------------------------------------------------

const wallets = Array.from({ length: 10 }, (_, i) =>
  ethers.HDNodeWallet.fromPhrase(MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`),
);
const dev = wallets.map((w) => w.address);
const recipients = Array.from({ length: 8 }, (_, i) => `0x5eed${(i + 1).toString(16).padStart(36, "0")}`);
let target = null; // the BenchToken whose hashLoop the large transactions call

// 24,015 bytes of initcode that return the 24,000 bytes after its 15-byte header.
const generatedInitcode = (rand) => {
  const runtime = new Uint8Array(RUNTIME_BYTES);
  for (let i = 1; i < RUNTIME_BYTES; i++) runtime[i] = Math.floor(rand() * 256);
  runtime[0] = 0x00; // STOP, and never 0xEF (EIP-3541)
  const len = RUNTIME_BYTES.toString(16).padStart(4, "0");
  // PUSH2 len, PUSH2 15, PUSH1 0, CODECOPY, PUSH2 len, PUSH1 0, RETURN
  const init = `0x61${len}61000f60003961${len}6000f3${ethers.hexlify(runtime).slice(2)}`;
  runtimeHash.set(ethers.keccak256(init), ethers.keccak256(runtime));
  return init;
};

const signRaw = (wallet, fields) => {
  const tx = ethers.Transaction.from({ chainId: CHAIN_ID, ...fields });
  tx.signature = wallet.signingKey.sign(tx.unsignedHash);
  return tx.serialized;
};

// One kind of load from one account: how it builds its next send, how many of its sends may
// wait unmined under interval mining, and how many it keeps in flight at once. Signed senders
// send one at a time: a later nonce arriving first would be queued, answered before it can be
// mined, and so acknowledged without a receipt.
const workers = [
  { kind: "transfer eth_sendTransaction", account: 0, window: 48, lanes: 4 },
  { kind: "transfer eth_sendTransaction", account: 1, window: 48, lanes: 4 },
  { kind: "transfer raw EIP-1559", account: 2, window: 48, raw: true },
  { kind: "transfer raw EIP-1559", account: 3, window: 48, raw: true },
  { kind: "transfer raw legacy/EIP-2930", account: 4, window: 48, raw: true },
  { kind: "deploy 24 KB eth_sendTransaction", account: 5, window: 3 },
  { kind: "deploy BenchToken raw", account: 6, window: 3, raw: true },
  { kind: "hashLoop 29M gas raw", account: 7, window: 1, raw: true },
  { kind: "hashLoop 29M gas eth_sendTransaction", account: 8, window: 1 },
  { kind: "transfer raw to dev accounts", account: 9, window: 48, raw: true },
];
const KINDS = [...new Set(workers.map((w) => w.kind))];

// The JSON-RPC call for the worker's next transaction.
const nextSend = (w, rand, nonce, maxFee) => {
  const from = dev[w.account];
  const value = 1n + BigInt(Math.floor(rand() * 1e12));
  const tip = 1n * GWEI;
  const wallet = wallets[w.account];
  switch (w.account) {
    case 0:
    case 1:
      return ["eth_sendTransaction", [{ from, to: recipients[Math.floor(rand() * 8)], value: hex(value) }]];
    case 2:
    case 3:
    case 9: {
      const to = w.account === 9 ? dev[Math.floor(rand() * 9)] : recipients[Math.floor(rand() * 8)];
      return ["eth_sendRawTransaction", [signRaw(wallet, {
        type: 2, nonce, to, value, gasLimit: 21_000n, maxFeePerGas: maxFee, maxPriorityFeePerGas: tip,
      })]];
    }
    case 4: {
      const type = rand() < 0.5 ? 0 : 1;
      return ["eth_sendRawTransaction", [signRaw(wallet, {
        type, nonce, to: recipients[Math.floor(rand() * 8)], value, gasLimit: 21_000n, gasPrice: maxFee,
        ...(type === 1 ? { accessList: [] } : {}),
      })]];
    }
    case 5:
      return ["eth_sendTransaction", [{ from, data: generatedInitcode(rand), gas: hex(6_000_000) }]];
    case 6:
      return ["eth_sendRawTransaction", [signRaw(wallet, {
        type: 2, nonce, data: TOKEN_INITCODE, gasLimit: 1_000_000n, maxFeePerGas: maxFee, maxPriorityFeePerGas: tip,
      })]];
    case 7:
      return ["eth_sendRawTransaction", [signRaw(wallet, {
        type: 2, nonce, to: target, data: HASH_LOOP_DATA, gasLimit: BIG_GAS, maxFeePerGas: maxFee, maxPriorityFeePerGas: tip,
      })]];
    default:
      return ["eth_sendTransaction", [{ from, to: target, data: HASH_LOOP_DATA, gas: hex(BIG_GAS) }]];
  }
};

// ---- one cycle of load -------------------------------------------------------------------------

const runLoad = async (cycle, p) => {
  const state = { killed: false, busy: 0, errors: 0, firstErrors: [], late: 0, acks: 0 };
  const rpcError = (e) => {
    state.errors += 1;
    if (state.firstErrors.length < 3) state.firstErrors.push(e.message);
  };
  const baseFee = BigInt((await rpc("eth_getBlockByNumber", ["latest", false])).baseFeePerGas);
  // Room for the base fee to rise tenfold during the cycle.
  const maxFee = 10n * baseFee + 2n * GWEI;
  const startNonces = await batch(dev.map((a) => ["eth_getTransactionCount", [a, "pending"]]));
  const pending = new Map(); // interval mode: hash -> worker index, sent and not yet seen mined
  const inFlight = workers.map(() => 0);

  const work = (w, i) => {
    const rand = prng(p.seed ^ Math.imul(i + 1, 0x9e3779b1));
    const nonce = { next: BigInt(startNonces[i]) };
    return Array.from({ length: w.lanes ?? 1 }, () => lane(w, i, rand, nonce));
  };
  const lane = async (w, i, rand, nonce) => {
    while (!state.killed) {
      if (p.interval && inFlight[i] >= w.window) {
        await sleep(10);
        continue;
      }
      const [method, params] = nextSend(w, rand, nonce.next, maxFee);
      let hash;
      try {
        hash = await rpc(method, params);
      } catch (e) {
        // -32005: a limit was hit and nothing was admitted (the executor pool was busy
        // estimating gas, say), so the same send is tried again.
        if (e instanceof RpcError && e.code === -32005) {
          if (state.killed) return;
          state.busy += 1;
          await sleep(5);
          continue;
        }
        // Refused otherwise while the node was up: this worker stops for the cycle (its nonces
        // would gap).
        if (e instanceof RpcError || !state.killed) rpcError(e);
        return;
      }
      nonce.next += 1n;
      if (!p.interval) {
        ack(hash, w.kind, cycle, null);
        state.acks += 1;
        try {
          const r = await rpc("eth_getTransactionReceipt", [hash]);
          if (r) noteReceipt(hash, r, "the receipt");
          else state.late += 1;
        } catch (e) {
          if (e instanceof RpcError || !state.killed) rpcError(e);
          return;
        }
      } else {
        pending.set(hash, i);
        inFlight[i] += 1;
      }
    }
  };
  // Interval mode: a transaction is acknowledged once its receipt is seen.
  const pollReceipts = async () => {
    while (!state.killed) {
      const hashes = [...pending.keys()];
      if (hashes.length) {
        let receipts;
        try {
          receipts = await batch(hashes.map((h) => ["eth_getTransactionReceipt", [h]]));
        } catch (e) {
          if (state.killed) return;
          rpcError(e);
          receipts = [];
        }
        receipts.forEach((r, j) => {
          if (!r) return;
          const i = pending.get(hashes[j]);
          pending.delete(hashes[j]);
          inFlight[i] -= 1;
          ack(hashes[j], workers[i].kind, cycle, r);
          state.acks += 1;
        });
      }
      await sleep(20);
    }
  };
  // Block hashes as served while the load runs (empty interval blocks have no receipt).
  const pollHead = async () => {
    while (!state.killed) {
      try {
        const b = await rpc("eth_getBlockByNumber", ["latest", false]);
        seeBlock(b.number, b.hash, "the head poll");
      } catch (e) {
        if (state.killed) return;
        rpcError(e);
      }
      await sleep(100);
    }
  };

  const snapshot = SABOTAGE === "revert" && cycle === 1 ? await rpc("evm_snapshot") : null;
  const tasks = [...workers.flatMap(work), pollHead(), ...(p.interval ? [pollReceipts()] : [])];
  const t0 = Date.now();
  await sleep(p.killAfterMs);
  state.killed = true;
  state.killMs = Date.now() - t0;
  if (snapshot) await rpc("evm_revert", [snapshot]);
  if (SABOTAGE === "balance" && cycle === 1) await rpc("anvil_setBalance", [recipients[0], "0x1"]);
  stopNode("SIGKILL");
  const exit = await node.exited;
  if (exit.signal !== "SIGKILL") fail(`hearth had exited on its own before the kill: ${JSON.stringify(exit)}`);
  // Answers already on their way still count: the node gave them before it died.
  await Promise.all(tasks);
  return state;
};

// ---- checks after a restart ------------------------------------------------------------------

// Starts following an account from genesis; a contract created on chain starts at nonce 1
// (EIP-161).
const track = async (address) => {
  const a = lower(address);
  if (balances.has(a)) return;
  balances.set(a, BigInt(await rpc("eth_getBalance", [address, "0x0"])));
  nonces.set(a, contracts.has(a) ? 1 : 0);
};

const verify = async () => {
  const head = Number(await rpc("eth_blockNumber"));
  // 1. Every block hash seen before (during a load or an earlier walk), unchanged.
  const numbers = [...seenBlocks.keys()];
  const blocks = await batch(numbers.map((n) => ["eth_getBlockByNumber", [hex(n), false]]), 200);
  blocks.forEach((b, j) => {
    const want = seenBlocks.get(numbers[j]);
    if (!b) problem("changed", `block ${numbers[j]} (${want}) is gone (head ${head})`);
    else if (b.hash !== want) problem("changed", `block ${numbers[j]} was ${want}, now ${b.hash}`);
  });
  // 2. Every acknowledged transaction, in the same block with the same status.
  const hashes = [...acked.keys()];
  const receipts = await batch(hashes.map((h) => ["eth_getTransactionReceipt", [h]]));
  receipts.forEach((r, j) => {
    const entry = acked.get(hashes[j]);
    const what = `${entry.kind} ${hashes[j]} (acknowledged in cycle ${entry.cycle})`;
    if (!r) return problem("lost", `${what}: no receipt`);
    const k = entry.receipt;
    if (!k) return noteReceipt(hashes[j], r, "the receipt after restart");
    if (r.blockHash !== k.blockHash || Number(r.blockNumber) !== k.block || r.status !== k.status) {
      problem("lost", `${what}: was block ${k.block} ${k.blockHash} status ${k.status}, now block ` +
        `${Number(r.blockNumber)} ${r.blockHash} status ${r.status}`);
    }
  });
  // 3. Walk the blocks mined since the last check into the ledger.
  // Five full blocks per request: an interval block can carry over a megabyte of transactions,
  // and a response is capped at 25 MiB.
  for (let from = walkedTo + 1; from <= head; from += 5) {
    const to = Math.min(head, from + 4);
    const range = Array.from({ length: to - from + 1 }, (_, k) => from + k);
    const full = await batch(range.map((n) => ["eth_getBlockByNumber", [hex(n), true]]));
    const txs = full.flatMap((b) => b.transactions);
    const rs = await batch(txs.map((t) => ["eth_getTransactionReceipt", [t.hash]]));
    const receiptOf = new Map(txs.map((t, k) => [t.hash, rs[k]]));
    for (const b of full) {
      const n = Number(b.number);
      const parent = chainHashes.get(n - 1);
      if (b.parentHash !== parent) problem("changed", `block ${n} has parent ${b.parentHash}, block ${n - 1} is ${parent}`);
      chainHashes.set(n, b.hash);
      // Served after a restart, so checked after every later one too.
      seeBlock(n, b.hash, "the walk");
      await track(b.miner);
      for (const t of b.transactions) {
        const r = receiptOf.get(t.hash);
        if (!r) { problem("mismatch", `transaction ${t.hash} of block ${n} has no receipt`); continue; }
        const from = lower(t.from);
        chainTxs.add(t.hash);
        if (!sentBy.has(from)) sentBy.set(from, new Set());
        sentBy.get(from).add(t.hash);
        await track(t.from);
        if (Number(t.nonce) !== nonces.get(from)) {
          problem("mismatch", `block ${n}: ${t.hash} from ${t.from} has nonce ${Number(t.nonce)}, expected ${nonces.get(from)}`);
        }
        nonces.set(from, Number(t.nonce) + 1);
        const price = BigInt(r.effectiveGasPrice);
        const fee = BigInt(r.gasUsed) * price;
        let delta = fee;
        if (r.status === "0x1") {
          delta += BigInt(t.value);
          if (t.to) {
            await track(t.to);
            balances.set(lower(t.to), balances.get(lower(t.to)) + BigInt(t.value));
          } else if (r.contractAddress) {
            const expected = lower(t.input) === lower(TOKEN_INITCODE) ? TOKEN_CODE_HASH : runtimeHash.get(ethers.keccak256(t.input));
            if (!expected) problem("mismatch", `${t.hash} of block ${n} created ${r.contractAddress} from code this run did not send`);
            else contracts.set(lower(r.contractAddress), expected);
          }
        }
        balances.set(from, balances.get(from) - delta);
        const miner = lower(b.miner);
        balances.set(miner, balances.get(miner) + BigInt(r.gasUsed) * (price - BigInt(b.baseFeePerGas)));
      }
    }
    walkedTo = to;
  }
  // 4. The state at the head equals what the blocks and receipts imply.
  const at = hex(head);
  const accounts = [...balances.keys()];
  const got = await batch(accounts.flatMap((a) => [["eth_getBalance", [a, at]], ["eth_getTransactionCount", [a, at]]]));
  accounts.forEach((a, k) => {
    const bal = BigInt(got[2 * k]);
    const nonce = Number(got[2 * k + 1]);
    if (bal !== balances.get(a)) problem("mismatch", `balance of ${a} at ${head} is ${bal}, the receipts say ${balances.get(a)}`);
    if (nonce !== nonces.get(a)) problem("mismatch", `nonce of ${a} at ${head} is ${nonce}, the chain has ${nonces.get(a)} transactions from it`);
  });
  const addrs = [...contracts.keys()];
  const proofs = await batch(addrs.map((a) => ["eth_getProof", [a, [], at]]), 100);
  proofs.forEach((p, k) => {
    if (p.codeHash !== contracts.get(addrs[k])) {
      problem("mismatch", `code hash of ${addrs[k]} is ${p.codeHash}, it was created with ${contracts.get(addrs[k])}`);
    }
  });
  // 5. The address index: every walked transaction of each dev sender is listed, and what is
  // listed is a transaction of the chain.
  let indexed = 0;
  for (const sender of dev) {
    const found = new Set();
    let before = 0;
    for (let pages = 0; pages < 10_000; pages++) {
      const page = await rpc("ots_searchTransactionsBefore", [sender, before, 100]);
      for (const t of page.txs) {
        if (!t || !chainTxs.has(t.hash)) problem("mismatch", `the address index lists ${t && t.hash} for ${sender}: not a transaction of the chain`);
        else found.add(t.hash);
      }
      if (page.lastPage || page.txs.length === 0) break;
      before = Number(page.txs[page.txs.length - 1].blockNumber);
    }
    for (const h of sentBy.get(lower(sender)) ?? []) {
      if (!found.has(h)) problem("mismatch", `the address index misses ${h} sent by ${sender}`);
    }
    indexed += found.size;
  }
  return { head, blocks: numbers.length, receipts: hashes.length, accounts: accounts.length, contracts: addrs.length, indexed };
};

// ---- the campaign -------------------------------------------------------------------------------

const t0 = Date.now();
log(`crash-soak: seed ${SEED} (SEED=${SEED} repeats this schedule), ${CYCLES} cycles, ${BIN}, datadir ${DATADIR}`);
await startNode(plan[0].interval);
const accounts = (await rpc("eth_accounts")).map(lower);
if (dev.some((a, i) => lower(a) !== accounts[i])) fail(`eth_accounts ${accounts} are not the dev mnemonic's`);
const genesis = await rpc("eth_getBlockByNumber", ["0x0", false]);
seeBlock(0, genesis.hash, "genesis");
chainHashes.set(0, genesis.hash);
for (const a of [...dev, ...recipients]) await track(a);
// The contract the large transactions call: deployed once by account 8, acknowledged like the rest.
{
  const hash = await rpc("eth_sendTransaction", [{ from: dev[8], data: TOKEN_INITCODE, gas: hex(1_000_000) }]);
  const r = await rpc("eth_getTransactionReceipt", [hash]);
  if (!r || r.status !== "0x1") fail(`the BenchToken deploy ${hash} has no successful receipt`);
  ack(hash, "deploy BenchToken (setup)", 0, r);
  target = r.contractAddress;
}

// Each restart after a kill already runs in the next cycle's mode; the last one in automine.
for (let c = 1; c <= CYCLES; c++) {
  const p = plan[c - 1];
  const load = await runLoad(c, p);
  const tRestart = Date.now();
  await startNode(c < CYCLES ? plan[c].interval : false);
  const restartMs = Date.now() - tRestart;
  const tVerify = Date.now();
  const v = await verify();
  const verifyMs = Date.now() - tVerify;
  const errs = load.errors ? `, ${load.errors} refused (${load.firstErrors.join("; ")})` : "";
  const busy = load.busy ? `, ${load.busy} busy answers retried` : "";
  const late = load.late ? `, ${load.late} acknowledged before their receipt` : "";
  log(`cycle ${c}/${CYCLES} ${p.interval ? "interval 0.2s" : "automine"}: kill -9 at ${(p.killAfterMs / 1000).toFixed(2)} s ` +
    `(landed ${(load.killMs / 1000).toFixed(2)} s), ` +
    `${load.acks} acknowledged${late}${busy}${errs}; restart ${restartMs} ms, head ${v.head}; checked ${v.receipts} receipts, ` +
    `${v.blocks} blocks, ${v.accounts} accounts, ${v.contracts} contracts, ${v.indexed} indexed transactions in ${verifyMs} ms: ${lost} lost, ${changed} changed, ${mismatches} mismatches`);
}
stopNode("SIGTERM");
await node.exited;

const quiet = KINDS.filter((k) => !ackedByKind.get(k));
// Every transaction of the load is meant to succeed: a failed one means it tests less than it says.
const failed = [...acked.values()].filter((e) => e.receipt && e.receipt.status !== "0x1");
const wall = ((Date.now() - t0) / 1000).toFixed(0);
console.log(`seed ${SEED}, wall time ${wall} s, ${CYCLES} cycles (${Math.ceil(CYCLES / 2)} automine, ${Math.floor(CYCLES / 2)} interval 0.2 s)`);
console.log(`acknowledged by kind: ${[...ackedByKind].map(([k, n]) => `${k} ${n}`).join(", ")}`);
console.log(`state checks: ${mismatches} balance, nonce, code or address index mismatches`);
if (problems.length) console.log(`first problems:\n  ${problems.join("\n  ")}`);
if (quiet.length) console.log(`no acknowledged transactions of: ${quiet.join(", ")} (the load did not run as meant)`);
if (failed.length) {
  const kinds = [...new Set(failed.map((e) => e.kind))].join(", ");
  console.log(`${failed.length} acknowledged transactions failed (status 0) among: ${kinds} (the load did not run as meant)`);
}
console.log(`${CYCLES} cycles, ${acked.size} acknowledged, ${lost} lost, ${changed} changed blocks`);
process.exit(lost || changed || mismatches || quiet.length || failed.length ? 1 : 0);
