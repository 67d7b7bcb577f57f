#!/usr/bin/env bash
# A user's Release build (-O3) of the CLI must print what the test tree's CLI prints (the test
# suites run in the RelWithDebInfo tree and under ASan):
#
#   scripts/check_release_build.sh REFERENCE_BUILD RELEASE_BUILD
#
# Compared: the plan of every embedded target profile at TP1 and at TP8/DCP8 (a rejection's
# report too), the default launch's plan, a slot map, and seeded simulations of the built-in
# workloads with their timing fields left out. Exit 1 names the first command whose output
# differs.
set -euo pipefail
ref=${1:?reference build dir}
rel=${2:?release build dir}
checked=0

# Same output from both CLIs (their exit codes may be anything, as long as they agree).
same() {
  local a b rc_a=0 rc_b=0
  a=$("$ref/kvtopo" "$@" 2>&1) || rc_a=$?
  b=$("$rel/kvtopo" "$@" 2>&1) || rc_b=$?
  if [[ "$a" != "$b" || $rc_a != "$rc_b" ]]; then
    echo "release build differs: kvtopo $* (exit $rc_a vs $rc_b)" >&2
    diff <(echo "$a") <(echo "$b") | head -n 20 >&2 || true
    exit 1
  fi
  checked=$((checked + 1))
}

# A simulation's JSON report without its timings (fields ending in _seconds).
untimed() {
  "$1/kvtopo" simulate "${@:2}" --json | python3 -c '
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if not k.endswith("_seconds")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
print(json.dumps(strip(json.load(sys.stdin)), sort_keys=True))'
}

for profile in $("$ref/kvtopo" profiles | awk 'NR > 1 && $2 == "target" {print $1}'); do
  same plan "$profile" --json
  same check "$profile" -tp 8 -dcp 8 --json
done
same plan --json
same slots -dcp 4 --block-size 16 --seq-len 37 --block-ids 7,3 --json
for workload in w1 w2 w3; do
  if [[ "$(untimed "$ref" --workload "$workload")" != "$(untimed "$rel" --workload "$workload")" ]]; then
    echo "release build differs: kvtopo simulate --workload $workload" >&2
    exit 1
  fi
  checked=$((checked + 1))
done
echo "release build: $checked commands print the same as $ref's"
