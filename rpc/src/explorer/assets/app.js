// Hearth explorer: a block explorer page the node serves itself (index.html at `/`, this file at
// /explorer/app.js). Plain ES2020, no dependencies, no build step, no network but the node.
// Everything read from the chain is untrusted: it reaches the page only as text nodes or as
// attributes built from validated hex, never as HTML. The page only reads: it calls no method
// that changes state or sends a transaction.
'use strict';
(() => {
  // ---------------------------------------------------------------- endpoints
  // Same origin by default; `?rpc=http://127.0.0.1:PORT` points the page at another node on
  // this machine (loopback only, as the page's Content-Security-Policy also says; CSP has no
  // way to name [::1]).
  const LOOPBACK = new Set(['127.0.0.1', 'localhost']);
  const EP = (() => {
    let base = location.origin, note = null;
    const q = new URLSearchParams(location.search).get('rpc');
    if (q) {
      let u = null;
      try { u = new URL(q); } catch { /* below */ }
      if (u && u.protocol === 'http:' && LOOPBACK.has(u.hostname) && !u.username && !u.password) base = u.origin;
      else note = `Ignored ?rpc=${q}: only http:// URLs on 127.0.0.1 or localhost are allowed; using this page's own node.`;
    }
    return { http: base + '/', ws: base.replace(/^http/, 'ws') + '/', metrics: base + '/metrics', note };
  })();

  // ---------------------------------------------------------------- DOM helpers
  const $ = (sel) => document.querySelector(sel);
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v == null || v === false) continue;
        if (k === 'class') el.className = v;
        else if (k === 'testid') el.dataset.testid = v;
        else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
        else el.setAttribute(k, v === true ? '' : String(v));
      }
    }
    add(el, kids);
    return el;
  }
  function add(el, ...kids) {
    for (const k of kids.flat(Infinity)) {
      if (k == null || k === false) continue;
      el.append(k instanceof Node ? k : String(k)); // strings become text nodes
    }
    return el;
  }
  const fill = (el, ...kids) => { el.replaceChildren(); return add(el, ...kids); };
  const panel = (title, testid, ...kids) => h('section', { class: 'panel', testid }, h('h2', null, title), ...kids);
  function kv(rows) {
    const dl = h('dl', { class: 'kv' });
    for (const r of rows) if (r) add(dl, [h('dt', null, r[0]), h('dd', { testid: r[2] }, r[1])]);
    return dl;
  }
  const muted = (t) => h('span', { class: 'muted' }, t);
  const errLine = (e) => h('p', { class: 'bad', testid: 'inline-error' }, errText(e));

  // ---------------------------------------------------------------- formatting
  const isAddr = (s) => typeof s === 'string' && /^0x[0-9a-fA-F]{40}$/.test(s);
  const isHash = (s) => typeof s === 'string' && /^0x[0-9a-fA-F]{64}$/.test(s);
  const isHex = (s) => typeof s === 'string' && /^0x[0-9a-fA-F]*$/.test(s);
  const big = (x) => {
    if (x == null || x === '') return null;
    try { return BigInt(x); } catch { return null; }
  };
  const hexQ = (n) => '0x' + BigInt(n).toString(16);
  // Digits grouped by hand: the first toLocaleString in a page loads the locale's number data
  // (17-46 ms measured), on the path to the home view's first paint.
  const group = (b) => { const s = (b < 0n ? -b : b).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ','); return b < 0n ? '-' + s : s; };
  const fmtInt = (x) => { const b = big(x); return b === null ? '—' : group(b); };
  function fmtUnits(x, decimals) {
    const b = big(x);
    if (b === null) return '—';
    const v = b < 0n ? -b : b, base = 10n ** BigInt(decimals);
    const frac = (v % base).toString().padStart(decimals, '0').replace(/0+$/, '');
    return (b < 0n ? '-' : '') + group(v / base) + (frac ? '.' + frac : '');
  }
  const fmtEth = (x) => fmtUnits(x, 18) + ' ETH';
  const fmtGwei = (x) => fmtUnits(x, 9) + ' gwei';
  const short = (s, a = 6, b = 4) => (typeof s === 'string' && s.length > a + b + 1 ? s.slice(0, a) + '…' + s.slice(-b) : String(s));
  function ago(sec) {
    const d = Math.round(Date.now() / 1000 - sec), a = Math.abs(d);
    const t = a < 60 ? `${a} s` : a < 3600 ? `${Math.floor(a / 60)} min` : a < 86400 ? `${Math.floor(a / 3600)} h` : `${Math.floor(a / 86400)} d`;
    return d < 0 ? `in ${t}` : `${t} ago`;
  }
  function fmtTime(ts) {
    const s = Number(big(ts));
    if (!Number.isFinite(s)) return '—';
    const d = new Date(s * 1000);
    return isNaN(d) ? String(ts) : `${d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')} (${ago(s)})`;
  }
  const pct = (a, b) => { const x = Number(big(a)), y = Number(big(b)); return y > 0 ? ` (${(100 * x / y).toFixed(1)}%)` : ''; };
  const TX_TYPES = { 0: 'legacy', 1: 'EIP-2930', 2: 'EIP-1559', 3: 'EIP-4844 blob', 4: 'EIP-7702' };

  // Links: hrefs and test ids are built only from validated hex, never from raw chain strings.
  function addrLink(a, label) {
    if (!isAddr(a)) return h('span', { class: 'mono' }, a == null ? '—' : String(a));
    const l = a.toLowerCase();
    return h('a', { href: `#/address/${l}`, class: 'mono', title: a, testid: `address-link-${l}` }, label == null ? short(a, 8, 6) : label);
  }
  function txLink(x, label) {
    if (!isHash(x)) return h('span', { class: 'mono' }, x == null ? '—' : String(x));
    const l = x.toLowerCase();
    return h('a', { href: `#/tx/${l}`, class: 'mono', title: x, testid: `tx-link-${l}` }, label == null ? short(x, 10, 8) : label);
  }
  function blockLink(n, label) {
    const b = big(n);
    if (b === null || b < 0n) return muted(n == null ? '—' : String(n));
    return h('a', { href: `#/block/${b}`, testid: `block-link-${b}` }, label == null ? b.toString() : label);
  }
  // Long hex: the first `max` characters, the rest behind a "show all" toggle.
  function hexBlock(hex, testid, max = 600) {
    const s = typeof hex === 'string' ? hex : String(hex);
    const pre = h('pre', { class: 'hex', testid }, s.length > max ? s.slice(0, max) + '…' : s);
    if (s.length <= max) return pre;
    const btn = h('button', { type: 'button', onclick: () => { pre.textContent = s; btn.remove(); } }, `show all ${(s.length - 2) / 2} bytes`);
    return h('div', null, pre, btn);
  }

  // ---------------------------------------------------------------- JSON-RPC
  class RpcError extends Error {
    constructor(code, message) { super(message); this.code = code; }
  }
  const errText = (e) => (e && e.message) || String(e);
  const missing = new Set(); // methods the node answered -32601 for
  let rpcId = 0;
  async function post(body) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), 30000);
    let res;
    try {
      res = await fetch(EP.http, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
        signal: ctl.signal, cache: 'no-store', credentials: 'omit',
      });
    } catch (e) {
      throw new RpcError(null, e.name === 'AbortError' ? 'the node did not answer within 30 s' : `cannot reach the node at ${EP.http}: ${errText(e)}`);
    } finally { clearTimeout(timer); }
    try { return await res.json(); } catch { throw new RpcError(null, `HTTP ${res.status} ${res.statusText} from ${EP.http}`); }
  }
  function unwrap(method, j) {
    if (!j || typeof j !== 'object') throw new RpcError(null, `${method}: no answer`);
    if (j.error) {
      const code = j.error.code;
      if (code === -32601) missing.add(method);
      throw new RpcError(code, `${method}: ${j.error.message} (${code})`);
    }
    return j.result;
  }
  async function rpc(method, params = []) {
    return unwrap(method, await post({ jsonrpc: '2.0', id: ++rpcId, method, params }));
  }
  // Settles each call of a batch: [{ok, value} | {ok: false, error}], in order.
  async function batch(calls) {
    if (!calls.length) return [];
    const first = rpcId + 1;
    rpcId += calls.length;
    const j = await post(calls.map(([method, params], i) => ({ jsonrpc: '2.0', id: first + i, method, params: params || [] })));
    if (!Array.isArray(j)) unwrap(calls[0][0] + ' (batch)', j); // the whole batch refused: throws
    const byId = new Map(j.map((x) => [x && x.id, x]));
    return calls.map(([m], i) => {
      try { return { ok: true, value: unwrap(m, byId.get(first + i)) }; } catch (e) { return { ok: false, error: e }; }
    });
  }
  const batchAll = async (calls) => (await batch(calls)).map((r) => { if (!r.ok) throw r.error; return r.value; });

  // ---------------------------------------------------------------- error banner
  function showError(e) {
    $('#error-text').textContent = errText(e);
    $('#error-banner').hidden = false;
  }
  const hideError = () => { $('#error-banner').hidden = true; };

  // ---------------------------------------------------------------- the head: WebSocket or polling
  const Head = {
    number: null, listeners: new Set(), live: false, pollTimer: null, retryTimer: null,
    start() { this.connect(); },
    mode(text, cls) {
      const el = $('#live');
      el.textContent = text + (this.number === null ? '' : ` · #${this.number}`);
      el.className = 'live ' + cls;
      el.dataset.mode = cls;
    },
    connect() {
      this.retryTimer = null;
      let ws;
      try { ws = new WebSocket(EP.ws); } catch { this.fallback(); return; }
      let subscribed = false;
      const giveUp = setTimeout(() => { if (!subscribed) ws.close(); }, 5000);
      ws.onopen = () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
      ws.onmessage = (ev) => {
        let m;
        try { m = JSON.parse(ev.data); } catch { return; }
        if (m && m.id === 1) {
          if (m.error || typeof m.result !== 'string') { ws.close(); return; }
          subscribed = true;
          this.live = true;
          clearTimeout(giveUp);
          this.stopPolling();
          this.mode('live', 'on');
          this.poll(); // catch up with blocks mined before the subscription
        } else if (m && m.method === 'eth_subscription' && m.params && m.params.result) {
          const n = big(m.params.result.number);
          if (n !== null) this.update(n);
        }
      };
      ws.onclose = () => {
        clearTimeout(giveUp);
        this.live = false;
        this.fallback();
      };
    },
    fallback() {
      if (!this.pollTimer) {
        this.mode('polling', 'poll');
        this.poll();
        this.pollTimer = setInterval(() => this.poll(), 2000);
      }
      if (!this.retryTimer) this.retryTimer = setTimeout(() => this.connect(), 15000);
    },
    stopPolling() { clearInterval(this.pollTimer); this.pollTimer = null; },
    async poll() {
      let n;
      try { n = big(await rpc('eth_blockNumber')); } catch { this.mode('node unreachable', 'bad'); return; }
      if ($('#live').dataset.mode === 'bad') this.mode(this.live ? 'live' : 'polling', this.live ? 'on' : 'poll');
      this.update(n);
    },
    update(n) {
      if (n === null || n === this.number) return;
      this.number = n;
      this.mode(this.live ? 'live' : 'polling', this.live ? 'on' : 'poll');
      for (const f of this.listeners) { try { f(n); } catch (e) { showError(e); } }
    },
  };

  // ---------------------------------------------------------------- node metrics (/metrics)
  // Counters are summed over their labels; rates are per second between two samples 2 s apart.
  const WATCHED = ['hearth_rpc_requests_total', 'hearth_rpc_errors_total', 'hearth_rpc_rejections_total',
    'hearth_rpc_refused_total', 'hearth_block_number', 'hearth_mempool_pending', 'hearth_mempool_queued'];
  const KEEP = 90;
  const Metrics = {
    state: 'unknown', // 'ok' | 'off'
    prev: null, lastChange: null, blockTime: null, listeners: new Set(), timer: null,
    series: { calls: [], errors: [], shed: [], refused: [], blockTime: [], pending: [], queued: [] },
    start() { this.sample(); this.timer = setInterval(() => this.sample(), 2000); },
    parse(text) {
      const sums = {};
      for (const line of text.split('\n')) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
        if (m && WATCHED.includes(m[1])) sums[m[1]] = (sums[m[1]] || 0) + Number(m[3]);
      }
      return sums;
    },
    async sample() {
      if (document.hidden && this.state === 'ok') return; // rates span the gap
      let s;
      try {
        const r = await fetch(EP.metrics, { cache: 'no-store', credentials: 'omit' });
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        s = this.parse(await r.text());
        if (!('hearth_rpc_requests_total' in s) && !('hearth_block_number' in s)) throw new Error('no Hearth metrics');
      } catch {
        if (this.state !== 'ok') { // never seen: this node has no /metrics (anvil, say)
          this.state = 'off';
          clearInterval(this.timer);
          this.notify();
        }
        return;
      }
      this.state = 'ok';
      const t = performance.now() / 1000, p = this.prev;
      const rate = (k) => {
        if (!p) return null;
        const d = (s[k] || 0) - (p[k] || 0);
        return d >= 0 ? d / (t - p.t) : null; // a reset counter (restart) gives no point
      };
      const head = s.hearth_block_number;
      if (p && head !== undefined) {
        if (head > p.hearth_block_number) {
          if (this.lastChange) this.blockTime = (t - this.lastChange.t) / (head - this.lastChange.head);
          this.lastChange = { t, head };
        } else if (head < p.hearth_block_number) { this.lastChange = null; this.blockTime = null; }
      }
      const push = (k, v) => { const a = this.series[k]; a.push(v); if (a.length > KEEP) a.shift(); };
      push('calls', rate('hearth_rpc_requests_total'));
      push('errors', rate('hearth_rpc_errors_total'));
      push('shed', rate('hearth_rpc_rejections_total'));
      push('refused', rate('hearth_rpc_refused_total'));
      push('blockTime', this.blockTime);
      push('pending', s.hearth_mempool_pending ?? null);
      push('queued', s.hearth_mempool_queued ?? null);
      this.prev = { ...s, t };
      this.notify();
    },
    notify() { for (const f of this.listeners) f(); },
  };

  let palette = null;
  function colors() {
    if (!palette) {
      const cs = getComputedStyle(document.documentElement), v = (n) => cs.getPropertyValue(n).trim();
      palette = { a: v('--accent'), b: v('--chart2'), c: v('--bad'), line: v('--line'), muted: v('--muted') };
    }
    return palette;
  }
  function niceMax(m) {
    if (!(m > 0)) return 1;
    if (m <= 1) return m <= 0.5 ? (m <= 0.2 ? (m <= 0.1 ? 0.1 : 0.2) : 0.5) : 1;
    const p = 10 ** Math.floor(Math.log10(m));
    return [1, 2, 5, 10].map((x) => x * p).find((x) => x >= m);
  }
  const fmtNum = (v) => (v == null ? '—' : v >= 100 ? Math.round(v).toString() : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  function drawChart(canvas, series, int) {
    const dpr = window.devicePixelRatio || 1, w = canvas.clientWidth, ht = canvas.clientHeight;
    if (!w || !ht) return;
    if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(ht * dpr); }
    const g = canvas.getContext('2d'), c = colors();
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, ht);
    let max = 0;
    for (const s of series) for (const v of s.values) if (v != null && v > max) max = v;
    max = niceMax(max);
    const top = 12, bottom = ht - 2, y = (v) => bottom - (v / max) * (bottom - top), dx = w / (KEEP - 1);
    g.strokeStyle = c.line; g.lineWidth = 1;
    g.beginPath();
    for (const v of [0, max / 2, max]) { g.moveTo(0, Math.round(y(v)) + 0.5); g.lineTo(w, Math.round(y(v)) + 0.5); }
    g.stroke();
    g.fillStyle = c.muted; g.font = '10px system-ui, sans-serif';
    g.fillText(int ? String(max) : fmtNum(max), 2, 10);
    g.lineWidth = 1.6;
    for (const s of series) {
      g.strokeStyle = g.fillStyle = s.color;
      g.beginPath();
      let pen = false;
      const n = s.values.length;
      s.values.forEach((v, i) => {
        if (v == null) { pen = false; return; }
        const x = w - (n - 1 - i) * dx;
        if (pen) g.lineTo(x, y(v)); else g.moveTo(x, y(v));
        pen = true;
        if (n === 1 || (i > 0 && s.values[i - 1] == null && s.values[i + 1] == null)) g.fillRect(x - 1, y(v) - 1, 2, 2);
      });
      g.stroke();
    }
  }
  function chartsPanel(ctx) {
    const c = colors();
    const defs = [
      { id: 'calls', title: 'RPC calls / s', series: [['calls', c.a, 'calls'], ['errors', c.c, 'errors']] },
      { id: 'refusals', title: 'Refusals / s', series: [['shed', c.a, 'shed'], ['refused', c.b, 'refused']] },
      { id: 'block-time', title: 'Block time (s)', series: [['blockTime', c.a, 'seconds per block']] },
      { id: 'pool', title: 'Pool size', int: true, series: [['pending', c.a, 'pending'], ['queued', c.b, 'queued']] },
    ];
    const wrap = h('div', { class: 'charts', testid: 'charts', hidden: Metrics.state !== 'ok' });
    const note = h('p', { class: 'muted', testid: 'charts-off', hidden: Metrics.state !== 'off' }, 'Node metrics are not available here (no Hearth /metrics): charts hidden.');
    const items = defs.map((d) => {
      const value = h('b', { testid: `chart-value-${d.id}` }, '—');
      const canvas = h('canvas', { testid: `chart-${d.id}`, 'aria-label': d.title, role: 'img' });
      const legend = d.series.length > 1 ? h('div', { class: 'legend' }, d.series.map(([, col, name]) => {
        const i = h('i'); i.style.background = col; return [i, name];
      })) : null;
      wrap.append(h('div', { class: 'chart' }, h('h3', null, d.title, value), canvas, legend));
      return { d, value, canvas };
    });
    const redraw = () => {
      wrap.hidden = Metrics.state !== 'ok';
      note.hidden = Metrics.state !== 'off';
      for (const { d, value, canvas } of items) {
        const series = d.series.map(([k, color]) => ({ values: Metrics.series[k], color }));
        const last = Metrics.series[d.series[0][0]];
        const v = last.length ? last[last.length - 1] : null;
        value.textContent = d.int && v != null ? String(Math.round(v)) : fmtNum(v);
        drawChart(canvas, series, d.int);
      }
    };
    Metrics.listeners.add(redraw);
    window.addEventListener('resize', redraw);
    ctx.onLeave(() => { Metrics.listeners.delete(redraw); window.removeEventListener('resize', redraw); });
    requestAnimationFrame(redraw);
    return [wrap, note];
  }

  // ---------------------------------------------------------------- views
  // Home: the head, the recent blocks (live), the node's own charts.
  const RECENT = 10;
  async function viewHome(ctx, main) {
    const headEl = h('b', { testid: 'head-number' }, '…');
    const chainEl = h('b', { testid: 'chain-id' }, '…');
    const tbody = h('tbody');
    const table = h('table', { testid: 'recent-blocks' },
      h('thead', null, h('tr', null, h('th', null, 'Block'), h('th', null, 'Hash'), h('th', null, 'Time'),
        h('th', { class: 'num' }, 'Txs'), h('th', { class: 'num' }, 'Gas used'), h('th', { class: 'num' }, 'Base fee'))),
      tbody);
    add(main, h('div', { class: 'stats' },
      h('div', { class: 'stat' }, h('small', null, 'Head block'), headEl),
      h('div', { class: 'stat' }, h('small', null, 'Chain id'), chainEl)),
    chartsPanel(ctx), panel('Recent blocks', 'view-home', table));

    const rows = new Map(); // number (BigInt) -> tr
    const row = (b, fresh) => {
      const n = big(b.number);
      return h('tr', { class: fresh ? 'fresh' : null, testid: `block-row-${n}` },
        h('td', null, blockLink(n)), h('td', null, h('a', { href: `#/block/${n}`, class: 'mono' }, short(b.hash, 10, 8))),
        h('td', null, fmtTime(b.timestamp)),
        h('td', { class: 'num', testid: `block-txs-${n}` }, Array.isArray(b.transactions) ? b.transactions.length : '—'),
        h('td', { class: 'num' }, fmtInt(b.gasUsed), muted(pct(b.gasUsed, b.gasLimit))),
        h('td', { class: 'num' }, b.baseFeePerGas ? fmtGwei(b.baseFeePerGas) : '—'));
    };
    let shown = null, busy = false, again = false;
    async function load(head, fresh) {
      if (head == null) return;
      if (busy) { again = true; return; }
      busy = true;
      try {
        if (shown !== null && head < shown) { rows.clear(); tbody.replaceChildren(); shown = null; } // rewound
        const from = shown === null ? head - BigInt(RECENT - 1) : shown + 1n;
        const nums = [];
        for (let n = head; n >= from && n >= 0n && nums.length < RECENT; n--) nums.push(n);
        const blocks = await batchAll(nums.map((n) => ['eth_getBlockByNumber', [hexQ(n), false]]));
        if (!ctx.live()) return;
        for (const b of blocks.reverse()) {
          if (!b) continue;
          const n = big(b.number), tr = row(b, fresh);
          if (rows.has(n)) rows.get(n).replaceWith(tr); else tbody.prepend(tr);
          rows.set(n, tr);
        }
        for (const n of [...rows.keys()]) if (n <= head - BigInt(RECENT)) { rows.get(n).remove(); rows.delete(n); }
        shown = shown === null || head > shown ? head : shown;
        headEl.textContent = head.toString();
      } catch (e) { if (ctx.live()) showError(e); } finally {
        busy = false;
        if (again && ctx.live()) { again = false; load(Head.number ?? shown, true); }
      }
    }
    let pending = null;
    const onHead = (n) => { clearTimeout(pending); pending = setTimeout(() => load(n, true), 150); };
    Head.listeners.add(onHead);
    ctx.onLeave(() => { Head.listeners.delete(onHead); clearTimeout(pending); });

    const [num, chain] = await batchAll([['eth_blockNumber'], ['eth_chainId']]);
    if (!ctx.live()) return;
    chainEl.textContent = `${big(chain)}`;
    await load(big(num), false);
  }

  // Block: header fields, then its transactions a page at a time.
  const PAGE = 25;
  function parseBlockId(id) {
    if (/^\d{1,19}$/.test(id)) return { num: BigInt(id) };
    if (/^0x[0-9a-fA-F]{1,16}$/.test(id)) return { num: BigInt(id) };
    if (isHash(id)) return { hash: id.toLowerCase() };
    if (['latest', 'earliest', 'safe', 'finalized'].includes(id)) return { tag: id };
    return null;
  }
  async function viewBlock(ctx, main, id) {
    const which = parseBlockId(id);
    if (!which) throw new Error(`"${id}" is not a block number or hash`);
    const b = which.hash ? await rpc('eth_getBlockByHash', [which.hash, false])
      : await rpc('eth_getBlockByNumber', [which.num !== undefined ? hexQ(which.num) : which.tag, false]);
    if (!ctx.live()) return;
    if (!b) { add(main, h('h1', null, `Block ${id}`), panel('Not found', 'view-block', h('p', { testid: 'not-found' }, 'The node has no such block.'))); return; }
    const n = big(b.number);
    if (n === null) throw new Error(`block ${id} has no number`);
    const txCount = Array.isArray(b.transactions) ? b.transactions.length : 0;
    const nav = h('div', { class: 'row' }, n > 0n ? h('a', { href: `#/block/${n - 1n}`, testid: 'block-prev' }, '← previous') : null,
      h('a', { href: `#/block/${n + 1n}`, testid: 'block-next' }, 'next →'));
    add(main, h('h1', null, 'Block ', h('span', { testid: 'block-title' }, `#${n}`)), nav, panel('Header', 'view-block', kv([
      ['Number', n.toString(), 'block-number'],
      ['Hash', h('span', { class: 'mono' }, b.hash), 'block-hash'],
      ['Parent', n > 0n ? blockLink(n - 1n, h('span', { class: 'mono' }, b.parentHash)) : h('span', { class: 'mono' }, b.parentHash), 'block-parent'],
      ['Time', fmtTime(b.timestamp), 'block-time'],
      ['Transactions', String(txCount), 'block-tx-count'],
      ['Fee recipient', addrLink(b.miner, b.miner), 'block-miner'],
      ['Gas used', [fmtInt(b.gasUsed), muted(pct(b.gasUsed, b.gasLimit))], 'block-gas-used'],
      ['Gas limit', fmtInt(b.gasLimit), 'block-gas-limit'],
      b.baseFeePerGas != null && ['Base fee', fmtGwei(b.baseFeePerGas), 'block-base-fee'],
      b.blobGasUsed != null && ['Blob gas used / excess', `${fmtInt(b.blobGasUsed)} / ${fmtInt(b.excessBlobGas)}`],
      Array.isArray(b.withdrawals) && ['Withdrawals', String(b.withdrawals.length)],
      b.size != null && ['Size', `${fmtInt(b.size)} bytes`],
      ['State root', h('span', { class: 'mono' }, b.stateRoot)],
      ['Transactions root', h('span', { class: 'mono' }, b.transactionsRoot)],
      ['Receipts root', h('span', { class: 'mono' }, b.receiptsRoot)],
      b.extraData && b.extraData !== '0x' && ['Extra data', h('span', { class: 'mono' }, b.extraData)],
    ])));
    const list = h('div', { testid: 'block-txs' });
    add(main, panel(`Transactions (${txCount})`, 'block-txs-panel', list));
    if (!txCount) { list.append(h('p', { class: 'empty' }, 'No transactions.')); return; }

    let all = null; // the fallback's whole block, paged here
    const pages = Math.ceil(txCount / PAGE);
    // Otterscan's pages count from the block's end on Erigon and Hearth, from its start on
    // anvil: the first answer tells. `p` counts from the start.
    let fromEnd = null;
    async function page(p) {
      let txs, receipts = [];
      if (!missing.has('ots_getBlockTransactions')) {
        try {
          const r = await rpc('ots_getBlockTransactions', [Number(n), fromEnd ? pages - 1 - p : p, PAGE]);
          txs = arr(r && r.fullblock && r.fullblock.transactions);
          receipts = arr(r && r.receipts);
          if (fromEnd === null) {
            fromEnd = pages > 1 && !txs.some((t) => big(t && t.transactionIndex) === 0n);
            if (fromEnd) p = pages - 1;
          }
        } catch (e) { if (e.code !== -32601) showError(e); }
      }
      if (!txs) {
        if (!all) {
          const [full, rc] = await batch([['eth_getBlockByNumber', [hexQ(n), true]], ['eth_getBlockReceipts', [hexQ(n)]]]);
          if (!full.ok) throw full.error;
          all = { txs: (full.value && full.value.transactions) || [], receipts: rc.ok && Array.isArray(rc.value) ? rc.value : [] };
        }
        txs = all.txs.slice(p * PAGE, (p + 1) * PAGE);
        receipts = all.receipts.slice(p * PAGE, (p + 1) * PAGE);
      }
      if (!ctx.live()) return;
      const byHash = receiptMap(txs, receipts);
      const ix = (t) => Number(big(t.transactionIndex) ?? 0n);
      txs = txs.filter(Boolean).sort((a, b) => ix(a) - ix(b));
      fill(list, txTable(txs, byHash, true), pages > 1 ? h('div', { class: 'pager' },
        h('button', { type: 'button', disabled: p === 0, testid: 'block-txs-prev', onclick: () => page(p - 1).catch(showError) }, '← previous'),
        muted(`page ${p + 1} of ${pages}`),
        h('button', { type: 'button', disabled: p + 1 >= pages, testid: 'block-txs-next', onclick: () => page(p + 1).catch(showError) }, 'next →')) : null);
    }
    await page(0);
  }

  // Receipts by lowercase transaction hash (by position where a receipt names no hash).
  function receiptMap(txs, receipts) {
    const m = new Map();
    receipts.forEach((r, i) => {
      const hash = r && (r.transactionHash || (txs[i] && txs[i].hash));
      if (hash) m.set(String(hash).toLowerCase(), r);
    });
    return m;
  }
  function statusCell(r) {
    if (!r) return muted('pending');
    const ok = big(r.status) === 1n;
    return h('span', { class: 'pill ' + (ok ? 'ok' : 'bad') }, ok ? 'success' : 'failed');
  }
  // A table of transactions; receipts by lowercase hash when known.
  function txTable(txs, receipts, inBlock) {
    const tbody = h('tbody');
    for (const tx of txs) {
      if (!tx || typeof tx !== 'object') continue;
      const r = receipts.get(String(tx.hash).toLowerCase());
      const to = tx.to ? addrLink(tx.to) : r && r.contractAddress ? ['create ', addrLink(r.contractAddress)] : muted('create');
      tbody.append(h('tr', { testid: `tx-row-${String(tx.hash).toLowerCase()}` },
        inBlock ? h('td', { class: 'num' }, fmtInt(tx.transactionIndex)) : h('td', null, blockLink(tx.blockNumber)),
        h('td', null, txLink(tx.hash)), h('td', null, addrLink(tx.from)), h('td', null, to),
        h('td', { class: 'num' }, fmtEth(tx.value)),
        h('td', { class: 'num' }, r ? fmtInt(r.gasUsed) : '—'), h('td', null, statusCell(r))));
    }
    return h('table', null, h('thead', null, h('tr', null, h('th', { class: inBlock ? 'num' : null }, inBlock ? '#' : 'Block'),
      h('th', null, 'Hash'), h('th', null, 'From'), h('th', null, 'To'), h('th', { class: 'num' }, 'Value'),
      h('th', { class: 'num' }, 'Gas used'), h('th', null, 'Status'))), tbody);
  }

  // Transaction: its fields, then the decoded call tree, events and console.log lines.
  async function viewTx(ctx, main, hash) {
    if (!isHash(hash)) throw new Error(`"${hash}" is not a transaction hash`);
    hash = hash.toLowerCase();
    const [tx, r] = await batchAll([['eth_getTransactionByHash', [hash]], ['eth_getTransactionReceipt', [hash]]]);
    if (!ctx.live()) return;
    add(main, h('h1', null, 'Transaction ', h('span', { class: 'mono', testid: 'tx-title' }, short(hash, 10, 8))));
    if (!tx) { add(main, panel('Not found', 'view-tx', h('p', { testid: 'not-found' }, 'The node knows no transaction with this hash (neither mined nor pooled).'))); return; }
    const ok = r && big(r.status) === 1n;
    const status = !r ? h('span', { class: 'pill warn' }, 'pending') : h('span', { class: 'pill ' + (ok ? 'ok' : 'bad') }, ok ? 'success' : 'failed');
    const reason = h('span', { class: 'bad', testid: 'tx-error' });
    const timeEl = h('span', null, tx.blockTimestamp ? fmtTime(tx.blockTimestamp) : '…');
    const type = big(tx.type);
    const gasPrice = r && r.effectiveGasPrice != null ? r.effectiveGasPrice : tx.gasPrice;
    const input = tx.input || tx.data || '0x';
    const created = r && r.contractAddress;
    add(main, panel('Overview', 'view-tx', kv([
      ['Hash', h('span', { class: 'mono' }, tx.hash), 'tx-hash'],
      ['Status', [status, ' ', reason], 'tx-status'],
      ['Block', tx.blockNumber != null ? [blockLink(tx.blockNumber), muted(` index ${big(tx.transactionIndex)}`)] : muted('not mined yet'), 'tx-block'],
      tx.blockNumber != null && ['Time', timeEl, 'tx-time'],
      ['From', addrLink(tx.from, tx.from), 'tx-from'],
      tx.to ? ['To', addrLink(tx.to, tx.to), 'tx-to'] : ['Created contract', created ? addrLink(created, created) : muted('contract creation'), 'tx-created'],
      ['Value', fmtEth(tx.value), 'tx-value'],
      r && big(r.gasUsed) !== null && ['Transaction fee', fmtEth(big(r.gasUsed) * (big(gasPrice) || 0n))],
      ['Gas used', r ? [h('span', { testid: 'tx-gas-used-value' }, fmtInt(r.gasUsed)), muted(pct(r.gasUsed, tx.gas))] : '—', 'tx-gas-used'],
      ['Gas limit', fmtInt(tx.gas), 'tx-gas-limit'],
      [r ? 'Effective gas price' : 'Gas price', gasPrice != null ? fmtGwei(gasPrice) : '—', 'tx-gas-price'],
      tx.maxFeePerGas != null && ['Max fee / priority fee', `${fmtGwei(tx.maxFeePerGas)} / ${fmtGwei(tx.maxPriorityFeePerGas)}`],
      ['Nonce', fmtInt(tx.nonce), 'tx-nonce'],
      ['Type', type === null ? '—' : `${type} (${TX_TYPES[type] || 'unknown'})`, 'tx-type'],
      ['Input', input === '0x' ? muted('none') : [input.length >= 10 && tx.to ? h('div', null, 'selector ', h('code', null, input.slice(0, 10))) : null, hexBlock(input, 'tx-input-hex')], 'tx-input'],
    ])));
    const traceBody = h('div', { testid: 'trace' }, muted('Tracing…'));
    const eventsBody = h('div', { testid: 'tx-events' });
    const consolePanel = panel('console.log', 'tx-console');
    consolePanel.hidden = true;
    add(main, consolePanel, panel('Call tree', 'trace-panel', traceBody), panel('Events', 'tx-events-panel', eventsBody));
    if (r && Array.isArray(r.logs)) renderRawLogs(eventsBody, r.logs);

    if (tx.blockNumber != null && !tx.blockTimestamp) {
      rpc('eth_getBlockByNumber', [tx.blockNumber, false]).then((b) => { if (b) timeEl.textContent = fmtTime(b.timestamp); }, () => { timeEl.textContent = '—'; });
    }
    if (!r) { fill(traceBody, muted('Not traced: the transaction is not mined yet.')); return; }
    const tree = await traceOf(hash).catch((e) => e);
    if (!ctx.live()) return;
    if (tree instanceof Error) { fill(traceBody, errLine(tree)); return; }
    if (!tree) { fill(traceBody, muted('No trace: this node serves neither hearth_traceTransactionDecoded nor debug_traceTransaction.')); return; }
    if (!tree.node.success && tree.node.error) reason.textContent = tree.node.error;
    fill(traceBody, renderTree(tree.node), muted(tree.source));
    const logs = [];
    (function walk(nd) { for (const l of nd.logs) logs.push(l); for (const c of nd.calls) walk(c); })(tree.node);
    if (tree.decoded && logs.some((l) => l.event)) {
      fill(eventsBody, h('ol', { class: 'tree', testid: 'decoded-logs' }, logs.map((l) => h('li', null, logLine(l, true)))),
        r && r.logs && r.logs.length ? h('details', null, h('summary', null, `Raw logs (${r.logs.length})`), rawLogs(r.logs)) : null);
    }
    if (Array.isArray(tree.console) && tree.console.length) {
      consolePanel.hidden = false;
      consolePanel.append(h('pre', { class: 'console', testid: 'console-lines' }, tree.console.map((l) => (typeof l === 'string' ? l : JSON.stringify(l)) + '\n')));
    }
  }

  // {node, source, decoded, console}: Hearth's named tree, else geth's callTracer, else null.
  async function traceOf(hash) {
    if (!missing.has('hearth_traceTransactionDecoded')) {
      try {
        const t = await rpc('hearth_traceTransactionDecoded', [hash]);
        if (t) return { node: normDecoded(t), source: 'from hearth_traceTransactionDecoded', decoded: true, console: t.console };
      } catch (e) { if (e.code !== -32601) throw e; }
    }
    if (!missing.has('debug_traceTransaction')) {
      try {
        const t = await rpc('debug_traceTransaction', [hash, { tracer: 'callTracer', tracerConfig: { withLog: true } }]);
        if (t) return { node: normCallTracer(t), source: 'from debug_traceTransaction (callTracer): no names', decoded: false };
      } catch (e) { if (e.code !== -32601) throw e; }
    }
    return null;
  }
  const arr = (x) => (Array.isArray(x) ? x : []);
  function normDecoded(t) {
    return {
      type: t.type, from: t.from, to: t.to, contract: t.contract, fn: t.function, args: t.args, input: t.input,
      value: t.value, gasUsed: t.gasUsed, output: t.output, success: t.success !== false, returns: t.returns, error: t.error,
      logs: arr(t.logs), calls: arr(t.calls).map(normDecoded),
    };
  }
  function normCallTracer(t) {
    return {
      type: t.type, from: t.from, to: t.to, contract: null, fn: null, args: null, input: t.input, value: t.value,
      gasUsed: t.gasUsed, output: t.output, success: !t.error, returns: null, error: t.revertReason || t.error,
      logs: arr(t.logs), calls: arr(t.calls).map(normCallTracer),
    };
  }
  // An argument or parameter value: addresses become links, long strings are cut.
  function valueNode(v) {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    if (isAddr(s)) return addrLink(s, s);
    return s.length > 200 ? s.slice(0, 200) + `…(${s.length} chars)` : s;
  }
  function logLine(l, withAddr) {
    if (l.event) {
      const params = arr(l.params).map((p, i) => [i ? ', ' : '', p && p.name ? `${p.name}: ` : '', valueNode(p ? p.value : '')]);
      return [h('span', { class: 'ev' }, 'emit ', String(l.event)), '(', params, ')', withAddr ? [muted(' @ '), addrLink(l.address)] : null];
    }
    return [h('span', { class: 'ev' }, 'log'), withAddr ? [muted(' @ '), addrLink(l.address)] : null,
      h('div', { class: 'mono muted' }, arr(l.topics).map((t, i) => h('div', null, `topic${i} ${t}`)), h('div', null, 'data ', valueNode(l.data || '0x')))];
  }
  function rawLogs(logs) {
    return h('ol', { class: 'tree', testid: 'raw-logs' }, logs.map((l) => h('li', null, logLine({ address: l.address, topics: l.topics, data: l.data }, true))));
  }
  function renderRawLogs(el, logs) {
    fill(el, logs.length ? rawLogs(logs) : h('p', { class: 'empty' }, 'No logs.'));
  }
  const MAX_NODES = 2000;
  function renderTree(root) {
    let count = 0;
    const many = (function size(n) { return 1 + n.calls.reduce((a, c) => a + size(c), 0); })(root) > 200;
    function node(nd, depth) {
      const create = /CREATE/.test(String(nd.type));
      const name = nd.contract ? String(nd.contract) : null;
      const fnName = nd.fn ? String(nd.fn).replace(/\(.*$/, '') : null;
      let call;
      if (create) call = ['new ', name || '', name ? '@' : '', addrLink(nd.to, nd.to)];
      else {
        const target = name ? [h('span', { title: nd.to }, name), muted('@'), addrLink(nd.to)] : addrLink(nd.to);
        const data = isHex(nd.input) && nd.input.length > 10 ? nd.input.slice(10) : '';
        const args = Array.isArray(nd.args) ? ['(', nd.args.map((a, i) => [i ? ', ' : '', valueNode(a)]), ')']
          : data ? ['(', h('code', { title: `${data.length / 2} bytes` }, data.length > 72 ? data.slice(0, 72) + '…' : data), ')'] : '()';
        call = [target, '::', h('span', { class: 'fn' }, fnName || (isHex(nd.input) && nd.input.length >= 10 ? nd.input.slice(0, 10) : 'fallback')), args];
      }
      const value = big(nd.value);
      const head = h('span', { class: 'node' }, h('span', { class: 'gas' }, `[${fmtInt(nd.gasUsed)}] `), muted(String(nd.type || 'CALL') + ' '), call,
        value ? muted(` {value: ${fmtEth(value)}}`) : null);
      let ret = null;
      if (!nd.success) ret = h('div', { class: 'fail' }, '← revert', nd.error ? ': ' + String(nd.error) : '');
      else if (nd.returns != null && nd.returns !== '') ret = h('div', { class: 'ret' }, '← ', valueNode(nd.returns));
      else if (create) ret = h('div', { class: 'ret' }, `← ${isHex(nd.output) ? (nd.output.length - 2) / 2 : 0} bytes of code`);
      else if (isHex(nd.output) && nd.output.length > 2) ret = h('div', { class: 'ret' }, '← ', h('code', null, nd.output.length > 130 ? nd.output.slice(0, 130) + '…' : nd.output));
      // Logs among the calls by their `position` (calls made before them: callTracer's), else
      // after the calls.
      const inner = [], logs = nd.logs.map((l) => [Number(big(l.position) ?? Infinity), l]);
      const emit = (upTo) => {
        for (const e of logs) {
          if (e[1] && e[0] <= upTo) {
            const l = e[1];
            e[1] = null;
            inner.push(h('li', null, logLine(l, l.address && nd.to && String(l.address).toLowerCase() !== String(nd.to).toLowerCase())));
          }
        }
      };
      nd.calls.forEach((c, i) => {
        emit(i);
        if (count === MAX_NODES) inner.push(h('li', { class: 'muted' }, `… more calls not shown (over ${MAX_NODES})`));
        if (count++ < MAX_NODES) inner.push(node(c, depth + 1));
      });
      emit(Infinity);
      const body = [inner.length ? h('ul', null, inner) : null, ret];
      const li = h('li', { class: nd.success ? null : 'failed', testid: `call-depth-${depth}` });
      if (nd.calls.length || nd.logs.length) li.append(h('details', { open: !many || depth < 2 }, h('summary', null, head), body));
      else li.append(head, ...body.filter(Boolean));
      return li;
    }
    return h('ul', { class: 'tree', testid: 'call-tree' }, node(root, 0));
  }

  // Address: balance, nonce, code, history (Otterscan's search), storage.
  async function viewAddress(ctx, main, addr) {
    if (!isAddr(addr)) throw new Error(`"${addr}" is not an address`);
    addr = addr.toLowerCase();
    const [bal, nonce, code] = await batchAll([['eth_getBalance', [addr, 'latest']], ['eth_getTransactionCount', [addr, 'latest']], ['eth_getCode', [addr, 'latest']]]);
    if (!ctx.live()) return;
    const size = isHex(code) ? (code.length - 2) / 2 : 0;
    const delegate = size === 23 && /^0xef0100/i.test(code) ? '0x' + code.slice(8) : null;
    const creator = h('span', null, '…');
    let codeRow = null;
    if (size) {
      const det = h('details', { testid: 'address-code' }, h('summary', null, `${fmtInt(size)} bytes`));
      det.addEventListener('toggle', () => { if (det.open && det.childElementCount === 1) det.append(hexBlock(code, 'address-code-hex', 20000)); });
      codeRow = ['Code', det, 'address-code-row'];
    }
    add(main, h('h1', null, delegate ? 'Delegated account ' : size ? 'Contract ' : 'Address ', h('span', { class: 'mono', testid: 'address-title' }, addr)),
      panel('Overview', 'view-address', kv([
        ['Balance', [h('span', { testid: 'address-balance-eth' }, fmtEth(bal)), ' ', muted(`(${big(bal)} wei)`)], 'address-balance'],
        ['Nonce', fmtInt(nonce), 'address-nonce'],
        ['Kind', delegate ? ['EIP-7702 delegation to ', addrLink(delegate, delegate)] : size ? 'contract' : 'account (no code)', 'address-kind'],
        codeRow,
        size && !delegate && ['Creator', creator, 'address-creator'],
      ])));
    if (size && !delegate) {
      (async () => {
        if (missing.has('ots_getContractCreator')) throw new RpcError(-32601, 'ots_getContractCreator is not served by this node');
        const c = await rpc('ots_getContractCreator', [addr]);
        fill(creator, c && isAddr(c.creator) ? [addrLink(c.creator, c.creator), ' in ', txLink(c.hash)] : muted('unknown (genesis or set by a dev method)'));
      })().catch((e) => fill(creator, muted(e.code === -32601 ? 'unknown (this node does not serve ots_getContractCreator)' : errText(e))));
    }
    // History.
    const hist = h('div', { testid: 'address-txs' }, muted('Loading…'));
    add(main, panel('Transactions', 'address-txs-panel', hist));
    async function history(before) {
      try {
        const r = await rpc('ots_searchTransactionsBefore', [addr, before, PAGE]);
        if (!ctx.live()) return;
        const txs = arr(r && r.txs);
        const receipts = receiptMap(txs, arr(r && r.receipts));
        let last = null;
        for (const t of txs) { const b = big(t.blockNumber); if (b !== null && (last === null || b < last)) last = b; }
        const more = r && r.lastPage === false && last !== null && last > 0n;
        fill(hist, txs.length ? txTable(txs, receipts, false) : h('p', { class: 'empty' }, before ? 'No older transactions.' : 'No transactions.'),
          h('div', { class: 'pager' },
            h('button', { type: 'button', testid: 'address-txs-newest', disabled: before === 0, onclick: () => history(0) }, '← newest'),
            muted(`${txs.length} transaction${txs.length === 1 ? '' : 's'}${before ? ` before block ${before}` : ''}`),
            h('button', { type: 'button', testid: 'address-txs-next', disabled: !more, onclick: () => history(Number(last)) }, 'older →')));
      } catch (e) {
        if (!ctx.live()) return;
        fill(hist, e.code === -32601 ? muted('This node does not serve ots_searchTransactionsBefore, so the address\'s history is not shown.') : errLine(e));
      }
    }
    history(0);
    // Storage.
    const slotIn = h('input', { testid: 'slot-input', placeholder: 'slot: 0, 42 or 0x…', size: 40, 'aria-label': 'Storage slot' });
    const slotOut = h('div', { testid: 'slot-value', class: 'mono' });
    const read = async (ev) => {
      ev.preventDefault();
      const s = slotIn.value.trim();
      let key = null;
      if (/^\d{1,78}$/.test(s) || /^0x[0-9a-fA-F]{1,64}$/.test(s)) { const b = BigInt(s); if (b < 2n ** 256n) key = '0x' + b.toString(16).padStart(64, '0'); }
      if (!key) { fill(slotOut, h('span', { class: 'bad' }, 'A slot is a number below 2^256, in decimal or 0x hex.')); return; }
      fill(slotOut, muted('reading…'));
      try { fill(slotOut, `${key} → `, await rpc('eth_getStorageAt', [addr, key, 'latest'])); } catch (e) { fill(slotOut, errLine(e)); }
    };
    const slots = h('div', { testid: 'address-slots' });
    add(main, panel('Storage', 'address-storage', h('form', { class: 'row', onsubmit: read }, slotIn, h('button', { type: 'submit', testid: 'slot-read' }, 'Read slot')), slotOut, slots));
    if (size) {
      const keys = [...Array(10).keys()];
      batchAll(keys.map((i) => ['eth_getStorageAt', [addr, '0x' + i.toString(16).padStart(64, '0'), 'latest']])).then((vals) => {
        if (!ctx.live()) return;
        fill(slots, h('table', null, h('thead', null, h('tr', null, h('th', { class: 'num' }, 'Slot'), h('th', null, 'Value'))),
          h('tbody', null, vals.map((v, i) => h('tr', { testid: `slot-row-${i}` }, h('td', { class: 'num' }, String(i)), h('td', { class: 'mono' + (big(v) ? '' : ' muted') }, String(v)))))));
      }, (e) => ctx.live() && fill(slots, errLine(e)));
    }
  }

  // Mempool: txpool_content, refreshed while shown.
  const MAX_ROWS = 500;
  async function viewMempool(ctx, main) {
    const pend = h('div', { testid: 'mempool-pending' }), queued = h('div', { testid: 'mempool-queued' });
    const pc = h('span', { testid: 'mempool-pending-count' }, '…'), qc = h('span', { testid: 'mempool-queued-count' }, '…');
    add(main, h('h1', null, 'Mempool'), h('section', { class: 'panel', testid: 'view-mempool' }, h('h2', null, 'Pending ', pc), pend),
      h('section', { class: 'panel' }, h('h2', null, 'Queued ', qc, muted(' (a nonce gap or a fee too low)')), queued));
    const table = (group) => {
      const rows = [];
      for (const [sender, byNonce] of Object.entries(group || {})) {
        for (const [nonce, tx] of Object.entries(byNonce || {})) rows.push({ sender, nonce: big(nonce) ?? 0n, tx: tx || {} });
      }
      rows.sort((a, b) => (a.sender < b.sender ? -1 : a.sender > b.sender ? 1 : a.nonce < b.nonce ? -1 : a.nonce > b.nonce ? 1 : 0));
      if (!rows.length) return [0, h('p', { class: 'empty' }, 'None.')];
      const tbody = h('tbody', null, rows.slice(0, MAX_ROWS).map(({ sender, nonce, tx }) => h('tr', null,
        h('td', null, txLink(tx.hash)), h('td', null, addrLink(sender)), h('td', { class: 'num' }, nonce.toString()),
        h('td', null, tx.to ? addrLink(tx.to) : muted('create')), h('td', { class: 'num' }, fmtEth(tx.value)),
        h('td', { class: 'num' }, fmtInt(tx.gas)), h('td', { class: 'num' }, fmtGwei(tx.maxFeePerGas ?? tx.gasPrice)))));
      return [rows.length, [h('table', null, h('thead', null, h('tr', null, ['Hash', 'From', 'Nonce', 'To', 'Value', 'Gas limit', 'Fee cap'].map((t, i) => h('th', { class: i === 2 || i > 3 ? 'num' : null }, t)))), tbody),
        rows.length > MAX_ROWS ? muted(`… and ${rows.length - MAX_ROWS} more not shown`) : null]];
    };
    let timer = null;
    ctx.onLeave(() => clearTimeout(timer));
    // A big pool is counted (txpool_status) but listed only when asked: txpool_content is
    // megabytes then.
    let force = false;
    const note = h('p', { class: 'muted', hidden: true }, 'The pool is large: ',
      h('button', { type: 'button', testid: 'mempool-load', onclick: () => { force = true; note.hidden = true; clearTimeout(timer); refresh(false); } }, 'list its transactions'));
    main.append(note);
    const refresh = async (first) => {
      try {
        const st = await rpc('txpool_status');
        if (!ctx.live()) return;
        const n = Number(big(st && st.pending) || 0n) + Number(big(st && st.queued) || 0n);
        if (n > 5000 && !force) {
          pc.textContent = `(${big(st.pending)})`; qc.textContent = `(${big(st.queued)})`;
          fill(pend); fill(queued); note.hidden = false;
          timer = setTimeout(() => refresh(false), 3000);
          return;
        }
        const c = await rpc('txpool_content');
        if (!ctx.live()) return;
        const [np, tp] = table(c && c.pending), [nq, tq] = table(c && c.queued);
        pc.textContent = `(${np})`; qc.textContent = `(${nq})`;
        fill(pend, tp); fill(queued, tq);
      } catch (e) { if (!ctx.live()) return; if (first) throw e; showError(e); }
      timer = setTimeout(() => refresh(false), 3000);
    };
    await refresh(true);
  }

  // Dev accounts: eth_accounts with balances and nonces.
  async function viewAccounts(ctx, main) {
    const accounts = arr(await rpc('eth_accounts')).filter(isAddr).slice(0, 200);
    if (!ctx.live()) return;
    const body = h('tbody');
    add(main, h('h1', null, 'Dev accounts'), panel(`Unlocked accounts (${accounts.length})`, 'view-accounts',
      accounts.length ? h('table', { testid: 'accounts-table' }, h('thead', null, h('tr', null, h('th', { class: 'num' }, '#'), h('th', null, 'Address'),
        h('th', { class: 'num' }, 'Balance'), h('th', { class: 'num' }, 'Nonce'))), body) : h('p', { class: 'empty' }, 'The node signs for no account (--no-unlocked-accounts).')));
    for (let i = 0; i < accounts.length; i += 25) {
      const part = accounts.slice(i, i + 25);
      const vals = await batchAll(part.flatMap((a) => [['eth_getBalance', [a, 'latest']], ['eth_getTransactionCount', [a, 'latest']]]));
      if (!ctx.live()) return;
      part.forEach((a, j) => {
        const l = a.toLowerCase();
        body.append(h('tr', { testid: `account-row-${i + j}` }, h('td', { class: 'num' }, String(i + j)), h('td', null, addrLink(a, a)),
          h('td', { class: 'num', testid: `account-balance-${l}` }, fmtEth(vals[2 * j])), h('td', { class: 'num', testid: `account-nonce-${l}` }, fmtInt(vals[2 * j + 1]))));
      });
    }
  }

  // ---------------------------------------------------------------- search and routing
  async function search(q) {
    q = q.trim();
    if (/^\d{1,19}$/.test(q) || ['latest', 'earliest'].includes(q)) return `#/block/${q}`;
    if (isAddr(q)) return `#/address/${q.toLowerCase()}`;
    if (isHash(q)) {
      const [tx, b] = await batch([['eth_getTransactionByHash', [q]], ['eth_getBlockByHash', [q, false]]]);
      if (tx.ok && tx.value) return `#/tx/${q.toLowerCase()}`;
      if (b.ok && b.value) return `#/block/${q.toLowerCase()}`;
      throw new Error(`No transaction or block has the hash ${q}`);
    }
    throw new Error(`"${q}" is not a block number, a transaction or block hash (0x and 64 hex digits) or an address (0x and 40 hex digits)`);
  }

  const ROUTES = [
    [/^\/?$/, viewHome, 'home'],
    [/^\/block\/([^/]+)$/, viewBlock, 'block'],
    [/^\/tx\/([^/]+)$/, viewTx, 'tx'],
    [/^\/address\/([^/]+)$/, viewAddress, 'address'],
    [/^\/mempool$/, viewMempool, 'mempool'],
    [/^\/accounts$/, viewAccounts, 'accounts'],
  ];
  let gen = 0, leave = [];
  function route() {
    for (const f of leave) { try { f(); } catch { /* ignore */ } }
    leave = [];
    const mine = ++gen;
    const ctx = { live: () => mine === gen, onLeave: (f) => leave.push(f) };
    hideError();
    let path = location.hash.replace(/^#/, '') || '/';
    try { path = decodeURIComponent(path); } catch { /* keep it */ }
    const main = $('#app');
    main.replaceChildren();
    const hit = ROUTES.map(([re, view, name]) => [re.exec(path), view, name]).find(([m]) => m);
    main.dataset.route = path;
    if (!hit) {
      add(main, panel('Not found', 'view-unknown', h('p', null, 'No such page. '), h('a', { href: '#/' }, 'Back to the blocks')));
      main.dataset.view = main.dataset.ready = 'unknown';
      return;
    }
    const [m, view, name] = hit;
    main.dataset.view = name;
    main.dataset.ready = '';
    main.setAttribute('aria-busy', 'true');
    document.title = `Hearth explorer · ${name}`;
    view(ctx, main, ...m.slice(1)).catch((e) => {
      if (!ctx.live()) return;
      showError(e);
      if (!main.childElementCount) add(main, h('p', { class: 'muted' }, 'Nothing to show.'));
    }).finally(() => { if (ctx.live()) { main.removeAttribute('aria-busy'); main.dataset.ready = name; } });
  }

  function init() {
    $('#error-close').addEventListener('click', hideError);
    $('#search').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const input = $('#search-input');
      search(input.value).then((to) => {
        input.value = '';
        if (location.hash === to) route(); else location.hash = to;
      }, showError);
    });
    window.addEventListener('hashchange', route);
    route();
    if (EP.note) showError(EP.note);
    // After the first paint: follow the head and sample the node's metrics.
    setTimeout(() => { Head.start(); Metrics.start(); }, 0);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init); else init();
})();
