#include "common/status.h"

namespace gdrmesh {

const char* codeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Code::kNotFound:
      return "NOT_FOUND";
    case Code::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case Code::kUnavailable:
      return "UNAVAILABLE";
    case Code::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case Code::kAborted:
      return "ABORTED";
    case Code::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case Code::kPermissionDenied:
      return "PERMISSION_DENIED";
    case Code::kDataLoss:
      return "DATA_LOSS";
    case Code::kUnimplemented:
      return "UNIMPLEMENTED";
    case Code::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::toString() const {
  if (ok()) return "OK";
  std::string s = std::string(codeName(code_)) + ": " + message_;
  if (!fix_.empty()) s += " (fix: " + fix_ + ")";
  return s;
}

Status Status::withContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_, fix_);
}

}  // namespace gdrmesh
