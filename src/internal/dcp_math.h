// The raw integer rules of DCP position striping, for GroupGeometry (src/spec/geometry.cc) and
// the simulator's brute-force oracles only; everything else asks a GroupGeometry.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kvtopo/status.h"

namespace kvtopo::internal {

// The slice holding position p when positions stripe over `num_shards` slices in chunks of
// `interleave` tokens. Preconditions (programmer errors): p >= 0, num_shards >= 1, interleave >= 1.
inline int64_t OwnerSliceOf(int64_t position, int64_t num_shards, int64_t interleave) {
  KVTOPO_CHECK(position >= 0 && num_shards >= 1 && interleave >= 1);
  return (position / interleave) % num_shards;
}

// Tokens slice `slice` stores of a `seq_len`-token sequence:
//   floor(L / (n*I)) * I + clamp(L mod (n*I) - s*I, 0, I).
// Written without the product n*I so no input in range overflows: L / (n*I) = (L / I) / n.
inline int64_t LocalLengthOfSlice(int64_t seq_len, int64_t num_shards, int64_t slice,
                                  int64_t interleave) {
  KVTOPO_CHECK(seq_len >= 0 && num_shards >= 1 && interleave >= 1 && slice >= 0 &&
               slice < num_shards);
  const int64_t chunks = seq_len / interleave;   // whole interleave chunks
  const int64_t partial = seq_len % interleave;  // tokens of the last, partial chunk
  // Chunk c belongs to slice c mod n: slice s gets floor(chunks / n) whole chunks plus one more
  // when s < chunks mod n, and the partial chunk when chunks mod n == s.
  const int64_t rounds = chunks / num_shards;
  const int64_t rest = chunks % num_shards;
  return rounds * interleave + (slice < rest ? interleave : 0) + (slice == rest ? partial : 0);
}

}  // namespace kvtopo::internal
