#include "worker/service/worker_agent.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/log.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "convert.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "security/grpc_tls.h"
#include "worker/service/command_handler.h"
#include "worker/service/command_pool.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;

// The worker's log lines: "gdrmesh worker NAME: ..." (no clock here: the system's time).
ComponentLog workerAgentLog(const std::string& name) {
  return ComponentLog("worker", nullptr, name, {{"worker", name}});
}
using convert::fromProto;
using convert::toProto;

// libibmad keeps global state: one management query (discovery, counters) at a time.
Mutex& fabricMutex() {
  static Mutex mu;
  return mu;
}

SessionSpec specFromProto(const pb::EndpointSpec& in, const std::string& data_host, int numa_node) {
  SessionSpec s;
  static_cast<SideSpec&>(s) = fromProto(in);
  s.endpoint.listen_host = data_host;
  s.numa_node = numa_node;
  return s;
}

const char* commandName(pb::CoordinatorCommand::CommandCase c) {
  switch (c) {
    case pb::CoordinatorCommand::kPrepare:
      return "prepare";
    case pb::CoordinatorCommand::kConnect:
      return "connect";
    case pb::CoordinatorCommand::kRun:
      return "run";
    case pb::CoordinatorCommand::kVerify:
      return "verify";
    case pb::CoordinatorCommand::kRelease:
      return "release";
    case pb::CoordinatorCommand::kStart:
      return "start";
    case pb::CoordinatorCommand::kFinish:
      return "finish";
    case pb::CoordinatorCommand::kDiscoverFabric:
      return "discover_fabric";
    case pb::CoordinatorCommand::kReadPortCounters:
      return "read_port_counters";
    case pb::CoordinatorCommand::COMMAND_NOT_SET:
      break;
  }
  return "unknown";
}

// Prepare and release never wait for a peer; everything else may block for a run.
bool isControl(pb::CoordinatorCommand::CommandCase c) {
  return c == pb::CoordinatorCommand::kPrepare || c == pb::CoordinatorCommand::kRelease;
}

// Runs one command on the SessionManager and fills the reply (status included).
void execute(const WorkerOptions& options, SessionManager& sessions,
             const pb::CoordinatorCommand& cmd, pb::CommandReply* reply) {
  reply->set_request_id(cmd.request_id());
  Status st;
  switch (cmd.command_case()) {
    case pb::CoordinatorCommand::kPrepare: {
      const auto& req = cmd.prepare();
      SessionSpec spec = specFromProto(req.spec(), options.data_host, options.numa_node);
      // GPU tests default to the GPU's nearest NIC; host buffers go to the NIC's node.
      if (spec.transport == TransportKind::kVerbs && spec.endpoint.device.empty() &&
          spec.memory == MemoryKind::kCuda && options.nearest_nic) {
        spec.endpoint.device = options.nearest_nic(spec.gpu);
      }
      if (spec.numa_node < 0 && options.nic_numa) {
        spec.numa_node = options.nic_numa(spec.endpoint.device);
      }
      PrepareExtras extras;
      if (req.has_peer()) extras.peer = fromProto(req.peer());
      if (req.has_arm()) extras.arm = fromProto(req.arm());
      auto r = sessions.prepare(spec, extras);
      if (r.ok()) {
        // The transport's description plus what the records show: where the buffer is, the
        // registration path used, the GPU and its PCIe path class to the NIC.
        EndpointDesc d = std::move(r->desc);
        d.buffer = r->buffer;
        d.reg_path = r->reg_path;
        d.gpu = req.spec().gpu();
        if (options.topo_class) {
          d.topo_class = options.topo_class(d.gpu, d.nic() ? d.nic()->device : std::string());
        }
        toProto(d, reply->mutable_prepare()->mutable_local());
      }
      st = r.status();
      break;
    }
    case pb::CoordinatorCommand::kConnect: {
      auto r = sessions.connect(cmd.connect().test_id(), fromProto(cmd.connect().peer()));
      if (r.ok()) reply->mutable_connect()->set_path_mtu(*r);
      st = r.status();
      break;
    }
    case pb::CoordinatorCommand::kRun: {
      auto r = sessions.run(cmd.run().test_id(), fromProto(cmd.run().spec()));
      if (r.ok()) toProto(*r, reply->mutable_run()->mutable_measurement());
      st = r.status();
      break;
    }
    case pb::CoordinatorCommand::kVerify: {
      auto r = sessions.verify(cmd.verify().test_id(), cmd.verify().length(), cmd.verify().seed());
      if (r.ok()) {
        toProto(r->integrity, reply->mutable_verify()->mutable_integrity());
        reply->mutable_verify()->set_staging_seconds(r->staging_seconds);
      }
      st = r.status();
      break;
    }
    case pb::CoordinatorCommand::kRelease:
      sessions.release(cmd.release().test_id());
      reply->mutable_release();
      break;
    case pb::CoordinatorCommand::kStart: {
      const auto& req = cmd.start();
      StartSpec ss;
      ss.peer = fromProto(req.peer());
      ss.run = fromProto(req.run());
      ss.verify = req.verify();
      ss.verify_length = req.verify_length();
      auto r = sessions.start(req.test_id(), ss);
      if (r.ok()) toProto(*r, reply->mutable_start());
      st = r.status();
      break;
    }
    case pb::CoordinatorCommand::kFinish: {
      const auto& req = cmd.finish();
      FinishSpec fs;
      fs.verify = req.verify();
      fs.verify_length = req.verify_length();
      if (req.timeout_seconds() > 0) fs.timeout_seconds = req.timeout_seconds();
      auto r = sessions.finish(req.test_id(), fs);
      if (r.ok()) toProto(*r, reply->mutable_finish());
      st = r.status();
      break;
    }
    case pb::CoordinatorCommand::kDiscoverFabric: {
      // The command succeeds whenever it ran; the discovery's own outcome (no device, no
      // module, a switch that did not answer) is the reply's `discovery`.
      const auto& req = cmd.discover_fabric();
      fabric::DiscoverRequest d;
      d.ca = req.ca();
      d.ca_port = static_cast<int>(req.ca_port());
      d.timeout_ms = req.timeout_ms() == 0 ? 500 : static_cast<int>(req.timeout_ms());
      d.read_lfts = !req.no_lfts();
      d.lldp = req.lldp();
      auto* out = reply->mutable_discover_fabric();
      Status ds;
      if (d.lldp) {
        // RoCE: lldpd's neighbours of this worker's NICs; a NIC without one is in the answer.
        if (!options.read_lldp) {
          ds = unimplemented("worker " + options.name + " cannot ask lldpd (a simulated worker)",
                             "ask a real worker on a RoCE host");
        } else {
          fabric::LldpHost h = options.read_lldp(d);
          h.host = options.name;
          if (!h.status.ok() && h.nics.empty()) {
            ds = h.status;
          } else {
            out->set_lldp_json(fabric::toJson(h).dump());
          }
        }
      } else if (!options.discover_fabric) {
        ds = unimplemented(
            "worker " + options.name + " was built without InfiniBand fabric discovery",
            "install libibnetdisc-dev libibmad-dev libibumad-dev and rebuild the "
            "worker (GDRMESH_FABRIC=ON)");
      } else {
        // libibmad keeps global state: one management query at a time on this worker.
        MutexLock lock(fabricMutex());
        auto f = options.discover_fabric(d);
        if (f.ok()) out->set_snapshot_json(fabric::toJson(*f).dump());
        ds = f.status();
      }
      toProto(ds, out->mutable_discovery());
      break;
    }
    case pb::CoordinatorCommand::kReadPortCounters: {
      // As discovery: the command succeeds whenever it ran; the read's outcome is `reading`,
      // a port that did not answer its own status.
      const fabric::CounterReadRequest req = convert::fromProto(cmd.read_port_counters());
      fabric::CounterReadOutcome outcome;
      if (!options.read_port_counters) {
        outcome.status = unimplemented(
            "worker " + options.name + " was built without the InfiniBand fabric module",
            "install libibnetdisc-dev libibmad-dev libibumad-dev and rebuild the worker "
            "(GDRMESH_FABRIC=ON), or name another worker as fabric_reader");
      } else {
        MutexLock lock(fabricMutex());
        auto r = options.read_port_counters(req);
        if (r.ok()) {
          outcome = std::move(r).value();
        } else {
          outcome.status = r.status();
        }
      }
      convert::toProto(outcome, reply->mutable_read_port_counters());
      break;
    }
    case pb::CoordinatorCommand::COMMAND_NOT_SET:
      st = unimplemented("unknown command from coordinator",
                         "upgrade this worker to the coordinator's version");
      break;
  }
  toProto(st, reply->mutable_status());
}

// A target's finish sent with its prepare (PrepareRequest.finish): once the prepare succeeded,
// a finish command of its own, answered under finish_request_id when the armed run ends.
std::shared_ptr<pb::CoordinatorCommand> finishAfterPrepare(const pb::CoordinatorCommand& cmd,
                                                           const pb::CommandReply& reply) {
  if (!cmd.has_prepare() || !cmd.prepare().has_finish() || !reply.status().ok()) return nullptr;
  auto fin = std::make_shared<pb::CoordinatorCommand>();
  fin->set_request_id(cmd.prepare().finish_request_id());
  *fin->mutable_finish() = cmd.prepare().finish();
  return fin;
}

}  // namespace

void executeCommand(const WorkerOptions& options, SessionManager& sessions,
                    const pb::CoordinatorCommand& cmd, pb::CommandReply* reply) {
  execute(options, sessions, cmd, reply);
}

// One live stream to the coordinator; replies are written under a mutex since commands run
// on the pools' threads.
class WorkerAgent::Stream {
 public:
  explicit Stream(
      std::unique_ptr<grpc::ClientReaderWriter<pb::WorkerMessage, pb::CoordinatorMessage>> s)
      : s_(std::move(s)) {}
  bool write(const pb::WorkerMessage& m) {
    MutexLock lock(mu_);
    return s_->Write(m);
  }
  bool read(pb::CoordinatorMessage* m) { return s_->Read(m); }
  grpc::Status finish() {
    {
      MutexLock lock(mu_);
      s_->WritesDone();
    }
    return s_->Finish();
  }

 private:
  Mutex mu_;  // serialises writes on s_ (set once, in the constructor)
  std::unique_ptr<grpc::ClientReaderWriter<pb::WorkerMessage, pb::CoordinatorMessage>> s_;
};

WorkerAgent::WorkerAgent(WorkerOptions options, Inventory inventory, SessionManager& sessions)
    : options_(std::move(options)), inventory_(std::move(inventory)), sessions_(sessions) {}

WorkerAgent::~WorkerAgent() {
  stop();
}

void WorkerAgent::stop() {
  stopping_.store(true);
  MutexLock lock(mu_);
  if (context_ != nullptr) context_->TryCancel();
  cv_.notify_all();
}

Status WorkerAgent::run() {
  auto backoff = std::chrono::milliseconds(200);
  while (!stopping_.load()) {
    bool registered = false;
    Status st = serveOnce(&registered);
    if (stopping_.load()) break;
    if (st.code() == Code::kInvalidArgument || st.code() == Code::kPermissionDenied) return st;
    if (!options_.reconnect) return st;
    if (registered) backoff = std::chrono::milliseconds(200);
    char retry[32];
    std::snprintf(retry, sizeof(retry), "%.1f", static_cast<double>(backoff.count()) / 1000.0);
    workerAgentLog(options_.name)
        .warn(st.toString() + "; retrying in " + retry + " s",
              {{"coordinator", options_.coordinator},
               {"retry_s", static_cast<double>(backoff.count()) / 1000.0}});
    UniqueLock lock(mu_);
    cv_.wait_for(lock.native(), backoff, [this] { return stopping_.load(); });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  return {};
}

Status WorkerAgent::serveOnce(bool* registered) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  auto channel =
      grpc::CreateCustomChannel(options_.coordinator, channelCredentials(options_.tls), args);
  auto stub = pb::WorkerService::NewStub(channel);
  grpc::ClientContext ctx;
  {
    MutexLock lock(mu_);
    if (stopping_.load()) return {};
    context_ = &ctx;
  }
  struct ClearContext {
    WorkerAgent* self;
    ~ClearContext() {
      MutexLock lock(self->mu_);
      self->context_ = nullptr;
    }
  } clear{this};

  Stream stream(stub->Connect(&ctx));
  pb::WorkerMessage reg;
  reg.mutable_register_()->set_name(options_.name);
  reg.mutable_register_()->set_protocol_version(1);
  for (const auto& [key, value] : options_.labels) {
    (*reg.mutable_register_()->mutable_labels())[key] = value;
  }
  convert::toProto(inventory_, reg.mutable_register_()->mutable_inventory());
  pb::CoordinatorMessage first;
  if (!stream.write(reg) || !stream.read(&first) || !first.has_registered()) {
    grpc::Status gs = stream.finish();
    if (gs.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
        gs.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      return invalidArgument("coordinator refused registration: " + gs.error_message());
    }
    if (gs.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
      // The certificate does not allow this name: retrying cannot fix it.
      return Status(Code::kPermissionDenied,
                    "coordinator refused registration: " + gs.error_message());
    }
    const std::string hint = tlsFailureHint(gs.error_message(), options_.tls.has_value());
    return unavailable("coordinator " + options_.coordinator + " unreachable: " +
                       (gs.ok() ? std::string("stream closed") : gs.error_message()) +
                       (hint.empty() ? "" : " (" + hint + ")"));
  }
  *registered = true;
  workerAgentLog(options_.name)
      .info("registered with " + options_.coordinator, {{"coordinator", options_.coordinator}});
  const int hb_ms = first.registered().heartbeat_interval_ms() > 0
                        ? static_cast<int>(first.registered().heartbeat_interval_ms())
                        : options_.heartbeat_ms;

  std::atomic<bool> done{false};
  Mutex hb_mu;
  std::condition_variable hb_cv;
  std::thread heartbeat([&] {
    UniqueLock lock(hb_mu);
    while (!done.load()) {
      hb_cv.wait_for(lock.native(), std::chrono::milliseconds(hb_ms), [&] { return done.load(); });
      if (done.load()) break;
      pb::WorkerMessage hb;
      hb.mutable_heartbeat()->set_unix_ms(nowUnixMs());
      hb.mutable_heartbeat()->set_active_tests(static_cast<uint32_t>(sessions_.active()));
      if (!stream.write(hb)) break;
    }
  });

  CommandPool control({options_.control_threads, options_.command_queue});
  CommandPool commands({options_.command_threads, options_.command_queue});
  // Runs a command on its pool; its reply goes out when it is done. (Jobs only run until the
  // pools are joined below, while `dispatch` is alive.)
  std::function<void(std::shared_ptr<pb::CoordinatorCommand>)> dispatch;
  dispatch = [&](std::shared_ptr<pb::CoordinatorCommand> cmd) {
    const auto kind = cmd->command_case();
    CommandPool& pool = isControl(kind) ? control : commands;
    const bool queued = pool.submit([this, &stream, &dispatch, cmd] {
      pb::WorkerMessage out;
      execute(options_, sessions_, *cmd, out.mutable_reply());
      stream.write(out);
      if (auto fin = finishAfterPrepare(*cmd, out.reply())) dispatch(std::move(fin));
    });
    if (!queued) {
      pb::WorkerMessage out;
      auto* reply = out.mutable_reply();
      reply->set_request_id(cmd->request_id());
      const Status refused(
          Code::kResourceExhausted,
          "worker " + options_.name + ": " + commandName(kind) +
              " refused: " + std::to_string(pool.queued()) + " commands already wait for " +
              std::to_string(pool.threads()) + " busy command threads",
          "lower the number of concurrent tests on this worker (sweep max_concurrency)");
      toProto(refused, reply->mutable_status());
      stream.write(out);
    }
  };
  pb::CoordinatorMessage msg;
  while (stream.read(&msg)) {
    if (!msg.has_command()) continue;
    dispatch(std::make_shared<pb::CoordinatorCommand>(std::move(*msg.mutable_command())));
  }
  // Stream over: start no more commands, abort every test so that running commands return,
  // join every thread, then abort what a command still running at the first abort prepared.
  done.store(true);
  hb_cv.notify_all();
  control.stop();
  commands.stop();
  sessions_.abortAll();
  heartbeat.join();
  control.join();
  commands.join();
  sessions_.abortAll();
  grpc::Status gs = stream.finish();
  if (stopping_.load()) return {};
  return unavailable("stream to coordinator ended: " +
                     (gs.ok() ? std::string("closed by coordinator") : gs.error_message()));
}

}  // namespace gdrmesh
