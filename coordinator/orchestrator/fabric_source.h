// The coordinator's InfiniBand fabric as it is now: the snapshot it started with (`--fabric`,
// the config's `fabric:`), replaced by each newer ok InfiniBand snapshot a discovery through the
// coordinator stores (`gdrmesh fabric discover --worker`). Sweeps read it at each test's start
// and at each round's counter reads, a single test (`gdrmesh test`) at its start, so paths come
// from the tables of the time the test ran; SweepFabric::source() says which snapshot that was
// ("fabric.json", "@12"). An adoption outlives a restart: at start, adoptStored() takes the
// newest stored snapshot a discovery would have adopted again, unless the configured one is newer.
//
// Thread contract: thread-safe; current() may run on any thread while replace() runs.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/sweep_fabric.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

class FabricSource {
 public:
  explicit FabricSource(std::shared_ptr<const SweepFabric> initial = nullptr)
      : fabric_(std::move(initial)) {}
  FabricSource(const FabricSource&) = delete;
  FabricSource& operator=(const FabricSource&) = delete;

  std::shared_ptr<const SweepFabric> current() const {
    MutexLock lock(mu_);
    return fabric_;
  }
  // From now on current() answers `next`; what already holds the old one keeps it.
  void replace(std::shared_ptr<const SweepFabric> next) {
    MutexLock lock(mu_);
    fabric_ = std::move(next);
  }
  // A newer snapshot (`source`: "@ID") replaces the current one, keeping its `fabric_hosts:`
  // mapping. Only over a current fabric and only with tables (a --no-lfts snapshot has no
  // paths): false, and nothing replaced, otherwise.
  bool adopt(fabric::Fabric next, const std::string& source) {
    if (next.routedLftEntries() == 0) return false;
    MutexLock lock(mu_);
    if (!fabric_) return false;
    fabric_ = std::make_shared<const SweepFabric>(std::move(next), fabric_->hostMapping(), source);
    return true;
  }
  // At the coordinator's start: the newest stored snapshot that adopt() took (ok, InfiniBand,
  // with tables; among the 64 newest ok snapshots) replaces the configured fabric again, unless
  // the configured one was discovered later (its discovered_ms; an operator who names a newer
  // file means it). Returns the line to log: which snapshot and why, or why the configured
  // fabric stays. Errors only from the store. Nothing to do without a current fabric.
  Result<std::string> adoptStored(FabricHistory& history);

 private:
  mutable Mutex mu_;
  std::shared_ptr<const SweepFabric> fabric_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdrmesh
