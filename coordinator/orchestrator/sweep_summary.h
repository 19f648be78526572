// What a sweep ran and what it measured, summed up for whoever reads its report: the parts it
// ran (an acceptance run runs each sweep of its config in turn) and, per (op, mode, message
// size), the spread of its figures over pairs. Pure functions over domain types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

// One sweep of an acceptance run's config (or a plain sweep's own spec): what it ran, and which
// tests of the plan are its: plan indexes [plan_begin, plan_begin + planned).
struct SweepPart {
  uint32_t index = 0;  // position under the config's `sweeps:` (0 for a plain sweep)
  SweepSpec spec;      // as it ran: the run's hosts, exclude and select narrow the config's
  uint64_t plan_begin = 0;
  uint64_t planned = 0;
  bool planned_known = false;  // false: stored before sweeps recorded their parts
};

// The parts of a sweep. `config_sweeps`: the config's `sweeps:` (used when the spec takes its
// pattern from the config); `planned`: tests planned per part, as the plan stored them (their
// ranges stay unknown when there is not one count per part).
std::vector<SweepPart> sweepParts(const SweepSpec& spec,
                                  const std::vector<SweepSpec>& config_sweeps,
                                  const std::vector<uint64_t>& planned);

// The parts an acceptance run plans: each config sweep, narrowed by the run's hosts, exclude
// and select where it names none of its own. A plain sweep is its own one part.
std::vector<SweepSpec> partSpecs(const SweepSpec& spec,
                                 const std::vector<SweepSpec>& config_sweeps);

struct FigurePair {
  std::string src, dst;  // WORKER/NIC as tested
  double value = 0;
};
struct FigureHost {
  std::string host;   // worker
  double median = 0;  // over the pairs it took part in (either side)
  uint32_t pairs = 0;
};
// The figures of one (op, mode, message size) over every pair that has one (retests left
// out): what a sweep measured, even when every verdict is PASS.
struct FigureSummary {
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  uint64_t message_size = 0;
  std::string unit;  // "Gb/s" (higher is better) or "us" (lower is better)
  uint32_t pairs = 0;
  double min = 0, median = 0, max = 0;
  std::vector<FigurePair> worst;        // worst first: lowest Gb/s, highest us
  std::vector<FigureHost> worst_hosts;  // worst median first: lowest Gb/s, highest us
};
// Groups in (op, mode, size) order; at most `keep` worst pairs and hosts each.
std::vector<FigureSummary> summariseFigures(const std::vector<PairVerdict>& verdicts,
                                            size_t keep = 3);

// summariseFigures one verdict at a time, keeping only what the figures need (16 bytes a
// verdict, not the verdict): a sweep's end sums up 523,776 verdicts as it stores them.
class FigureAccumulator {
 public:
  void add(const PairVerdict& v);
  // The same for a verdict's figure given by parts: `src` and `dst` are endpointId()s.
  void add(Op op, Mode mode, uint64_t message_size, const std::string& unit, double value,
           uint32_t src, uint32_t dst);
  // The id of an endpoint's name (WORKER/NIC), for add() by parts.
  uint32_t endpointId(const std::string& endpoint) { return idOf(endpoint); }
  std::vector<FigureSummary> result(size_t keep = 3) const;

 private:
  struct Entry {
    double value = 0;
    uint32_t src = 0, dst = 0;  // names_ indexes
  };
  using GroupKey = std::tuple<int, int, uint64_t, std::string>;  // op, mode, size, unit
  uint32_t idOf(const std::string& endpoint);
  std::map<GroupKey, std::vector<Entry>> groups_;
  GroupKey last_key_;                   // add() by parts: the group of the row before
  std::vector<Entry>* last_ = nullptr;  // its list in groups_
  std::map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
};

// The figures of a judged sweep's report straight from its rows: what FigureAccumulator::add
// over every verdictOf(rows, verdicts, i) gives (values made finite, as stored rows read back),
// without making each PairVerdict (0.6 s of the end of a 1,024-host sweep).
std::vector<FigureSummary> reportFigures(const JudgeRows& rows);

// The figures as a stored report keeps them (SweepReportSummary::figures_json) and back;
// nullopt for text that is not such a document. Numbers round-trip exactly.
std::string figuresJson(const std::vector<FigureSummary>& figures);
std::optional<std::vector<FigureSummary>> figuresFromJson(const std::string& text);

}  // namespace gdrmesh
