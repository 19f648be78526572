// Pure decisions of the verbs transport: GID choice, path MTU, counters from sysfs text.
// No device is touched, so all of it is unit-tested without RDMA hardware.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/measurement.h"
#include "common/status.h"

namespace gdrmesh::verbs {

enum class GidType { kIb, kRoceV1, kRoceV2, kUnknown };

struct GidCandidate {
  int index = 0;
  std::array<uint8_t, 16> raw{};
  GidType type = GidType::kUnknown;
};

// "fe80:0000:0000:0000:...": 8 groups of 4 lower-case hex digits (the EndpointDesc format).
std::string formatGid(const std::array<uint8_t, 16>& raw);
// Inverse of formatGid; also accepts "::" shorthand and an IPv4 tail. False on bad input.
bool parseGid(const std::string& text, std::array<uint8_t, 16>* raw);

bool isZeroGid(const std::array<uint8_t, 16>& raw);
bool isIpv4MappedGid(const std::array<uint8_t, 16>& raw);  // ::ffff:a.b.c.d
bool isLinkLocalGid(const std::array<uint8_t, 16>& raw);   // fe80::/10

// Parses the sysfs gid_attrs/types text ("RoCE v2", "IB/RoCE v1").
GidType parseGidType(const std::string& sysfs_text);
const char* toString(GidType t);

// Chooses the GID index for a port.
//   override_index >= 0: that entry, which must exist and be non-zero.
//   RoCE (is_roce): RoCE v2 IPv4-mapped, then RoCE v2 global, then RoCE v2 link-local, then
//                   RoCE v1 (lowest index within each class).
//   InfiniBand: index 0 (the port GID) when present.
// Errors name the device/port and list what the table held.
Result<int> selectGidIndex(const std::vector<GidCandidate>& table, bool is_roce, int override_index,
                           const std::string& device, uint32_t port);

// IB MTU enum value (1..5, as ibv_mtu) <-> bytes (256..4096). 0 for anything else.
uint32_t mtuEnumToBytes(int mtu_enum);
int mtuBytesToEnum(uint32_t bytes);

// Path MTU for a connection: min(local active MTU, peer active MTU), both in bytes. A peer value
// that is not one of 256..4096 is rejected (it names the peer's device).
Result<uint32_t> negotiatePathMtu(uint32_t local_bytes, uint32_t peer_bytes,
                                  const std::string& peer_device);

// Port counters from one sysfs snapshot (name -> value read from counters/ and hw_counters/).
// IB/mlx: port_xmit_data/port_rcv_data are in 4-byte words. rxe only has hw_counters
// (sent_pkts, rcvd_pkts, *_err): bytes stay 0 there, packets and errors are filled.
struct CounterSnapshot {
  std::vector<std::pair<std::string, uint64_t>> values;
  bool find(const std::string& name, uint64_t* v) const;
};
PortCounters counterDelta(const CounterSnapshot& before, const CounterSnapshot& after);

// Reads counters/ and hw_counters/ under /sys/class/infiniband/DEV/ports/N (root injectable).
CounterSnapshot readCounterSnapshot(const std::string& sysfs_root, const std::string& device,
                                    uint32_t port);

// Reads gid_attrs/types/<index> under the sysfs root; kUnknown where unreadable.
GidType readSysfsGidType(const std::string& sysfs_root, const std::string& device, uint32_t port,
                         int index);

}  // namespace gdrmesh::verbs
