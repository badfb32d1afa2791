//! README's method table names every core method exactly once, and nothing else.

use std::collections::BTreeMap;

#[test]
fn the_method_table_lists_every_method_once() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let start = readme.find("## JSON-RPC methods").expect("the methods section");
    let section = &readme[start..];
    let end = section[3..].find("\n#").map_or(section.len(), |i| i + 3);
    let mut listed: BTreeMap<&str, usize> = BTreeMap::new();
    for row in section[..end].lines().filter(|l| l.starts_with("| `")) {
        let first_cell = row.split('|').nth(1).expect("a first cell");
        for name in first_cell.split('`').skip(1).step_by(2) {
            *listed.entry(name).or_default() += 1;
        }
    }
    let twice: Vec<_> = listed.iter().filter(|(_, n)| **n > 1).map(|(m, _)| *m).collect();
    assert!(twice.is_empty(), "listed more than once: {twice:?}");
    let listed: Vec<&str> = listed.into_keys().collect();
    assert_eq!(listed, hearth_rpc::core_methods(), "README's table and the method table differ");
}
