#include "common/fabric/counters.h"

#include <algorithm>
#include <limits>

namespace gdrmesh::fabric {

const std::vector<CounterKind>& counterKinds() {
  // Widths from IBA vol 1, 16.1.3.5 (PortCounters); every one of them saturates.
  static const std::vector<CounterKind> kKinds = {
      {kSymbolErrorCounter, 16, true, true},
      {kLinkErrorRecoveryCounter, 8, true, true},
      {kLinkDownedCounter, 8, true, true},
      {kPortRcvErrors, 16, true, true},
      {kPortRcvRemotePhysicalErrors, 16, true, true},
      {kPortRcvSwitchRelayErrors, 16, true, true},
      {kPortXmitDiscards, 16, true, true},
      {kPortXmitConstraintErrors, 8, true, true},
      {kPortRcvConstraintErrors, 8, true, true},
      {kLocalLinkIntegrityErrors, 4, true, true},
      {kExcessiveBufferOverrunErrors, 4, true, true},
      {kVL15Dropped, 16, true, true},
      {kPortXmitWait, 32, true, true},
      {kPortXmitData, 32, false, true},
      {kPortRcvData, 32, false, true},
      {kPortXmitPkts, 32, false, true},
      {kPortRcvPkts, 32, false, true},
  };
  return kKinds;
}

const CounterKind* counterKind(const std::string& name) {
  const auto& kinds = counterKinds();
  auto it = std::find_if(kinds.begin(), kinds.end(),
                         [&](const CounterKind& k) { return name == k.name; });
  return it == kinds.end() ? nullptr : &*it;
}

CounterDelta counterDelta(const CounterKind& kind, bool extended, uint64_t before, uint64_t after) {
  CounterDelta d;
  if (!kind.error && extended) {
    // PortCountersExtended's 64-bit data counters wrap: unsigned arithmetic is modulo 2^64.
    d.value = after - before;
    return d;
  }
  const uint64_t max =
      kind.bits >= 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << kind.bits) - 1;
  if (after < before) {
    // Reset between the reads (by someone else, or by a reset we were allowed): at least what
    // it counted since.
    d.value = after;
    d.at_least = true;
  } else {
    d.value = after - before;
    d.at_least = after >= max;  // stopped at its maximum: it may have counted more
  }
  return d;
}

std::string groupedNumber(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string deltaText(const CounterDelta& d) {
  return (d.at_least ? ">= " : "") + groupedNumber(d.value);
}

int linkVerdictSeverity(const std::string& verdict) {
  if (verdict == kLinkErrorsSlowPairs) return 4;
  if (verdict == kLinkErrors) return 3;
  if (verdict == kLinkNotCovered) return 1;
  if (verdict == kLinkOk) return 0;
  return 2;  // slow_pairs, or a verdict this build does not know
}

bool linkVerdictFails(const std::string& verdict) {
  return linkVerdictSeverity(verdict) >= 2;
}

}  // namespace gdrmesh::fabric
