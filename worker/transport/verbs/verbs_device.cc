#include "worker/transport/verbs/verbs_device.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "worker/transport/verbs/verbs_errors.h"

namespace gdrmesh::verbs {

Status noDeviceStatus() {
  return failedPrecondition(
      "no RDMA device found (libibverbs lists 0 devices)",
      "load the NIC's RDMA driver (e.g. modprobe mlx5_ib) and check `ibv_devices`; for "
      "Soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <ifname>");
}

Status anyActivePort(const std::vector<std::string>& devices) {
  int n = 0;
  DeviceListPtr list(ibv_get_device_list(&n));
  if (!list) {
    if (errno == EPERM || errno == EACCES) {
      return Status(Code::kPermissionDenied, "cannot list RDMA devices: permission denied",
                    "run as root or add the user to the rdma group");
    }
    return noDeviceStatus();
  }
  if (n == 0) return noDeviceStatus();
  std::string states;
  for (int i = 0; i < n; ++i) {
    const std::string name = ibv_get_device_name(list.get()[i]);
    if (!devices.empty() && std::find(devices.begin(), devices.end(), name) == devices.end()) {
      continue;  // not one of `gdrmesh worker --nic`
    }
    ContextPtr ctx(ibv_open_device(list.get()[i]));
    if (!ctx) {
      states += (states.empty() ? "" : ", ") + name + ": cannot open (" + errnoName(errno) + ")";
      continue;
    }
    ibv_device_attr attr{};
    if (ibv_query_device(ctx.get(), &attr)) continue;
    for (uint32_t p = 1; p <= attr.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx.get(), static_cast<uint8_t>(p), &pa)) continue;
      if (pa.state == IBV_PORT_ACTIVE) return Status();
      states += (states.empty() ? "" : ", ") + name + "/" + std::to_string(p) + ": " +
                ibv_port_state_str(pa.state);
    }
  }
  return failedPrecondition(
      std::to_string(n) + " RDMA device(s) but no ACTIVE port (" + states + ")",
      "bring the links up: check cables and switch ports, `ip link set <netdev> up` for RoCE, "
      "a running subnet manager for InfiniBand");
}

Result<OpenDevice> openDevice(const std::string& want, uint32_t port) {
  int n = 0;
  DeviceListPtr list(ibv_get_device_list(&n));
  if (!list && (errno == EPERM || errno == EACCES)) {
    return callError("ibv_get_device_list", errno, "host");
  }
  // No kernel support (ENOSYS) and an empty list mean the same thing here.
  if (!list || n == 0) return noDeviceStatus();
  std::string seen;
  Status last_error;
  for (int i = 0; i < n; ++i) {
    ibv_device* dev = list.get()[i];
    const std::string name = ibv_get_device_name(dev);
    if (!want.empty() && name != want) {
      seen += (seen.empty() ? "" : ", ") + name;
      continue;
    }
    OpenDevice d;
    d.name = name;
    d.port = port;
    d.ctx.reset(ibv_open_device(dev));
    if (!d.ctx) {
      last_error = callError("ibv_open_device", errno, name);
      if (!want.empty()) return last_error;
      continue;
    }
    int rc = ibv_query_port(d.ctx.get(), static_cast<uint8_t>(port), &d.port_attr);
    if (rc) {
      last_error = callError("ibv_query_port(" + std::to_string(port) + ")", rc, name,
                             "check the port number (ibv_devinfo)");
      if (!want.empty()) return last_error;
      continue;
    }
    if (d.port_attr.state != IBV_PORT_ACTIVE) {
      last_error = failedPrecondition(
          "port " + std::to_string(port) + " of " + name + " is " +
              ibv_port_state_str(d.port_attr.state) + ", not ACTIVE",
          "check the link (cable, switch port, `ip link` of the bound net device for RoCE, the "
          "subnet manager for InfiniBand)");
      if (!want.empty()) return last_error;
      continue;
    }
    return d;
  }
  if (!want.empty()) {
    return notFound("RDMA device '" + want + "' not found (present: " + seen + ")",
                    "pick one of the listed devices (ibv_devices)");
  }
  if (!last_error.ok()) return last_error.withContext("no RDMA device with an ACTIVE port: ");
  return noDeviceStatus();
}

std::vector<GidCandidate> readGidTable(ibv_context* ctx, const std::string& dev, uint32_t port,
                                       int table_len, const std::string& sysfs_root) {
  std::vector<GidCandidate> out;
  for (int i = 0; i < table_len && i < 256; ++i) {
    GidCandidate c;
    c.index = i;
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(i), &entry, 0) == 0) {
      std::memcpy(c.raw.data(), entry.gid.raw, 16);
      switch (entry.gid_type) {
        case IBV_GID_TYPE_IB:
          c.type = GidType::kIb;
          break;
        case IBV_GID_TYPE_ROCE_V1:
          c.type = GidType::kRoceV1;
          break;
        case IBV_GID_TYPE_ROCE_V2:
          c.type = GidType::kRoceV2;
          break;
        default:
          c.type = GidType::kUnknown;
          break;
      }
    } else {
      ibv_gid gid{};
      if (ibv_query_gid(ctx, static_cast<uint8_t>(port), i, &gid) != 0) continue;
      std::memcpy(c.raw.data(), gid.raw, 16);
      c.type = readSysfsGidType(sysfs_root, dev, port, i);
    }
    if (!isZeroGid(c.raw)) out.push_back(c);
  }
  return out;
}

namespace {

bool portDown(ibv_context* ctx, uint32_t port, ibv_port_attr* pa) {
  return ibv_query_port(ctx, static_cast<uint8_t>(port), pa) == 0 && pa->state != IBV_PORT_ACTIVE;
}

}  // namespace

Status explainPortDown(ibv_context* ctx, uint32_t port, const std::string& dev, Status cause,
                       bool await_port_event) {
  ibv_port_attr pa{};
  bool down = portDown(ctx, port, &pa);
  if (!down && await_port_event) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (!down && std::chrono::steady_clock::now() < until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            until - std::chrono::steady_clock::now())
                            .count();
      pollfd p{ctx->async_fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left))) > 0) {
        ibv_async_event ev{};
        if (ibv_get_async_event(ctx, &ev) == 0) ibv_ack_async_event(&ev);
      }
      down = portDown(ctx, port, &pa);
    }
  }
  if (!down) return cause;
  return unavailable("port " + std::to_string(port) + " of " + dev + " is now " +
                         ibv_port_state_str(pa.state) + ": " + cause.message(),
                     "the link went down during the test: check the cable/switch port, "
                     "`ip link` of the bound net device (RoCE), the subnet manager (IB)");
}

}  // namespace gdrmesh::verbs
