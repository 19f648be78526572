// Strict reading of a JSON document in the domain encoding (docs/json.md), field by field: every
// field must be present with its type, and the first one that is not is the error, named by its
// path ("inventory.nics[0].ports[1].rate_gbps is not a number"). The one reader of the stored
// inventory (common/json.h) and of a sweep's spec (coordinator/encoding/sweep_json.h).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gdrmesh {

// The fields of one object of a document, over nlohmann::json or nlohmann::ordered_json. Readers
// of one document share its error (the first one kept); once it is set, every read returns the
// type's zero, so a reader reads on without checking and the caller looks at the error once.
template <typename Json>
class JsonFields {
 public:
  // `j` at `where` ("" for the document itself; "inventory", "test.initiator"); errors read
  // "<document>: <path> <why>" ("inventory JSON", "sweep spec JSON").
  JsonFields(const Json& j, std::string where, const char* document, Status* error)
      : j_(j), where_(std::move(where)), document_(document), error_(error) {}

  // Field `name` when it is present and `is` says it has its type ("a string"), else nullptr
  // and the error.
  const Json* field(const char* name, bool (Json::*is)() const noexcept, const char* type) {
    if (!error_->ok()) return nullptr;
    if (!j_.is_object()) {
      fail(where_.empty() ? "the document" : where_, "is not a JSON object");
      return nullptr;
    }
    auto it = j_.find(name);
    if (it == j_.end()) {
      fail(path(name), "is missing");
      return nullptr;
    }
    if (!((*it).*is)()) {
      fail(path(name), std::string("is not ") + type);
      return nullptr;
    }
    return &*it;
  }

  std::string text(const char* name) {
    const Json* v = field(name, &Json::is_string, "a string");
    return v != nullptr ? v->template get<std::string>() : std::string();
  }
  uint64_t count(const char* name) {
    const Json* v = field(name, &Json::is_number_unsigned, "a number >= 0");
    return v != nullptr ? v->template get<uint64_t>() : 0;
  }
  uint32_t count32(const char* name) {
    const uint64_t v = count(name);
    if (v > std::numeric_limits<uint32_t>::max()) {
      fail(path(name), "is too large");
      return 0;
    }
    return static_cast<uint32_t>(v);
  }
  // An integer that fits an int.
  int integer(const char* name) {
    const Json* v = field(name, &Json::is_number_integer, "an integer");
    if (v == nullptr) return 0;
    const auto x = v->template get<int64_t>();
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
      fail(path(name), "is out of range");
      return 0;
    }
    return static_cast<int>(x);
  }
  double number(const char* name) {
    const Json* v = field(name, &Json::is_number, "a number");
    return v != nullptr ? v->template get<double>() : 0;
  }
  bool flag(const char* name) {
    const Json* v = field(name, &Json::is_boolean, "true or false");
    return v != nullptr && v->template get<bool>();
  }

  // The elements of an array (none when it is missing or mistyped: the error says so).
  const Json& items(const char* name) {
    static const Json kEmpty = Json::array();
    const Json* v = field(name, &Json::is_array, "an array");
    return v != nullptr ? *v : kEmpty;
  }
  std::vector<std::string> texts(const char* name) {
    std::vector<std::string> out;
    for (const Json& x : items(name)) {
      if (!x.is_string()) {
        fail(path(name), "holds an element that is not a string");
        return {};
      }
      out.push_back(x.template get<std::string>());
    }
    return out;
  }
  std::vector<uint64_t> counts(const char* name) {
    std::vector<uint64_t> out;
    for (const Json& x : items(name)) {
      if (!x.is_number_unsigned()) {
        fail(path(name), "holds an element that is not a number >= 0");
        return {};
      }
      out.push_back(x.template get<uint64_t>());
    }
    return out;
  }
  // An object whose values are all strings.
  std::map<std::string, std::string> textMap(const char* name) {
    std::map<std::string, std::string> out;
    const Json* v = field(name, &Json::is_object, "an object");
    if (v == nullptr) return out;
    for (const auto& [k, x] : v->items()) {
      if (!x.is_string()) {
        fail(path(name) + "." + k, "is not a string");
        return {};
      }
      out[k] = x.template get<std::string>();
    }
    return out;
  }

  // An enum by its documented name: `parse` (a string -> std::optional) reads it; a name it does
  // not know is "'<name>' is not <expected>".
  template <typename Parse>
  auto named(const char* name, Parse parse, const char* expected = "one of its names")
      -> std::decay_t<decltype(*parse(std::string()))> {
    const std::string t = text(name);
    if (!error_->ok()) return {};
    auto v = parse(t);
    if (!v) {
      fail(path(name), "'" + t + "' is not " + expected);
      return {};
    }
    return *v;
  }
  // An array of enum names read with `parse`.
  template <typename Parse>
  auto names(const char* name, Parse parse)
      -> std::vector<std::decay_t<decltype(*parse(std::string()))>> {
    std::vector<std::decay_t<decltype(*parse(std::string()))>> out;
    for (const std::string& t : texts(name)) {
      auto v = parse(t);
      if (!v) {
        fail(path(name), "holds '" + t + "', not one of its names");
        return {};
      }
      out.push_back(*v);
    }
    return out;
  }

  // The fields of object `name` (reading nothing when it is missing or mistyped: the error says
  // so).
  JsonFields object(const char* name) {
    static const Json kNone;
    const Json* v = field(name, &Json::is_object, "an object");
    return JsonFields(v != nullptr ? *v : kNone, path(name), document_, error_);
  }
  // `read(fields)` for the fields of each element of array `name`, in order.
  template <typename Read>
  void each(const char* name, Read read) {
    const Json& a = items(name);
    for (size_t i = 0; i < a.size(); ++i) {
      JsonFields e(a[i], path(name) + "[" + std::to_string(i) + "]", document_, error_);
      read(e);
    }
  }

  // The path of field `name` in the document.
  std::string path(const char* name) const {
    return where_.empty() ? std::string(name) : where_ + "." + name;
  }
  // A check of the caller's: "<what> <why>" is the error, unless there is one already.
  void fail(const std::string& what, const std::string& why) {
    if (error_->ok()) {
      *error_ = invalidArgument(std::string(document_) + ": " + what + " " + why,
                                "write it with the domain encoding (docs/json.md)");
    }
  }
  bool ok() const { return error_->ok(); }

 private:
  const Json& j_;
  std::string where_;
  const char* document_;
  Status* error_;
};

}  // namespace gdrmesh
