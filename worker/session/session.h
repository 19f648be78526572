// Pair-test sessions on a worker: one per test id. A session owns the buffer (and the host
// mirror of the staged path), the transport endpoint, the data pattern and the verification.
// The transports only move bytes; everything a result claims about integrity and about the
// data path is decided here.
//
// Thread contract: all SessionManager methods are thread-safe. Commands of one test arrive in
// order (prepare, connect, run..., verify, release), but release/abortAll may arrive while a
// run is in progress on another thread: they abort the endpoint and the run returns kAborted.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/status.h"
#include "common/types.h"
#include "worker/memory/buffer.h"
#include "worker/transport/transport.h"

namespace gdrmesh {

// Allocates test buffers. The worker's provider serves host memory always and GPU memory
// when the CUDA driver is present.
class MemoryProvider {
 public:
  virtual ~MemoryProvider() = default;
  virtual Result<std::unique_ptr<Buffer>> allocate(MemoryKind kind, int gpu, size_t size,
                                                   int numa_node) = 0;
};

// Host memory only (a worker without CUDA).
class HostMemoryProvider final : public MemoryProvider {
 public:
  Result<std::unique_ptr<Buffer>> allocate(MemoryKind kind, int gpu, size_t size,
                                           int numa_node) override;
};

// A side spec plus where this worker places host buffers.
struct SessionSpec : SideSpec {
  int numa_node = -1;
};

struct PreparedEndpoint {
  EndpointDesc desc;
  std::string buffer;                 // "host", "gpu:0"
  RegPath reg_path = RegPath::kHost;  // as it ran, staged included
};

struct VerifyOutcome {
  IntegrityReport integrity;
  double staging_seconds = 0;  // GPU <- host mirror copy on the staged path
};

class SessionManager {
 public:
  struct Options {
    bool allow_fault_injection = false;
    size_t max_sessions = 64;
  };
  SessionManager(MemoryProvider& memory, Options options);
  ~SessionManager();

  // Registers a transport; a kind may be registered once.
  void addTransport(std::unique_ptr<Transport> transport);
  // Transports that are viable here, and the reasons of the others.
  std::vector<TransportKind> viableTransports(std::vector<std::string>* notes) const;

  Result<PreparedEndpoint> prepare(const SessionSpec& spec);
  Result<uint32_t> connect(const std::string& test_id, const EndpointDesc& peer);
  Result<Measurement> run(const std::string& test_id, const RunSpec& spec);
  Result<VerifyOutcome> verify(const std::string& test_id, uint64_t length);
  // Aborts and frees a session. Unknown ids are fine (already released).
  void release(const std::string& test_id);
  // Aborts every session (coordinator lost).
  void abortAll();
  size_t active() const;

 private:
  struct Session;
  std::shared_ptr<Session> find(const std::string& test_id) const;
  Result<std::pair<std::shared_ptr<Session>, PreparedEndpoint>> prepareReserved(
      const SessionSpec& spec);

  MemoryProvider& memory_;
  const Options options_;
  std::map<TransportKind, std::unique_ptr<Transport>> transports_;
  mutable std::mutex mu_;  // guards sessions_
  std::map<std::string, std::shared_ptr<Session>> sessions_;
};

}  // namespace gdrmesh
