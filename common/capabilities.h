// Capabilities before operations: what each transport of a worker can do, reported at
// registration, so that the coordinator refuses a request no transport can honour before it
// contacts any worker (instead of a SKIPPED row), with the reason.
//
// A capability is a property of the transport's code, not of the host's state: the emulated
// transport moves GPU memory through a host mirror (staged) even on a worker that has no GPU
// today. What the host lacks (no GPU, no RDMA device, a port down) stays a SKIPPED result with
// its reason, as a fabric fault does; a transport that cannot run here at all is absent from
// the worker's transports, with a note saying why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/pair_spec.h"
#include "common/status.h"
#include "common/types.h"

namespace gdrmesh {

// The capabilities of each transport kind as built. Each transport reports its own
// (Transport::capabilities()); these are the single definition they return.
TransportCapabilities emulatedCapabilities();
TransportCapabilities verbsCapabilities();
TransportCapabilities simulatedCapabilities();

// What `c` cannot do of `spec` for one side (`side`: the initiator or the target), in the CLI's
// words ("--op write_imm --mode lat", "--reg dmabuf on cuda memory"); empty when it can.
std::vector<std::string> unsupportedBy(const TransportCapabilities& c, const PairTestSpec& spec,
                                       Role side);

// "write, read, send" style summary of what `c` supports, for refusals.
std::string describeCapabilities(const TransportCapabilities& c);

// The transports of `inv` (in order of preference: verbs, simulated, emulated; only `wanted`
// when set) that can serve `side` of `spec`. A transport listed without capabilities (a worker
// from before they were reported) is assumed able: nothing is refused on a guess.
std::vector<TransportKind> transportsServing(const Inventory& inv, const PairTestSpec& spec,
                                             Role side);

// Refuses `spec` up front when a side's worker has transports, yet none of them (of the wanted
// one, with --transport) can serve that side; the message names the worker, what was asked and,
// per transport, why not: "worker w2 (DST, target): no transport supports --op write_imm --mode
// lat on cuda memory: verbs: not available here (verbs: no RDMA device ...); emulated: supports
// bw write, read, send, write_imm; lat write, read, send; memory host, cuda; reg host, staged".
// Left to the run (a SKIPPED result with the reason), as states of the host rather than
// impossible requests: a worker that lacks the wanted transport altogether, and a side on cuda
// memory whose worker has no GPU. kFailedPrecondition.
Status checkCapabilities(const PairTestSpec& spec, const WorkerStatus& initiator,
                         const WorkerStatus& target);

}  // namespace gdrmesh
