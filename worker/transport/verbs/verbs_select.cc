#include "worker/transport/verbs/verbs_select.h"

#include <arpa/inet.h>
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>

namespace gdrmesh::verbs {

std::string formatGid(const std::array<uint8_t, 16>& raw) {
  std::string out;
  char group[8];
  for (int i = 0; i < 16; i += 2) {
    std::snprintf(group, sizeof(group), "%02x%02x", raw[static_cast<size_t>(i)],
                  raw[static_cast<size_t>(i) + 1]);
    if (i) out += ':';
    out += group;
  }
  return out;
}

bool parseGid(const std::string& text, std::array<uint8_t, 16>* raw) {
  in6_addr a{};
  if (inet_pton(AF_INET6, text.c_str(), &a) != 1) return false;
  std::copy(a.s6_addr, a.s6_addr + 16, raw->begin());
  return true;
}

bool isZeroGid(const std::array<uint8_t, 16>& raw) {
  return std::all_of(raw.begin(), raw.end(), [](uint8_t b) { return b == 0; });
}

bool isIpv4MappedGid(const std::array<uint8_t, 16>& raw) {
  for (size_t i = 0; i < 10; ++i)
    if (raw[i] != 0) return false;
  return raw[10] == 0xff && raw[11] == 0xff;
}

bool isLinkLocalGid(const std::array<uint8_t, 16>& raw) {
  return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

GidType parseGidType(const std::string& sysfs_text) {
  std::string t = sysfs_text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t == "RoCE v2") return GidType::kRoceV2;
  if (t == "IB/RoCE v1" || t == "RoCE v1") return GidType::kRoceV1;
  if (t == "IB") return GidType::kIb;
  return GidType::kUnknown;
}

const char* toString(GidType t) {
  switch (t) {
    case GidType::kIb:
      return "IB";
    case GidType::kRoceV1:
      return "RoCE v1";
    case GidType::kRoceV2:
      return "RoCE v2";
    case GidType::kUnknown:
      break;
  }
  return "unknown";
}

Result<int> selectGidIndex(const std::vector<GidCandidate>& table, bool is_roce, int override_index,
                           const std::string& device, uint32_t port) {
  const std::string where = device + " port " + std::to_string(port);
  auto describe_table = [&] {
    std::string s;
    for (const auto& g : table) {
      if (isZeroGid(g.raw)) continue;
      if (!s.empty()) s += ", ";
      s += std::to_string(g.index) + "=" + formatGid(g.raw) + " (" + toString(g.type) + ")";
    }
    return s.empty() ? std::string("no non-empty GIDs") : s;
  };
  if (override_index >= 0) {
    for (const auto& g : table) {
      if (g.index != override_index) continue;
      if (isZeroGid(g.raw)) break;
      return g.index;
    }
    return invalidArgument("gid_index " + std::to_string(override_index) + " on " + where +
                               " is empty or out of range; the table holds: " + describe_table(),
                           "pick an index from `show_gids` / /sys/class/infiniband/" + device +
                               "/ports/" + std::to_string(port) +
                               "/gids, or leave gid_index at -1 (automatic)");
  }
  if (!is_roce) {
    for (const auto& g : table)
      if (g.index == 0 && !isZeroGid(g.raw)) return 0;
    for (const auto& g : table)
      if (!isZeroGid(g.raw)) return g.index;
    return failedPrecondition("no GID on " + where, "check that the port is initialised (SM)");
  }
  // RoCE: rank each candidate, lower is better.
  int best = -1, best_rank = 100;
  for (const auto& g : table) {
    if (isZeroGid(g.raw)) continue;
    int rank;
    if (g.type == GidType::kRoceV2) {
      rank = isIpv4MappedGid(g.raw) ? 0 : (isLinkLocalGid(g.raw) ? 2 : 1);
    } else if (g.type == GidType::kRoceV1) {
      rank = 3;
    } else {
      continue;
    }
    if (rank < best_rank || (rank == best_rank && g.index < best)) {
      best_rank = rank;
      best = g.index;
    }
  }
  if (best < 0) {
    return failedPrecondition(
        "no usable RoCE GID on " + where + " (" + describe_table() + ")",
        "give the bound net device an IP address (ip addr add ... dev <netdev>) so that the "
        "driver creates a RoCE v2 IPv4-mapped GID");
  }
  return best;
}

uint32_t mtuEnumToBytes(int mtu_enum) {
  switch (mtu_enum) {
    case 1:
      return 256;
    case 2:
      return 512;
    case 3:
      return 1024;
    case 4:
      return 2048;
    case 5:
      return 4096;
    default:
      return 0;
  }
}

int mtuBytesToEnum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return 1;
    case 512:
      return 2;
    case 1024:
      return 3;
    case 2048:
      return 4;
    case 4096:
      return 5;
    default:
      return 0;
  }
}

Result<uint32_t> negotiatePathMtu(uint32_t local_bytes, uint32_t peer_bytes,
                                  const std::string& peer_device) {
  if (mtuBytesToEnum(peer_bytes) == 0) {
    return invalidArgument("peer " + (peer_device.empty() ? std::string("?") : peer_device) +
                               " reported active_mtu " + std::to_string(peer_bytes) +
                               ", not one of 256, 512, 1024, 2048, 4096",
                           "the peer description is incomplete; check its worker version");
  }
  if (mtuBytesToEnum(local_bytes) == 0) {
    return internalError("local active MTU " + std::to_string(local_bytes) + " is not an IB MTU");
  }
  return std::min(local_bytes, peer_bytes);
}

bool CounterSnapshot::find(const std::string& name, uint64_t* v) const {
  for (const auto& [k, val] : values) {
    if (k == name) {
      *v = val;
      return true;
    }
  }
  return false;
}

PortCounters counterDelta(const CounterSnapshot& before, const CounterSnapshot& after) {
  PortCounters c;
  auto delta = [&](const std::string& name, uint64_t* out) {
    uint64_t a = 0, b = 0;
    if (!before.find(name, &a) || !after.find(name, &b)) return false;
    *out = b >= a ? b - a : 0;
    return true;
  };
  uint64_t v = 0;
  if (delta("port_xmit_data", &v)) {
    c.xmit_bytes = v * 4;  // 4-byte words (IBA 16.1.3.5)
    c.valid = true;
  }
  if (delta("port_rcv_data", &v)) {
    c.rcv_bytes = v * 4;
    c.valid = true;
  }
  if (delta("port_xmit_packets", &v) || delta("sent_pkts", &v)) {
    c.xmit_packets = v;
    c.valid = true;
  }
  if (delta("port_rcv_packets", &v) || delta("rcvd_pkts", &v)) {
    c.rcv_packets = v;
    c.valid = true;
  }
  static const char* const kErrors[] = {"symbol_error",
                                        "port_rcv_errors",
                                        "port_xmit_discards",
                                        "link_downed",
                                        "link_error_recovery",
                                        "local_link_integrity_errors",
                                        "excessive_buffer_overrun_errors",
                                        "port_rcv_remote_physical_errors",
                                        "retry_exceeded_err",
                                        "retry_rnr_exceeded_err",
                                        "completer_retry_err",
                                        "send_err",
                                        "rcvd_seq_err",
                                        "out_of_seq_request"};
  for (const char* name : kErrors) {
    if (delta(name, &v)) c.errors += v;
  }
  return c;
}

namespace {

bool readU64(const std::string& path, uint64_t* v) {
  std::ifstream f(path);
  if (!f) return false;
  unsigned long long x = 0;
  if (!(f >> x)) return false;
  *v = x;
  return true;
}

void readDir(const std::string& dir, CounterSnapshot* snap) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return;
  while (dirent* e = readdir(d.get())) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || name == "lifespan") continue;
    uint64_t v = 0;
    if (readU64(dir + "/" + name, &v)) snap->values.emplace_back(name, v);
  }
}

}  // namespace

CounterSnapshot readCounterSnapshot(const std::string& sysfs_root, const std::string& device,
                                    uint32_t port) {
  CounterSnapshot s;
  const std::string base =
      sysfs_root + "/class/infiniband/" + device + "/ports/" + std::to_string(port);
  readDir(base + "/counters", &s);
  readDir(base + "/hw_counters", &s);
  return s;
}

GidType readSysfsGidType(const std::string& sysfs_root, const std::string& device, uint32_t port,
                         int index) {
  std::ifstream f(sysfs_root + "/class/infiniband/" + device + "/ports/" + std::to_string(port) +
                  "/gid_attrs/types/" + std::to_string(index));
  if (!f) return GidType::kUnknown;
  std::string line;
  std::getline(f, line);
  return parseGidType(line);
}

}  // namespace gdrmesh::verbs
