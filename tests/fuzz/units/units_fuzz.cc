// Fuzzes the size and duration parsers of common/units.h (CLI flags and config values). The
// first byte picks the parser; the rest is the text. Checks: no crash, and a parsed size
// printed by formatSize() parses back to the same number, and a parsed duration is finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    auto d = gdrmesh::parseDurationSeconds(text, "--duration");
    // Callers turn durations into integer milliseconds: a parsed one must be finite and >= 0.
    if (d.ok() && !(std::isfinite(*d) && *d >= 0)) std::abort();
    return 0;
  }
  auto s = gdrmesh::parseSize(text, "--size");
  if (s.ok()) {
    auto back = gdrmesh::parseSize(gdrmesh::formatSize(*s), "--size");
    if (!back.ok() || *back != *s) std::abort();  // formatSize must round-trip
  }
  return 0;
}
