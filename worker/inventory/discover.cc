#include "worker/inventory/discover.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>

#include "worker/inventory/sysfs.h"

namespace gdrmesh {
namespace {

bool isAllZeroGid(const std::string& gid) {
  for (char c : gid) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

NicPort readPort(const std::string& root, const std::string& dev_dir, const std::string& port) {
  const std::string dir = dev_dir + "/ports/" + port;
  NicPort p;
  p.port = std::atoi(port.c_str());
  if (auto s = sysfs::readTrimmed(root, dir + "/state")) p.state = parsePortState(*s);
  if (auto s = sysfs::readTrimmed(root, dir + "/link_layer")) p.link_layer = *s;
  if (auto s = sysfs::readTrimmed(root, dir + "/rate")) {
    if (auto r = parseRateGbps(*s)) p.rate_gbps = *r;
  }
  if (auto lid = sysfs::readInt(root, dir + "/lid")) p.lid = static_cast<uint32_t>(*lid);

  for (const std::string& k : sysfs::sortedNumerically(sysfs::listDir(root, dir + "/gids"))) {
    auto gid = sysfs::readTrimmed(root, dir + "/gids/" + k);
    if (!gid || gid->empty() || isAllZeroGid(*gid)) continue;
    GidEntry e;
    e.index = std::atoi(k.c_str());
    e.gid = *gid;
    // An unused or IB-only slot answers the read with an error: keep the GID, type from layer.
    auto type = sysfs::readTrimmed(root, dir + "/gid_attrs/types/" + k);
    if (type && !type->empty()) {
      // The kernel names type 0 "IB/RoCE v1": IB on an IB port, RoCE v1 on Ethernet.
      if (*type == "IB/RoCE v1") {
        e.type = p.link_layer == "InfiniBand" ? "IB" : "RoCE v1";
      } else {
        e.type = *type;
      }
    } else if (p.link_layer == "InfiniBand") {
      e.type = "IB";
    }
    if (p.netdev.empty()) {
      auto ndev = sysfs::readTrimmed(root, dir + "/gid_attrs/ndevs/" + k);
      if (ndev && !ndev->empty()) p.netdev = *ndev;
    }
    p.gids.push_back(std::move(e));
  }
  if (p.link_layer == "Ethernet" && !p.netdev.empty()) {
    if (auto mtu = sysfs::readInt(root, "/sys/class/net/" + p.netdev + "/mtu")) {
      p.active_mtu = roceMtuForNetdevMtu(static_cast<int>(*mtu));
    }
  }
  return p;
}

}  // namespace

std::string parsePortState(const std::string& text) {
  std::string t = sysfs::trim(text);
  auto colon = t.find(':');
  if (colon != std::string::npos) t = sysfs::trim(t.substr(colon + 1));
  return t;
}

std::optional<double> parseRateGbps(const std::string& text) {
  std::string t = sysfs::trim(text);
  if (t.empty()) return std::nullopt;
  const char* begin = t.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end == begin || v < 0) return std::nullopt;
  std::string unit = sysfs::trim(std::string(end));
  if (unit.rfind("Gb/s", 0) == 0) return v;
  if (unit.rfind("Mb/s", 0) == 0) return v / 1000.0;
  if (unit.rfind("Tb/s", 0) == 0) return v * 1000.0;
  return std::nullopt;
}

int roceMtuForNetdevMtu(int netdev_mtu) {
  constexpr int kRoceHeaders = 40 + 8 + 12 + 4 + 28 + 4;  // GRH UDP BTH XRC-ETH AtomicETH ICRC
  const int payload = netdev_mtu - kRoceHeaders;
  for (int mtu : {4096, 2048, 1024, 512, 256}) {
    if (payload >= mtu) return mtu;
  }
  return 0;
}

std::string normalizeBusId(const std::string& bus_id) {
  std::string s;
  for (char c : sysfs::trim(bus_id)) s.push_back(static_cast<char>(std::tolower(c)));
  // Count colons: "bb:dd.f" has one, "dddd:bb:dd.f" has two.
  if (std::count(s.begin(), s.end(), ':') == 1) s = "0000:" + s;
  auto colon = s.find(':');
  if (colon == std::string::npos) return s;
  std::string domain = s.substr(0, colon);
  while (domain.size() > 4 && domain.front() == '0') domain.erase(domain.begin());
  while (domain.size() < 4) domain.insert(domain.begin(), '0');
  return domain + s.substr(colon);
}

Result<std::vector<Nic>> discoverNics(const std::string& sysfs_root) {
  std::vector<Nic> nics;
  const std::string cls = "/sys/class/infiniband";
  if (!sysfs::exists(sysfs_root, cls)) return nics;  // no RDMA stack or devices: normal
  if (!sysfs::isDirectory(sysfs_root, cls)) {
    return failedPrecondition(sysfs::join(sysfs_root, cls) + ": not a directory",
                              "point --sysfs-root at a tree that holds sys/class/infiniband");
  }
  for (const std::string& name : sysfs::listDir(sysfs_root, cls)) {
    const std::string dev = cls + "/" + name;
    Nic nic;
    nic.name = name;
    if (sysfs::exists(sysfs_root, dev + "/device")) {
      if (auto pci = sysfs::resolve(sysfs_root, dev + "/device")) {
        nic.pci_bus_id = normalizeBusId(sysfs::baseName(*pci));
      }
      if (auto numa = sysfs::readInt(sysfs_root, dev + "/device/numa_node")) {
        nic.numa_node = static_cast<int>(*numa);
      }
    }
    if (auto g = sysfs::readTrimmed(sysfs_root, dev + "/node_guid")) nic.node_guid = *g;
    if (auto fw = sysfs::readTrimmed(sysfs_root, dev + "/fw_ver")) nic.fw_version = *fw;
    for (const std::string& port :
         sysfs::sortedNumerically(sysfs::listDir(sysfs_root, dev + "/ports"))) {
      nic.ports.push_back(readPort(sysfs_root, dev, port));
    }
    nics.push_back(std::move(nic));
  }
  return nics;
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return std::string(buf);
}

std::string rdmaCoreVersion(const std::string& sysfs_root) {
  // libibverbs.so.1.14.44.0: ABI 1.14, rdma-core 44.0. Older trees: libibverbs.so.1.1.17.1.
  const std::string prefix = "libibverbs.so.1.";
  std::vector<std::string> dirs;
  for (const char* base : {"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib"}) {
    dirs.push_back(base);
    for (const std::string& sub : sysfs::listDir(sysfs_root, base)) {
      if (sub.find("-linux-gnu") != std::string::npos)
        dirs.push_back(std::string(base) + "/" + sub);
    }
  }
  for (const std::string& dir : dirs) {
    for (const std::string& f : sysfs::listDir(sysfs_root, dir)) {
      if (f.rfind(prefix, 0) != 0) continue;
      std::string rest = f.substr(prefix.size());  // "14.44.0"
      auto dot = rest.find('.');
      if (dot == std::string::npos) continue;
      std::string version = rest.substr(dot + 1);  // "44.0"
      if (!version.empty() && std::isdigit(static_cast<unsigned char>(version[0]))) return version;
    }
  }
  return "";
}

std::string kernelRelease(const std::string& sysfs_root) {
  return sysfs::readTrimmed(sysfs_root, "/proc/sys/kernel/osrelease").value_or("");
}

std::string parseNvrmVersion(const std::string& proc_text) {
  const std::string key = "Kernel Module";
  size_t line = proc_text.find("NVRM version:");
  if (line == std::string::npos) return "";
  size_t at = proc_text.find(key, line);
  size_t eol = proc_text.find('\n', line);
  if (at == std::string::npos || (eol != std::string::npos && at > eol)) return "";
  at += key.size();
  // Some builds say "Kernel Module for aarch64"; the version is the first token with a digit
  // and a dot.
  while (at < proc_text.size() && proc_text[at] != '\n') {
    while (at < proc_text.size() && proc_text[at] == ' ') ++at;
    size_t end = at;
    while (end < proc_text.size() && proc_text[end] != ' ' && proc_text[end] != '\n') ++end;
    std::string tok = proc_text.substr(at, end - at);
    if (!tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])) &&
        tok.find('.') != std::string::npos) {
      return tok;
    }
    if (end == at) break;
    at = end;
  }
  return "";
}

std::string nvidiaDriverVersion(const std::string& sysfs_root) {
  if (auto v = sysfs::readTrimmed(sysfs_root, "/sys/module/nvidia/version"); v && !v->empty()) {
    return *v;
  }
  return parseNvrmVersion(
      sysfs::readFile(sysfs_root, "/proc/driver/nvidia/version", 4096).value_or(""));
}

}  // namespace gdrmesh
