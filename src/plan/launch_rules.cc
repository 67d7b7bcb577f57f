// The launch rules that depend on the planned layout: each is a small function over one planned
// layer and its group's geometry, so it sees the final block size, placement and shard count
// (DESIGN.md §3 rule 5; fork_and_models.md A.1–A.4; vllm_kv_cache.md §4.6). Rules that do not
// depend on the layout (backend kind, head size, causality) live with the model layer.
#include "plan/launch_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "kvtopo/backend.h"
#include "model/backend_knob.h"

namespace kvtopo::internal {
namespace {

// One planned attention layer and what the rules read about it.
struct Layer {
  const LayerSpec& spec;
  const GroupGeometry& geometry;
  const BackendCaps& backend;
  const ParallelConfig& parallel;
  int64_t num_speculative_tokens = 0;
  int64_t dcp_interleave_as_given = 0;  // LaunchConfig's; 0: not given apart from the launch's
};

class Findings {
 public:
  explicit Findings(std::vector<Diagnostic>& out) : out_(out) {}
  void Error(std::string code, std::string message) {
    if (!seen_.emplace(code, message).second) return;
    out_.push_back(Diagnostic{Severity::kError, std::move(code), std::move(message)});
  }

 private:
  std::vector<Diagnostic>& out_;
  std::set<std::pair<std::string, std::string>> seen_;  // (code, message) dedupe
};

// The final block must be one the backend's kernels run (or a multiple of one).
void CheckKernelBlock(const Layer& l, Findings& f) {
  if (l.backend.SupportsBlockSize(l.spec.block_size)) return;
  f.Error("backend-block-size",
          fmt::format("{} layer '{}' uses block size {} which is not a multiple of a {} kernel "
                      "block size (smallest {}); change --block-size",
                      RoleName(l.spec.role), l.spec.name, l.spec.block_size, l.backend.name,
                      l.backend.MinKernelBlockSize()));
}

// check_attention_cp_compatibility (vllm/v1/worker/cp_utils.py at 28be48fa9), run once the
// weights are loaded: with PCP above 1, every attention layer's backend must support it, with or
// without DCP.
void CheckPcp(const Layer& l, Findings& f) {
  if (l.parallel.prefill_context_parallel_size <= 1 || l.backend.supports_pcp) return;
  f.Error(l.backend.dcp_gathered_head_multiple > 0 ? "b12x-dcp-pcp" : "backend-pcp",
          fmt::format("{} layer '{}' runs on backend {}, which does not support prefill context "
                      "parallelism; set --prefill-context-parallel-size 1",
                      RoleName(l.spec.role), l.spec.name, l.backend.name));
}

// A cache every rank holds in full (DCP1 geometry inside a DCP launch).
void CheckReplicated(const Layer& l, Findings& f) {
  const ParallelConfig& p = l.parallel;
  const std::string role(RoleName(l.spec.role));
  if (p.prefill_context_parallel_size > 1) {
    f.Error("replicated-pcp",
            fmt::format("{} layer '{}' keeps a replicated (DCP1) cache, which cannot run with "
                        "--prefill-context-parallel-size {}; set it to 1",
                        role, l.spec.name, p.prefill_context_parallel_size));
  }
  if (l.spec.role == Role::kDraft && !l.backend.local_dcp_draft_contract) {
    f.Error(
        "replicated-draft-backend",
        fmt::format("draft layer '{}' is replicated under --decode-context-parallel-size {} "
                    "but backend {} cannot run a DCP1 draft inside a DCP launch; choose a "
                    "backend with the local-DCP draft contract via {}",
                    l.spec.name, p.decode_context_parallel_size, l.backend.name, RoleKnob(l.spec)));
  }
}

// A cache whose token positions are striped over the DCP ranks.
void CheckSharded(const Layer& l, Findings& f) {
  const ParallelConfig& p = l.parallel;
  const LayerSpec& s = l.spec;
  const BackendCaps& be = l.backend;
  const std::string role(RoleName(s.role));
  const int64_t N = p.decode_context_parallel_size;
  const int64_t tp = p.tensor_parallel_size;
  if (!be.returns_lse) {
    f.Error("dcp-backend-lse",
            fmt::format("{} layer '{}' is DCP-sharded but backend {} does not return the softmax "
                        "LSE needed to combine shards; choose another backend with {} or set "
                        "--decode-context-parallel-size 1",
                        role, s.name, be.name, RoleKnob(s)));
  }
  // FlashInfer's local lengths (get_dcp_local_seq_lens with the engine's
  // dcp_kv_cache_interleave_size) against the interleave the slot mapping stores with (its
  // cp_kv_cache_interleave_size, the launch's): apart only when --cp-kv-cache-interleave-size
  // alone sets it; each rank then attends over lengths that are not the tokens it holds.
  const int64_t stored = l.parallel.dcp_kv_cache_interleave_size;
  if (be.dcp_lengths_from_dcp_flag && l.dcp_interleave_as_given > 0 &&
      l.dcp_interleave_as_given != stored) {
    f.Error("dcp-interleave-lengths",
            fmt::format("{} layer '{}' runs on backend {}, which computes each DCP rank's local "
                        "lengths with --dcp-kv-cache-interleave-size {} while the slot mapping "
                        "stores with --cp-kv-cache-interleave-size {}: the engine starts, and "
                        "each rank attends over lengths that are not the tokens it holds; give "
                        "--dcp-kv-cache-interleave-size {} as well",
                        role, s.name, be.name, l.dcp_interleave_as_given, stored, stored));
  }
  if (l.num_speculative_tokens > 0 && l.geometry.interleave() > 1 &&
      !be.spec_decode_with_interleave) {
    f.Error("spec-interleave-backend",
            fmt::format("speculative decoding with --dcp-kv-cache-interleave-size {} needs "
                        "backend support, which {} ({} layer '{}') lacks; set the interleave to "
                        "1 or choose another backend with {}",
                        l.geometry.interleave(), be.name, role, s.name, RoleKnob(s)));
  }
  if (be.dcp_gathered_head_multiple > 0) {
    // Backend-owned dense MLA DCP: gathered query heads fill the kernel's head tile.
    const int64_t q = s.num_q_heads_total;
    if (q % tp != 0) {
      f.Error("b12x-dcp-gathered-heads",
              fmt::format("layer '{}' has {} query heads, not divisible by "
                          "--tensor-parallel-size {}; backend {} needs whole local heads under "
                          "DCP",
                          s.name, q, tp, be.name));
    } else if ((q / tp * N) % be.dcp_gathered_head_multiple != 0) {
      f.Error("b12x-dcp-gathered-heads",
              fmt::format("backend {} under DCP gathers local heads x DCP = {} x {} = {} query "
                          "heads, which must be a multiple of {}; change "
                          "--decode-context-parallel-size (or --tensor-parallel-size)",
                          be.name, q / tp, N, q / tp * N, be.dcp_gathered_head_multiple));
    }
  }
  if (be.dcp_max_local_kv_tokens > 0) {
    const int64_t L = l.geometry.max_model_len();
    const int64_t shard = l.geometry.LargestLocalShard(TokenCount{L}).value();
    if (shard > be.dcp_max_local_kv_tokens) {
      f.Error("b12x-dcp-local-shard",
              fmt::format("backend {} holds at most {} tokens per rank-local KV shard, but "
                          "--max-model-len {} over DCP {} puts {} on rank 0; lower "
                          "--max-model-len or raise --decode-context-parallel-size",
                          be.name, be.dcp_max_local_kv_tokens, L, N, shard));
    }
  }
  if (!IsMla(s.kind)) {
    // GQA/MQA rules for DCP (vllm_kv_cache.md §4.6).
    const int64_t kv = std::max<int64_t>(1, s.num_kv_heads_total);
    const int64_t q = s.num_q_heads_total;
    if (tp <= kv) {
      f.Error("gqa-dcp-tp-kv-heads",
              fmt::format("{} layers: --tensor-parallel-size {} must be greater than the total "
                          "KV heads {} for GQA/MQA decode context parallelism; raise "
                          "--tensor-parallel-size or set --decode-context-parallel-size 1",
                          role, tp, kv));
    } else if (N > tp / kv) {
      f.Error("gqa-dcp-size",
              fmt::format("{} layers: --decode-context-parallel-size {} exceeds tensor-parallel "
                          "size / KV heads = {} / {} = {} for GQA/MQA; lower it",
                          role, N, tp, kv, tp / kv));
    }
    if (q % kv != 0 || (q / kv) % N != 0) {
      f.Error("gqa-dcp-q-per-kv",
              fmt::format("{} layers: query heads per KV head {} / {} must be a multiple of "
                          "--decode-context-parallel-size {}; change it",
                          role, q, kv, N));
    }
  }
}

// MLACommonMetadataBuilder.__init__ (vllm/model_executor/layers/attention/mla_attention.py at
// 28be48fa9), built once the weights are loaded: under DCP its chunked-prefill workspace, of
// max(min(max(8 L, 4 S B), 65,536), S B) tokens (L the maximum length, S the rows, B the cache
// block), must split evenly over the N ranks. Every MLA layer on such a backend builds it, a
// replicated draft's too (the builder reads the DCP group).
void CheckMlaWorkspace(const Layer& l, Findings& f) {
  const int64_t N = l.parallel.decode_context_parallel_size;
  if (N <= 1 || !IsMla(l.spec.kind) || !l.backend.mla_common_builder) return;
  // L below 2^31, S and B at most 2^20: no overflow.
  const int64_t L = l.geometry.max_model_len();
  const int64_t S = l.geometry.max_num_seqs();
  const int64_t B = l.spec.block_size;
  const int64_t workspace = std::max(std::min(std::max(8 * L, 4 * S * B), int64_t{65536}), S * B);
  if (workspace % N == 0) return;
  f.Error(
      "mla-dcp-workspace",
      fmt::format("{} layer '{}' runs on {}, whose MLA metadata builder splits a "
                  "chunked-prefill workspace of {} tokens (max(min(max(8 x --max-model-len "
                  "{}, 4 x --max-num-seqs {} x block {}), 65536), {} x {})) over "
                  "--decode-context-parallel-size {}: it is not a multiple, and the engine "
                  "asserts it once the weights are loaded; change --max-model-len or "
                  "--max-num-seqs so that it is",
                  RoleName(l.spec.role), l.spec.name, l.backend.name, workspace, L, S, B, S, B, N));
}

// A backend whose MLA decode kernel takes at most so many query heads (CUTLASS MLA's forward_mqa
// asserts H <= 128, mla/cutlass_mla.py at 28be48fa9): the rank's heads, and under DCP the heads
// gathered from every rank of a sharded cache (MLAAttention's all_gather over dim 1,
// mla_attention.py). The engine asserts it at the first decode.
void CheckDecodeHeads(const Layer& l, Findings& f) {
  const int64_t max = l.backend.max_decode_heads;
  const int64_t tp = l.parallel.tensor_parallel_size;
  const int64_t q = l.spec.num_q_heads_total;
  if (max <= 0 || !IsMla(l.spec.kind) || q % tp != 0) return;
  // The ranks a sharded cache gathers the heads over (1 for a replicated one); q at most
  // kMaxModelDim, the shards at most tp: no overflow.
  const int64_t N = l.geometry.interleaved_slots() ? l.geometry.dcp_shard_count() : 1;
  if (q / tp * N <= max) return;
  f.Error("backend-decode-heads",
          N > 1 ? fmt::format("{} layer '{}' runs on {}, whose decode kernel takes at most {} "
                              "query heads, but under DCP it gets {} heads per rank x DCP {} = "
                              "{}; raise --tensor-parallel-size, lower "
                              "--decode-context-parallel-size or choose another backend with {}",
                              RoleName(l.spec.role), l.spec.name, l.backend.name, max, q / tp, N,
                              q / tp * N, RoleKnob(l.spec))
                : fmt::format("{} layer '{}' runs on {}, whose decode kernel takes at most {} "
                              "query heads, but it gets {} heads / --tensor-parallel-size {} = "
                              "{}; raise --tensor-parallel-size or choose another backend with {}",
                              RoleName(l.spec.role), l.spec.name, l.backend.name, max, q, tp,
                              q / tp, RoleKnob(l.spec)));
}

// A DSpark draft window holds at least one of its blocks.
void CheckDraftWindow(const Layer& l, int64_t dspark_window, Findings& f) {
  if (dspark_window <= 0 || l.spec.role != Role::kDraft || !IsWindowed(l.spec.kind) ||
      dspark_window >= l.spec.block_size) {
    return;
  }
  f.Error("dspark-window",
          fmt::format("VLLM_DSPARK_DRAFT_KV_WINDOW {} must be 0 (full draft cache) or at least "
                      "one block ({} tokens); change it",
                      dspark_window, l.spec.block_size));
}

}  // namespace

Status CheckLaunchRules(const LaunchConfig& launch, Plan& plan) {
  Findings findings(plan.diagnostics);
  const ParallelConfig& p = plan.parallel;
  const int64_t N = p.decode_context_parallel_size;
  for (const PlannedGroup& g : plan.groups) {
    for (const LayerSpec& s : g.layer_specs) {
      // Layer-tuple layers run the model's own backends (ModelCacheSpecs::model_backends).
      if (!IsAttention(s.kind) || s.attention_backend.empty() || s.sparse_indexer ||
          s.layer_tuples) {
        continue;
      }
      KVTOPO_ASSIGN_OR_RETURN(const BackendCaps backend, FindBackend(s.attention_backend));
      const Layer layer{.spec = s,
                        .geometry = g.geometry,
                        .backend = backend,
                        .parallel = p,
                        .num_speculative_tokens = plan.model.num_speculative_tokens,
                        .dcp_interleave_as_given = launch.dcp_interleave_as_given};
      CheckKernelBlock(layer, findings);
      CheckDraftWindow(layer, launch.dspark_draft_kv_window, findings);
      CheckMlaWorkspace(layer, findings);
      CheckDecodeHeads(layer, findings);
      // A replicated layer's PCP refusal is replicated-pcp.
      if (N <= 1 || g.geometry.interleaved_slots()) CheckPcp(layer, findings);
      if (N <= 1) continue;
      if (g.geometry.interleaved_slots()) {
        CheckSharded(layer, findings);
      } else {
        CheckReplicated(layer, findings);
      }
    }
  }
  return Status::Ok();
}

}  // namespace kvtopo::internal
