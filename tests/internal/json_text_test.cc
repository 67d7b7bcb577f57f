#include "internal/json_text.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace kvtopo::internal {
namespace {

// Each expected text is what Python 3 prints for the value json.loads gives (str() and repr()).
TEST(PythonText, FloatsAsPythonPrintsThem) {
  EXPECT_EQ(PythonFloatStr(2.5), "2.5");
  EXPECT_EQ(PythonFloatStr(100.0), "100.0");
  EXPECT_EQ(PythonFloatStr(-1.0), "-1.0");
  EXPECT_EQ(PythonFloatStr(0.0), "0.0");
  EXPECT_EQ(PythonFloatStr(1e15), "1000000000000000.0");
  EXPECT_EQ(PythonFloatStr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatStr(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(PythonFloatStr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatStr(0.00001), "1e-05");
  EXPECT_EQ(PythonFloatStr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(PythonFloatStr(1e300), "1e+300");
  EXPECT_EQ(PythonFloatStr(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(PythonFloatStr(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(PythonText, StrAndReprOfConfigValues) {
  const auto str = [](const char* json) { return PythonStr(nlohmann::json::parse(json)); };
  const auto repr = [](const char* json) { return PythonRepr(nlohmann::json::parse(json)); };
  EXPECT_EQ(str(R"("gelu")"), "gelu");
  EXPECT_EQ(repr(R"("gelu")"), "'gelu'");
  EXPECT_EQ(str("null"), "None");
  EXPECT_EQ(str("true"), "True");
  EXPECT_EQ(repr("false"), "False");
  EXPECT_EQ(str("-42"), "-42");
  EXPECT_EQ(str("18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(str("8.0"), "8.0");
  EXPECT_EQ(str("[]"), "[]");
  EXPECT_EQ(str(R"(["gelu", null, 1, 2.0, true, [3]])"), "['gelu', None, 1, 2.0, True, [3]]");
  EXPECT_EQ(str(R"({"type": "float", "num_bits": 8, "dynamic": false})"),
            "{'dynamic': False, 'num_bits': 8, 'type': 'float'}");  // nlohmann's key order
  EXPECT_EQ(str("{}"), "{}");
  // repr()'s quotes and escapes.
  EXPECT_EQ(repr(R"("it's")"), R"("it's")");
  EXPECT_EQ(repr(R"("say \"hi\"")"), R"('say "hi"')");
  EXPECT_EQ(repr(R"("it's \"x\"")"), R"('it\'s "x"')");
  EXPECT_EQ(repr(R"("a\\b\n\t\r\u0001\u007f")"), R"('a\\b\n\t\r\x01\x7f')");
  EXPECT_EQ(repr(R"("gélu")"), "'gélu'");
  EXPECT_EQ(str(R"(["a'b"])"), R"(["a'b"])");
}

}  // namespace
}  // namespace kvtopo::internal
