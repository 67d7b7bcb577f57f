#!/usr/bin/env python3
"""Line coverage of kvtopo's own sources from a --coverage build's counters (`make coverage`).

Reads every .gcda file under BUILD with gcov's JSON output (gcov -j -t, GCC 9 or later), merges
the counts of a line over the objects that compile it (a header's inline code, the library's
objects shared by the CLI and the test binary), and prints per file the lines no test ran, the
lines and the percentage, most missed first, then the total. Test files are left out.

    scripts/coverage.py BUILD [--missed SUFFIX ...]

--missed prints the source lines no test ran of each file whose path ends with a SUFFIX.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def line_counts(build):
    counts = {}  # path -> {line: count}
    for folder, _, files in os.walk(build):
        for name in files:
            if not name.endswith(".gcda"):
                continue
            out = subprocess.run(["gcov", "-j", "-t", "-o", folder, os.path.join(folder, name)],
                                 capture_output=True, text=True, cwd=build, check=False)
            for text in out.stdout.splitlines():
                if not text.strip():
                    continue
                for f in json.loads(text)["files"]:
                    path = os.path.normpath(os.path.join(build, f["file"]))
                    rel = os.path.relpath(path, ROOT)
                    # Only the sources: not the tests, nor what the build generates (the
                    # embedded profiles) when its directory lies in the tree.
                    if (rel.startswith("..") or rel.startswith("tests" + os.sep)
                            or os.path.commonpath([path, build]) == build):
                        continue
                    lines = counts.setdefault(rel, {})
                    for line in f["lines"]:
                        n = line["line_number"]
                        lines[n] = max(lines.get(n, 0), line["count"])
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", help="the --coverage build directory, its tests already run")
    parser.add_argument("--missed", nargs="*", default=[], metavar="SUFFIX",
                        help="print the lines no test ran of the files ending with SUFFIX")
    args = parser.parse_args()
    counts = line_counts(os.path.abspath(args.build))
    if not counts:
        sys.exit(f"no coverage counters under {args.build}: build it with --coverage and run "
                 "its tests first (make coverage)")
    rows = []
    for path, lines in counts.items():
        if not lines:  # a file gcov names but whose lines no object compiles
            continue
        ran = sum(1 for c in lines.values() if c > 0)
        rows.append((len(lines) - ran, path, ran, len(lines)))
    rows.sort(key=lambda r: (-r[0], r[1]))
    print(f"{'missed':>6} {'lines':>6} {'ran':>6}  file")
    for missed, path, ran, total in rows:
        print(f"{missed:6d} {total:6d} {100.0 * ran / total:5.1f}%  {path}")
    ran = sum(r[2] for r in rows)
    total = sum(r[3] for r in rows)
    print(f"{total - ran:6d} {total:6d} {100.0 * ran / total:5.1f}%  total ({len(rows)} files)")
    for suffix in args.missed:
        for path in sorted(p for p in counts if p.endswith(suffix)):
            with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
                source = f.read().split("\n")
            print(f"\n== {path}: lines no test ran")
            for n in sorted(n for n, c in counts[path].items() if c == 0):
                print(f"{n:6d}: {source[n - 1] if n <= len(source) else ''}")


if __name__ == "__main__":
    main()
