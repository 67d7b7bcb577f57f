// `vllm serve --config FILE`: the YAML file's flags as the engine's parser builds them. The
// expected arguments were checked against PyYAML 6.0's safe_load with the engine's
// load_config_file rules (true -> --key, false -> nothing, a list -> --key and each str(item), a
// mapping -> --key and json.dumps, else --key and str(value)).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kvtopo/launch_options.h"

namespace kvtopo {
namespace {

std::vector<std::string> Args(std::string_view yaml) {
  Result<VllmConfigFileArgs> r = VllmConfigFileArgsFromYaml(yaml, "c.yaml");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->args : std::vector<std::string>{};
}

std::string Error(std::string_view yaml) {
  Result<VllmConfigFileArgs> r = VllmConfigFileArgsFromYaml(yaml, "c.yaml");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(VllmConfigFile, FlagsInFileOrder) {
  EXPECT_EQ(Args("# serve\n"
                 "model: moonshotai/Kimi-K2.6\n"
                 "tensor-parallel-size: 8\n"
                 "trust-remote-code: true\n"
                 "enforce-eager: false\n"
                 "served-model-name: [kimi, k26]\n"
                 "cudagraph-capture-sizes: []\n"
                 "speculative-config:\n"
                 "  method: eagle3\n"
                 "  num_speculative_tokens: 3\n"
                 "gpu-memory-utilization: 0.92\n"
                 "tensor-parallel-size: 16\n"),
            (std::vector<std::string>{"--model", "moonshotai/Kimi-K2.6", "--tensor-parallel-size",
                                      "16", "--trust-remote-code", "--served-model-name", "kimi",
                                      "k26", "--speculative-config",
                                      R"({"method": "eagle3", "num_speculative_tokens": 3})",
                                      "--gpu-memory-utilization", "0.92"}));
}

// Plain scalars resolve as YAML 1.1 (safe_load) and reach the flag as Python's str() of the value.
TEST(VllmConfigFile, ScalarsResolveAsSafeLoadDoes) {
  EXPECT_EQ(Args("a: 017\nb: 0x1F\nc: 1_000\nd: 1:30\ne: 190:20:30\nf: -0b101\ng: 0o17\nh: 08\n"
                 "i: +12\nj: -0\n"),
            (std::vector<std::string>{"--a", "15",  "--b",    "31",  "--c", "1000", "--d",
                                      "90",  "--e", "685230", "--f", "-5",  "--g",  "0o17",
                                      "--h", "08",  "--i",    "12",  "--j", "0"}));
  EXPECT_EQ(
      Args("a: 1e3\nb: 1.5e+3\nc: .5\nd: 1.\ne: -1_0.5_0\nf: 1.2e3\ng: -.inf\nh: .NaN\n"
           "i: 0.1\nj: 1.0e+15\nk: 1.0e+16\n"),
      (std::vector<std::string>{
          "--a", "1e3",   "--b", "1500.0", "--c", "0.5", "--d", "1.0", "--e", "-10.5",
          "--f", "1.2e3", "--g", "-inf",   "--h", "nan", "--i", "0.1", "--j", "1000000000000000.0",
          "--k", "1e+16"}));
  EXPECT_EQ(Args("a: yes\nb: On\nc: y\nd: ~\ne:\nf: \"017\"\ng: !!str 12\nh: !!int \"12\"\n"
                 "i: !!float 3\nj: 'it''s'\nk: 2001-12-14\nl: |\n  one\n  two\n"),
            (std::vector<std::string>{"--a", "--b",        "--c", "y",         "--d", "None",
                                      "--e", "None",       "--f", "017",       "--g", "12",
                                      "--h", "12",         "--i", "3.0",       "--j", "it's",
                                      "--k", "2001-12-14", "--l", "one\ntwo\n"}));
  EXPECT_EQ(Args("a: [1, 2.0, true, null, x]\nb: {é: [.nan, -.inf], \"x y\": {}, z: [no]}\n"
                 "c: &v [1, 2]\nd: *v\n"),
            (std::vector<std::string>{"--a", "1", "2.0", "True", "None", "x", "--b",
                                      R"({"\u00e9": [NaN, -Infinity], "x y": {}, "z": [false]})",
                                      "--c", "1", "2", "--d", "1", "2"}));
}

// A planning switch set false is dropped by the engine: a warning says the default stays.
TEST(VllmConfigFile, FalsePlanningSwitchesWarn) {
  Result<VllmConfigFileArgs> r =
      VllmConfigFileArgsFromYaml("enable-prefix-caching: false\nport: false\n", "c.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->args.empty());
  ASSERT_EQ(r->diagnostics.size(), 1u);
  EXPECT_EQ(r->diagnostics[0].code, "config-file-false-dropped");
  EXPECT_EQ(r->diagnostics[0].message,
            "--config c.yaml: 'enable-prefix-caching: false' is dropped: the engine passes a "
            "config file's switch only when it is true, so --enable-prefix-caching keeps its "
            "default; write 'no-enable-prefix-caching: true' to turn it off");
}

TEST(VllmConfigFile, WhatSafeLoadWouldNotReadIsRefusedWithItsPlace) {
  EXPECT_EQ(Error("a: [1\n"),
            "--config c.yaml: line 2, column 1: did not find expected ',' or ']' (while parsing a "
            "flow sequence)");
  EXPECT_EQ(Error("a: 1\n---\nb: 2\n"),
            "--config c.yaml: line 2, column 1: a second document; the file must hold one");
  EXPECT_EQ(Error("- tensor-parallel-size\n"),
            "--config c.yaml: the file must be a mapping of flag names to values (e.g. "
            "'tensor-parallel-size: 4'), got array");
  EXPECT_EQ(Error("# nothing\n"),
            "--config c.yaml: the file must be a mapping of flag names to values (e.g. "
            "'tensor-parallel-size: 4'), got an empty document");
  EXPECT_EQ(Error("a: !!python/name:os.system x\n"),
            "--config c.yaml: line 1, column 4: tag 'tag:yaml.org,2002:python/name:os.system' is "
            "not one safe_load reads");
  EXPECT_EQ(Error("a: !!int x\n"),
            "--config c.yaml: line 1, column 4: 'x' is not a value of tag 'tag:yaml.org,2002:int'");
  EXPECT_EQ(Error("base: &b {a: 1}\nx:\n  <<: *b\n"),
            "--config c.yaml: line 3, column 3: merge keys (<<) are not read; write the keys out");
  EXPECT_EQ(Error("a: *nowhere\n"),
            "--config c.yaml: line 1, column 4: alias '*nowhere' names no anchor");
  EXPECT_EQ(Error("a: 9223372036854775808\n"),
            "--config c.yaml: line 1, column 4: integer '9223372036854775808' is out of range");
  EXPECT_EQ(Error("[a]: 1\n"),
            "--config c.yaml: line 1, column 3: a mapping or sequence used as a key");
  // Bounded: nesting, and values that aliases multiply.
  EXPECT_EQ(Error("a: " + std::string(70, '[') + std::string(70, ']') + "\n"),
            "--config c.yaml: line 1, column 67: nesting deeper than 64 levels");
  // a0 holds 10 values, a1 ten copies of a0, ... (appends: GCC 12 at -O3 misreads chained +).
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    const std::string name = std::to_string(i), prev = std::to_string(i - 1);
    bomb.append("a").append(name).append(": &a").append(name).append(" [");
    for (int k = 0; k < 10; ++k) bomb.append(k == 0 ? "*a" : ", *a").append(prev);
    bomb.append("]\n");
  }
  EXPECT_EQ(Error(bomb),
            "--config c.yaml: line 5, column 45: more than 100000 values (aliases count again)");
}

TEST(VllmConfigFile, TheFileNameAndTheFileItself) {
  EXPECT_EQ(ReadVllmConfigFile("serve.json").status().message(),
            "--config serve.json: a config file must be a .yaml or .yml file, got 'json'");
  EXPECT_EQ(ReadVllmConfigFile("/nonexistent/serve.yaml").status().code(), StatusCode::kNotFound);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "kvtopo_vllm_config_file_test.yml";
  std::ofstream(path) << "tensor_parallel_size: 4\n";
  Result<VllmConfigFileArgs> r = ReadVllmConfigFile(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->args, (std::vector<std::string>{"--tensor_parallel_size", "4"}));
}

}  // namespace
}  // namespace kvtopo
