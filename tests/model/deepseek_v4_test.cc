// DeepSeek-V4 (DeepseekV4ForCausalLM): the caches its model code builds, planned in layer tuples
// as the engine plans them (the fork at 28be48fa9), over a config shaped as DeepSeek-V4-Flash's
// (fuzz/corpus/config_plan/deepseek-v4-flash-shaped.json).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvtopo/block_table.h"
#include "kvtopo/launch.h"
#include "kvtopo/plan.h"
#include "kvtopo/simulate.h"
#include "kvtopo/verify.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::CorpusConfig;
using testing_configs::DiagnosticMessage;
using testing_configs::PlanWith;

LaunchConfig Flash(int64_t max_len, int64_t memory) {
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 2;
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  c.cache.max_model_len = max_len;
  c.cache.max_num_batched_tokens = 8192;
  c.cache.async_scheduling = true;
  c.kv_cache_memory_bytes = memory;
  return c;
}

TEST(DeepseekV4, FlashPlansInLayerTuples) {
  Result<Plan> plan =
      PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), Flash(30000, int64_t{10} << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.attention_backend, "V4_FLASHMLA_SPARSE");
  EXPECT_EQ(plan->model.quantization, "deepseek_v4_fp8");
  std::vector<std::string> groups;
  for (const PlannedGroup& g : plan->groups) {
    groups.push_back(fmt::format("{} {} x{} {}", SpecKindName(g.spec), g.spec.block_size,
                                 g.layers.size(), fmt::join(g.backends, "+")));
  }
  EXPECT_EQ(groups, (std::vector<std::string>{"mla 256 x62 DEEPSEEK_V4_INDEXER+V4_FLASHMLA_SPARSE",
                                              "sliding_window_mla 64 x22 DEEPSEEK_SPARSE_SWA",
                                              "sliding_window_mla 64 x21 DEEPSEEK_SPARSE_SWA",
                                              "sliding_window_mla 4 x42 CompressorBackend",
                                              "sliding_window_mla 8 x20 CompressorBackend"}));
  EXPECT_EQ(plan->groups[0].layer_specs[1].name, "model.layers.2.attn");
  EXPECT_EQ(plan->groups[0].layer_specs[1].cache_dtype, KvCacheDtype::kFp8DsMla);
  EXPECT_EQ(plan->groups[0].geometry.kernel_block_size(), 256);
  EXPECT_EQ(plan->pool.bytes_per_block, 1051776);
  EXPECT_EQ(plan->pool.num_blocks, 10208);
  // The engine's own code on these caches: 50,743 tokens, 1.69x at 30,000 tokens.
  EXPECT_EQ(plan->capacity.max_tokens, 50743);
  EXPECT_EQ(plan->hash_block_size, 4);
  EXPECT_TRUE(plan->cache.enable_prefix_caching.value_or(false));
  // Its 256 routed experts take expert parallelism, as its launches run it; its layers are none
  // of the engine's K/V Attention, the one class that reads --kv-cache-dtype-skip-layers.
  LaunchConfig ep = Flash(30000, int64_t{10} << 30);
  ep.enable_expert_parallel = true;
  ep.cache.kv_cache_dtype_skip_layers = {"0", "sliding_window"};
  plan = PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), ep);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->capacity.max_tokens, 50743);
  EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-dtype-skip-layers-unmatched"),
            "--kv-cache-dtype-skip-layers: 0, sliding_window name no K/V attention layer of "
            "'config.json' (DeepseekV4ForCausalLM), whose model code builds every cache itself "
            "(fp8 rows, float32 compressor states) whatever the list says; they keep nothing");
}

// vllm-project/vllm#44376: at 30,000 tokens it needs 6.66 GiB (7,152,076,800 B), and the
// 5.44 GiB its GPUs held fit 13,528 tokens.
// A compressed layer's slots from its planned group's table: layer 2's MLA cache keeps one row
// per 4 positions (64 a 256-token block), layer 3's one per 128.
TEST(DeepseekV4, CompressedLayersSlotsFromTheirGroupsTable) {
  Result<Plan> plan =
      PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), Flash(30000, int64_t{10} << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const PlannedGroup& g = plan->groups[0];
  std::map<std::string, int64_t> ratios;
  for (const LayerSpec& l : g.layer_specs) ratios[l.name] = l.compress_ratio;
  EXPECT_EQ(ratios.at("model.layers.2.attn"), 4);
  EXPECT_EQ(ratios.at("model.layers.3.attn"), 128);
  BlockTable table(g.geometry, 2);
  const std::vector<BlockId> blocks = {BlockId{5}, BlockId{7}};
  ASSERT_TRUE(table.Append(1, blocks).ok());
  const std::vector<TokenPos> positions = {TokenPos{255}, TokenPos{259}, TokenPos{511}};
  const std::vector<int64_t> starts = {0, 0, 3};  // request 1 on row 1
  std::vector<int64_t> out(3);
  SlotLayout layout = g.geometry.SlotLayoutFor(Rank{0});
  layout.compress_ratio = ratios.at("model.layers.2.attn");
  ASSERT_TRUE(ComputeBatchSlotMapping(layout, table, starts, positions, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{5 * 64 + 63, 7 * 64 + 0, 7 * 64 + 63}));
  layout.compress_ratio = ratios.at("model.layers.3.attn");
  ASSERT_TRUE(ComputeBatchSlotMapping(layout, table, starts, positions, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{5 * 2 + 1, -1, 7 * 2 + 1}));
}

TEST(DeepseekV4, FlashMemoryCheck) {
  Result<Plan> plan = PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), Flash(30000, 5841563904));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->max_model_len_that_fits, 13528);
  EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-memory"),
            "one request of --max-model-len 30000 needs 7152076800 B of KV cache per rank, more "
            "than the 5841563904 B the pool holds; the largest --max-model-len that fits is "
            "13528; raise --kv-cache-memory or lower --max-model-len");
}

TEST(DeepseekV4, MtpLayersKeepASlidingWindow) {
  LaunchConfig c = Flash(131072, int64_t{40} << 30);
  c.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 2};
  Result<Plan> plan = PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.num_speculative_tokens, 2);
  const PlannedGroup& g = plan->groups[2];
  ASSERT_EQ(g.layers.size(), 22u);
  EXPECT_EQ(g.layers.back(), "model.layers.43.attn.swa_cache");
  EXPECT_EQ(g.layer_specs.back().role, Role::kDraft);
  EXPECT_EQ(plan->capacity.max_tokens, 831235);
  // The group holding the last MTP layer is the engine's EAGLE group, and its twin (one
  // attention type to the coordinator) drops the last hit block too.
  std::vector<bool> eagle;
  for (const PlannedGroup& group : plan->groups) eagle.push_back(group.spec.volatile_last_block);
  EXPECT_EQ(eagle, (std::vector<bool>{false, true, true, false, false}));
  // Their hits align to 256 tokens, and the engine caches 2 of each 4 window blocks, not the
  // one after the boundary an EAGLE hit reads: no prefix-cache hit at all.
  EXPECT_EQ(DiagnosticMessage(*plan, "prefix-cache-eagle-window"),
            "the engine's prefix cache finds no hit for this launch: its hits align to 256 "
            "tokens, of which it caches only the blocks before each boundary that a sliding "
            "window's hit reads (group 1 ('model.layers.0.attn.swa_cache', a 128-token window "
            "over 64-token blocks: 2 of each 4 blocks); group 2 ('model.layers.1.attn.swa_cache', "
            "a 128-token window over 64-token blocks: 2 of each 4 blocks); "
            "SlidingWindowManager._cache_block_mask), and an EAGLE group's hit also reads the "
            "block after the boundary, which it leaves out; every request prefills in full. The "
            "engine's fix (vllm-project/vllm#44082) caches that block, as kvtopo's runtime does");
  // Without MTP, at the same length: 832,528, and the windows' hits stand.
  c.speculative.reset();
  plan = PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 832528);
  EXPECT_FALSE(plan->groups[2].spec.volatile_last_block);
  EXPECT_EQ(DiagnosticMessage(*plan, "prefix-cache-eagle-window"), "");
}

// Its MTP launches meet the speculative and CUDA graph rules of every other target.
TEST(DeepseekV4, MtpMeetsTheLaunchRulesOfEveryTarget) {
  const nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  LaunchConfig c = Flash(30000, int64_t{10} << 30);
  c.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 3};
  c.compilation.max_capture_size = 2;
  Result<Plan> plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [cudagraph-capture-sizes] the largest CUDA graph capture size is 2 and "
            "speculative decoding's decode graphs need a multiple of 4 (1 + "
            "num_speculative_tokens): the engine refuses the launch once the weights are loaded "
            "('No valid cudagraph sizes after rounding to multiple of 4'); raise "
            "--max-cudagraph-capture-size or --cudagraph-capture-sizes to 4 or more, or lower "
            "num_speculative_tokens");
  // The sliding-window, MLA and indexer backends replay uniform batches: full decode graphs.
  c.compilation.max_capture_size = 512;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.cudagraph_mode, "FULL_AND_PIECEWISE, -O2's default");
  c.kv_sharing_fast_prefill = true;
  c.speculative->draft_tensor_parallel_size = 3;
  c.speculative->max_model_len = 40000;
  c.enable_lora = true;
  c.cache.max_num_batched_tokens = 256;
  c.cache.max_num_seqs = 128;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(
      plan->ErrorLines(),
      "\n  error [lora-model] --enable-lora with 'config.json' (DeepseekV4ForCausalLM), whose "
      "engine class DeepseekV4ForCausalLM lacks the SupportsLoRA interface: the engine "
      "fails once the weights are loaded ('DeepseekV4ForCausalLM does not support LoRA "
      "yet.'); drop --enable-lora"
      "\n  error [speculative-max-model-len] --speculative-config 'max_model_len' 40000 "
      "exceeds the target's --max-model-len 30000: the engine refuses it "
      "('speculative_max_model_len cannot be larger than target_max_model_len'); lower it "
      "to at most 30000"
      "\n  error [speculative-draft-tp] --speculative-config 'draft_tensor_parallel_size' 3 "
      "must be 1 or --tensor-parallel-size 2; the engine refuses any other value"
      "\n  error [kv-sharing-fast-prefill] --kv-sharing-fast-prefill with speculative "
      "method 'mtp': the engine refuses the pair ('Fast prefill optimization for KV sharing "
      "is not compatible with EAGLE', whose draft needs correct logits for every prompt "
      "token); drop --kv-sharing-fast-prefill or choose another method"
      "\n  error [lora-speculative-batched-tokens] --enable-lora with a speculative config "
      "needs --max-num-batched-tokens of at least --max-num-seqs 128 x "
      "(num_speculative_tokens 3 + 1) = 512, got 256: the engine refuses the launch "
      "('Consider increasing max_num_batched_tokens or decreasing "
      "num_speculative_tokens'); raise --max-num-batched-tokens, or lower --max-num-seqs "
      "or num_speculative_tokens");
  c = Flash(30000, int64_t{10} << 30);
  c.speculative =
      SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 3, .parallel_drafting = true};
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-parallel-drafting-token"),
            "--speculative-config method 'mtp' with 'parallel_drafting': draft 'config.json "
            "(mtp)' ('config.json') states none of pard_token, ptd_token_id and "
            "dflash_config.mask_token_id, and the engine raises 'For parallel drafting, the "
            "draft model config must have `pard_token`, `ptd_token_id`, or "
            "`dflash_config.mask_token_id` specified' as it starts; choose a draft trained for "
            "parallel drafting or drop 'parallel_drafting'");
}

// The MegaMoE experts (moe_backend deep_gemm_mega_moe) raise as the model is built without
// expert parallelism, for routing other than sqrtsoftplus or experts other than fp4, and assert
// that the expert-parallel group divides the routed experts; once the weights are loaded they
// raise off compute capability 10.x and for widths that are not multiples of 128. The MTP layers
// take the speculative config's moe_backend when given, and are built after the target's
// weights load. The fused experts assert that TP divides the routed experts.
TEST(DeepseekV4, MegaMoeMeetsItsKernelsRules) {
  // The V1 model runner's draft parallel config copies no expert parallelism.
  const std::string kV1DraftMegaMoe =
      " the engine's V1 model runner builds them under the draft's parallel config, which has no "
      "expert parallelism whatever --enable-expert-parallel says (create_draft_parallel_config), "
      "so they raise as they are built, once the target's weights are loaded ('DeepSeek V4 "
      "MegaMoE currently requires expert parallel.'); give the speculative config a fused "
      "moe_backend, or set VLLM_USE_V2_MODEL_RUNNER=1, whose runner builds them under the "
      "target's config";
  nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  LaunchConfig c = Flash(30000, int64_t{10} << 30);
  c.moe_backend = "deep_gemm_mega_moe";
  c.moe_backend_from = "--moe-backend";
  Result<Plan> plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-backend] --moe-backend deep_gemm_mega_moe with 'config.json' "
            "(DeepseekV4ForCausalLM) needs expert parallelism: the engine raises as it builds "
            "the model ('DeepSeek V4 MegaMoE currently requires expert parallel.'); add "
            "--enable-expert-parallel or pick another MoE backend");
  // The corpus config states neither scoring_func nor expert_dtype: the engine's defaults
  // (sqrtsoftplus, fp4) pass, and the cache is the same.
  c.enable_expert_parallel = true;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->capacity.max_tokens, 50743);
  flash["scoring_func"] = "sigmoid";
  flash["expert_dtype"] = "fp8";
  flash["moe_intermediate_size"] = 2000;
  c.data_parallel_size = 3;
  c.cache.device_capability = DeviceCapability{9, 0};
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-backend] --moe-backend deep_gemm_mega_moe with 'config.json' "
            "(DeepseekV4ForCausalLM), whose config states scoring_func sigmoid: the engine "
            "raises as it builds the model ('DeepSeek V4 MegaMoE currently supports "
            "sqrtsoftplus routing only.'); pick another MoE backend"
            "\n  error [moe-backend] --moe-backend deep_gemm_mega_moe with 'config.json' "
            "(DeepseekV4ForCausalLM), whose config states expert_dtype fp8: the engine raises as "
            "it builds the model ('DeepSeek V4 MegaMoE only supports fp4 experts'); pick another "
            "MoE backend"
            "\n  error [moe-backend] --moe-backend deep_gemm_mega_moe with 'config.json' "
            "(DeepseekV4ForCausalLM): its 256 routed experts do not split evenly over the "
            "expert-parallel group's 6 ranks (--data-parallel-size 3 x "
            "--prefill-context-parallel-size 1 x --tensor-parallel-size 2), which the engine "
            "asserts as it builds the model; choose sizes whose product divides 256"
            "\n  error [moe-backend] --moe-backend deep_gemm_mega_moe with 'config.json' "
            "(DeepseekV4ForCausalLM) on compute capability 9.0 (--device-capability): the engine "
            "raises once the weights are loaded ('DeepGEMM MegaMoE requires SM100 GPUs.'); pick "
            "another MoE backend"
            "\n  error [moe-backend] --moe-backend deep_gemm_mega_moe with 'config.json' "
            "(DeepseekV4ForCausalLM), whose moe_intermediate_size is 2000: the engine raises "
            "once the weights are loaded ('DeepGEMM MegaMoE requires hidden and intermediate "
            "sizes to be multiples of 128.'); pick another MoE backend");
  // The MTP layers take the speculative config's moe_backend; the target's fused experts assert
  // that TP divides the routed experts.
  flash = CorpusConfig("deepseek-v4-flash-shaped");
  flash["n_routed_experts"] = 255;
  c = Flash(30000, int64_t{10} << 30);
  c.speculative = SpeculativeConfig{
      .method = "mtp", .num_speculative_tokens = 2, .moe_backend = "deep_gemm_mega_moe"};
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-experts-per-rank] --tensor-parallel-size 2 does not divide the 255 "
            "routed experts of 'config.json' (DeepseekV4ForCausalLM), which the engine's fused "
            "experts assert as it builds the model; choose a tensor-parallel size that divides "
            "255"
            "\n  error [moe-backend] --speculative-config's moe_backend deep_gemm_mega_moe with "
            "the MTP layers of 'config.json' (DeepseekV4ForCausalLM):" +
                kV1DraftMegaMoe);
  // The target's MegaMoE with expert parallelism: its MTP layers inherit the kernels, and the V1
  // runner builds them without expert parallelism; the V2 runner under the target's config.
  flash = CorpusConfig("deepseek-v4-flash-shaped");
  c.speculative->moe_backend.reset();
  c.moe_backend = "deep_gemm_mega_moe";
  c.moe_backend_from = "--moe-backend";
  c.enable_expert_parallel = true;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-backend] --moe-backend deep_gemm_mega_moe, which the MTP layers of "
            "'config.json' (DeepseekV4ForCausalLM) inherit:" +
                kV1DraftMegaMoe);
  c.use_v2_model_runner = true;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  c.use_v2_model_runner.reset();
  // A draft that names other kernels keeps the target's MegaMoE from its layers.
  c.speculative->moe_backend = "marlin";
  c.moe_backend_from = "--kernel-config's moe_backend";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
}

// The fused experts take their kernel family's backends only: MXFP4 for fp4 experts (the
// DeepSeek-V4-Flash checkpoint's), FP8 for fp8 ones, the unquantized family for an unquantized
// checkpoint; DeepseekV4FP8Config raises for any other expert_dtype. The MTP layers are checked
// where the speculative config names other kernels: a public launch script's
// "moe_backend":"b12x" fails once the target's weights are loaded.
TEST(DeepseekV4, FusedExpertsTakeTheirFamilysBackends) {
  nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  LaunchConfig c = Flash(30000, int64_t{10} << 30);
  c.moe_backend = "b12x";
  c.moe_backend_from = "--moe-backend";
  Result<Plan> plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(
      plan->ErrorLines(),
      "\n  error [moe-backend] --moe-backend b12x with 'config.json' (DeepseekV4ForCausalLM), "
      "whose experts run Mxfp4MoEMethod (MXFP4 MoE kernels): the engine raises as it builds "
      "the model "
      "('moe_backend='b12x' is not supported for MXFP4 MoE.'); pass one of deep_gemm, "
      "flashinfer_trtllm, flashinfer_cutlass, triton, triton_unfused, humming, marlin, "
      "aiter, emulation, or auto");
  c.moe_backend = "triton_unfused";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  flash["expert_dtype"] = "fp8";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-backend] --moe-backend triton_unfused with 'config.json' "
            "(DeepseekV4ForCausalLM), whose experts run Fp8MoEMethod (FP8 MoE kernels): the engine "
            "raises as it builds the model ('moe_backend='triton_unfused' is not supported for "
            "FP8 MoE.'); pass one of triton, deep_gemm, flashinfer_trtllm, flashinfer_cutlass, "
            "marlin, aiter, or auto");
  // The FP8 family names cutlass, which Fp8MoEMethod builds without.
  c.moe_backend = "cutlass";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "moe-backend"),
            "--moe-backend cutlass with 'config.json' (DeepseekV4ForCausalLM), whose experts run "
            "Fp8MoEMethod (FP8 MoE kernels): the engine raises as it builds the model ('vLLM "
            "CUTLASS FP8 MoE backend is disabled for this configuration.'); pass one of triton, "
            "deep_gemm, flashinfer_trtllm, flashinfer_cutlass, marlin, aiter, or auto");
  flash["expert_dtype"] = "nvfp4";
  c.moe_backend = "auto";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-expert-dtype] 'config.json' (DeepseekV4ForCausalLM), whose config "
            "states expert_dtype nvfp4: the engine raises as it builds the model ('Unsupported "
            "DeepSeek V4 expert_dtype'; fp4 or fp8)");
  // An unquantized checkpoint's experts run the unquantized family.
  flash = CorpusConfig("deepseek-v4-flash-shaped");
  flash.erase("quantization_config");
  c.moe_backend = "deep_gemm";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "moe-backend"),
            "--moe-backend deep_gemm with 'config.json' (DeepseekV4ForCausalLM), whose experts "
            "run UnquantizedFusedMoEMethod (unquantized MoE kernels): the engine raises as it "
            "builds the model "
            "('moe_backend='deep_gemm' is not supported for unquantized MoE.'); pass one of "
            "triton, flashinfer_trtllm, flashinfer_cutlass, aiter, or auto");
  // The MTP layers' own kernels.
  flash = CorpusConfig("deepseek-v4-flash-shaped");
  c.moe_backend = "auto";
  c.speculative =
      SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 2, .moe_backend = "b12x"};
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-backend] --speculative-config's moe_backend b12x with the MTP layers "
            "of 'config.json' (DeepseekV4ForCausalLM), whose experts run Mxfp4MoEMethod (MXFP4 MoE "
            "kernels): the engine raises as it builds the MTP layers, once the target's weights "
            "are loaded "
            "('moe_backend='b12x' is not supported for MXFP4 MoE.'); pass one of deep_gemm, "
            "flashinfer_trtllm, flashinfer_cutlass, triton, triton_unfused, humming, marlin, "
            "aiter, emulation, or auto");
  c.speculative->moe_backend = "flashinfer_trtllm";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  // The V2 model runner (VLLM_USE_V2_MODEL_RUNNER=1, as that script sets it) builds the MTP
  // layers under the target's config: the speculative config's kernels go unread.
  c.speculative->moe_backend = "b12x";
  c.use_v2_model_runner = true;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-moe-backend-unread"),
            "--speculative-config's moe_backend b12x is not read: the engine's V2 model runner "
            "(VLLM_USE_V2_MODEL_RUNNER) builds the MTP layers of 'config.json' "
            "(DeepseekV4ForCausalLM) under the target's config, with the target's MoE kernels "
            "(auto)");
}

// A proposer without a draft model builds no layer: the caches and groups stay the model's, with
// no EAGLE group. N-grams and suffix decoding run without async scheduling, so a step holds
// 8,192 tokens in flight (the engine's code at 8,192 batched tokens: 99,203 tokens, and 195,315
// on the first of two pipeline stages).
TEST(DeepseekV4, NgramAndSuffixPlanWithoutDraftLayers) {
  const nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  LaunchConfig c = Flash(30000, int64_t{10} << 30);
  c.cache.async_scheduling = false;
  c.speculative = SpeculativeConfig{.method = "ngram", .num_speculative_tokens = 3};
  Result<Plan> plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.speculative_method, "ngram");
  EXPECT_EQ(plan->model.num_speculative_tokens, 3);
  EXPECT_EQ(plan->model.num_lookahead_tokens, 0);
  EXPECT_EQ(plan->model.layers.size(), 167u);
  ASSERT_EQ(plan->groups.size(), 5u);
  for (const PlannedGroup& g : plan->groups) EXPECT_FALSE(g.spec.volatile_last_block);
  EXPECT_EQ(plan->groups[2].layers.size(), 21u);
  EXPECT_EQ(plan->pool.num_blocks, 10208);
  EXPECT_EQ(plan->capacity.max_tokens, 99203);
  EXPECT_EQ(DiagnosticMessage(*plan, "prefix-cache-eagle-window"), "");
  // Two pipeline stages keep two batches in flight without async scheduling too: the windows
  // hold 16,384 tokens, as with one stage under async scheduling (PipelineStagesProjectTheGroups).
  c.speculative = SpeculativeConfig{.method = "suffix", .num_speculative_tokens = 24};
  c.pipeline_parallel_size = 2;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->max_tokens_in_flight(), 16384);
  EXPECT_EQ(plan->pool.num_blocks, 20417);
  EXPECT_EQ(plan->capacity.max_tokens, 99871);
}

// The runtime runs the layer-tuple groups as any other (each group's block size and window);
// verify, which writes one row per position, refuses the compressed caches.
TEST(DeepseekV4, SimulateRunsAndVerifyRefuses) {
  Result<Plan> plan =
      PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), Flash(30000, int64_t{10} << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  Workload workload;
  for (int i = 0; i < 4; ++i) {
    workload.requests.push_back({.prompt_len = 3000,
                                 .shared_prefix_id = 0,
                                 .shared_prefix_len = 2048,
                                 .decode_steps = 300});
  }
  SimulateOptions options;
  options.enable_prefix_caching = plan->prefix_caching();
  Result<SimulateReport> report = Simulate(*plan, workload, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->requests_finished, 4);
  EXPECT_EQ(report->invariant_violations, 0);
  ASSERT_EQ(report->groups.size(), 5u);
  // Four 3,300-token requests: cdiv(3300, 256) = 13 full pages each, the 2,048-token prefix's 8
  // shared: 8 + 4 x 5.
  EXPECT_EQ(report->groups[0].peak_pages, 28);
  std::unique_ptr<VerifyTransport> transport = InProcessTransport();
  Result<VerifyReport> verify = Verify(*plan, VerifyOptions{}, *transport);
  EXPECT_EQ(verify.status().code(), StatusCode::kRejected);
  EXPECT_EQ(verify.status().message(),
            "config.json: cache group 0 holds layer 'model.layers.2.attn.indexer.k_cache', "
            "compressed 4 times, which kvtopo verify does not attend: it writes and reads one "
            "row per position");
}

TEST(DeepseekV4, RefusalsNameTheEnginesFailure) {
  const nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  LaunchConfig c = Flash(30000, int64_t{10} << 30);
  c.cache.kv_cache_dtype = KvCacheDtype::kAuto;
  Result<Plan> plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-cache-dtype-required] 'config.json' (DeepseekV4ForCausalLM) caches in "
            "fp8 only: the engine asserts it as it builds the model ('DeepseekV4 only supports "
            "fp8 kv-cache format for now, got auto') and stores fp8_ds_mla; pass "
            "--kv-cache-dtype fp8");
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  c.cache.block_size = 128;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kernel-block-size] --block-size 128 is not a multiple of 256, the only "
            "kernel block the MLA and indexer backends of 'config.json' (DeepseekV4ForCausalLM) "
            "run (V4_FLASHMLA_SPARSE, DEEPSEEK_V4_INDEXER: get_supported_kernel_block_sizes); "
            "pass --block-size 256 (kvtopo plans 256 for the other checks)");
  // FlashMLA's sparse kernels run on Hopper and Blackwell data-center GPUs only.
  c.cache.device_capability = DeviceCapability{.major = 12, .minor = 0};
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-compute-capability"),
            "'config.json' (DeepseekV4ForCausalLM) runs its compressed MLA caches on "
            "V4_FLASHMLA_SPARSE, FlashMLA's sparse kernels as FLASHMLA_SPARSE's, which run on "
            "compute capability 9.x or 10.x only, not 12.0 (--device-capability): the model's "
            "code builds the layers on it itself, without the selection that checks the GPU, and "
            "its kernels refuse them at the engine's first forward, once the weights are loaded; "
            "the model does not run on that GPU");
  c.cache.device_capability = DeviceCapability{.major = 10, .minor = 0};
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-compute-capability"), "");
  c.cache.device_capability.reset();
  c.cache.block_size = 512;  // the sliding and state pages pad to 74,880 B
  c.kv_cache_memory_bytes = int64_t{20} << 30;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->groups[1].layer_page_bytes[0], 74880);
  // 22 tuples of 2,880 + 17,280 + 74,880 B; the engine's code: 10,270 blocks, 51,264 tokens.
  EXPECT_EQ(plan->pool.bytes_per_block, 2090880);
  EXPECT_EQ(plan->pool.num_blocks, 10270);
  EXPECT_EQ(plan->capacity.max_tokens, 51264);
  c.cache.block_size = 0;
  c.parallel.prefill_context_parallel_size = 2;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "prefill-context-parallel-groups"),
            "'config.json' (DeepseekV4ForCausalLM) keeps caches of several block sizes (its MLA "
            "caches' 256 tokens, its sliding windows' 64, its compressor states' 4 and 8), which "
            "the engine does not size under --prefill-context-parallel-size 2: it raises as the "
            "KV cache is set up ('Hybrid KV cache groups with multiple block sizes do not support "
            "context parallelism (dcp_world_size/pcp_world_size > 1).'); set "
            "--prefill-context-parallel-size 1");
  c.parallel.prefill_context_parallel_size = 1;
  c.speculative =
      SpeculativeConfig{.method = "eagle3", .model = "eagle3-draft", .num_speculative_tokens = 2};
  c.cache.attention_backend = "FLASHMLA_SPARSE";
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [not-planned] kvtopo does not plan 'config.json' (DeepseekV4ForCausalLM) "
            "with speculative method 'eagle3' (only its MTP layers, n-grams and suffix "
            "decoding): drop it");
  // DFlash always feeds its draft the target's auxiliary hidden states, which the engine's
  // class (SupportsPP only) does not collect.
  Result<Plan> dflash = PlanWith(flash, [&] {
    LaunchConfig d = c;
    d.speculative =
        SpeculativeConfig{.method = "dflash", .model = "dflash-draft", .num_speculative_tokens = 3};
    return d;
  }());
  ASSERT_TRUE(dflash.ok()) << dflash.status().ToString();
  EXPECT_EQ(dflash->ErrorLines(),
            "\n  error [speculative-aux-hidden-states] --speculative-config method 'dflash' feeds "
            "the draft the target's auxiliary hidden states, and the engine's "
            "DeepseekV4ForCausalLM class does not implement its EAGLE-3 interface: it raises "
            "'Model does not support EAGLE3 interface' after loading the weights; choose another "
            "method");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-built-by-model"),
            "--attention-backend FLASHMLA_SPARSE does not reach the caches of 'config.json' "
            "(DeepseekV4ForCausalLM): the model's code builds them on backends of its own "
            "(V4_FLASHMLA_SPARSE, DEEPSEEK_SPARSE_SWA, DEEPSEEK_V4_INDEXER, CompressorBackend), "
            "without the engine's selection");
}

// Pipeline stages: each worker lays out the groups projected onto its layers, and every worker
// takes the fewest blocks any holds. Each layout is the engine's code's (get_kv_cache_configs at
// 28be48fa9 on these caches split by stage); the windows hold the tokens of the batches in flight,
// one per stage (VllmConfig.max_concurrent_batches).
TEST(DeepseekV4, PipelineStagesProjectTheGroups) {
  const nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  const auto plan_pp = [&](int pp, std::optional<std::string> partition, int64_t max_len,
                           int64_t memory) {
    LaunchConfig c = Flash(max_len, memory);
    c.pipeline_parallel_size = pp;
    c.pp_layer_partition = std::move(partition);
    return PlanWith(flash, c);
  };
  const auto stages = [](const Plan& plan) {
    std::vector<std::string> out;
    for (const PipelineStage& s : plan.pipeline_stages) {
      out.push_back(fmt::format("{}+{} {} {}", s.first_layer, s.num_layers, s.cache_layers,
                                s.bytes_per_block));
    }
    return out;
  };
  // Layers 0-21 and 22-42: 11 tuples each, against the whole model's 22.
  Result<Plan> plan = plan_pp(2, std::nullopt, 30000, int64_t{10} << 30);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(stages(*plan), (std::vector<std::string>{"0+22 82 525888", "22+21 85 525888"}));
  EXPECT_EQ(plan->pool.layer_tuples, 11);
  EXPECT_EQ(plan->pool.tuple_page_bytes, (std::vector<int64_t>{1728, 8640, 37440}));
  EXPECT_EQ(plan->pool.num_blocks, 20417);
  EXPECT_EQ(plan->capacity.max_tokens, 99871);
  // 16 stages: the first holds layers 0 and 1, their sliding windows alone, and keeps the full
  // group's pages of the whole model. Sixteen batches in flight (one per stage) hold 131,072
  // tokens, so every window holds the whole 30,000-token request.
  plan = plan_pp(16, std::nullopt, 30000, int64_t{20} << 30);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->max_tokens_in_flight(), 131072);
  EXPECT_EQ(stages(*plan)[0], "0+2 2 47808");
  EXPECT_EQ(plan->pool.bytes_per_block, 95616);
  EXPECT_EQ(plan->pool.num_blocks, 224594);
  EXPECT_EQ(plan->capacity.max_tokens, 660700);
  // The first stage's groups give the engine's line: 56,903 tokens with layers 2-42 on one.
  plan = plan_pp(2, "2,41", 30000, int64_t{10} << 30);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(stages(*plan), (std::vector<std::string>{"0+2 2 47808", "2+41 165 1003968"}));
  EXPECT_EQ(plan->pool.num_blocks, 10694);
  EXPECT_EQ(plan->capacity.max_tokens, 56903);
  // Each worker checks one request against its memory: 3.52 GiB at 131,072 tokens.
  plan = plan_pp(2, std::nullopt, 131072, int64_t{3} << 30);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->max_model_len_that_fits, 14916);
  EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-memory"),
            "one request of --max-model-len 131072 needs 3783238272 B of KV cache per rank, more "
            "than the 3221225472 B the pool holds; the largest --max-model-len that fits is "
            "14916; raise --kv-cache-memory or lower --max-model-len");
  // Layer 3 alone (ratio 128): its sliding window's 37,440 B page is none of its stage's full
  // pages, so the layout gives it no tensor.
  plan = plan_pp(3, "3,1,39", 30000, int64_t{10} << 30);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(
      plan->ErrorLines(),
      "\n  error [layer-tuples] pipeline stage 1 holds 'model.layers.3.attn.swa_cache' with a "
      "37440 B page, and none of the full group's layers on that stage has a page of that "
      "size (1728 B): the engine's layer-tuple layout gives the layer no tensor, and the "
      "workers fail as they allocate the KV cache ('Some layers are not correctly "
      "initialized'); change VLLM_PP_LAYER_PARTITION or --pipeline-parallel-size");
  plan = plan_pp(2, "0,43", 30000, int64_t{10} << 30);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [pipeline-parallel] pipeline stage 0 (no hidden layers) holds no cache "
            "layer: the engine gives its workers every KV-cache group, empty, and fails laying "
            "out the layer tuples ('max() arg is an empty sequence') as it sets up the KV cache; "
            "give every stage cache layers (VLLM_PP_LAYER_PARTITION, --pipeline-parallel-size)");
  // The MTP class does not split over stages.
  LaunchConfig mtp = Flash(30000, int64_t{10} << 30);
  mtp.pipeline_parallel_size = 2;
  mtp.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 1};
  plan = PlanWith(flash, mtp);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [pipeline-parallel] --pipeline-parallel-size 2 with speculative method "
            "'mtp': the engine checks the draft's config at the same pipeline size, and the MTP "
            "class of model type 'deepseek_v4' does not support pipeline parallelism "
            "(SupportsPP), so it refuses the launch; use --pipeline-parallel-size 1");
}

// Without the hybrid KV cache manager the engine converts every sliding window and compressor
// state to a 256-token MLA page (unify_hybrid_kv_cache_specs) and plans one uniform-type group;
// a KV connector without SupportsHMA turns it off. Figures: the engine's code on these caches.
TEST(DeepseekV4, HybridManagerOffCachesOneType) {
  const nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  LaunchConfig c = Flash(30000, int64_t{10} << 30);
  c.disable_hybrid_kv_cache_manager = true;
  Result<Plan> plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 167u);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 256);
  // The sliding window's page: 256 x 584 B, aligned to 576; a ratio-4 state's: 256 x 8,192 B.
  EXPECT_EQ(plan->groups[0].layer_page_bytes[0], 149760);
  EXPECT_EQ(*std::max_element(plan->groups[0].layer_page_bytes.begin(),
                              plan->groups[0].layer_page_bytes.end()),
            2097216);
  EXPECT_EQ(plan->pool.bytes_per_block, 83480832);
  EXPECT_EQ(plan->pool.num_blocks, 128);
  EXPECT_EQ(plan->capacity.max_tokens, 32542);
  EXPECT_EQ(plan->hash_block_size, 256);
  EXPECT_EQ(DiagnosticMessage(*plan, "hybrid-manager-off"),
            "the hybrid KV cache manager is off by --disable-hybrid-kv-cache-manager, so the "
            "engine caches 105 sliding-window layers as full attention");
  // 9.17 GiB at 30,000 tokens, where the layer tuples need 6.66.
  c.kv_cache_memory_bytes = int64_t{9} << 30;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->max_model_len_that_fits, 29440);
  EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-memory"),
            "one request of --max-model-len 30000 needs 9850738176 B of KV cache per rank, more "
            "than the 9663676416 B the pool holds; the largest --max-model-len that fits is "
            "29440; raise --kv-cache-memory or lower --max-model-len");
  // Over two stages: 249 blocks, 63,305 tokens.
  c.kv_cache_memory_bytes = int64_t{10} << 30;
  c.pipeline_parallel_size = 2;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 249);
  EXPECT_EQ(plan->capacity.max_tokens, 63305);
  c.pipeline_parallel_size = 1;
  c.parallel.decode_context_parallel_size = 2;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [not-planned] kvtopo does not plan 'config.json' (DeepseekV4ForCausalLM) "
            "with --decode-context-parallel-size 2 while the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager: drop it");
  // Connectors: one without SupportsHMA turns the manager off; one with it keeps the layer
  // tuples. The offloading connector's spec, on a worker in a process of its own, asserts the
  // sliding windows' 64-token blocks are a multiple of the launch's 256-token cache block
  // (28be48fa9: 'gpu_block_size=64 not divisible by hash_block_size=256'); on a worker that
  // shares the engine core's config (whose cache block is then 4), or without the manager, it is
  // not planned.
  c = Flash(30000, int64_t{10} << 30);
  c.kv_connector = "LMCacheConnectorV1";
  c.kv_connector_source = "--kv-transfer-config";
  c.kv_connector_hma = false;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 32542);
  EXPECT_EQ(DiagnosticMessage(*plan, "hybrid-manager-off"),
            "the hybrid KV cache manager is off for KV connector LMCacheConnectorV1 "
            "(--kv-transfer-config), which does not support it (SupportsHMA), so the engine "
            "caches 105 sliding-window layers as full attention");
  c.kv_connector = "NixlConnector";
  c.kv_connector_hma = true;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->capacity.max_tokens, 50743);
  c.kv_connector = "OffloadingConnector";
  c.workers_in_own_processes = true;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-offloading-block-size] KV connector OffloadingConnector "
            "(--kv-transfer-config) needs every group's block a multiple of the 256-token cache "
            "block, and group 'model.layers.0.attn.swa_cache' has 64-token blocks: the engine's "
            "offloading spec asserts it once the weights are loaded, on each worker, whose config "
            "keeps the launch's cache block in a process of its own ('gpu_block_size=64 not "
            "divisible by hash_block_size=256')");
  c.workers_in_own_processes = false;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [not-planned] kvtopo does not plan 'config.json' (DeepseekV4ForCausalLM) "
            "with KV connector OffloadingConnector (--kv-transfer-config) on a worker that shares "
            "the engine core's config (--distributed-executor-backend uni, the engine's choice for "
            "one worker, or external_launcher; or an executor class kvtopo cannot tell), whose "
            "offloading of the layer tuples kvtopo has not checked: drop it");
  c.workers_in_own_processes = true;
  c.disable_hybrid_kv_cache_manager = true;
  plan = PlanWith(flash, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [not-planned] kvtopo does not plan 'config.json' (DeepseekV4ForCausalLM) "
            "with KV connector OffloadingConnector (--kv-transfer-config) while the hybrid KV "
            "cache manager is off by --disable-hybrid-kv-cache-manager: drop it");
}

TEST(DeepseekV4, ConfigErrors) {
  nlohmann::json flash = CorpusConfig("deepseek-v4-flash-shaped");
  flash["compress_ratios"][5] = 16;
  EXPECT_EQ(PlanWith(flash, Flash(30000, int64_t{10} << 30)).status().message(),
            "config.json 'config.json': field 'compress_ratios' holds 16 at layer 5: the engine's "
            "compressors assert a ratio of 4 or 128 (0 and 1 keep the sliding window alone) as it "
            "builds the model");
  flash["compress_ratios"] = {0, 4};
  EXPECT_EQ(PlanWith(flash, Flash(30000, int64_t{10} << 30)).status().message(),
            "config.json 'config.json': field 'compress_ratios' holds 2 entries for "
            "num_hidden_layers 43: the engine reads one per hidden layer (an IndexError as it "
            "builds the model)");
}

}  // namespace
}  // namespace kvtopo
