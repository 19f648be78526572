// InfiniBand port counters through libibmad's performance-management queries (the method of
// infiniband-diags' perfquery): for each port asked, the PMA's ClassPortInfo (its
// CapabilityMask says whether PortCountersExtended and PortXmitWait are supported), then
// PortCounters (the error counters, and the 32-bit data counters) and, where supported,
// PortCountersExtended (64-bit data counters: the 32-bit ones wrap in 0.34 s at 400 Gb/s).
// The error counters are reset only when the request asks (the operator's
// `fabric_counters_reset: true`).
//
// A port that does not answer is a finding (its entry's status), never an error of the whole
// read; the read itself fails only without a management port (no device, no permission).
//
// Thread contract: blocking and not re-entrant (libibmad keeps global state); one at a time.
#pragma once

#include "common/fabric/counters.h"
#include "common/status.h"

namespace gdrmesh::fabric {

Result<CounterReadOutcome> readPortCounters(const CounterReadRequest& request);

}  // namespace gdrmesh::fabric
