// FlatIdMap: an open-addressing hash map from a 64-bit id to a 32-bit slot index, for lookups on
// hot paths (request id -> request state) where std::unordered_map costs a node hop and a
// modulo per lookup.
//
// Linear probing over a power-of-two table kept at most half full, backward-shift deletion (no
// tombstones, so probe runs stay short however many ids come and go). Keys are any int64 except
// kEmptyKey. Storage only grows; after the table reaches its high-water mark, Insert and Erase
// do not allocate.
//
// Thread safety: none.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kvtopo/status.h"

namespace kvtopo::internal {

class FlatIdMap {
 public:
  static constexpr int64_t kEmptyKey = std::numeric_limits<int64_t>::min();
  static constexpr int32_t kNotFound = -1;

  FlatIdMap() { Rehash(16); }

  size_t size() const { return size_; }

  // The value stored for `key`, or kNotFound.
  int32_t Find(int64_t key) const {
    for (size_t s = Home(key);; s = (s + 1) & mask_) {
      const Entry& e = entries_[s];
      if (e.key == key) return e.value;
      if (e.key == kEmptyKey) return kNotFound;
    }
  }
  bool Contains(int64_t key) const { return Find(key) != kNotFound; }

  // Inserts a key that is not present (checked).
  void Insert(int64_t key, int32_t value) {
    KVTOPO_CHECK(key != kEmptyKey && value != kNotFound);
    if ((size_ + 1) * 2 > entries_.size()) Rehash(entries_.size() * 2);
    size_t s = Home(key);
    for (; entries_[s].key != kEmptyKey; s = (s + 1) & mask_) {
      KVTOPO_CHECK_MSG(entries_[s].key != key, "FlatIdMap: the key is already present");
    }
    entries_[s] = Entry{key, value};
    ++size_;
  }

  // Removes `key`; returns false when it was not present.
  bool Erase(int64_t key) {
    size_t s = Home(key);
    for (; entries_[s].key != key; s = (s + 1) & mask_) {
      if (entries_[s].key == kEmptyKey) return false;
    }
    // Backward shift: pull later entries of the run into the hole unless their home lies
    // cyclically in (hole, j].
    size_t hole = s;
    for (size_t j = (s + 1) & mask_; entries_[j].key != kEmptyKey; j = (j + 1) & mask_) {
      const size_t home = Home(entries_[j].key);
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        entries_[hole] = entries_[j];
        hole = j;
      }
    }
    entries_[hole] = Entry{};
    --size_;
    return true;
  }

  // Calls f(key, value) for every entry, in table order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Entry& e : entries_) {
      if (e.key != kEmptyKey) f(e.key, e.value);
    }
  }

 private:
  struct Entry {
    int64_t key = kEmptyKey;
    int32_t value = kNotFound;
  };

  size_t Home(int64_t key) const {
    // Fibonacci hashing: ids are often small consecutive integers; the multiply spreads them.
    const uint64_t h = static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> shift_);
  }

  void Rehash(size_t capacity) {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (const Entry& e : old) {
      if (e.key != kEmptyKey) Insert(e.key, e.value);
    }
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace kvtopo::internal
