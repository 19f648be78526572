// Fuzzes the worker's request handler (worker/service/command_handler.h): a sequence of
// arbitrary coordinator commands (prepare, connect, run, verify, release, start, finish; any
// fields, any order, unknown or repeated test ids) run on a real SessionManager with the
// emulated transport and host memory, exactly as the agent runs them off its stream.
//
// Input: up to 16 commands, each a 2-byte big-endian length and that many bytes of a
// serialized gdrmesh.v1.CoordinatorCommand.
// Shaped so that one input stays fast and local, and said here so nothing is hidden:
//   - every peer endpoint points at 127.0.0.1: at the last listener this process prepared when
//     its port is 1 (so a sequence can really connect and move data), otherwise at a bound
//     socket that does not listen (the connect is refused at once);
//   - values the worker accepts are scaled down (buffers to 1 MiB, iterations to 64, durations
//     to 10 ms, timeouts to 50 ms); values it must refuse (above the limits, NaN, negative) are
//     left as they are, so the refusals are what is fuzzed.
// Checks: no crash, no hang; every reply carries the command's request id and a status; an OK
// reply is the command's own kind; after releasing every test id seen, no session is left.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>

#include "common/pair_spec.h"
#include "gdrmesh/v1/gdrmesh.pb.h"
#include "worker/service/command_handler.h"
#include "worker/session/session.h"
#include "worker/transport/emulated/emulated_transport.h"

namespace {

namespace pb = ::gdrmesh::v1;
using gdrmesh::PairTestLimits;

// A TCP port on loopback that is bound but never listens: a connect to it is refused at once.
uint32_t refusedPort() {
  static const uint32_t port = [] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::abort();
    }
    return static_cast<uint32_t>(ntohs(a.sin_port));  // fd kept open for the process
  }();
  return port;
}

struct Harness {
  gdrmesh::HostMemoryProvider memory;
  gdrmesh::SessionManager sessions{memory, gdrmesh::SessionManager::Options{}};
  gdrmesh::WorkerOptions options;
  pb::EndpointDesc last_listener;  // the last prepare reply that listens (a target's)
  Harness() {
    sessions.addTransport(std::make_unique<gdrmesh::EmulatedTransport>());
    options.data_host = "127.0.0.1";
  }
};

void shapePeer(pb::EndpointDesc* peer, const pb::EndpointDesc& listener) {
  if (peer->tcp_port() == 1 && listener.tcp_port() != 0) {
    peer->set_tcp_port(listener.tcp_port());
    peer->set_rkey(listener.rkey());
    peer->set_addr(listener.addr());
    peer->set_length(listener.length());
  } else {
    peer->set_tcp_port(refusedPort());
  }
  peer->set_tcp_host("127.0.0.1");
  // Current writers send the oneof, which wins over the flat fields: steer its emulated part
  // alike (another transport's part is left as the input chose it: refused at connect).
  if (peer->transport_fields_case() == pb::EndpointDesc::kEmulated) {
    peer->mutable_emulated()->set_tcp_host(peer->tcp_host());
    peer->mutable_emulated()->set_tcp_port(peer->tcp_port());
  }
}

// Scales down what the limits allow; leaves what they refuse.
double shapeSeconds(double s, double cap) {
  return std::isfinite(s) && s > cap ? cap : s;
}

void shapeRun(pb::RunSpec* r) {
  const PairTestLimits lim;
  if (r->message_size() > (1u << 20) && r->message_size() <= lim.max_message_size) {
    r->set_message_size(1u << 20);
  }
  if (r->iterations() > 64 && r->iterations() <= lim.max_iterations) r->set_iterations(64);
  if (r->warmup_iterations() > 4 && r->warmup_iterations() <= lim.max_warmup_iterations) {
    r->set_warmup_iterations(4);
  }
  r->set_duration_seconds(shapeSeconds(r->duration_seconds(), 0.01));
  r->set_timeout_seconds(shapeSeconds(r->timeout_seconds(), 0.05));
}

void shape(pb::CoordinatorCommand* c, const pb::EndpointDesc& listener) {
  const PairTestLimits lim;
  switch (c->command_case()) {
    case pb::CoordinatorCommand::kPrepare: {
      auto* p = c->mutable_prepare();
      auto* s = p->mutable_spec();
      if (s->buffer_size() > (1u << 20) && s->buffer_size() <= 2 * lim.max_message_size) {
        s->set_buffer_size(1u << 20);
      }
      if (p->has_peer()) shapePeer(p->mutable_peer(), listener);
      if (p->has_arm()) shapeRun(p->mutable_arm());
      break;
    }
    case pb::CoordinatorCommand::kConnect:
      shapePeer(c->mutable_connect()->mutable_peer(), listener);
      break;
    case pb::CoordinatorCommand::kRun:
      shapeRun(c->mutable_run()->mutable_spec());
      break;
    case pb::CoordinatorCommand::kStart:
      shapePeer(c->mutable_start()->mutable_peer(), listener);
      shapeRun(c->mutable_start()->mutable_run());
      break;
    case pb::CoordinatorCommand::kFinish: {
      // 0 means the default wait (120 s): shaped like any other accepted value.
      auto* f = c->mutable_finish();
      const double t = f->timeout_seconds();
      if (t == 0 || (std::isfinite(t) && t > 0.05)) f->set_timeout_seconds(0.05);
      break;
    }
    default:
      break;
  }
}

std::string testIdOf(const pb::CoordinatorCommand& c) {
  switch (c.command_case()) {
    case pb::CoordinatorCommand::kPrepare:
      return c.prepare().spec().test_id();
    case pb::CoordinatorCommand::kConnect:
      return c.connect().test_id();
    case pb::CoordinatorCommand::kRun:
      return c.run().test_id();
    case pb::CoordinatorCommand::kVerify:
      return c.verify().test_id();
    case pb::CoordinatorCommand::kRelease:
      return c.release().test_id();
    case pb::CoordinatorCommand::kStart:
      return c.start().test_id();
    case pb::CoordinatorCommand::kFinish:
      return c.finish().test_id();
    default:
      return {};
  }
}

// The reply kind an OK answer to `c` must carry.
pb::CommandReply::ReplyCase expectedReply(pb::CoordinatorCommand::CommandCase c) {
  switch (c) {
    case pb::CoordinatorCommand::kPrepare:
      return pb::CommandReply::kPrepare;
    case pb::CoordinatorCommand::kConnect:
      return pb::CommandReply::kConnect;
    case pb::CoordinatorCommand::kRun:
      return pb::CommandReply::kRun;
    case pb::CoordinatorCommand::kVerify:
      return pb::CommandReply::kVerify;
    case pb::CoordinatorCommand::kRelease:
      return pb::CommandReply::kRelease;
    case pb::CoordinatorCommand::kStart:
      return pb::CommandReply::kStart;
    case pb::CoordinatorCommand::kFinish:
      return pb::CommandReply::kFinish;
    case pb::CoordinatorCommand::kDiscoverFabric:
      return pb::CommandReply::kDiscoverFabric;
    case pb::CoordinatorCommand::kReadPortCounters:
      return pb::CommandReply::kReadPortCounters;
    default:
      return pb::CommandReply::REPLY_NOT_SET;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Harness h;
  std::set<std::string> ids;
  size_t at = 0;
  for (int n = 0; n < 16 && at + 2 <= size; ++n) {
    const size_t len = (size_t{data[at]} << 8) | data[at + 1];
    at += 2;
    const size_t take = std::min(len, size - at);
    pb::CoordinatorCommand cmd;
    const bool parsed = cmd.ParseFromArray(data + at, static_cast<int>(take));
    at += take;
    if (!parsed) continue;
    shape(&cmd, h.last_listener);
    ids.insert(testIdOf(cmd));
    pb::CommandReply reply;
    gdrmesh::executeCommand(h.options, h.sessions, cmd, &reply);
    if (reply.request_id() != cmd.request_id() || !reply.has_status()) std::abort();
    if (reply.status().ok()) {
      if (reply.reply_case() != expectedReply(cmd.command_case())) std::abort();
      if (reply.has_prepare() && reply.prepare().local().tcp_port() != 0 &&
          cmd.prepare().spec().role() == pb::ROLE_TARGET) {
        h.last_listener = reply.prepare().local();
      }
    } else if (reply.status().message().empty()) {
      std::abort();  // a refusal says why
    }
  }
  for (const std::string& id : ids) h.sessions.release(id);
  if (h.sessions.active() != 0) std::abort();  // nothing outlives its test
  return 0;
}
