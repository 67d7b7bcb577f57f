// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014): the
// one mixing step behind kvtopo's reproducible token ids and verify's data (a seed and an index
// in, 64 well-mixed bits out).
#pragma once

#include <cstdint>

namespace kvtopo::internal {

constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace kvtopo::internal
