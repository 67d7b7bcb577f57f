// Overflow-checked integer arithmetic for sizes that come from user input.
#pragma once

#include <cstdint>
#include <numeric>
#include <string_view>

#include "kvtopo/status.h"

namespace kvtopo::internal {

// ceil(a / b) for a >= 0, b > 0.
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

constexpr int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

// a * b, or an OutOfRange error naming `what` when the product does not fit in 64 bits.
Result<int64_t> CheckedMul(int64_t a, int64_t b, std::string_view what);
Result<int64_t> CheckedAdd(int64_t a, int64_t b, std::string_view what);
// Product of all factors, checked.
Result<int64_t> CheckedProduct(std::initializer_list<int64_t> factors, std::string_view what);
// lcm(a, b), checked.
Result<int64_t> CheckedLcm(int64_t a, int64_t b, std::string_view what);

}  // namespace kvtopo::internal
