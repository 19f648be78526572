// Fuzzes the wire conversions of peer-supplied messages: bytes parsed as a gdrmesh.v1 message
// (what a worker or the coordinator receives from its peer), then converted to domain types
// the way the service layers do (proto/convert.h, coordinator/service/sweep_convert.h). Any
// bytes must give a domain value or an error Status, never a crash.
//
// The first byte picks the message; the rest is its serialized form, or for the stored sweep
// spec the text of a row as the coordinator reads it (convert::StoredSweepCodec: the domain
// encoding, or protobuf's JSON mapping of an older build). A stored spec that decodes must encode
// again, and that text must decode to a spec that encodes to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "common/limits.h"
#include "coordinator/service/sweep_convert.h"
#include "gdrmesh/v1/gdrmesh.pb.h"
#include "proto/convert.h"

namespace {

namespace pb = ::gdrmesh::v1;
using gdrmesh::convert::fromProto;

// What the worker agent converts from a command (worker/service/worker_agent.cc).
void convertCommand(const pb::CoordinatorCommand& cmd) {
  switch (cmd.command_case()) {
    case pb::CoordinatorCommand::kPrepare: {
      const auto& req = cmd.prepare();
      (void)fromProto(req.spec());
      if (req.has_peer()) (void)fromProto(req.peer());
      if (req.has_arm()) (void)fromProto(req.arm());
      break;
    }
    case pb::CoordinatorCommand::kConnect:
      (void)fromProto(cmd.connect().peer());
      break;
    case pb::CoordinatorCommand::kRun:
      (void)fromProto(cmd.run().spec());
      break;
    case pb::CoordinatorCommand::kStart:
      (void)fromProto(cmd.start().peer());
      (void)fromProto(cmd.start().run());
      break;
    default:  // verify, release, finish: scalar fields only
      break;
  }
}

// What the coordinator converts from a worker's message (coordinator/service/).
void convertWorkerMessage(const pb::WorkerMessage& msg) {
  switch (msg.msg_case()) {
    case pb::WorkerMessage::kRegister: {
      // As the coordinator's Register handler: convert, then the registration limits; a
      // registration they accept has a valid name, and its text cleaned for a terminal holds
      // no control character.
      const auto& reg = msg.register_();
      gdrmesh::Inventory inv = fromProto(reg.inventory());
      std::map<std::string, std::string> labels(reg.labels().begin(), reg.labels().end());
      if (gdrmesh::checkRegistration(reg.name(), inv, labels).ok()) {
        if (!gdrmesh::validWorkerName(reg.name())) std::abort();
        for (const std::string& text : {inv.hostname, reg.name()}) {
          for (unsigned char c : gdrmesh::cleanText(text)) {
            if (c < 0x20 || c == 0x7f) std::abort();
          }
        }
      }
      break;
    }
    case pb::WorkerMessage::kReply: {
      const auto& r = msg.reply();
      (void)fromProto(r.status());
      switch (r.reply_case()) {
        case pb::CommandReply::kPrepare:
          (void)fromProto(r.prepare().local());
          break;
        case pb::CommandReply::kRun:
          (void)fromProto(r.run().measurement());
          break;
        case pb::CommandReply::kVerify:
          (void)fromProto(r.verify().integrity());
          break;
        case pb::CommandReply::kStart:
          (void)fromProto(r.start());
          break;
        case pb::CommandReply::kFinish:
          (void)fromProto(r.finish());
          break;
        default:
          break;
      }
      break;
    }
    default:
      break;
  }
}

void checkSweep(const gdrmesh::Result<gdrmesh::SweepSpec>& s) {
  if (!s.ok()) {
    volatile size_t n = s.status().message().size();
    (void)n;
  }
}

// A stored row, as the coordinator reads a sweep's spec back (a report, a resume).
void checkStoredSpec(const std::string& text) {
  const gdrmesh::convert::StoredSweepCodec codec;
  auto spec = codec.decode(text);
  checkSweep(spec);
  if (!spec.ok()) return;
  const std::string stored = codec.encode(*spec);
  auto again = codec.decode(stored);
  if (!again.ok() || codec.encode(*again) != stored) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* body = data + 1;
  const int len = static_cast<int>(size - 1);
  switch (data[0] % 6) {
    case 0: {
      pb::EndpointDesc m;
      if (m.ParseFromArray(body, len)) (void)fromProto(m);
      break;
    }
    case 1: {
      pb::CoordinatorCommand m;
      if (m.ParseFromArray(body, len)) convertCommand(m);
      break;
    }
    case 2: {
      pb::WorkerMessage m;
      if (m.ParseFromArray(body, len)) convertWorkerMessage(m);
      break;
    }
    case 3: {
      pb::SweepSpec m;
      if (m.ParseFromArray(body, len)) checkSweep(fromProto(m));
      break;
    }
    case 4: {
      pb::RunTestRequest m;  // CLI -> coordinator pair test
      if (m.ParseFromArray(body, len)) (void)fromProto(m);
      break;
    }
    default: {
      checkStoredSpec(std::string(reinterpret_cast<const char*>(body), size - 1));
      break;
    }
  }
  return 0;
}
