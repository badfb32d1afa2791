// End-to-end blob (EIP-4844) transactions with viem against a running Hearth dev chain: viem's
// wallet `sendTransaction` with `blobs` and `kzg` (c-kzg from npm) signs the transaction with a
// dev key and sends its network form (with the sidecar) by eth_sendRawTransaction; the receipt
// and the block then carry the blob gas; a pending one is served with its sidecar, a mined one
// without; a blob fee cap under the blob base fee is refused.
//
//   node scripts/viem-blob-e2e.mjs <http-url>   (run by scripts/js-e2e.sh; JS_DIR has viem, c-kzg)
const jsDir = process.env.JS_DIR ?? "/tmp/hearth-js";
const { createRequire } = await import("node:module");
const viem = await import(`${jsDir}/node_modules/viem/_esm/index.js`);
const { privateKeyToAccount } = await import(`${jsDir}/node_modules/viem/_esm/accounts/index.js`);
const { foundry } = await import(`${jsDir}/node_modules/viem/_esm/chains/index.js`);
// c-kzg is CommonJS; its loadTrustedSetup(precompute, path?) defaults to Ethereum's setup.
const cKzg = createRequire(`${jsDir}/package.json`)("c-kzg");
cKzg.loadTrustedSetup(0);
const kzg = viem.defineKzg({
  blobToKzgCommitment: (blob) => cKzg.blobToKzgCommitment(blob),
  computeBlobKzgProof: (blob, commitment) => cKzg.computeBlobKzgProof(blob, commitment),
});
const url = process.argv[2] ?? "http://127.0.0.1:8545";
const chain = { ...foundry, rpcUrls: { default: { http: [url] } } };
const pub = viem.createPublicClient({ chain, transport: viem.http(url, { timeout: 60_000 }) });
// Dev account 0 of the default mnemonic, as a local account: viem signs, the node gets raw bytes.
const account = privateKeyToAccount("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");
const wallet = viem.createWalletClient({ chain, transport: viem.http(url, { timeout: 60_000 }), account });
const test = viem.createTestClient({ chain, mode: "hardhat", transport: viem.http(url, { timeout: 60_000 }) });
let fails = 0;
const check = (name, ok, extra = "") => { console.log(`${ok ? "ok  " : "FAIL"} ${name} ${extra}`); if (!ok) fails++; };
try {
  const blobs = viem.toBlobs({ data: viem.stringToHex("hello from viem, ".repeat(1000)) });
  const to = "0x000000000000000000000000000000000000b0b0";
  const hash = await wallet.sendTransaction({ blobs, kzg, to, maxFeePerBlobGas: viem.parseGwei("30") });
  const receipt = await pub.waitForTransactionReceipt({ hash });
  check("blob send + receipt", receipt.status === "success" && receipt.type === "eip4844", receipt.type);
  check("receipt blobGasUsed", receipt.blobGasUsed === 131072n * BigInt(blobs.length), String(receipt.blobGasUsed));
  check("receipt blobGasPrice", receipt.blobGasPrice === 1n, String(receipt.blobGasPrice));
  const block = await pub.getBlock({ blockNumber: receipt.blockNumber });
  check("block blobGasUsed", block.blobGasUsed === 131072n * BigInt(blobs.length), String(block.blobGasUsed));
  check("block excessBlobGas", block.excessBlobGas === 0n, String(block.excessBlobGas));
  const mined = await pub.getTransaction({ hash });
  check("mined tx has hashes, no sidecar", mined.blobVersionedHashes.length === blobs.length && mined.blobs === undefined);
  check("blobBaseFee", (await pub.getBlobBaseFee()) === 1n);
  // viem's getFeeHistory leaves the blob fields out: the raw request has them.
  const history = await pub.request({ method: "eth_feeHistory", params: ["0x1", "latest", []] });
  check("feeHistory blobGasUsedRatio", history.blobGasUsedRatio[0] === blobs.length / 9, JSON.stringify(history.blobGasUsedRatio));

  // With automine off, the pooled transaction is served with its sidecar.
  await test.setAutomine(false);
  const pending = await wallet.sendTransaction({ blobs, kzg, to, maxFeePerBlobGas: viem.parseGwei("30") });
  const raw = await pub.request({ method: "eth_getTransactionByHash", params: [pending] });
  check("pending tx carries its sidecar", raw.blockNumber === null && raw.blobs?.length === blobs.length && raw.commitments?.length === blobs.length);
  await test.mine({ blocks: 1 });
  check("mined after evm_mine", (await pub.getTransactionReceipt({ hash: pending })).status === "success");
  await test.setAutomine(true);

  let refused = "";
  try {
    await wallet.sendTransaction({ blobs, kzg, to, maxFeePerBlobGas: 0n });
  } catch (e) {
    refused = e.details ?? e.shortMessage;
  }
  check("blob fee cap under the blob base fee refused", refused.includes("max fee per blob gas less than block blob gas fee"), refused);
} catch (e) {
  console.error(e);
  fails++;
}
console.log(fails === 0 ? "viem blob e2e: all passed" : `viem blob e2e: ${fails} failed`);
process.exit(fails === 0 ? 0 : 1);
