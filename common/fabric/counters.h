// InfiniBand port counters in domain terms (docs/fabric.md, "Counters"): what the coordinator
// asks a fabric worker to read (CounterReadRequest: ports by LID and number), what it answers
// (CounterReadOutcome: each port's counters or why it did not answer), and the counters' facts
// (their names as the IBA spells them, their widths; the error counters of PortCounters are 4 to
// 16 bits wide and stop at their maximum). The worker reads them with worker/fabric/ib_counters;
// the coordinator sees only these types.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace gdrmesh::fabric {

// The counters read, by their IBA attribute names (PortCounters; the data counters come from
// PortCountersExtended where the port's PMA supports it, else from PortCounters' 32-bit ones).
inline constexpr const char* kSymbolErrorCounter = "SymbolErrorCounter";
inline constexpr const char* kLinkErrorRecoveryCounter = "LinkErrorRecoveryCounter";
inline constexpr const char* kLinkDownedCounter = "LinkDownedCounter";
inline constexpr const char* kPortRcvErrors = "PortRcvErrors";
inline constexpr const char* kPortRcvRemotePhysicalErrors = "PortRcvRemotePhysicalErrors";
inline constexpr const char* kPortRcvSwitchRelayErrors = "PortRcvSwitchRelayErrors";
inline constexpr const char* kPortXmitDiscards = "PortXmitDiscards";
inline constexpr const char* kPortXmitConstraintErrors = "PortXmitConstraintErrors";
inline constexpr const char* kPortRcvConstraintErrors = "PortRcvConstraintErrors";
inline constexpr const char* kLocalLinkIntegrityErrors = "LocalLinkIntegrityErrors";
inline constexpr const char* kExcessiveBufferOverrunErrors = "ExcessiveBufferOverrunErrors";
inline constexpr const char* kVL15Dropped = "VL15Dropped";
inline constexpr const char* kPortXmitWait = "PortXmitWait";
inline constexpr const char* kPortXmitData = "PortXmitData";
inline constexpr const char* kPortRcvData = "PortRcvData";
inline constexpr const char* kPortXmitPkts = "PortXmitPkts";
inline constexpr const char* kPortRcvPkts = "PortRcvPkts";

// A counter's behaviour at its top: the counters of PortCounters stop at their maximum
// (saturate, IBA 16.1.3.5); PortCountersExtended's 64-bit ones wrap.
struct CounterKind {
  const char* name;
  int bits;        // width in PortCounters (the data counters: 32; extended: 64)
  bool error;      // an error counter (thresholds apply), not a data counter
  bool saturates;  // stops at 2^bits - 1 (every PortCounters counter)
};
// Every counter gdrmesh reads, in the order they are reported.
const std::vector<CounterKind>& counterKinds();
// The kind of `name`; null when gdrmesh does not know it.
const CounterKind* counterKind(const std::string& name);

// A port to read: its LID (a switch's LID for every port of the switch, an HCA port's own LID)
// and port number. `guid`, the node's GUID, only names the port in messages.
struct CounterPort {
  uint16_t lid = 0;
  int port = 0;
  uint64_t guid = 0;
  bool operator<(const CounterPort& o) const { return lid != o.lid ? lid < o.lid : port < o.port; }
  bool operator==(const CounterPort& o) const { return lid == o.lid && port == o.port; }
};

struct CounterReadRequest {
  std::string ca;        // local HCA ("mlx5_0"); "" = the first with an active port
  int ca_port = 0;       // 0 = the first active port
  int timeout_ms = 500;  // per management datagram
  std::vector<CounterPort> ports;
  // Reset the error counters after reading them (only when the operator allows it: the
  // config's `fabric_counters_reset: true`).
  bool reset = false;
};

// One port's counters. `status` is not OK when the port did not answer (a finding, not an
// error of the read): then `values` is empty.
struct PortCounterValues {
  CounterPort port;
  Status status;
  bool extended = false;   // the data counters are PortCountersExtended's 64-bit ones
  bool xmit_wait = false;  // the PMA supports PortXmitWait (ClassPortInfo CapabilityMask)
  bool reset = false;      // the error counters were reset after this read
  std::map<std::string, uint64_t> values;
};

// The worker's answer: `status` is the read's own outcome (no device, no fabric module, a
// simulated worker) with its fix; OK with one entry per port asked, in the order asked.
struct CounterReadOutcome {
  Status status;
  std::vector<PortCounterValues> ports;
};

// The change of one counter between two reads.
struct CounterDelta {
  uint64_t value = 0;
  // A lower bound only: the counter stopped at its maximum (saturated) or went back (reset
  // by someone else between the reads). Told as ">= N", never as a negative delta.
  bool at_least = false;
};
// The change of counter `kind` from `before` to `after`: a 64-bit counter that wrapped counts
// modulo 2^64; a saturating counter at its maximum, or one that went back, is a lower bound.
CounterDelta counterDelta(const CounterKind& kind, bool extended, uint64_t before, uint64_t after);
// "1,234" or ">= 65,535".
std::string deltaText(const CounterDelta& d);
// 1234567 -> "1,234,567".
std::string groupedNumber(uint64_t v);

// A cable's verdict in a sweep (docs/fabric.md, "Link verdicts"): "ok" (its ports' counters
// were read and none crossed a threshold), "errors" (a counter over its threshold), "slow_pairs"
// (the sweep's failing pairs share it), "errors,slow_pairs", or "not_covered" (an inter-switch
// cable that no test of the sweep crossed, in either direction: nothing is known of it).
inline constexpr const char* kLinkOk = "ok";
inline constexpr const char* kLinkErrors = "errors";
inline constexpr const char* kLinkSlowPairs = "slow_pairs";
inline constexpr const char* kLinkErrorsSlowPairs = "errors,slow_pairs";
inline constexpr const char* kLinkNotCovered = "not_covered";
// How bad a link verdict is, worst highest: errors,slow_pairs 4, errors 3, slow_pairs 2,
// not_covered 1, ok 0 (an unknown verdict counts as slow_pairs: not ok, not known to be worse).
// Every output that lists links orders them by it, worst first, then by name.
int linkVerdictSeverity(const std::string& verdict);
// Whether a link verdict fails the sweep it was given in: errors and slow pairs do; ok and
// not_covered do not (an uncovered cable is a gap in the plan, not a fault).
bool linkVerdictFails(const std::string& verdict);

}  // namespace gdrmesh::fabric
