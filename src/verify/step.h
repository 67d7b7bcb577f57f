// What rank 0's scheduler broadcasts each step (as an engine's scheduler sends its workers the
// scheduled requests, their new token ids and the block-table updates), and its wire form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvtopo/ids.h"
#include "kvtopo/status.h"

namespace kvtopo::internal {

struct StepRowUpdate {
  int64_t first_column = 0;
  std::vector<BlockId> block_ids;
};

struct StepEntry {
  int64_t request = 0;
  int32_t row = 0;          // block-table row on every rank
  bool clear_row = false;   // a row newly given to the request: clear it before the updates
  bool table_only = false;  // no K/V rows: tables, slot mapping and ownership only
  int64_t first_position = 0;
  int64_t num_new = 0;      // scheduled positions [first_position, first_position + num_new)
  int64_t num_queries = 0;  // decode: the first num_queries scheduled positions are queries
  // Token ids at [tokens_from, first_position + num_new); ids below tokens_from are kept.
  int64_t tokens_from = 0;
  std::vector<int32_t> token_ids;
  std::vector<StepRowUpdate> updates;  // one per group
};

struct StepMessage {
  bool done = false;
  int64_t step = 0;
  std::vector<StepEntry> entries;
};

// One request's token ids as a worker (or the reference) knows them, with the content hash of
// each prefix (ExtendContentHash, verify/attention.h) that seeds its K/V rows and queries.
struct RequestTokens {
  std::vector<int32_t> token_ids;
  std::vector<uint64_t> content_hashes;  // of tokens [0, p] for each p
  // Keeps the ids below entry.tokens_from and appends the entry's ids.
  void Apply(const StepEntry& entry);
};

std::vector<std::byte> EncodeStep(const StepMessage& message);
Result<StepMessage> DecodeStep(const std::vector<std::byte>& bytes, int32_t num_groups);

}  // namespace kvtopo::internal
