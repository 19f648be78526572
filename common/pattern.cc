#include "common/pattern.h"

#include <cstring>

namespace gdrmesh {

void fillPattern(uint64_t seed, uint64_t offset, void* dst, size_t len) {
  auto* out = static_cast<uint8_t*>(dst);
  size_t i = 0;
  // Head: bytes up to the next word boundary.
  while (i < len && (offset + i) % 8 != 0) {
    out[i] = patternByte(seed, offset + i);
    ++i;
  }
  // Body: whole words (little-endian byte order, as the GPU kernel writes them).
  for (; i + 8 <= len; i += 8) {
    uint64_t w = patternWord(seed, (offset + i) / 8);
    std::memcpy(out + i, &w, 8);
  }
  for (; i < len; ++i) out[i] = patternByte(seed, offset + i);
}

IntegrityReport verifyPattern(uint64_t seed, uint64_t offset, const void* src, size_t len) {
  const auto* in = static_cast<const uint8_t*>(src);
  IntegrityReport r;
  r.checked = true;
  r.bytes_checked = len;
  r.where = "host";
  auto check_byte = [&](size_t i) {
    if (in[i] != patternByte(seed, offset + i)) {
      if (r.first_wrong_offset < 0) r.first_wrong_offset = static_cast<int64_t>(offset + i);
      ++r.wrong_bytes;
    }
  };
  size_t i = 0;
  while (i < len && (offset + i) % 8 != 0) check_byte(i++);
  for (; i + 8 <= len; i += 8) {
    uint64_t w = patternWord(seed, (offset + i) / 8);
    uint64_t got;
    std::memcpy(&got, in + i, 8);
    if (got != w) {
      for (size_t b = 0; b < 8; ++b) check_byte(i + b);
    }
  }
  for (; i < len; ++i) check_byte(i);
  return r;
}

std::string IntegrityReport::toString() const {
  if (!checked) return "not verified";
  if (wrong_bytes == 0) return "verified " + std::to_string(bytes_checked) + " B on " + where;
  return std::to_string(wrong_bytes) + " of " + std::to_string(bytes_checked) + " B wrong on " +
         where + ", first at offset " + std::to_string(first_wrong_offset);
}

uint64_t digestBytes(const void* src, size_t len, uint64_t first_word) {
  const auto* in = static_cast<const uint8_t*>(src);
  uint64_t sum = 0;
  size_t i = 0;
  uint64_t w_index = first_word;
  for (; i + 8 <= len; i += 8, ++w_index) {
    uint64_t w;
    std::memcpy(&w, in + i, 8);
    sum += digestMix(w, w_index);
  }
  if (i < len) {
    uint64_t w = 0;
    std::memcpy(&w, in + i, len - i);  // little-endian: the missing high bytes read as 0
    sum += digestMix(w, w_index);
  }
  return sum;
}

uint64_t digestPattern(uint64_t seed, uint64_t len) {
  uint64_t sum = 0;
  const uint64_t whole = len / 8;
  for (uint64_t i = 0; i < whole; ++i) sum += digestMix(patternWord(seed, i), i);
  if (const uint64_t tail = len % 8; tail != 0) {
    const uint64_t mask = (uint64_t{1} << (8 * tail)) - 1;
    sum += digestMix(patternWord(seed, whole) & mask, whole);
  }
  return sum;
}

uint64_t initiatorSeed(uint64_t test_seed) {
  return splitmix64(test_seed ^ 0x1A1A1A1A1A1A1A1AULL);
}
uint64_t targetSeed(uint64_t test_seed) {
  return splitmix64(test_seed ^ 0x7E7E7E7E7E7E7E7EULL);
}

}  // namespace gdrmesh
