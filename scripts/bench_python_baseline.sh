#!/usr/bin/env bash
# Python W1-W4 figures of "today's binding" and of this tree, side by side in one run.
#
#   scripts/bench_python_baseline.sh [--runs N] [--workloads "w1 w2 w4"] [BUILD]
#
# "Today's binding" is the Python module of commit $KVTOPO_BASELINE_COMMIT (default 5b9092b,
# the last commit before the batched step API). It is built once from a temporary git worktree
# of this repository into build-baseline/ (git-ignored; rebuilt when the commit or the flags
# change), with BUILD's build type and flags. bench/python/workloads.py --baseline then
# runs the single-call loop against it and the batched loop against BUILD/python (default
# build/python), alternating the two modules run by run, each run in a fresh interpreter, and
# reports best-of-N, the spread and the ratio per workload.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
workloads="w1 w2 w4"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
build=${1:-build}
commit=${KVTOPO_BASELINE_COMMIT:-5b9092b}
python=${PYTHON:-python3}
jobs=${JOBS:-2}
base=build-baseline
full=$(git rev-parse --verify "$commit^{commit}")

# The build type and flags of BUILD, whose module it is compared with, from its CMake cache.
cache="$build/CMakeCache.txt"
[[ -f "$cache" ]] || { echo "no $cache: build BUILD first (make build)" >&2; exit 2; }
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
type_flags=$(sed -n "s/^CMAKE_CXX_FLAGS_${type^^}:[A-Z]*=//p" "$cache")
flags="$type $type_flags"
if [[ ! -f "$base/commit" || "$(cat "$base/commit")" != "$full" ||
      "$(cat "$base/flags" 2> /dev/null)" != "$flags" ]] ||
   ! compgen -G "$base/python/kvtopo/_kvtopo*.so" > /dev/null; then
  echo "== building the Python module of $commit into $base/python"
  rm -rf "$base"
  mkdir -p "$base"
  src=$(mktemp -d)
  trap 'git worktree remove --force "$src" 2> /dev/null || rm -rf "$src"' EXIT
  git worktree add --detach --quiet "$src" "$full"
  cmake -S "$src" -B "$base/cmake" -G Ninja -DCMAKE_BUILD_TYPE="$type" \
    -DCMAKE_CXX_FLAGS_"${type^^}"="$type_flags" -DKVTOPO_BUILD_BENCH=OFF \
    -DPython_EXECUTABLE="$(command -v "$python")" > /dev/null
  cmake --build "$base/cmake" -j "$jobs" --target kvtopo_python
  mkdir -p "$base/python"
  cp -r "$base/cmake/python/kvtopo" "$base/python/"
  echo "$full" > "$base/commit"
  echo "$flags" > "$base/flags"
  git worktree remove --force "$src"
  trap - EXIT
fi

for w in $workloads; do
  "$python" bench/python/workloads.py --workload "$w" --runs "$runs" \
    --baseline "$base/python" --current "$build/python"
done
