#!/usr/bin/env bash
# Builds cuda/verify_kernels_check without the CMake project and runs it: the host compiler builds
# exactly the CPU sources the check links (fmt used header-only), nvcc the kernels and the check
# program, and links them. It needs none of the Debian packages the full build needs.
#
#   cuda/run_device_check.sh [check arguments...]
#
# Environment: KVTOPO_ROOT (the tree holding include/, src/ and cuda/; default: this script's
# repository), BUILD_DIR (default /tmp/kvtopo-cuda-check), FMT_INCLUDE (a folder holding fmt/
# when the system has none), CUDA_GENCODE (default: sm_90 machine code and compute_90 PTX).
set -euo pipefail

root=${KVTOPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
build=${BUILD_DIR:-/tmp/kvtopo-cuda-check}
gencode=${CUDA_GENCODE:--gencode=arch=compute_90,code=[sm_90,compute_90]}
mkdir -p "$build"

fmt_flags=(-DFMT_HEADER_ONLY)
if [[ -n "${FMT_INCLUDE:-}" ]]; then fmt_flags+=(-I "$FMT_INCLUDE"); fi

# The CPU functions the check compares against, and what they call.
cpu_sources=(
  "$root/src/internal/slot_mapping.cc"  # kvtopo::ComputeSlotMapping
  "$root/src/internal/status.cc"        # Status::ToString, KVTOPO_CHECK's failure path
  "$root/src/verify/attention.cc"       # internal::PartialAttention, MergePartials
)

cxx=${CXX:-$(command -v g++ || command -v c++)}
nvcc --version | tail -n 2
"$cxx" --version | head -n 1

# Warnings are shown, not fatal: the machine's host compiler may be newer than the one the
# project's -Werror build (CMake, cuda/CMakeLists.txt) is kept clean with.
set -x
objects=()
for source in "${cpu_sources[@]}"; do
  object="$build/$(basename "$source" .cc).o"
  # Straight to the host compiler: passed through nvcc's driver (which defines __NVCC__), fmt 9's
  # compile-time format strings fail to compile.
  "$cxx" -std=c++20 -O2 -Wall -Wextra -Wno-missing-field-initializers \
    -I "$root/include" -I "$root/src" "${fmt_flags[@]}" -c "$source" -o "$object"
  objects+=("$object")
done
nvcc -std=c++20 -O3 "$gencode" -lineinfo -Xptxas -v -ccbin "$cxx" \
  -Xcompiler -Wall,-Wextra \
  -I "$root/include" -I "$root/src" -I "$root/cuda" \
  "$root/cuda/verify_kernels.cu" "$root/cuda/verify_kernels_check.cu" "${objects[@]}" \
  -o "$build/verify_kernels_check"
"$build/verify_kernels_check" "$@"
