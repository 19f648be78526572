// Memory registration for the verbs transport: which call runs for which buffer and requested
// path, behind a small injectable interface so tests can fake the errnos.
//
//   host memory, kAuto/kHost   ibv_reg_mr                                        -> kHost
//   GPU memory,  kDmabuf       Buffer::exportDmabuf + ibv_reg_dmabuf_mr          -> kDmabuf
//   GPU memory,  kPeermem      ibv_reg_mr on the device pointer (nvidia-peermem) -> kPeermem
//   GPU memory,  kAuto         dmabuf, then peermem; both failing is an error naming both.
// kStaged never reaches the transport (the session stages into a host buffer); there is no
// silent fallback to it or to anything else.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "common/types.h"
#include "worker/memory/buffer.h"

namespace gdrmesh::verbs {

// The registration calls. Failures return nullptr with errno set, as libibverbs does.
class MrRegistrar {
 public:
  virtual ~MrRegistrar() = default;
  virtual ibv_mr* regMr(ibv_pd* pd, void* addr, size_t length, int access) = 0;
  virtual ibv_mr* regDmabufMr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                              int access) = 0;
  virtual int deregMr(ibv_mr* mr) = 0;
};

// The real calls into libibverbs.
MrRegistrar& systemRegistrar();

struct MrDeleter {
  MrRegistrar* registrar = nullptr;
  void operator()(ibv_mr* mr) const noexcept {
    if (registrar) registrar->deregMr(mr);
  }
};
using MrPtr = std::unique_ptr<ibv_mr, MrDeleter>;

struct Registration {
  std::unique_ptr<DmabufExport> dmabuf;  // declared first: released after the MR
  MrPtr mr;
  RegPath path = RegPath::kHost;
  std::string attempts;  // "dmabuf: EOPNOTSUPP; peermem: ok"
};

// Access flags used for test buffers: local write, remote read and write.
int defaultAccessFlags(MemoryKind memory);

// Registers `buffer` (its whole size) with `pd` along `requested`. Errors carry the cause and
// the fix (registrationError); for kAuto they name both attempts.
Result<Registration> registerBuffer(MrRegistrar& registrar, ibv_pd* pd, Buffer& buffer,
                                    RegPath requested, const std::string& device);

}  // namespace gdrmesh::verbs
