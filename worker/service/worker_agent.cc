#include "worker/service/worker_agent.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "common/units.h"
#include "convert.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;
using convert::fromProto;
using convert::toProto;

SessionSpec specFromProto(const pb::EndpointSpec& in, const std::string& data_host, int numa_node) {
  SessionSpec s;
  static_cast<SideSpec&>(s) = fromProto(in);
  s.endpoint.listen_host = data_host;
  s.numa_node = numa_node;
  return s;
}

}  // namespace

// One live stream to the coordinator; replies are written under a mutex since commands run
// on their own threads.
class WorkerAgent::Stream {
 public:
  explicit Stream(
      std::unique_ptr<grpc::ClientReaderWriter<pb::WorkerMessage, pb::CoordinatorMessage>> s)
      : s_(std::move(s)) {}
  bool write(const pb::WorkerMessage& m) {
    std::lock_guard<std::mutex> lock(mu_);
    return s_->Write(m);
  }
  bool read(pb::CoordinatorMessage* m) { return s_->Read(m); }
  grpc::Status finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      s_->WritesDone();
    }
    return s_->Finish();
  }

 private:
  std::mutex mu_;  // guards writes on s_
  std::unique_ptr<grpc::ClientReaderWriter<pb::WorkerMessage, pb::CoordinatorMessage>> s_;
};

WorkerAgent::WorkerAgent(WorkerOptions options, Inventory inventory, SessionManager& sessions)
    : options_(std::move(options)), inventory_(std::move(inventory)), sessions_(sessions) {}

WorkerAgent::~WorkerAgent() {
  stop();
}

void WorkerAgent::stop() {
  stopping_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
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
    std::fprintf(stderr, "gdrmesh worker %s: %s; retrying in %.1f s\n", options_.name.c_str(),
                 st.toString().c_str(), static_cast<double>(backoff.count()) / 1000.0);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, backoff, [this] { return stopping_.load(); });
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
      grpc::CreateCustomChannel(options_.coordinator, grpc::InsecureChannelCredentials(), args);
  auto stub = pb::WorkerService::NewStub(channel);
  grpc::ClientContext ctx;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) return {};
    context_ = &ctx;
  }
  struct ClearContext {
    WorkerAgent* self;
    ~ClearContext() {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->context_ = nullptr;
    }
  } clear{this};

  Stream stream(stub->Connect(&ctx));
  pb::WorkerMessage reg;
  reg.mutable_register_()->set_name(options_.name);
  reg.mutable_register_()->set_protocol_version(1);
  convert::toProto(inventory_, reg.mutable_register_()->mutable_inventory());
  pb::CoordinatorMessage first;
  if (!stream.write(reg) || !stream.read(&first) || !first.has_registered()) {
    grpc::Status gs = stream.finish();
    if (gs.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
        gs.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      return invalidArgument("coordinator refused registration: " + gs.error_message());
    }
    return unavailable("coordinator " + options_.coordinator + " unreachable: " +
                       (gs.ok() ? std::string("stream closed") : gs.error_message()));
  }
  *registered = true;
  std::fprintf(stderr, "gdrmesh worker %s: registered with %s\n", options_.name.c_str(),
               options_.coordinator.c_str());
  const int hb_ms = first.registered().heartbeat_interval_ms() > 0
                        ? static_cast<int>(first.registered().heartbeat_interval_ms())
                        : options_.heartbeat_ms;

  std::atomic<bool> done{false};
  std::mutex hb_mu;
  std::condition_variable hb_cv;
  std::thread heartbeat([&] {
    std::unique_lock<std::mutex> lock(hb_mu);
    while (!done.load()) {
      hb_cv.wait_for(lock, std::chrono::milliseconds(hb_ms), [&] { return done.load(); });
      if (done.load()) break;
      pb::WorkerMessage hb;
      hb.mutable_heartbeat()->set_unix_ms(nowUnixMs());
      hb.mutable_heartbeat()->set_active_tests(static_cast<uint32_t>(sessions_.active()));
      if (!stream.write(hb)) break;
    }
  });

  std::vector<std::thread> handlers;
  pb::CoordinatorMessage msg;
  while (stream.read(&msg)) {
    if (!msg.has_command()) continue;
    handlers.emplace_back([this, &stream, cmd = msg.command()] {
      pb::WorkerMessage out;
      auto* reply = out.mutable_reply();
      reply->set_request_id(cmd.request_id());
      Status st;
      switch (cmd.command_case()) {
        case pb::CoordinatorCommand::kPrepare: {
          SessionSpec spec =
              specFromProto(cmd.prepare().spec(), options_.data_host, options_.numa_node);
          // GPU tests default to the GPU's nearest NIC; host buffers go to the NIC's node.
          if (spec.transport == TransportKind::kVerbs && spec.endpoint.device.empty() &&
              spec.memory == MemoryKind::kCuda && options_.nearest_nic) {
            spec.endpoint.device = options_.nearest_nic(spec.gpu);
          }
          if (spec.numa_node < 0 && options_.nic_numa) {
            spec.numa_node = options_.nic_numa(spec.endpoint.device);
          }
          auto r = sessions_.prepare(spec);
          if (r.ok()) {
            auto* p = reply->mutable_prepare()->mutable_local();
            toProto(r->desc, p);
            p->set_buffer(r->buffer);
            p->set_reg_path(toProto(r->reg_path));
            p->set_gpu(cmd.prepare().spec().gpu());
            if (options_.topo_class) {
              p->set_topo_class(options_.topo_class(cmd.prepare().spec().gpu(), r->desc.device));
            }
          }
          st = r.status();
          break;
        }
        case pb::CoordinatorCommand::kConnect: {
          auto r = sessions_.connect(cmd.connect().test_id(), fromProto(cmd.connect().peer()));
          if (r.ok()) reply->mutable_connect()->set_path_mtu(*r);
          st = r.status();
          break;
        }
        case pb::CoordinatorCommand::kRun: {
          auto r = sessions_.run(cmd.run().test_id(), fromProto(cmd.run().spec()));
          if (r.ok()) toProto(*r, reply->mutable_run()->mutable_measurement());
          st = r.status();
          break;
        }
        case pb::CoordinatorCommand::kVerify: {
          auto r = sessions_.verify(cmd.verify().test_id(), cmd.verify().length());
          if (r.ok()) {
            toProto(r->integrity, reply->mutable_verify()->mutable_integrity());
            reply->mutable_verify()->set_staging_seconds(r->staging_seconds);
          }
          st = r.status();
          break;
        }
        case pb::CoordinatorCommand::kRelease:
          sessions_.release(cmd.release().test_id());
          reply->mutable_release();
          break;
        default:
          st = unimplemented("unknown command from coordinator");
          break;
      }
      toProto(st, reply->mutable_status());
      stream.write(out);
    });
  }
  // Stream over: abort every test so that handlers return, then wind down.
  done.store(true);
  hb_cv.notify_all();
  sessions_.abortAll();
  heartbeat.join();
  for (auto& t : handlers) t.join();
  grpc::Status gs = stream.finish();
  if (stopping_.load()) return {};
  return unavailable("stream to coordinator ended: " +
                     (gs.ok() ? std::string("closed by coordinator") : gs.error_message()));
}

}  // namespace gdrmesh
