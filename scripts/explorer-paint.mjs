// First-paint benchmark of the built-in block explorer in Debian's headless Chromium
// (playwright-core). Run by scripts/explorer-paint.sh, which starts the node and builds the
// 10,000-block chain; by hand against a node that serves the explorer at `/`:
//   NODE_URL=http://127.0.0.1:8545/ node scripts/explorer-paint.mjs
// What it does:
//   1. sanity: the home view shows the node's head and its newest ten blocks (numbers, short
//      hashes, transaction counts), no error banner, no page errors;
//   2. PAINT_RUNS cold loads: a fresh browser context each, HTTP cache disabled (CDP);
//   3. PAINT_RUNS warm loads: one context, cache on, after one priming load (each run
//      navigates about:blank → the page);
//   then per run and as metric | median | p90 | max (ms from the navigation's start):
//     first-contentful-paint  the paint entry (performance.getEntriesByType('paint'))
//     DOMContentLoaded        navigation timing, domContentLoadedEventEnd
//     home view ready         the DOM holds the head number and the recent-blocks rows and
//                             #app[data-ready=home] (a MutationObserver from an init script)
//     home view painted       the frame after that (requestAnimationFrame, then a task)
//   and PASS/FAIL for "median first paint (cold) < PAINT_BUDGET_MS" (exit 0 / 1).
//   PAINT_PROFILE=1 (and any FAIL) adds one traced cold load: what ran on the page's main
//   thread before the home view was painted (parse, app.js compile and run, RPC round trips;
//   PAINT_PROFILE_ALL=1 names every trace event, not only Blink's and V8's main ones), and
//   JavaScript self time by function over 3 more cold loads (V8's sampling profiler).
// Environment: NODE_URL (required), PAINT_RUNS (10), PAINT_BUDGET_MS (300), PAINT_PROFILE,
// EXPLORER_NPM_DIR (/tmp/hearth-explorer-npm), CHROMIUM (/usr/bin/chromium),
// PAINT_DEADLINE_S (100), PAINT_PIDS_FILE (where the browser's process ids are written, for
// the .sh to stop them should this script be killed).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { rpcClient } from './explorer-lib.mjs';

const T0 = Date.now();
const NODE_URL = process.env.NODE_URL;
const RUNS = Math.max(1, Number(process.env.PAINT_RUNS || 10));
const BUDGET = Number(process.env.PAINT_BUDGET_MS || 300);
const PROFILE = !!process.env.PAINT_PROFILE && process.env.PAINT_PROFILE !== '0';
const NPM_DIR = process.env.EXPLORER_NPM_DIR || '/tmp/hearth-explorer-npm';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const DEADLINE_MS = 1000 * Number(process.env.PAINT_DEADLINE_S || 100);
const PIDS_FILE = process.env.PAINT_PIDS_FILE;
const RECENT = 10; // app.js: RECENT

let browser = null, failed = false;
function report(msg, code = 2) {
  if (failed) return;
  failed = true;
  console.error(`FAIL: ${msg}`);
  cleanup().finally(() => process.exit(code));
}
function fail(msg) { report(msg); throw new Error(msg); }
async function cleanup() {
  const b = browser; browser = null;
  if (b) await Promise.race([b.close().catch(() => {}), new Promise((r) => setTimeout(r, 3000))]);
  if (PIDS_FILE) fs.writeFileSync(PIDS_FILE, ''); // closed: nothing for the .sh to stop
}
setTimeout(() => report(`timed out after ${DEADLINE_MS / 1000} s`), DEADLINE_MS).unref();
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => report(`stopped by ${sig}`));
const step = (msg) => console.log(`-- ${msg} (${((Date.now() - T0) / 1000).toFixed(1)} s)`);
if (!NODE_URL) report('set NODE_URL to the node\'s JSON-RPC URL (scripts/explorer-paint.sh does)');
else if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(NODE_URL).hostname)) report(`NODE_URL ${NODE_URL} is not on loopback`);

const rpc = rpcClient(NODE_URL);

// The page's markers, installed before any of its scripts: when the home view is in the DOM
// (head number, the recent-blocks rows, #app[data-ready=home]) and the frame after it.
function marker() {
  const m = window.__paint = { ready: null, painted: null };
  const check = () => {
    if (m.ready !== null) return;
    const app = document.getElementById('app');
    const head = document.querySelector('[data-testid="head-number"]');
    if (!app || app.dataset.ready !== 'home' || !head || !/^\d+$/.test(head.textContent)) return;
    const want = Math.min(10, Number(head.textContent) + 1);
    if (document.querySelectorAll('[data-testid="recent-blocks"] tbody tr').length < want) return;
    m.ready = performance.now();
    requestAnimationFrame(() => { // this frame renders the view; the task after it runs once it is drawn
      const ch = new MessageChannel();
      ch.port1.onmessage = () => { m.painted = performance.now(); done(); };
      ch.port2.postMessage(0);
    });
  };
  // Tells the benchmark (a console message: no script of its own runs in the page meanwhile)
  // once the paint entry and the load event are in too.
  const done = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    if (performance.getEntriesByName('first-contentful-paint').length && nav && nav.loadEventEnd > 0) console.debug('__hearth_paint_done');
    else setTimeout(done, 5);
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['data-ready'] });
}

// Loads the page and returns its timings, in ms from the navigation's start. Nothing of
// playwright's runs in the page until the marker says the home view is painted (a
// waitForFunction would inject playwright's script into the page while it loads).
async function load(page, url) {
  const done = page.waitForEvent('console', { predicate: (m) => m.text() === '__hearth_paint_done', timeout: 10_000 });
  await page.goto(url, { waitUntil: 'commit' });
  await done.catch(async () => fail(`the home view did not finish (${await page.evaluate(() => JSON.stringify({ ...window.__paint, ready: document.getElementById('app')?.dataset.ready }))})`));
  return page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource');
    const end = (re) => { const e = res.find((r) => re.test(r.name)); return e ? e.responseEnd : null; };
    const rpcs = res.filter((r) => r.initiatorType === 'fetch' && new URL(r.name).pathname === '/' && r.startTime < window.__paint.ready);
    return {
      ttfb: nav.responseStart, html: nav.responseEnd, css: end(/\/explorer\/style\.css$/), js: end(/\/explorer\/app\.js$/),
      interactive: nav.domInteractive, dclStart: nav.domContentLoadedEventStart, dcl: nav.domContentLoadedEventEnd,
      fp: performance.getEntriesByName('first-paint')[0]?.startTime ?? null,
      fcp: performance.getEntriesByName('first-contentful-paint')[0].startTime,
      rpcFirst: rpcs.length ? Math.min(...rpcs.map((r) => r.startTime)) : null,
      rpcLast: rpcs.length ? Math.max(...rpcs.map((r) => r.responseEnd)) : null, rpcCount: rpcs.length,
      ready: window.__paint.ready, painted: window.__paint.painted,
      jsBytes: res.find((r) => /app\.js$/.test(r.name))?.encodedBodySize ?? null,
      jsFromCache: (res.find((r) => /app\.js$/.test(r.name))?.transferSize ?? 1) === 0,
    };
  });
}

const METRICS = [
  ['fcp', 'first-contentful-paint'],
  ['dcl', 'DOMContentLoaded (end)'],
  ['ready', 'home view ready (DOM)'],
  ['painted', 'home view painted'],
];
const DETAIL = [
  ['ttfb', 'html first byte'],
  ['html', 'html loaded'],
  ['css', 'style.css loaded'],
  ['js', 'app.js loaded'],
  ['interactive', 'html parsed (domInteractive)'],
  ['jsRun', 'app.js run + init (until DCL)'],
  ['rpcFirst', 'first JSON-RPC request sent'],
  ['rpcLast', 'last JSON-RPC answer in'],
];
const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.max(0, Math.ceil(q * s.length) - 1)]; };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b), n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const f1 = (x) => (x == null || Number.isNaN(x) ? '—' : x.toFixed(1));
function table(title, runs) {
  for (const r of runs) r.jsRun = r.dclStart - Math.max(r.interactive, r.js ?? 0);
  console.log(`\n${title}`);
  const w = 34;
  console.log(`${'metric (ms from navigation start)'.padEnd(w)} | ${'median'.padStart(7)} | ${'p90'.padStart(7)} | ${'max'.padStart(7)}`);
  console.log(`${'-'.repeat(w)}-+-${'-'.repeat(7)}-+-${'-'.repeat(7)}-+-${'-'.repeat(7)}`);
  const line = (key, name) => {
    const xs = runs.map((r) => r[key]).filter((x) => x != null);
    if (!xs.length) return;
    console.log(`${name.padEnd(w)} | ${f1(median(xs)).padStart(7)} | ${f1(quantile(xs, 0.9)).padStart(7)} | ${f1(Math.max(...xs)).padStart(7)}`);
  };
  for (const [k, n] of METRICS) line(k, n);
  console.log(`${'  where the time goes:'.padEnd(w)} |         |         |`);
  for (const [k, n] of DETAIL) line(k, '  ' + n);
}
const perRun = (kind, i, r) => console.log(`   ${kind} ${String(i + 1).padStart(2)}: fcp ${f1(r.fcp)}  dcl ${f1(r.dcl)}  home ready ${f1(r.ready)}  painted ${f1(r.painted)}`
  + `  (html ${f1(r.html)}, css ${f1(r.css)}, app.js ${f1(r.js)}${r.jsFromCache ? ' cached' : ''}, ${r.rpcCount} rpc ${f1(r.rpcFirst)}→${f1(r.rpcLast)})`);

// Chromium's process ids (its own process groups: playwright starts it detached).
function recordBrowserPids() {
  if (!PIDS_FILE) return;
  const kids = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) kids.push(d);
    } catch { /* gone */ }
  }
  fs.writeFileSync(PIDS_FILE, kids.join('\n') + (kids.length ? '\n' : ''));
}

// ---------------------------------------------------------------- a traced cold load
async function profile(pageUrl) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(marker);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await browser.startTracing(page, {
    categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8', 'v8.execute', 'blink.user_timing', 'loading', 'toplevel', 'netlog'],
  });
  const r = await load(page, pageUrl);
  const trace = JSON.parse((await browser.stopTracing()).toString('utf8'));
  await context.close();
  const ev = trace.traceEvents || trace;
  // The page's renderer main thread: the one with the navigationStart mark of our URL.
  const nav = ev.filter((e) => e.name === 'navigationStart' && (e.args?.data?.documentLoaderURL || '').startsWith(pageUrl.split('#')[0]));
  if (!nav.length) { console.log('   (no navigationStart in the trace: no profile)'); return; }
  const n0 = nav[nav.length - 1], t0 = n0.ts;
  const mine = ev.filter((e) => e.pid === n0.pid && e.tid === n0.tid && e.ph === 'X' && e.ts >= t0 && e.ts <= t0 + r.painted * 1000 + 5000);
  const ms = (us) => (us / 1000).toFixed(1);
  console.log(`\nprofile of one cold load (fcp ${f1(r.fcp)}, home painted ${f1(r.painted)} ms): main-thread tasks ≥ 1 ms until the home view is painted`);
  const tasks = mine.filter((e) => e.name === 'RunTask' && e.dur >= 1000 && (e.ts - t0) / 1000 <= r.painted + 1);
  const inside = (t) => mine.filter((e) => e !== t && e.ts >= t.ts && e.ts + (e.dur || 0) <= t.ts + t.dur);
  const interesting = new Set(['ParseHTML', 'EvaluateScript', 'v8.compile', 'v8.compileModule', 'v8.run', 'FunctionCall', 'TimerFire', 'EventDispatch',
    'UpdateLayoutTree', 'Layout', 'PrePaint', 'Paint', 'Layerize', 'Commit', 'ParseAuthorStyleSheet', 'FireAnimationFrame', 'RunMicrotasks', 'v8.parseOnBackground', 'XHRReadyStateChange', 'ResourceReceiveResponse']);
  let busy = 0;
  for (const t of tasks) {
    busy += t.dur;
    const parts = new Map();
    for (const e of inside(t)) {
      if (!interesting.has(e.name) && !process.env.PAINT_PROFILE_ALL) continue;
      let k = e.name;
      const url = e.args?.data?.url || e.args?.data?.stackTrace?.[0]?.url || e.args?.fileName;
      if (url && /app\.js/.test(url)) k += '(app.js)';
      if (e.name === 'FunctionCall' && e.args?.data?.functionName) k += `(${e.args.data.functionName})`;
      parts.set(k, (parts.get(k) || 0) + e.dur);
    }
    const top = [...parts].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, d]) => `${k} ${ms(d)}`).join(', ');
    console.log(`   at ${ms(t.ts - t0).padStart(6)} ms  ${ms(t.dur).padStart(5)} ms  ${top}`);
  }
  const sum = (pred) => mine.filter(pred).reduce((a, e) => a + e.dur, 0);
  const isApp = (e) => /app\.js/.test(e.args?.data?.url || e.args?.fileName || '');
  console.log(`   main thread busy ${ms(busy)} ms of ${f1(r.painted)} ms; app.js: compile ${ms(sum((e) => e.name === 'v8.compile' && isApp(e)))} ms, `
    + `evaluate (incl. init) ${ms(sum((e) => e.name === 'EvaluateScript' && isApp(e)))} ms; style+layout ${ms(sum((e) => ['UpdateLayoutTree', 'Layout'].includes(e.name)))} ms; `
    + `paint ${ms(sum((e) => ['PrePaint', 'Paint', 'Layerize'].includes(e.name)))} ms`);
  console.log(`   network (ms from navigation start): html ${f1(r.ttfb)}→${f1(r.html)}, style.css →${f1(r.css)}, app.js →${f1(r.js)}, `
    + `${r.rpcCount} JSON-RPC posts ${f1(r.rpcFirst)}→${f1(r.rpcLast)}; first paint ${f1(r.fp)}`);

  // JavaScript self time by function (V8's sampling profiler, 50 µs), over 3 cold loads,
  // from the navigation until the home view is painted.
  const LOADS = 3, self = new Map();
  let total = 0;
  for (let i = 0; i < LOADS; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ctx.addInitScript(marker);
    const pg = await ctx.newPage();
    const s = await ctx.newCDPSession(pg);
    await s.send('Network.enable');
    await s.send('Network.setCacheDisabled', { cacheDisabled: true });
    await s.send('Profiler.enable');
    await s.send('Profiler.setSamplingInterval', { interval: 50 });
    await s.send('Profiler.start');
    await load(pg, pageUrl);
    const { profile: prof } = await s.send('Profiler.stop');
    const nodes = new Map(prof.nodes.map((x) => [x.id, x]));
    prof.samples.forEach((sid, k) => {
      const cf = nodes.get(sid).callFrame;
      if (['(idle)', '(program)', '(garbage collector)'].includes(cf.functionName)) return;
      if (!cf.url && ['check', 'done', 'ch.port1.onmessage'].includes(cf.functionName)) return; // the benchmark's marker
      const key = `${cf.functionName || '(anonymous)'}${cf.url ? ` ${cf.url.split('/').pop()}:${cf.lineNumber + 1}` : ''}`;
      self.set(key, (self.get(key) || 0) + prof.timeDeltas[k]);
      total += prof.timeDeltas[k];
    });
    await ctx.close();
  }
  console.log(`   JavaScript self time per cold load (${LOADS} loads, sampled): ${ms(total / LOADS)} ms; the largest:`);
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`     ${ms(us / LOADS).padStart(6)} ms  ${k}`);
}

// ---------------------------------------------------------------- the run
async function main() {
  const pageUrl = NODE_URL; // the node's own `/` (Accept: text/html); the home view is its default route
  const probe = await fetch(pageUrl, { headers: { Accept: 'text/html' }, signal: AbortSignal.timeout(10_000) }).catch((e) => fail(`GET ${pageUrl}: ${e.message}`));
  if (!probe.ok || !/hearth-explorer/.test(await probe.text())) fail(`the node does not serve the explorer at ${pageUrl} (GET / with Accept: text/html: HTTP ${probe.status})`);
  const head = BigInt(await rpc('eth_blockNumber'));
  step(`the node serves the explorer at ${pageUrl}; head ${head}`);

  const pw = createRequire(path.join(NPM_DIR, 'x.js'))('playwright-core');
  browser = await pw.chromium.launch({
    executablePath: CHROMIUM, headless: true, timeout: 30_000,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  }).catch((e) => fail(`cannot start ${CHROMIUM}: ${e.message}`));
  recordBrowserPids();
  step(`chromium ${browser.version()}`);
  const origin = new URL(pageUrl).origin;
  const newContext = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    await context.addInitScript(marker);
    const page = await context.newPage();
    const errors = [], foreign = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (!['data:', 'about:'].includes(u.protocol) && u.origin !== origin && u.origin !== origin.replace(/^http/, 'ws')) foreign.push(r.url());
    });
    return { context, page, errors, foreign };
  };

  // 1. Sanity: the home view on this chain shows the head and the newest ten blocks.
  {
    const { context, page, errors, foreign } = await newContext();
    const r = await load(page, pageUrl);
    if (await page.getByTestId('error-banner').isVisible()) fail(`error banner on the home view: ${await page.locator('#error-text').innerText()}`);
    const shown = (await page.getByTestId('head-number').innerText()).trim();
    if (shown !== head.toString()) fail(`the home view shows head ${shown}, the node says ${head}`);
    const rows = await page.getByTestId('recent-blocks').locator('tbody tr').evaluateAll((trs) => trs.map((tr) => ({
      id: tr.dataset.testid, cells: [...tr.cells].map((td) => td.innerText.trim()),
    })));
    const want = [];
    for (let n = head; n >= 0n && want.length < RECENT; n--) want.push(n);
    if (rows.length !== want.length) fail(`the home view lists ${rows.length} recent blocks, expected ${want.length}`);
    const blocks = await Promise.all(want.map((n) => rpc('eth_getBlockByNumber', ['0x' + n.toString(16), false])));
    let txs = 0;
    rows.forEach((row, i) => {
      const b = blocks[i], n = want[i];
      if (row.id !== `block-row-${n}`) fail(`recent block row ${i + 1} is ${row.id}, expected block-row-${n} (newest first)`);
      if (row.cells[0] !== n.toString()) fail(`row ${row.id} shows number ${row.cells[0]}`);
      const short = b.hash.slice(0, 10) + '…' + b.hash.slice(-8);
      if (row.cells[1] !== short) fail(`row ${row.id} shows hash ${row.cells[1]}, the node's block ${n} is ${b.hash}`);
      if (row.cells[3] !== String(b.transactions.length)) fail(`row ${row.id} shows ${row.cells[3]} transactions, the node ${b.transactions.length}`);
      txs += b.transactions.length;
    });
    await page.waitForFunction(() => document.querySelector('#live')?.dataset.mode === 'on', null, { timeout: 8000 })
      .catch(() => fail('the page does not follow the head over the WebSocket'));
    if (errors.length) fail(`errors in the page: ${errors.join(' | ')}`);
    if (foreign.length) fail(`requests off the node's origin: ${foreign.join(', ')}`);
    await context.close();
    step(`sanity: the home view shows head ${head} and blocks ${want[0]}..${want[want.length - 1]} newest first, `
      + `hashes and transaction counts as the node's (${txs} transactions), live over the WebSocket, no errors `
      + `(first load: fcp ${f1(r.fcp)} ms, home painted ${f1(r.painted)} ms; app.js ${r.jsBytes} bytes)`);
  }

  // 2. Cold loads: a fresh context each (its own empty cache), cache disabled too.
  const cold = [];
  step(`${RUNS} cold loads (fresh context, cache disabled)`);
  for (let i = 0; i < RUNS; i++) {
    const { context, page, errors } = await newContext();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    const r = await load(page, pageUrl);
    if (errors.length) fail(`errors in the page: ${errors.join(' | ')}`);
    cold.push(r);
    perRun('cold', i, r);
    await context.close();
  }

  // 3. Warm loads: one context, cache on, primed once; each run from about:blank.
  const warm = [];
  step(`${RUNS} warm loads (one context, cache on, after a priming load)`);
  {
    const { context, page, errors } = await newContext();
    await load(page, pageUrl);
    for (let i = 0; i < RUNS; i++) {
      await page.goto('about:blank');
      const r = await load(page, pageUrl);
      warm.push(r);
      perRun('warm', i, r);
    }
    if (errors.length) fail(`errors in the page: ${errors.join(' | ')}`);
    await context.close();
  }

  table(`cold loads: ${RUNS}, a fresh browser context each, cache disabled; head ${head}`, cold);
  table(`warm loads: ${RUNS}, one context, cache on`, warm);
  const coldFcp = median(cold.map((r) => r.fcp)), warmFcp = median(warm.map((r) => r.fcp));
  const coldHome = median(cold.map((r) => r.painted)), warmHome = median(warm.map((r) => r.painted));
  const pass = coldFcp < BUDGET && warmFcp < BUDGET;
  console.log(`\n${pass ? 'PASS' : 'FAIL'}: median first paint < ${BUDGET} ms on loopback with a ${head}-block chain: `
    + `cold ${f1(coldFcp)} ms, warm ${f1(warmFcp)} ms (first-contentful-paint)`);
  console.log(`${coldHome < BUDGET && warmHome < BUDGET ? 'also under' : 'NOT under'} ${BUDGET} ms: median home view painted `
    + `(head + ${RECENT} recent blocks shown) cold ${f1(coldHome)} ms, warm ${f1(warmHome)} ms`);
  if (PROFILE || !pass) await profile(pageUrl);
  await cleanup();
  step('done');
  process.exit(pass ? 0 : 1);
}

if (!failed) main().catch((e) => report(e && e.stack ? e.stack : String(e)));
