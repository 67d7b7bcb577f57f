// Inputs that once crashed the CLI, ran without bound or were read wrongly: each now stops where
// it enters with a message naming the flag (or the file and field) and the allowed range.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"
#include "kvtopo/limits.h"

namespace kvtopo {
namespace {

using testing::RunCli;

struct Case {
  std::string args;
  int exit_code;
  std::string output;  // stdout and stderr together
};

void ExpectCase(const Case& c) {
  const auto r = RunCli(c.args, /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.out;
  EXPECT_EQ(r.out, c.output) << c.args;
}

// Were aborts (nlohmann's dump threw on the bytes): text from a path, the environment or a
// --speculative-config.KEY flag that is not UTF-8 reaches the output with U+FFFD in its place.
TEST(ReliabilityCli, BytesThatAreNotUtf8AreWrittenAsReplacementCharacters) {
  const std::string not_utf8 = "\xff";             // a byte UTF-8 never uses
  const std::string replacement = "\xef\xbf\xbd";  // U+FFFD in UTF-8
  const std::string dir = ::testing::TempDir() + "/kvtopo_m" + not_utf8 + "dir";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json")
      << std::ifstream(std::string(KVTOPO_SOURCE_DIR) + "/profiles/gpt-oss-120b.json").rdbuf();
  auto r = RunCli("plan '" + dir + "' -tp 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan["model"]["name"], ::testing::TempDir() + "/kvtopo_m" + replacement + "dir");
  std::filesystem::remove_all(dir);

  r = RunCli("check --json", /*merge_stderr=*/false, "VLLM_DCP_SHARD_DRAFT='on" + not_utf8 + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto check = nlohmann::json::parse(r.out);
  ASSERT_EQ(check["diagnostics"].size(), 1u) << r.out;
  EXPECT_EQ(check["diagnostics"][0]["message"],
            "VLLM_DCP_SHARD_DRAFT 'on" + replacement +
                "' is neither 1, true/yes nor 0/false/no; method 'dspark' reads it as unset: the "
                "draft cache is replicated across the 16 DCP ranks");

  r = RunCli("plan --speculative-config.method 'dspark" + not_utf8 + "'", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  const std::string message =
      "kvtopo: --speculative-config: 'method' 'dspark" + replacement + "' is not accepted; ";
  EXPECT_EQ(r.out.substr(0, message.size()), message) << r.out;
}

// Were unbounded reads: a workload file of /dev/zero grew until the allocator aborted, a FIFO
// blocked forever, and a config.json of any size (a weights file passed as MODEL) was read whole.
TEST(ReliabilityCli, FilesThatAreNotRegularOrTooLargeAreRefusedBeforeTheyAreRead) {
  const std::string fifo = ::testing::TempDir() + "/kvtopo_fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string dir = ::testing::TempDir() + "/kvtopo_big_config";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json").close();
  std::filesystem::resize_file(dir + "/config.json", kMaxConfigFileBytes + 1);  // sparse
  for (const Case& c : std::vector<Case>{
           {"simulate --workload-file /dev/zero", 2,
            "kvtopo: --workload-file '/dev/zero' is not a regular file\n"},
           {"simulate --workload-file " + fifo, 2,
            "kvtopo: --workload-file '" + fifo + "' is not a regular file\n"},
           {"simulate --workload-file /nonexistent.jsonl", 2,
            "kvtopo: --workload-file '/nonexistent.jsonl' does not exist\n"},
           {"plan " + dir, 2,
            "kvtopo: config.json '" + dir +
                "/config.json' is 16777217 bytes; kvtopo reads at most "
                "16777216 from one\n"},
       }) {
    ExpectCase(c);
  }
  std::filesystem::remove(fifo);
  std::filesystem::remove_all(dir);
}

// Was exit 0 with the report lost: output that cannot be written (here a full device) is an
// error naming the cause.
TEST(ReliabilityCli, OutputThatCannotBeWrittenIsAnError) {
  const std::string err = ::testing::TempDir() + "/kvtopo_full_stderr";
  for (const std::string cmd : {"plan --json", "check", "plan"}) {
    const auto r = RunCli(cmd + " >/dev/full 2>" + err + "; echo $?");
    EXPECT_EQ(r.out, "2\n") << cmd;
    std::ifstream in(err);
    const std::string message((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    EXPECT_EQ(message, "kvtopo: writing the output failed: No space left on device\n") << cmd;
  }
  std::filesystem::remove(err);
}

// Was an abort ("terminate called after throwing an instance of 'std::bad_alloc'"): a pool
// larger than the memory the process may use.
TEST(ReliabilityCli, OutOfMemoryIsAMessage) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the limit allows";
#else
  const std::string command = "ulimit -v 1500000; " + std::string(KVTOPO_CLI_PATH) +
                              " simulate --num-gpu-blocks-override 60000000 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(out,
            "kvtopo: out of memory; a smaller pool (--kv-cache-memory, --num-gpu-blocks-override, "
            "verify's --num-blocks) or workload needs less\n");
#endif
}

TEST(ReliabilityCli, OutOfRangeFlagsNameTheFlagAndTheRange) {
  for (const Case& c : std::vector<Case>{
           // Was SIGFPE (exit 136): a checked product overflowed and a divide by its 0 followed.
           {"check glm-5.3-flash --block-size 4611686018427387904", 2,
            "kvtopo: --block-size must be in [1, 1048576], got 4611686018427387904\n"},
           {"check --max-model-len 4611686018427387904", 2,
            "kvtopo: --max-model-len must be in [1, 2147483647], got 4611686018427387904\n"},
           {"check glm-5.3-flash --mamba-block-size 4611686018427387904", 2,
            "kvtopo: --mamba-block-size must be in [1, 1048576], got 4611686018427387904\n"},
           {"check --prefill-context-parallel-size 4611686018427387904", 2,
            "kvtopo: --prefill-context-parallel-size must be in [1, 4096], got "
            "4611686018427387904\n"},
           {"check --max-num-seqs 1099511627776", 2,
            "kvtopo: --max-num-seqs must be in [1, 1048576], got 1099511627776\n"},
           {"check -dcp 8192", 2,  // named as typed
            "kvtopo: -dcp must be in [1, 4096], got 8192\n"},
           {"check --kv-cache-memory 2048TiB", 2,
            "kvtopo: --kv-cache-memory must be in [1, 1125899906842624] bytes, got '2048TiB'\n"},
           {"check kimi-k2.6 --speculative-config "
            "'{\"method\":\"eagle3\",\"num_speculative_tokens\":4611686018427387904}'",
            2,
            "kvtopo: --speculative-config: 'num_speculative_tokens' must be an integer in [1, "
            "1024], got 4611686018427387904\n"},
           // CLI11 used to clamp both to 18446744073709551615.
           {"simulate --workload w1 --seed -1", 2,
            "kvtopo: --seed must be an integer in [0, 18446744073709551615], got '-1'\n"},
           {"simulate --workload w1 --seed 18446744073709551616", 2,
            "kvtopo: --seed must be an integer in [0, 18446744073709551615], got "
            "'18446744073709551616'\n"},
           {"simulate --workload-file /", 2,
            "kvtopo: --workload-file: '/' is a directory; pass a JSON-lines file\n"},
           // Was 28 s and 7.2 GiB; with -dcp 4096 killed.
           {"slots -dcp 16 --block-size 1048576 --seq-len 16777216 --block-ids 1 --json", 2,
            "kvtopo slots: 16 ranks x --seq-len 16777216 is more than the 16777216 slots one "
            "call prints\n"},
           {"slots -dcp 4096 --block-size 1 --seq-len 16777216 --block-ids 1 --json", 2,
            "kvtopo slots: 4096 ranks x --seq-len 16777216 is more than the 16777216 slots one "
            "call prints\n"},
           // Printed slots past 2^62.
           {"slots --block-size 4611686018427387904 --seq-len 4 --block-ids 1", 2,
            "kvtopo: --block-size must be in [1, 1048576], got 4611686018427387904\n"},
           // Was read as group 0.
           {"slots --group -3 --seq-len 4 --block-ids 1", 2,
            "kvtopo slots: --group must be in [0, 2147483647], got -3\n"},
           // CLI11 clamped both to 2^63 - 1 (then a geometry overflow, or group 2^63 - 1).
           {"slots --seq-len 99999999999999999999 --block-ids 1", 2,
            "kvtopo slots: --seq-len: '99999999999999999999' is out of the 64-bit integer "
            "range\n"},
           {"slots --group 18446744073709551617 --seq-len 4 --block-ids 1", 2,
            "kvtopo slots: --group: '18446744073709551617' is out of the 64-bit integer range\n"},
           {"slots --seq-len 4294967296 --block-ids 1", 2,
            "kvtopo slots: --seq-len must be in [0, 2147483647], got 4294967296\n"},
           // Said "is not a block id (... non-negative integers)" of a non-negative integer.
           {"slots --seq-len 4 --block-ids 99999999999999999999", 2,
            "kvtopo slots: --block-ids: 99999999999999999999 is beyond the largest block id, "
            "2147483647 (block ids are 32-bit)\n"},
           {"slots --seq-len 4 --block-ids +5", 2,
            "kvtopo slots: --block-ids: '+5' is not a block id (a comma-separated list of "
            "non-negative integers)\n"},
       }) {
    ExpectCase(c);
  }
}

TEST(ReliabilityCli, BlockTablesBeyondTheBudgetAreRejected) {
  // --max-num-seqs 2^40 was accepted with 5,560 TiB of block tables per rank.
  // (The engine refuses more rows than tokens per step too.)
  const auto r = RunCli("check --max-num-seqs 1048576", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out,
            "rejected: kimi-k3\n"
            "  error [max-num-batched-tokens] --max-num-batched-tokens 1024 is below "
            "--max-num-seqs 1048576: the engine refuses it; raise --max-num-batched-tokens or "
            "lower --max-num-seqs\n"
            "  warning [mamba-cudagraph-blocks] --max-num-seqs 1048576 exceeds the 499 blocks of "
            "the pool, and the engine's full decode CUDA graphs need a recurrent-state block for "
            "each request: the engine refuses the launch if its decode steps replay full "
            "graphs, which kvtopo cannot tell here (speculative decoding on backend B12X_MLA, "
            "whose CUDA graph support kvtopo does not know); lower --max-num-seqs to 499 or "
            "fewer, give the KV cache more memory, or pass --enforce-eager\n"
            "  error [block-table-memory] the block tables of --max-num-seqs 1048576 rows at "
            "--max-model-len 1000000 need 72775368704 B per rank, more than the 1325000000 B "
            "KV-cache budget (--kv-cache-memory); lower --max-num-seqs or --max-model-len\n");
}

// A copy of an embedded profile with one field changed, written where the test can pass it.
std::string ConfigWith(const std::string& profile, const std::string& section,
                       const std::string& key, const nlohmann::json& value) {
  std::ifstream in(std::string(KVTOPO_SOURCE_DIR) + "/profiles/" + profile + ".json");
  nlohmann::json j = nlohmann::json::parse(in);
  (section.empty() ? j : j[section])[key] = value;
  const std::string path = ::testing::TempDir() + "/kvtopo_" + profile + "_" + key + ".json";
  std::ofstream(path) << j.dump();
  return path;
}

TEST(ReliabilityCli, ConfigFieldsOutOfRangeNameTheFileAndField) {
  struct ConfigCase {
    std::string profile, section, key;
    nlohmann::json value;
    std::string message;  // after "config.json '<path>': "
  };
  for (const ConfigCase& c : std::vector<ConfigCase>{
           // Showed an overflowed operand (-9223372036854775808) in a page-size product.
           {"gpt-oss-120b", "", "head_dim", int64_t{1} << 62,
            "field 'head_dim' must be in [1, 65536], got 4611686018427387904"},
           {"gpt-oss-120b", "", "max_position_embeddings", int64_t{1} << 62,
            "field 'max_position_embeddings' must be in [1, 2147483647], got "
            "4611686018427387904"},
           // Ran until killed.
           {"gpt-oss-120b", "", "num_hidden_layers", 10'000'000,
            "field 'num_hidden_layers' must be in [1, 4096], got 10000000"},
           {"glm-5.3-flash", "text_config", "num_hidden_layers", int64_t{1} << 31,
            "field 'text_config.num_hidden_layers' must be in [1, 4096], got 2147483648"},
           {"kimi-k2.6", "text_config", "kv_lora_rank", uint64_t{1} << 63,
            "field 'text_config.kv_lora_rank' must be an integer that fits 64 bits, got "
            "9223372036854775808"},
           // A list entry past 2^63 - 1 was read as -1.
           {"kimi-linear-48b", "linear_attn_config", "full_attn_layers",
            nlohmann::json::array({4, uint64_t{18446744073709551615u}}),
            "field 'linear_attn_config.full_attn_layers' must be a list of integers that fit 64 "
            "bits, got [4,18446744073709551615]"},
       }) {
    const std::string path = ConfigWith(c.profile, c.section, c.key, c.value);
    const auto r = RunCli("check " + path, /*merge_stderr=*/true);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.out, "kvtopo: config.json '" + path + "': " + c.message + "\n");
  }
}

}  // namespace
}  // namespace kvtopo
