#include "verify/step.h"

#include <cstring>

#include "verify/attention.h"

namespace kvtopo::internal {
namespace {

class Writer {
 public:
  void Put(int64_t v) { words_.push_back(v); }
  std::vector<std::byte> Bytes() const {
    std::vector<std::byte> out(words_.size() * sizeof(int64_t));
    std::memcpy(out.data(), words_.data(), out.size());
    return out;
  }

 private:
  std::vector<int64_t> words_;
};

class Reader {
 public:
  explicit Reader(const std::vector<std::byte>& bytes) : bytes_(bytes) {}
  bool Get(int64_t& v) {
    if (offset_ + sizeof(int64_t) > bytes_.size()) return false;
    std::memcpy(&v, bytes_.data() + offset_, sizeof(int64_t));
    offset_ += sizeof(int64_t);
    return true;
  }
  bool at_end() const { return offset_ == bytes_.size(); }
  // Whether `count` more words can follow (a malformed count must not size a vector).
  bool Fits(int64_t count) const {
    return count >= 0 && static_cast<uint64_t>(count) <= (bytes_.size() - offset_) / 8;
  }

 private:
  const std::vector<std::byte>& bytes_;
  size_t offset_ = 0;
};

}  // namespace

void RequestTokens::Apply(const StepEntry& e) {
  KVTOPO_CHECK(e.tokens_from <= static_cast<int64_t>(token_ids.size()));
  token_ids.resize(e.tokens_from);
  content_hashes.resize(e.tokens_from);
  for (int32_t id : e.token_ids) {
    const uint64_t previous = content_hashes.empty() ? 0 : content_hashes.back();
    token_ids.push_back(id);
    content_hashes.push_back(ExtendContentHash(previous, id));
  }
  KVTOPO_CHECK(static_cast<int64_t>(token_ids.size()) >= e.first_position + e.num_new);
}

std::vector<std::byte> EncodeStep(const StepMessage& m) {
  Writer w;
  w.Put(m.done ? 1 : 0);
  w.Put(m.step);
  w.Put(static_cast<int64_t>(m.entries.size()));
  for (const StepEntry& e : m.entries) {
    w.Put(e.request);
    w.Put(e.row);
    w.Put((e.clear_row ? 1 : 0) | (e.table_only ? 2 : 0));
    w.Put(e.first_position);
    w.Put(e.num_new);
    w.Put(e.num_queries);
    w.Put(e.tokens_from);
    w.Put(static_cast<int64_t>(e.token_ids.size()));
    for (int32_t t : e.token_ids) w.Put(t);
    w.Put(static_cast<int64_t>(e.updates.size()));
    for (const StepRowUpdate& u : e.updates) {
      w.Put(u.first_column);
      w.Put(static_cast<int64_t>(u.block_ids.size()));
      for (BlockId b : u.block_ids) w.Put(b.value());
    }
  }
  return w.Bytes();
}

Result<StepMessage> DecodeStep(const std::vector<std::byte>& bytes, int32_t num_groups) {
  Reader r(bytes);
  StepMessage m;
  int64_t v = 0, n = 0;
  const Status malformed = Internal("verify: a malformed step message reached a rank");
  if (!r.Get(v)) return malformed;
  m.done = v != 0;
  if (!r.Get(m.step) || !r.Get(n) || !r.Fits(n)) return malformed;
  m.entries.resize(n);
  for (StepEntry& e : m.entries) {
    int64_t row = 0, flags = 0, count = 0;
    if (!r.Get(e.request) || !r.Get(row) || !r.Get(flags) || !r.Get(e.first_position) ||
        !r.Get(e.num_new) || !r.Get(e.num_queries) || !r.Get(e.tokens_from) || !r.Get(count) ||
        !r.Fits(count)) {
      return malformed;
    }
    e.row = static_cast<int32_t>(row);
    e.clear_row = (flags & 1) != 0;
    e.table_only = (flags & 2) != 0;
    e.token_ids.resize(count);
    for (int32_t& t : e.token_ids) {
      if (!r.Get(v)) return malformed;
      t = static_cast<int32_t>(v);
    }
    if (!r.Get(count) || count != num_groups) return malformed;
    e.updates.resize(count);
    for (StepRowUpdate& u : e.updates) {
      if (!r.Get(u.first_column) || !r.Get(count) || !r.Fits(count)) return malformed;
      u.block_ids.resize(count);
      for (BlockId& b : u.block_ids) {
        if (!r.Get(v)) return malformed;
        b = BlockId(static_cast<int32_t>(v));
      }
    }
  }
  if (!r.at_end()) return malformed;
  return m;
}

}  // namespace kvtopo::internal
