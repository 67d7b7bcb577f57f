// Status and Result<T>: errors a user can cause are values, never exceptions or aborts.
//
// A Status carries a code and a one-line message that names the offending input, the rule it
// breaks and the knob that fixes it. Result<T> holds either a T or a non-OK Status.
// Programmer errors (broken internal invariants) use KVTOPO_CHECK, which aborts.
//
// Thread safety: value types; no shared state.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace kvtopo {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // malformed input or a value outside its domain (usage error, exit 2)
  kRejected,         // a well-formed configuration that cannot run (exit 1)
  kNotFound,         // a named profile, file, group or backend does not exist
  kOutOfRange,       // arithmetic overflow or a size beyond what can be represented
  kInternal,         // an invariant broke; a bug in kvtopo
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, std::string rule)
      : code_(code), message_(std::move(message)), rule_(std::move(rule)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // A rejection names the launch rule it enforces ("sliding-window-dcp"), the code a plan's
  // diagnostic reports; empty otherwise.
  const std::string& rule() const { return rule_; }
  // "<code name>: <message>", or "ok".
  std::string ToString() const;

  bool operator==(const Status&) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string rule_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status Rejected(std::string message, std::string rule = "") {
  return Status(StatusCode::kRejected, std::move(message), std::move(rule));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status OutOfRange(std::string message) {
  return Status(StatusCode::kOutOfRange, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : data_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(data_).ok()) {
      std::fputs("kvtopo: Result constructed from an OK Status\n", stderr);
      std::abort();
    }
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  // The error, or Status::Ok() when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(data_); }

  const T& value() const& { return CheckedValue(); }
  T& value() & { return const_cast<T&>(CheckedValue()); }
  T&& value() && { return std::move(const_cast<T&>(CheckedValue())); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  const T& CheckedValue() const {
    if (!ok()) {
      std::fprintf(stderr, "kvtopo: value() on an error Result: %s\n",
                   std::get<Status>(data_).message().c_str());
      std::abort();
    }
    return std::get<T>(data_);
  }

  std::variant<T, Status> data_;
};

namespace internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const std::string& detail);
}  // namespace internal

}  // namespace kvtopo

// Aborts with file, line and condition when a programmer invariant is false.
#define KVTOPO_CHECK(cond)                                                       \
  do {                                                                           \
    if (!(cond)) ::kvtopo::internal::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (0)
#define KVTOPO_CHECK_MSG(cond, detail)                                               \
  do {                                                                               \
    if (!(cond)) ::kvtopo::internal::CheckFailed(__FILE__, __LINE__, #cond, detail); \
  } while (0)

#define KVTOPO_CONCAT_INNER_(a, b) a##b
#define KVTOPO_CONCAT_(a, b) KVTOPO_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not OK.
#define KVTOPO_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::kvtopo::Status kvtopo_status_ = (expr);        \
    if (!kvtopo_status_.ok()) return kvtopo_status_; \
  } while (0)

// Evaluates `expr` (a Result<T>); on error returns its Status, else moves the value into `lhs`.
#define KVTOPO_ASSIGN_OR_RETURN(lhs, expr) \
  KVTOPO_ASSIGN_OR_RETURN_IMPL_(KVTOPO_CONCAT_(kvtopo_result_, __LINE__), lhs, expr)
#define KVTOPO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
