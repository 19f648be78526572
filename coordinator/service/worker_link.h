// One registered worker's command channel: sends CoordinatorCommands down the worker's stream
// and matches the CommandReplies coming back. When the worker is lost (stream ended, heartbeat
// timeout) every pending and future call fails at once with "worker lost".
//
// Thread contract: thread-safe. call() and wait() from any thread; onReply()/fail() from the
// stream's handler thread or the heartbeat monitor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/status.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh {

class WorkerLink {
 public:
  using Clock = std::chrono::steady_clock;
  // Writes one message on the worker's stream; false when the stream is broken.
  using Writer = std::function<bool(const v1::CoordinatorMessage&)>;

  WorkerLink(std::string worker, Writer writer, std::function<void()> cancel_stream);

  struct Pending;
  // Sends a command (request_id is assigned here). The reply is collected with wait().
  std::shared_ptr<Pending> call(v1::CoordinatorCommand command);
  // Waits for the reply until the deadline. Errors: worker lost (kUnavailable), deadline
  // (kDeadlineExceeded), or the worker's own failure Status from the reply.
  Result<v1::CommandReply> wait(const std::shared_ptr<Pending>& pending,
                                Clock::time_point deadline);
  // Non-blocking: true when the reply (or a failure) is in.
  bool ready(const std::shared_ptr<Pending>& pending);

  void onReply(const v1::CommandReply& reply);
  // Marks the worker lost: fails every pending call and cancels the stream.
  void fail(const std::string& reason);
  bool lost() const;
  // Forgets the stream (its handler is returning): later fail() calls no longer touch it.
  void detachStream();
  const std::string& worker() const { return worker_; }

 private:
  const std::string worker_;
  Writer writer_;
  std::function<void()> cancel_stream_;
  mutable std::mutex mu_;  // guards next_id_, pending_, lost_reason_, and writes
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::optional<std::string> lost_reason_;
  std::mutex cancel_mu_;  // guards cancel_stream_
};

struct WorkerLink::Pending {
  uint64_t request_id = 0;
  bool done = false;
  std::optional<v1::CommandReply> reply;
  Status failure;  // set when done without a reply
};

}  // namespace gdrmesh
