// Conversions between the domain types (common/, worker/transport/) and the generated
// gdrmesh.v1 messages. Only the service layers (worker/service, coordinator/service, cli)
// include this file.
#pragma once

#include "common/endpoint.h"
#include "common/fabric/counters.h"
#include "common/inventory.h"
#include "common/measurement.h"
#include "common/pair_spec.h"
#include "common/pattern.h"
#include "common/result.h"
#include "common/status.h"
#include "common/types.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh::convert {

namespace pb = ::gdrmesh::v1;

pb::Op toProto(Op v);
pb::Mode toProto(Mode v);
pb::MemoryKind toProto(MemoryKind v);
pb::RegPath toProto(RegPath v);
pb::Transport toProto(TransportKind v);
pb::TestStatus toProto(TestStatus v);
pb::Role toProto(Role v);

// UNSPECIFIED values map to the given default.
Op fromProto(pb::Op v, Op def = Op::kWrite);
Mode fromProto(pb::Mode v, Mode def = Mode::kBandwidth);
MemoryKind fromProto(pb::MemoryKind v, MemoryKind def = MemoryKind::kHost);
RegPath fromProto(pb::RegPath v, RegPath def = RegPath::kAuto);
TransportKind fromProto(pb::Transport v, TransportKind def = TransportKind::kEmulated);
TestStatus fromProto(pb::TestStatus v, TestStatus def = TestStatus::kError);
Role fromProto(pb::Role v, Role def = Role::kInitiator);

void toProto(const Inventory& in, pb::Inventory* out);
Inventory fromProto(const pb::Inventory& in);
// A worker as ListWorkers returns it (name, state, times, peer, labels, stored inventory).
WorkerStatus fromProto(const pb::WorkerInfo& in);
// A worker's inventory as the coordinator stores it (WorkerRecord::inventory_json): the domain
// encoding (common/json.h, docs/json.md); rows of older builds, in protobuf's JSON mapping of
// v1.Inventory, still read. Errors name what failed.
std::string storedInventoryJson(const Inventory& in);
Result<Inventory> inventoryFromStoredJson(const std::string& text);

void toProto(const Measurement& in, pb::Measurement* out);
Measurement fromProto(const pb::Measurement& in);

void toProto(const IntegrityReport& in, pb::Integrity* out);
IntegrityReport fromProto(const pb::Integrity& in);

void toProto(const EndpointRecord& in, pb::EndpointRecord* out);
EndpointRecord fromProto(const pb::EndpointRecord& in);

void toProto(const TestResult& in, pb::TestResult* out);
TestResult fromProto(const pb::TestResult& in);

void toProto(const Status& in, pb::CommandStatus* out);
Status fromProto(const pb::CommandStatus& in);

// Port counters (the fabric reader's command, docs/fabric.md).
void toProto(const fabric::CounterReadRequest& in, pb::ReadPortCountersRequest* out);
fabric::CounterReadRequest fromProto(const pb::ReadPortCountersRequest& in);
void toProto(const fabric::CounterReadOutcome& in, pb::ReadPortCountersReply* out);
fabric::CounterReadOutcome fromProto(const pb::ReadPortCountersReply& in);

// One side of a pair test (worker <-> coordinator).
void toProto(const EndpointDesc& in, pb::EndpointDesc* out);
EndpointDesc fromProto(const pb::EndpointDesc& in);
void toProto(const RunSpec& in, pb::RunSpec* out);
// Zero fields of the wire message mean "default" (kDefaultRunTimeoutSeconds, ...).
RunSpec fromProto(const pb::RunSpec& in);
void toProto(const SideSpec& in, pb::EndpointSpec* out);
// Zero fields mean the defaults of common/endpoint.h (tx depth, rx depth, port 1, ...).
SideSpec fromProto(const pb::EndpointSpec& in);
void toProto(const SideOutcome& in, pb::SideOutcome* out);
SideOutcome fromProto(const pb::SideOutcome& in);

// The pair-test request (CLI <-> coordinator).
void toProto(const EndpointSelector& in, pb::EndpointSelector* out);
EndpointSelector fromProto(const pb::EndpointSelector& in);
void toProto(const PairTestSpec& in, pb::RunTestRequest* out);
PairTestSpec fromProto(const pb::RunTestRequest& in);

}  // namespace gdrmesh::convert
