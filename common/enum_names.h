// Lookup between an enum and its stable lower-case (or upper-case) name, from one table per
// enum. Used by common/types.cc and the orchestrator's sweep vocabulary.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace gdrmesh {

template <typename E, size_t N>
using EnumNames = std::array<std::pair<E, const char*>, N>;

template <typename E, size_t N>
std::optional<E> enumFromName(const EnumNames<E, N>& table, std::string_view s) {
  for (const auto& [value, name] : table) {
    if (s == name) return value;
  }
  return std::nullopt;
}

template <typename E, size_t N>
const char* enumName(const EnumNames<E, N>& table, E v) {
  for (const auto& [value, name] : table) {
    if (value == v) return name;
  }
  return "unknown";
}

}  // namespace gdrmesh
