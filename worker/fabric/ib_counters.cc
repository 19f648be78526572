#include "worker/fabric/ib_counters.h"

#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <utility>

#include "common/fabric/fabric.h"
#include "worker/fabric/mad_port.h"

namespace gdrmesh::fabric {
namespace {

// PMA ClassPortInfo CapabilityMask bits (IBA vol 1, 16.1.2; Linux rdma/ib_pma.h).
constexpr uint32_t kPmaCapExtWidth = 1U << 9;         // PortCountersExtended supported
constexpr uint32_t kPmaCapExtWidthNoIetf = 1U << 10;  // ... without the IETF counters
constexpr uint32_t kPmaCapXmitWait = 1U << 12;        // PortXmitWait supported
// Reset mask of PerfMgt PortCounters' CounterSelect: every error counter and XmitWait, not the
// data counters (they are read as deltas).
constexpr unsigned kResetErrorCounters = 0x0fff | (1U << 16);

std::string counterPortName(const CounterPort& p) {
  return "port " + std::to_string(p.port) + " of LID " + std::to_string(p.lid) +
         (p.guid != 0 ? " (" + guidHex(p.guid) + ")" : "");
}

uint64_t pcField(uint8_t* pc, MAD_FIELDS f) {
  uint64_t v = 0;
  mad_decode_field(pc, f, &v);
  return v;
}

PortCounterValues readOnePort(const CounterPort& p, const CounterReadRequest& req,
                              ibmad_port* src) {
  PortCounterValues out;
  out.port = p;
  ib_portid_t id{};
  ib_portid_set(&id, p.lid, 0, 0);
  const auto timeout = static_cast<unsigned>(req.timeout_ms);
  uint8_t pc[1024] = {};
  if (pma_query_via(pc, &id, p.port, timeout, CLASS_PORT_INFO, src) == nullptr) {
    out.status = unavailable(counterPortName(p) + " did not answer PerfMgt ClassPortInfo",
                             "check the node and its link (ibstat, iblinkinfo); a switch whose "
                             "management port is down answers no counter query");
    return out;
  }
  const uint32_t cap = mad_get_field(pc, 0, IB_CPI_CAPMASK_F);
  out.extended = (cap & (kPmaCapExtWidth | kPmaCapExtWidthNoIetf)) != 0;
  out.xmit_wait = (cap & kPmaCapXmitWait) != 0;
  uint8_t counters[1024] = {};
  if (pma_query_via(counters, &id, p.port, timeout, IB_GSI_PORT_COUNTERS, src) == nullptr) {
    out.status = unavailable(counterPortName(p) + " did not answer PerfMgt PortCounters",
                             "check the node and its link (ibstat, iblinkinfo)");
    return out;
  }
  const std::pair<const char*, MAD_FIELDS> fields[] = {
      {kSymbolErrorCounter, IB_PC_ERR_SYM_F},
      {kLinkErrorRecoveryCounter, IB_PC_LINK_RECOVERS_F},
      {kLinkDownedCounter, IB_PC_LINK_DOWNED_F},
      {kPortRcvErrors, IB_PC_ERR_RCV_F},
      {kPortRcvRemotePhysicalErrors, IB_PC_ERR_PHYSRCV_F},
      {kPortRcvSwitchRelayErrors, IB_PC_ERR_SWITCH_REL_F},
      {kPortXmitDiscards, IB_PC_XMT_DISCARDS_F},
      {kPortXmitConstraintErrors, IB_PC_ERR_XMTCONSTR_F},
      {kPortRcvConstraintErrors, IB_PC_ERR_RCVCONSTR_F},
      {kLocalLinkIntegrityErrors, IB_PC_ERR_LOCALINTEG_F},
      {kExcessiveBufferOverrunErrors, IB_PC_ERR_EXCESS_OVR_F},
      {kVL15Dropped, IB_PC_VL15_DROPPED_F},
      {kPortXmitData, IB_PC_XMT_BYTES_F},
      {kPortRcvData, IB_PC_RCV_BYTES_F},
      {kPortXmitPkts, IB_PC_XMT_PKTS_F},
      {kPortRcvPkts, IB_PC_RCV_PKTS_F},
  };
  for (const auto& [name, field] : fields) out.values[name] = pcField(counters, field);
  if (out.xmit_wait) out.values[kPortXmitWait] = pcField(counters, IB_PC_XMT_WAIT_F);
  if (out.extended) {
    uint8_t ext[1024] = {};
    if (pma_query_via(ext, &id, p.port, timeout, IB_GSI_PORT_COUNTERS_EXT, src) == nullptr) {
      // The 32-bit data counters of PortCounters stand; the port answered the rest.
      out.extended = false;
    } else {
      out.values[kPortXmitData] = pcField(ext, IB_PC_EXT_XMT_BYTES_F);
      out.values[kPortRcvData] = pcField(ext, IB_PC_EXT_RCV_BYTES_F);
      out.values[kPortXmitPkts] = pcField(ext, IB_PC_EXT_XMT_PKTS_F);
      out.values[kPortRcvPkts] = pcField(ext, IB_PC_EXT_RCV_PKTS_F);
    }
  }
  if (req.reset) {
    uint8_t buf[1024] = {};
    out.reset = performance_reset_via(buf, &id, p.port, kResetErrorCounters, timeout,
                                      IB_GSI_PORT_COUNTERS, src) != nullptr;
  }
  return out;
}

}  // namespace

Result<CounterReadOutcome> readPortCounters(const CounterReadRequest& request) {
  if (umad_init() < 0) {
    return failedPrecondition("libibumad cannot initialise (umad_init failed)",
                              "load the ib_umad kernel module (modprobe ib_umad)");
  }
  MadPort gsi(request.ca, request.ca_port, {IB_PERFORMANCE_CLASS}, MadPort::Side::kGsi);
  if (gsi.get() == nullptr) {
    return failedPrecondition(
        "cannot open the performance-management port " +
            (request.ca.empty() ? std::string("(first HCA)") : request.ca) + "/" +
            std::to_string(request.ca_port) + " (mad_rpc_open_port)",
        "run on a host with an InfiniBand HCA and the ib_umad module loaded; this process "
        "needs read/write access to /dev/infiniband/umad* (root or the rdma group)");
  }
  mad_rpc_set_timeout(gsi.get(), request.timeout_ms);
  CounterReadOutcome out;
  out.ports.reserve(request.ports.size());
  for (const CounterPort& p : request.ports)
    out.ports.push_back(readOnePort(p, request, gsi.get()));
  return out;
}

}  // namespace gdrmesh::fabric
