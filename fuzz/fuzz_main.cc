// One libFuzzer binary per target: KVTOPO_FUZZ_TARGET names it (CMakeLists.txt).
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz_targets.h"

#define KVTOPO_FUZZ_STRING_(x) #x
#define KVTOPO_FUZZ_STRING(x) KVTOPO_FUZZ_STRING_(x)

namespace {

kvtopo::fuzz::Reached (*Target())(const uint8_t*, size_t) {
  constexpr std::string_view kName = KVTOPO_FUZZ_STRING(KVTOPO_FUZZ_TARGET);
  for (const kvtopo::fuzz::FuzzTarget& t : kvtopo::fuzz::FuzzTargets()) {
    if (t.name == kName) return t.run;
  }
  std::fprintf(stderr, "no fuzz target named %s\n", kName.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto run = Target();
  (void)run(data, size);
  return 0;
}
