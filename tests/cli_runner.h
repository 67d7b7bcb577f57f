// Runs the kvtopo binary built with the tests and captures its output and exit code.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace kvtopo::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout, or stdout and stderr together when asked
};

// `args` is appended to the binary's path and run by the shell; `env` ("NAME=value ...") is set
// for that run only.
inline CliResult RunCli(const std::string& args, bool merge_stderr = false,
                        const std::string& env = "") {
  const std::string command = (env.empty() ? "" : "env " + env + " ") +
                              std::string(KVTOPO_CLI_PATH) + " " + args +
                              (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Expects `kvtopo ARGS` to be a usage error: exit code 2 and exactly `output` (stdout and stderr).
inline void ExpectUsageError(const std::string& args, const std::string& output) {
  const CliResult r = RunCli(args, /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2) << args;
  EXPECT_EQ(r.out, output) << args;
}

}  // namespace kvtopo::testing
