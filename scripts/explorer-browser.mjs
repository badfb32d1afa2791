// Drives the built-in block explorer (rpc/src/explorer/assets) in Debian's headless Chromium
// with playwright-core, and checks what it shows against the node's own JSON-RPC answers.
// Run by scripts/explorer-browser.sh, which starts the node and seeds the chain; by hand:
//   NODE_URL=http://127.0.0.1:8545/ SEED_FILE=seed.json node scripts/explorer-browser.mjs
// Environment:
//   NODE_URL          the node's JSON-RPC URL (required)
//   EXPLORER_URL      the page (default: NODE_URL, the node's own `/`, or the proxy below)
//   EXPLORER_SERVE    auto (default): the node's own page when it serves one, else the proxy;
//                     node: the node's own page or fail; proxy: always the proxy, which serves
//                     rpc/src/explorer/assets on another loopback port and forwards POST /,
//                     GET /metrics and the WebSocket to the node (same origin for the page)
//   SEED_FILE         what explorer-browser.sh sent (hashes, contracts); optional
//   EXPLORER_ARTIFACTS  set: the node runs with --artifacts naming DevToken (the .sh does)
//   SCREENSHOT_DIR    where the screenshots go (default /tmp/hearth-explorer-shots)
//   EXPLORER_NPM_DIR  where playwright-core is installed (default /tmp/hearth-explorer-npm)
//   CHROMIUM          the browser (default /usr/bin/chromium); never downloaded
//   EXPLORER_DEADLINE_S  the whole run's bound (default 100 s)
import { createRequire } from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rpcClient } from './explorer-lib.mjs';

const T0 = Date.now();
const DEADLINE_MS = 1000 * Number(process.env.EXPLORER_DEADLINE_S || 100);
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const ASSETS = path.join(ROOT, 'rpc/src/explorer/assets');
const NODE_URL = process.env.NODE_URL;
const SHOTS = process.env.SCREENSHOT_DIR || '/tmp/hearth-explorer-shots';
const NPM_DIR = process.env.EXPLORER_NPM_DIR || '/tmp/hearth-explorer-npm';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SERVE = process.env.EXPLORER_SERVE || 'auto';
const seed = process.env.SEED_FILE ? JSON.parse(fs.readFileSync(process.env.SEED_FILE, 'utf8')) : null;

let browser = null, proxy = null, userDataDir = null, passed = 0, failed = false;
// Reports the failure, closes the browser and the proxy, exits 1.
function report(msg) {
  if (failed) return;
  failed = true;
  console.error(`FAIL: ${msg}`);
  cleanup().finally(() => process.exit(1));
}
function fail(msg) {
  report(msg);
  throw new Error(msg); // stops the caller; report() ends the process
}
async function cleanup() {
  const b = browser; browser = null;
  if (b) await Promise.race([b.close().catch(() => {}), new Promise((r) => setTimeout(r, 3000))]);
  if (proxy) { proxy.closeAllConnections?.(); proxy.close(); proxy = null; }
  if (userDataDir) { fs.rmSync(userDataDir, { recursive: true, force: true }); userDataDir = null; }
}
const deadline = setTimeout(() => report(`timed out after ${DEADLINE_MS / 1000} s`), DEADLINE_MS);
deadline.unref();
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => report(`stopped by ${sig}`));
function check(cond, msg) {
  if (!cond) fail(msg);
  passed++;
}
if (!NODE_URL) report('set NODE_URL to the node\'s JSON-RPC URL (scripts/explorer-browser.sh does)');
if (!['auto', 'node', 'proxy'].includes(SERVE)) report(`EXPLORER_SERVE is auto, node or proxy, not ${SERVE}`);
const step = (msg) => console.log(`-- ${msg} (${((Date.now() - T0) / 1000).toFixed(1)} s)`);

// ---------------------------------------------------------------- the node's answers
const rpc = rpcClient(NODE_URL);
const hasMethod = async (method, params) => rpc(method, params).then(() => true, (e) => e.code !== -32601);
// The page's own formatting (app.js), to compare text.
const fmtInt = (x) => BigInt(x).toLocaleString('en-US');
function fmtEth(x) {
  const b = BigInt(x), v = b < 0n ? -b : b, base = 10n ** 18n;
  const frac = (v % base).toString().padStart(18, '0').replace(/0+$/, '');
  return (b < 0n ? '-' : '') + (v / base).toLocaleString('en-US') + (frac ? '.' + frac : '') + ' ETH';
}

// ---------------------------------------------------------------- the dev proxy
// Serves the assets as the node will (index.html at `/`, the rest under /explorer/) and
// forwards everything else to the node, so the page is same-origin with its RPC.
function startProxy() {
  const node = new URL(NODE_URL);
  const files = { '/': ['index.html', 'text/html; charset=utf-8'], '/explorer/app.js': ['app.js', 'text/javascript; charset=utf-8'], '/explorer/style.css': ['style.css', 'text/css; charset=utf-8'] };
  const server = http.createServer((req, res) => {
    const p = req.url.split('?')[0];
    if (req.method === 'GET' && files[p] && !(p === '/' && req.headers.upgrade)) {
      const [file, type] = files[p];
      res.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' });
      res.end(fs.readFileSync(path.join(ASSETS, file)));
      return;
    }
    const headers = { ...req.headers, host: node.host };
    const up = http.request({ host: node.hostname, port: node.port, method: req.method, path: req.url, headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
    req.pipe(up);
  });
  server.on('upgrade', (req, socket, head) => {
    const up = net.connect(Number(node.port), node.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const k = req.rawHeaders[i];
        lines.push(`${k}: ${k.toLowerCase() === 'host' ? node.host : req.rawHeaders[i + 1]}`);
      }
      up.write(lines.join('\r\n') + '\r\n\r\n');
      if (head && head.length) up.write(head);
      up.pipe(socket); socket.pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Whether the node serves the explorer at `/` to a browser, and serves it right.
async function nodeServesPage() {
  const res = await fetch(NODE_URL, { headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }, signal: AbortSignal.timeout(10_000) }).catch(() => null);
  if (!res || !res.ok) return false;
  return /hearth-explorer/.test(await res.text());
}
async function checkServedAssets(base) {
  for (const [p, file, type] of [['', 'index.html', 'text/html'], ['explorer/app.js', 'app.js', 'javascript'], ['explorer/style.css', 'style.css', 'text/css']]) {
    const res = await fetch(new URL(p, base), { headers: { Accept: p ? '*/*' : 'text/html' } });
    check(res.ok, `GET /${p}: HTTP ${res.status}`);
    check((res.headers.get('content-type') || '').includes(type), `GET /${p}: content-type ${res.headers.get('content-type')}, expected ${type}`);
    check(await res.text() === fs.readFileSync(path.join(ASSETS, file), 'utf8'), `GET /${p} is not rpc/src/explorer/assets/${file}`);
  }
}

// ---------------------------------------------------------------- the run
async function main() {
  fs.mkdirSync(SHOTS, { recursive: true });
  let pageUrl = process.env.EXPLORER_URL;
  if (!pageUrl) {
    const served = SERVE !== 'proxy' && await nodeServesPage();
    if (served) {
      pageUrl = NODE_URL;
      step(`the node serves the explorer itself at ${pageUrl}`);
      await checkServedAssets(pageUrl);
    } else if (SERVE === 'node') {
      fail(`the node does not serve the explorer page at ${NODE_URL} (GET / with Accept: text/html)`);
    } else {
      proxy = await startProxy();
      pageUrl = `http://127.0.0.1:${proxy.address().port}/`;
      step(`NOTE: ${SERVE === 'proxy' ? 'EXPLORER_SERVE=proxy' : 'the node does not serve the explorer page yet'}: serving rpc/src/explorer/assets at ${pageUrl}, proxied to ${NODE_URL}`);
    }
  }
  const origin = new URL(pageUrl).origin;
  const pw = createRequire(path.join(NPM_DIR, 'x.js'))('playwright-core');
  // A fresh profile (playwright passes it as --user-data-dir); the background-networking flags
  // keep Chromium from calling out, which this machine's closed network refuses.
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-explorer-chromium-'));
  const context = browser = await pw.chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, timeout: 30_000, viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  }).catch((e) => fail(`cannot start ${CHROMIUM}: ${e.message}`));
  context.setDefaultTimeout(10_000);
  const page = context.pages()[0] || await context.newPage();
  const pageErrors = [], foreign = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    // A node without /metrics (anvil) answers the page's probe with 404, which Chromium logs.
    const probe = /Failed to load resource/.test(m.text()) && /\/metrics$/.test(m.location().url || '');
    if (m.type() === 'error' && !probe) pageErrors.push(`console: ${m.text()}`);
  });
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (!['data:', 'about:'].includes(u.protocol) && u.origin !== origin && u.origin !== origin.replace(/^http/, 'ws')) foreign.push(r.url());
  });
  const text = async (testid) => (await page.getByTestId(testid).first().innerText()).trim();
  // The view for the current location has finished loading.
  const ready = async (view) => {
    await page.waitForFunction((v) => {
      const m = document.querySelector('#app');
      let p = location.hash.replace(/^#/, '') || '/';
      try { p = decodeURIComponent(p); } catch { /* as is */ }
      return m && m.dataset.route === p && m.dataset.ready === v;
    }, view, { timeout: 10_000 }).catch(() => fail(`the ${view} view did not finish loading (${page.url()})`));
    const banner = page.getByTestId('error-banner');
    if (await banner.isVisible()) fail(`error banner on the ${view} view: ${await page.locator('#error-text').innerText()}`);
  };
  const shot = async (name) => {
    const file = path.join(SHOTS, `${name}.png`);
    await page.evaluate(() => window.scrollTo(0, 0)); // else the sticky header lands mid-page
    await page.screenshot({ path: file, fullPage: true });
    console.log(`   screenshot ${file}`);
  };
  const expectText = async (testid, want, what) => {
    const got = await text(testid);
    check(got === want, `${what}: the page shows "${got}", the node says "${want}"`);
  };
  const expectContains = async (testid, want, what) => {
    const got = await text(testid);
    check(got.toLowerCase().includes(String(want).toLowerCase()), `${what}: "${got}" does not contain "${want}"`);
  };
  const otsBlock = await hasMethod('ots_getBlockTransactions', [0, 0, 1]);
  const otsSearch = await hasMethod('ots_searchTransactionsBefore', ['0x0000000000000000000000000000000000000000', 0, 1]);
  const decoded = await hasMethod('hearth_traceTransactionDecoded', ['0x' + '0'.repeat(64)]);
  step(`node methods: ots_getBlockTransactions ${otsBlock ? 'yes' : 'no'}, ots_searchTransactionsBefore ${otsSearch ? 'yes' : 'no'}, hearth_traceTransactionDecoded ${decoded ? 'yes' : 'no'}`);

  // 1. Home: head and recent blocks, live over the WebSocket, charts.
  step('home');
  const t = Date.now();
  await page.goto(pageUrl + '#/', { waitUntil: 'domcontentloaded' });
  await ready('home');
  console.log(`   home rendered in ${Date.now() - t} ms`);
  let head = BigInt(await rpc('eth_blockNumber'));
  await expectText('head-number', head.toString(), 'head block');
  const rows = await page.getByTestId('recent-blocks').locator('tbody tr').count();
  check(rows === Math.min(10, Number(head) + 1), `recent blocks: ${rows} rows for head ${head}`);
  const headBlock = await rpc('eth_getBlockByNumber', [`0x${head.toString(16)}`, false]);
  await expectText(`block-txs-${head}`, String(headBlock.transactions.length), `tx count of block ${head}`);
  await page.waitForFunction(() => document.querySelector('#live')?.dataset.mode === 'on', null, { timeout: 8000 })
    .catch(async () => fail(`the page did not follow new heads over the WebSocket (live status: ${await page.locator('#live').innerText()})`));
  // A block mined now appears without a reload.
  await rpc('eth_sendTransaction', [{ from: seed ? seed.accounts[6] : (await rpc('eth_accounts'))[6], to: '0x000000000000000000000000000000000000dEaD', value: '0x2' }]);
  head = BigInt(await rpc('eth_blockNumber'));
  await page.getByTestId(`block-row-${head}`).waitFor().catch(() => fail(`block ${head} did not appear on the home page by itself`));
  await expectText('head-number', head.toString(), 'head block after a new block');
  check(await page.getByTestId('recent-blocks').locator('tbody tr').count() === Math.min(10, Number(head) + 1), 'recent blocks keep at most 10 rows');
  const metricsOn = await fetch(new URL('/metrics', pageUrl)).then((r) => r.ok, () => false);
  if (metricsOn) {
    await page.getByTestId('charts').waitFor({ state: 'visible', timeout: 8000 }).catch(() => fail('the metrics charts did not appear'));
    await page.waitForFunction(() => document.querySelector('[data-testid="chart-value-calls"]')?.textContent !== '—', null, { timeout: 8000 })
      .catch(() => fail('the calls/s chart shows no value after two samples'));
  } else {
    await page.getByTestId('charts-off').waitFor({ state: 'visible', timeout: 8000 }).catch(() => fail('no note that the node has no /metrics'));
    check(!(await page.getByTestId('charts').isVisible()), 'charts shown for a node without /metrics');
  }

  // 2. Block: the block of the token transfer, reached by a click.
  const tx = seed ? seed.tokenTransfer : headBlock.transactions[0];
  const txObj = await rpc('eth_getTransactionByHash', [tx]);
  const receipt = await rpc('eth_getTransactionReceipt', [tx]);
  const blockNum = BigInt(txObj.blockNumber);
  step(`block ${blockNum}`);
  if (head - blockNum >= 10n) { // not among the recent blocks: through the parent link of the block after it
    await page.evaluate((n) => { location.hash = `#/block/${n}`; }, String(blockNum + 1n));
    await ready('block');
  }
  await page.getByTestId(`block-link-${blockNum}`).first().click();
  await ready('block');
  const block = await rpc('eth_getBlockByNumber', [txObj.blockNumber, false]);
  await expectText('block-number', blockNum.toString(), 'block number');
  await expectText('block-hash', block.hash, 'block hash');
  await expectText('block-tx-count', String(block.transactions.length), 'block tx count');
  await expectContains('block-miner', block.miner, 'fee recipient');
  await expectContains('block-gas-used', fmtInt(block.gasUsed), 'block gas used');
  await page.getByTestId(`tx-link-${tx}`).first().waitFor().catch(() => fail(`block ${blockNum} does not list ${tx}`));
  await shot('block');

  // A block of 30 transactions: two pages, every transaction on one of them.
  if (seed && seed.bigBlock) {
    step(`block ${seed.bigBlock}: paging`);
    await page.evaluate((n) => { location.hash = `#/block/${n}`; }, seed.bigBlock);
    await ready('block');
    const want = (await rpc('eth_getBlockByNumber', [`0x${seed.bigBlock.toString(16)}`, false])).transactions;
    const rowsNow = async () => page.getByTestId('block-txs').locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.testid.replace('tx-row-', '')));
    const prev = page.getByTestId('block-txs-prev'), next = page.getByTestId('block-txs-next');
    for (let i = 0; i < 5 && await prev.isEnabled(); i++) { const before = await rowsNow(); await prev.click(); await page.waitForFunction((b) => document.querySelector('[data-testid="block-txs"] tbody tr')?.dataset.testid !== `tx-row-${b}`, before[0]); }
    const seen = await rowsNow();
    check(seen[0] === want[0], `the first page of block ${seed.bigBlock} does not start with its first transaction`);
    for (let i = 0; i < 5 && await next.isEnabled(); i++) { const before = await rowsNow(); await next.click(); await page.waitForFunction((b) => document.querySelector('[data-testid="block-txs"] tbody tr')?.dataset.testid !== `tx-row-${b}`, before[0]); seen.push(...await rowsNow()); }
    check(JSON.stringify(seen) === JSON.stringify(want), `the pages of block ${seed.bigBlock} list ${seen.length} transactions, not its ${want.length} in order`);
    await shot('block-paged');
    await page.goBack();
    await ready('block');
  }

  // 3. Transaction: fields, decoded call tree and events.
  step(`transaction ${tx}`);
  await page.getByTestId('block-txs').getByTestId(`tx-link-${tx}`).first().click();
  await ready('tx');
  await expectText('tx-hash', tx, 'tx hash');
  await expectContains('tx-status', 'success', 'tx status');
  await expectText('tx-from', txObj.from, 'tx from');
  await expectText('tx-to', txObj.to, 'tx to');
  await expectText('tx-gas-used-value', fmtInt(receipt.gasUsed), 'tx gas used');
  await expectText('tx-gas-limit', fmtInt(txObj.gas), 'tx gas limit');
  await expectText('tx-nonce', fmtInt(txObj.nonce), 'tx nonce');
  await expectText('tx-value', fmtEth(txObj.value), 'tx value');
  await expectContains('tx-block', blockNum.toString(), 'tx block');
  await page.getByTestId('call-tree').waitFor().catch(() => fail('no call tree on the transaction page'));
  const tree = await text('call-tree');
  if (decoded) {
    check(/transfer/.test(tree), `the call tree does not name transfer: ${tree.slice(0, 200)}`);
    if (process.env.EXPLORER_ARTIFACTS) check(tree.includes('DevToken'), `the call tree does not name DevToken (from --artifacts): ${tree.slice(0, 200)}`);
    await expectContains('decoded-logs', 'emit Transfer', 'decoded events');
  } else { // callTracer: selectors, raw logs
    check(tree.includes(txObj.input.slice(0, 10)), `the call tree does not show the selector ${txObj.input.slice(0, 10)}: ${tree.slice(0, 200)}`);
    await expectContains('raw-logs', receipt.logs[0].topics[0], 'raw logs');
  }
  await shot('tx');

  // 4. Address: the sender, by a click; then the token contract.
  step(`address ${txObj.from}`);
  await page.getByTestId('tx-from').getByTestId(`address-link-${txObj.from.toLowerCase()}`).click();
  await ready('address');
  const from = txObj.from.toLowerCase();
  const [bal, nonce] = await Promise.all([rpc('eth_getBalance', [from, 'latest']), rpc('eth_getTransactionCount', [from, 'latest'])]);
  await expectText('address-balance-eth', fmtEth(bal), 'balance');
  await expectContains('address-balance', `(${BigInt(bal)} wei)`, 'balance in wei');
  await expectText('address-nonce', fmtInt(nonce), 'nonce');
  await expectContains('address-kind', 'account', 'kind of address');
  if (otsSearch) {
    await page.getByTestId('address-txs').getByTestId(`tx-link-${tx}`).first().waitFor().catch(() => fail(`the address's history does not list ${tx}`));
  } else {
    await page.getByText('does not serve ots_searchTransactionsBefore').waitFor().catch(() => fail('no note that the history needs ots_searchTransactionsBefore'));
  }
  await shot('address');

  const token = (seed ? seed.token : txObj.to).toLowerCase();
  step(`contract ${token}`);
  await page.getByTestId('search-input').fill(token);
  await page.getByTestId('search-button').click();
  await page.locator('#app[data-ready="address"] [data-testid="address-title"]', { hasText: token }).waitFor();
  await ready('address');
  const code = await rpc('eth_getCode', [token, 'latest']);
  await expectContains('address-kind', 'contract', 'kind of contract');
  await expectContains('address-code-row', `${fmtInt((code.length - 2) / 2)} bytes`, 'code size');
  await page.getByTestId('address-code').locator('summary').click();
  await expectText('address-code-hex', code, 'code hex');
  await page.getByTestId('slot-row-9').waitFor().catch(() => fail('no storage slots 0..9 on the contract page'));
  for (const i of [0, 2, 3]) {
    const v = await rpc('eth_getStorageAt', [token, '0x' + i.toString(16), 'latest']);
    await expectContains(`slot-row-${i}`, v, `storage slot ${i}`);
  }
  await page.getByTestId('slot-input').fill('2');
  await page.getByTestId('slot-read').click();
  const slot2 = await rpc('eth_getStorageAt', [token, '0x2', 'latest']);
  await page.getByTestId('slot-value').filter({ hasText: slot2 }).waitFor().catch(() => fail('reading slot 2 shows the wrong value'));
  if (seed && await hasMethod('ots_getContractCreator', [token])) {
    await page.getByTestId('address-creator').getByTestId(`tx-link-${seed.deployToken}`).waitFor().catch(() => fail('the contract creator does not link the deployment'));
    await expectContains('address-creator', seed.accounts[0], 'contract creator');
  }
  await shot('contract');

  // 5. A failed transaction and a nested one with console.log lines.
  if (seed) {
    step('failed and nested transactions');
    await page.evaluate((h) => { location.hash = `#/tx/${h}`; }, seed.reverted);
    await ready('tx');
    await expectContains('tx-status', 'failed', 'status of the reverted tx');
    await page.getByTestId('call-tree').waitFor();
    await expectContains('tx-status', 'balance too low', 'revert reason');
    await page.evaluate((h) => { location.hash = `#/tx/${h}`; }, seed.nested);
    await ready('tx');
    await page.getByTestId('call-tree').waitFor();
    check(await page.locator('[data-testid="call-depth-2"]').count() > 0, 'the nested call tree shows no call two frames down');
    if (decoded) await expectContains('call-tree', 'relayThenRevert', 'nested call names');
    const consoleShown = await page.getByTestId('console-lines').count();
    console.log(`   console.log lines ${consoleShown ? 'shown' : 'not in the trace (the node does not send them yet)'}`);
    if (consoleShown) await expectContains('console-lines', 'nested: done', 'console.log lines');
    await shot('tx-nested');
  }

  // 6. Mempool and accounts.
  step('mempool');
  await page.getByTestId('nav-mempool').click();
  await ready('mempool');
  const pool = await rpc('txpool_content');
  const count = (g) => Object.values(g).reduce((a, byNonce) => a + Object.keys(byNonce).length, 0);
  await expectText('mempool-pending-count', `(${count(pool.pending)})`, 'pending count');
  await expectText('mempool-queued-count', `(${count(pool.queued)})`, 'queued count');
  if (seed) await page.getByTestId('mempool-queued').getByTestId(`tx-link-${seed.queued}`).waitFor().catch(() => fail(`the queued ${seed.queued} is not listed`));
  await shot('mempool');
  if (seed) { // a pooled transaction's page
    await page.getByTestId('mempool-queued').getByTestId(`tx-link-${seed.queued}`).click();
    await ready('tx');
    await expectContains('tx-status', 'pending', 'status of a queued transaction');
    await expectContains('tx-block', 'not mined', 'block of a queued transaction');
    await expectText('tx-from', (await rpc('eth_getTransactionByHash', [seed.queued])).from, 'from of a queued transaction');
  }

  step('accounts');
  await page.getByTestId('nav-accounts').click();
  await ready('accounts');
  const accounts = await rpc('eth_accounts');
  check(await page.getByTestId('accounts-table').locator('tbody tr').count() === accounts.length, 'one row per dev account');
  for (const a of accounts.slice(0, 4)) {
    const l = a.toLowerCase();
    await expectText(`account-balance-${l}`, fmtEth(await rpc('eth_getBalance', [a, 'latest'])), `balance of ${a}`);
    await expectText(`account-nonce-${l}`, fmtInt(await rpc('eth_getTransactionCount', [a, 'latest'])), `nonce of ${a}`);
  }
  await shot('accounts');

  // 7. Search and errors.
  step('search and errors');
  await page.getByTestId('search-input').fill(blockNum.toString());
  await page.getByTestId('search-button').click();
  await page.locator('#app[data-ready="block"]').waitFor();
  await expectText('block-number', blockNum.toString(), 'search by block number');
  await page.getByTestId('search-input').fill(tx);
  await page.getByTestId('search-button').click();
  await page.locator('#app[data-ready="tx"]').waitFor();
  await expectText('tx-hash', tx, 'search by tx hash');
  await page.getByTestId('search-input').fill(block.hash);
  await page.getByTestId('search-button').click();
  await page.locator('#app[data-ready="block"]').waitFor();
  await expectText('block-hash', block.hash, 'search by block hash');
  await page.getByTestId('search-input').fill('not-a-thing');
  await page.getByTestId('search-button').click();
  await page.getByTestId('error-banner').waitFor({ state: 'visible' }).catch(() => fail('no error banner for a bad search'));
  await expectContains('error-banner', 'is not a block number', 'bad search message');
  await page.evaluate(() => { location.hash = '#/tx/0x' + '0'.repeat(64); });
  await ready('tx');
  await page.getByTestId('not-found').waitFor().catch(() => fail('no "not found" for an unknown transaction'));
  await page.evaluate(() => { location.hash = '#/block/999999999'; });
  await ready('block');
  await page.getByTestId('not-found').waitFor().catch(() => fail('no "not found" for a block past the head'));
  // An RPC error reaches the banner with the node's message (a block number past 2^64).
  await page.evaluate(() => { location.hash = '#/block/0x' + 'f'.repeat(16); });
  await page.locator('#app[data-ready="block"]').waitFor();
  const bannerShown = await page.getByTestId('error-banner').isVisible();
  const nf = await page.getByTestId('not-found').count();
  check(bannerShown || nf > 0, 'a block number of 2^64-1 shows neither an error nor "not found"');

  // Back home (by the nav link): the charts have gathered samples meanwhile.
  step('home again');
  await page.getByTestId('nav-blocks').click();
  await ready('home');
  await expectText('head-number', String(BigInt(await rpc('eth_blockNumber'))), 'head block');
  if (metricsOn) await page.waitForTimeout(4000); // a few more samples for the screenshot
  await shot('home');

  check(pageErrors.length === 0, `errors in the page: ${pageErrors.join(' | ')}`);
  check(foreign.length === 0, `requests to other origins: ${foreign.join(', ')}`);
  await cleanup();
  console.log(`explorer-browser: ${passed} passed, 0 failed (${((Date.now() - T0) / 1000).toFixed(1)} s); screenshots in ${SHOTS}`);
  process.exit(0);
}

if (!failed) main().catch((e) => report(e && e.stack ? e.stack : String(e)));
