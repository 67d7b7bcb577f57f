// Synthetic K/V rows and queries, partial attention over a rank's pages, the log-sum-exp merge of
// partial outputs, for `kvtopo verify` (kvtopo/verify.h).
//
// One group's cache row per token: MLA stores one latent row (latent + rope floats) whose first
// latent floats are the value; MHA stores num_kv_heads x (key + value) floats. Queries have
// num_query_heads x key floats; MHA query head h reads KV head h / (query heads per KV head).
// A partial output per query and head is value_dim floats followed by the LSE (natural log of
// the softmax denominator, scores scaled by 1/sqrt(key_dim)); an empty range gives zeros and
// LSE -inf, the identity of the merge.
//
// Thread safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "kvtopo/status.h"

namespace kvtopo::internal {

struct HeadDims {
  bool mla = false;
  int64_t num_kv_heads = 1;     // MLA: 1
  int64_t num_query_heads = 1;  // MHA: a multiple of num_kv_heads
  int64_t key_dim = 0;          // per KV head (MLA: latent + rope)
  int64_t value_dim = 0;        // per KV head (MLA: the latent, the first floats of the row)

  int64_t row_floats() const { return mla ? key_dim : num_kv_heads * (key_dim + value_dim); }
  int64_t query_floats() const { return num_query_heads * key_dim; }
  // Floats of one query's partial output: per head value_dim outputs and the LSE.
  int64_t partial_floats() const { return num_query_heads * (value_dim + 1); }
  int64_t key_offset(int64_t query_head) const {
    return mla ? 0 : query_head / (num_query_heads / num_kv_heads) * (key_dim + value_dim);
  }
  int64_t value_offset(int64_t query_head) const {
    return mla ? 0 : key_offset(query_head) + key_dim;
  }
};

// Content hash of tokens [0, p] from the hash of [0, p - 1] (0 before the first token).
uint64_t ExtendContentHash(uint64_t previous, int32_t token_id);

// Seeded uniform floats in [-1, 1): a group's K/V row, or a query, for a content hash.
void FillKvRow(uint64_t seed, int32_t group, uint64_t content_hash, std::span<float> row);
void FillQuery(uint64_t seed, int32_t group, uint64_t content_hash, std::span<float> query);

// Online-softmax accumulator of one query over rows fed in any order (fp64 accumulation).
class PartialAttention {
 public:
  explicit PartialAttention(const HeadDims& dims);
  void Start(std::span<const float> query);
  void Add(const float* row);
  // Writes partial_floats() floats.
  void Finish(std::span<float> out) const;

 private:
  HeadDims dims_;
  double scale_;
  std::vector<float> query_;
  std::vector<int64_t> key_offset_;    // per head, into a row
  std::vector<int64_t> value_offset_;  // per head, into a row
  std::vector<double> max_;            // per head
  std::vector<double> sum_;            // per head, relative to max_
  std::vector<double> acc_;            // per head x value_dim, relative to max_
};

// Merges partial outputs (each partial_floats() floats) into `out` (partial_floats() floats),
// rescaling each by exp(lse_i - max lse).
void MergePartials(const HeadDims& dims, std::span<const std::span<const float>> partials,
                   std::span<float> out);

// max |a - b| and max |b| over the value entries (LSEs excluded) of one query's output.
struct OutputError {
  double max_abs = 0;
  double max_ref = 0;
  double rel() const { return max_ref > 0 ? max_abs / max_ref : max_abs; }
};
OutputError CompareOutputs(const HeadDims& dims, std::span<const float> out,
                           std::span<const float> reference);

}  // namespace kvtopo::internal
