// Sends N one-blob transactions (network form, signed with viem and c-kzg) to a node that does
// not mine, and prints how many it admitted and refused. Run by scripts/blob-pool-mem.sh.
//
//   node scripts/blob-pool-mem.mjs <http-url> <count>
const jsDir = process.env.JS_DIR ?? "/tmp/hearth-js";
const { createRequire } = await import("node:module");
const viem = await import(`${jsDir}/node_modules/viem/_esm/index.js`);
const { privateKeyToAccount } = await import(`${jsDir}/node_modules/viem/_esm/accounts/index.js`);
const cKzg = createRequire(`${jsDir}/package.json`)("c-kzg");
cKzg.loadTrustedSetup(0);
const kzg = viem.defineKzg({
  blobToKzgCommitment: (blob) => cKzg.blobToKzgCommitment(blob),
  computeBlobKzgProof: (blob, commitment) => cKzg.computeBlobKzgProof(blob, commitment),
});
const [url, count] = [process.argv[2], Number(process.argv[3] ?? 100)];
const account = privateKeyToAccount("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");
// One blob's commitment and proof, computed once and reused by every transaction.
const blobs = viem.toBlobs({ data: viem.stringToHex("pool memory ".repeat(5000)) });
const sidecars = viem.toBlobSidecars({ blobs, kzg });
const rpc = async (method, params) => {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return r.json();
};
let admitted = 0;
const refused = {};
const started = Date.now();
for (let nonce = 0; nonce < count; nonce++) {
  const raw = await account.signTransaction({
    chainId: 31337, type: "eip4844", nonce, to: "0x000000000000000000000000000000000000b0b0",
    gas: 21000n, maxFeePerGas: viem.parseGwei("20"), maxPriorityFeePerGas: viem.parseGwei("1"),
    maxFeePerBlobGas: viem.parseGwei("1"), blobVersionedHashes: viem.sidecarsToVersionedHashes({ sidecars }),
    sidecars,
  });
  const reply = await rpc("eth_sendRawTransaction", [raw]);
  if (reply.error) refused[reply.error.message] = (refused[reply.error.message] ?? 0) + 1;
  else admitted++;
}
const status = await rpc("txpool_status", []);
console.log(JSON.stringify({ sent: count, admitted, refused, pending: parseInt(status.result.pending, 16),
  queued: parseInt(status.result.queued, 16), seconds: (Date.now() - started) / 1000 }));
