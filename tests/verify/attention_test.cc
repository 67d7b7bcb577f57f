#include "verify/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "verify/step.h"

namespace kvtopo::internal {
namespace {

// Rows split over three "ranks" and merged with the LSE correction equal one pass over all.
TEST(VerifyAttention, MergedPartialsEqualOnePass) {
  for (bool mla : {true, false}) {
    const HeadDims dims =
        mla ? HeadDims{.mla = true, .num_query_heads = 3, .key_dim = 12, .value_dim = 8}
            : HeadDims{.num_kv_heads = 2, .num_query_heads = 4, .key_dim = 8, .value_dim = 6};
    const int64_t n = 101;
    std::vector<float> rows(n * dims.row_floats()), query(dims.query_floats());
    for (int64_t p = 0; p < n; ++p) {
      FillKvRow(7, 1, ExtendContentHash(0, static_cast<int32_t>(p)),
                std::span(rows.data() + p * dims.row_floats(), dims.row_floats()));
    }
    FillQuery(7, 1, 42, query);
    PartialAttention a(dims);
    std::vector<std::vector<float>> parts(3, std::vector<float>(dims.partial_floats()));
    for (int r = 0; r < 3; ++r) {
      a.Start(query);
      for (int64_t p = r; p < n; p += 3) a.Add(rows.data() + p * dims.row_floats());
      a.Finish(parts[r]);
    }
    std::vector<float> whole(dims.partial_floats()), merged(dims.partial_floats());
    a.Start(query);
    for (int64_t p = 0; p < n; ++p) a.Add(rows.data() + p * dims.row_floats());
    a.Finish(whole);
    std::vector<std::span<const float>> spans(parts.begin(), parts.end());
    MergePartials(dims, spans, merged);
    const OutputError e = CompareOutputs(dims, merged, whole);
    EXPECT_LT(e.rel(), 1e-6);
    EXPECT_GT(e.max_ref, 0.0);
    for (int64_t h = 0; h < dims.num_query_heads; ++h) {
      const int64_t lse = h * (dims.value_dim + 1) + dims.value_dim;
      EXPECT_NEAR(merged[lse], whole[lse], 1e-5);
    }
  }
}

TEST(VerifyAttention, AnEmptyRankIsTheMergeIdentityAndNaNIsAnInfiniteError) {
  const HeadDims dims{.mla = true, .num_query_heads = 1, .key_dim = 4, .value_dim = 2};
  PartialAttention a(dims);
  std::vector<float> query(4, 0.5f), empty(3), one(3);
  a.Start(query);
  a.Finish(empty);
  EXPECT_EQ(empty[0], 0.0f);
  EXPECT_EQ(empty[2], -std::numeric_limits<float>::infinity());
  const float row[4] = {1, 2, 3, 4};
  a.Start(query);
  a.Add(row);
  a.Finish(one);
  EXPECT_EQ(one[0], 1.0f);
  EXPECT_EQ(one[1], 2.0f);
  std::vector<float> merged(3);
  const std::vector<std::span<const float>> spans = {empty, one};
  MergePartials(dims, spans, merged);
  EXPECT_EQ(merged, one);
  std::vector<float> nan(3, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isinf(CompareOutputs(dims, nan, one).max_abs));
}

TEST(VerifyStep, RoundTripsAndRejectsMalformedMessages) {
  // Every field distinct, so that a swapped or dropped field shows.
  StepMessage m{.done = true, .step = 9};
  m.entries.push_back({.request = 3,
                       .row = 2,
                       .clear_row = true,
                       .first_position = 64,
                       .num_new = 4,
                       .num_queries = 3,
                       .tokens_from = 62,
                       .token_ids = {5, 6, 7, 8, 9, 10},
                       .updates = {{.first_column = 1, .block_ids = {BlockId(7), BlockId(9)}},
                                   {.first_column = 5, .block_ids = {BlockId(11)}}}});
  m.entries.push_back({.request = 4,
                       .row = 0,
                       .table_only = true,
                       .num_new = 1,
                       .updates = {{.first_column = 0, .block_ids = {}},
                                   {.first_column = 0, .block_ids = {BlockId(12)}}}});
  const std::vector<std::byte> bytes = EncodeStep(m);
  auto back = DecodeStep(bytes, 2);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->done);
  EXPECT_EQ(back->step, 9);
  ASSERT_EQ(back->entries.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const StepEntry& want = m.entries[i];
    const StepEntry& got = back->entries[i];
    EXPECT_EQ(got.request, want.request);
    EXPECT_EQ(got.row, want.row);
    EXPECT_EQ(got.clear_row, want.clear_row);
    EXPECT_EQ(got.table_only, want.table_only);
    EXPECT_EQ(got.first_position, want.first_position);
    EXPECT_EQ(got.num_new, want.num_new);
    EXPECT_EQ(got.num_queries, want.num_queries);
    EXPECT_EQ(got.tokens_from, want.tokens_from);
    EXPECT_EQ(got.token_ids, want.token_ids);
    ASSERT_EQ(got.updates.size(), 2u);
    for (size_t g = 0; g < 2; ++g) {
      EXPECT_EQ(got.updates[g].first_column, want.updates[g].first_column);
      EXPECT_EQ(got.updates[g].block_ids, want.updates[g].block_ids);
    }
  }
  const auto expect_malformed = [](const Result<StepMessage>& r) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInternal);
    EXPECT_EQ(r.status().message(), "verify: a malformed step message reached a rank");
  };
  expect_malformed(DecodeStep(bytes, 3));  // a group count that differs
  std::vector<std::byte> cut(bytes.begin(), bytes.end() - 8);
  expect_malformed(DecodeStep(cut, 2));
  std::vector<std::byte> huge = bytes;
  const int64_t count = int64_t{1} << 60;  // the entry count, past what the bytes can hold
  std::memcpy(huge.data() + 16, &count, sizeof(count));
  expect_malformed(DecodeStep(huge, 2));
}

}  // namespace
}  // namespace kvtopo::internal
