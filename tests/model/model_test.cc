#include "kvtopo/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kvtopo/backend.h"
#include "kvtopo/plan.h"
#include "model/speculative_method.h"

namespace kvtopo {
namespace {

int64_t Page(const LayerSpec& s) { return *PageSizeBytes(s); }

std::vector<LayerSpec> Select(const ModelCacheSpecs& m, Role role, CacheKind kind) {
  std::vector<LayerSpec> out;
  for (const LayerSpec& s : m.layers) {
    if (s.role == role && s.kind == kind) out.push_back(s);
  }
  return out;
}

std::vector<LayerSpec> Role_(const ModelCacheSpecs& m, Role role) {
  std::vector<LayerSpec> out;
  for (const LayerSpec& s : m.layers) {
    if (s.role == role) out.push_back(s);
  }
  return out;
}

// Diagnostics come from the model layer (ModelCacheSpecs) or, for the rules that need the
// planned geometry (DCP, block sizes), from the plan; both carry `diagnostics`.
template <typename WithDiagnostics>
bool HasCode(const WithDiagnostics& m, std::string_view code) {
  return std::any_of(m.diagnostics.begin(), m.diagnostics.end(),
                     [&](const Diagnostic& d) { return d.code == code; });
}

template <typename WithDiagnostics>
int CountErrors(const WithDiagnostics& m) {
  return static_cast<int>(
      std::count_if(m.diagnostics.begin(), m.diagnostics.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::kError; }));
}

template <typename WithDiagnostics>
std::string Codes(const WithDiagnostics& m) {
  std::string out;
  for (const Diagnostic& d : m.diagnostics) out += d.code + ": " + d.message + "\n";
  return out;
}

// The launch planned end to end: model diagnostics first, then the planner's and launch rules'.
Result<Plan> Planned(const LaunchConfig& c) { return PlanLaunch(c); }

LaunchConfig Plain(std::string model, int64_t tp = 1, int64_t dcp = 1) {
  LaunchConfig c;
  c.model = std::move(model);
  c.parallel.tensor_parallel_size = tp;
  c.parallel.decode_context_parallel_size = dcp;
  return c;
}

nlohmann::json ReadProfileFile(const std::string& stem) {
  std::ifstream in(std::string(KVTOPO_SOURCE_DIR) + "/profiles/" + stem + ".json");
  return nlohmann::json::parse(in);
}

// --- The seeds' default launch: Kimi-K3 TP16/DCP16 + DSpark ---------------------------------

TEST(KimiK3, DefaultLaunchSpecs) {
  auto specs = BuildModelCacheSpecs(DefaultLaunchConfig());
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->model_name, "kimi-k3");
  EXPECT_EQ(specs->architecture, "KimiK3ForConditionalGeneration");
  EXPECT_EQ(specs->draft_name, "kimi-k3-dspark");
  EXPECT_EQ(specs->max_model_len, 1'000'000);
  EXPECT_EQ(specs->num_speculative_tokens, 7);
  EXPECT_EQ(specs->num_lookahead_tokens, 7);
  EXPECT_EQ(CountErrors(*specs), 0) << Codes(*specs);

  auto mla = Select(*specs, Role::kTarget, CacheKind::kMla);
  auto kda = Select(*specs, Role::kTarget, CacheKind::kRecurrent);
  auto draft = Role_(*specs, Role::kDraft);
  ASSERT_EQ(mla.size(), 24u);
  ASSERT_EQ(kda.size(), 69u);
  ASSERT_EQ(draft.size(), 5u);
  EXPECT_EQ(mla.front().name, "model.layers.3.self_attn");
  EXPECT_EQ(mla.back().name, "model.layers.92.self_attn");
  // The model layer builds at B12X's 256-token cache block; the planner's hybrid alignment
  // raises it to 768 (PlanLaunch.KimiK3ProductionMatchesTheEngine).
  for (const LayerSpec& s : mla) {
    EXPECT_EQ(Page(s), 256 * 576);
    EXPECT_EQ(s.head_size, 576);
    EXPECT_EQ(s.block_size, 256);
    EXPECT_FALSE(s.dcp.replicated);
    EXPECT_TRUE(s.causal);
    EXPECT_FALSE(s.volatile_last_block);  // DSpark is not EAGLE-style
    EXPECT_EQ(s.attention_backend, "B12X_MLA");
  }
  for (const LayerSpec& s : kda) {
    EXPECT_EQ(Page(s), 407'040);
    EXPECT_EQ(s.block_size, 256);
    EXPECT_EQ(s.recurrent_mode, RecurrentMode::kAlign);
    EXPECT_EQ(s.num_speculative_blocks, 7);
  }
  for (const LayerSpec& s : draft) {
    EXPECT_EQ(s.kind, CacheKind::kSlidingWindowMla);  // VLLM_DSPARK_DRAFT_KV_WINDOW=32768
    EXPECT_EQ(s.sliding_window, 32768);
    EXPECT_TRUE(s.backend_selects_block);
    EXPECT_TRUE(s.dcp.replicated) << s.name;
    EXPECT_FALSE(s.causal);
    EXPECT_EQ(s.head_size, 576);
    EXPECT_EQ(s.cache_dtype, KvCacheDtype::kFp8);
    EXPECT_EQ(s.attention_backend, "B12X_MLA");
  }
  EXPECT_EQ(draft.front().name, "draft.model.layers.0.self_attn");
}

TEST(KimiK3, ShardDraftEnvShardsTheDspark) {
  LaunchConfig c = DefaultLaunchConfig();
  c.dspark_draft_kv_window = 0;  // a sharded window would be rejected (DCP shards no window)
  c.shard_draft = ShardDraftRequest::kOne;
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  for (const LayerSpec& s : Role_(*specs, Role::kDraft)) EXPECT_FALSE(s.dcp.replicated);
  EXPECT_EQ(CountErrors(*specs), 0) << Codes(*specs);
}

TEST(KimiK3, OnlyAnExplicitOneShardsTheExternalDspark) {
  for (const char* value : {"true", "yes", "0", ""}) {
    LaunchConfig c = DefaultLaunchConfig();
    c.shard_draft = ParseShardDraftRequest(value);
    auto specs = BuildModelCacheSpecs(c);
    ASSERT_TRUE(specs.ok());
    for (const LayerSpec& s : Role_(*specs, Role::kDraft)) EXPECT_TRUE(s.dcp.replicated) << value;
  }
  LaunchConfig flag = DefaultLaunchConfig();
  flag.dspark_draft_kv_window = 0;
  flag.shard_draft = ShardDraftRequest::kOne;  // --shard-draft
  auto specs = BuildModelCacheSpecs(flag);
  ASSERT_TRUE(specs.ok());
  for (const LayerSpec& s : Role_(*specs, Role::kDraft)) EXPECT_FALSE(s.dcp.replicated);
}

TEST(KimiK3, AnUnrecognizedShardDraftValueIsReadAsUnsetAndNamed) {
  LaunchConfig c = DefaultLaunchConfig();
  c.shard_draft = ParseShardDraftRequest("on");
  c.shard_draft_value = "on";
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  for (const LayerSpec& s : Role_(*specs, Role::kDraft)) EXPECT_TRUE(s.dcp.replicated);
  std::vector<std::string> messages;
  for (const Diagnostic& d : specs->diagnostics) {
    if (d.code == "dcp-shard-draft-unrecognized") messages.push_back(d.message);
  }
  ASSERT_EQ(messages.size(), 1u) << Codes(*specs);
  EXPECT_EQ(messages[0],
            "VLLM_DCP_SHARD_DRAFT 'on' is neither 1, true/yes nor 0/false/no; method 'dspark' "
            "reads it as unset: the draft cache is replicated across the 16 DCP ranks");
  // An empty value is read as unset too, without a warning.
  c.shard_draft = ParseShardDraftRequest("");
  c.shard_draft_value = "";
  auto empty = BuildModelCacheSpecs(c);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(HasCode(*empty, "dcp-shard-draft-unrecognized"));
}

TEST(KimiK3, NonB12xDraftBackendUnderDcpIsRejected) {
  LaunchConfig c = DefaultLaunchConfig();
  c.speculative->draft_attention_backend = "TRITON_MLA";
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(HasCode(*specs, "dspark-dcp-backend")) << Codes(*specs);
  // The target keeps its own backend.
  for (const LayerSpec& s : Select(*specs, Role::kTarget, CacheKind::kMla)) {
    EXPECT_EQ(s.attention_backend, "B12X_MLA");
  }
}

TEST(KimiK3, Dcp1ChangesNothing) {
  auto dcp16 = BuildModelCacheSpecs(DefaultLaunchConfig());
  LaunchConfig c = DefaultLaunchConfig();
  c.parallel.decode_context_parallel_size = 1;
  auto dcp1 = BuildModelCacheSpecs(c);
  ASSERT_TRUE(dcp16.ok());
  ASSERT_TRUE(dcp1.ok());
  EXPECT_EQ(Role_(*dcp1, Role::kTarget), Role_(*dcp16, Role::kTarget));
  for (const LayerSpec& s : Role_(*dcp1, Role::kDraft)) EXPECT_FALSE(s.dcp.replicated);
  EXPECT_TRUE(dcp1->diagnostics.empty()) << Codes(*dcp1);
  // DCP1 keeps every draft backend allowed as far as the DSpark DCP rule goes.
  c.speculative->draft_attention_backend = "TRITON_MLA";
  auto triton = BuildModelCacheSpecs(c);
  ASSERT_TRUE(triton.ok());
  EXPECT_FALSE(HasCode(*triton, "dspark-dcp-backend"));
}

TEST(KimiK3, Dcp2IsRejectedFor12GatheredHeads) {
  LaunchConfig c = DefaultLaunchConfig();
  c.parallel.decode_context_parallel_size = 2;
  auto specs = Planned(c);
  ASSERT_TRUE(specs.ok());
  ASSERT_TRUE(HasCode(*specs, "b12x-dcp-gathered-heads")) << Codes(*specs);
  const auto it =
      std::find_if(specs->diagnostics.begin(), specs->diagnostics.end(),
                   [](const Diagnostic& d) { return d.code == "b12x-dcp-gathered-heads"; });
  EXPECT_NE(it->message.find("6 x 2 = 12"), std::string::npos) << it->message;
  EXPECT_NE(it->message.find("--decode-context-parallel-size"), std::string::npos);
  // DCP8 gathers 48 heads and is accepted (with the budget a 1M-token request needs at DCP8).
  c.parallel.decode_context_parallel_size = 8;
  c.kv_cache_memory_bytes = int64_t{4} << 30;
  auto dcp8 = Planned(c);
  ASSERT_TRUE(dcp8.ok());
  EXPECT_EQ(CountErrors(*dcp8), 0) << Codes(*dcp8);
}

TEST(KimiK3, B12xLocalShardCapAndPcp) {
  LaunchConfig c = DefaultLaunchConfig();
  c.cache.max_model_len = 20'000'000;  // 1,250,000 tokens on rank 0 at DCP16
  auto specs = Planned(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(HasCode(*specs, "b12x-dcp-local-shard")) << Codes(*specs);
  EXPECT_TRUE(HasCode(*specs, "max-model-len-exceeds-model"));

  LaunchConfig pcp = DefaultLaunchConfig();
  pcp.parallel.prefill_context_parallel_size = 2;
  auto with_pcp = Planned(pcp);
  ASSERT_TRUE(with_pcp.ok());
  EXPECT_TRUE(HasCode(*with_pcp, "b12x-dcp-pcp")) << Codes(*with_pcp);
  EXPECT_TRUE(HasCode(*with_pcp, "replicated-pcp"));
}

TEST(KimiK3, DsparkDraftWindow) {
  LaunchConfig c = DefaultLaunchConfig();
  c.dspark_draft_kv_window = 65'536;
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(CountErrors(*specs), 0) << Codes(*specs);
  for (const LayerSpec& s : Role_(*specs, Role::kDraft)) {
    EXPECT_EQ(s.kind, CacheKind::kSlidingWindowMla);
    EXPECT_EQ(s.sliding_window, 65'536);
    EXPECT_TRUE(s.dcp.replicated);
    EXPECT_FALSE(s.causal);
  }
  c.dspark_draft_kv_window = 100;  // smaller than one 768-token block
  auto small = Planned(c);
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(HasCode(*small, "dspark-window"));
}

TEST(KimiK3, CachingOffUsesModeNoneOverTheWholeSequence) {
  LaunchConfig c = DefaultLaunchConfig();
  c.cache.enable_prefix_caching = false;
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  for (const LayerSpec& s : Select(*specs, Role::kTarget, CacheKind::kRecurrent)) {
    EXPECT_EQ(s.recurrent_mode, RecurrentMode::kNone);
    EXPECT_EQ(s.block_size, 1'000'000);
  }
}

// --- The seed "Fix Kimi EAGLE3 draft config under DCP" -------------------------------------

TEST(KimiK26, Eagle3DraftOverridesApplyToTheDraftOnly) {
  auto spec = ParseSpeculativeConfig(
      R"({"method":"eagle3","model":"kimi-k2.6-eagle3-mla","num_speculative_tokens":3,"draft_attention_backend":"TRITON_MLA","draft_kv_cache_dtype":"fp8"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->method, "eagle3");
  EXPECT_EQ(spec->draft_attention_backend, "TRITON_MLA");
  EXPECT_EQ(spec->draft_kv_cache_dtype, KvCacheDtype::kFp8);
  EXPECT_EQ(ParseSpeculativeConfig(
                R"({"method":"eagle3","num_speculative_tokens":3,"draft_kv_cache_dtype":"FP8"})")
                .status()
                .message(),
            "--speculative-config: draft_kv_cache_dtype 'FP8' is not one of the engine's cache "
            "dtypes, which its parser takes exactly as written (write 'fp8'); accepted: auto, "
            "bfloat16, float16, fp8, fp8_ds_mla, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_per_token_head, "
            "int8_per_token_head, nvfp4, nvfp4_ds_mla, turboquant_3bit_nc, turboquant_4bit_nc, "
            "turboquant_k3v4_nc, turboquant_k8v4");

  LaunchConfig c = Plain("kimi-k2.6", 8, 4);
  c.speculative = *spec;
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(CountErrors(*specs), 0) << Codes(*specs);
  EXPECT_EQ(specs->draft_name, "kimi-k2.6-eagle3-mla");
  EXPECT_EQ(specs->num_lookahead_tokens, 3);
  auto target = Role_(*specs, Role::kTarget);
  auto draft = Role_(*specs, Role::kDraft);
  ASSERT_EQ(target.size(), 61u);
  ASSERT_EQ(draft.size(), 1u);
  for (const LayerSpec& s : target) {
    EXPECT_EQ(s.attention_backend, "B12X_MLA");
    EXPECT_EQ(s.cache_dtype, KvCacheDtype::kAuto);
    EXPECT_EQ(s.block_size, 256);  // B12X's cache block
    EXPECT_EQ(Page(s), 256 * 576 * 2);
    EXPECT_TRUE(s.volatile_last_block);
  }
  const LayerSpec& d = draft.front();
  EXPECT_EQ(d.name, "draft.model.layers.0.self_attn");
  EXPECT_EQ(d.attention_backend, "TRITON_MLA");
  EXPECT_EQ(d.cache_dtype, KvCacheDtype::kFp8);
  EXPECT_EQ(Page(d), 256 * 576);
  EXPECT_TRUE(d.causal);
  EXPECT_FALSE(d.dcp.replicated);  // a causal draft shards with the target
  EXPECT_TRUE(d.volatile_last_block);
}

TEST(KimiK26, SpecDecodeWithInterleaveNeedsBackendSupport) {
  LaunchConfig c = Plain("kimi-k2.6", 8, 4);
  c.parallel.dcp_kv_cache_interleave_size = 16;
  c.speculative = *ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":3,"draft_attention_backend":"TRITON_MLA"})");
  auto specs = Planned(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(HasCode(*specs, "spec-interleave-backend")) << Codes(*specs);
  // FlashMLA does not advertise it at 28be48fa9 either; B12X (the target here) does.
  c.speculative->draft_attention_backend = "FLASHMLA";
  specs = Planned(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(HasCode(*specs, "spec-interleave-backend")) << Codes(*specs);
  c.parallel.dcp_kv_cache_interleave_size = 1;
  specs = Planned(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_FALSE(HasCode(*specs, "spec-interleave-backend")) << Codes(*specs);
}

TEST(KimiK26, AutoDraftBackendIsIndependentOfTheTarget) {
  LaunchConfig c = Plain("kimi-k2.6", 8, 1);
  c.cache.attention_backend = "FLASHMLA";
  c.speculative = *ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":3,"draft_attention_backend":"auto"})");
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(specs->attention_backend, "FLASHMLA");
  EXPECT_EQ(specs->draft_attention_backend, "TRITON_MLA");  // the draft profile's own default
  // Unset inherits --attention-backend.
  c.speculative->draft_attention_backend.clear();
  auto inherited = BuildModelCacheSpecs(c);
  ASSERT_TRUE(inherited.ok());
  EXPECT_EQ(inherited->draft_attention_backend, "FLASHMLA");
}

// --- Spec counts and page sizes per profile ------------------------------------------------

TEST(Profiles, DeepseekV32IndexerAndMtp) {
  auto specs = BuildModelCacheSpecs(Plain("deepseek-v3.2", 8, 1));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->max_model_len, 163'840);
  ASSERT_EQ(specs->layers.size(), 122u);
  const LayerSpec& indexer = specs->layers[1];
  EXPECT_EQ(indexer.name, "model.layers.0.indexer");
  EXPECT_EQ(indexer.head_size, 132);
  EXPECT_EQ(indexer.cache_dtype, KvCacheDtype::kFp8);
  EXPECT_EQ(*AttentionBytesPerToken(indexer), 132);
  EXPECT_EQ(specs->layers[0].attention_backend, "B12X_MLA_SPARSE");

  LaunchConfig mtp = Plain("deepseek-v3.2", 8, 4);
  mtp.speculative = *ParseSpeculativeConfig(R"({"method":"mtp","num_speculative_tokens":1})");
  auto with_mtp = BuildModelCacheSpecs(mtp);
  ASSERT_TRUE(with_mtp.ok()) << with_mtp.status().ToString();
  auto draft = Role_(*with_mtp, Role::kDraft);
  ASSERT_EQ(draft.size(), 2u);
  EXPECT_EQ(draft[0].name, "model.layers.61.self_attn");
  EXPECT_EQ(draft[1].name, "model.layers.61.indexer");
  for (const LayerSpec& s : draft) EXPECT_FALSE(s.dcp.replicated);  // MTP shards by default
  mtp.shard_draft = ParseShardDraftRequest("0");
  auto replicated = BuildModelCacheSpecs(mtp);
  ASSERT_TRUE(replicated.ok());
  for (const LayerSpec& s : Role_(*replicated, Role::kDraft)) EXPECT_TRUE(s.dcp.replicated);
  EXPECT_EQ(replicated->num_lookahead_tokens, 1);
}

TEST(Profiles, Glm51) {
  auto specs = BuildModelCacheSpecs(Plain("glm-5.1", 8, 1));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->layers.size(), 156u);
  EXPECT_EQ(specs->layers[0].head_size, 576);
  EXPECT_EQ(specs->layers[1].head_size, 132);
}

TEST(Profiles, KimiLinear) {
  auto specs = BuildModelCacheSpecs(Plain("kimi-linear-48b"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(Select(*specs, Role::kTarget, CacheKind::kMla).size(), 7u);
  auto kda = Select(*specs, Role::kTarget, CacheKind::kRecurrent);
  ASSERT_EQ(kda.size(), 20u);
  EXPECT_EQ(Page(kda[0]), 2'170'880);
}

TEST(Profiles, Glm53FlashWithDflash2UnderDcp4) {
  LaunchConfig c = Plain("glm-5.3-flash", 4, 4);
  c.speculative = *ParseSpeculativeConfig(
      R"({"method":"dflash","model":"glm-5.3-flash-dflash2","num_speculative_tokens":15})");
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(CountErrors(*specs), 0) << Codes(*specs);
  auto mla = Select(*specs, Role::kTarget, CacheKind::kMla);
  ASSERT_EQ(mla.size(), 11u);  // 11 NoPE MLA layers, each page holding its pooled indexer key
  EXPECT_EQ(mla[0].head_size, 512);
  EXPECT_EQ(mla[0].mla_rope_dim, 0);
  // B12X_MLA_SPARSE stores even an "auto" cache as the fp8_ds_mla row: 512 fp8 + 16 B scales,
  // no RoPE; the 132 B fp8 indexer key pooled 4:1 follows the rows as a 33 B/token tail.
  EXPECT_EQ(mla[0].cache_dtype, KvCacheDtype::kFp8DsMla);
  EXPECT_EQ(mla[0].page_tail_bytes_per_token, 33);
  EXPECT_EQ(*AttentionRecordBytesPerToken(mla[0]), 528);
  EXPECT_EQ(*AttentionBytesPerToken(mla[0]), 561);
  EXPECT_EQ(mla[0].block_size, 256);  // B12X's cache block before hybrid alignment
  EXPECT_EQ(Select(*specs, Role::kTarget, CacheKind::kRecurrent).size(), 34u);
  auto draft = Role_(*specs, Role::kDraft);
  ASSERT_EQ(draft.size(), 5u);
  for (const LayerSpec& s : draft) {
    EXPECT_EQ(s.kind, CacheKind::kSlidingWindow);
    EXPECT_TRUE(s.dcp.replicated);
    EXPECT_FALSE(s.causal);
    EXPECT_EQ(s.attention_backend, "FLASH_ATTN");
    EXPECT_TRUE(s.backend_selects_block);  // resolved by the planner
    EXPECT_EQ(s.num_kv_heads, 2);
    EXPECT_EQ(s.sliding_window, 2048);
    EXPECT_EQ(s.extra_retained_tokens, 0);  // the engine keeps no tail without multi-module MTP
    EXPECT_EQ(s.cache_dtype, KvCacheDtype::kAuto);  // the draft profile's serving default
    EXPECT_EQ(*AttentionBytesPerToken(s), 1024);    // 2 KV heads x (128 + 128) x bf16
  }
  // TP1: 4,096 B/token/layer, a 9.00 MiB page at 2,304 tokens.
  LaunchConfig tp1 = Plain("glm-5.3-flash", 1, 1);
  tp1.speculative = c.speculative;
  tp1.speculative->dflash_draft_window_size = 4096;
  auto one = BuildModelCacheSpecs(tp1);
  ASSERT_TRUE(one.ok());
  LayerSpec d = Role_(*one, Role::kDraft).front();
  EXPECT_EQ(*AttentionBytesPerToken(d), 4096);
  EXPECT_EQ(d.sliding_window, 4096);
  EXPECT_FALSE(d.dcp.replicated);  // DCP1
  d.block_size = 2304;
  EXPECT_EQ(Page(d), 9 * 1024 * 1024);
}

TEST(Profiles, Qwen3NextGdnWidenedBySpeculativeTokens) {
  auto specs = BuildModelCacheSpecs(Plain("qwen3-next-80b"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  auto full = Select(*specs, Role::kTarget, CacheKind::kFullAttention);
  auto gdn = Select(*specs, Role::kTarget, CacheKind::kRecurrent);
  ASSERT_EQ(full.size(), 12u);
  ASSERT_EQ(gdn.size(), 36u);
  EXPECT_EQ(full[0].name, "model.layers.3.self_attn");
  EXPECT_EQ(*AttentionBytesPerToken(full[0]), 2048);
  EXPECT_EQ(Page(gdn[0]), 1'097'728);
  EXPECT_EQ(gdn[0].name, "model.layers.0.linear_attn");

  LaunchConfig ngram = Plain("qwen3-next-80b");
  ngram.speculative = *ParseSpeculativeConfig(R"({"method":"ngram","num_speculative_tokens":3})");
  auto with_spec = BuildModelCacheSpecs(ngram);
  ASSERT_TRUE(with_spec.ok());
  EXPECT_EQ(with_spec->num_lookahead_tokens, 0);
  EXPECT_TRUE(Role_(*with_spec, Role::kDraft).empty());
  EXPECT_EQ(Page(Select(*with_spec, Role::kTarget, CacheKind::kRecurrent)[0]), 1'146'880);

  auto tp8 = BuildModelCacheSpecs(Plain("qwen3-next-80b", 8));
  ASSERT_TRUE(tp8.ok());
  EXPECT_EQ(Page(Select(*tp8, Role::kTarget, CacheKind::kRecurrent)[0]), 137'216);
  EXPECT_EQ(*AttentionBytesPerToken(Select(*tp8, Role::kTarget, CacheKind::kFullAttention)[0]),
            1024);  // 2 KV heads replicated to 1 per rank
}

TEST(Profiles, GptOssSlidingWindowUnderDcp) {
  auto specs = BuildModelCacheSpecs(Plain("gpt-oss-120b", 8));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  auto swa = Select(*specs, Role::kTarget, CacheKind::kSlidingWindow);
  ASSERT_EQ(swa.size(), 18u);
  EXPECT_EQ(Select(*specs, Role::kTarget, CacheKind::kFullAttention).size(), 18u);
  EXPECT_EQ(swa[0].sliding_window, 128);
  EXPECT_EQ(swa[0].num_kv_heads, 1);
  EXPECT_TRUE(specs->diagnostics.empty()) << Codes(*specs);

  auto dcp = Planned(Plain("gpt-oss-120b", 8, 2));
  ASSERT_TRUE(dcp.ok());
  EXPECT_TRUE(HasCode(*dcp, "sliding-window-dcp")) << Codes(*dcp);
  EXPECT_TRUE(HasCode(*dcp, "gqa-dcp-tp-kv-heads"));

  auto ok16 = Planned(Plain("gpt-oss-120b", 16, 2));
  ASSERT_TRUE(ok16.ok());
  EXPECT_FALSE(HasCode(*ok16, "gqa-dcp-tp-kv-heads"));
  EXPECT_FALSE(HasCode(*ok16, "gqa-dcp-size"));
  EXPECT_FALSE(HasCode(*ok16, "gqa-dcp-q-per-kv"));
  auto bad4 = Planned(Plain("gpt-oss-120b", 16, 4));
  ASSERT_TRUE(bad4.ok());
  EXPECT_TRUE(HasCode(*bad4, "gqa-dcp-size")) << Codes(*bad4);
}

TEST(Profiles, BackendMismatchesAreDiagnosed) {
  LaunchConfig c = Plain("kimi-k2.6", 8);
  c.cache.attention_backend = "FLASH_ATTN";
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(HasCode(*specs, "backend-kind"));
  c.cache.attention_backend = "B12X_MLA";
  c.cache.block_size = 936;
  auto block = Planned(c);
  ASSERT_TRUE(block.ok());
  EXPECT_TRUE(HasCode(*block, "backend-block-size"));
  LaunchConfig nope = Plain("glm-5.3-flash", 4);
  nope.cache.attention_backend = "B12X_MLA";  // supports only 576-wide rows, dense MLA
  auto head = BuildModelCacheSpecs(nope);
  ASSERT_TRUE(head.ok());
  EXPECT_TRUE(HasCode(*head, "backend-head-size")) << Codes(*head);
  EXPECT_TRUE(HasCode(*head, "backend-sparse")) << Codes(*head);
}

// --- Loading and errors --------------------------------------------------------------------

TEST(Loading, ProfileFileAndEmbeddedProfileGiveIdenticalSpecs) {
  for (const char* stem : {"kimi-k3", "kimi-k2.6", "kimi-linear-48b", "glm-5.1", "glm-5.3-flash",
                           "qwen3-next-80b", "deepseek-v3.2", "gpt-oss-120b"}) {
    LaunchConfig embedded = Plain(stem, 4);
    LaunchConfig file = Plain(std::string(KVTOPO_SOURCE_DIR) + "/profiles/" + stem + ".json", 4);
    auto a = BuildModelCacheSpecs(embedded);
    auto b = BuildModelCacheSpecs(file);
    ASSERT_TRUE(a.ok()) << stem << ": " << a.status().ToString();
    ASSERT_TRUE(b.ok()) << stem << ": " << b.status().ToString();
    EXPECT_EQ(a->layers, b->layers) << stem;
    EXPECT_EQ(a->diagnostics, b->diagnostics) << stem;
    auto c = BuildModelCacheSpecsFromJson(ReadProfileFile(stem), embedded);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(a->layers, c->layers) << stem;
  }
}

TEST(Loading, ModelDirectoryHoldingConfigJson) {
  const auto dir = std::filesystem::temp_directory_path() / "kvtopo_model_dir_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << ReadProfileFile("gpt-oss-120b").dump();
  auto specs = BuildModelCacheSpecs(Plain(dir.string(), 8));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->layers.size(), 36u);
  std::filesystem::remove_all(dir);
}

TEST(Loading, EmptyModelIsKimiK3) {
  LaunchConfig c = DefaultLaunchConfig();
  c.model.clear();
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(specs->model_name, "kimi-k3");
}

TEST(Loading, MissingFieldNamesTheFieldAndTheFile) {
  nlohmann::json config = ReadProfileFile("kimi-k3");
  config["text_config"].erase("kv_lora_rank");
  LaunchConfig c = Plain("profiles/kimi-k3.json", 16);
  auto specs = BuildModelCacheSpecsFromJson(config, c);
  ASSERT_FALSE(specs.ok());
  EXPECT_EQ(specs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(specs.status().message(),
            "config.json 'profiles/kimi-k3.json': field 'text_config.kv_lora_rank' is missing");
}

TEST(Loading, IllTypedFieldNamesTheFieldAndTheFile) {
  nlohmann::json config = ReadProfileFile("qwen3-next-80b");
  config["num_hidden_layers"] = "48";
  auto specs = BuildModelCacheSpecsFromJson(config, Plain("q.json"));
  ASSERT_FALSE(specs.ok());
  EXPECT_EQ(specs.status().message(),
            "config.json 'q.json': field 'num_hidden_layers' must be an integer, got \"48\"");
  config = ReadProfileFile("kimi-linear-48b");
  config["linear_attn_config"]["full_attn_layers"] = {4, 99};
  auto range = BuildModelCacheSpecsFromJson(config, Plain("k.json"));
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("'linear_attn_config.full_attn_layers'"),
            std::string::npos);
}

// A profile's own default backend is checked where it is read (and spelt as the registry does).
TEST(Loading, ProfileDefaultBackendIsARegisteredOne) {
  nlohmann::json config = ReadProfileFile("gpt-oss-120b");
  config["kvtopo"]["default_backend"] = "flashinfer";
  auto specs = BuildModelCacheSpecsFromJson(config, Plain("g.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->attention_backend, "FLASHINFER");
  config["kvtopo"]["default_backend"] = "FLASH";
  specs = BuildModelCacheSpecsFromJson(config, Plain("g.json"));
  EXPECT_EQ(specs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(specs.status().message(),
            "config.json 'g.json': field 'kvtopo.default_backend' is 'FLASH', which is no "
            "registered attention backend; accepted: B12X_MLA, B12X_MLA_SPARSE, TRITON_MLA, "
            "FLASHMLA, FLASHINFER_MLA, FLASH_ATTN, FLASH_ATTN_DIFFKV, FLASHINFER, TRITON_ATTN, "
            "FLEX_ATTENTION, TURBOQUANT, CUTLASS_MLA, FLASH_ATTN_MLA, FLASHMLA_SPARSE, "
            "FLASHINFER_MLA_SPARSE, TOKENSPEED_MLA");
}

TEST(Loading, UnknownArchitectureIsAnError) {
  nlohmann::json config = ReadProfileFile("gpt-oss-120b");
  config["architectures"] = {"BertForMaskedLM"};
  auto specs = BuildModelCacheSpecsFromJson(config, Plain("llama.json"));
  ASSERT_FALSE(specs.ok());
  EXPECT_NE(specs.status().message().find("architecture 'BertForMaskedLM' is not supported"),
            std::string::npos);
  EXPECT_NE(specs.status().message().find("'llama.json'"), std::string::npos);
}

TEST(Loading, UnknownModelAndMalformedFile) {
  auto missing = BuildModelCacheSpecs(Plain("no-such-model"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("kimi-k3"), std::string::npos);

  const auto path = std::filesystem::temp_directory_path() / "kvtopo_bad_config.json";
  std::ofstream(path) << "{\"architectures\": [";
  auto bad = BuildModelCacheSpecs(Plain(path.string()));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Loading, DraftWithoutModelNeedsADefault) {
  LaunchConfig c = Plain("kimi-linear-48b");
  c.speculative = *ParseSpeculativeConfig(R"({"method":"eagle3","num_speculative_tokens":2})");
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_FALSE(specs.ok());
  EXPECT_NE(specs.status().message().find("needs a 'model'"), std::string::npos);
  LaunchConfig m = Plain("kimi-k2.6", 8);
  m.speculative = *ParseSpeculativeConfig(R"({"method":"mtp","num_speculative_tokens":2})");
  auto no_mtp = BuildModelCacheSpecs(m);
  ASSERT_FALSE(no_mtp.ok());
  EXPECT_NE(no_mtp.status().message().find("num_nextn_predict_layers"), std::string::npos);
}

// The engine checks a draft model's heads against the draft's TP, which is the target's: a
// DFlash draft of 24 heads cannot run beside GLM-5.3-Flash (64 heads) at TP 16.
TEST(Loading, DraftHeadsSplitOverTheTargetsTensorParallelism) {
  nlohmann::json draft = ReadProfileFile("glm-5.3-flash-dflash2");
  draft["num_attention_heads"] = 24;
  draft.erase("kvtopo");
  const auto path = std::filesystem::temp_directory_path() / "kvtopo_draft_heads_test.json";
  std::ofstream(path) << draft.dump();
  LaunchConfig c = Plain("glm-5.3-flash", 16);
  c.speculative = *ParseSpeculativeConfig(
      R"({"method":"dflash","num_speculative_tokens":8,"model":")" + path.string() + R"("})");
  auto specs = BuildModelCacheSpecs(c);
  std::filesystem::remove(path);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_TRUE(HasCode(*specs, "tp-attention-heads")) << Codes(*specs);
  const auto it = std::find_if(specs->diagnostics.begin(), specs->diagnostics.end(),
                               [](const Diagnostic& d) { return d.code == "tp-attention-heads"; });
  ASSERT_NE(it, specs->diagnostics.end());
  EXPECT_EQ(it->message,
            "--tensor-parallel-size 16 does not divide the 24 attention heads of "
            "draft '" +
                path.string() +
                "', and the engine refuses such a launch; "
                "choose a tensor-parallel size that divides 24");
  // The profile's 32 heads and 8 KV heads split over 16 ranks (each KV head held twice).
  c.speculative->model = "glm-5.3-flash-dflash2";
  specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_FALSE(HasCode(*specs, "tp-attention-heads")) << Codes(*specs);
  EXPECT_FALSE(HasCode(*specs, "tp-kv-heads")) << Codes(*specs);
}

// A Sentence Transformers checkpoint (modules.json naming a Pooling module beside config.json)
// runs under the engine's pooling runner whatever its architecture (get_pooling_config).
TEST(Loading, SentenceTransformersPoolingModuleIsRefused) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kvtopo_st_pooling";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nlohmann::json config = {{"architectures", {"Qwen2ForCausalLM"}},
                           {"model_type", "qwen2"},
                           {"hidden_size", 1024},
                           {"num_hidden_layers", 4},
                           {"num_attention_heads", 16},
                           {"num_key_value_heads", 8},
                           {"max_position_embeddings", 4096},
                           {"torch_dtype", "bfloat16"}};
  std::ofstream(dir / "config.json") << config.dump();
  LaunchConfig c;
  c.model = dir.string();
  const auto message = [&](const std::string& modules) {
    std::ofstream(dir / "modules.json") << modules;
    Result<ModelCacheSpecs> specs = BuildModelCacheSpecs(c);
    return specs.ok() ? std::string("(accepted)") : specs.status().message();
  };
  const std::string file = (dir / "modules.json").string();
  const std::string pooling =
      message(R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
                  {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  c.runner = "generate";  // the engine then reads no modules.json
  const std::string generate = message("{}");
  c.runner = "auto";
  const std::string transformer_only =
      message(R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"}])");
  const std::string not_a_list = message("{}");
  const std::string untyped = message(R"([{"path": ""}])");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(pooling, "modules.json '" + file +
                         "' names a Sentence Transformers Pooling module, so the engine's default "
                         "runner for this checkpoint is pooling whatever its architecture "
                         "(get_pooling_config): it serves embeddings rather than generating "
                         "tokens; kvtopo plans generation launches (--runner generate plans the "
                         "model as a generator)");
  EXPECT_EQ(generate, "(accepted)");
  EXPECT_EQ(transformer_only, "(accepted)");
  EXPECT_EQ(not_a_list, "modules.json '" + file +
                            "' is not a list: the engine reads it as a list of modules, each with "
                            "a 'type', to find a Sentence Transformers pooling config "
                            "(get_pooling_config), and fails");
  EXPECT_EQ(untyped, "modules.json '" + file +
                         "' holds a module without a type: the engine reads it as a list of "
                         "modules, each with a 'type', to find a Sentence Transformers pooling "
                         "config (get_pooling_config), and fails");
}

TEST(Loading, ListProfiles) {
  auto profiles = ListProfiles();
  ASSERT_TRUE(profiles.ok()) << profiles.status().ToString();
  auto find = [&](std::string_view name) {
    return *std::find_if(profiles->begin(), profiles->end(),
                         [&](const ProfileInfo& p) { return p.name == name; });
  };
  EXPECT_EQ(find("kimi-k3").kind, "target");
  EXPECT_EQ(find("kimi-k3").num_layers, 93);
  EXPECT_EQ(find("kimi-k3-dspark").kind, "draft");
  EXPECT_EQ(find("glm-5.3-flash-dflash2").architecture, "DFlashDraftModel");
  EXPECT_EQ(find("backends").kind, "backends");
  EXPECT_EQ(profiles->size(), 12u);  // 11 models + the backend registry
}

TEST(Env, ShardDraftIsParsedOnceAsTheEngineReadsIt) {
  EXPECT_EQ(ParseShardDraftRequest("1"), ShardDraftRequest::kOne);
  EXPECT_EQ(ParseShardDraftRequest("TRUE"), ShardDraftRequest::kTruthy);
  EXPECT_EQ(ParseShardDraftRequest("Yes"), ShardDraftRequest::kTruthy);
  EXPECT_EQ(ParseShardDraftRequest("0"), ShardDraftRequest::kFalsy);
  EXPECT_EQ(ParseShardDraftRequest("No"), ShardDraftRequest::kFalsy);
  EXPECT_EQ(ParseShardDraftRequest("on"), ShardDraftRequest::kOther);
  EXPECT_EQ(ParseShardDraftRequest(""), ShardDraftRequest::kOther);
}

// Each method's placement row, over every parsed request: (causal EAGLE3 shards with the target,
// a non-causal one replicates unless asked; MTP replicates only on a falsy value; DSpark shards
// only on exactly "1"; DFlash always replicates).
TEST(Env, DraftPlacementFollowsTheMethodRow) {
  const ShardDraftRequest requests[] = {ShardDraftRequest::kUnset, ShardDraftRequest::kOne,
                                        ShardDraftRequest::kTruthy, ShardDraftRequest::kFalsy,
                                        ShardDraftRequest::kOther};
  auto row = [&](std::string_view method, bool causal) {
    std::string out;
    for (ShardDraftRequest r : requests) {
      out += internal::DraftIsReplicated(*internal::FindSpeculativeMethod(method), causal, r) ? 'R'
                                                                                              : 'S';
    }
    return out;
  };
  EXPECT_EQ(row("eagle3", true), "SSSSS");
  EXPECT_EQ(row("eagle3", false), "RSSRR");
  EXPECT_EQ(row("mtp", true), "SSSRS");
  EXPECT_EQ(row("dspark", false), "RSRRR");
  EXPECT_EQ(row("dflash", false), "RRRRR");
  EXPECT_EQ(internal::FindSpeculativeMethod("deepseek_mtp"), nullptr);  // aliases are parsed away
}

}  // namespace
}  // namespace kvtopo
