#include <gtest/gtest.h>

#include "kvtopo/backend.h"
#include "kvtopo/model.h"

namespace kvtopo {
namespace {

TEST(SpeculativeConfig, BackendNamesAreCaseInsensitive) {
  auto spec = ParseSpeculativeConfig(
      R"({"method":"EAGLE3","num_speculative_tokens":2,"draft_attention_backend":"triton_mla"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->method, "eagle3");
  EXPECT_EQ(spec->draft_attention_backend, "TRITON_MLA");
  EXPECT_FALSE(spec->draft_kv_cache_dtype.has_value());
}

TEST(SpeculativeConfig, AliasIsCopiedWhenTheDraftBackendIsUnset) {
  auto alias = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":2,"attention_backend":"FlashMLA"})");
  ASSERT_TRUE(alias.ok());
  EXPECT_EQ(alias->draft_attention_backend, "FLASHMLA");
  auto both = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":2,"attention_backend":"FLASHMLA",
          "draft_attention_backend":"TRITON_MLA"})");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->draft_attention_backend, "TRITON_MLA");
  auto alias_auto = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":2,"attention_backend":"auto"})");
  ASSERT_TRUE(alias_auto.ok());
  EXPECT_EQ(alias_auto->draft_attention_backend, "");
  auto draft_auto = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":2,"draft_attention_backend":"AUTO"})");
  ASSERT_TRUE(draft_auto.ok());
  EXPECT_EQ(draft_auto->draft_attention_backend, "auto");
}

TEST(SpeculativeConfig, NullDtypeInheritsAndWindowParses) {
  auto spec = ParseSpeculativeConfig(
      R"({"method":"dflash","model":"glm-5.3-flash-dflash2","num_speculative_tokens":15,
          "draft_kv_cache_dtype":null,"dflash_draft_window_size":4096})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model, "glm-5.3-flash-dflash2");
  EXPECT_FALSE(spec->draft_kv_cache_dtype.has_value());
  EXPECT_EQ(spec->dflash_draft_window_size, 4096);
}

TEST(SpeculativeConfig, UnknownKeysAndValuesListTheAcceptedOnes) {
  auto key = ParseSpeculativeConfig(R"({"method":"eagle3","num_speculative_tokens":2,"foo":1})");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find("unknown key 'foo'"), std::string::npos);
  EXPECT_NE(key.status().message().find("draft_kv_cache_dtype"), std::string::npos);
  EXPECT_NE(key.status().message().find("synthetic_acceptance_length, draft_sample_method)"),
            std::string::npos)
      << key.status().message();

  // The fork's own fields are accepted (not planned); tensor_parallel_size it keeps only to
  // refuse it.
  auto fork_keys = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":2,"moe_backend":null,)"
      R"("use_local_argmax_reduction":true,"draft_sample_method":"probabilistic"})");
  ASSERT_TRUE(fork_keys.ok()) << fork_keys.status().ToString();
  EXPECT_EQ(fork_keys->not_planned_keys,
            (std::vector<std::string>{"draft_sample_method", "use_local_argmax_reduction"}));
  // Keys of older releases: refused, as the fork's SpeculativeConfig refuses them, each saying
  // what it is (the first in the object's key order).
  for (const std::string key :
       {"acceptance_method", "disable_mqa_scorer", "posterior_threshold", "posterior_alpha",
        "disable_logprobs", "disable_by_batch_size", "speculative_token_tree"}) {
    auto older = ParseSpeculativeConfig(R"({"method":"eagle3","num_speculative_tokens":2,")" + key +
                                        R"(":1,"prompt_lookup_max":4})");
    ASSERT_FALSE(older.ok()) << key;
    EXPECT_EQ(older.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(older.status().message(),
              "--speculative-config: '" + key +
                  "' is a key of older releases the engine no longer has: it refuses it as it "
                  "builds the speculative config ('Unexpected keyword argument'); drop it");
  }
  EXPECT_FALSE(fork_keys->moe_backend.has_value());
  // moe_backend: the draft's MoE kernels, a MoEBackend name exactly (no normalizing).
  auto moe =
      ParseSpeculativeConfig(R"({"method":"mtp","num_speculative_tokens":2,"moe_backend":"b12x"})");
  ASSERT_TRUE(moe.ok()) << moe.status().ToString();
  EXPECT_EQ(moe->moe_backend, "b12x");
  EXPECT_EQ(
      ParseSpeculativeConfig(R"({"method":"mtp","num_speculative_tokens":2,"moe_backend":"B12X"})")
          .status()
          .message(),
      "--speculative-config: 'moe_backend' must be one of the engine's MoE backends (auto, "
      "b12x, triton, deep_gemm, deep_gemm_mega_moe, cutlass, flashinfer_trtllm, "
      "flashinfer_cutlass, flashinfer_cutedsl, marlin, humming, triton_unfused, aiter, "
      "emulation) or null, got \"B12X\"");
  EXPECT_EQ(ParseSpeculativeConfig(
                R"({"method":"eagle3","num_speculative_tokens":2,"tensor_parallel_size":1})")
                .status()
                .message(),
            "--speculative-config: 'tensor_parallel_size' is not a valid argument in the "
            "speculative config (the engine refuses it); pass 'draft_tensor_parallel_size' "
            "instead");

  // The n-gram window: integers of at least 1, the minimum at most the maximum.
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"ngram","num_speculative_tokens":3,)"
                                   R"("prompt_lookup_min":5,"prompt_lookup_max":3})")
                .status()
                .message(),
            "--speculative-config: 'prompt_lookup_min' 5 must be at most 'prompt_lookup_max' 3, "
            "as the engine requires");
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"ngram","num_speculative_tokens":3,)"
                                   R"("prompt_lookup_max":0})")
                .status()
                .message(),
            "--speculative-config: 'prompt_lookup_max' must be an integer in [1, 2147483647] or "
            "null, got 0");
  EXPECT_TRUE(ParseSpeculativeConfig(R"({"method":"ngram","num_speculative_tokens":3,)"
                                     R"("prompt_lookup_min":2,"prompt_lookup_max":4})")
                  .ok());
  // Suffix decoding without a count takes suffix_decoding_max_tree_depth (24 by default), which
  // must be at least 1 (SpeculativeConfig._validate_suffix_decoding).
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"suffix"})")->num_speculative_tokens, 24);
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"suffix","suffix_decoding_max_tree_depth":8})")
                ->num_speculative_tokens,
            8);
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"suffix","num_speculative_tokens":4,)"
                                   R"("suffix_decoding_max_tree_depth":8})")
                ->num_speculative_tokens,
            4);
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"suffix","suffix_decoding_max_tree_depth":0})")
                .status()
                .message(),
            "--speculative-config: 'suffix_decoding_max_tree_depth' must be an integer in [1, "
            "1024], got 0");

  auto method = ParseSpeculativeConfig(R"({"method":"lookahead","num_speculative_tokens":2})");
  ASSERT_FALSE(method.ok());
  EXPECT_NE(method.status().message().find("'lookahead' is not accepted"), std::string::npos);
  EXPECT_NE(method.status().message().find("dspark"), std::string::npos);

  auto backend = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":2,"draft_attention_backend":"XFORMERS"})");
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("B12X_MLA"), std::string::npos);

  auto dtype = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":2,"draft_kv_cache_dtype":"fp7"})");
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("fp8"), std::string::npos);

  EXPECT_FALSE(ParseSpeculativeConfig(R"({"method":"eagle3","num_speculative_tokens":0})").ok());
  EXPECT_FALSE(ParseSpeculativeConfig(R"({"method":"eagle3"})").ok());
  EXPECT_FALSE(ParseSpeculativeConfig(
                   R"({"method":"dflash","num_speculative_tokens":2,"dflash_draft_window_size":0})")
                   .ok());
}

// Without a method the engine takes ngram for a model named so, else draft_model (whose method
// detection may change it), and refuses a config naming neither.
TEST(SpeculativeConfig, MethodDefaultsAsTheEngine) {
  auto method = [](const char* text) {
    Result<SpeculativeConfig> spec = ParseSpeculativeConfig(text);
    return spec.ok() ? spec->method : std::string(spec.status().message());
  };
  EXPECT_EQ(method(R"({"model": "ngram", "num_speculative_tokens": 3})"), "ngram");
  EXPECT_EQ(method(R"({"model": "[ngram]", "num_speculative_tokens": 3})"), "ngram");
  EXPECT_EQ(method(R"({"model": "org/draft", "num_speculative_tokens": 3, "method": null})"),
            "draft_model");
  EXPECT_EQ(method(R"({"num_speculative_tokens": 3})"),
            "--speculative-config: 'method' is not set, nor is 'model': the engine then takes a "
            "draft model and refuses the launch without one ('num_speculative_tokens was "
            "provided but without speculative model'); set a method (one of: eagle, eagle3, mtp, "
            "dspark, dflash, draft_model, ngram, ngram_gpu, suffix, medusa, mlp_speculator, "
            "extract_hidden_states, custom_class, or a per-model MTP name such as deepseek_mtp) "
            "or a draft "
            "'model'");
  EXPECT_EQ(method(R"({"method": 3, "num_speculative_tokens": 3})"),
            "--speculative-config: 'method' must be one of: eagle, eagle3, mtp, dspark, dflash, "
            "draft_model, ngram, ngram_gpu, suffix, medusa, mlp_speculator, "
            "extract_hidden_states, custom_class (or a per-model MTP name such as deepseek_mtp)");
  EXPECT_EQ(method(R"({"method": "custom_class", "num_speculative_tokens": 3})"),
            "--speculative-config: 'model' is required for method 'custom_class': it names the "
            "proposer's module path (e.g. 'my_module.MyProposer'), and the engine refuses the "
            "method without it");
}

TEST(SpeculativeConfig, MalformedJsonIsAOneLineError) {
  auto bad = ParseSpeculativeConfig(R"({"method": "eagle3",)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
  EXPECT_EQ(bad.status().message().rfind("--speculative-config is not valid JSON", 0), 0u);
  EXPECT_FALSE(ParseSpeculativeConfig("[1, 2]").ok());
}

TEST(SpeculativeConfig, LookaheadPerMethod) {
  LaunchConfig c = DefaultLaunchConfig();
  auto dspark = BuildModelCacheSpecs(c);
  ASSERT_TRUE(dspark.ok());
  EXPECT_EQ(dspark->num_lookahead_tokens, 7);
  c.speculative = *ParseSpeculativeConfig(R"({"method":"ngram","num_speculative_tokens":5})");
  auto ngram = BuildModelCacheSpecs(c);
  ASSERT_TRUE(ngram.ok());
  EXPECT_EQ(ngram->num_lookahead_tokens, 0);
  EXPECT_EQ(ngram->num_speculative_tokens, 5);
}

TEST(BackendRegistry, LookupAndCapabilities) {
  auto b12x = FindBackend("b12x_mla");
  ASSERT_TRUE(b12x.ok()) << b12x.status().ToString();
  EXPECT_EQ(b12x->name, "B12X_MLA");
  EXPECT_TRUE(b12x->SupportsHeadSize(576));
  EXPECT_FALSE(b12x->SupportsHeadSize(512));
  EXPECT_TRUE(b12x->SupportsBlockSize(944));
  EXPECT_FALSE(b12x->SupportsBlockSize(936));
  EXPECT_TRUE(b12x->owns_dcp_collectives);
  EXPECT_EQ(b12x->dcp_gathered_head_multiple, 8);
  EXPECT_EQ(b12x->dcp_max_local_kv_tokens, 1'048'576);
  EXPECT_FALSE(b12x->indexes_kv_by_block_stride);

  auto flashmla = FindBackend("FLASHMLA");
  ASSERT_TRUE(flashmla.ok());
  EXPECT_TRUE(flashmla->SupportsBlockSize(128));
  EXPECT_FALSE(flashmla->SupportsBlockSize(32));
  EXPECT_EQ(flashmla->MinKernelBlockSize(), 64);

  auto fa = FindBackend("flash_attn");
  ASSERT_TRUE(fa.ok());
  EXPECT_TRUE(fa->local_dcp_draft_contract);
  EXPECT_TRUE(fa->indexes_kv_by_block_stride);

  auto missing = FindBackend("XFORMERS");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("TRITON_ATTN"), std::string::npos);

  auto all = ListBackends();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 16u);
  auto diffkv = FindBackend("FLASH_ATTN_DIFFKV");
  ASSERT_TRUE(diffkv.ok());
  EXPECT_FALSE(diffkv->default_for.has_value());
  EXPECT_TRUE(diffkv->returns_lse);
  auto tq = FindBackend("turboquant");
  ASSERT_TRUE(tq.ok());
  EXPECT_TRUE(tq->stores_turboquant);
  EXPECT_TRUE(tq->SupportsHeadSize(72));  // any head size
  EXPECT_FALSE(tq->returns_lse);
  EXPECT_FALSE(fa->stores_turboquant);
}

// Head sizes as the engine's supports_head_size states them at 28be48fa9: FlashAttention any
// multiple of 8 up to 256 (512 where FlashAttention 4 is supported), Triton attention any size
// from 32, FlashInfer a list.
TEST(BackendRegistry, HeadSizeRules) {
  auto fa = FindBackend("FLASH_ATTN");
  ASSERT_TRUE(fa.ok());
  EXPECT_TRUE(fa->SupportsHeadSize(80));
  EXPECT_TRUE(fa->SupportsHeadSize(8));
  EXPECT_TRUE(fa->SupportsHeadSize(256));
  EXPECT_FALSE(fa->SupportsHeadSize(84));
  EXPECT_FALSE(fa->SupportsHeadSize(264));
  EXPECT_FALSE(fa->SupportsHeadSize(512));
  EXPECT_EQ(fa->HeadSizesText(),
            "multiples of 8 up to 256 (512 where FlashAttention 4 is supported)");
  EXPECT_EQ(fa->gpu_dependent_max_head_size, 512);
  EXPECT_EQ(FindBackend("FLASH_ATTN_DIFFKV")->gpu_dependent_max_head_size, 512);
  auto triton = FindBackend("TRITON_ATTN");
  ASSERT_TRUE(triton.ok());
  EXPECT_TRUE(triton->SupportsHeadSize(512));
  EXPECT_TRUE(triton->SupportsHeadSize(33));
  EXPECT_FALSE(triton->SupportsHeadSize(16));
  EXPECT_EQ(triton->HeadSizesText(), "at least 32");
  auto flashinfer = FindBackend("FLASHINFER");
  ASSERT_TRUE(flashinfer.ok());
  EXPECT_FALSE(flashinfer->SupportsHeadSize(96));
  EXPECT_EQ(flashinfer->HeadSizesText(), "64, 128, 256");
  auto tq = FindBackend("TURBOQUANT");
  ASSERT_TRUE(tq.ok());
  EXPECT_EQ(tq->HeadSizesText(), "any");
}

// The engine's other CUDA MLA backends at 28be48fa9 (mla/cutlass_mla.py, flashattn_mla.py,
// flashmla_sparse.py, flashinfer_mla_sparse.py, tokenspeed_mla.py), and the head sizes the MLA
// backends inherit (MLACommonBackend: 320 and 576; Triton MLA any).
TEST(BackendRegistry, EngineMlaBackends) {
  auto cutlass = FindBackend("cutlass_mla");
  ASSERT_TRUE(cutlass.ok());
  EXPECT_EQ(cutlass->kernel_block_sizes, std::vector<int64_t>{128});
  EXPECT_EQ(cutlass->preferred_block_size, 128);
  EXPECT_TRUE(cutlass->returns_lse);
  EXPECT_TRUE(cutlass->mla_common_builder);
  EXPECT_EQ(cutlass->cudagraph_support, CudagraphSupport::kUniformSingleTokenDecode);
  EXPECT_EQ(cutlass->HeadSizesText(), "576");
  EXPECT_TRUE(cutlass->AcceptsKvCacheDtype(KvCacheDtype::kFp8));

  auto fa = FindBackend("FLASH_ATTN_MLA");
  ASSERT_TRUE(fa.ok());
  EXPECT_EQ(fa->kernel_block_multiple, 16);
  EXPECT_TRUE(fa->returns_lse);
  EXPECT_EQ(fa->cudagraph_support, CudagraphSupport::kUniformBatch);
  EXPECT_FALSE(fa->AcceptsKvCacheDtype(KvCacheDtype::kFp8));
  EXPECT_TRUE(fa->AcceptsKvCacheDtype(KvCacheDtype::kAuto));

  auto sparse = FindBackend("FLASHMLA_SPARSE");
  ASSERT_TRUE(sparse.ok());
  EXPECT_TRUE(sparse->sparse);
  EXPECT_FALSE(sparse->returns_lse);
  EXPECT_FALSE(sparse->mla_common_builder);
  EXPECT_EQ(sparse->preferred_block_size, 64);
  EXPECT_EQ(sparse->StoredKvCacheDtype(KvCacheDtype::kFp8), KvCacheDtype::kFp8DsMla);
  EXPECT_EQ(sparse->StoredKvCacheDtype(KvCacheDtype::kAuto), KvCacheDtype::kAuto);
  EXPECT_FALSE(sparse->AcceptsKvCacheDtype(KvCacheDtype::kFp8E4m3));
  EXPECT_TRUE(sparse->Computes(ElementType::kBfloat16));
  EXPECT_FALSE(sparse->Computes(ElementType::kFloat16));

  auto fi_sparse = FindBackend("FLASHINFER_MLA_SPARSE");
  ASSERT_TRUE(fi_sparse.ok());
  EXPECT_TRUE(fi_sparse->sparse);
  EXPECT_EQ(fi_sparse->preferred_block_size, 32);
  EXPECT_EQ(fi_sparse->StoredKvCacheDtype(KvCacheDtype::kFp8), KvCacheDtype::kFp8);

  // The text config's MLA dimensions each takes (supports_combination).
  using Dims = std::vector<std::pair<std::string, std::vector<int64_t>>>;
  EXPECT_EQ(fi_sparse->config_dims, (Dims{{"qk_nope_head_dim", {128, 192}}}));
  EXPECT_EQ(FindBackend("FLASHINFER_MLA")->config_dims,
            (Dims{{"qk_nope_head_dim", {64, 128, 192}}}));
  EXPECT_EQ(FindBackend("TRITON_MLA")->config_dims, Dims{});
  EXPECT_EQ(FindBackend("CUTLASS_MLA")->max_decode_heads, 128);
  // Batch invariance (supports_batch_invariance) and multimodal prefix LMs (supports_mm_prefix).
  Result<std::vector<BackendCaps>> all = ListBackends();
  ASSERT_TRUE(all.ok());
  std::vector<std::string> invariant, prefix, drops_caching, cross;
  for (const BackendCaps& be : *all) {
    if (be.supports_batch_invariance) invariant.push_back(be.name);
    if (be.supports_mm_prefix) prefix.push_back(be.name);
    if (be.batch_invariant_drops_prefix_caching) drops_caching.push_back(be.name);
    if (be.supports_cross_attention) cross.push_back(be.name);
  }
  EXPECT_EQ(invariant,
            (std::vector<std::string>{"TRITON_MLA", "FLASH_ATTN", "FLASH_ATTN_DIFFKV",
                                      "TRITON_ATTN", "FLEX_ATTENTION", "FLASH_ATTN_MLA"}));
  EXPECT_EQ(prefix, (std::vector<std::string>{"TRITON_ATTN", "FLEX_ATTENTION"}));
  EXPECT_EQ(drops_caching, (std::vector<std::string>{"TRITON_MLA", "FLASHINFER"}));
  EXPECT_EQ(cross, (std::vector<std::string>{"FLASH_ATTN", "FLASH_ATTN_DIFFKV", "TRITON_ATTN"}));
  // Layer features the impls refuse (NotImplementedError) or take and never apply.
  std::vector<std::string> refuse_alibi, refuse_cap, refuse_sharing, ignore_alibi, ignore_cap;
  for (const BackendCaps& be : *all) {
    if (be.refuses_alibi) refuse_alibi.push_back(be.name);
    if (be.refuses_logits_soft_cap) refuse_cap.push_back(be.name);
    if (be.refuses_kv_sharing) refuse_sharing.push_back(be.name);
    if (be.ignores_alibi) ignore_alibi.push_back(be.name);
    if (be.ignores_logits_soft_cap) ignore_cap.push_back(be.name);
  }
  const std::vector<std::string> refusing = {
      "B12X_MLA_SPARSE", "TRITON_MLA",  "FLASHMLA",       "FLASHINFER_MLA",
      "FLEX_ATTENTION",  "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHINFER_MLA_SPARSE",
      "TOKENSPEED_MLA"};
  EXPECT_EQ(refuse_alibi, refusing);
  EXPECT_EQ(refuse_cap, refusing);
  EXPECT_EQ(refuse_sharing, std::vector<std::string>{"FLEX_ATTENTION"});
  EXPECT_EQ(ignore_alibi,
            (std::vector<std::string>{"FLASHINFER", "TURBOQUANT", "FLASHMLA_SPARSE"}));
  EXPECT_EQ(ignore_cap, (std::vector<std::string>{"TURBOQUANT", "FLASHMLA_SPARSE"}));
  std::vector<std::string> one_window;
  for (const BackendCaps& be : *all) {
    if (be.one_window_per_group) one_window.push_back(be.name);
  }
  EXPECT_EQ(one_window, std::vector<std::string>{"FLASHINFER"});
  EXPECT_EQ(FindBackend("FLASH_ATTN")->gpu_dependence, GpuDependence::kFlashAttention3);
  EXPECT_EQ(FindBackend("FLASH_ATTN_DIFFKV")->gpu_dependence, GpuDependence::kFlashAttention3);
  EXPECT_EQ(FindBackend("FLASHINFER")->gpu_dependence, GpuDependence::kTrtllmAttention);
  EXPECT_EQ(FindBackend("TRITON_ATTN")->gpu_dependence, GpuDependence::kNone);
  EXPECT_EQ(FindBackend("TRITON_ATTN")->supports_per_head_quant_scales, false);
  EXPECT_EQ(FindBackend("FLASH_ATTN")->supports_per_head_quant_scales, std::nullopt);
  EXPECT_EQ(FindBackend("TRITON_MLA")->max_decode_heads, 0);

  auto tokenspeed = FindBackend("TOKENSPEED_MLA");
  ASSERT_TRUE(tokenspeed.ok());
  EXPECT_EQ(tokenspeed->config_dims,
            (Dims{{"qk_nope_head_dim", {128}}, {"qk_rope_head_dim", {64}}, {"v_head_dim", {128}}}));
  EXPECT_FALSE(tokenspeed->returns_lse);
  EXPECT_TRUE(tokenspeed->mla_common_builder);
  EXPECT_FALSE(tokenspeed->AcceptsKvCacheDtype(KvCacheDtype::kAuto));
  EXPECT_TRUE(tokenspeed->AcceptsKvCacheDtype(KvCacheDtype::kFp8E4m3));

  for (const char* name : {"FLASHMLA", "FLASHINFER_MLA", "FLASH_ATTN_MLA", "TOKENSPEED_MLA"}) {
    auto be = FindBackend(name);
    ASSERT_TRUE(be.ok()) << name;
    EXPECT_EQ(be->HeadSizesText(), "320, 576") << name;
  }
  auto triton = FindBackend("TRITON_MLA");
  ASSERT_TRUE(triton.ok());
  EXPECT_EQ(triton->HeadSizesText(), "any");
  // No backend at 28be48fa9 advertises speculative decoding with an interleave above 1; the
  // seeds' fork adds it to B12X and FlashAttention.
  for (const char* name : {"CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA_SPARSE",
                           "FLASHINFER_MLA_SPARSE", "TOKENSPEED_MLA"}) {
    auto be = FindBackend(name);
    ASSERT_TRUE(be.ok()) << name;
    EXPECT_FALSE(be->spec_decode_with_interleave) << name;
    EXPECT_FALSE(be->supports_non_causal) << name;
  }
  auto triton_attn = FindBackend("TRITON_ATTN");
  ASSERT_TRUE(triton_attn.ok());
  EXPECT_TRUE(triton_attn->Computes(ElementType::kFloat32));
  // Attention sinks: Triton attention always, TurboQuant never, FlashAttention by the GPU.
  EXPECT_EQ(triton_attn->supports_sinks, true);
  EXPECT_EQ(FindBackend("TURBOQUANT")->supports_sinks, false);
  EXPECT_EQ(FindBackend("FLASH_ATTN")->supports_sinks, std::nullopt);
  EXPECT_EQ(FindBackend("FLASHINFER")->supports_sinks, std::nullopt);
  EXPECT_FALSE(fa->Computes(ElementType::kFloat32));
}

}  // namespace
}  // namespace kvtopo
