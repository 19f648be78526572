// Status and Result<T>: the error model of every gdrmesh module.
//
// A Status carries what failed (message, naming the field, device or call) and, where there is
// one, what to do about it (fix). Fabric failures are values of this type, never exceptions or
// aborts; assertions are kept for programmer mistakes.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gdrmesh {

enum class Code {
  kOk,
  kInvalidArgument,     // bad input: the message names the field
  kNotFound,            // unknown worker, device, GPU
  kFailedPrecondition,  // environment not ready: missing module, port down, no GPU
  kUnavailable,         // peer or service unreachable, worker lost
  kDeadlineExceeded,    // a bounded wait ran out
  kAborted,             // cancelled on purpose (peer failed, user abort)
  kResourceExhausted,   // memory, memlock, disk full
  kPermissionDenied,    // needs root or a capability
  kDataLoss,            // integrity check failed
  kUnimplemented,       // not supported by this transport or build
  kInternal,            // a bug in gdrmesh
};

const char* codeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, std::string fix = {})
      : code_(code), message_(std::move(message)), fix_(std::move(fix)) {}

  static Status okStatus() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& fix() const { return fix_; }

  // "INVALID_ARGUMENT: --size: must be > 0 (fix: ...)"
  std::string toString() const;

  // Prefixes the message with context ("prepare on worker a: ").
  Status withContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::string fix_;
};

inline Status invalidArgument(std::string message, std::string fix = {}) {
  return Status(Code::kInvalidArgument, std::move(message), std::move(fix));
}
inline Status notFound(std::string message, std::string fix = {}) {
  return Status(Code::kNotFound, std::move(message), std::move(fix));
}
inline Status failedPrecondition(std::string message, std::string fix = {}) {
  return Status(Code::kFailedPrecondition, std::move(message), std::move(fix));
}
inline Status unavailable(std::string message, std::string fix = {}) {
  return Status(Code::kUnavailable, std::move(message), std::move(fix));
}
inline Status internalError(std::string message) {
  return Status(Code::kInternal, std::move(message));
}
inline Status unimplemented(std::string message, std::string fix = {}) {
  return Status(Code::kUnimplemented, std::move(message), std::move(fix));
}

// Result<T>: a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    // An OK status carries no value: that is a bug in the caller, never a success.
    if (std::get<Status>(v_).ok()) {
      v_ = Status(Code::kInternal, "Result constructed from an OK status without a value");
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gdrmesh

// Propagates a non-OK Status from an expression returning Status.
#define GDR_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::gdrmesh::Status gdr_status_ = (expr);    \
    if (!gdr_status_.ok()) return gdr_status_; \
  } while (0)

#define GDR_CONCAT_INNER(a, b) a##b
#define GDR_CONCAT(a, b) GDR_CONCAT_INNER(a, b)
// Assigns the value of a Result expression to lhs or returns its Status.
#define GDR_ASSIGN_OR_RETURN(lhs, expr) \
  GDR_ASSIGN_OR_RETURN_IMPL(GDR_CONCAT(gdr_result_, __LINE__), lhs, expr)
// NOLINTBEGIN(bugprone-macro-parentheses): `lhs` may be a declaration ("const auto x") and
// `tmp` is a name being declared; neither can be parenthesised.
#define GDR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
