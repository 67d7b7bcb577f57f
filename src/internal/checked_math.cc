#include "internal/checked_math.h"

#include <fmt/format.h>

namespace kvtopo::internal {

Result<int64_t> CheckedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    return OutOfRange(fmt::format("{} overflows 64 bits ({} x {})", what, a, b));
  }
  return out;
}

Result<int64_t> CheckedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    return OutOfRange(fmt::format("{} overflows 64 bits ({} + {})", what, a, b));
  }
  return out;
}

Result<int64_t> CheckedProduct(std::initializer_list<int64_t> factors, std::string_view what) {
  int64_t out = 1;
  for (int64_t f : factors) {
    KVTOPO_ASSIGN_OR_RETURN(out, CheckedMul(out, f, what));
  }
  return out;
}

Result<int64_t> CheckedLcm(int64_t a, int64_t b, std::string_view what) {
  if (a == 0 || b == 0) return int64_t{0};
  return CheckedMul(a / std::gcd(a, b), b, what);
}

}  // namespace kvtopo::internal
