#include "launch_flags.h"

#include <cstdio>
#include <cstdlib>

#include "commands.h"

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
  app->add_option("--mamba-cache-mode", f.mamba_cache_mode,
                  "recurrent cache mode: none, align, all");
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
}  // namespace

Result<LaunchOptions> ToLaunchOptions(const LaunchFlags& f) {
  LaunchOptions o;
  o.model = f.model;
  auto size = [&](const char* flag, int64_t value, std::optional<int64_t>& out) {
    if (Given(f, flag)) out = value;
  };
  size("--tensor-parallel-size", f.tensor_parallel_size, o.tensor_parallel_size);
  size("--decode-context-parallel-size", f.decode_context_parallel_size,
       o.decode_context_parallel_size);
  size("--prefill-context-parallel-size", f.prefill_context_parallel_size,
       o.prefill_context_parallel_size);
  size("--dcp-kv-cache-interleave-size", f.interleave, o.dcp_kv_cache_interleave_size);
  size("--block-size", f.block_size, o.block_size);
  size("--max-model-len", f.max_model_len, o.max_model_len);
  size("--max-num-seqs", f.max_num_seqs, o.max_num_seqs);
  size("--max-num-batched-tokens", f.max_num_batched_tokens, o.max_num_batched_tokens);
  size("--mamba-block-size", f.mamba_block_size, o.mamba_block_size);
  size("--prefix-match-unit", f.prefix_match_unit, o.prefix_match_unit);
  auto text = [&](const char* flag, const std::string& value, std::optional<std::string>& out) {
    if (Given(f, flag)) out = value;
  };
  text("--kv-cache-dtype", f.kv_cache_dtype, o.kv_cache_dtype);
  text("--kv-cache-memory", f.kv_cache_memory, o.kv_cache_memory);
  text("--mamba-cache-mode", f.mamba_cache_mode, o.mamba_cache_mode);
  text("--attention-backend", f.attention_backend, o.attention_backend);
  text("--speculative-config", f.speculative_config, o.speculative_config);
  if (f.enable_prefix_caching && f.no_enable_prefix_caching) {
    return InvalidArgument(
        "--enable-prefix-caching and --no-enable-prefix-caching contradict each other");
  }
  if (f.enable_prefix_caching) o.enable_prefix_caching = true;
  if (f.no_enable_prefix_caching) o.enable_prefix_caching = false;
  o.shard_draft = f.shard_draft;
  if (const char* env = std::getenv("VLLM_DCP_SHARD_DRAFT")) o.dcp_shard_draft_env = env;
  return o;
}

Result<LaunchConfig> ToLaunchConfig(const LaunchFlags& f) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchOptions o, ToLaunchOptions(f));
  return ::kvtopo::ToLaunchConfig(o);
}

Result<int64_t> KvCacheMemoryBytes(const LaunchFlags& f) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchOptions o, ToLaunchOptions(f));
  return ::kvtopo::KvCacheMemoryBytes(o);
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
