// gdrmesh_gpu_bench: throughput of CudaBuffer::fill and ::verify on one GPU, with cuMemsetD8 over
// the same buffer in the same run as the reference (a write-only pass at the memory's speed).
//
//   gdrmesh_gpu_bench [--gpu N] [--sizes-mib 1024,4096] [--runs 20] [--warmup 3] [--sweep]
//
// Each figure is the median of --runs timed calls after --warmup untimed ones; one call is the
// whole API call as the worker makes it (launch + synchronisation), timed with the host's
// steady clock. TB/s is decimal (1e12 bytes per second) over the buffer size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "worker/gpu/cuda_buffer.h"
#include "worker/gpu/discovery.h"
#include "worker/gpu/kernel_image.h"

namespace gdrmesh {
namespace {

struct Args {
  int gpu = 0;
  std::vector<size_t> sizes_mib{1024, 4096};
  int runs = 20;
  int warmup = 3;
  bool sweep = false;
};

double medianSeconds(int warmup, int runs, const std::function<bool()>& op) {
  for (int i = 0; i < warmup; ++i) {
    if (!op()) return -1;
  }
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto a = std::chrono::steady_clock::now();
    if (!op()) return -1;
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double tbps(size_t bytes, double s) {
  return s > 0 ? static_cast<double>(bytes) / s / 1e12 : 0;
}

struct Row {
  double fill_s = -1, verify_s = -1, memset_s = -1, digest_s = -1;
};

// Times fill, verify and cuMemsetD8 on one buffer. Returns false on any error (printed).
bool measure(CudaApi& api, const Args& args, size_t size, const CudaBufferOptions& opts, Row* row) {
  Result<std::unique_ptr<CudaBuffer>> rb = CudaBuffer::allocate(api, args.gpu, size, opts);
  if (!rb.ok()) {
    std::printf("allocate %zu B: %s\n", size, rb.status().toString().c_str());
    return false;
  }
  CudaBuffer& b = **rb;
  const uint64_t seed = 0xfeedULL;
  std::string error;
  row->fill_s = medianSeconds(args.warmup, args.runs, [&] {
    Status s = b.fill(seed, 0, size);
    if (!s.ok()) error = s.toString();
    return s.ok();
  });
  row->verify_s = medianSeconds(args.warmup, args.runs, [&] {
    Result<IntegrityReport> r = b.verify(seed, 0, size);
    if (!r.ok()) {
      error = r.status().toString();
      return false;
    }
    if (!r->ok()) {
      error = "verify after fill: " + r->toString();
      return false;
    }
    return true;
  });
  // The digest a sealed test's destination reports (must equal the one computed from the seed).
  const uint64_t want = digestPattern(seed, size);
  row->digest_s = medianSeconds(args.warmup, args.runs, [&] {
    Result<uint64_t> d = b.digest(size);
    if (!d.ok()) {
      error = d.status().toString();
      return false;
    }
    if (*d != want) {
      error = "digest after fill differs from digestPattern";
      return false;
    }
    return true;
  });
  // The reference: cuMemsetD8 over the same memory, synchronised the same way.
  cu::CUdevice dev = 0;
  cu::CUcontext ctx = nullptr;
  if (api.deviceGet(&dev, args.gpu) != cu::CUDA_SUCCESS ||
      api.devicePrimaryCtxRetain(&ctx, dev) != cu::CUDA_SUCCESS ||
      api.ctxPushCurrent(ctx) != cu::CUDA_SUCCESS) {
    error = "cannot make the primary context current";
  } else {
    row->memset_s = medianSeconds(args.warmup, args.runs, [&] {
      cu::CUresult rc = api.memsetD8(b.devicePtr(), 0x5a, size);
      if (rc == cu::CUDA_SUCCESS) rc = api.ctxSynchronize();
      if (rc != cu::CUDA_SUCCESS) error = cudaStatus(api, rc, "cuMemsetD8").toString();
      return rc == cu::CUDA_SUCCESS;
    });
    cu::CUcontext popped = nullptr;
    (void)api.ctxPopCurrent(&popped);
    (void)api.devicePrimaryCtxRelease(dev);
  }
  // A corrupted byte must still be found (the timed verify could not pass by doing nothing).
  if (error.empty() && b.fill(seed, 0, size).ok()) {
    const unsigned char bad = static_cast<unsigned char>(patternByte(seed, size / 3) ^ 0x10);
    if (!b.copyFromHost(size / 3, &bad, 1).ok()) error = "copyFromHost failed";
    Result<IntegrityReport> r = b.verify(seed, 0, size);
    if (!r.ok() || r->wrong_bytes != 1 || r->first_wrong_offset != static_cast<int64_t>(size / 3)) {
      error = "corrupted byte not found: " + (r.ok() ? r->toString() : r.status().toString());
    }
  }
  if (!error.empty()) {
    std::printf("ERROR (%zu B): %s\n", size, error.c_str());
    return false;
  }
  return true;
}

std::vector<size_t> parseList(const char* s) {
  std::vector<size_t> out;
  std::string item;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!item.empty()) out.push_back(std::stoull(item));
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

int run(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--gpu" && v != nullptr) {
      args.gpu = std::atoi(v);
      ++i;
    } else if (a == "--sizes-mib" && v != nullptr) {
      args.sizes_mib = parseList(v);
      ++i;
    } else if (a == "--runs" && v != nullptr) {
      args.runs = std::max(1, std::atoi(v));
      ++i;
    } else if (a == "--warmup" && v != nullptr) {
      args.warmup = std::max(0, std::atoi(v));
      ++i;
    } else if (a == "--sweep") {
      args.sweep = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--gpu N] [--sizes-mib 1024,4096] [--runs 20] [--warmup 3] "
                   "[--sweep]\n",
                   argv[0]);
      return 2;
    }
  }

  std::unique_ptr<CudaDriver> api = CudaDriver::open();
  GpuInventory inv = discoverGpuInventory(*api);
  if (inv.gpus.empty()) {
    std::printf("no GPU: %s\n", inv.reason.c_str());
    return 1;
  }
  if (args.gpu < 0 || args.gpu >= static_cast<int>(inv.gpus.size())) {
    std::printf("--gpu %d: this host has %zu GPU(s)\n", args.gpu, inv.gpus.size());
    return 2;
  }
  const Gpu& g = inv.gpus[static_cast<size_t>(args.gpu)];
  std::printf("gpu:%d %s %s cc %d.%d, driver %s, kernels: %s\n", g.index, g.name.c_str(),
              g.pci_bus_id.c_str(), g.compute_capability_major, g.compute_capability_minor,
              inv.driver_version.c_str(), gpuKernelImage().note);
  std::printf("median of %d runs after %d warm-up; TB/s = 1e12 B/s over the buffer size\n",
              args.runs, args.warmup);

  bool ok = true;
  if (args.sweep) {
    // Launch shapes, at the first size: pick the defaults of CudaBufferOptions from this.
    const size_t size = args.sizes_mib.front() << 20;
    std::printf("\nlaunch-shape sweep at %zu MiB\n%-16s %10s %10s %10s\n", args.sizes_mib.front(),
                "blocks/SM x thr", "fill TB/s", "verify", "memset");
    const unsigned shapes[][2] = {{1, 256},  {2, 256}, {4, 256}, {8, 256},
                                  {16, 256}, {2, 512}, {4, 512}, {4, 128}};
    for (const auto& shape : shapes) {
      CudaBufferOptions opts;
      opts.blocks_per_sm = shape[0];
      opts.threads_per_block = shape[1];
      Row row;
      ok = measure(*api, args, size, opts, &row) && ok;
      std::printf("%6u x %-7u %10.3f %10.3f %10.3f\n", shape[0], shape[1], tbps(size, row.fill_s),
                  tbps(size, row.verify_s), tbps(size, row.memset_s));
    }
    // The host-copy fallback, for scale.
    CudaBufferOptions host;
    host.use_gpu_kernels = false;
    Args one = args;
    one.runs = 1;
    one.warmup = 0;
    Row row;
    const size_t hsize = 256u << 20;
    ok = measure(*api, one, hsize, host, &row) && ok;
    std::printf("host-copy fallback at 256 MiB: fill %.4f TB/s, verify %.4f TB/s\n",
                tbps(hsize, row.fill_s), tbps(hsize, row.verify_s));
  }

  std::printf("\n%-10s %10s %12s %12s %12s %12s %10s %10s %10s\n", "size", "where", "fill TB/s",
              "verify TB/s", "digest TB/s", "memset TB/s", "fill/mem", "verify/mem", "digest/mem");
  for (size_t mib : args.sizes_mib) {
    const size_t size = mib << 20;
    Row row;
    CudaBufferOptions opts;
    Result<std::unique_ptr<CudaBuffer>> probe = CudaBuffer::allocate(*api, args.gpu, 4096, opts);
    const std::string where = probe.ok() ? (*probe)->describe() : "?";
    probe = Status(Code::kInternal, "released");
    if (!measure(*api, args, size, opts, &row)) {
      ok = false;
      continue;
    }
    const double mem = tbps(size, row.memset_s);
    std::printf("%6zu MiB %10s %12.3f %12.3f %12.3f %12.3f %10.2f %10.2f %10.2f\n", mib,
                where.c_str(), tbps(size, row.fill_s), tbps(size, row.verify_s),
                tbps(size, row.digest_s), mem, mem > 0 ? tbps(size, row.fill_s) / mem : 0,
                mem > 0 ? tbps(size, row.verify_s) / mem : 0,
                mem > 0 ? tbps(size, row.digest_s) / mem : 0);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gdrmesh

int main(int argc, char** argv) {
  return gdrmesh::run(argc, argv);
}
