#include "verify/attention.h"

#include <algorithm>

#include "internal/split_mix.h"

namespace kvtopo::internal {
namespace {

void FillUniform(uint64_t state, std::span<float> out) {
  for (float& v : out) {
    state = SplitMix64(state);
    // 24 random bits: exactly representable, uniform in [-1, 1).
    v = static_cast<float>(static_cast<int64_t>(state >> 40) - (int64_t{1} << 23)) *
        (1.0f / static_cast<float>(int64_t{1} << 23));
  }
}

constexpr uint64_t kKvStream = 0x6b76ULL;
constexpr uint64_t kQueryStream = 0x7172ULL;

}  // namespace

uint64_t ExtendContentHash(uint64_t previous, int32_t token_id) {
  return SplitMix64(previous ^ (static_cast<uint64_t>(static_cast<uint32_t>(token_id)) << 1 | 1));
}

void FillKvRow(uint64_t seed, int32_t group, uint64_t content_hash, std::span<float> row) {
  FillUniform(SplitMix64(seed ^ SplitMix64(kKvStream + static_cast<uint64_t>(group) * 0x10000)) ^
                  content_hash,
              row);
}

void FillQuery(uint64_t seed, int32_t group, uint64_t content_hash, std::span<float> query) {
  FillUniform(SplitMix64(seed ^ SplitMix64(kQueryStream + static_cast<uint64_t>(group) * 0x10000)) ^
                  content_hash,
              query);
}

PartialAttention::PartialAttention(const HeadDims& dims)
    : dims_(dims),
      scale_(1.0 / std::sqrt(static_cast<double>(dims.key_dim))),
      query_(dims.query_floats()),
      max_(dims.num_query_heads),
      sum_(dims.num_query_heads),
      acc_(dims.num_query_heads * dims.value_dim) {
  KVTOPO_CHECK(dims.key_dim > 0 && dims.value_dim > 0 && dims.num_kv_heads > 0);
  KVTOPO_CHECK(dims.num_query_heads % dims.num_kv_heads == 0);
  KVTOPO_CHECK(!dims.mla || dims.value_dim <= dims.key_dim);
  for (int64_t h = 0; h < dims.num_query_heads; ++h) {
    key_offset_.push_back(dims.key_offset(h));
    value_offset_.push_back(dims.value_offset(h));
  }
}

void PartialAttention::Start(std::span<const float> query) {
  KVTOPO_CHECK(static_cast<int64_t>(query.size()) == dims_.query_floats());
  std::copy(query.begin(), query.end(), query_.begin());
  std::fill(max_.begin(), max_.end(), -std::numeric_limits<double>::infinity());
  std::fill(sum_.begin(), sum_.end(), 0.0);
  std::fill(acc_.begin(), acc_.end(), 0.0);
}

void PartialAttention::Add(const float* row) {
  const int64_t dk = dims_.key_dim;
  const int64_t dv = dims_.value_dim;
  for (int64_t h = 0; h < dims_.num_query_heads; ++h) {
    const float* q = query_.data() + h * dk;
    const float* k = row + key_offset_[h];
    // Four independent sums so the products pipeline; the order is fixed, so results repeat.
    double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    int64_t i = 0;
    for (; i + 4 <= dk; i += 4) {
      d0 += static_cast<double>(q[i]) * k[i];
      d1 += static_cast<double>(q[i + 1]) * k[i + 1];
      d2 += static_cast<double>(q[i + 2]) * k[i + 2];
      d3 += static_cast<double>(q[i + 3]) * k[i + 3];
    }
    for (; i < dk; ++i) d0 += static_cast<double>(q[i]) * k[i];
    const double score = ((d0 + d1) + (d2 + d3)) * scale_;
    double* acc = acc_.data() + h * dv;
    const float* v = row + value_offset_[h];
    if (score > max_[h]) {
      // Rescale what was summed relative to the old maximum.
      const double r = std::exp(max_[h] - score);
      sum_[h] *= r;
      for (int64_t j = 0; j < dv; ++j) acc[j] *= r;
      max_[h] = score;
    }
    const double w = std::exp(score - max_[h]);
    sum_[h] += w;
    for (int64_t j = 0; j < dv; ++j) acc[j] += w * v[j];
  }
}

void PartialAttention::Finish(std::span<float> out) const {
  const int64_t dv = dims_.value_dim;
  KVTOPO_CHECK(static_cast<int64_t>(out.size()) == dims_.partial_floats());
  for (int64_t h = 0; h < dims_.num_query_heads; ++h) {
    float* o = out.data() + h * (dv + 1);
    if (sum_[h] == 0) {
      std::fill(o, o + dv, 0.0f);
      o[dv] = -std::numeric_limits<float>::infinity();
      continue;
    }
    for (int64_t i = 0; i < dv; ++i) o[i] = static_cast<float>(acc_[h * dv + i] / sum_[h]);
    o[dv] = static_cast<float>(max_[h] + std::log(sum_[h]));
  }
}

void MergePartials(const HeadDims& dims, std::span<const std::span<const float>> partials,
                   std::span<float> out) {
  const int64_t dv = dims.value_dim;
  KVTOPO_CHECK(static_cast<int64_t>(out.size()) == dims.partial_floats());
  for (int64_t h = 0; h < dims.num_query_heads; ++h) {
    const int64_t base = h * (dv + 1);
    double lse_max = -std::numeric_limits<double>::infinity();
    for (std::span<const float> p : partials) lse_max = std::max<double>(lse_max, p[base + dv]);
    float* o = out.data() + base;
    if (lse_max == -std::numeric_limits<double>::infinity()) {
      std::fill(o, o + dv, 0.0f);
      o[dv] = -std::numeric_limits<float>::infinity();
      continue;
    }
    double weight_sum = 0;
    std::vector<double> acc(dv, 0.0);
    for (std::span<const float> p : partials) {
      const double w = std::exp(static_cast<double>(p[base + dv]) - lse_max);
      weight_sum += w;
      for (int64_t i = 0; i < dv; ++i) acc[i] += w * p[base + i];
    }
    for (int64_t i = 0; i < dv; ++i) o[i] = static_cast<float>(acc[i] / weight_sum);
    o[dv] = static_cast<float>(lse_max + std::log(weight_sum));
  }
}

OutputError CompareOutputs(const HeadDims& dims, std::span<const float> out,
                           std::span<const float> reference) {
  const int64_t dv = dims.value_dim;
  OutputError e;
  for (int64_t h = 0; h < dims.num_query_heads; ++h) {
    for (int64_t i = 0; i < dv; ++i) {
      const double a = out[h * (dv + 1) + i];
      const double b = reference[h * (dv + 1) + i];
      const double d = std::fabs(a - b);
      // NaN (an unwritten slot read) is an infinite error.
      e.max_abs = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(e.max_abs, d);
      e.max_ref = std::max(e.max_ref, std::fabs(b));
    }
  }
  return e;
}

}  // namespace kvtopo::internal
