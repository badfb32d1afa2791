// Compiles tests/contracts/ConsoleLog.sol with solc-js (npm "solc", wasm, offline) into
// tests/contracts/ConsoleLog.json: its ABI, creation bytecode (scripts/console-compare.py deploys it)
// and deployed bytecode (the printed-traces test lays it out as Foundry's out/ to name it).
// Usage: NODE_PATH=/tmp/peers/solc/node_modules node scripts/compile-console.mjs
// (the same solc 0.8.37 and settings as scripts/compile-devtokens.mjs).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const from = process.env.NODE_PATH ? path.join(process.env.NODE_PATH, "x.js") : import.meta.url;
const solc = createRequire(from)("solc");
const dir = path.join(root, "tests/contracts");
const src = fs.readFileSync(path.join(dir, "ConsoleLog.sol"), "utf8");
const settings = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "shanghai",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
};
const input = { language: "Solidity", sources: { "ConsoleLog.sol": { content: src } }, settings };
const out = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of out.errors || []) console.error(e.formattedMessage);
if ((out.errors || []).some((e) => e.severity === "error")) process.exit(1);
const artifact = { solcVersion: solc.version(), settings: { optimizer: settings.optimizer, evmVersion: settings.evmVersion } };
for (const [name, c] of Object.entries(out.contracts["ConsoleLog.sol"])) {
  artifact[name] = {
    abi: c.abi,
    bytecode: "0x" + c.evm.bytecode.object,
    deployedBytecode: "0x" + c.evm.deployedBytecode.object,
  };
}
fs.writeFileSync(path.join(dir, "ConsoleLog.json"), JSON.stringify(artifact, null, 1) + "\n");
console.log(`compiled with solc ${artifact.solcVersion}: ${Object.keys(out.contracts["ConsoleLog.sol"]).join(", ")}`);
