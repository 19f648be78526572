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

// A prepare: the session's spec completed from this worker (its data address, the GPU's nearest
// NIC, the NIC's NUMA node), and the local endpoint's description in the reply.
Status executePrepare(const WorkerOptions& options, SessionManager& sessions,
                      const pb::PrepareRequest& req, pb::CommandReply* reply) {
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
  return r.status();
}

Status executeStart(SessionManager& sessions, const pb::StartRequest& req,
                    pb::CommandReply* reply) {
  StartSpec ss;
  ss.peer = fromProto(req.peer());
  ss.run = fromProto(req.run());
  ss.verify = req.verify();
  ss.verify_length = req.verify_length();
  auto r = sessions.start(req.test_id(), ss);
  if (r.ok()) toProto(*r, reply->mutable_start());
  return r.status();
}

Status executeFinish(SessionManager& sessions, const pb::FinishRequest& req,
                     pb::CommandReply* reply) {
  FinishSpec fs;
  fs.verify = req.verify();
  fs.verify_length = req.verify_length();
  if (req.timeout_seconds() > 0) fs.timeout_seconds = req.timeout_seconds();
  auto r = sessions.finish(req.test_id(), fs);
  if (r.ok()) toProto(*r, reply->mutable_finish());
  return r.status();
}

// RoCE: lldpd's neighbours of this worker's NICs; a NIC without one is in the answer.
Status readLldpInto(const WorkerOptions& options, const fabric::DiscoverRequest& d,
                    pb::DiscoverFabricReply* out) {
  if (!options.read_lldp) {
    return unimplemented("worker " + options.name + " cannot ask lldpd (a simulated worker)",
                         "ask a real worker on a RoCE host");
  }
  fabric::LldpHost h = options.read_lldp(d);
  h.host = options.name;
  if (!h.status.ok() && h.nics.empty()) return h.status;
  out->set_lldp_json(fabric::toJson(h).dump());
  return {};
}

// InfiniBand: the subnet's snapshot, discovered through this worker's port.
Status discoverIbInto(const WorkerOptions& options, const fabric::DiscoverRequest& d,
                      pb::DiscoverFabricReply* out) {
  if (!options.discover_fabric) {
    return unimplemented(
        "worker " + options.name + " was built without InfiniBand fabric discovery",
        "install libibnetdisc-dev libibmad-dev libibumad-dev and rebuild the "
        "worker (GDRMESH_FABRIC=ON)");
  }
  // libibmad keeps global state: one management query at a time on this worker.
  MutexLock lock(fabricMutex());
  auto f = options.discover_fabric(d);
  if (f.ok()) out->set_snapshot_json(fabric::toJson(*f).dump());
  return f.status();
}

// The command succeeds whenever it ran; the discovery's own outcome (no device, no module, a
// switch that did not answer) is the reply's `discovery`.
void executeDiscoverFabric(const WorkerOptions& options, const pb::DiscoverFabricRequest& req,
                           pb::CommandReply* reply) {
  fabric::DiscoverRequest d;
  d.ca = req.ca();
  d.ca_port = static_cast<int>(req.ca_port());
  d.timeout_ms = req.timeout_ms() == 0 ? 500 : static_cast<int>(req.timeout_ms());
  d.read_lfts = !req.no_lfts();
  d.lldp = req.lldp();
  auto* out = reply->mutable_discover_fabric();
  const Status ds = d.lldp ? readLldpInto(options, d, out) : discoverIbInto(options, d, out);
  toProto(ds, out->mutable_discovery());
}

// As discovery: the command succeeds whenever it ran; the read's outcome is `reading`, a port
// that did not answer its own status.
void executeReadPortCounters(const WorkerOptions& options, const pb::ReadPortCountersRequest& in,
                             pb::CommandReply* reply) {
  const fabric::CounterReadRequest req = convert::fromProto(in);
  fabric::CounterReadOutcome outcome;
  if (!options.read_port_counters) {
    outcome.status =
        unimplemented("worker " + options.name + " was built without the InfiniBand fabric module",
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
}

// Runs one command on the SessionManager and fills the reply (status included).
void execute(const WorkerOptions& options, SessionManager& sessions,
             const pb::CoordinatorCommand& cmd, pb::CommandReply* reply) {
  reply->set_request_id(cmd.request_id());
  Status st;
  switch (cmd.command_case()) {
    case pb::CoordinatorCommand::kPrepare:
      st = executePrepare(options, sessions, cmd.prepare(), reply);
      break;
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
    case pb::CoordinatorCommand::kStart:
      st = executeStart(sessions, cmd.start(), reply);
      break;
    case pb::CoordinatorCommand::kFinish:
      st = executeFinish(sessions, cmd.finish(), reply);
      break;
    case pb::CoordinatorCommand::kDiscoverFabric:
      executeDiscoverFabric(options, cmd.discover_fabric(), reply);
      break;
    case pb::CoordinatorCommand::kReadPortCounters:
      executeReadPortCounters(options, cmd.read_port_counters(), reply);
      break;
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

// The channel to the coordinator: keepalives, so that a dead coordinator is noticed while idle.
std::shared_ptr<grpc::Channel> coordinatorChannel(const WorkerOptions& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return grpc::CreateCustomChannel(options.coordinator, channelCredentials(options.tls), args);
}

// The stream's first message: this worker's name, labels and inventory.
pb::WorkerMessage registrationMessage(const WorkerOptions& options, const Inventory& inventory) {
  pb::WorkerMessage reg;
  reg.mutable_register_()->set_name(options.name);
  reg.mutable_register_()->set_protocol_version(1);
  for (const auto& [key, value] : options.labels) {
    (*reg.mutable_register_()->mutable_labels())[key] = value;
  }
  convert::toProto(inventory, reg.mutable_register_()->mutable_inventory());
  return reg;
}

// Why registering failed, from the stream's end: a refusal (retrying cannot fix it:
// kInvalidArgument, kPermissionDenied) or an unreachable coordinator (kUnavailable).
Status registrationFailure(const WorkerOptions& options, const grpc::Status& gs) {
  if (gs.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
      gs.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    return invalidArgument("coordinator refused registration: " + gs.error_message());
  }
  if (gs.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    // The certificate does not allow this name: retrying cannot fix it.
    return Status(Code::kPermissionDenied,
                  "coordinator refused registration: " + gs.error_message());
  }
  const std::string hint = tlsFailureHint(gs.error_message(), options.tls.has_value());
  return unavailable("coordinator " + options.coordinator + " unreachable: " +
                     (gs.ok() ? std::string("stream closed") : gs.error_message()) +
                     (hint.empty() ? "" : " (" + hint + ")"));
}

// The answer to a command its pool has no room for: RESOURCE_EXHAUSTED at once.
pb::WorkerMessage poolFullReply(const std::string& worker, const pb::CoordinatorCommand& cmd,
                                const CommandPool& pool) {
  pb::WorkerMessage out;
  auto* reply = out.mutable_reply();
  reply->set_request_id(cmd.request_id());
  const Status refused(
      Code::kResourceExhausted,
      "worker " + worker + ": " + commandName(cmd.command_case()) +
          " refused: " + std::to_string(pool.queued()) + " commands already wait for " +
          std::to_string(pool.threads()) + " busy command threads",
      "lower the number of concurrent tests on this worker (sweep max_concurrency)");
  toProto(refused, reply->mutable_status());
  return out;
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
  auto stub = pb::WorkerService::NewStub(coordinatorChannel(options_));
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
  pb::CoordinatorMessage first;
  if (!stream.write(registrationMessage(options_, inventory_)) || !stream.read(&first) ||
      !first.has_registered()) {
    return registrationFailure(options_, stream.finish());
  }
  *registered = true;
  workerAgentLog(options_.name)
      .info("registered with " + options_.coordinator, {{"coordinator", options_.coordinator}});
  const int hb_ms = first.registered().heartbeat_interval_ms() > 0
                        ? static_cast<int>(first.registered().heartbeat_interval_ms())
                        : options_.heartbeat_ms;
  serveCommands(stream, hb_ms);
  grpc::Status gs = stream.finish();
  if (stopping_.load()) return {};
  return unavailable("stream to coordinator ended: " +
                     (gs.ok() ? std::string("closed by coordinator") : gs.error_message()));
}

void WorkerAgent::serveCommands(Stream& stream, int heartbeat_ms) {
  std::atomic<bool> done{false};
  Mutex hb_mu;
  std::condition_variable hb_cv;
  std::thread heartbeat([&] {
    UniqueLock lock(hb_mu);
    while (!done.load()) {
      hb_cv.wait_for(lock.native(), std::chrono::milliseconds(heartbeat_ms),
                     [&] { return done.load(); });
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
    CommandPool& pool = isControl(cmd->command_case()) ? control : commands;
    const bool queued = pool.submit([this, &stream, &dispatch, cmd] {
      pb::WorkerMessage out;
      execute(options_, sessions_, *cmd, out.mutable_reply());
      stream.write(out);
      if (auto fin = finishAfterPrepare(*cmd, out.reply())) dispatch(std::move(fin));
    });
    if (!queued) stream.write(poolFullReply(options_.name, *cmd, pool));
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
}

}  // namespace gdrmesh
