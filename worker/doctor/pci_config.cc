#include "worker/doctor/pci_config.h"

#include "worker/inventory/discover.h"
#include "worker/inventory/sysfs.h"

namespace gdrmesh {
namespace {

uint32_t le32(const std::string& b, size_t off) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[off])) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 3])) << 24;
}

}  // namespace

std::optional<uint16_t> findExtendedCapability(const std::string& config, uint16_t cap_id) {
  constexpr size_t kExtStart = 0x100, kConfigSize = 4096;
  if (config.size() < kConfigSize) return std::nullopt;
  size_t off = kExtStart;
  for (int guard = 0; guard < 1024 && off >= kExtStart && off + 4 <= kConfigSize; ++guard) {
    const uint32_t header = le32(config, off);
    if (header == 0 || header == 0xffffffffu) return std::nullopt;
    if ((header & 0xffff) == cap_id) return static_cast<uint16_t>(off);
    const size_t next = (header >> 20) & 0xffc;
    if (next == 0) return std::nullopt;
    off = next;
  }
  return std::nullopt;
}

AcsState readAcs(const std::string& sysfs_root, const std::string& bus_id) {
  AcsState st;
  auto cfg = sysfs::readFile(sysfs_root,
                             "/sys/bus/pci/devices/" + normalizeBusId(bus_id) + "/config", 4096);
  if (!cfg) return st;
  st.config_bytes = cfg->size();
  if (cfg->size() < 4096) return st;  // non-root read (64 bytes) or conventional PCI
  auto off = findExtendedCapability(*cfg, kExtCapAcs);
  if (!off) {
    st.read = AcsState::Read::kNoCapability;
    return st;
  }
  st.read = AcsState::Read::kOk;
  const size_t ctrl = *off + 6u;
  st.control = static_cast<uint16_t>(static_cast<unsigned char>((*cfg)[ctrl]) |
                                     static_cast<unsigned char>((*cfg)[ctrl + 1]) << 8);
  return st;
}

std::string acsBitsToString(uint16_t control) {
  static const char* const kNames[] = {"SV", "TB", "RR", "CR", "UF", "EC", "DT"};
  std::string out;
  for (int i = 0; i < 7; ++i) {
    if (control & (1u << i)) out += (out.empty() ? "" : " ") + std::string(kNames[i]);
  }
  return out.empty() ? "none" : out;
}

}  // namespace gdrmesh
