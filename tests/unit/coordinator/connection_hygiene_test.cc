// Connections that hold the coordinator's resources without doing anything (issue #23): a worker
// stream that never registers, a connection with no call, a peer that stalls in the handshake.
// Each is closed at its deadline; a registered worker and a client that calls again are not
// affected. A real CoordinatorServer on loopback (plaintext: the deadlines are the same with
// TLS) and a real gRPC client in the test.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "coordinator/service/coordinator_server.h"
#include "coordinator/store/sqlite_store.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "tests/support/stream_worker.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;
using std::chrono::milliseconds;

class ConnectionHygiene : public ::testing::Test {
 protected:
  void start(CoordinatorOptions opts) {
    opts.listen = "127.0.0.1:0";
    opts.self_check_interval_ms = 0;
    auto store = SqliteStore::open(":memory:");
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    server_ = std::make_unique<CoordinatorServer>(opts, *store_, *store_, clock_);
    auto port = server_->start();
    ASSERT_TRUE(port.ok()) << port.status().toString();
    address_ = "127.0.0.1:" + std::to_string(*port);
    port_ = *port;
  }
  void TearDown() override {
    if (server_) server_->shutdown();
  }

  ManualClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<CoordinatorServer> server_;
  std::string address_;
  int port_ = 0;
};

TEST_F(ConnectionHygiene, AWorkerStreamThatNeverRegistersIsCancelledAtTheRegistrationDeadline) {
  CoordinatorOptions opts;
  opts.register_deadline_ms = 10000;
  start(opts);
  auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  auto stub = pb::WorkerService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub->Connect(&ctx);
  std::mutex mu;
  std::condition_variable cv;
  bool ended = false;
  grpc::Status status;
  std::thread reader([&] {
    pb::CoordinatorMessage m;
    while (stream->Read(&m)) {
    }
    grpc::Status st = stream->Finish();
    std::lock_guard<std::mutex> lock(mu);
    status = st;
    ended = true;
    cv.notify_all();
  });
  // Nothing is sent. The coordinator's clock moves past the deadline (again, until the stream's
  // timer, armed when the server saw the call, has fired).
  bool done = false;
  for (int i = 0; i < 100 && !done; ++i) {
    clock_.advance(milliseconds(10001));
    std::unique_lock<std::mutex> lock(mu);
    done = cv.wait_for(lock, milliseconds(100), [&] { return ended; });
  }
  if (!done) ctx.TryCancel();
  reader.join();
  EXPECT_TRUE(done) << "a stream that never registered was still open after 100 deadlines";
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  EXPECT_TRUE(server_->registry().entries().empty());
}

TEST_F(ConnectionHygiene, AConnectionWithNoCallIsClosedAfterTheIdleTimeAndItsClientCallsAgain) {
  CoordinatorOptions opts;
  opts.max_connection_idle_ms = 300;
  start(opts);
  // A registered worker's stream is a call: never idle.
  testing::StreamWorker worker(address_, "w1", testing::StreamWorker::emulatedInventory("h1"));
  ASSERT_TRUE(worker.waitRegistered(milliseconds(10000)));

  auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  ASSERT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10)));
  ASSERT_EQ(channel->GetState(false), GRPC_CHANNEL_READY);
  EXPECT_TRUE(channel->WaitForStateChange(
      GRPC_CHANNEL_READY, std::chrono::system_clock::now() + std::chrono::seconds(15)))
      << "a connection with no call stayed open";
  EXPECT_NE(channel->GetState(false), GRPC_CHANNEL_READY);

  // The client's next call reconnects by itself.
  auto stub = pb::ControlService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pb::ListWorkersRequest req;
  pb::ListWorkersResponse resp;
  grpc::Status st = stub->ListWorkers(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.workers_size(), 1);
  EXPECT_EQ(resp.workers(0).name(), "w1");
  // Several idle times later the worker is still connected.
  EXPECT_FALSE(worker.waitEnded(milliseconds(1500)));
}

TEST_F(ConnectionHygiene, APeerThatStallsInTheHandshakeIsClosedAtTheHandshakeTimeout) {
  CoordinatorOptions opts;
  opts.handshake_timeout_ms = 300;
  start(opts);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port_));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  const char first[] = "PRI * HTTP/2.0";  // the start of a preface, never finished
  ASSERT_EQ(::send(fd, first, sizeof(first) - 1, MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof(first) - 1));
  // The server may send its own preface first; what counts is the end of the connection. The
  // bound stays under the keepalive's own end of it (a ping unanswered: 10 s + 5 s).
  bool closed = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (!closed && std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buf[256];
    ssize_t r = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    closed = r == 0 || (r < 0 && errno == ECONNRESET);
  }
  ::close(fd);
  EXPECT_TRUE(closed) << "a peer that never finished its handshake stayed connected";
}

}  // namespace
}  // namespace gdrmesh
