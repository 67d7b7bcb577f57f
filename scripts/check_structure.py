#!/usr/bin/env python3
"""Structure checks of docs/architecture.md, run by ctest.

dcp-rules ROOT: fails when DCP arithmetic appears outside GroupGeometry. Every DCP rule lives in src/spec/geometry.cc and the raw helpers beside it in src/internal/
(docs/architecture.md). Elsewhere, a DCP size, interleave or shard count may be read, printed or
compared, but never multiplied, divided or taken modulo, and token positions are never divided
into blocks by hand (CeilDiv / cdiv) in the runtime or the worker. An independent check that
must restate a rule (the simulator's and the verifier's oracles) says so in a comment containing
"oracle" on the line or the three lines above it.

headers ROOT CXX: fails when a public header (include/kvtopo/*.h) does not compile on its own
with only include/ on the path, or includes a header outside include/kvtopo/.

Exit 0 clean, 1 with one line per finding, 2 on usage errors.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(".")
ALLOWED = {"src/spec/geometry.cc"}
ALLOWED_DIRS = ("src/internal/",)
SCANNED = ("src", "tools", "python", "bench", "fuzz")

DCP_NAME = r"(?:dcp_size|dcp_|interleave|shard_count|dcp_shard_count|num_shards|kv_shard_count)"
# A DCP quantity as an operand of *, / or % (a call's parentheses may follow the name).
ARITH = re.compile(r"[*/%]\s*[\w.>\-]*\b" + DCP_NAME + r"\b(?:\(\))?|\b" + DCP_NAME +
                   r"\b(?:\(\))?\s*[*/%](?![*/=])")
BLOCK_DIV = re.compile(r"\b(?:CeilDiv|cdiv)\s*\(")
BLOCK_DIV_DIRS = ("src/runtime/", "src/worker/")


def strip_comment(line):
    return line.split("//", 1)[0]


def dcp_rule_findings():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".cc", ".h", ".cu") or not path.is_file():
                continue
            rel = path.relative_to(ROOT).as_posix()
            if rel in ALLOWED or rel.startswith(ALLOWED_DIRS):
                continue
            lines = path.read_text().splitlines()
            for i, raw in enumerate(lines):
                code = strip_comment(raw)
                hit = ARITH.search(code) or (
                    rel.startswith(BLOCK_DIV_DIRS) and BLOCK_DIV.search(code))
                if not hit:
                    continue
                context = "\n".join(lines[max(0, i - 3):i + 1]).lower()
                if "oracle" in context:
                    continue
                yield f"{rel}:{i + 1}: DCP arithmetic outside GroupGeometry: {raw.strip()}"


def header_findings(cxx):
    include = ROOT / "include"
    for header in sorted((include / "kvtopo").glob("*.h")):
        rel = header.relative_to(include).as_posix()
        for n, line in enumerate(header.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m and not m.group(1).startswith("kvtopo/"):
                yield f"include/{rel}:{n}: a public header includes '{m.group(1)}'"
        done = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-I", str(include), "-x", "c++",
                               "-"], input=f'#include "{rel}"\n', capture_output=True, text=True)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            first = next((l for l in lines if "error" in l), lines[0] if lines else "(no output)")
            yield f"include/{rel}: does not compile on its own: {first}"


def main():
    global ROOT
    if len(sys.argv) < 3 or sys.argv[1] not in ("dcp-rules", "headers") or (
            sys.argv[1] == "headers" and len(sys.argv) != 4):
        print("usage: check_structure.py dcp-rules ROOT | headers ROOT CXX", file=sys.stderr)
        return 2
    ROOT = pathlib.Path(sys.argv[2])
    found = list(dcp_rule_findings() if sys.argv[1] == "dcp-rules" else header_findings(sys.argv[3]))
    for f in found:
        print(f)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
