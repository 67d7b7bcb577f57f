// --device-capability: the GPU's compute capability settles what the engine decides by the GPU
// (platforms/cuda.py, fa_utils.py, utils/flashinfer.py and each backend's
// supports_compute_capability at 28be48fa9).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvtopo/backend.h"
#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::DiagnosticMessage;

// A launch of `model` (a profile name or a config path) on a GPU of compute capability `gpu`.
LaunchOptions OnGpu(const std::string& model, const std::string& gpu) {
  LaunchOptions o;
  o.model = model;
  o.device_capability = gpu;
  return o;
}

std::string CorpusPath(const std::string& stem) {
  return std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/" + stem + ".json";
}

// The planned target backend, its tokens and the plan's error lines; a launch that does not plan
// fails the test.
struct Outcome {
  std::string backend;
  int64_t tokens = 0;
  std::string errors;
  bool operator==(const Outcome&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Outcome& p) {
  return os << p.backend << " " << p.tokens << " " << p.errors;
}

Result<Plan> PlanOn(const LaunchOptions& o) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchConfig c, ToLaunchConfig(o));
  return PlanLaunch(c);
}

Outcome Planned(const LaunchOptions& o) {
  Result<Plan> plan = PlanOn(o);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return {};
  return {plan->model.attention_backend, plan->ErrorLines().empty() ? plan->capacity.max_tokens : 0,
          plan->ErrorLines()};
}

TEST(DeviceCapability, ParsedAsTheEngineReadsIt) {
  Result<DeviceCapability> c = ParseDeviceCapability("12.1");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, (DeviceCapability{.major = 12, .minor = 1}));
  EXPECT_EQ(DeviceCapabilityName(*c), "12.1");
  for (const char* bad : {"9", "0.0", "9.10", "9.x", "", "sm_90", "100.0", "-9.0", "9.0 "}) {
    EXPECT_EQ(ParseDeviceCapability(bad).status().message(),
              std::string("'") + bad +
                  "' is not a compute capability: write MAJOR.MINOR as the engine reads it "
                  "(torch.cuda.get_device_capability), e.g. 9.0 for an H100, 10.0 for a B200, "
                  "12.0 for an RTX PRO 6000 Blackwell")
        << bad;
  }
  LaunchOptions o = OnGpu("", "ten");
  const Status s = ToLaunchConfig(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--device-capability: 'ten' is not a compute capability: write MAJOR.MINOR as the "
            "engine reads it (torch.cuda.get_device_capability), e.g. 9.0 for an H100, 10.0 for "
            "a B200, 12.0 for an RTX PRO 6000 Blackwell");
}

// Each backend's supports_compute_capability, and the engine's priority lists.
TEST(DeviceCapability, RegistryStatesWhereBackendsRunAndTheEnginesOrder) {
  const auto text = [](const char* name) {
    Result<BackendCaps> b = FindBackend(name);
    return b.ok() ? b->CapabilitiesText() : b.status().ToString();
  };
  EXPECT_EQ(text("FLASH_ATTN"), "8.0 or later");
  EXPECT_EQ(text("FLASHINFER"), "7.5 to 12.1");
  EXPECT_EQ(text("FLASHMLA"), "9.x");  // dense: supports_combination asks a Hopper GPU
  EXPECT_EQ(text("FLASHMLA_SPARSE"), "9.x or 10.x");
  EXPECT_EQ(text("CUTLASS_MLA"), "10.x");
  EXPECT_EQ(text("B12X_MLA_SPARSE"), "12.x");
  EXPECT_EQ(text("TRITON_MLA"), "any");
  Result<BackendCaps> flashinfer = FindBackend("FLASHINFER");
  ASSERT_TRUE(flashinfer.ok());
  EXPECT_FALSE(flashinfer->RunsOn({7, 0}));
  EXPECT_TRUE(flashinfer->RunsOn({7, 5}));
  EXPECT_TRUE(flashinfer->RunsOn({12, 1}));
  EXPECT_FALSE(flashinfer->RunsOn({12, 2}));

  const auto order = [](bool mla, DeviceCapability gpu, bool quantized, int64_t heads) {
    Result<std::vector<std::string>> names = SelectionPriorities(mla, gpu, quantized, heads);
    EXPECT_TRUE(names.ok()) << names.status().ToString();
    return names.ok() ? *names : std::vector<std::string>();
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(order(false, {10, 0}, false, 32),
            (V{"FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT"}));
  EXPECT_EQ(order(false, {12, 0}, true, 32),
            (V{"FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT"}));
  const V dense = {"FLASHINFER_MLA", "TOKENSPEED_MLA", "CUTLASS_MLA",
                   "FLASH_ATTN_MLA", "FLASHMLA",       "TRITON_MLA"};
  const auto then = [&](V sparse) {
    V all = dense;
    all.insert(all.end(), sparse.begin(), sparse.end());
    return all;
  };
  EXPECT_EQ(order(true, {12, 0}, true, 128),
            then({"B12X_MLA_SPARSE", "FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"}));
  EXPECT_EQ(order(true, {10, 0}, false, 16), then({"FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"}));
  EXPECT_EQ(order(true, {10, 0}, false, 17), then({"FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE"}));
  EXPECT_EQ(order(true, {9, 0}, true, 16),
            (V{"FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", "FLASHMLA_SPARSE"}));
}

// A backend nobody names is the engine's pick for the GPU; the blocks follow its kernels.
TEST(DeviceCapability, UnnamedBackendIsTheEnginesPick) {
  LaunchOptions kimi = OnGpu("kimi-k2.6", "9.0");
  kimi.tensor_parallel_size = 8;
  EXPECT_EQ(Planned(kimi), (Outcome{"FLASH_ATTN_MLA", 488'944, ""}));
  kimi.device_capability = "10.0";  // 32-token blocks
  EXPECT_EQ(Planned(kimi), (Outcome{"FLASHINFER_MLA", 488'928, ""}));
  kimi.device_capability = "8.0";
  EXPECT_EQ(Planned(kimi), (Outcome{"TRITON_MLA", 488'944, ""}));
  kimi.device_capability = "12.0";
  EXPECT_EQ(Planned(kimi), (Outcome{"TRITON_MLA", 488'944, ""}));
  Result<Plan> plan = PlanOn(kimi);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-device-pick"),
            "the target layers of 'profiles/kimi-k2.6.json' run on TRITON_MLA, the engine's pick "
            "on compute capability 12.0 (--device-capability); the profile's backend B12X_MLA, "
            "planned where the GPU is not given, runs only where the launch names it with "
            "--attention-backend");
  EXPECT_EQ(FormatPlanTable(*plan).substr(0, FormatPlanTable(*plan).find('\n')),
            "model kimi-k2.6  max-model-len 262144  TP8 DCP1 PCP1 interleave 1  GPU compute "
            "capability 12.0");
  EXPECT_EQ(nlohmann::json::parse(PlanToJsonText(*plan))["device_capability"], "12.0");
  kimi.device_capability.reset();  // the profile's backend
  Result<Plan> unstated = PlanOn(kimi);
  ASSERT_TRUE(unstated.ok());
  EXPECT_TRUE(nlohmann::json::parse(PlanToJsonText(*unstated))["device_capability"].is_null());
  EXPECT_EQ(Planned(kimi), (Outcome{"B12X_MLA", 488'704, ""}));

  // K/V attention: FlashInfer first on 10.x, FlashAttention elsewhere, unless the cache dtype,
  // sinks or head size move the pick.
  LaunchOptions llama = OnGpu(CorpusPath("llama-3.1-8b"), "10.0");
  EXPECT_EQ(Planned(llama).backend, "FLASHINFER");
  llama.device_capability = "12.0";
  EXPECT_EQ(Planned(llama).backend, "FLASH_ATTN");
  llama.kv_cache_dtype = "fp8";  // FlashAttention 2 there: no fp8 cache
  EXPECT_EQ(Planned(llama).backend, "FLASHINFER");
  llama.device_capability = "9.0";  // FlashAttention 3
  EXPECT_EQ(Planned(llama).backend, "FLASH_ATTN");

  std::vector<std::string> gpt_oss;  // learned sinks
  for (const char* gpu : {"8.0", "9.0", "10.0", "12.0"}) {
    const Outcome p = Planned(OnGpu("gpt-oss-120b", gpu));
    gpt_oss.push_back(p.backend + " " + std::to_string(p.tokens));
  }
  EXPECT_EQ(gpt_oss, (std::vector<std::string>{"TRITON_ATTN 827693", "FLASH_ATTN 827693",
                                               "FLASHINFER 827693", "TRITON_ATTN 827693"}));

  nlohmann::json wide = testing_configs::Llama31_8B();
  wide["head_dim"] = 320;  // FlashAttention 4 only
  LaunchConfig c;
  c.cache.max_model_len = 32768;
  std::vector<std::string> picks;
  for (const DeviceCapability gpu : {DeviceCapability{8, 9}, {9, 0}, {10, 0}, {12, 0}}) {
    c.cache.device_capability = gpu;
    Result<Plan> p = testing_configs::PlanWith(wide, c);
    picks.push_back(p.ok() ? p->model.attention_backend : p.status().ToString());
  }
  EXPECT_EQ(picks,
            (std::vector<std::string>{"TRITON_ATTN", "FLASH_ATTN", "FLASH_ATTN", "TRITON_ATTN"}));
}

// Sparse MLA: the engine's order follows the cache dtype and the heads per rank, and on a GPU
// where none of its candidates runs it raises.
TEST(DeviceCapability, SparseMlaPickAndNoValidBackend) {
  LaunchOptions o = OnGpu("deepseek-v3.2", "10.0");
  o.tensor_parallel_size = 8;  // 16 heads per rank
  EXPECT_EQ(Planned(o), (Outcome{"FLASHINFER_MLA_SPARSE", 438'656, ""}));
  o.tensor_parallel_size = 4;  // 32
  EXPECT_EQ(Planned(o).backend, "FLASHMLA_SPARSE");
  o.device_capability = "9.0";
  EXPECT_EQ(Planned(o).backend, "FLASHMLA_SPARSE");
  o.tensor_parallel_size = 8;
  o.device_capability = "12.0";
  o.kv_cache_dtype = "fp8";
  EXPECT_EQ(Planned(o), (Outcome{"B12X_MLA_SPARSE", 714'752, ""}));
  o.kv_cache_dtype.reset();
  EXPECT_EQ(Planned(o).errors,
            "\n  error [backend-none-valid] none of the backends the engine tries for the target "
            "layers of 'profiles/deepseek-v3.2.json' on compute capability 12.0 "
            "(--device-capability) takes them (FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE): the "
            "engine raises ('No valid attention backend found') as it builds the model; kvtopo "
            "plans B12X_MLA_SPARSE for the other checks; name a backend that runs there with "
            "--attention-backend, or change the launch (its cache dtype, block size) so that one "
            "of them takes the layers");
}

// A named backend is checked on the GPU: where it runs, and what it has there.
TEST(DeviceCapability, NamedBackendOnTheGpu) {
  LaunchOptions kimi = OnGpu("kimi-k2.6", "10.0");
  kimi.tensor_parallel_size = 8;
  kimi.attention_backend = "B12X_MLA";
  EXPECT_EQ(Planned(kimi).errors,
            "\n  error [backend-compute-capability] target layer 'model.layers.0.self_attn' (and "
            "60 other layers) runs on backend B12X_MLA, which runs on compute capability 12.x "
            "only, not 10.0 (--device-capability): the engine refuses the selection on that GPU; "
            "choose one that runs there (TRITON_MLA, FLASHINFER_MLA, CUTLASS_MLA, TOKENSPEED_MLA) "
            "with --attention-backend");
  kimi.device_capability = "12.0";
  EXPECT_EQ(Planned(kimi), (Outcome{"B12X_MLA", 488'704, ""}));

  // FlashAttention's fp8 cache: version 3 on a Hopper GPU only.
  const auto fp8_refused = [](const std::string& gpu, int version) {
    return "\n  error [backend-kv-cache-dtype] target layer 'model.layers.0.self_attn' (and 1 "
           "other layer) has cache dtype fp8 but backend FLASH_ATTN takes it only as "
           "FlashAttention 3 on a Hopper GPU, not on compute capability " +
           gpu + " (--device-capability), where it runs FlashAttention " + std::to_string(version) +
           ": the engine refuses the selection ('kv_cache_dtype not supported'); choose one "
           "that takes it (FLASHINFER, TRITON_ATTN) with --attention-backend or set "
           "--kv-cache-dtype";
  };
  LaunchOptions llama = OnGpu(CorpusPath("llama-3.1-8b"), "12.0");
  llama.attention_backend = "FLASH_ATTN";
  llama.kv_cache_dtype = "fp8";
  EXPECT_EQ(Planned(llama).errors, fp8_refused("12.0", 2));
  llama.device_capability = "9.0";  // settled: no backend-kv-cache-dtype-gpu warning
  Result<Plan> hopper = PlanOn(llama);
  ASSERT_TRUE(hopper.ok());
  EXPECT_EQ(hopper->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*hopper, "backend-kv-cache-dtype-gpu"), "");
  llama.attention_config = R"({"flash_attn_version": 3})";
  llama.device_capability = "10.0";  // version 3 runs as 4 on Blackwell
  EXPECT_EQ(Planned(llama).errors, fp8_refused("10.0", 4));

  LaunchOptions gpt = OnGpu("gpt-oss-120b", "9.0");
  gpt.attention_backend = "FLASHINFER";
  EXPECT_EQ(Planned(gpt).errors,
            "\n  error [backend-sinks] target layer 'model.layers.0.self_attn' (and 35 other "
            "layers) has learned attention sinks but backend FLASHINFER has none on compute "
            "capability 9.0 (--device-capability), where it runs no TRT-LLM attention (10.x "
            "only): the engine refuses the selection ('attention sinks not supported'); choose "
            "another backend with --attention-backend");
  gpt.device_capability = "10.0";
  EXPECT_EQ(Planned(gpt), (Outcome{"FLASHINFER", 827'693, ""}));
  gpt.attention_backend = "FLASH_ATTN";
  gpt.batch_invariant = true;  // FlashAttention 4 gives way to 2
  EXPECT_EQ(Planned(gpt).errors,
            "\n  error [backend-sinks] target layer 'model.layers.0.self_attn' (and 35 other "
            "layers) has learned attention sinks but backend FLASH_ATTN has none on compute "
            "capability 10.0 (--device-capability), where it runs FlashAttention 2: the engine "
            "refuses the selection ('attention sinks not supported'); choose another backend "
            "with --attention-backend");

  nlohmann::json wide = testing_configs::Llama31_8B();
  wide["head_dim"] = 320;
  LaunchConfig c;
  c.cache.max_model_len = 32768;
  c.cache.attention_backend = "FLASH_ATTN";
  c.cache.device_capability = DeviceCapability{12, 0};
  Result<Plan> rtx = testing_configs::PlanWith(wide, c);
  ASSERT_TRUE(rtx.ok()) << rtx.status().ToString();
  EXPECT_EQ(rtx->ErrorLines(),
            "\n  error [backend-head-size] target layer 'model.layers.0.self_attn' (and 31 other "
            "layers) has head size 320 but backend FLASH_ATTN supports only multiples of 8 up to "
            "256 (512 where FlashAttention 4 is supported), and FlashAttention 4 is not supported "
            "on compute capability 12.0 (--device-capability); choose another backend with "
            "--attention-backend");
  c.cache.device_capability = DeviceCapability{10, 0};
  Result<Plan> b200 = testing_configs::PlanWith(wide, c);
  ASSERT_TRUE(b200.ok()) << b200.status().ToString();
  EXPECT_EQ(b200->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*b200, "backend-head-size-gpu"), "");
}

// Under DCP: the engine's pick is known, so its LSE is checked rather than warned about; FlashInfer
// is still picked for a sinks model on 10.x (its supports_sink asks the GPU alone) and fails at
// its first forward.
TEST(DeviceCapability, PickUnderDcp) {
  LaunchOptions glm = OnGpu(CorpusPath("glm-4.7-flash"), "10.0");  // dense MLA, no profile
  glm.tensor_parallel_size = 4;
  glm.decode_context_parallel_size = 4;
  Result<Plan> plan = PlanOn(glm);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "dcp-backend-auto"), "");
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [dcp-backend-lse] target layer 'model.layers.0.self_attn' (and 46 other "
            "layers) is DCP-sharded but backend FLASHINFER_MLA does not return the softmax LSE "
            "needed to combine shards; choose another backend with --attention-backend or set "
            "--decode-context-parallel-size 1");
  glm.device_capability = "9.0";  // FLASH_ATTN_MLA returns it
  EXPECT_EQ(Planned(glm), (Outcome{"FLASH_ATTN_MLA", 2'538'368, ""}));

  LaunchOptions gpt = OnGpu("gpt-oss-120b", "10.0");
  gpt.tensor_parallel_size = 16;
  gpt.decode_context_parallel_size = 2;
  gpt.disable_sliding_window = true;
  const Outcome picked = Planned(gpt);
  EXPECT_EQ(picked.backend, "FLASHINFER");
  // As where the launch names it without a GPU (StartupRefusals.FlashInferUnderDcp).
  gpt.device_capability.reset();
  gpt.attention_backend = "FLASHINFER";
  const Outcome named = Planned(gpt);
  EXPECT_NE(named.errors, "");
  EXPECT_EQ(picked.errors, named.errors);
}

// FlashInfer's one window per group: settled by the GPU (TRT-LLM attention only on 10.x).
TEST(DeviceCapability, OneWindowPerGroupByGpu) {
  LaunchConfig c;
  c.disable_hybrid_kv_cache_manager = true;
  c.cache.attention_backend = "FLASHINFER";
  c.cache.device_capability = DeviceCapability{9, 0};
  Result<Plan> hopper = testing_configs::PlanWith(testing_configs::CorpusConfig("gemma-2-9b"), c);
  ASSERT_TRUE(hopper.ok()) << hopper.status().ToString();
  EXPECT_EQ(hopper->ErrorLines(),
            "\n  error [backend-one-window] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, so layer 'model.layers.0.self_attn' (sliding "
            "window 4096) and layer 'model.layers.1.self_attn' (full attention) share one KV "
            "cache group on backend FLASHINFER, whose metadata builder takes one window for a "
            "group's layers unless FlashInfer's TRT-LLM attention runs every prefill and decode "
            "(compute capability 10 GPUs, DCP 1; --device-capability 9.0 has none): so the engine "
            "raises ('Window left is not the same for all layers') at its first forward, once the "
            "weights are loaded; keep the hybrid KV cache manager on, add "
            "--disable-sliding-window, or choose another backend with --attention-backend");
  c.cache.device_capability = DeviceCapability{10, 0};
  Result<Plan> b200 = testing_configs::PlanWith(testing_configs::CorpusConfig("gemma-2-9b"), c);
  ASSERT_TRUE(b200.ok()) << b200.status().ToString();
  EXPECT_EQ(b200->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*b200, "backend-one-window"),
            "the hybrid KV cache manager is off by --disable-hybrid-kv-cache-manager, so layer "
            "'model.layers.0.self_attn' (sliding window 4096) and layer "
            "'model.layers.1.self_attn' (full attention) share one KV cache group on backend "
            "FLASHINFER, whose metadata builder takes one window for a group's layers unless "
            "FlashInfer's TRT-LLM attention runs every prefill and decode (compute capability 10 "
            "GPUs, DCP 1): elsewhere the engine raises ('Window left is not the same for all "
            "layers') at its first forward, once the weights are loaded; keep the hybrid KV cache "
            "manager on, add --disable-sliding-window, or choose another backend with "
            "--attention-backend");
}

// FlashInfer's CUDA graphs replay uniform batches only through TRT-LLM attention (its builder's
// get_cudagraph_support): with speculative decoding the GPU decides whether decodes replay full
// graphs, which hold a recurrent block for each of --max-num-seqs rows.
TEST(DeviceCapability, FlashInferCudaGraphsByGpu) {
  LaunchOptions o = OnGpu("qwen3-next-80b", "10.0");
  o.max_model_len = 4096;
  o.kv_cache_memory = "256MiB";  // 18 blocks of 13 pages (the MTP layer joins the 12 full ones)
  o.attention_backend = "FLASHINFER";
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1})";
  EXPECT_EQ(Planned(o).errors,
            "\n  error [mamba-cudagraph-blocks] --max-num-seqs 256 exceeds the 18 blocks of the "
            "pool, and the engine's full decode CUDA graphs (cudagraph_mode FULL_AND_PIECEWISE, "
            "-O2's default) need a recurrent-state block for each request: the engine refuses "
            "the launch when it captures them, once the weights are loaded ('max_num_seqs "
            "exceeds available Mamba cache blocks'); lower --max-num-seqs to 18 or fewer, give "
            "the KV cache more memory, or pass --enforce-eager");
  for (const char* gpu : {"9.0", "12.0"}) {  // single-token decode graphs: none of them
    o.device_capability = gpu;
    Result<Plan> plan = PlanOn(o);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->ErrorLines(), "") << gpu;
    EXPECT_EQ(DiagnosticMessage(*plan, "mamba-cudagraph-blocks"), "") << gpu;
  }
}

// Below compute capability 8.0 the platform has no bfloat16 (supported_dtypes): an auto dtype
// falls back to float16, or float32 for a model type that refuses float16
// (_resolve_auto_dtype), and an explicit bfloat16 is refused by the workers.
TEST(DeviceCapability, ModelDtypeByGpu) {
  LaunchOptions llama = OnGpu(CorpusPath("llama-3.1-8b"), "9.0");
  const int64_t hopper = Planned(llama).tokens;
  llama.device_capability = "7.5";  // float16: the same bytes, on FLASHINFER (8.0 for FA)
  EXPECT_EQ(Planned(llama), (Outcome{"FLASHINFER", hopper, ""}));
  Result<Plan> turing = PlanOn(llama);
  ASSERT_TRUE(turing.ok());
  EXPECT_EQ(DiagnosticMessage(*turing, "model-dtype"),
            "'" + CorpusPath("llama-3.1-8b") +
                "' gives torch_dtype bfloat16; on compute capability 7.5 (--device-capability) "
                "the engine runs it as float16 (--dtype auto; the GPU computes in float16 and "
                "float32), so an auto KV cache stores float16");
  llama.dtype = "bfloat16";
  EXPECT_EQ(Planned(llama).errors,
            "\n  error [dtype-bfloat16-gpu] --dtype bfloat16 on compute capability 7.5 "
            "(--device-capability): the engine's workers refuse it at startup ('Bfloat16 is only "
            "supported on GPUs with compute capability of at least 8.0'); use --dtype float16");

  LaunchOptions gemma = OnGpu(CorpusPath("gemma-2-9b"), "9.0");
  EXPECT_EQ(Planned(gemma).tokens, 99'766);
  gemma.device_capability = "7.5";  // float32 stays (gemma2 refuses float16): twice the bytes
  EXPECT_EQ(Planned(gemma).tokens, 49'879);
  Result<Plan> fp32 = PlanOn(gemma);
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(DiagnosticMessage(*fp32, "model-dtype"),
            "'" + CorpusPath("gemma-2-9b") +
                "' gives torch_dtype float32; on compute capability 7.5 (--device-capability) "
                "the engine runs it as float32 (--dtype auto; the GPU computes in float16 and "
                "float32, and model type 'gemma2' refuses float16), so an auto KV cache stores "
                "float32");

  gemma.dtype = "float16";
  EXPECT_EQ(Planned(gemma).errors,
            "\n  error [dtype-float16] --dtype float16: the engine refuses float16 for model type "
            "'gemma2' (numerical instability); use --dtype float32 (compute capability 7.5 has "
            "no bfloat16)");

  nlohmann::json full = testing_configs::Llama31_8B();
  full["torch_dtype"] = "float32";  // downcast to the GPU's first dtype
  LaunchConfig c;
  c.cache.max_model_len = 32768;
  c.cache.device_capability = DeviceCapability{7, 0};
  Result<Plan> volta = testing_configs::PlanWith(full, c);
  ASSERT_TRUE(volta.ok()) << volta.status().ToString();
  EXPECT_EQ(volta->model.layers.front().model_dtype, ElementType::kFloat16);
}

// MiMo-V2-Flash's code builds its layers whose values are narrower than their keys on
// FLASH_ATTN_DIFFKV itself: no selection runs for them and --attention-backend does not reach
// them. Its sliding layers' sinks need FlashAttention 3 or 4, whose implementation asserts them as
// the model is built; below compute capability 8.0 no FlashAttention version runs at all.
TEST(DeviceCapability, BackendTheModelBuildsItself) {
  constexpr std::string_view kBuilt =
      "the model's code builds the layer on it itself, which no --attention-backend reaches";
  const std::string sinks_layer =
      "target layer 'model.layers.1.self_attn' (and 38 other layers) has learned attention sinks";
  LaunchOptions mimo = OnGpu(CorpusPath("mimo-v2-flash"), "9.0");
  mimo.tensor_parallel_size = 8;
  EXPECT_EQ(Planned(mimo), (Outcome{"FLASH_ATTN_DIFFKV", 4'535'447, ""}));
  mimo.device_capability = "10.0";
  EXPECT_EQ(Planned(mimo), (Outcome{"FLASH_ATTN_DIFFKV", 4'535'447, ""}));
  const auto sinks_refused = [&](const std::string& why, const std::string& advice) {
    return fmt::format(
        "\n  error [backend-sinks] {} but backend FLASH_ATTN_DIFFKV has none {}: "
        "{}, and its implementation asserts ('Sinks are only supported in "
        "FlashAttention 3') as the engine builds the model; {}",
        sinks_layer, why, kBuilt, advice);
  };
  for (const char* gpu : {"8.0", "12.0"}) {
    mimo.device_capability = gpu;
    EXPECT_EQ(Planned(mimo).errors,
              sinks_refused(fmt::format("on compute capability {} (--device-capability), where "
                                        "it runs FlashAttention 2",
                                        gpu),
                            "the model runs where FlashAttention 3 or 4 does (by default a "
                            "compute capability 9.x or 10.x GPU)"));
  }
  mimo.device_capability = "7.5";
  const std::string errors = Planned(mimo).errors;
  EXPECT_EQ(errors.substr(0, errors.find("\n  error [backend-sinks]")),
            fmt::format("\n  error [backend-compute-capability] target layer "
                        "'model.layers.0.self_attn' (and 47 other layers) runs on backend "
                        "FLASH_ATTN_DIFFKV, which runs on compute capability 8.0 or later only, "
                        "not 7.5 (--device-capability): {}, and no FlashAttention version runs "
                        "there: the layer's forward asserts ('FlashAttention version not "
                        "detected.') at the engine's first forward, once the weights are loaded; "
                        "the model does not run on that GPU",
                        kBuilt));

  // Without a GPU the sinks are the GPU's to settle; a named backend reaches no layer, and the
  // launch keeps its tokens.
  mimo.device_capability.reset();
  mimo.attention_backend = "FLASHINFER";
  Result<Plan> plan = PlanOn(mimo);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(Planned(mimo), (Outcome{"FLASH_ATTN_DIFFKV", 4'535'447, ""}));
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-built-by-model"),
            fmt::format("--attention-backend FLASHINFER does not reach the 48 attention layers of "
                        "'{}' (MiMoV2FlashForCausalLM): the model's code builds them on "
                        "FLASH_ATTN_DIFFKV itself (the layers whose values are narrower than "
                        "their keys), without the engine's selection; kvtopo plans them on "
                        "FLASH_ATTN_DIFFKV",
                        mimo.model));
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-sinks-gpu"),
            fmt::format("{}, which backend FLASH_ATTN_DIFFKV runs only as FlashAttention 3 or 4 "
                        "(by default a compute capability 9.x or 10.x GPU): {}, and elsewhere its "
                        "implementation asserts ('Sinks are only supported in FlashAttention 3') "
                        "as the engine builds the model; --device-capability settles it",
                        sinks_layer, kBuilt));
  for (const PlannedGroup& g : plan->groups) {
    EXPECT_EQ(g.backends, std::vector<std::string>{"FLASH_ATTN_DIFFKV"});
  }
  // A draft_model of the same code builds its layers on it too, whatever backend it inherits.
  mimo.speculative_config = fmt::format(
      R"({{"method": "draft_model", "model": "{}", "num_speculative_tokens": 2}})", mimo.model);
  mimo.max_model_len = 8192;
  Result<Plan> drafted = PlanOn(mimo);
  ASSERT_TRUE(drafted.ok()) << drafted.status().ToString();
  // The draft's layers join the target's buckets (full 9 + 9, windowed 39 + 39: 1 + 5 groups).
  ASSERT_EQ(drafted->groups.size(), 6u);
  EXPECT_EQ(drafted->groups.back().layers.back(), "draft.model.layers.43.self_attn");  // strided
  EXPECT_EQ(drafted->groups.back().backends, std::vector<std::string>{"FLASH_ATTN_DIFFKV"});
  mimo.speculative_config.reset();
  mimo.max_model_len.reset();

  mimo.attention_backend.reset();
  mimo.attention_config = R"({"flash_attn_version": 2})";
  EXPECT_EQ(Planned(mimo).errors,
            sinks_refused("under FlashAttention 2 (--attention-config flash_attn_version 2)",
                          "drop --attention-config flash_attn_version 2"));

  // Full layers whose values are as wide as their keys are selected as any: the named backend
  // reaches those.
  nlohmann::json config = testing_configs::CorpusConfig("mimo-v2-flash");
  config["v_head_dim"] = config["head_dim"];
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 8;
  c.cache.attention_backend = "TRITON_ATTN";
  Result<Plan> mixed = testing_configs::PlanWith(config, c);
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed->groups.front().backends, std::vector<std::string>{"TRITON_ATTN"});
  EXPECT_EQ(mixed->groups.back().backends, std::vector<std::string>{"FLASH_ATTN_DIFFKV"});
  EXPECT_EQ(DiagnosticMessage(*mixed, "backend-built-by-model"),
            "--attention-backend TRITON_ATTN does not reach 39 of the 48 attention layers of "
            "'config.json' (MiMoV2FlashForCausalLM): the model's code builds them on "
            "FLASH_ATTN_DIFFKV itself (the layers whose values are narrower than their keys), "
            "without the engine's selection; kvtopo plans them on FLASH_ATTN_DIFFKV, the other 9 "
            "on TRITON_ATTN");
}

}  // namespace
}  // namespace kvtopo
