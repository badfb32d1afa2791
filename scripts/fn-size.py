#!/usr/bin/env python3
"""Function size rule (issue 32): no production function over 70 lines, counted from its `fn`
line to its closing brace, unless the comment block just above it (between the previous item
and the `fn`, attributes and doc comments included) holds a `// long: <reason>` line.

usage: scripts/fn-size.py [ROOT] [--max N] [--list]
Reads every `.rs` under ROOT (default: the checkout) except tests, benches, examples, `tests.rs`
files and whatever follows a `#[cfg(test)]` line. Exits 1 and names each offender.
"""
import os
import re
import sys

FN = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]+"\s+)?fn\s+(\w+)')


def production_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in ("target", ".git", "tests", "benches", "examples", "node_modules")]
        for f in files:
            if f.endswith(".rs") and f != "tests.rs":
                yield os.path.join(d, f)


def allowed(lines, i):
    """A `// long:` line in the attribute/comment block directly above line i."""
    j = i - 1
    while j >= 0:
        s = lines[j].strip()
        if s.startswith("// long:"):
            return True
        if s.startswith("//") or s.startswith("#[") or s.startswith("///"):
            j -= 1
            continue
        return False
    return False


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    end = next((i for i, l in enumerate(lines) if l.startswith("#[cfg(test)]")), len(lines))
    i = 0
    while i < end:
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        indent = m.group(1)
        j = i
        while j < end and not lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith(";"):
            j += 1
        if j >= end or lines[j].rstrip().endswith(";"):
            i = j + 1
            continue
        if lines[j].rstrip().endswith("}"):  # one-line body
            i = j + 1
            continue
        k = j + 1
        while k < end and lines[k].rstrip() != indent + "}":
            k += 1
        yield m.group(8), i + 1, k - i + 1, allowed(lines, i)
        i += 1


def main():
    args = sys.argv[1:]
    limit = int(args[args.index("--max") + 1]) if "--max" in args else 70
    roots = [a for a in args if not a.startswith("--") and not a.isdigit()] or [
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")]
    bad, marked = [], 0
    for root in roots:
        for path in sorted(production_files(root)):
            for name, line, size, ok in functions(path):
                if size > limit:
                    rel = os.path.relpath(path, roots[0])
                    if ok:
                        marked += 1
                        if "--list" in args:
                            print(f"{size:4} {rel}:{line} {name} (long: marked)")
                    else:
                        bad.append((size, rel, line, name))
    for size, rel, line, name in sorted(bad, reverse=True):
        print(f"{size:4} lines: {rel}:{line} fn {name} (split it, or say why above it: // long: <reason>)")
    print(f"functions over {limit} lines: {len(bad)} unmarked, {marked} marked `// long:`")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
