// Reading PCI Express configuration space from sysfs (<root>/sys/bus/pci/devices/X/config).
//
// A non-root reader gets only the first 64 bytes of the config file; the extended capabilities
// (ACS among them) start at 0x100 and need the full 4096 bytes, so a short read means
// "unknown, run as root" rather than "absent".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gdrmesh {

inline constexpr uint16_t kExtCapAcs = 0x000D;
// ACS control register bits (PCIe base spec 7.7.8.3).
inline constexpr uint16_t kAcsSourceValidation = 1 << 0;       // SV
inline constexpr uint16_t kAcsTranslationBlocking = 1 << 1;    // TB
inline constexpr uint16_t kAcsP2pRequestRedirect = 1 << 2;     // RR
inline constexpr uint16_t kAcsP2pCompletionRedirect = 1 << 3;  // CR
inline constexpr uint16_t kAcsUpstreamForwarding = 1 << 4;     // UF
inline constexpr uint16_t kAcsP2pEgressControl = 1 << 5;       // EC
inline constexpr uint16_t kAcsDirectTranslatedP2p = 1 << 6;    // DT
// Bits that send peer-to-peer traffic up to the root complex instead of across the switch.
inline constexpr uint16_t kAcsRedirectBits =
    kAcsP2pRequestRedirect | kAcsP2pCompletionRedirect | kAcsP2pEgressControl;

// Offset of an extended capability in a config-space blob, nullopt if absent or the blob is
// shorter than 4096 bytes. Walks the list from 0x100, bounded against loops.
std::optional<uint16_t> findExtendedCapability(const std::string& config, uint16_t cap_id);

struct AcsState {
  enum class Read { kNotReadable, kNoCapability, kOk };
  Read read = Read::kNotReadable;
  uint16_t control = 0;  // valid when read == kOk
  size_t config_bytes = 0;
};
AcsState readAcs(const std::string& sysfs_root, const std::string& bus_id);

// "SV RR CR UF" for the set bits; "none" for 0.
std::string acsBitsToString(uint16_t control);

}  // namespace gdrmesh
