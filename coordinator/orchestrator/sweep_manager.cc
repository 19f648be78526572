#include "coordinator/orchestrator/sweep_manager.h"

#include <utility>

namespace gdrmesh {

SweepManager::SweepManager(WorkerDirectory& workers, Clock& clock, SweepStore& sweeps,
                           ResultStore& results, ResultWriter& writer, const SweepCodec& codec,
                           ConfigParser parse_config, SweepManagerOptions options)
    : board_(clock),
      runner_(SweepDeps{workers, clock, sweeps, results, writer, codec, parse_config}, board_,
              std::move(options)),
      reports_(SweepDeps{workers, clock, sweeps, results, writer, codec, std::move(parse_config),
                         runner_.deps().link_counters},
               board_),
      queue_(runner_, board_) {}

SweepManager::~SweepManager() {
  shutdown();
}

void SweepManager::shutdown() {
  queue_.shutdown();
}

Result<SweepProgress> SweepManager::start(const SweepSpec& spec) {
  return queue_.start(spec);
}

Result<SweepProgress> SweepManager::cancel(const std::string& id) {
  if (auto p = queue_.cancel(id)) return *p;
  auto p = reports_.progress(id);
  if (!p.ok()) return p.status();
  return failedPrecondition("sweep " + id + " is " + toString(p->state) + ", not running",
                            "only a queued or running sweep can be cancelled");
}

Result<SweepProgress> SweepManager::progress(const std::string& id) {
  return reports_.progress(id);
}

Result<SweepReportData> SweepManager::report(const std::string& id, const SweepReportQuery& query) {
  return reports_.report(id, query);
}

Result<SweepReportData> SweepManager::judge(const std::string& id, const std::string& config_yaml,
                                            const std::string& baseline, VerdictFilter filter,
                                            VerdictPage page) {
  return reports_.judge(id, config_yaml, baseline, filter, page);
}

Result<std::vector<SweepProgress>> SweepManager::list(uint32_t limit) {
  return reports_.list(limit);
}

Status SweepManager::awaitResults(const std::string& id) {
  return reports_.awaitResults(id);
}

bool SweepManager::running() const {
  return queue_.busy();
}

Result<std::pair<SweepProgress, uint64_t>> SweepManager::waitForChange(const std::string& id,
                                                                       uint64_t version,
                                                                       Clock::TimePoint deadline) {
  auto s = board_.find(id);
  if (!s) {
    GDR_ASSIGN_OR_RETURN(SweepProgress p, reports_.progress(id));
    return std::make_pair(p, uint64_t{0});
  }
  return board_.waitForChange(s, version, deadline);
}

void SweepManager::resumeInterrupted() {
  queue_.resumeInterrupted();
}

}  // namespace gdrmesh
