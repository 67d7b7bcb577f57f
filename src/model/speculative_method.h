// The speculative-decoding methods and what each asks of the KV cache, as one table
// (docs/planner.md "Speculative methods" gives each row's source). The model layer reads a
// method's row instead of comparing method names.
#pragma once

#include <string_view>

#include "kvtopo/launch.h"

namespace kvtopo::internal {

enum class DraftCache {
  kNone,      // proposals from n-grams, a suffix tree or heads on the target's hidden states
  kInModel,   // the target's own MTP layers
  kExternal,  // a separate draft model with its own layers
};

// Where a draft cache lives under DCP > 1 (DESIGN.md §3 rule 2; the request is
// VLLM_DCP_SHARD_DRAFT or --shard-draft).
enum class DraftPlacementRule {
  kByCausality,          // causal drafts shard with the target; non-causal ones are replicated
                         // unless sharding is asked for (any truthy value)
  kShardedUnlessFalsy,   // sharded unless a falsy value asks for replication
  kReplicatedUnlessOne,  // replicated unless sharding is asked for with exactly "1"
  kReplicated,           // always replicated (TP-local heads, no cross-rank LSE combine)
};

enum class DraftWindowKnob {
  kNone,
  kDsparkKvWindow,    // VLLM_DSPARK_DRAFT_KV_WINDOW: MLA draft layers become sliding-window MLA
  kDflashWindowSize,  // dflash_draft_window_size: attention draft layers become sliding window
};

enum class AsyncScheduling {
  kDefault,    // on unless --no-async-scheduling
  kOnRequest,  // off by default; --async-scheduling is accepted
  kNever,      // off; --async-scheduling is rejected
};

// Whether the draft reads the target's auxiliary hidden states (vLLM's
// use_aux_hidden_state_outputs), which only a target class implementing the engine's EAGLE-3
// interface provides.
enum class AuxHiddenStates {
  kNone,
  kUnlessDraftDeclines,  // eagle3: unless the draft's eagle_config.use_aux_hidden_state is false
  kAlways,
};

// The engine's proposer for the method when it is a SpecDecodeBaseProposer (the fork's
// v1/spec_decode/llm_base_proposer.py at 28be48fa9), which decides the input slots drafting adds
// per request: one per draft token under parallel drafting, else one, less one when the
// proposer feeds the target's hidden states (not for DFlash). A proposer that adds slots refuses,
// as it is built, disable_padded_drafter_batch, a multimodal target (not DFlash's) and a draft
// using M-RoPE.
enum class Proposer {
  kNone,          // another proposer (n-gram, suffix, Medusa, MLP speculator) or not modelled
  kHiddenStates,  // EagleProposer, Gemma4Proposer: slots only under parallel drafting
  kDflash,        // DFlashProposer: always parallel drafting; takes a multimodal target
  kDraftModel,    // DraftModelProposer
};

struct SpeculativeMethod {
  std::string_view name;
  DraftCache cache = DraftCache::kNone;
  bool causal = true;        // the draft's attention when its profile does not say
  bool eagle_style = false;  // recomputes the last cached block: every block volatile
  // vLLM's use_eagle() (eagle, eagle3, mtp, dflash): the engine runs chunked local attention
  // without its hybrid KV cache manager.
  bool use_eagle = false;
  AsyncScheduling async = AsyncScheduling::kNever;
  DraftPlacementRule placement = DraftPlacementRule::kByCausality;
  DraftWindowKnob window = DraftWindowKnob::kNone;
  // Under DCP > 1 the draft backend must have BackendCaps::dspark_draft_under_dcp.
  bool dcp_needs_dspark_backend = false;
  AuxHiddenStates aux_hidden_states = AuxHiddenStates::kNone;
  // The draft runs only at the target's tensor-parallel size (vLLM's DraftModelProposer).
  bool draft_tp_is_target_tp = false;
  Proposer proposer = Proposer::kNone;
};

// The row of a canonical method name; null when none.
const SpeculativeMethod* FindSpeculativeMethod(std::string_view name);
// Whether `model_type` is one of the engine's MTP model types (MTPModelTypes: "mtp" and the
// per-model names, which --speculative-config also takes as methods).
bool IsMtpModelType(std::string_view model_type);

// Whether the engine takes `method`'s 'model' as a draft config whose n_predict fills an unset
// num_speculative_tokens in and must divide a larger one (SpeculativeConfig.__post_init__ at
// 28be48fa9): eagle, eagle3, dflash, draft_model, medusa and mlp_speculator. MTP reads its
// n_predict from the MTP modules the model states instead.
bool TakesDraftNPredict(std::string_view method);

// Whether the draft cache of `method` is replicated under DCP > 1, for a draft of causality
// `causal` and the launch's sharding request.
bool DraftIsReplicated(const SpeculativeMethod& method, bool causal, ShardDraftRequest request);

}  // namespace kvtopo::internal
