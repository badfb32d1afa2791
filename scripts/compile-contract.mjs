// Compiles tests/contracts/NAME.sol with solc-js (npm "solc", wasm, offline) into
// tests/contracts/NAME.json: per contract its ABI, creation bytecode and deployed bytecode (the
// printed-traces test lays ConsoleLog's out as Foundry's out/ to name it).
// Usage: NODE_PATH=/tmp/peers/solc/node_modules node scripts/compile-contract.mjs NAME
//        (DevTokens, ConsoleLog; the same solc 0.8.37 and settings as ../shared/peers/compile.mjs
//        uses for BenchToken)
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const name = process.argv[2];
if (!name || !/^[A-Za-z0-9]+$/.test(name)) {
  console.error("usage: node scripts/compile-contract.mjs NAME (tests/contracts/NAME.sol)");
  process.exit(2);
}
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const from = process.env.NODE_PATH ? path.join(process.env.NODE_PATH, "x.js") : import.meta.url;
const solc = createRequire(from)("solc");
const dir = path.join(root, "tests/contracts");
const file = `${name}.sol`;
const src = fs.readFileSync(path.join(dir, file), "utf8");
const settings = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "shanghai",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
};
const input = { language: "Solidity", sources: { [file]: { content: src } }, settings };
const out = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of out.errors || []) console.error(e.formattedMessage);
if ((out.errors || []).some((e) => e.severity === "error")) process.exit(1);
const artifact = { solcVersion: solc.version(), settings: { optimizer: settings.optimizer, evmVersion: settings.evmVersion } };
for (const [contract, c] of Object.entries(out.contracts[file])) {
  artifact[contract] = {
    abi: c.abi,
    bytecode: "0x" + c.evm.bytecode.object,
    deployedBytecode: "0x" + c.evm.deployedBytecode.object,
  };
}
fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(artifact, null, 1) + "\n");
console.log(`compiled with solc ${artifact.solcVersion}: ${Object.keys(out.contracts[file]).join(", ")}`);
