// End-to-end check with viem (a client nobody here wrote) against a running Hearth dev chain:
// wallet sends and receipts, fee estimates, the test client's dev methods (snapshot/revert,
// setBalance, mine, impersonation, timestamps, automine off and the pool, interval mining,
// setCode/setStorageAt/setNonce), block polling and WebSocket newHeads, and the read-only
// helpers dapps reach for: simulateCalls / simulateBlocks (eth_simulateV1), createAccessList,
// getBlockReceipts; signing with the node's JSON-RPC account (signMessage, signTypedData,
// signTransaction), each checked by recovering the signer locally, and an EIP-7702 delegation
// sent with an authorizationList signed by a local account.
//
//   node scripts/viem-e2e.mjs <http-url> [hardhat|anvil]   (run by scripts/js-e2e.sh)
//
// Mode "hardhat" is the one to use with Hearth: viem's "anvil" mode sends evm_setIntervalMining
// anvil's seconds, which Hearth (like Hardhat) reads as milliseconds, so that one check runs in
// hardhat mode only. viem is imported from $JS_DIR/node_modules (scripts/js-e2e.sh installs it).
const viemDir = process.env.JS_DIR ?? "/tmp/hearth-js";
const { createPublicClient, createWalletClient, createTestClient, http, webSocket, parseEther,
  verifyMessage, verifyTypedData, recoverTransactionAddress, parseTransaction, keccak256, toHex } =
  await import(`${viemDir}/node_modules/viem/_esm/index.js`);
const { privateKeyToAccount } = await import(`${viemDir}/node_modules/viem/_esm/accounts/index.js`);
const { foundry } = await import(`${viemDir}/node_modules/viem/_esm/chains/index.js`);
const url = process.argv[2] ?? "http://127.0.0.1:8545";
const mode = process.argv[3] ?? "hardhat";
const wsUrl = url.replace("http", "ws");
const chain = { ...foundry, rpcUrls: { default: { http: [url], webSocket: [wsUrl] } } };
const pub = createPublicClient({ chain, transport: http(url) });
const test = createTestClient({ chain, mode, transport: http(url) });
const [a0, a1] = await pub.request({ method: "eth_accounts" });
const wallet = createWalletClient({ chain, transport: http(url), account: a0 });
let fails = 0;
// Polls `cond` every 25 ms until it holds or `ms` pass (no fixed sleeps: CI machines are slow).
const until = async (cond, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await cond()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
};
const check = (name, ok, extra = "") => { console.log(`${ok ? "ok  " : "FAIL"} ${name} ${extra}`); if (!ok) fails++; };
try {
  const bob = "0x000000000000000000000000000000000000b0b0";
  const h = await wallet.sendTransaction({ to: bob, value: parseEther("1") });
  const r = await pub.waitForTransactionReceipt({ hash: h });
  check("send + receipt", r.status === "success");
  check("balance", (await pub.getBalance({ address: bob })) === parseEther("1"));
  // Traces through viem's raw request, as debuggers and explorers send them.
  const frame = await pub.request({ method: "debug_traceTransaction", params: [h, { tracer: "callTracer" }] });
  check("debug_traceTransaction callTracer", frame.type === "CALL" && frame.to === bob && frame.value === "0xde0b6b3a7640000", JSON.stringify(frame));
  const logs = await pub.request({ method: "debug_traceTransaction", params: [h] });
  check("debug_traceTransaction struct logs", logs.gas === 21000 && logs.failed === false && logs.structLogs.length === 0, JSON.stringify(logs));
  const flat = await pub.request({ method: "trace_transaction", params: [h] });
  check("trace_transaction", flat.length === 1 && flat[0].transactionHash === h && flat[0].action.to === bob, JSON.stringify(flat));
  const est = await pub.estimateGas({ account: a0, to: bob, value: 1n });
  check("estimateGas", est === 21000n, String(est));
  const fees = await pub.estimateFeesPerGas();
  check("estimateFeesPerGas", fees.maxFeePerGas > 0n);
  const snap = await test.snapshot();
  await test.setBalance({ address: bob, value: parseEther("5") });
  check("setBalance", (await pub.getBalance({ address: bob })) === parseEther("5"));
  await test.mine({ blocks: 3 });
  const n1 = await pub.getBlockNumber({ cacheTime: 0 });
  await test.revert({ id: snap });
  check("snapshot/revert", (await pub.getBalance({ address: bob })) === parseEther("1") && (await pub.getBlockNumber({ cacheTime: 0 })) < n1);
  await test.impersonateAccount({ address: bob });
  const imp = createWalletClient({ chain, transport: http(url), account: bob });
  const h2 = await imp.sendTransaction({ to: a1, value: 1n });
  check("impersonated send", (await pub.waitForTransactionReceipt({ hash: h2 })).status === "success");
  await test.stopImpersonatingAccount({ address: bob });
  let refused = false;
  try { await imp.sendTransaction({ to: a1, value: 1n }); } catch { refused = true; }
  check("stopImpersonating refuses", refused);
  const t0 = (await pub.getBlock()).timestamp;
  await test.setNextBlockTimestamp({ timestamp: t0 + 1000n });
  await test.mine({ blocks: 1 });
  check("setNextBlockTimestamp", (await pub.getBlock()).timestamp === t0 + 1000n);
  await test.increaseTime({ seconds: 60 });
  await test.mine({ blocks: 1 });
  check("increaseTime", (await pub.getBlock()).timestamp >= t0 + 1060n);
  await test.setAutomine(false);
  const h3 = await wallet.sendTransaction({ to: bob, value: 2n });
  const pend = await pub.request({ method: "txpool_status" });
  check("automine off: pending", parseInt(pend.pending, 16) === 1, JSON.stringify(pend));
  const nonceP = await pub.getTransactionCount({ address: a0, blockTag: "pending" });
  const nonceL = await pub.getTransactionCount({ address: a0, blockTag: "latest" });
  check("pending nonce", nonceP === nonceL + 1, `${nonceP} ${nonceL}`);
  await test.mine({ blocks: 1 });
  check("mined after evm_mine", (await pub.getTransactionReceipt({ hash: h3 })).status === "success");
  await test.setAutomine(true);
  // block filter via polling
  const seen = [];
  const unwatch = pub.watchBlockNumber({ onBlockNumber: (b) => seen.push(b), pollingInterval: 50 });
  await until(() => seen.length >= 1);
  await wallet.sendTransaction({ to: bob, value: 3n });
  await until(() => seen.length >= 2);
  unwatch();
  check("watchBlockNumber (poll)", seen.length >= 2, JSON.stringify(seen.map(String)));
  // websocket newHeads
  const wsc = createPublicClient({ chain, transport: webSocket(wsUrl) });
  const heads = [];
  const unwatchWs = await wsc.watchBlocks({ onBlock: (b) => heads.push(b.number) });
  // The subscription is live once eth_subscribe answered; mine until a head arrives.
  await until(async () => {
    await wallet.sendTransaction({ to: bob, value: 4n });
    return heads.length >= 1;
  });
  unwatchWs();
  check("watchBlocks (ws newHeads)", heads.length >= 1, JSON.stringify(heads.map(String)));
  if (mode === "hardhat") {
    // One block a second: two more blocks take between 1 and a few seconds.
    await test.setIntervalMining({ interval: 1 });
    const b0 = await pub.getBlockNumber({ cacheTime: 0 });
    const t0 = Date.now();
    let b1 = b0;
    await until(async () => (b1 = await pub.getBlockNumber({ cacheTime: 0 })) >= b0 + 2n);
    const secs = (Date.now() - t0) / 1000;
    await test.setIntervalMining({ interval: 0 });
    check("interval mining 1 s", b1 - b0 >= 2n && b1 - b0 <= 3n && secs >= 1, `${b0} -> ${b1} in ${secs} s`);
  }
  const code = "0x6080";
  await test.setCode({ address: bob, bytecode: code });
  check("setCode", (await pub.getCode({ address: bob })) === code);
  await test.setStorageAt({ address: bob, index: 1, value: "0x" + "00".repeat(31) + "2a" });
  check("setStorageAt", BigInt(await pub.getStorageAt({ address: bob, slot: "0x1" })) === 42n);
  await test.setNonce({ address: bob, nonce: 7 });
  check("setNonce", (await pub.getTransactionCount({ address: bob })) === 7);
  // eth_simulateV1 through viem's simulateCalls: a transfer and a call, nothing sent.
  const before = await pub.getBlockNumber({ cacheTime: 0 });
  const sim = await pub.simulateCalls({
    account: a0,
    calls: [{ to: bob, value: 5n }, { to: bob, data: "0x" }],
    traceTransfers: true,
  });
  check("simulateCalls", sim.results.length === 2 && sim.results.every((c) => c.status === "success"),
    JSON.stringify(sim.results.map((c) => c.status)));
  check("simulateCalls transfer log", sim.results[0].logs.length === 1 &&
    sim.results[0].logs[0].address.toLowerCase() === "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
  check("simulateCalls sends nothing", (await pub.getBlockNumber({ cacheTime: 0 })) === before);
  // simulateBlocks: state overrides, two blocks, state carried from the first to the second.
  const carol = "0x000000000000000000000000000000000000ca01";
  const blocks = await pub.simulateBlocks({
    blocks: [
      { stateOverrides: [{ address: carol, balance: parseEther("1") }],
        calls: [{ account: carol, to: bob, value: parseEther("1") }] },
      { calls: [{ account: bob, to: carol, value: 1n }] },
    ],
  });
  check("simulateBlocks", blocks.length === 2 && blocks[1].number === blocks[0].number + 1n &&
    blocks.every((b) => b.calls.every((c) => c.status === "success")));
  const reverts = await pub.simulateCalls({ account: carol, calls: [{ to: bob, value: parseEther("2") }] })
    .then(() => false).catch((e) => /insufficient funds|-38014/i.test(String(e.message ?? e)));
  check("simulateCalls without funds is refused", reverts);
  // createAccessList: a contract reading slot 1 lists that slot under its address.
  const reader = "0x000000000000000000000000000000000000acc1";
  await test.setCode({ address: reader, bytecode: "0x60015400" });
  const acl = await pub.createAccessList({ account: a0, to: reader, data: "0x" });
  check("createAccessList", acl.accessList.length === 1 &&
    acl.accessList[0].address.toLowerCase() === reader &&
    BigInt(acl.accessList[0].storageKeys[0]) === 1n && acl.gasUsed > 21000n, JSON.stringify(acl, (_, v) => typeof v === "bigint" ? v.toString() : v));
  // getBlockReceipts: the receipts of a block, as getTransactionReceipt shows each.
  const h4 = await wallet.sendTransaction({ to: bob, value: 6n });
  const r4 = await pub.waitForTransactionReceipt({ hash: h4 });
  const receipts = await pub.getBlockReceipts({ blockNumber: r4.blockNumber });
  check("getBlockReceipts", receipts.length === 1 && receipts[0].transactionHash === h4 &&
    receipts[0].gasUsed === r4.gasUsed);
  // Signing with the node's account (a JSON-RPC account: viem sends personal_sign,
  // eth_signTypedData_v4, eth_signTransaction), verified by local recovery.
  const message = "Hello from viem";
  const sig = await wallet.signMessage({ message });
  check("signMessage (personal_sign)", await verifyMessage({ address: a0, message, signature: sig }), sig);
  const raw = await wallet.signMessage({ message: { raw: keccak256(toHex("raw bytes")) } });
  check("signMessage raw", await verifyMessage({ address: a0, message: { raw: keccak256(toHex("raw bytes")) }, signature: raw }));
  const typed = {
    domain: { name: "Ether Mail", version: "1", chainId: 31337, verifyingContract: "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC" },
    types: {
      Person: [{ name: "name", type: "string" }, { name: "wallet", type: "address" }],
      Mail: [{ name: "from", type: "Person" }, { name: "to", type: "Person" }, { name: "contents", type: "string" }, { name: "amount", type: "uint256" }],
    },
    primaryType: "Mail",
    message: {
      from: { name: "Cow", wallet: "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826" },
      to: { name: "Bob", wallet: "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB" },
      contents: "Hello, Bob!",
      amount: 2n ** 255n,
    },
  };
  const typedSig = await wallet.signTypedData(typed);
  check("signTypedData (eth_signTypedData_v4)", await verifyTypedData({ address: a0, ...typed, signature: typedSig }), typedSig);
  const forged = await verifyTypedData({ address: a1, ...typed, signature: typedSig });
  check("signTypedData recovers a0, not a1", !forged);
  const signedTx = await wallet.signTransaction({ to: bob, value: 3n, chain });
  check("signTransaction (eth_signTransaction)", (await recoverTransactionAddress({ serializedTransaction: signedTx })).toLowerCase() === a0.toLowerCase() &&
    parseTransaction(signedTx).value === 3n, signedTx);
  // EIP-7702: account 2 (a local key) authorizes code, account 0 sends the type-4 transaction.
  const delegate = "0x000000000000000000000000000000000000d00d";
  await test.setCode({ address: delegate, bytecode: "0x3060005260206000f3" });
  const local = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
  const nonce = await pub.getTransactionCount({ address: local.address });
  const authorization = await local.signAuthorization({ contractAddress: delegate, chainId: 31337, nonce });
  const delegated = await pub.call({ to: local.address, authorizationList: [authorization] });
  check("call with authorizationList sees the delegation", BigInt(delegated.data ?? "0x0") === BigInt(local.address), delegated.data);
  check("... without committing it", (await pub.getCode({ address: local.address })) === undefined);
  const h7702 = await wallet.sendTransaction({ to: local.address, authorizationList: [authorization] });
  const r7702 = await pub.waitForTransactionReceipt({ hash: h7702 });
  check("sendTransaction with authorizationList", r7702.status === "success" && r7702.type === "eip7702", r7702.type);
  check("delegated code", (await pub.getCode({ address: local.address })) === `0xef0100${delegate.slice(2)}`);
  // Logs a rewind undoes reach watchers again with removed: true, over polling filters and a
  // WebSocket logs subscription alike (geth's reorg behaviour; anvil 1.7.1 sends none).
  const deployLogger = await wallet.sendTransaction({ data: "0x600b600a5f39600b5ff360ff60005260206000a000" });
  const logger = (await pub.waitForTransactionReceipt({ hash: deployLogger })).contractAddress;
  const polled = [], pushed = [];
  const unPoll = pub.watchEvent({ address: logger, onLogs: (ls) => polled.push(...ls), pollingInterval: 50 });
  const unPush = wsc.watchEvent({ address: logger, onLogs: (ls) => pushed.push(...ls) });
  const removedIn = (logs) => logs.filter((l) => l.removed).length;
  const rewound = await test.snapshot();
  // Both watchers are live once each has seen a log.
  await until(async () => {
    await wallet.sendTransaction({ to: logger });
    return polled.length >= 1 && pushed.length >= 1;
  });
  await test.revert({ id: rewound });
  await until(() => removedIn(polled) >= 1 && removedIn(pushed) >= 1);
  check("watchEvent sees removed: true after evm_revert (polling, ws)", removedIn(polled) >= 1 && removedIn(pushed) >= 1,
    `${removedIn(polled)} ${removedIn(pushed)}`);
  const [p0, q0] = [removedIn(polled), removedIn(pushed)];
  const [n0, m0] = [polled.length, pushed.length];
  await wallet.sendTransaction({ to: logger });
  // A log is reported removed only to a watcher that saw it: wait until both have.
  await until(() => polled.length > n0 && pushed.length > m0);
  await pub.request({ method: "anvil_rollback", params: [1] });
  await until(() => removedIn(polled) > p0 && removedIn(pushed) > q0);
  check("watchEvent sees removed: true after anvil_rollback (polling, ws)", removedIn(polled) > p0 && removedIn(pushed) > q0,
    `${removedIn(polled)} ${removedIn(pushed)}`);
  unPoll();
  unPush();
  await wsc.transport.getRpcClient?.().then((c) => c.close()).catch(() => {});
} catch (e) { console.log("FAIL exception", e.shortMessage ?? e.message); fails++; }
console.log(`viem-e2e (${mode} mode): ${fails} failed`);
process.exit(fails ? 1 : 0);
