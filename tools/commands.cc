#include "commands.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <string_view>
#include <utility>

#include "internal/units.h"

namespace kvtopo::cli {

Result<int64_t> ParseIntFlag(const std::string& text, std::string_view flag, int64_t min,
                             int64_t max) {
  KVTOPO_ASSIGN_OR_RETURN(int64_t value, ParseHumanInt(text, flag));
  if (value < min || value > max) {
    return InvalidArgument(fmt::format("{} must be in [{}, {}], got {}", flag, min, max, value));
  }
  return value;
}

Result<uint64_t> ParseUint64Flag(const std::string& text, std::string_view flag) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return InvalidArgument(fmt::format("{} must be an integer in [0, {}], got '{}'", flag,
                                       std::numeric_limits<uint64_t>::max(), text));
  }
  return value;
}

void RegisterCommands(CLI::App& app, CommandRegistry& registry) {
  RegisterPlanCommands(app, registry);
  RegisterProfilesCommand(app, registry);
  RegisterSimulateCommand(app, registry);
  RegisterSlotsCommand(app, registry);
  RegisterVerifyCommand(app, registry);
}

}  // namespace kvtopo::cli
