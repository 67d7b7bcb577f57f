// `kvtopo verify` as users run it (one process: every rank in a loop).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"

namespace kvtopo {
namespace {

using testing::RunCli;

constexpr const char* kSmallLaunch =
    "verify kimi-k2.6 -tp 4 -dcp 4 --max-model-len 32768 "
    "--block-size 64 --dcp-kv-cache-interleave-size 16";

TEST(VerifyCli, SmallLaunchPassesWithItsFiguresAsJson) {
  auto r = RunCli(std::string(kSmallLaunch) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "kimi-k2.6");
  EXPECT_EQ(j["dcp_size"], 4);
  EXPECT_EQ(j["processes"], 1);
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_EQ(j["groups"][0]["placement"], "sharded");
  EXPECT_EQ(j["groups"][0]["interleave"], 16);
  EXPECT_EQ(j["groups"][0]["queries"], 12);  // 3 requests x 4 decode steps, no drafts
  EXPECT_LE(j["groups"][0]["max_rel_error"].get<double>(), 1e-5);
  EXPECT_EQ(j["requests"][3]["num_tokens"], 32768);
  EXPECT_FALSE(j.contains("failure"));
}

TEST(VerifyCli, ForeignSlotMappingExitsOneNamingGroupRequestAndPosition) {
  auto r = RunCli(std::string(kSmallLaunch) + " --inject foreign-slot-mapping");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("FAIL (ownership check): group 0 (mla target, sharded), request 0, "
                       "position 0: the position is held by 2 ranks (0, 1), expected 1"),
            std::string::npos)
      << r.out;
  // The same failure as JSON.
  r = RunCli(std::string(kSmallLaunch) + " --inject foreign-slot-mapping --json");
  EXPECT_EQ(r.exit_code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["passed"].get<bool>());
  EXPECT_EQ(j["failure"].dump(),
            R"({"check":"ownership","group":0,"message":"group 0 (mla target, sharded), )"
            R"(request 0, position 0: the position is held by 2 ranks (0, 1), expected 1",)"
            R"("position":0,"rank":-1,"request":0})");
}

TEST(VerifyCli, DcpScaledRecurrentTableOnTheDefaultLaunchExitsOne) {
  auto r = RunCli("verify --requests 0 --inject dcp-scaled-recurrent-table");
  EXPECT_EQ(r.exit_code, 1);
  // cdiv(1,000,000, 768 x 16) = 82 checkpoint columns: token 82 x 768 needs the 83rd.
  EXPECT_NE(r.out.find("group 0 (recurrent target, recurrent), request 0, position 62976: the "
                       "row update needs 90 manager columns, but rank 0's block table has 89"),
            std::string::npos)
      << r.out;
}

// Integer flags are read as text: CLI11 would clamp -1 and 2^64 to 2^64 - 1 silently.
TEST(VerifyCli, OutOfRangeNumbersAreUsageErrorsNamingTheFlag) {
  const std::pair<const char*, const char*> cases[] = {
      {"--seed -1", "kvtopo: --seed must be an integer in [0, 18446744073709551615], got '-1'\n"},
      {"--seed 18446744073709551616",
       "kvtopo: --seed must be an integer in [0, 18446744073709551615], got "
       "'18446744073709551616'\n"},
      {"--requests 99999999999999999999999",
       "kvtopo: --requests: '99999999999999999999999' is out of the 64-bit integer range\n"},
      {"--requests 65", "kvtopo: --requests 65 is outside [0, 64]\n"},
      {"--max-relative-error inf",
       "kvtopo: --max-relative-error inf must be positive and finite\n"},
      {"gpt-oss-120b -tp 8 --max-model-len 4096 --kv-heads 256 --query-heads-per-kv 256 "
       "--head-dim 4096",
       "kvtopo: group 0: 65536 query heads x 4097 floats is 268500992 floats per query token, "
       "beyond verify's 1048576; lower --kv-heads, --query-heads-per-kv, --head-dim, "
       "--mla-query-heads or --mla-latent-dim\n"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = RunCli(std::string("verify ") + flags, /*merge_stderr=*/true);
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_EQ(r.out, message) << flags;
  }
}

// --real-head-dims takes the model's widths (GLM-5.3-Flash's 576-float MLA rows, its recurrent
// groups tables only); the reference rows they take are bounded.
TEST(VerifyCli, RealHeadDimsPassAndTheirReferenceIsBounded) {
  const std::string launch =
      "verify glm-5.3-flash -tp 4 -dcp 4 --max-num-seqs 8 --decode-steps 2 --real-head-dims ";
  auto r = RunCli(launch + "--requests 2 --max-model-len 2048 --kv-cache-memory 1GiB --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["passed"].get<bool>());
  ASSERT_EQ(j["groups"].size(), 5u);
  EXPECT_EQ(j["groups"][4]["kind"], "mla");
  EXPECT_EQ(j["groups"][4]["queries"], 4);  // 2 requests x 2 decode steps, no drafts
  EXPECT_LE(j["groups"][4]["max_rel_error"].get<double>(), 1e-5);
  r = RunCli(launch + "--max-model-len 1000000 --kv-cache-memory 60GiB --requests 8",
             /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "kvtopo: the reference rows of 8 requests (7999984 tokens) would take 15624 MiB, "
            "beyond verify's 8192 MiB; lower --requests or --max-model-len, or drop "
            "--real-head-dims\n");
}

// A rejected launch is refused with its errors, exit 1.
TEST(VerifyCli, ARejectedLaunchPrintsItsErrors) {
  auto r = RunCli("verify gpt-oss-120b -tp 8 --num-gpu-blocks-override 1", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out,
            "kvtopo: the launch is rejected: gpt-oss-120b\n"
            "  error [kv-cache-memory] one request of --max-model-len 131072 needs 680140800 B of "
            "KV cache per rank, more than the 73728 B the pool holds; not even a 1-token request "
            "fits; raise --num-gpu-blocks-override or lower --max-model-len\n"
            "  error [kv-cache-memory] the pool holds 1 block of 73728 B; at least two (the null "
            "block and one page) are needed; raise --num-gpu-blocks-override\n");
}

TEST(VerifyCli, UnknownFaultIsAUsageError) {
  auto r = RunCli(std::string(kSmallLaunch) + " --inject bogus", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--inject 'bogus' is not a known fault"), std::string::npos) << r.out;
}

TEST(VerifyCli, WritesTheErrorPlot) {
  const std::string path = ::testing::TempDir() + "verify_errors.svg";
  std::remove(path.c_str());
  auto r = RunCli(std::string(kSmallLaunch) + " --svg " + path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("PASS: merged DCP attention equals one rank"), std::string::npos);
  std::ifstream in(path);
  std::stringstream svg;
  svg << in.rdbuf();
  EXPECT_EQ(svg.str().rfind("<svg", 0), 0u);
  EXPECT_NE(svg.str().find("group 0 mla target (sharded)"), std::string::npos);
}

}  // namespace
}  // namespace kvtopo
