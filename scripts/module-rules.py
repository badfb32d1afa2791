#!/usr/bin/env python3
"""The RPC crate's layering rule (issue 32), read from the code's own imports.

usage: scripts/module-rules.py [PROJECT_DIR] [--graph-tool PATH]

The module graph comes from the shared tool `module_graph.py` (a module is a file; an edge is
any `crate::` / `super::` / `self::` path naming it; edges to a module's own ancestors are
ignored). That tool checks cycles and that `rpc/src/core` names nothing outside it; this script
adds the order of the layers above it:

    core  <-  eth  <-  net, debug, trace, anvil, txpool, testing, ots  <-  methods  <-  transport  <-  lib

A module may name modules of its own layer or of layers before it, never after; `eth` is a
layer of its own, so no other namespace folder is ever imported by it. Test-only modules
(`tests`, `fuzz`) may name anything. Exits 1 and names every edge against the rule.
"""
import os
import sys

LAYERS = [
    {"core"},
    {"eth"},
    {"net", "debug", "trace", "anvil", "txpool", "testing", "engine", "replica", "ots"},
    {"methods"},
    {"transport"},
    {""},  # lib.rs
]
TEST_ONLY = {"tests", "fuzz"}


def layer_of(module):
    top = module.split("::")[0]
    for index, layer in enumerate(LAYERS):
        if top in layer:
            return index
    return None


def main():
    args = sys.argv[1:]
    here = os.path.dirname(os.path.abspath(__file__))
    tool = args[args.index("--graph-tool") + 1] if "--graph-tool" in args else os.path.join(
        here, "..", "..", "shared", "tools", "module_graph.py")
    positional = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--graph-tool")]
    project = positional[0] if positional else os.path.join(here, "..")
    sys.path.insert(0, os.path.dirname(os.path.abspath(tool)))
    import module_graph  # the shared reader of `use` paths

    nodes, edges = module_graph.crate_graph(os.path.join(project, "rpc", "src"))
    bad, unplaced = [], set()
    for module, targets in sorted(edges.items()):
        if module.split("::")[0] in TEST_ONLY:
            continue
        source = layer_of(module)
        if source is None:
            unplaced.add(module.split("::")[0])
            continue
        for target in sorted(targets):
            dest = layer_of(target)
            if dest is None:
                unplaced.add(target.split("::")[0])
            elif dest > source:
                bad.append(f"{module} -> {target}")
    for module in sorted(nodes):
        if module.split("::")[0] not in TEST_ONLY and layer_of(module) is None:
            unplaced.add(module.split("::")[0])
    for edge in bad:
        print(f"rpc: an import against the layers (core <- eth <- namespaces <- methods <- transport): {edge}")
    for module in sorted(unplaced):
        print(f"rpc: module `{module}` is in no layer: add it to LAYERS in scripts/module-rules.py")
    print(f"rpc layering: {len(bad)} imports against the rule, {len(unplaced)} modules in no layer")
    sys.exit(1 if bad or unplaced else 0)


if __name__ == "__main__":
    main()
