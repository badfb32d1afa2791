//! A representative slice of the Ethereum Foundation blockchain tests (see
//! `shared/conformance/README.md` section 5) imported through `hearth::import`, the same
//! execution path the miner uses: withdrawals, beacon roots, blob gas, block-hash history,
//! EIP-7685 requests, pre-merge rewards and intermediate roots, fork transitions, and blocks
//! that must be rejected. Every test must pass.

use hearth::conformance::{RunOptions, Summary, blocktest};

use crate::conformance::shared_dir;

fn run(relative: &[&str]) -> Summary {
    run_with(relative, Default::default())
}

fn run_with(relative: &[&str], parallel: hearth_actors::ParallelConfig) -> Summary {
    let root = shared_dir().join("blockchain");
    let paths: Vec<_> = relative.iter().map(|r| root.join(r)).collect();
    for path in &paths {
        assert!(path.exists(), "{} is missing from the conformance data", path.display());
    }
    let options =
        RunOptions { fork: None, threads: Some(2), progress: false, skip_known: false, parallel };
    blocktest::run(&paths, &options).expect("fixtures are readable")
}

fn assert_all_pass(summary: &Summary) {
    assert!(summary.failures.is_empty(), "failures:\n{}", summary.failures.join("\n"));
    assert_eq!(summary.failed, 0);
}

#[test]
fn post_merge_block_rules_pass() {
    or_skip!(crate::conformance::conformance_dir());
    let summary = run(&[
        "shanghai/eip4895_withdrawals",
        "cancun/eip4788_beacon_root",
        "cancun/eip4844_blobs/test_blob_type_tx_pre_fork.json",
        "cancun/eip7516_blobgasfee",
        "prague/eip2935_historical_block_hashes_from_state",
        "prague/eip6110_deposits",
        "prague/eip7002_el_triggerable_withdrawals",
        "prague/eip7251_consolidations",
        "prague/eip7685_general_purpose_el_requests",
        "prague/eip7702_set_code_tx/test_empty_authorization_list.json",
        "osaka/eip7918_blob_reserve_price",
        "osaka/eip7825_transaction_gas_limit_cap",
    ]);
    assert_all_pass(&summary);
    assert!(summary.passed >= 60, "slice too small: {}", summary.line());
}

#[test]
fn pre_merge_chains_and_header_validation_pass() {
    or_skip!(crate::conformance::conformance_dir());
    let summary = run(&[
        "frontier/examples",
        "frontier/validation",
        "frontier/touch",
        "homestead/coverage",
        "london/validation",
        "london/eip1559_fee_market_change",
    ]);
    assert_all_pass(&summary);
    assert!(summary.passed >= 20, "slice too small: {}", summary.line());
}

/// Every block of the slices above through the parallel path (`--exec.parallel always`, three
/// workers) gives the same results: the fixtures' state roots, receipts and rejections hold.
#[test]
fn the_slices_pass_with_every_block_in_parallel() {
    or_skip!(crate::conformance::conformance_dir());
    let parallel =
        hearth_actors::ParallelConfig::new(hearth_actors::ParallelMode::Always, 3).expect("range");
    let summary = run_with(
        &[
            "shanghai/eip4895_withdrawals",
            "cancun/eip4788_beacon_root",
            "cancun/eip7516_blobgasfee",
            "prague/eip2935_historical_block_hashes_from_state",
            "prague/eip6110_deposits",
            "prague/eip7002_el_triggerable_withdrawals",
            "prague/eip7702_set_code_tx/test_empty_authorization_list.json",
            "frontier/examples",
            "frontier/touch",
            "homestead/coverage",
            "london/eip1559_fee_market_change",
        ],
        parallel,
    );
    assert_all_pass(&summary);
    assert!(summary.passed >= 40, "slice too small: {}", summary.line());
}
