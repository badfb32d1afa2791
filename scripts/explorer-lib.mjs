// What the explorer's browser scripts share (explorer-browser.mjs, explorer-paint.mjs).

/** A JSON-RPC caller of the node at `url`: `rpc(method, params)` answers the result, or throws
 * an Error carrying the node's `code` and message; each call is cut at 20 s. */
export function rpcClient(url) {
  let id = 0;
  return async function rpc(method, params = []) {
    const res = await fetch(url, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }), signal: AbortSignal.timeout(20_000),
    });
    const j = await res.json();
    if (j.error) throw Object.assign(new Error(`${method}: ${j.error.message}`), { code: j.error.code });
    return j.result;
  };
}
