// Hugging Face repo ids read from the local hub cache, as the engine reads them offline: the
// cache directory from the environment, refs/<revision> to a snapshot, the snapshot read as the
// model's directory, and the messages for what the cache does not hold.
#include "model/hf_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "model/architectures.h"
#include "test_configs.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// Sets (or, for nullptr, unsets) environment variables for one test and restores them after.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<const char*, const char*>>& vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old == nullptr ? std::nullopt : std::optional<std::string>(old));
      if (value == nullptr) {
        unsetenv(name);
      } else {
        setenv(name, value, 1);
      }
    }
  }
  ScopedEnv(const char* name, const char* value)
      : ScopedEnv(std::vector<std::pair<const char*, const char*>>{{name, value}}) {}
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// A hub cache of this test's own (ctest runs tests side by side), removed at the end.
class HubCache {
 public:
  HubCache()
      : root_(std::filesystem::temp_directory_path() /
              ("kvtopo_hub_" +
               std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()))) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~HubCache() { std::filesystem::remove_all(root_); }
  HubCache(const HubCache&) = delete;
  HubCache& operator=(const HubCache&) = delete;

  const std::filesystem::path& root() const { return root_; }
  // `file` with `content` in the snapshot `commit` of repo `folder` (models--org--name).
  std::filesystem::path Put(const std::string& folder, const std::string& commit,
                            const std::string& file, const std::string& content) const {
    const std::filesystem::path dir = root_ / folder / "snapshots" / commit;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / file) << content;
    return dir / file;
  }
  // refs/<ref> naming `commit`, written as huggingface_hub writes it (no newline).
  void Ref(const std::string& folder, const std::string& ref, const std::string& commit) const {
    const std::filesystem::path path = root_ / folder / "refs" / ref;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << commit;
  }

 private:
  std::filesystem::path root_;
};

// The plan's hf-cache info (the last, if several).
std::string CacheInfo(const Plan& plan) {
  std::string info;
  for (const Diagnostic& d : plan.diagnostics) {
    if (d.code == "hf-cache") info = d.message;
  }
  return info;
}

constexpr const char* kLlamaFolder = "models--meta-llama--Llama-3.1-8B-Instruct";
constexpr const char* kLlamaCommit = "0e9e39f249a16976918f6564b8830bc894c89659";

TEST(HfCache, RepoIdShapes) {
  for (const char* id : {"Qwen/Qwen3-8B", "gpt2", "meta-llama/Llama-3.1-8B-Instruct", "a_b/c.d_"}) {
    EXPECT_TRUE(internal::IsHfRepoId(id)) << id;
  }
  for (const std::string& id :
       std::vector<std::string>{"", "./x", "/abs/path", "a/b/c", "org--x/name", "a/b..c", "-a/b",
                                "a/b-", "a/.b", "a b/c", std::string(97, 'a')}) {
    EXPECT_FALSE(internal::IsHfRepoId(id)) << id;
  }
  EXPECT_TRUE(internal::IsHfRepoId(std::string(96, 'a')));
}

// huggingface_hub's constants: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, with
// HF_HOME defaulting to ${XDG_CACHE_HOME:-~/.cache}/huggingface; '~' and variables expanded.
TEST(HfCache, CacheDirFromEnvironment) {
  ScopedEnv env({{"HF_HUB_CACHE", "/x/hub"},
                 {"HUGGINGFACE_HUB_CACHE", "/y/hub"},
                 {"HF_HOME", "/h"},
                 {"XDG_CACHE_HOME", "/c"},
                 {"HOME", "/home/u"},
                 {"KVTOPO_HUB_ROOT", "/t"}});
  EXPECT_EQ(internal::HfHubCacheDir(), "/x/hub");
  unsetenv("HF_HUB_CACHE");
  EXPECT_EQ(internal::HfHubCacheDir(), "/y/hub");
  unsetenv("HUGGINGFACE_HUB_CACHE");
  EXPECT_EQ(internal::HfHubCacheDir(), "/h/hub");
  unsetenv("HF_HOME");
  EXPECT_EQ(internal::HfHubCacheDir(), "/c/huggingface/hub");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(internal::HfHubCacheDir(), "/home/u/.cache/huggingface/hub");
  setenv("HF_HUB_CACHE", "~/hc", 1);
  EXPECT_EQ(internal::HfHubCacheDir(), "/home/u/hc");
  setenv("HF_HUB_CACHE", "$KVTOPO_HUB_ROOT/a/${KVTOPO_HUB_ROOT}/$KVTOPO_UNSET/${KVTOPO_UNSET}/$",
         1);
  EXPECT_EQ(internal::HfHubCacheDir(), "/t/a//t/$KVTOPO_UNSET/${KVTOPO_UNSET}/$");
  setenv("HF_HUB_CACHE", "~other/hub", 1);
  EXPECT_EQ(internal::HfHubCacheDir(), "~other/hub");
}

// A repo id no profile serves is read from its cached snapshot (refs/main names the commit): the
// plan is the config's, named by the repo id, with an info saying where it was read.
TEST(HfCache, PlansCachedSnapshot) {
  HubCache hub;
  ScopedEnv env("HF_HUB_CACHE", hub.root().c_str());
  const std::filesystem::path config =
      hub.Put(kLlamaFolder, kLlamaCommit, "config.json", testing_configs::Llama31_8B().dump());
  hub.Ref(kLlamaFolder, "main", kLlamaCommit);
  LaunchConfig c;
  c.model = "meta-llama/Llama-3.1-8B-Instruct";
  c.kv_cache_memory_bytes = 16 * kGiB;
  c.cache.max_model_len = 65536;
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.model_name, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  EXPECT_EQ(CacheInfo(*plan),
            "'meta-llama/Llama-3.1-8B-Instruct' is read from the Hugging Face cache: snapshot "
            "0e9e39f249a16976918f6564b8830bc894c89659 of revision 'main', as the engine reads it "
            "offline (HF_HUB_OFFLINE=1); online it reads the hub's current files for that "
            "revision");
  auto loaded = internal::LoadModelConfig(c.model);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->file, config.string());
  EXPECT_EQ(loaded->name, "meta-llama/Llama-3.1-8B-Instruct");

  // A commit named outright is its snapshot; a local directory of the same name wins over the
  // cache, as in the engine (it is then read, and holds no config).
  EXPECT_TRUE(internal::LoadModelConfig(c.model, "auto", kLlamaCommit).ok());
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(hub.root());
  std::filesystem::create_directories("meta-llama/Llama-3.1-8B-Instruct");
  auto local = internal::LoadModelConfig(c.model);
  std::filesystem::current_path(cwd);
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find(
                "a repo id the Hugging Face cache holds, nor a config.json or params.json file"),
            std::string::npos)
      << local.status().message();
}

// The draft's own `revision` picks its snapshot (the engine builds the draft's model config with
// SpeculativeConfig.revision, not the target's): main holds a one-layer EAGLE-3 head, v2 a
// two-layer one. Beside Llama-3.1-8B in 20 GiB: 33 and 34 layers of 64 KiB pages.
TEST(HfCache, DraftRevision) {
  HubCache hub;
  ScopedEnv env("HF_HUB_CACHE", hub.root().c_str());
  const std::string folder = "models--yuhuili--EAGLE3-LLaMA3.1-Instruct-8B";
  nlohmann::json head = nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096,
    "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 131072, "draft_vocab_size": 32000, "vocab_size": 128256,
    "torch_dtype": "bfloat16"})");
  hub.Put(folder, "c1", "config.json", head.dump());
  head["num_hidden_layers"] = 2;
  hub.Put(folder, "c2", "config.json", head.dump());
  hub.Ref(folder, "main", "c1");
  hub.Ref(folder, "v2", "c2");
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.speculative = ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 3,
                                             "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"})")
                      .value();
  auto plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->pool.num_blocks, 9929);  // 20 GiB / (33 x 64 KiB)
  EXPECT_EQ(CacheInfo(*plan),
            "draft 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B' is read from the Hugging Face cache: "
            "snapshot c1 of revision 'main', as the engine reads it offline (HF_HUB_OFFLINE=1); "
            "online it reads the hub's current files for that revision");
  c.speculative->revision = "v2";
  plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 9637);  // 20 GiB / (34 x 64 KiB)
  auto parsed = ParseSpeculativeConfig(
      R"({"method": "eagle3", "num_speculative_tokens": 3, "revision": "v2"})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->revision, "v2");
  EXPECT_TRUE(parsed->not_planned_keys.empty());
  EXPECT_EQ(
      ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 3, "revision": 2})")
          .status()
          .message(),
      "--speculative-config: 'revision' must be a branch, tag or commit name of the "
      "draft's repo");
  c.speculative->revision = "../c1";
  EXPECT_EQ(testing_configs::PlanWith(testing_configs::Llama31_8B(), c).status().message(),
            "--speculative-config revision '../c1' is not a revision: give a branch, tag or "
            "commit name (no '.' or '..' parts, not an absolute path)");
}

// What the cache does not hold, named: the repo, the revision's snapshot (and the commit its ref
// names), a snapshot without a config; --revision reaches LaunchConfig from the option table.
TEST(HfCache, MissingEntriesNamed) {
  HubCache hub;
  ScopedEnv env("HF_HUB_CACHE", hub.root().c_str());
  const std::string root = hub.root().string();
  auto message = [](const std::string& model, const std::string& revision) {
    return internal::LoadModelConfig(model, "auto", revision).status().message();
  };
  auto tail = [](const std::string& m) { return m.substr(m.find("a repo id the Hugging")); };
  EXPECT_EQ(tail(message("Qwen/Qwen3-8B", "")),
            "a repo id the Hugging Face cache holds (the Hugging Face cache '" + root +
                "' holds no models--Qwen--Qwen3-8B; `hf download Qwen/Qwen3-8B config.json` puts "
                "its config there), nor a config.json or params.json file or a directory holding "
                "one; pass one of those as MODEL");
  hub.Put("models--Qwen--Qwen3-8B", "c1", "config.json", "{}");
  hub.Ref("models--Qwen--Qwen3-8B", "main", "c9");
  EXPECT_EQ(tail(message("Qwen/Qwen3-8B", "")),
            "a repo id the Hugging Face cache holds (the Hugging Face cache '" + root +
                "/models--Qwen--Qwen3-8B' holds no snapshot of revision 'main' (refs/main names "
                "'c9'); `hf download Qwen/Qwen3-8B config.json` puts its config there), nor a "
                "config.json or params.json file or a directory holding one; pass one of those as "
                "MODEL");
  EXPECT_EQ(tail(message("Qwen/Qwen3-8B", "v2")),
            "a repo id the Hugging Face cache holds (the Hugging Face cache '" + root +
                "/models--Qwen--Qwen3-8B' holds no snapshot of revision 'v2'; `hf download "
                "Qwen/Qwen3-8B config.json --revision v2` puts its config there), nor a "
                "config.json or params.json file or a directory holding one; pass one of those as "
                "MODEL");
  hub.Put("models--Qwen--Qwen3-8B", "c2", "README.md", "");
  EXPECT_EQ(message("Qwen/Qwen3-8B", "c2"),
            "model 'Qwen/Qwen3-8B': the Hugging Face cache's snapshot '" + root +
                "/models--Qwen--Qwen3-8B/snapshots/c2' (revision 'c2') holds neither config.json "
                "nor params.json, which the engine reads; `hf download Qwen/Qwen3-8B config.json "
                "--revision c2` puts its config there");
  EXPECT_EQ(message("Qwen/Qwen3-8B", "/etc"),
            "--revision '/etc' is not a revision: give a branch, tag or commit name (no '.' or "
            "'..' parts, not an absolute path)");
  // A revision with '/' (a pull request's ref) names refs/<revision>.
  hub.Ref("models--Qwen--Qwen3-8B", "refs/pr/1", "c1");
  EXPECT_TRUE(internal::LoadModelConfig("Qwen/Qwen3-8B", "auto", "refs/pr/1").ok());

  LaunchOptions o;
  o.model = "Qwen/Qwen3-8B";
  o.revision = "refs/pr/1";
  auto launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->revision, "refs/pr/1");

  // With VLLM_USE_MODELSCOPE true (any case) the engine reads ModelScope's hub instead.
  ScopedEnv modelscope("VLLM_USE_MODELSCOPE", "True");
  EXPECT_EQ(message("Qwen/Qwen3-8B", "refs/pr/1"),
            "model 'Qwen/Qwen3-8B': VLLM_USE_MODELSCOPE is true, so the engine fetches the repo "
            "from ModelScope's hub, whose cache kvtopo does not read; pass the model's directory "
            "(or unset the variable to read the Hugging Face cache)");
  setenv("VLLM_USE_MODELSCOPE", "1", 1);  // not "true": the Hugging Face cache
  EXPECT_TRUE(internal::LoadModelConfig("Qwen/Qwen3-8B", "auto", "refs/pr/1").ok());
}

// A snapshot holding params.json beside config.json but no consolidated weights is read from
// config.json, as the engine reads it offline; the info says what the engine does online.
TEST(HfCache, MistralFormatOnlineNoted) {
  HubCache hub;
  ScopedEnv env("HF_HUB_CACHE", hub.root().c_str());
  const std::string folder = "models--mistralai--Mistral-Small-3.1-24B-Instruct-2503";
  hub.Put(folder, "c1", "config.json", testing_configs::Llama31_8B().dump());
  hub.Put(folder, "c1", "params.json", "{}");
  hub.Ref(folder, "main", "c1");
  auto loaded = internal::LoadModelConfig("mistralai/Mistral-Small-3.1-24B-Instruct-2503");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(loaded->file.ends_with("/snapshots/c1/config.json")) << loaded->file;
  EXPECT_EQ(loaded->origin,
            "'mistralai/Mistral-Small-3.1-24B-Instruct-2503' is read from the Hugging Face "
            "cache: snapshot c1 of revision 'main', as the engine reads it offline "
            "(HF_HUB_OFFLINE=1); online it reads the hub's current files for that revision; the "
            "snapshot holds params.json without consolidated*.safetensors, so config.json is "
            "read, as offline; online the engine lists the hub's files and reads params.json "
            "when the repo has consolidated weights (--config-format mistral plans that)");
}

// The engine's remote GGUF names (gguf_utils.is_remote_gguf): repo:QUANT with a GGML type, a
// size suffix or a dash prefix; the config is the repo's config.json from the cache, required.
TEST(HfCache, RemoteGgufName) {
  std::string repo;
  std::string quant;
  for (const char* name : {"unsloth/Qwen3-8B-GGUF:Q4_K_M", "unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL",
                           "org/m.v1_x:BF16", "org/m:IQ2_XXS", "org/m:Custom-UD-Q4_K"}) {
    EXPECT_TRUE(internal::SplitRemoteGguf(name, repo, quant)) << name;
  }
  EXPECT_EQ(repo, "org/m");
  EXPECT_EQ(quant, "Custom-UD-Q4_K");
  for (const char* name : {"unsloth/Qwen3-8B-GGUF", "org/m:Q9_K", "org/m:RANDOM", "org/m:Q4_K_M/x",
                           "m:Q4_K", "-org/m:Q4_K", "a/b/c:Q4_K", "org/m:", "org/m:Q4_K_XXL"}) {
    EXPECT_FALSE(internal::SplitRemoteGguf(name, repo, quant)) << name;
  }

  HubCache hub;
  ScopedEnv env("HF_HUB_CACHE", hub.root().c_str());
  const std::string folder = "models--unsloth--Qwen3-0.6B-GGUF";
  hub.Ref(folder, "main", "g1");
  hub.Put(folder, "g1", "Qwen3-0.6B-Q4_K_M.gguf", "GGUF");
  const std::string root = hub.root().string();
  EXPECT_EQ(internal::LoadModelConfig("unsloth/Qwen3-0.6B-GGUF:Q4_K_M").status().message(),
            "model 'unsloth/Qwen3-0.6B-GGUF:Q4_K_M' is a remote GGUF name (repo:QUANT): the engine "
            "reads the config.json of repo 'unsloth/Qwen3-0.6B-GGUF' and refuses a GGUF repo "
            "without one, and the Hugging Face cache's snapshot '" +
                root +
                "/models--unsloth--Qwen3-0.6B-GGUF/snapshots/g1' (revision 'main') holds none; `hf "
                "download unsloth/Qwen3-0.6B-GGUF config.json` puts it there if the repo has one; "
                "else pass --hf-config-path naming the unquantized model's config, as the engine "
                "asks");
  EXPECT_EQ(
      internal::LoadModelConfig("unsloth/Qwen3-8B-GGUF:Q8_0", "auto", "v1").status().message(),
      "model 'unsloth/Qwen3-8B-GGUF:Q8_0' is a remote GGUF name (repo:QUANT): the engine "
      "reads the config.json of repo 'unsloth/Qwen3-8B-GGUF', and the Hugging Face cache '" +
          root +
          "' holds no models--unsloth--Qwen3-8B-GGUF; `hf download unsloth/Qwen3-8B-GGUF "
          "config.json --revision v1` puts it there if the repo has one; else pass "
          "--hf-config-path naming the unquantized model's config, as the engine asks");
  // Qwen3-0.6B: 28 layers of 8 K/V heads of 128, 64 KiB pages: 9,362 blocks in 16 GiB.
  hub.Put(folder, "g1", "config.json", R"({
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "num_hidden_layers": 28, "max_position_embeddings": 40960, "torch_dtype": "bfloat16"})");
  LaunchConfig c;
  c.model = "unsloth/Qwen3-0.6B-GGUF:Q4_K_M";
  c.kv_cache_memory_bytes = 16 * kGiB;
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.model_name, "unsloth/Qwen3-0.6B-GGUF:Q4_K_M");
  EXPECT_EQ(plan->pool.num_blocks, 9362);
  EXPECT_EQ(plan->capacity.max_tokens, 149792);
  EXPECT_EQ(CacheInfo(*plan),
            "'unsloth/Qwen3-0.6B-GGUF:Q4_K_M' is a remote GGUF name: its config is the config.json "
            "of repo 'unsloth/Qwen3-0.6B-GGUF', read from the Hugging Face cache (snapshot g1 of "
            "revision 'main'), as the engine downloads it online; under HF_HUB_OFFLINE=1 the "
            "engine cannot serve this name (its offline path takes the whole name for a repo id, "
            "which ':' makes invalid)");
}

// A speculators-format model given as the model (the engine's maybe_override_with_speculators):
// its verifier is served, with it as the draft and the speculative config it states, which
// replaces one given. Llama-3.1-8B with a one-layer EAGLE-3 head in 20 GiB: 9,929 blocks.
TEST(HfCache, SpeculatorsModelServesItsVerifier) {
  HubCache hub;
  ScopedEnv env("HF_HUB_CACHE", hub.root().c_str());
  hub.Put(kLlamaFolder, "l1", "config.json", testing_configs::Llama31_8B().dump());
  hub.Ref(kLlamaFolder, "main", "l1");
  const std::string folder = "models--RedHatAI--Llama-3.1-8B-Instruct-speculator.eagle3";
  nlohmann::json speculators = nlohmann::json::parse(R"({
    "architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
    "draft_vocab_size": 32000,
    "speculators_config": {"algorithm": "eagle3",
      "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
      "verifier": {"name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}},
    "transformer_layer_config": {"model_type": "llama", "hidden_size": 4096,
      "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8,
      "head_dim": 128, "max_position_embeddings": 131072, "vocab_size": 128256,
      "torch_dtype": "bfloat16"}})");
  const std::filesystem::path config = hub.Put(folder, "s1", "config.json", speculators.dump());
  hub.Ref(folder, "main", "s1");
  const std::string model = "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3";
  LaunchOptions o;
  o.model = model;
  o.kv_cache_memory = "20GiB";
  o.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 5})";
  auto launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->model, "meta-llama/Llama-3.1-8B-Instruct");
  ASSERT_TRUE(launch->speculative.has_value());
  EXPECT_EQ(launch->speculative->method, "eagle3");
  EXPECT_EQ(launch->speculative->model, model);
  EXPECT_EQ(launch->speculative->num_speculative_tokens, 3);
  std::vector<std::string> found;
  for (const Diagnostic& d : launch->launch_diagnostics) {
    if (d.code.starts_with("speculators")) found.push_back(d.code + ": " + d.message);
  }
  EXPECT_EQ(found,
            (std::vector<std::string>{
                "speculators-model: '" + model +
                    "' is a speculators-format draft: the engine serves its verifier "
                    "'meta-llama/Llama-3.1-8B-Instruct' with it as the draft, speculative config "
                    "{\"method\":\"eagle3\",\"model\":\"" +
                    model + "\",\"num_speculative_tokens\":3} (maybe_override_with_speculators)",
                "speculators-config-replaced: --speculative-config {\"method\": \"ngram\", "
                "\"num_speculative_tokens\": 5} is dropped: the engine replaces it with the one "
                "speculators draft '" +
                    model + "' states"}));
  auto plan = PlanLaunch(*launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.model_name, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(plan->pool.num_blocks, 9929);

  // PEagle runs as eagle3 with parallel drafting.
  speculators["speculators_model_type"] = "peagle";
  speculators["mask_token_id"] = 128002;
  hub.Put(folder, "s1", "config.json", speculators.dump());
  o.speculative_config.reset();
  launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->speculative->method, "eagle3");
  EXPECT_TRUE(launch->speculative->parallel_drafting);

  // The structure the engine validates, and a verifier kvtopo cannot read, are named.
  speculators["speculators_config"].erase("proposal_methods");
  hub.Put(folder, "s1", "config.json", speculators.dump());
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "config.json '" + config.string() +
                "': field 'speculators_config.proposal_methods' must hold a first proposal "
                "method with 'speculative_tokens': the engine takes its token count from it");
  speculators["speculators_config"]["proposal_methods"] = {{{"speculative_tokens", 3}}};
  speculators["speculators_config"]["verifier"]["name_or_path"] = "meta-llama/Llama-3.1-70B";
  hub.Put(folder, "s1", "config.json", speculators.dump());
  const std::string message = ToLaunchConfig(o).status().message();
  EXPECT_EQ(message.substr(0, message.find(" is neither")),
            "model '" + model +
                "' is a speculators-format draft whose verifier is 'meta-llama/Llama-3.1-70B' "
                "(speculators_config.verifier.name_or_path), which the engine serves: model "
                "'meta-llama/Llama-3.1-70B'");
}

}  // namespace
}  // namespace kvtopo
