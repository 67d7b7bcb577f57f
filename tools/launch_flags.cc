#include "launch_flags.h"

#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "kvtopo/model.h"
#include "kvtopo/units.h"

namespace kvtopo::cli {

void AddLaunchFlags(CLI::App* app, LaunchFlags& f) {
  f.app = app;
  app->add_option("model", f.model,
                  "embedded profile name (kvtopo profiles), config.json path, or a directory "
                  "holding one; default: the Kimi-K3 TP16/DCP16 DSpark launch of the seeds");
  app->add_option("--tensor-parallel-size", f.tensor_parallel_size, "TP size (-tp)");
  app->add_option("--decode-context-parallel-size", f.decode_context_parallel_size,
                  "DCP size N (-dcp)");
  app->add_option("--prefill-context-parallel-size", f.prefill_context_parallel_size,
                  "PCP size (-pcp)");
  app->add_option("--dcp-kv-cache-interleave-size,--cp-kv-cache-interleave-size", f.interleave,
                  "DCP interleave I: tokens per rank before the next rank");
  app->add_option("--block-size", f.block_size, "tokens per physical page on one rank");
  app->add_option("--max-model-len", f.max_model_len, "longest request in tokens");
  app->add_option("--kv-cache-dtype", f.kv_cache_dtype, "auto, bfloat16, fp8, fp8_ds_mla, ...");
  app->add_option("--kv-cache-memory", f.kv_cache_memory,
                  "KV-cache bytes per rank: bytes or K/M/G (1000) or KiB/MiB/GiB (1024)");
  app->add_option("--max-num-seqs", f.max_num_seqs, "block-table rows per group");
  app->add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                  "tokens scheduled per step (bounds sliding windows)");
  app->add_flag("--enable-prefix-caching", f.enable_prefix_caching, "prefix caching on");
  app->add_flag("--no-enable-prefix-caching", f.no_enable_prefix_caching, "prefix caching off");
  app->add_option("--mamba-cache-mode", f.mamba_cache_mode, "recurrent cache mode: none, align, all");
  app->add_option("--mamba-block-size", f.mamba_block_size, "tokens per recurrent checkpoint");
  app->add_option("--attention-backend", f.attention_backend, "target attention backend");
  app->add_option("--speculative-config", f.speculative_config,
                  "JSON: method, model, num_speculative_tokens, draft_attention_backend, "
                  "attention_backend, draft_kv_cache_dtype, dflash_draft_window_size");
  app->add_flag("--shard-draft", f.shard_draft,
                "shard the draft cache under DCP (as VLLM_DCP_SHARD_DRAFT=1)");
  app->add_option("--prefix-match-unit", f.prefix_match_unit,
                  "hash block size in tokens (must divide every group block)");
}

namespace {

bool Given(const LaunchFlags& f, const char* name) { return f.app->count(name) > 0; }

Status CheckPositive(const LaunchFlags& f, const char* name, int64_t value) {
  if (Given(f, name) && value <= 0) {
    return InvalidArgument(std::string(name) + " must be positive, got " + std::to_string(value));
  }
  return Status::Ok();
}

}  // namespace

Result<LaunchConfig> ToLaunchConfig(const LaunchFlags& f) {
  LaunchConfig c = f.model.empty() ? DefaultLaunchConfig() : LaunchConfig{};
  if (!f.model.empty()) c.model = f.model;
  for (auto [name, value] : {std::pair{"--tensor-parallel-size", f.tensor_parallel_size},
                             {"--decode-context-parallel-size", f.decode_context_parallel_size},
                             {"--prefill-context-parallel-size", f.prefill_context_parallel_size},
                             {"--dcp-kv-cache-interleave-size", f.interleave},
                             {"--block-size", f.block_size},
                             {"--max-model-len", f.max_model_len},
                             {"--max-num-seqs", f.max_num_seqs},
                             {"--max-num-batched-tokens", f.max_num_batched_tokens},
                             {"--mamba-block-size", f.mamba_block_size},
                             {"--prefix-match-unit", f.prefix_match_unit}}) {
    KVTOPO_RETURN_IF_ERROR(CheckPositive(f, name, value));
  }
  if (Given(f, "--tensor-parallel-size")) c.parallel.tensor_parallel_size = f.tensor_parallel_size;
  if (Given(f, "--decode-context-parallel-size")) {
    c.parallel.decode_context_parallel_size = f.decode_context_parallel_size;
  }
  if (Given(f, "--prefill-context-parallel-size")) {
    c.parallel.prefill_context_parallel_size = f.prefill_context_parallel_size;
  }
  if (Given(f, "--dcp-kv-cache-interleave-size")) {
    c.parallel.dcp_kv_cache_interleave_size = f.interleave;
  }
  if (Given(f, "--block-size")) c.cache.block_size = f.block_size;
  if (Given(f, "--max-model-len")) c.cache.max_model_len = f.max_model_len;
  if (Given(f, "--max-num-seqs")) c.cache.max_num_seqs = f.max_num_seqs;
  if (Given(f, "--max-num-batched-tokens")) {
    c.cache.max_num_batched_tokens = f.max_num_batched_tokens;
  }
  if (Given(f, "--mamba-block-size")) c.cache.mamba_block_size = f.mamba_block_size;
  if (Given(f, "--prefix-match-unit")) c.cache.prefix_match_unit = f.prefix_match_unit;
  if (Given(f, "--kv-cache-dtype")) {
    KVTOPO_ASSIGN_OR_RETURN(c.cache.kv_cache_dtype, ParseKvCacheDtype(f.kv_cache_dtype));
  }
  if (f.enable_prefix_caching && f.no_enable_prefix_caching) {
    return InvalidArgument(
        "--enable-prefix-caching and --no-enable-prefix-caching contradict each other");
  }
  if (f.enable_prefix_caching) c.cache.enable_prefix_caching = true;
  if (f.no_enable_prefix_caching) c.cache.enable_prefix_caching = false;
  if (Given(f, "--mamba-cache-mode")) {
    KVTOPO_ASSIGN_OR_RETURN(RecurrentMode mode, ParseRecurrentMode(f.mamba_cache_mode));
    c.cache.mamba_cache_mode = mode;
  }
  if (Given(f, "--attention-backend")) c.cache.attention_backend = f.attention_backend;
  if (Given(f, "--speculative-config")) {
    KVTOPO_ASSIGN_OR_RETURN(SpeculativeConfig spec, ParseSpeculativeConfig(f.speculative_config));
    c.speculative = spec;
  }
  c.shard_draft_flag = f.shard_draft;
  if (const char* env = std::getenv("VLLM_DCP_SHARD_DRAFT")) c.dcp_shard_draft_env = env;
  return c;
}

Result<int64_t> KvCacheMemoryBytes(const LaunchFlags& f) {
  if (!Given(f, "--kv-cache-memory")) return int64_t{0};
  KVTOPO_ASSIGN_OR_RETURN(int64_t bytes, ParseByteSize(f.kv_cache_memory));
  if (bytes <= 0) {
    return InvalidArgument("--kv-cache-memory must be positive, got '" + f.kv_cache_memory + "'");
  }
  return bytes;
}

int ExitCodeFor(const Status& status) {
  if (status.ok()) return kExitOk;
  return status.code() == StatusCode::kRejected || status.code() == StatusCode::kInternal
             ? kExitRejected
             : kExitUsage;
}

int ReportError(const Status& status) {
  std::fprintf(stderr, "kvtopo: %s\n", status.message().c_str());
  return ExitCodeFor(status);
}

}  // namespace kvtopo::cli
