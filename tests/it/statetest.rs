//! A representative slice of the Ethereum Foundation state tests (see
//! `shared/conformance/README.md` section 4) run through `hearth::conformance::statetest`, i.e.
//! Hearth's executor and trie: several categories, Cancun/Prague/Osaka, older forks, and
//! transactions that must be rejected (`expectException`). Every entry must pass.

use hearth::conformance::{RunOptions, Summary, statetest};

use crate::conformance::shared_dir;

fn run(relative: &[&str]) -> Summary {
    let root = shared_dir().join("state");
    let paths: Vec<_> = relative.iter().map(|r| root.join(r)).collect();
    for path in &paths {
        assert!(path.exists(), "{} is missing from the conformance data", path.display());
    }
    let options = RunOptions {
        fork: None,
        threads: Some(2),
        progress: false,
        skip_known: false,
        parallel: Default::default(),
    };
    statetest::run(&paths, &options).expect("fixtures are readable")
}

fn assert_all_pass(summary: &Summary) {
    assert!(summary.failures.is_empty(), "failures:\n{}", summary.failures.join("\n"));
    assert_eq!(summary.failed, 0);
}

#[test]
fn cancun_prague_osaka_categories_pass() {
    or_skip!(crate::conformance::conformance_dir());
    let summary = run(&[
        "cancun/eip1153_tstore",
        "cancun/eip5656_mcopy",
        "cancun/eip7516_blobgasfee",
        "prague/eip7702_set_code_tx/test_eip_7702.json",
        "osaka/eip7825_transaction_gas_limit_cap",
        "static/state_tests/stExample",
        "static/state_tests/stLogTests",
        "static/state_tests/stSStoreTest/sstore_0toX.json",
        "static/state_tests/stPreCompiledContracts2/CALLCODEEcrecover0.json",
        "static/state_tests/stCreate2/CREATE2_HighNonce.json",
    ]);
    assert_all_pass(&summary);
    assert!(summary.passed >= 100, "slice too small: {}", summary.line());
}

#[test]
fn older_forks_pass() {
    or_skip!(crate::conformance::conformance_dir());
    let summary = run(&[
        "frontier/opcodes",
        "homestead/coverage",
        "byzantium/eip196_ec_add_mul",
        "istanbul/eip1344_chainid",
        "berlin/eip2930_access_list/test_eip2930_tx_validity.json",
    ]);
    assert_all_pass(&summary);
    assert!(summary.passed >= 20, "slice too small: {}", summary.line());
}

#[test]
fn rejected_transactions_leave_the_pre_state() {
    or_skip!(crate::conformance::conformance_dir());
    // Every entry of these files carries expectException (bad blob count or hash version, fee
    // cap below base fee, empty authorization list, gas limit cap, sender with code, ...).
    let summary = run(&[
        "cancun/eip4844_blobs/test_invalid_tx_blob_count.json",
        "cancun/eip4844_blobs/test_invalid_blob_hash_versioning_single_tx.json",
        "prague/eip7702_set_code_tx/test_empty_authorization_list.json",
        "osaka/eip7825_transaction_gas_limit_cap/test_tx_gas_limit_cap_exceeded.json",
        "static/state_tests/stEIP1559/lowFeeCap.json",
        "static/state_tests/stEIP3607/transactionCollidingWithNonEmptyAccount_calls.json",
        "static/state_tests/stExample/invalidTr.json",
    ]);
    assert_all_pass(&summary);
    assert!(summary.passed >= 25, "slice too small: {}", summary.line());
}

#[test]
fn fork_filter_runs_only_that_fork() {
    or_skip!(crate::conformance::conformance_dir());
    let root = shared_dir().join("state");
    let options = RunOptions {
        fork: Some("Prague".to_owned()),
        threads: Some(1),
        progress: false,
        skip_known: false,
        parallel: Default::default(),
    };
    let summary = statetest::run(&[root.join("static/state_tests/stExample")], &options)
        .expect("fixtures are readable");
    let all = run(&["static/state_tests/stExample"]);
    assert_all_pass(&summary);
    assert!(
        summary.passed > 0 && summary.passed < all.passed,
        "{} vs {}",
        summary.line(),
        all.line()
    );
}

#[test]
fn storage_collisions_are_detected() {
    or_skip!(crate::conformance::conformance_dir());
    // The files revme skips (EIP-7610): creating a contract where storage already exists must
    // fail as a collision; Hearth's executor detects it, so they run and pass.
    let summary = run(&[
        "static/state_tests/stRevertTest/RevertInCreateInInit_Paris.json",
        "static/state_tests/stExtCodeHash/dynamicAccountOverwriteEmpty_Paris.json",
        "static/state_tests/stCreate2/create2collisionStorageParis.json",
    ]);
    assert_all_pass(&summary);
    assert_eq!(summary.skipped, 0);
    assert!(summary.passed >= 5, "slice too small: {}", summary.line());
}
