// Fill and verify kernels for GPU test buffers: the pattern of common/pattern.h, computed where
// the memory lives. Built with nvcc into a fatbin at build time, embedded in gdrmesh_gpu and
// loaded with cuModuleLoadData at run time (the worker links no CUDA library).
//
// Both kernels take the buffer base and an absolute byte range [offset, offset + len). The base
// is at least 256-byte aligned (cuMemAlloc), so absolute offsets and addresses share their
// alignment. The range splits into a head (bytes up to the first 16-byte boundary), a body of
// 16-byte vectors (two pattern words each) and a tail; block 0's first threads do the head and
// tail byte by byte, every thread does body vectors in a grid-stride loop, kUnroll vectors in
// flight per thread.
#include <stdint.h>

#include "common/pattern.h"

namespace {

constexpr int kUnroll = 4;

struct Split {
  uint64_t head;        // bytes before the first 16-byte boundary (< 16)
  uint64_t vec_start;   // absolute offset of the first vector (16-aligned)
  uint64_t vecs;        // number of 16-byte vectors
  uint64_t tail_start;  // absolute offset of the tail
  uint64_t tail;        // bytes after the last vector (< 16)
};

__device__ __forceinline__ Split split(uint64_t offset, uint64_t len) {
  Split s;
  s.head = (16 - (offset & 15)) & 15;
  if (s.head > len) s.head = len;
  s.vec_start = offset + s.head;
  s.vecs = (len - s.head) / 16;
  s.tail_start = s.vec_start + s.vecs * 16;
  s.tail = offset + len - s.tail_start;
  return s;
}

// Absolute offset of the edge byte that thread `t` handles, or UINT64_MAX when none.
__device__ __forceinline__ uint64_t edgeByte(const Split& s, uint64_t offset, uint64_t t) {
  if (t < s.head) return offset + t;
  if (t < s.head + s.tail) return s.tail_start + (t - s.head);
  return ~0ULL;
}

__device__ __forceinline__ uint4 patternVec(uint64_t seed, uint64_t vec_offset) {
  const uint64_t w = vec_offset / 8;
  const uint64_t a = gdrmesh::patternWord(seed, w);
  const uint64_t b = gdrmesh::patternWord(seed, w + 1);
  return make_uint4(static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32),
                    static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32));
}

__device__ __forceinline__ int wrongBytes32(uint32_t diff) {
  // Bytes of a 32-bit difference that are non-zero.
  return ((diff & 0xffu) != 0) + ((diff & 0xff00u) != 0) + ((diff & 0xff0000u) != 0) +
         ((diff & 0xff000000u) != 0);
}

struct Tally {
  unsigned long long wrong = 0;
  unsigned long long first = ~0ULL;
};

__device__ __forceinline__ void compareVec(const uint4& got, uint64_t seed, uint64_t vec_offset,
                                           Tally& t) {
  const uint4 want = patternVec(seed, vec_offset);
  const uint32_t d[4] = {got.x ^ want.x, got.y ^ want.y, got.z ^ want.z, got.w ^ want.w};
  if ((d[0] | d[1] | d[2] | d[3]) == 0) return;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (d[k] == 0) continue;
    t.wrong += wrongBytes32(d[k]);
    const uint64_t at = vec_offset + 4 * k + (__ffs(d[k]) - 1) / 8;
    if (at < t.first) t.first = at;
  }
}

}  // namespace

extern "C" __global__ void gdrmesh_fill(uint8_t* base, uint64_t seed, uint64_t offset,
                                        uint64_t len) {
  const Split s = split(offset, len);
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t e = edgeByte(s, offset, tid);
  if (e != ~0ULL) base[e] = gdrmesh::patternByte(seed, e);

  uint4* v = reinterpret_cast<uint4*>(base + s.vec_start);
  uint64_t i = tid;
  for (; i + (kUnroll - 1) * stride < s.vecs; i += kUnroll * stride) {
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const uint64_t j = i + k * stride;
      __stcs(v + j, patternVec(seed, s.vec_start + j * 16));
    }
  }
  for (; i < s.vecs; i += stride) __stcs(v + i, patternVec(seed, s.vec_start + i * 16));
}

// result[0] += wrong bytes, result[1] = min(first wrong absolute offset). The caller sets
// result to {0, UINT64_MAX} before the launch.
extern "C" __global__ void gdrmesh_verify(const uint8_t* base, uint64_t seed, uint64_t offset,
                                          uint64_t len, unsigned long long* result) {
  const Split s = split(offset, len);
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  Tally t;
  const uint64_t e = edgeByte(s, offset, tid);
  if (e != ~0ULL && base[e] != gdrmesh::patternByte(seed, e)) {
    t.wrong = 1;
    t.first = e;
  }

  const uint4* v = reinterpret_cast<const uint4*>(base + s.vec_start);
  uint64_t i = tid;
  for (; i + (kUnroll - 1) * stride < s.vecs; i += kUnroll * stride) {
    uint4 got[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) got[k] = __ldcs(v + i + k * stride);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k)
      compareVec(got[k], seed, s.vec_start + (i + k * stride) * 16, t);
  }
  for (; i < s.vecs; i += stride) compareVec(__ldcs(v + i), seed, s.vec_start + i * 16, t);

  if (t.wrong != 0) {
    atomicAdd(&result[0], t.wrong);
    atomicMin(&result[1], t.first);
  }
}

namespace {

__device__ __forceinline__ uint64_t digestVec(const uint4& got, uint64_t vec_index) {
  const uint64_t a = got.x | (static_cast<uint64_t>(got.y) << 32);
  const uint64_t b = got.z | (static_cast<uint64_t>(got.w) << 32);
  return gdrmesh::digestMix(a, 2 * vec_index) + gdrmesh::digestMix(b, 2 * vec_index + 1);
}

}  // namespace

// result[0] += digestBytes(base, len) (common/pattern.h): a sum of per-word terms, so each
// thread sums its vectors, a warp adds its threads' sums and one atomic per warp adds that.
// The caller zeroes result[0] before the launch. The range starts at the (256-aligned) base;
// thread 0 adds the tail (the bytes after the last whole 16-byte vector, zero-padded words).
extern "C" __global__ void gdrmesh_digest(const uint8_t* base, uint64_t len,
                                          unsigned long long* result) {
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t vecs = len / 16;
  uint64_t sum = 0;
  const uint4* v = reinterpret_cast<const uint4*>(base);
  uint64_t i = tid;
  for (; i + (kUnroll - 1) * stride < vecs; i += kUnroll * stride) {
    uint4 got[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) got[k] = __ldcs(v + i + k * stride);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) sum += digestVec(got[k], i + k * stride);
  }
  for (; i < vecs; i += stride) sum += digestVec(__ldcs(v + i), i);
  if (tid == 0) {
    for (uint64_t w = vecs * 2; w * 8 < len; ++w) {
      uint64_t word = 0;
      for (uint64_t b = 0; b < 8 && w * 8 + b < len; ++b) {
        word |= static_cast<uint64_t>(base[w * 8 + b]) << (8 * b);
      }
      sum += gdrmesh::digestMix(word, w);
    }
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if ((threadIdx.x & 31) == 0 && sum != 0) atomicAdd(result, static_cast<unsigned long long>(sum));
}
