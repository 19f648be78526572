// What a worker may register, and how text from workers is made safe to show. A registration is
// refused with the field and the limit named (docs/security.md lists every limit); strings a
// worker sends later (error messages, descriptions) are cleaned instead, since refusing them
// would lose a result.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "common/inventory.h"
#include "common/status.h"

namespace gdrmesh {

struct RegistrationLimits {
  size_t name = 64;         // worker names: A-Z a-z 0-9 . _ -
  size_t short_text = 256;  // hostname, versions, NIC/GPU names, ids, port states, GIDs
  size_t long_text = 2048;  // notes, preflight details and fixes
  size_t nics = 32;
  size_t ports_per_nic = 4;
  size_t gids_per_port = 64;
  size_t gpus = 32;
  size_t transports = 8;          // also: capability entries (one per transport)
  size_t capability_values = 16;  // ops, memory kinds, registration paths of one transport
  size_t notes = 64;
  size_t preflight = 128;
  size_t labels = 32;
  size_t label_key = 63;  // A-Z a-z 0-9 . _ / -
  size_t label_value = 256;
  // A port's rate: a number in 0..this (Gb/s; the fastest ports sold are 800 Gb/s), and above
  // 0 on an ACTIVE port. It bounds the figures a worker's tests may report.
  double max_port_rate_gbps = 1600;
};

// The wire-level bound that goes with RegistrationLimits: a registration within them is far
// below it (gRPC servers and clients set their message limits from these).
inline constexpr int kMaxWorkerMessageBytes = 4 << 20;
inline constexpr int kMaxControlMessageBytes = 256 << 20;
// The CLI reads a sweep's report in pages of at most these (about 25 MB and 35 MB a message at
// the largest: a 1024-host all-pairs has 523,776 of each).
inline constexpr uint32_t kReportVerdictsPerPage = 100000;
inline constexpr uint32_t kReportResultsPerPage = 50000;

bool validWorkerName(std::string_view name, size_t max_len = RegistrationLimits{}.name);
// kInvalidArgument naming `field` when `value` is longer than `max_bytes` or holds a control
// character or invalid UTF-8 (for text a client sends: names, labels, selectors). Control
// characters here: C0, DEL, C1, and the Unicode bidirectional controls (U+061C, U+200E,
// U+200F, U+202A..U+202E, U+2066..U+2069), which reorder what a terminal shows.
Status checkText(const std::string& field, std::string_view value, size_t max_bytes);

// kInvalidArgument naming the first field over a limit or holding a control character.
Status checkRegistration(const std::string& name, const Inventory& inv,
                         const std::map<std::string, std::string>& labels,
                         const RegistrationLimits& limits = {});

// Text from a worker made safe for a terminal or a table: control characters (C0, DEL, C1,
// bidirectional controls) and invalid UTF-8 become '?', line breaks and tabs a space; longer than
// max_bytes is cut (at a character boundary) and marked.
std::string cleanText(std::string_view s, size_t max_bytes = 4096);

}  // namespace gdrmesh
