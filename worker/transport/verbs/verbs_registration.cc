#include "worker/transport/verbs/verbs_registration.h"

#include <cerrno>

#include "worker/transport/verbs/verbs_errors.h"

namespace gdrmesh::verbs {
namespace {

class SystemRegistrar final : public MrRegistrar {
 public:
  ibv_mr* regMr(ibv_pd* pd, void* addr, size_t length, int access) override {
    return ibv_reg_mr(pd, addr, length, access);
  }
  ibv_mr* regDmabufMr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                      int access) override {
    return ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access);
  }
  int deregMr(ibv_mr* mr) override { return ibv_dereg_mr(mr); }
};

struct Attempt {
  MrPtr mr;
  std::unique_ptr<DmabufExport> dmabuf;
  Status status;
};

Attempt tryPlain(MrRegistrar& r, ibv_pd* pd, Buffer& buffer, RegPath path,
                 const std::string& device) {
  Attempt a;
  errno = 0;
  ibv_mr* mr = r.regMr(pd, buffer.data(), buffer.size(), defaultAccessFlags(buffer.kind()));
  if (!mr) {
    a.status = registrationError(path, errno ? errno : EINVAL, device, buffer.describe());
    return a;
  }
  a.mr = MrPtr(mr, MrDeleter{&r});
  return a;
}

Attempt tryDmabuf(MrRegistrar& r, ibv_pd* pd, Buffer& buffer, const std::string& device) {
  Attempt a;
  auto exp = buffer.exportDmabuf();
  if (!exp.ok()) {
    a.status =
        Status(exp.status().code(),
               "dma-buf export of " + buffer.describe() + " for " + device +
                   " failed: " + exp.status().message(),
               exp.status().fix().empty() ? "use peermem (modprobe nvidia-peermem, --reg peermem)"
                                          : exp.status().fix());
    return a;
  }
  a.dmabuf = std::move(exp).value();
  errno = 0;
  const uint64_t iova = reinterpret_cast<uintptr_t>(buffer.data());
  ibv_mr* mr = r.regDmabufMr(pd, a.dmabuf->offset(), buffer.size(), iova, a.dmabuf->fd(),
                             defaultAccessFlags(buffer.kind()));
  if (!mr) {
    a.status =
        registrationError(RegPath::kDmabuf, errno ? errno : EINVAL, device, buffer.describe());
    a.dmabuf.reset();
    return a;
  }
  a.mr = MrPtr(mr, MrDeleter{&r});
  return a;
}

Registration done(Attempt&& a, RegPath path, std::string attempts) {
  Registration reg;
  reg.dmabuf = std::move(a.dmabuf);
  reg.mr = std::move(a.mr);
  reg.path = path;
  reg.attempts = std::move(attempts);
  return reg;
}

}  // namespace

MrRegistrar& systemRegistrar() {
  static SystemRegistrar r;
  return r;
}

int defaultAccessFlags(MemoryKind memory) {
  int flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  // Relaxed ordering helps GPU memory behind PCIe switches (perftest turns it on as well); it is
  // an optional flag, ignored by devices that lack it.
  if (memory == MemoryKind::kCuda) flags |= IBV_ACCESS_RELAXED_ORDERING;
  return flags;
}

Result<Registration> registerBuffer(MrRegistrar& registrar, ibv_pd* pd, Buffer& buffer,
                                    RegPath requested, const std::string& device) {
  const bool gpu = buffer.kind() == MemoryKind::kCuda;
  if (requested == RegPath::kStaged) {
    return invalidArgument(
        "registration path 'staged' reached the verbs transport",
        "the session layer stages GPU data through a host buffer and registers that with "
        "reg=host");
  }
  if (!gpu) {
    if (requested != RegPath::kAuto && requested != RegPath::kHost) {
      return invalidArgument(std::string("registration path '") + toString(requested) +
                                 "' needs GPU memory; " + buffer.describe() + " is host memory",
                             "use reg=host (or auto) for host buffers");
    }
    Attempt a = tryPlain(registrar, pd, buffer, RegPath::kHost, device);
    if (!a.status.ok()) return a.status;
    return done(std::move(a), RegPath::kHost, "host: ok");
  }
  switch (requested) {
    case RegPath::kHost:
      return invalidArgument("registration path 'host' asked for GPU memory " + buffer.describe(),
                             "use dmabuf, peermem or auto for GPU buffers");
    case RegPath::kDmabuf: {
      Attempt a = tryDmabuf(registrar, pd, buffer, device);
      if (!a.status.ok()) return a.status;
      return done(std::move(a), RegPath::kDmabuf, "dmabuf: ok");
    }
    case RegPath::kPeermem: {
      Attempt a = tryPlain(registrar, pd, buffer, RegPath::kPeermem, device);
      if (!a.status.ok()) return a.status;
      return done(std::move(a), RegPath::kPeermem, "peermem: ok");
    }
    case RegPath::kAuto: {
      Attempt d = tryDmabuf(registrar, pd, buffer, device);
      if (d.status.ok()) return done(std::move(d), RegPath::kDmabuf, "dmabuf: ok");
      Attempt p = tryPlain(registrar, pd, buffer, RegPath::kPeermem, device);
      const std::string first = "dmabuf: " + d.status.message();
      if (p.status.ok()) return done(std::move(p), RegPath::kPeermem, first + "; peermem: ok");
      std::string fix = d.status.fix();
      if (!p.status.fix().empty()) fix += (fix.empty() ? "" : "; or ") + p.status.fix();
      return Status(Code::kFailedPrecondition,
                    "no GPUDirect registration path works for " + buffer.describe() + " on " +
                        device + " (" + first + "; peermem: " + p.status.message() +
                        "); not falling back to staging",
                    fix);
    }
    case RegPath::kStaged:
      break;
  }
  return internalError("unhandled registration path");
}

}  // namespace gdrmesh::verbs
