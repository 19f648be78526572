#include "worker/doctor/doctor.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "common/units.h"
#include "worker/doctor/pci_config.h"
#include "worker/inventory/discover.h"
#include "worker/inventory/sysfs.h"
#include "worker/topology/topology.h"

namespace gdrmesh {
namespace {

constexpr uint64_t kMemlockMin = 64ull << 20;

std::string joinList(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

CheckResult make(std::string id, std::string title, CheckStatus status, std::string detail,
                 std::string remediation = {}) {
  CheckResult r;
  r.id = std::move(id);
  r.title = std::move(title);
  r.status = status;
  r.detail = std::move(detail);
  r.remediation = status == CheckStatus::kPass ? std::string() : std::move(remediation);
  return r;
}

// Everything the checks share, read once.
struct Context {
  const DoctorInput* in = nullptr;
  std::vector<Nic> nics;
  std::string nic_error;  // discovery failure, "" if fine
  TopologyMatrix topo;
  std::string topo_error;
  std::vector<std::string> gpu_bus_ids;  // from CUDA or sysfs
  bool gpu_attrs_known = false;          // true when the CUDA inventory was given
  std::optional<std::pair<int, int>> kernel;
  std::string kernel_release;
  bool peermem_loaded = false;
  std::string peermem_name;
  bool modules_readable = false;

  bool hasGpus() const { return !gpu_bus_ids.empty(); }
  bool hasNics() const { return !nics.empty(); }
  bool dmabufUsable() const {
    if (!gpu_attrs_known || !kernel || *kernel < std::make_pair(5, 12)) return false;
    return std::all_of(in->gpus.begin(), in->gpus.end(),
                       [](const Gpu& g) { return g.dma_buf_supported; });
  }
};

std::string gpuLabel(const Context& c, size_t i) {
  return "GPU" + std::to_string(i) + " (" + c.gpu_bus_ids[i] + ")";
}

CheckResult checkPeermem(const Context& c) {
  const std::string id = "gpudirect.peermem", title = "nvidia_peermem loaded";
  const std::string fix =
      "modprobe nvidia_peermem (ships with the NVIDIA driver; persist it in "
      "/etc/modules-load.d/nvidia-peermem.conf)";
  if (!c.hasGpus()) {
    return make(id, title, CheckStatus::kNotApplicable, "no GPUs on this host; peermem not needed");
  }
  if (c.peermem_loaded) {
    return make(id, title, CheckStatus::kPass,
                c.peermem_name + " loaded: ibv_reg_mr on GPU memory can work");
  }
  if (!c.modules_readable) {
    return make(id, title, CheckStatus::kUnknown,
                "cannot read /proc/modules and no /sys/module/nvidia_peermem", fix);
  }
  if (c.dmabufUsable()) {
    return make(id, title, CheckStatus::kWarn,
                "nvidia_peermem/nv_peer_mem not loaded; the dma-buf path is available, the "
                "peermem path (plain ibv_reg_mr on GPU memory) will fail",
                fix);
  }
  return make(id, title, CheckStatus::kFail,
              "nvidia_peermem/nv_peer_mem not loaded and dma-buf is not usable: GPU memory "
              "registration will fail (ibv_reg_mr errno 14 EFAULT)",
              fix);
}

CheckResult checkDmabuf(const Context& c) {
  const std::string id = "gpudirect.dmabuf", title = "dma-buf GPU memory registration";
  if (!c.hasGpus()) return make(id, title, CheckStatus::kNotApplicable, "no GPUs on this host");
  const CheckStatus missing = c.peermem_loaded ? CheckStatus::kWarn : CheckStatus::kFail;
  if (!c.kernel) {
    return make(id, title, CheckStatus::kUnknown,
                "kernel release unreadable (/proc/sys/kernel/osrelease)",
                "run on the host, or record proc/sys/kernel/osrelease in the tree");
  }
  if (*c.kernel < std::make_pair(5, 12)) {
    return make(id, title, missing,
                "kernel " + c.kernel_release + " has no ibv_reg_dmabuf_mr support (needs 5.12+)",
                "upgrade the kernel to 5.12 or newer, or use nvidia_peermem");
  }
  if (!c.gpu_attrs_known) {
    return make(id, title, CheckStatus::kUnknown,
                "kernel " + c.kernel_release +
                    " supports dma-buf; the GPUs' dma-buf attribute needs the CUDA inventory",
                "run the doctor from the worker (with CUDA) to read CU_DEVICE_ATTRIBUTE_DMA_BUF_"
                "SUPPORTED");
  }
  std::vector<std::string> without;
  for (const Gpu& g : c.in->gpus) {
    if (!g.dma_buf_supported) without.push_back("GPU" + std::to_string(g.index));
  }
  if (!without.empty()) {
    return make(id, title, missing,
                "no dma-buf support on " + joinList(without) + " (kernel " + c.kernel_release + ")",
                "use the NVIDIA open kernel modules (driver 515+) with CUDA 11.7+, or load "
                "nvidia_peermem");
  }
  return make(id, title, CheckStatus::kPass,
              "dma-buf supported on all " + std::to_string(c.in->gpus.size()) + " GPUs, kernel " +
                  c.kernel_release);
}

CheckResult checkAcs(const Context& c) {
  const std::string id = "pcie.acs", title = "ACS off on GPU-NIC PCIe switch paths";
  if (!c.hasGpus()) return make(id, title, CheckStatus::kNotApplicable, "no GPUs on this host");
  if (!c.hasNics())
    return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs on this host");
  // Bridges on paths that stay below the host bridge; ACS redirect reroutes only those.
  std::vector<std::string> bridges;
  std::map<std::string, std::string> pair_of;
  const TopologyMatrix& m = c.topo;
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    for (size_t n = 0; n < m.nics.size(); ++n) {
      if (m.gpu_nic[g][n] != PathClass::kPIX && m.gpu_nic[g][n] != PathClass::kPXB) continue;
      for (const std::string& b : m.gpu_nic_bridges[g][n]) {
        if (pair_of.count(b)) continue;
        pair_of[b] = "GPU" + std::to_string(g) + "-" + m.nics[n].name;
        bridges.push_back(b);
      }
    }
  }
  if (bridges.empty()) {
    return make(id, title, CheckStatus::kPass,
                "no GPU-NIC pair shares a PCIe switch; every path crosses the host bridge, "
                "where ACS does not reroute it");
  }
  std::vector<std::string> redirect, other, unreadable;
  for (const std::string& b : bridges) {
    AcsState st = readAcs(c.in->root, b);
    if (st.read == AcsState::Read::kNotReadable) {
      unreadable.push_back(b + " (" + std::to_string(st.config_bytes) + " bytes)");
    } else if (st.read == AcsState::Read::kOk && (st.control & kAcsRedirectBits)) {
      redirect.push_back(b + " [" + acsBitsToString(st.control) + "] on " + pair_of[b]);
    } else if (st.read == AcsState::Read::kOk && st.control != 0) {
      other.push_back(b + " [" + acsBitsToString(st.control) + "]");
    }
  }
  const std::string fix =
      "disable ACS on these bridges: setpci -s <bdf> ECAP_ACS+0x6.w=0000 (until reboot), or "
      "turn ACS/PCIe P2P isolation off in the BIOS";
  if (!redirect.empty()) {
    return make(id, title, CheckStatus::kFail,
                "ACS P2P redirect enabled on " + joinList(redirect) +
                    ": GPU-NIC traffic goes up to the root complex (lower bandwidth, hangs "
                    "with IOMMU)",
                fix);
  }
  if (!unreadable.empty()) {
    return make(id, title, CheckStatus::kUnknown,
                "config space of " + std::to_string(unreadable.size()) + " of " +
                    std::to_string(bridges.size()) +
                    " bridges not readable: " + joinList(unreadable) +
                    (c.in->is_root ? "" : "; a non-root read gives only 64 bytes"),
                "run gdrmesh doctor as root to read the extended capabilities");
  }
  if (!other.empty()) {
    return make(id, title, CheckStatus::kWarn,
                "ACS enabled without P2P redirect on " + joinList(other), fix);
  }
  return make(id, title, CheckStatus::kPass,
              "ACS redirect off on all " + std::to_string(bridges.size()) +
                  " bridges of PIX/PXB GPU-NIC paths");
}

CheckResult checkIommu(const Context& c) {
  const std::string id = "iommu.mode", title = "IOMMU passthrough for GPU and NIC DMA";
  const std::string fix =
      "add iommu=pt to the kernel command line (intel_iommu=on iommu=pt or amd_iommu=on "
      "iommu=pt), update-grub, reboot";
  const std::string& root = c.in->root;
  auto units = sysfs::listDir(root, "/sys/class/iommu");
  const std::string cmdline = sysfs::readTrimmed(root, "/proc/cmdline").value_or("");
  if (units.empty()) {
    return make(id, title, CheckStatus::kPass, "no IOMMU active (no /sys/class/iommu entries)");
  }
  std::vector<std::string> devices = c.gpu_bus_ids;
  for (const Nic& n : c.nics) {
    if (!n.pci_bus_id.empty()) devices.push_back(n.pci_bus_id);
  }
  std::vector<std::string> translated;
  int typed = 0;
  for (const std::string& d : devices) {
    auto group = sysfs::resolve(root, "/sys/bus/pci/devices/" + d + "/iommu_group");
    if (!group) continue;
    auto type = sysfs::readTrimmed(root, *group + "/type");
    if (!type) continue;
    ++typed;
    if (type->rfind("DMA", 0) == 0) translated.push_back(d + " (" + *type + ")");
  }
  const bool pt_cmdline = cmdline.find("iommu=pt") != std::string::npos ||
                          cmdline.find("iommu.passthrough=1") != std::string::npos;
  const std::string active = "IOMMU active (" + joinList(units) + ")";
  if (typed == 0) {
    if (pt_cmdline) return make(id, title, CheckStatus::kPass, active + ", iommu=pt on cmdline");
    if (!c.hasGpus() || !c.hasNics()) {
      return make(id, title, CheckStatus::kPass,
                  active + " in translated mode, but no GPU-NIC path on this host");
    }
    return make(id, title, CheckStatus::kWarn,
                active + " and no iommu=pt on the kernel command line: DMA is translated", fix);
  }
  if (translated.empty()) {
    return make(
        id, title, CheckStatus::kPass,
        active + ", passthrough (identity) for all " + std::to_string(typed) + " GPU/NIC devices");
  }
  if (!c.hasGpus() || !c.hasNics()) {
    return make(id, title, CheckStatus::kPass,
                active + ", translated for " + joinList(translated) + ", but no GPU-NIC path");
  }
  return make(id, title, CheckStatus::kWarn,
              active + ", translated DMA on GPU-NIC paths: " + joinList(translated), fix);
}

CheckResult checkMemlock(const Context& c) {
  const std::string id = "memlock", title = "memlock limit of the worker";
  const std::string fix =
      "ulimit -l unlimited / LimitMEMLOCK=infinity in the systemd unit / 'memlock unlimited' "
      "in /etc/security/limits.conf";
  if (!c.in->memlock) {
    return make(id, title, CheckStatus::kUnknown, "memlock limit not provided",
                "run the doctor inside the worker process (gdrmesh doctor --local)");
  }
  const MemlockLimit& l = *c.in->memlock;
  auto fmt = [](uint64_t v) {
    return v == MemlockLimit::kUnlimited ? std::string("unlimited") : formatSize(v);
  };
  const std::string limits = "soft " + fmt(l.soft_bytes) + ", hard " + fmt(l.hard_bytes);
  if (l.soft_bytes == MemlockLimit::kUnlimited) {
    return make(id, title, CheckStatus::kPass, limits);
  }
  if (c.in->is_root) {
    return make(id, title, CheckStatus::kPass,
                limits + "; running as root (CAP_IPC_LOCK) bypasses the limit");
  }
  if (l.soft_bytes < kMemlockMin) {
    return make(id, title, CheckStatus::kFail,
                limits + ": registering more than " + fmt(l.soft_bytes) +
                    " of host memory fails (ibv_reg_mr ENOMEM)",
                fix);
  }
  return make(id, title, CheckStatus::kWarn,
              limits + ": host-memory registrations above " + fmt(l.soft_bytes) + " fail", fix);
}

std::string portLabel(const Nic& n, const NicPort& p) {
  return n.name + "/" + std::to_string(p.port);
}

CheckResult checkPortState(const Context& c) {
  const std::string id = "nic.port_state", title = "RDMA ports ACTIVE";
  if (!c.nic_error.empty()) return make(id, title, CheckStatus::kUnknown, c.nic_error);
  if (!c.hasNics())
    return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs on this host");
  std::vector<std::string> bad, good;
  for (const Nic& n : c.nics) {
    for (const NicPort& p : n.ports) {
      if (p.state == "ACTIVE") {
        good.push_back(portLabel(n, p));
        continue;
      }
      auto phys = sysfs::readTrimmed(c.in->root, "/sys/class/infiniband/" + n.name + "/ports/" +
                                                     std::to_string(p.port) + "/phys_state");
      bad.push_back(portLabel(n, p) + " " + (p.state.empty() ? "state unknown" : p.state) +
                    (phys ? " (phys_state " + parsePortState(*phys) + ")" : ""));
    }
  }
  if (!bad.empty()) {
    return make(id, title, CheckStatus::kFail, "not ACTIVE: " + joinList(bad),
                "check cable and switch port; RoCE: ip link set <netdev> up; IB port INIT: "
                "start a subnet manager (opensm)");
  }
  if (good.empty()) return make(id, title, CheckStatus::kUnknown, "no ports found under NICs");
  return make(id, title, CheckStatus::kPass, "ACTIVE: " + joinList(good));
}

CheckResult checkRate(const Context& c) {
  const std::string id = "nic.rate", title = "RDMA port rates";
  if (!c.hasNics())
    return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs on this host");
  std::vector<std::string> rates;
  std::set<double> active_rates;
  for (const Nic& n : c.nics) {
    for (const NicPort& p : n.ports) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%g", p.rate_gbps);
      rates.push_back(portLabel(n, p) + " " + buf + " Gb/s");
      if (p.state == "ACTIVE" && p.rate_gbps > 0) active_rates.insert(p.rate_gbps);
    }
  }
  if (active_rates.size() > 1) {
    return make(id, title, CheckStatus::kWarn, "mixed rates on active ports: " + joinList(rates),
                "check cables/transceivers and switch port speed of the slower ports");
  }
  return make(id, title, CheckStatus::kPass, joinList(rates));
}

CheckResult checkMtu(const Context& c) {
  const std::string id = "nic.mtu", title = "RoCE path MTU 4096";
  if (!c.hasNics())
    return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs on this host");
  std::vector<std::string> low, ok, unknown;
  for (const Nic& n : c.nics) {
    for (const NicPort& p : n.ports) {
      if (p.link_layer != "Ethernet") continue;
      if (p.netdev.empty() || p.active_mtu == 0) {
        unknown.push_back(portLabel(n, p));
        continue;
      }
      auto mtu = sysfs::readInt(c.in->root, "/sys/class/net/" + p.netdev + "/mtu");
      std::string s = portLabel(n, p) + " on " + p.netdev + ": netdev MTU " +
                      (mtu ? std::to_string(*mtu) : "?") + " -> RoCE MTU " +
                      std::to_string(p.active_mtu);
      (p.active_mtu < 4096 ? low : ok).push_back(s);
    }
  }
  if (!low.empty()) {
    return make(id, title, CheckStatus::kWarn, joinList(low),
                "ip link set <netdev> mtu 9000 (and jumbo frames on the switch) for RoCE MTU "
                "4096");
  }
  if (!unknown.empty()) {
    return make(id, title, CheckStatus::kUnknown,
                "no netdev or MTU for RoCE ports " + joinList(unknown),
                "check that the RoCE port has a bound net device (rdma link show)");
  }
  if (ok.empty()) {
    return make(id, title, CheckStatus::kPass,
                "no RoCE ports; the IB MTU is negotiated with the subnet manager");
  }
  return make(id, title, CheckStatus::kPass, joinList(ok));
}

CheckResult checkLinkLayer(const Context& c) {
  const std::string id = "nic.link_layer", title = "RDMA link layers";
  if (!c.hasNics())
    return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs on this host");
  std::vector<std::string> items, unknown;
  for (const Nic& n : c.nics) {
    for (const NicPort& p : n.ports) {
      items.push_back(portLabel(n, p) + " " + (p.link_layer.empty() ? "?" : p.link_layer));
      if (p.link_layer.empty()) unknown.push_back(portLabel(n, p));
    }
  }
  if (!unknown.empty()) {
    return make(id, title, CheckStatus::kUnknown, "link layer unreadable: " + joinList(unknown),
                "check /sys/class/infiniband/<dev>/ports/<n>/link_layer");
  }
  return make(id, title, CheckStatus::kPass, joinList(items));
}

CheckResult checkRoceGid(const Context& c) {
  const std::string id = "nic.roce_gid", title = "RoCE v2 GID present";
  if (!c.hasNics())
    return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs on this host");
  std::vector<std::string> missing, ok;
  for (const Nic& n : c.nics) {
    for (const NicPort& p : n.ports) {
      if (p.link_layer != "Ethernet") continue;
      std::vector<std::string> v2;
      for (const GidEntry& g : p.gids) {
        if (g.type == "RoCE v2") v2.push_back(std::to_string(g.index));
      }
      const std::string label = portLabel(n, p) + (p.netdev.empty() ? "" : " (" + p.netdev + ")");
      if (v2.empty()) {
        missing.push_back(label + ": " + std::to_string(p.gids.size()) + " GIDs, none RoCE v2");
      } else {
        ok.push_back(label + " RoCE v2 at index " + joinList(v2, ","));
      }
    }
  }
  if (!missing.empty()) {
    return make(id, title, CheckStatus::kFail, joinList(missing),
                "assign an IP address to the netdev (ip addr add <ip>/<len> dev <netdev>) and "
                "check the RoCE mode is v2");
  }
  if (ok.empty()) return make(id, title, CheckStatus::kPass, "no RoCE ports");
  return make(id, title, CheckStatus::kPass, joinList(ok));
}

std::optional<double> parseSpeed(const std::string& s) {
  const char* b = s.c_str();
  char* e = nullptr;
  double v = std::strtod(b, &e);
  if (e == b || v <= 0) return std::nullopt;
  return v;
}

CheckResult checkPcieLink(const Context& c) {
  const std::string id = "pcie.link", title = "PCIe links at full speed and width";
  std::vector<std::pair<std::string, std::string>> devices;  // label, bus id
  for (size_t i = 0; i < c.gpu_bus_ids.size(); ++i)
    devices.emplace_back(gpuLabel(c, i), c.gpu_bus_ids[i]);
  for (const Nic& n : c.nics) {
    if (!n.pci_bus_id.empty())
      devices.emplace_back(n.name + " (" + n.pci_bus_id + ")", n.pci_bus_id);
  }
  if (devices.empty()) {
    return make(id, title, CheckStatus::kNotApplicable,
                "no GPUs and no PCI RDMA NICs on this host");
  }
  std::vector<std::string> degraded, gpu_idle;
  int read = 0;
  for (size_t k = 0; k < devices.size(); ++k) {
    const bool is_gpu = k < c.gpu_bus_ids.size();
    const std::string dir = "/sys/bus/pci/devices/" + devices[k].second;
    auto cs = sysfs::readTrimmed(c.in->root, dir + "/current_link_speed");
    auto ms = sysfs::readTrimmed(c.in->root, dir + "/max_link_speed");
    auto cw = sysfs::readInt(c.in->root, dir + "/current_link_width");
    auto mw = sysfs::readInt(c.in->root, dir + "/max_link_width");
    if (!cs || !ms || !cw || !mw) continue;
    ++read;
    std::vector<std::string> why;
    if (*cw < *mw) why.push_back("x" + std::to_string(*cw) + " of x" + std::to_string(*mw));
    auto csv = parseSpeed(*cs), msv = parseSpeed(*ms);
    const bool slow = csv && msv && *csv < *msv;
    if (slow && is_gpu && why.empty()) {
      gpu_idle.push_back(devices[k].first + " " + *cs + " of " + *ms);
    } else if (slow) {
      why.push_back(*cs + " of " + *ms);
    }
    if (!why.empty()) degraded.push_back(devices[k].first + " " + joinList(why, ", "));
  }
  if (read == 0) {
    return make(id, title, CheckStatus::kUnknown, "link speed/width files unreadable",
                "check /sys/bus/pci/devices/<bdf>/current_link_*");
  }
  const std::string idle =
      gpu_idle.empty()
          ? ""
          : "; below max speed, normal for idle GPUs (recheck under load): " + joinList(gpu_idle);
  if (!degraded.empty()) {
    return make(id, title, CheckStatus::kWarn, "degraded: " + joinList(degraded) + idle,
                "reseat the card or riser, check the slot's lane wiring and BIOS link settings");
  }
  return make(id, title, CheckStatus::kPass, std::to_string(read) + " devices at max width" + idle);
}

CheckResult checkAffinity(const Context& c) {
  const std::string id = "topo.gpu_nic", title = "a NIC at PIX/PXB for every GPU";
  if (!c.topo_error.empty()) return make(id, title, CheckStatus::kUnknown, c.topo_error);
  if (!c.hasGpus()) return make(id, title, CheckStatus::kNotApplicable, "no GPUs on this host");
  if (!c.hasNics())
    return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs on this host");
  std::vector<std::string> far, close;
  for (size_t g = 0; g < c.topo.gpus.size(); ++g) {
    const TopoGpu& tg = c.topo.gpus[g];
    const std::string label = "GPU" + std::to_string(g);
    if (tg.best_class == PathClass::kPIX || tg.best_class == PathClass::kPXB) {
      close.push_back(label + "->" + tg.nearest_nics.front() + " " + toString(tg.best_class));
    } else if (tg.best_class == PathClass::kNA) {
      far.push_back(label + ": no PCI NIC path (software NICs only)");
    } else {
      far.push_back(label + ": no NIC at PIX/PXB, nearest " + tg.nearest_nics.front() + " at " +
                    toString(tg.best_class));
    }
  }
  if (!far.empty()) {
    return make(id, title, CheckStatus::kWarn, joinList(far, "; "),
                "place a NIC under the same PCIe switch as each GPU; NCCL uses GPUDirect only "
                "at PXB or closer (NCCL_NET_GDR_LEVEL)");
  }
  return make(id, title, CheckStatus::kPass, joinList(close));
}

CheckResult checkBar1(const Context& c) {
  const std::string id = "gpu.bar1", title = "GPU BAR1 large enough for GPUDirect";
  if (!c.hasGpus()) return make(id, title, CheckStatus::kNotApplicable, "no GPUs on this host");
  std::vector<std::string> small, ok, unreadable;
  for (size_t i = 0; i < c.gpu_bus_ids.size(); ++i) {
    auto res =
        sysfs::readFile(c.in->root, "/sys/bus/pci/devices/" + c.gpu_bus_ids[i] + "/resource");
    unsigned long long start = 0, end = 0, flags = 0;
    std::istringstream lines(res.value_or(""));
    std::string line;
    std::getline(lines, line);  // BAR0
    if (!res || !std::getline(lines, line) ||
        std::sscanf(line.c_str(), "%llx %llx %llx", &start, &end, &flags) != 3 || end <= start) {
      unreadable.push_back(gpuLabel(c, i));
      continue;
    }
    const uint64_t bar1 = end - start + 1;
    uint64_t memory = 0;
    for (const Gpu& g : c.in->gpus) {
      if (normalizeBusId(g.pci_bus_id) == c.gpu_bus_ids[i]) memory = g.memory_bytes;
    }
    std::string s = gpuLabel(c, i) + " BAR1 " + formatSize(bar1);
    if (memory > 0) s += " / memory " + formatSize(memory);
    const bool is_small = memory > 0 ? bar1 < memory : bar1 < (1ull << 30);
    (is_small ? small : ok).push_back(s);
  }
  if (!small.empty()) {
    return make(id, title, CheckStatus::kWarn,
                "BAR1 smaller than GPU memory: " + joinList(small) +
                    "; GPUDirect registrations beyond BAR1 at a time fail",
                "enable Above 4G decoding / Resizable BAR in the BIOS, or keep registered GPU "
                "buffers under the BAR1 size");
  }
  if (!unreadable.empty()) {
    return make(id, title, CheckStatus::kUnknown,
                "resource file unreadable: " + joinList(unreadable),
                "check /sys/bus/pci/devices/<bdf>/resource");
  }
  return make(id, title, CheckStatus::kPass, joinList(ok));
}

CheckResult checkDriver(const Context& c) {
  const std::string id = "driver.nvidia", title = "NVIDIA driver";
  auto version = sysfs::readTrimmed(c.in->root, "/sys/module/nvidia/version");
  const std::string cuda =
      c.in->cuda_driver_version.empty() ? "" : ", CUDA driver " + c.in->cuda_driver_version;
  if (version && !version->empty()) {
    return make(id, title, CheckStatus::kPass, "nvidia " + *version + cuda);
  }
  if (!c.hasGpus())
    return make(id, title, CheckStatus::kNotApplicable, "no GPUs and no NVIDIA driver");
  return make(id, title, CheckStatus::kFail,
              "GPUs present but the nvidia module is not loaded (/sys/module/nvidia/version)",
              "install/load the NVIDIA driver (modprobe nvidia)");
}

CheckResult checkRdmaCore(const Context& c) {
  const std::string id = "rdma_core.version", title = "rdma-core (libibverbs)";
  const std::string v =
      c.in->rdma_core_version.empty() ? rdmaCoreVersion(c.in->root) : c.in->rdma_core_version;
  if (v.empty()) {
    if (!c.hasNics())
      return make(id, title, CheckStatus::kNotApplicable, "no RDMA NICs, no libibverbs");
    return make(id, title, CheckStatus::kUnknown, "libibverbs.so.1.* not found under /usr/lib*",
                "install rdma-core (apt install ibverbs-providers libibverbs1)");
  }
  const int major = std::atoi(v.c_str());
  if (major > 0 && major < 34 && c.hasGpus()) {
    return make(id, title, CheckStatus::kWarn,
                "rdma-core " + v + " has no ibv_reg_dmabuf_mr (added in 34)",
                "upgrade rdma-core to 34 or newer for dma-buf registration");
  }
  return make(id, title, CheckStatus::kPass, "rdma-core " + v);
}

bool moduleLoaded(const std::string& modules, const std::string& name) {
  std::istringstream in(modules);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return true;
  }
  return false;
}

}  // namespace

const char* toString(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return "PASS";
    case CheckStatus::kWarn:
      return "WARN";
    case CheckStatus::kFail:
      return "FAIL";
    case CheckStatus::kUnknown:
      return "UNKNOWN";
    case CheckStatus::kNotApplicable:
      return "N/A";
  }
  return "UNKNOWN";
}

std::string toString(const CheckResult& r) {
  std::string s = std::string("[") + toString(r.status) + "] " + r.id + ": " + r.detail;
  if (!r.remediation.empty()) s += " (fix: " + r.remediation + ")";
  return s;
}

nlohmann::json toJson(const CheckResult& r) {
  return {{"id", r.id},
          {"title", r.title},
          {"status", toString(r.status)},
          {"detail", r.detail},
          {"remediation", r.remediation}};
}

nlohmann::json toJson(const std::vector<CheckResult>& results) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& r : results) checks.push_back(toJson(r));
  return {{"status", toString(worstStatus(results))}, {"checks", checks}};
}

CheckStatus worstStatus(const std::vector<CheckResult>& results) {
  auto rank = [](CheckStatus s) {
    switch (s) {
      case CheckStatus::kFail:
        return 3;
      case CheckStatus::kWarn:
        return 2;
      case CheckStatus::kUnknown:
        return 1;
      case CheckStatus::kPass:
        return 0;
      case CheckStatus::kNotApplicable:
        return -1;
    }
    return 0;
  };
  CheckStatus worst = CheckStatus::kPass;
  for (const auto& r : results) {
    if (rank(r.status) > rank(worst)) worst = r.status;
  }
  return worst;
}

std::string renderChecks(const std::vector<CheckResult>& results) {
  std::ostringstream out;
  std::map<CheckStatus, int> counts;
  for (const auto& r : results) {
    ++counts[r.status];
    std::string status = toString(r.status);
    status.resize(7, ' ');
    out << status << " " << r.id << ": " << r.title << "\n        " << r.detail << "\n";
    if (!r.remediation.empty()) out << "        fix: " << r.remediation << "\n";
  }
  out << "\n"
      << counts[CheckStatus::kPass] << " pass, " << counts[CheckStatus::kWarn] << " warn, "
      << counts[CheckStatus::kFail] << " fail, " << counts[CheckStatus::kUnknown] << " unknown\n";
  return out.str();
}

std::optional<std::pair<int, int>> parseKernelRelease(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2) return std::nullopt;
  return std::make_pair(major, minor);
}

DoctorInput localDoctorInput(std::vector<Gpu> gpus, std::string cuda_driver_version) {
  DoctorInput in;
  in.gpus = std::move(gpus);
  in.cuda_driver_version = std::move(cuda_driver_version);
  in.is_root = ::geteuid() == 0;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    MemlockLimit l;
    l.soft_bytes = rl.rlim_cur == RLIM_INFINITY ? MemlockLimit::kUnlimited : rl.rlim_cur;
    l.hard_bytes = rl.rlim_max == RLIM_INFINITY ? MemlockLimit::kUnlimited : rl.rlim_max;
    in.memlock = l;
  }
  return in;
}

std::vector<CheckResult> runChecks(const DoctorInput& input) {
  Context c;
  c.in = &input;
  if (input.nics) {
    c.nics = *input.nics;
  } else {
    auto nics = discoverNics(input.root);
    if (nics.ok()) {
      c.nics = std::move(nics).value();
    } else {
      c.nic_error = nics.status().toString();
    }
  }
  c.gpu_attrs_known = !input.gpus.empty();
  std::vector<std::string> given;
  for (const Gpu& g : input.gpus) given.push_back(normalizeBusId(g.pci_bus_id));
  auto topo = discoverTopology(input.root, given);
  if (topo.ok()) {
    c.topo = std::move(topo).value();
  } else {
    c.topo_error = topo.status().toString();
  }
  c.gpu_bus_ids = given.empty() ? discoverGpuBusIds(input.root) : given;
  if (auto rel = sysfs::readTrimmed(input.root, "/proc/sys/kernel/osrelease")) {
    c.kernel_release = *rel;
    c.kernel = parseKernelRelease(*rel);
  }
  auto modules = sysfs::readFile(input.root, "/proc/modules");
  c.modules_readable = modules.has_value();
  for (const char* name : {"nvidia_peermem", "nv_peer_mem"}) {
    if ((modules && moduleLoaded(*modules, name)) ||
        sysfs::isDirectory(input.root, std::string("/sys/module/") + name)) {
      c.peermem_loaded = true;
      c.peermem_name = name;
      c.modules_readable = true;
      break;
    }
  }
  return {checkPeermem(c),   checkDmabuf(c),   checkAcs(c),  checkIommu(c),     checkMemlock(c),
          checkPortState(c), checkRate(c),     checkMtu(c),  checkLinkLayer(c), checkRoceGid(c),
          checkPcieLink(c),  checkAffinity(c), checkBar1(c), checkDriver(c),    checkRdmaCore(c)};
}

}  // namespace gdrmesh
