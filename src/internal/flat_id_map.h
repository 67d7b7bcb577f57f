// FlatIdMap: a map from a 64-bit id to a 32-bit slot index, for lookups on hot paths (request
// id -> request state) where std::unordered_map costs a node hop and a modulo per lookup.
//
// Ids in [0, kDenseLimit) — engines usually number requests with a counter — live in a direct
// array (4 bytes per id up to the largest seen, 16 ids per cache line); the rest in an
// open-addressing table: linear probing over a power-of-two table kept at most half full,
// backward-shift deletion (no tombstones, so probe runs stay short however many ids come and
// go). Keys are any int64 except kEmptyKey. Storage only grows; after it reaches its high-water
// mark, Insert and Erase do not allocate.
//
// Thread safety: none.
#pragma once

#include <algorithm>
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
  static constexpr int64_t kDenseLimit = int64_t{1} << 20;

  FlatIdMap() { Rehash(16); }

  size_t size() const { return size_ + dense_size_; }

  // The value stored for `key`, or kNotFound.
  int32_t Find(int64_t key) const {
    if (static_cast<uint64_t>(key) < dense_.size()) return dense_[static_cast<size_t>(key)];
    if (static_cast<uint64_t>(key) < static_cast<uint64_t>(kDenseLimit)) return kNotFound;
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
    if (key >= 0 && key < kDenseLimit) {
      const size_t k = static_cast<size_t>(key);
      if (k >= dense_.size()) {
        const size_t grown = std::min<size_t>(2 * dense_.size(), kDenseLimit);
        dense_.resize(std::max(k + 1, grown), kNotFound);
      }
      KVTOPO_CHECK_MSG(dense_[k] == kNotFound, "FlatIdMap: the key is already present");
      dense_[k] = value;
      ++dense_size_;
      return;
    }
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
    if (key >= 0 && key < kDenseLimit) {
      const size_t k = static_cast<size_t>(key);
      if (k >= dense_.size() || dense_[k] == kNotFound) return false;
      dense_[k] = kNotFound;
      --dense_size_;
      return true;
    }
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

  // Calls f(key, value) for every entry: dense ids in increasing order, then the table.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t k = 0; k < dense_.size(); ++k) {
      if (dense_[k] != kNotFound) f(static_cast<int64_t>(k), dense_[k]);
    }
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

  std::vector<int32_t> dense_;  // the value of each id in [0, dense_.size())
  size_t dense_size_ = 0;
  std::vector<Entry> entries_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace kvtopo::internal
