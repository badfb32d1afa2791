//! anvil's command line: the real binary started with anvil's flags (banner, `--config-out`,
//! what the chain then answers, an existing datadir, refused flags), and in-process nodes made
//! from anvil's flags (the genesis and rules of `--hardfork`, the CREATE2 deployer, `--init`,
//! `--gas-price`, the code size and block gas limits, `--auto-impersonate`).

use alloy_consensus::{SignableTransaction, TxEip7702, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, U256, hex, keccak256};
use alloy_signer::SignerSync;
use clap::Parser;
use hearth::cli::Cli;
use hearth::config::NodeConfig;
use hearth::genesis::{CREATE2_DEPLOYER, CREATE2_DEPLOYER_CODE};
use serde_json::{Value, json};

use crate::process::{NodeProcess, TempDir};
use crate::support::{GENESIS_TIME, TestNode, quantity};

/// Account 0 of the default mnemonic.
const ALICE: &str = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
/// Initcode whose contract's runtime code is `602a60005260206000f3` (returns 42).
const INITCODE: &str = "69602a60005260206000f3600052600a6016f3";
const RUNTIME: &str = "0x602a60005260206000f3";

/// An in-process node configured by `flags` as the binary would be (small mailboxes and two
/// executor threads, as every test node).
fn node_with(flags: &[&str]) -> TestNode {
    let mut args = vec!["hearth", "--http.port", "0"];
    args.extend_from_slice(flags);
    let mut config = NodeConfig::try_from(Cli::try_parse_from(args).expect("flags parse"))
        .expect("flags are valid");
    let small = NodeConfig::for_tests();
    config.mailbox = small.mailbox;
    config.executor_threads = small.executor_threads;
    TestNode::start_with(config)
}

/// Sends `tx` from Alice with eth_sendTransaction and returns its receipt.
async fn send(node: &TestNode, tx: Value) -> Value {
    let mut tx = tx;
    tx["from"] = json!(ALICE);
    let hash = node.ok("eth_sendTransaction", json!([tx])).await;
    node.ok("eth_getTransactionReceipt", json!([hash])).await
}

async fn code(node: &TestNode, address: &str) -> String {
    node.ok("eth_getCode", json!([address, "latest"])).await.as_str().expect("hex").to_owned()
}

#[test]
fn anvil_flags_start_the_binary_with_anvils_banner_and_config_out() {
    let dir = TempDir::new("anvil-flags");
    let out = dir.path().join("config.json");
    let node = NodeProcess::spawn(&[
        "-p",
        "0",
        "-b",
        "2",
        "--hardfork",
        "cancun",
        "-a",
        "2",
        "--balance",
        "5",
        "--chain-id",
        "99",
        "--base-fee",
        "3",
        "--gas-limit",
        "40000000",
        "--timestamp",
        "1000",
        "--derivation-path",
        "m/44'/60'/1'/0/",
        "--config-out",
        out.to_str().expect("utf-8"),
    ]);
    let banner = node.banner.join("\n");
    // What anvil 1.7.1 prints for the same flags (its accounts and keys for that path).
    for expected in [
        "Available Accounts\n==================\n\n(0) 0x8C8d35429F74ec245F8Ef2f4Fd1e551cFF97d650 (5.000000000000000000 ETH)\n(1) 0x40FBBE484b8Ee6139Af08446950B088e10b2306A (5.000000000000000000 ETH)",
        "Private Keys\n==================\n\n(0) 0x7797c0f3db8b946604ec2039dfd9763e4ffdc53174342a2ed9b14fa3eda666a5\n(1) 0xf85f544c4904b1c1bbacb64b10fbcc22ccf496f490d74e0f277017d00914eb54",
        "Wallet\n==================\nMnemonic:          test test test test test test test test test test test junk\nDerivation path:   m/44'/60'/1'/0/",
        "Chain ID\n==================\n\n99",
        "Base Fee\n==================\n\n3",
        "Gas Limit\n==================\n\n40000000",
        "Genesis Timestamp\n==================\n\n1000",
        "Genesis Number\n==================\n\n0",
        "Hardfork\n==================\n\ncancun",
        "Chain\n==================\n\nnew chain in memory",
    ] {
        assert!(banner.contains(expected), "{expected:?} missing from\n{banner}");
    }
    assert_eq!(node.banner.last().expect("a banner"), &format!("Listening on {}", node.addr));

    assert_eq!(node.ok("eth_chainId", json!([])), "0x63");
    let genesis = node.ok("eth_getBlockByNumber", json!(["0x0", false]));
    assert_eq!(
        (&genesis["timestamp"], &genesis["baseFeePerGas"], &genesis["gasLimit"]),
        (&json!("0x3e8"), &json!("0x3"), &json!("0x2625a00"))
    );
    // Cancun's header fields and contracts, none of Prague's.
    assert!(genesis.get("parentBeaconBlockRoot").is_some());
    assert!(genesis.get("requestsHash").is_none(), "{genesis}");
    let code_at = |a: &str| node.ok("eth_getCode", json!([a, "latest"]));
    assert_eq!(code_at(&CREATE2_DEPLOYER.to_string()), hex::encode_prefixed(CREATE2_DEPLOYER_CODE));
    // Beacon roots are left out, as anvil leaves them (a dev block records none).
    assert_eq!(code_at("0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02"), "0x", "no beacon roots");
    assert_eq!(code_at("0x0000F90827F1C53a10cb7A02335B175320002935"), "0x", "no block hashes");
    // The dev accounts of that path sign.
    let hash = node.ok(
        "eth_sendTransaction",
        json!([{"from": "0x8C8d35429F74ec245F8Ef2f4Fd1e551cFF97d650", "to": ALICE, "value": "0x1"}]),
    );
    assert!(hash.is_string());

    // anvil's keys and forms (its gas_price is its own 1.875 gwei default; ours is what
    // eth_gasPrice answers: the base fee plus the 1 gwei tip).
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("config-out written"))
            .expect("JSON");
    assert_eq!(
        written,
        json!({
            "available_accounts": [
                "0x8c8d35429f74ec245f8ef2f4fd1e551cff97d650",
                "0x40fbbe484b8ee6139af08446950b088e10b2306a"
            ],
            "private_keys": [
                "0x7797c0f3db8b946604ec2039dfd9763e4ffdc53174342a2ed9b14fa3eda666a5",
                "0xf85f544c4904b1c1bbacb64b10fbcc22ccf496f490d74e0f277017d00914eb54"
            ],
            "wallet": {
                "derivation_path": "m/44'/60'/1'/0/",
                "mnemonic": "test test test test test test test test test test test junk"
            },
            "base_fee": "3",
            "gas_price": "1000000003",
            "gas_limit": "40000000",
            "genesis_timestamp": "1000"
        })
    );
    assert_eq!(node.ok("eth_gasPrice", json!([])), "0x3b9aca03");
    node.stop();
}

#[test]
fn quiet_prints_no_banner_and_json_logs_are_json() {
    let node = NodeProcess::spawn(&["-p", "0", "-q", "--log.format", "json"]);
    assert!(node.banner.is_empty(), "{:?}", node.banner);
    assert!(!node.log.is_empty());
    for line in &node.log {
        let entry: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("JSON: {line}"));
        assert!(entry["level"].is_string() && entry["fields"]["message"].is_string(), "{line}");
    }
    assert_eq!(node.ok("eth_chainId", json!([])), "0x7a69");
    node.stop();
    let (code, stdout, stderr) = NodeProcess::run_to_exit(&["-p", "0", "--json", "--number", "3"]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert!(stderr.contains("--number 3 is not supported"), "{stderr}");
}

#[test]
fn an_existing_datadir_runs_and_prints_its_own_chain() {
    let dir = TempDir::new("existing");
    let datadir = dir.path().join("chain");
    let datadir = datadir.to_str().expect("utf-8");
    let first = NodeProcess::spawn(&[
        "--datadir",
        datadir,
        "-p",
        "0",
        "--hardfork",
        "CANCUN",
        "--chain-id",
        "5",
        "--timestamp",
        "1000",
    ]);
    assert!(first.banner.iter().any(|l| l.starts_with("new chain in ")), "{:?}", first.banner);
    first.ok("evm_mine", json!([]));
    first.stop();

    // No flags: the chain's own id and rules, its genesis, where it stands.
    let again = NodeProcess::spawn(&["--datadir", datadir, "-p", "0"]);
    let banner = again.banner.join("\n");
    assert!(banner.contains("Chain ID\n==================\n\n5"), "{banner}");
    assert!(banner.contains("Hardfork\n==================\n\ncancun"), "{banner}");
    assert!(banner.contains("Genesis Timestamp\n==================\n\n1000"), "{banner}");
    assert!(banner.contains(&format!("existing chain in {datadir}, head block 1")), "{banner}");
    assert_eq!(again.ok("eth_chainId", json!([])), "0x5");
    again.ok("evm_mine", json!([]));
    let block = again.ok("eth_getBlockByNumber", json!(["latest", false]));
    assert!(block.get("requestsHash").is_none(), "still Cancun blocks: {block}");
    again.stop();

    // Flags that contradict the chain stop the start (exit 2), naming the flag.
    for (flag, value, runs) in
        [("--hardfork", "prague", "runs cancun"), ("--chain-id", "6", "runs chain id 5")]
    {
        let (code, _, stderr) =
            NodeProcess::run_to_exit(&["--datadir", datadir, "-p", "0", flag, value]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(&format!("{flag} {value} does not match")), "{stderr}");
        assert!(stderr.contains(runs), "{stderr}");
    }
    // The same values are fine; flags that only shape a genesis are warned about.
    let same = NodeProcess::spawn(&[
        "--datadir",
        datadir,
        "-p",
        "0",
        "--hardfork",
        "cancun",
        "--chain-id",
        "5",
        "--balance",
        "1",
    ]);
    assert_eq!(same.ok("eth_blockNumber", json!([])), "0x2");
    same.stop();
}

#[test]
fn unknown_or_unusable_flags_exit_2_naming_them() {
    let cases: &[(&[&str], &str)] = &[
        (&["--hardfork", "london"], "[possible values: shanghai, cancun, prague, osaka]"),
        (&["--timestamp", "-1"], "'--timestamp <TIMESTAMP>'"),
        (&["--timestamp", "18446744073709551616"], "'--timestamp <TIMESTAMP>'"),
        (&["--timestamp", "9223372036854775808"], "--timestamp must be between 0 and"),
        (&["--base-fee", "18446744073709551616"], "--block-base-fee-per-gas"),
        (&["--fork-transaction-hash", "0x01"], "--fork-transaction-hash: needs --fork-url"),
        (&["--order", "lifo"], "--order"),
    ];
    for (args, message) in cases {
        let (code, stdout, stderr) = NodeProcess::run_to_exit(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(stderr.contains(message), "{args:?}: {stderr} should say {message:?}");
    }
}

/// The address CREATE2 gives `initcode` deployed by the proxy with `salt`.
fn create2_address(salt: B256, initcode: &[u8]) -> Address {
    let mut preimage = vec![0xff];
    preimage.extend_from_slice(CREATE2_DEPLOYER.as_slice());
    preimage.extend_from_slice(salt.as_slice());
    preimage.extend_from_slice(keccak256(initcode).as_slice());
    Address::from_slice(&keccak256(preimage)[12..])
}

#[actix::test]
async fn the_create2_deployer_deploys_with_a_salt() {
    let node = node_with(&[]);
    let deployer = CREATE2_DEPLOYER.to_string();
    assert_eq!(code(&node, &deployer).await, hex::encode_prefixed(CREATE2_DEPLOYER_CODE));
    let salt = B256::repeat_byte(0x5a);
    let initcode = hex::decode(INITCODE).expect("hex");
    let data = format!("0x{}{INITCODE}", hex::encode(salt));
    let expected = create2_address(salt, &initcode);
    // The proxy answers the address it creates.
    let answer = node.ok("eth_call", json!([{"to": deployer, "data": data}, "latest"])).await;
    assert_eq!(answer, json!(format!("{expected:#x}")));
    let receipt = send(&node, json!({"to": deployer, "data": data, "gas": "0x30d40"})).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(code(&node, &expected.to_string()).await, RUNTIME);
    let call = node.ok("eth_call", json!([{"to": expected.to_string()}, "latest"])).await;
    assert_eq!(U256::from_str_radix(&call.as_str().unwrap()[2..], 16).unwrap(), U256::from(42));
    // The same salt again collides: the proxy reverts and nothing is created.
    let again = send(&node, json!({"to": deployer, "data": data, "gas": "0x30d40"})).await;
    assert_eq!(again["status"], "0x0", "{again}");

    let without = node_with(&["--disable-default-create2-deployer"]);
    assert_eq!(code(&without, &deployer).await, "0x");
}

#[actix::test]
async fn the_hardfork_sets_the_genesis_the_executor_and_the_pool() {
    // (fork, TSTORE runs (Cancun on), CLZ runs (Osaka on), block-hashes contract (Prague on))
    for (fork, tstore, clz, history) in [
        ("shanghai", false, false, false),
        ("cancun", true, false, false),
        ("prague", true, false, true),
        ("osaka", true, true, true),
    ] {
        let node = node_with(&["--hardfork", fork]);
        let runs = |code: &'static str| {
            let node = &node;
            async move {
                let response = node
                    .call("eth_call", json!([{"data": code, "gas": "0x186a0"}, "latest"]))
                    .await;
                response.get("error").is_none()
            }
        };
        // PUSH1 1 PUSH0 TSTORE STOP / PUSH1 1 CLZ STOP, run as a creation's initcode.
        assert_eq!(runs("0x60015f5d00").await, tstore, "{fork}: TSTORE");
        assert_eq!(runs("0x60011e00").await, clz, "{fork}: CLZ");
        let history_code = code(&node, "0x0000F90827F1C53a10cb7A02335B175320002935").await;
        assert_eq!(history_code != "0x", history, "{fork}: EIP-2935 contract");
        node.ok("evm_mine", json!([])).await;
        let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
        assert_eq!(block.get("requestsHash").is_some(), history, "{fork}: {block}");
        assert_eq!(block.get("blobGasUsed").is_some(), tstore, "{fork}: {block}");
        // The pool's rules: an EIP-7702 transaction needs Prague (from Prague on, this one is
        // refused for its empty authorization list instead).
        let (_, message, _) = node.err("eth_sendRawTransaction", json!([set_code_tx(&node)])).await;
        assert_eq!(message.contains("pool not yet in Prague"), !history, "{fork}: {message}");
    }
}

/// A signed EIP-7702 transaction from dev account 0 with an empty authorization list.
fn set_code_tx(node: &TestNode) -> String {
    let tx = TxEip7702 {
        chain_id: 31337,
        gas_limit: 100_000,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 1,
        ..Default::default()
    };
    let signature = node.signer(0).sign_hash_sync(&tx.signature_hash()).expect("signs");
    let envelope: TxEnvelope = tx.into_signed(signature).into();
    hex::encode_prefixed(envelope.encoded_2718())
}

#[actix::test]
async fn a_fixed_gas_price_is_answered_and_filled() {
    let node = node_with(&["--gas-price", "7", "--base-fee", "0"]);
    assert_eq!(node.ok("eth_gasPrice", json!([])).await, "0x7");
    let receipt = send(&node, json!({"to": ALICE, "value": "0x1"})).await;
    assert_eq!(receipt["status"], "0x1");
    let tx = node.ok("eth_getTransactionByHash", json!([receipt["transactionHash"]])).await;
    assert_eq!((&tx["type"], &tx["gasPrice"]), (&json!("0x0"), &json!("0x7")), "{tx}");
    // A request that names an EIP-1559 fee keeps it.
    let receipt = send(&node, json!({"to": ALICE, "maxFeePerGas": "0x9"})).await;
    let tx = node.ok("eth_getTransactionByHash", json!([receipt["transactionHash"]])).await;
    assert_eq!(tx["type"], "0x2", "{tx}");
    // Without the flag: the base fee plus a 1 gwei tip, and EIP-1559 fills.
    let plain = node_with(&[]);
    assert_eq!(plain.ok("eth_gasPrice", json!([])).await, "0x77359400");
    let receipt = send(&plain, json!({"to": ALICE, "value": "0x1"})).await;
    let tx = plain.ok("eth_getTransactionByHash", json!([receipt["transactionHash"]])).await;
    assert_eq!(tx["type"], "0x2");
}

#[actix::test]
async fn the_code_size_limit_can_be_raised_or_lifted() {
    // PUSH2 25000 PUSH1 0 RETURN: deploys 25,000 zero bytes, above EIP-170's 24,576.
    let deploy = json!({"data": "0x6161a86000f3", "gas": "0x5b8d80"});
    let default = node_with(&[]);
    assert_eq!(send(&default, deploy.clone()).await["status"], "0x0");
    for flags in [&["--code-size-limit", "30000"][..], &["--disable-code-size-limit"][..]] {
        let node = node_with(flags);
        let receipt = send(&node, deploy.clone()).await;
        assert_eq!(receipt["status"], "0x1", "{flags:?}: {receipt}");
        let deployed = receipt["contractAddress"].as_str().expect("an address").to_owned();
        assert_eq!(code(&node, &deployed).await.len(), 2 + 2 * 25_000, "{flags:?}");
    }
    let small = node_with(&["--code-size-limit", "24000"]);
    let at = |data: &str| json!({"data": data, "gas": "0x5b8d80"});
    assert_eq!(send(&small, at("0x615dc06000f3")).await["status"], "0x1", "24,000 bytes");
    assert_eq!(send(&small, at("0x615dc16000f3")).await["status"], "0x0", "24,001 bytes");
}

#[actix::test]
async fn without_a_block_gas_limit_blocks_take_any_gas() {
    let node = node_with(&["--disable-block-gas-limit"]);
    let genesis = node.ok("eth_getBlockByNumber", json!(["0x0", false])).await;
    assert_eq!(genesis["gasLimit"], "0xffffffffffffffff");
    let receipt = send(&node, json!({"to": ALICE, "gas": "0x2625a00"})).await;
    assert_eq!(receipt["status"], "0x1");
    let capped = node_with(&[]);
    let (_, message, _) = capped
        .err("eth_sendTransaction", json!([{"from": ALICE, "to": ALICE, "gas": "0x2625a00"}]))
        .await;
    assert!(message.contains("gas limit"), "{message}");
}

#[actix::test]
async fn auto_impersonate_signs_for_any_sender() {
    let node = node_with(&["--auto-impersonate"]);
    let someone = "0x00000000000000000000000000000000000000b0";
    node.ok("anvil_setBalance", json!([someone, "0xde0b6b3a7640000"])).await;
    let hash = node
        .ok("eth_sendTransaction", json!([{"from": someone, "to": ALICE, "value": "0x1"}]))
        .await;
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(receipt["from"].as_str().map(str::to_lowercase).as_deref(), Some(someone));
    let (code, _, _) =
        node_with(&[]).err("eth_sendTransaction", json!([{"from": someone, "to": ALICE}])).await;
    assert_ne!(code, 0);
}

#[actix::test]
async fn init_starts_from_a_genesis_file_beside_the_dev_accounts() {
    let dir = TempDir::new("init");
    let path = dir.path().join("genesis.json");
    let file = json!({
        "config": {"chainId": 777, "londonBlock": 0, "cancunTime": 0},
        "timestamp": "0x1000", "gasLimit": "0x2000000", "baseFeePerGas": "0x7",
        "coinbase": "0x00000000000000000000000000000000000000aa",
        "alloc": {"0x1111111111111111111111111111111111111111": {
            "balance": "0x10", "code": "0x6001", "nonce": "0x3", "storage": {"0x01": "0x02"}
        }}
    });
    std::fs::write(&path, file.to_string()).expect("write");
    let node = node_with(&["--init", path.to_str().expect("utf-8")]);
    assert_eq!(node.ok("eth_chainId", json!([])).await, "0x309");
    let genesis = node.ok("eth_getBlockByNumber", json!(["0x0", false])).await;
    // The file's timestamp, base fee and coinbase; the flags' gas limit and rules (as anvil).
    assert_eq!(
        (&genesis["timestamp"], &genesis["baseFeePerGas"], &genesis["gasLimit"]),
        (&json!("0x1000"), &json!("0x7"), &json!("0x1c9c380"))
    );
    let coinbase = |block: &Value| block["miner"].as_str().map(str::to_lowercase);
    let aa = Some("0x00000000000000000000000000000000000000aa".to_owned());
    assert_eq!(coinbase(&genesis), aa);
    assert!(genesis.get("requestsHash").is_some(), "Prague, the default, not the file's Cancun");
    let account = "0x1111111111111111111111111111111111111111";
    assert_eq!(node.ok("eth_getBalance", json!([account, "latest"])).await, "0x10");
    assert_eq!(code(&node, account).await, "0x6001");
    assert_eq!(node.ok("eth_getTransactionCount", json!([account, "latest"])).await, "0x3");
    let slot = node.ok("eth_getStorageAt", json!([account, "0x1", "latest"])).await;
    assert_eq!(quantity(&slot), 2);
    let alice = node.ok("eth_getBalance", json!([ALICE, "latest"])).await;
    assert_eq!(alice, "0x21e19e0c9bab2400000", "dev accounts stay funded");
    assert_ne!(code(&node, &CREATE2_DEPLOYER.to_string()).await, "0x");
    // Mined blocks pay the file's coinbase and continue from its timestamp.
    node.ok("evm_mine", json!([])).await;
    let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(coinbase(&block), aa);
    assert_eq!(quantity(&block["timestamp"]), 0x1001);
}

#[actix::test]
async fn the_genesis_timestamp_and_base_fee_are_flags() {
    let node = node_with(&["--timestamp", "5000", "--base-fee", "12"]);
    let genesis = node.ok("eth_getBlockByNumber", json!(["0x0", false])).await;
    assert_eq!((quantity(&genesis["timestamp"]), quantity(&genesis["baseFeePerGas"])), (5000, 12));
    // The test clock stands still, so the next block is one second on from the genesis.
    node.ok("evm_mine", json!([])).await;
    let block = node.ok("eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(quantity(&block["timestamp"]), 5001);
    let default = node_with(&[]);
    let genesis = default.ok("eth_getBlockByNumber", json!(["0x0", false])).await;
    assert_eq!(quantity(&genesis["timestamp"]), GENESIS_TIME);
}

/// Calldata of `function` of `abi` with `args`.
fn abi_call(abi: &Value, function: &str, args: Vec<alloy_dyn_abi::DynSolValue>) -> String {
    use alloy_dyn_abi::JsonAbiExt as _;
    let abi: alloy_json_abi::JsonAbi = serde_json::from_value(abi.clone()).expect("an ABI");
    let function = abi.function(function).and_then(|f| f.first()).expect("the function");
    hex::encode_prefixed(function.abi_encode_input(&args).expect("the arguments fit"))
}

#[test]
fn print_traces_names_a_nested_calls_contract_functions_and_events_from_a_foundry_build() {
    use alloy_dyn_abi::DynSolValue as V;
    let compiled: Value =
        serde_json::from_str(include_str!("../contracts/ConsoleLog.json")).expect("JSON");
    let contract = &compiled["ConsoleLog"];
    // Foundry's layout: out/<File>.sol/<Contract>.json, the codes as `{"object": hex}`.
    let dir = TempDir::new("foundry-out");
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("ConsoleLog.sol")).expect("out/ConsoleLog.sol");
    let artifact = json!({
        "abi": contract["abi"],
        "bytecode": {"object": contract["bytecode"]},
        "deployedBytecode": {"object": contract["deployedBytecode"], "immutableReferences": {}},
    });
    std::fs::write(out.join("ConsoleLog.sol/ConsoleLog.json"), artifact.to_string())
        .expect("write");
    let out = out.to_str().expect("utf-8 temp path");
    let node = NodeProcess::spawn(&[
        "-p",
        "0",
        "--print-traces",
        "--disable-console-log",
        "--artifacts",
        out,
    ]);
    // The constructor takes the payloads it relays: none.
    let constructor = alloy_dyn_abi::DynSolValue::Array(vec![]).abi_encode_params();
    let deploy = format!("{}{}", contract["bytecode"].as_str().unwrap(), hex::encode(constructor));
    let hash = node.ok("eth_sendTransaction", json!([{"from": ALICE, "data": deploy}]));
    let receipt = node.ok("eth_getTransactionReceipt", json!([hash]));
    let address = receipt["contractAddress"].as_str().expect("created").to_owned();
    node.log_until(&format!("call tree of {}", hash.as_str().unwrap()));

    let log = |text: &str| {
        let mut payload = keccak256("log(string)")[..4].to_vec();
        payload.extend(V::Tuple(vec![V::String(text.into())]).abi_encode_params());
        V::Bytes(payload)
    };
    let data = abi_call(
        &contract["abi"],
        "nested",
        vec![V::Array(vec![log("outer")]), V::Array(vec![log("inner")])],
    );
    let tx = json!([{"from": ALICE, "to": address, "data": data, "gas": "0x200000"}]);
    let hash = node.ok("eth_sendTransaction", tx);
    let hash = hash.as_str().expect("a hash");
    let mut tree = node.log_until(&format!("call tree of {hash}"));
    tree.extend(node.log_until(&format!("tx={hash}")));
    let tree = tree.join("\n");
    for named in [
        "ConsoleLog::nested(",
        "ConsoleLog::relay(",
        "ConsoleLog::relayView(",
        "ConsoleLog::relayThenRevert(",
        "[Revert] relayThenRevert: reverted on purpose",
        "ConsoleLog::failCustom(7)",
        "Custom(7, ",
        "console::log(\"inner\")",
        "emit Nested(caller: 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266, a: 1, b: 1)",
    ] {
        assert!(tree.contains(named), "{named:?} is not in the printed tree:\n{tree}");
    }
    // The same names as JSON.
    let decoded = node.ok("hearth_traceTransactionDecoded", json!([hash]));
    assert_eq!(decoded["contract"], "ConsoleLog");
    assert_eq!(decoded["function"], "nested(bytes[],bytes[])");
    assert_eq!(decoded["logs"][0]["event"], "Nested");
    let calls = decoded["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["contract"], "console");
    assert_eq!(calls[0]["function"], "log(string,uint256)");
    assert_eq!(calls[0]["args"], json!(["\"nested: depth 0, a has\"", "1"]));
    assert!(calls.iter().any(|c| c["function"] == "relay(bytes[])"), "{decoded}");
    // What it printed (shown by the explorer), whatever the node prints to its log.
    let console = decoded["console"].as_array().expect("console lines");
    assert_eq!(console.first(), Some(&json!("nested: depth 0, a has 1")), "{console:?}");
    assert!(console.contains(&json!("inner")), "{console:?}");
    node.stop();
}

#[test]
fn ipc_serves_the_same_methods_on_a_unix_socket() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let dir = TempDir::new("ipc");
    let path = dir.path().join("node.ipc");
    let node = NodeProcess::spawn(&["-p", "0", "--ipc", path.to_str().expect("utf-8 temp path")]);
    let stream = std::os::unix::net::UnixStream::connect(&path).expect("the socket is there");
    let mut lines = BufReader::new(stream.try_clone().expect("clone"));
    let mut ask = |text: &str| -> Value {
        (&stream).write_all(text.as_bytes()).expect("sent");
        let mut line = String::new();
        lines.read_line(&mut line).expect("an answer");
        serde_json::from_str(&line).expect("a JSON line")
    };
    // Requests back to back, with or without whitespace; a batch; a transfer with a receipt.
    let answer = ask(r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#);
    assert_eq!(answer["result"], "0x7a69");
    let batch = ask(r#"[{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}]"#);
    assert_eq!(batch[0]["result"], "0x0");
    let send = json!({"jsonrpc": "2.0", "id": 3, "method": "eth_sendTransaction",
        "params": [{"from": ALICE, "to": ALICE, "value": "0x1"}]});
    let hash = ask(&send.to_string())["result"].clone();
    assert_eq!(node.ok("eth_getTransactionReceipt", json!([hash]))["status"], "0x1");
    // Subscriptions are HTTP's: none.
    let sub = ask(r#" {"jsonrpc":"2.0","id":4,"method":"eth_subscribe","params":["newHeads"]}"#);
    assert_eq!(sub["error"]["code"], -32601, "{sub}");
    // Text that is not JSON ends the connection with a parse error.
    let garbage = ask("oops}");
    assert_eq!(garbage["error"]["code"], -32700);
    node.stop();
    assert!(!path.exists(), "the socket is removed when the node stops");
    // A path no socket address can hold is refused at start.
    let long = format!("/tmp/{}", "x".repeat(120));
    let (code, _, stderr) = NodeProcess::run_to_exit(&["-p", "0", "--ipc", &long]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--ipc"), "{stderr}");
}

#[test]
fn completions_print_a_script_for_each_shell_and_refuse_others() {
    for shell in ["bash", "elvish", "fish", "powershell", "zsh"] {
        let (code, out, err) = NodeProcess::run_to_exit(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains("hearth") && out.contains("fork-url"), "{shell}: {out}");
    }
    let (code, _, err) = NodeProcess::run_to_exit(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("possible values"), "{err}");
}
