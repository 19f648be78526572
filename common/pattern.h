// Reproducible test data, as nccl-tests does it: the byte at absolute offset `off` of a buffer
// filled with `seed` is a pure function of (seed, off), so any range can be generated or checked
// alone, on the host or on the GPU (worker/gpu/kernels.cu implements the same function).
//
//   word(seed, i) = splitmix64(seed + i * 0x9E3779B97F4A7C15)    for 8-byte word index i
//   byte(seed, off) = (word(seed, off / 8) >> (8 * (off % 8))) & 0xff
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gdrmesh {

inline constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

inline constexpr uint64_t patternWord(uint64_t seed, uint64_t word_index) {
  return splitmix64(seed + word_index * 0x9E3779B97F4A7C15ULL);
}

inline constexpr uint8_t patternByte(uint64_t seed, uint64_t offset) {
  return static_cast<uint8_t>(patternWord(seed, offset / 8) >> (8 * (offset % 8)));
}

// Outcome of a destination check. `checked` is false when no verification ran.
struct IntegrityReport {
  bool checked = false;
  uint64_t bytes_checked = 0;
  uint64_t wrong_bytes = 0;
  int64_t first_wrong_offset = -1;  // absolute offset of the first wrong byte, -1 if none
  std::string where;                // "host" or "gpu:0": where the check ran
  // Sealed test, destination before the seed is revealed: no check ran (`checked` false);
  // `digest` is digestBytes() of the bytes_checked landed bytes.
  bool digested = false;
  uint64_t digest = 0;

  bool ok() const { return checked && wrong_bytes == 0; }
  std::string toString() const;
};

// Writes the pattern bytes for absolute offsets [offset, offset + len) into dst.
void fillPattern(uint64_t seed, uint64_t offset, void* dst, size_t len);

// Compares src against the pattern for absolute offsets [offset, offset + len).
IntegrityReport verifyPattern(uint64_t seed, uint64_t offset, const void* src, size_t len);

// Digest of landed data (sealed tests): the destination reports it before it learns the seed
// of what should have landed, so a destination that never received the data cannot claim it.
//   digest(bytes[0, len)) = sum over word i of digestMix(w_i, i)  (mod 2^64)
// where w_i is the little-endian 8-byte word at offset 8i (bytes at or past len read as 0).
// A sum of per-word terms, so it can be computed in any order (worker/gpu/kernels.cu computes
// the same function on the GPU).
inline constexpr uint64_t digestMix(uint64_t word, uint64_t word_index) {
  return splitmix64(word ^ (word_index * 0xD1B54A32D192ED03ULL));
}

// Digest of `len` bytes at src, which hold the buffer's bytes from word index `first_word` on
// (chunked callers pass the chunk's first word index; chunks other than the last must be whole
// words).
uint64_t digestBytes(const void* src, size_t len, uint64_t first_word = 0);

// The digest a buffer holding fillPattern(seed, 0, .., len) has: no buffer is materialised.
uint64_t digestPattern(uint64_t seed, uint64_t len);

// Seeds used by pair tests: the initiator's and the target's buffers must differ, so that data
// which never landed cannot pass as verified.
uint64_t initiatorSeed(uint64_t test_seed);
uint64_t targetSeed(uint64_t test_seed);

}  // namespace gdrmesh
