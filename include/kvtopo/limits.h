// The bounds on every number a user gives kvtopo (flags, config.json, speculative JSON, workload
// lines, Python arguments), in one place. Each value is checked where it enters, and the error
// names the flag or the file and field and the range below (docs/reliability.md lists them).
//
// The bounds are far above any real launch and low enough that no product or sum of bounded
// values that kvtopo forms on its own overflows, and that no single request for memory or time
// is unbounded: what is still a product of several user values (bytes per request, block-table
// bytes) goes through src/internal/checked_math and fails with an OutOfRange error naming it.
//
// Thread safety: constants.
#pragma once

#include <cstdint>
#include <limits>

namespace kvtopo {

inline constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// Cache layers of one model (trunk + MTP layers), after config.json's num_hidden_layers.
inline constexpr int64_t kMaxLayers = 4096;
// Any per-layer dimension or head count in config.json (head_dim, kv_lora_rank, num heads,
// conv kernel, full_attention_interval, ...).
inline constexpr int64_t kMaxModelDim = int64_t{1} << 16;
// Tokens in one request: --max-model-len, max_position_embeddings, sliding windows, workload
// prompt lengths and decode steps (token counts are int32 in the engine-facing arrays).
inline constexpr int64_t kMaxModelLen = kMaxInt32;
// Tokens per page on one rank: --block-size, --mamba-block-size, --dcp-kv-cache-interleave-size.
inline constexpr int64_t kMaxBlockSize = int64_t{1} << 20;
// Ranks of one parallel dimension: TP, PP, DCP, PCP.
inline constexpr int64_t kMaxParallelSize = 4096;
// Block-table rows: --max-num-seqs.
inline constexpr int64_t kMaxNumSeqs = int64_t{1} << 20;
// Tokens scheduled per step: --max-num-batched-tokens.
inline constexpr int64_t kMaxNumBatchedTokens = kMaxInt32;
// Draft tokens per step: num_speculative_tokens; workload accepted_drafts entries.
inline constexpr int64_t kMaxSpeculativeTokens = 1024;
// Pool blocks (block ids are int32): --num-gpu-blocks-override.
inline constexpr int64_t kMaxNumBlocks = kMaxInt32;
// KV-cache bytes per rank: --kv-cache-memory (1 PiB).
inline constexpr int64_t kMaxKvCacheMemoryBytes = int64_t{1} << 50;
// `kvtopo slots`: ranks x --seq-len slots computed and printed.
inline constexpr int64_t kMaxSlotsCells = int64_t{1} << 24;
// Worker block tables built from user arguments: rows x width int32 entries (1 GiB).
inline constexpr int64_t kMaxTableEntries = int64_t{1} << 28;
// Text files read whole: a model's config.json (a weights or tokenizer file passed as MODEL is
// refused before it is read) and a workload file (JSON lines; about 256 bytes a request).
inline constexpr int64_t kMaxConfigFileBytes = int64_t{16} << 20;
inline constexpr int64_t kMaxWorkloadFileBytes = int64_t{256} << 20;
// Arrays and objects nested in one JSON text (config.json, --speculative-config,
// --hf-overrides): copying or writing a value recurses once per level, and a config's nested
// text config was copied until the stack ran out.
inline constexpr int64_t kMaxJsonDepth = 64;
// Workload files: requests, and scheduler steps of arrival.
inline constexpr int64_t kMaxWorkloadRequests = int64_t{1} << 20;
inline constexpr int64_t kMaxWorkloadSteps = kMaxInt32;

}  // namespace kvtopo
