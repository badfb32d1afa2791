// End-to-end check with ethers v6 (a client nobody here wrote) against a running Hearth dev
// chain: fee data, a signed send and its receipt, sends with explicit nonces, the error codes
// ethers derives from geth's messages (INSUFFICIENT_FUNDS, NONCE_EXPIRED), block events by
// polling and over WebSocket; the node's account as a JsonRpcSigner: signMessage
// (personal_sign), signTypedData (eth_signTypedData_v4) and signTransaction
// (eth_signTransaction), each checked by recovering the signer locally.
//
//   node scripts/ethers-e2e.mjs <http-url>   (run by scripts/js-e2e.sh)
//
// ethers is imported from $JS_DIR/node_modules (the .sh installs it there).
const jsDir = process.env.JS_DIR ?? "/tmp/hearth-js";
const { ethers } = await import(`${jsDir}/node_modules/ethers/lib.esm/index.js`);
const url = process.argv[2] ?? "http://127.0.0.1:8545";
// cacheTimeout -1: ethers otherwise answers a repeated request from a 250 ms cache.
const provider = new ethers.JsonRpcProvider(url, undefined, { pollingInterval: 50, cacheTimeout: -1 });
// Account 0 of the dev mnemonic.
const wallet = new ethers.Wallet(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  provider,
);
const sink = "0x000000000000000000000000000000000000dEaD";
let fails = 0;
const check = (name, ok, extra = "") => {
  console.log(`${ok ? "ok  " : "FAIL"} ${name} ${extra}`);
  if (!ok) fails++;
};
// Polls `cond` every 25 ms until it holds or `ms` pass (no fixed sleeps: CI machines are slow).
const until = async (cond, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await cond()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
};
const rejection = async (send) => {
  try {
    await send();
    return "accepted";
  } catch (e) {
    return e.code;
  }
};
try {
  const fee = await provider.getFeeData();
  check("getFeeData", fee.maxFeePerGas > 0n && fee.maxPriorityFeePerGas > 0n);
  const receipt = await (await wallet.sendTransaction({ to: sink, value: 1n })).wait();
  check("send + wait", receipt.status === 1);
  let nonce = await provider.getTransactionCount(wallet.address, "pending");
  const sent = [];
  for (let i = 0; i < 5; i++) sent.push(await wallet.sendTransaction({ to: sink, value: 1n, nonce: nonce++ }));
  const receipts = await Promise.all(sent.map((tx) => tx.wait()));
  check("5 sends with explicit nonces", receipts.every((r) => r.status === 1));
  const rich = await rejection(() => wallet.sendTransaction({ to: sink, value: ethers.parseEther("100000000") }));
  check("too much value: INSUFFICIENT_FUNDS", rich === "INSUFFICIENT_FUNDS", rich);
  const stale = await rejection(() => wallet.sendTransaction({ to: sink, nonce: 0 }));
  check("used nonce: NONCE_EXPIRED", stale === "NONCE_EXPIRED", stale);
  let blocks = 0;
  await provider.on("block", () => blocks++);
  await until(async () => {
    await (await wallet.sendTransaction({ to: sink, value: 1n })).wait();
    return blocks >= 1;
  });
  provider.removeAllListeners("block");
  check("provider.on('block') (polling)", blocks >= 1, String(blocks));
  const ws = new ethers.WebSocketProvider(url.replace("http", "ws"));
  let heads = 0;
  await ws.on("block", () => heads++);
  await until(async () => {
    await (await wallet.sendTransaction({ to: sink, value: 1n })).wait();
    return heads >= 1;
  });
  check("WebSocketProvider block", heads >= 1, String(heads));
  await ws.destroy();
  const signer = await provider.getSigner(1);
  const message = "Hello from ethers";
  const sig = await signer.signMessage(message);
  check("JsonRpcSigner.signMessage", ethers.verifyMessage(message, sig) === signer.address, sig);
  const bytesSig = await signer.signMessage(ethers.getBytes("0x00ff10"));
  check("JsonRpcSigner.signMessage bytes", ethers.verifyMessage(ethers.getBytes("0x00ff10"), bytesSig) === signer.address);
  const domain = { name: "BenchToken", version: "1", chainId: 31337, verifyingContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" };
  const types = { Permit: [
    { name: "owner", type: "address" }, { name: "spender", type: "address" },
    { name: "value", type: "uint256" }, { name: "nonce", type: "uint256" }, { name: "deadline", type: "uint256" },
  ] };
  const permit = { owner: signer.address, spender: sink, value: ethers.MaxUint256, nonce: 0, deadline: 2_000_000_000 };
  const typedSig = await signer.signTypedData(domain, types, permit);
  check("JsonRpcSigner.signTypedData", ethers.verifyTypedData(domain, types, permit, typedSig) === signer.address, typedSig);
  const nested = {
    Person: [{ name: "name", type: "string" }, { name: "wallets", type: "address[]" }],
    Mail: [{ name: "from", type: "Person" }, { name: "to", type: "Person[]" }, { name: "contents", type: "string" }],
  };
  const mail = { from: { name: "Cow", wallets: [sink] }, to: [{ name: "Bob", wallets: [] }], contents: "Hello" };
  const mailSig = await signer.signTypedData({ name: "Ether Mail" }, nested, mail);
  check("JsonRpcSigner.signTypedData nested", ethers.verifyTypedData({ name: "Ether Mail" }, nested, mail, mailSig) === signer.address);
  const raw = await signer.signTransaction({ to: sink, value: 7n });
  const parsed = ethers.Transaction.from(raw);
  check("JsonRpcSigner.signTransaction", parsed.from === signer.address && parsed.value === 7n, raw);
  const refused = await rejection(() => provider.send("eth_sign", [sink, "0x01"]));
  check("eth_sign for an unknown account is refused", refused !== "accepted", String(refused));
} catch (e) {
  console.log("FAIL exception", e.shortMessage ?? e.message);
  fails++;
}
console.log(`ethers-e2e: ${fails} failed`);
process.exit(fails ? 1 : 0);
