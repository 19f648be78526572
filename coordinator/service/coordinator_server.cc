#include "coordinator/service/coordinator_server.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/units.h"
#include "convert.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;

grpc::Status toGrpc(const Status& st) {
  if (st.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (st.code()) {
    case Code::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case Code::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case Code::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case Code::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case Code::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case Code::kAborted:
      code = grpc::StatusCode::ABORTED;
      break;
    case Code::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case Code::kPermissionDenied:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case Code::kUnimplemented:
      code = grpc::StatusCode::UNIMPLEMENTED;
      break;
    default:
      code = grpc::StatusCode::INTERNAL;
      break;
  }
  std::string msg = st.message();
  if (!st.fix().empty()) msg += " (fix: " + st.fix() + ")";
  return grpc::Status(code, msg);
}

bool validWorkerName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

class CoordinatorServer::WorkerServiceImpl final : public pb::WorkerService::Service {
 public:
  explicit WorkerServiceImpl(CoordinatorServer& s) : s_(s) {}

  grpc::Status Connect(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<pb::CoordinatorMessage, pb::WorkerMessage>* stream) override {
    pb::WorkerMessage first;
    if (!stream->Read(&first)) return grpc::Status::OK;
    if (!first.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the first message on the worker stream must be Register");
    }
    const auto& reg = first.register_();
    if (reg.protocol_version() != 1) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "protocol_version " + std::to_string(reg.protocol_version()) +
                              " is not supported by this coordinator (speaks 1)");
    }
    if (!validWorkerName(reg.name())) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          "worker name '" + reg.name() + "': use 1-64 characters from A-Z a-z 0-9 . _ -");
    }
    const std::string name = reg.name();
    auto link = std::make_shared<WorkerLink>(
        name, [stream](const pb::CoordinatorMessage& m) { return stream->Write(m); },
        [ctx] { ctx->TryCancel(); });
    WorkerEntry e;
    e.name = name;
    e.peer = ctx->peer();
    e.connected_ms = nowUnixMs();
    e.last_heartbeat_ms = e.connected_ms;
    e.inventory = reg.inventory();
    e.link = link;
    Status added = s_.registry_.add(e);
    if (!added.ok()) {
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                          added.message() + " (fix: " + added.fix() + ")");
    }
    WorkerRecord rec;
    rec.name = name;
    rec.hostname = reg.inventory().hostname();
    google::protobuf::util::JsonPrintOptions jopt;
    jopt.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(reg.inventory(), &rec.inventory_json, jopt);
    rec.first_seen_ms = e.connected_ms;
    rec.last_seen_ms = e.connected_ms;
    Status st = s_.store_.upsertWorker(rec);
    if (!st.ok()) std::fprintf(stderr, "gdrmesh coordinator: %s\n", st.toString().c_str());

    pb::CoordinatorMessage hello;
    hello.mutable_registered()->set_worker_id(name);
    hello.mutable_registered()->set_heartbeat_interval_ms(
        static_cast<uint32_t>(s_.options_.heartbeat_interval_ms));
    // The link is not yet handed out to anyone else: no concurrent writer.
    stream->Write(hello);
    std::fprintf(stderr, "gdrmesh coordinator: worker %s registered from %s\n", name.c_str(),
                 e.peer.c_str());

    pb::WorkerMessage msg;
    while (stream->Read(&msg)) {
      if (msg.has_heartbeat()) {
        s_.registry_.heartbeat(name, nowUnixMs(), msg.heartbeat().active_tests());
      } else if (msg.has_reply()) {
        link->onReply(msg.reply());
      }
    }
    link->fail("(disconnected)");
    link->detachStream();
    s_.registry_.remove(name, link.get());
    std::fprintf(stderr, "gdrmesh coordinator: worker %s disconnected\n", name.c_str());
    return grpc::Status::OK;
  }

 private:
  CoordinatorServer& s_;
};

class CoordinatorServer::ControlServiceImpl final : public pb::ControlService::Service {
 public:
  explicit ControlServiceImpl(CoordinatorServer& s) : s_(s) {}

  grpc::Status ListWorkers(grpc::ServerContext*, const pb::ListWorkersRequest*,
                           pb::ListWorkersResponse* resp) override {
    for (const auto& e : s_.registry_.list()) {
      auto* w = resp->add_workers();
      w->set_name(e.name);
      w->set_state(e.online ? "online" : "offline");
      w->set_connected_ms(e.connected_ms);
      w->set_last_heartbeat_ms(e.last_heartbeat_ms);
      *w->mutable_inventory() = e.inventory;
      w->set_peer(e.peer);
      w->set_active_tests(e.active_tests);
    }
    return grpc::Status::OK;
  }

  grpc::Status RunTest(grpc::ServerContext*, const pb::RunTestRequest* req,
                       pb::RunTestResponse* resp) override {
    auto r = s_.runner_.run(*req);
    if (!r.ok()) return toGrpc(r.status());
    Status st = s_.storeResult(*r);
    if (!st.ok()) resp->set_store_error(st.toString());
    convert::toProto(*r, resp->mutable_result());
    return grpc::Status::OK;
  }

  grpc::Status ListResults(grpc::ServerContext*, const pb::ListResultsRequest* req,
                           pb::ListResultsResponse* resp) override {
    ResultQuery q;
    q.limit = req->limit() == 0 ? 50 : std::min<uint32_t>(req->limit(), 10000);
    q.worker = req->worker();
    q.run_id = req->run_id();
    if (req->status() != pb::TEST_STATUS_UNSPECIFIED) q.status = convert::fromProto(req->status());
    auto rows = s_.store_.queryResults(q);
    if (!rows.ok()) return toGrpc(rows.status());
    for (const auto& t : s_.unstored()) convert::toProto(t, resp->add_results());
    for (const auto& t : *rows) convert::toProto(t, resp->add_results());
    return grpc::Status::OK;
  }

 private:
  CoordinatorServer& s_;
};

CoordinatorServer::CoordinatorServer(CoordinatorOptions options, ResultStore& store)
    : options_(std::move(options)), store_(store), runner_(registry_, options_.runner) {}

CoordinatorServer::~CoordinatorServer() {
  shutdown();
}

Result<int> CoordinatorServer::start() {
  // Workers known from earlier runs are listed as offline until they connect again.
  auto known = store_.listWorkers();
  if (known.ok()) {
    for (const auto& w : *known) {
      pb::Inventory inv;
      (void)google::protobuf::util::JsonStringToMessage(w.inventory_json, &inv);
      registry_.addKnown(w.name, inv, w.last_seen_ms);
    }
  }
  worker_service_ = std::make_unique<WorkerServiceImpl>(*this);
  control_service_ = std::make_unique<ControlServiceImpl>(*this);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options_.listen, grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.RegisterService(worker_service_.get());
  builder.RegisterService(control_service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) {
    return unavailable("cannot listen on " + options_.listen,
                       "check --listen HOST:PORT: the address must be local and the port free");
  }
  monitor_ = std::thread([this] { monitor(); });
  return port;
}

void CoordinatorServer::shutdown() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  if (monitor_.joinable()) monitor_.join();
  for (auto& e : registry_.list()) {
    if (e.link) e.link->fail("(coordinator shutting down)");
  }
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

void CoordinatorServer::wait() {
  if (server_) server_->Wait();
}

Status CoordinatorServer::storeResult(TestResult& result) {
  auto id = store_.insertResult(result);
  if (id.ok()) {
    result.id = *id;
    return {};
  }
  std::lock_guard<std::mutex> lock(mu_);
  unstored_.push_back(result);
  std::fprintf(stderr, "gdrmesh coordinator: result %s kept in memory: %s\n",
               result.test_id.c_str(), id.status().toString().c_str());
  return id.status();
}

std::vector<TestResult> CoordinatorServer::unstored() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  return {unstored_.rbegin(), unstored_.rend()};
}

void CoordinatorServer::monitor() {
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_.load()) {
    cv_.wait_for(lock, interval, [this] { return stopping_.load(); });
    if (stopping_.load()) break;
    // Retry results the store refused earlier (disk full).
    while (!unstored_.empty()) {
      TestResult t = unstored_.front();
      lock.unlock();
      auto id = store_.insertResult(t);
      lock.lock();
      if (!id.ok()) break;
      unstored_.pop_front();
    }
    lock.unlock();
    const int64_t cutoff =
        nowUnixMs() - int64_t{options_.heartbeat_interval_ms} * options_.heartbeat_misses;
    for (const auto& e : registry_.stale(cutoff)) {
      if (e.link) {
        e.link->fail("(no heartbeat for " +
                     std::to_string(options_.heartbeat_interval_ms * options_.heartbeat_misses) +
                     " ms)");
      }
    }
    lock.lock();
  }
}

}  // namespace gdrmesh
