// JSON text in and out. In: user text parsed into a one-line error that names its source. Out:
// strings in a report can come from the user unvalidated (a config path, an environment value,
// a --speculative-config.KEY value): bytes that are not UTF-8 are written as U+FFFD instead of
// making nlohmann's dump throw.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kvtopo/plan_report.h"
#include "kvtopo/status.h"

namespace kvtopo::internal {

// Parses JSON text; a one-line InvalidArgument naming `what` on malformed input.
Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what);

// j.dump(indent) that never throws on invalid UTF-8 (indent -1: one line; at most
// kMaxJsonIndent, which front ends check first).
inline std::string JsonText(const nlohmann::json& j, int indent = -1) {
  KVTOPO_CHECK(indent >= -1 && indent <= kMaxJsonIndent);
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

// Python's str() of a float, as the engine's messages print one: its shortest round-trip form,
// with a point where it is integral (2.0, 1000000000000000.0) and an exponent from 1e+16 and
// below 1e-04 (1e+16, 1e-05); nan, inf, -inf.
std::string PythonFloatStr(double x);

// Python's str() of the value a JSON config gives, as the engine's messages print a value they
// read: a string as it is, None, True and False, an integer in decimal, a float as
// PythonFloatStr, and an array or an object as Python prints a list or a dict (['gelu', None],
// {'type': 'float'}: strings in them quoted as repr() quotes them). An object's keys come in the
// order nlohmann::json keeps them (sorted), where Python's dict keeps the file's.
std::string PythonStr(const nlohmann::json& v);

// Python's repr() of the same value: PythonStr, but a string quoted ('gelu').
std::string PythonRepr(const nlohmann::json& v);

}  // namespace kvtopo::internal
