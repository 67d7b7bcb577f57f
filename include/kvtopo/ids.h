// Strong id types: a block id, a group id, a layer index, a rank, a request id, a token position
// and a token count are distinct types, so passing one where another goes does not compile.
//
// Each is a thin wrapper over an integer with explicit construction and `value()`; ids compare
// and hash but do no arithmetic. Thread safety: value types.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace kvtopo {

template <typename Tag, typename Rep>
class StrongId {
 public:
  using rep_type = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}
  constexpr Rep value() const { return value_; }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  Rep value_ = 0;
};

using BlockId = StrongId<struct BlockIdTag, int32_t>;        // a page id in the shared pool
using GroupId = StrongId<struct GroupIdTag, int32_t>;        // a cache group of a plan
using LayerIndex = StrongId<struct LayerIndexTag, int32_t>;  // a layer of a model
using Rank = StrongId<struct RankTag, int32_t>;              // a DCP rank in [0, N)
using RequestId = StrongId<struct RequestIdTag, int64_t>;    // a request known to a manager
using TokenPos = StrongId<struct TokenPosTag, int64_t>;      // a 0-based global token position
using TokenCount = StrongId<struct TokenCountTag, int64_t>;  // a number of tokens

// Block 0 of every pool is the null block: the placeholder for skipped or freed positions.
inline constexpr BlockId kNullBlock{0};

}  // namespace kvtopo

template <typename Tag, typename Rep>
struct std::hash<kvtopo::StrongId<Tag, Rep>> {
  size_t operator()(const kvtopo::StrongId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>()(id.value());
  }
};
