// WorkerChannel over a worker's gRPC stream: converts each domain command to its wire form and
// each reply back (proto/convert), once, at this edge.
#pragma once

#include <memory>
#include <string>

#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/service/worker_link.h"

namespace gdrmesh {

class GrpcWorkerChannel final : public WorkerChannel {
 public:
  explicit GrpcWorkerChannel(std::shared_ptr<WorkerLink> link) : link_(std::move(link)) {}

  const std::string& worker() const override { return link_->worker(); }
  bool lost() const override { return link_->lost(); }
  std::unique_ptr<LossSubscription> onLost(LossSignal::Callback on_lost) override {
    return link_->onLost(std::move(on_lost));
  }
  void prepare(const PrepareCommand& c, Deadline deadline, Done<EndpointDesc> done) override;
  void prepareFinishing(const PrepareCommand& c, Deadline deadline, Done<EndpointDesc> done,
                        Deadline finish_deadline, Done<SideOutcome> finished) override;
  void connect(const std::string& test_id, const EndpointDesc& peer, Deadline deadline,
               Done<SideOutcome> done) override;
  void run(const std::string& test_id, const RunSpec& spec, Deadline deadline,
           Done<SideOutcome> done) override;
  void verify(const std::string& test_id, uint64_t length, uint64_t reveal_seed, Deadline deadline,
              Done<SideOutcome> done) override;
  void release(const std::string& test_id, const std::string& reason, Deadline deadline,
               Done<bool> done) override;
  void start(const StartCommand& c, Deadline deadline, Done<SideOutcome> done) override;
  void finish(const FinishCommand& c, Deadline deadline, Done<SideOutcome> done) override;
  void discoverFabric(const fabric::DiscoverRequest& request, Deadline deadline,
                      Done<fabric::DiscoverOutcome> done) override;
  void readPortCounters(const fabric::CounterReadRequest& request, Deadline deadline,
                        Done<fabric::CounterReadOutcome> done) override;

  const std::shared_ptr<WorkerLink>& link() const { return link_; }

 private:
  std::shared_ptr<WorkerLink> link_;
};

}  // namespace gdrmesh
