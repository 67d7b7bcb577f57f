// Every file of fuzz/corpus/<target>/ (the seeds and every input a fuzzer found a crash with)
// runs through its fuzz target in every build, so a fixed crash stays fixed without clang.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fuzz_targets.h"

namespace kvtopo::fuzz {
namespace {

TEST(FuzzCorpus, EveryFileRunsThroughItsTarget) {
  const std::filesystem::path root = std::filesystem::path(KVTOPO_SOURCE_DIR) / "fuzz" / "corpus";
  for (const FuzzTarget& target : FuzzTargets()) {
    const std::filesystem::path dir = root / std::string(target.name);
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      const std::string data = text.str();
      SCOPED_TRACE(entry.path().string());
      const Reached reached =
          target.run(reinterpret_cast<const uint8_t*>(data.data()), data.size());
      // A seed exists to reach the target's work; an issue_* input may stop where it enters
      // (its bound is what it checks) as long as it does not crash.
      if (!entry.path().filename().string().starts_with("issue_")) {
        EXPECT_EQ(reached, Reached::kExercised) << "a seed that stops before the target's work";
      }
      ++files;
    }
    EXPECT_GE(files, 3) << target.name << " has too few seeds";
  }
}

}  // namespace
}  // namespace kvtopo::fuzz
