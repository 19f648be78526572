// Fuzzes the coordinator's conversion of a sweep request (ControlService.StartSweep and the
// schedules' stored specs): bytes parsed as a gdrmesh.v1.SweepSpec, converted once
// (coordinator/service/sweep_convert.h), then planned over five fixed workers. Any bytes must
// give a spec or an error Status, never a crash. A violation aborts (a finding):
//   - a spec that converts must be within every limit (SweepLimits, PairTestLimits for the
//     template at every size) and name only valid workers;
//   - it must survive the round trips the coordinator makes with it: domain -> wire -> domain
//     (the same wire message again) and the stored form (StoredSweepCodec: the domain encoding,
//     the same spec again), and a row an older build stored (protobuf's JSON mapping,
//     ProtoJsonSweepCodec) must still read as the same spec;
//   - its plan (when small enough to make per input) keeps rounds in range, grouped as the
//     planner documents, and never puts a worker into two tests of one round (all-pairs, random).
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/pair_spec.h"
#include "coordinator/orchestrator/planner.h"
#include "coordinator/service/sweep_convert.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace {

using google::protobuf::util::MessageDifferencer;

std::vector<gdrmesh::WorkerStatus> workers() {
  std::vector<gdrmesh::WorkerStatus> out;
  for (const char* name : {"h1", "h2", "h3", "h4", "h5"}) {
    gdrmesh::WorkerStatus w;
    w.name = name;
    w.state = "online";
    w.inventory.hostname = std::string(name) + "-host";
    w.inventory.transports = {"emulated"};
    for (const char* nic : {"mlx5_0", "mlx5_1"}) {
      gdrmesh::Nic n;
      n.name = nic;
      w.inventory.nics.push_back(n);
    }
    gdrmesh::Gpu g;
    g.index = 0;
    g.name = "fuzz GPU";
    w.inventory.gpus.push_back(g);
    w.labels["rack"] = name[1] < '3' ? "r1" : "r2";
    out.push_back(std::move(w));
  }
  return out;
}

void checkLimits(const gdrmesh::SweepSpec& s) {
  const gdrmesh::SweepLimits lim;
  const gdrmesh::PairTestLimits test_limits;
  if (s.sizes.size() > lim.sizes || s.retries > lim.retries ||
      s.random_rounds > lim.random_rounds || s.hosts.size() > lim.hosts ||
      s.exclude.size() > lim.hosts || s.pairs.size() > lim.pairs ||
      s.select.size() > lim.selectors || s.config_yaml.size() > lim.config_yaml ||
      !gdrmesh::checkText("name", s.name, lim.text).ok() ||
      !gdrmesh::checkText("baseline", s.baseline, lim.text).ok()) {
    std::abort();
  }
  for (const auto& h : s.hosts) {
    if (!gdrmesh::validWorkerName(h)) std::abort();
  }
  for (const auto& h : s.exclude) {
    if (!gdrmesh::validWorkerName(h)) std::abort();
  }
  for (const auto& [a, b] : s.pairs) {
    if (!gdrmesh::validWorkerName(a.worker) || !gdrmesh::validWorkerName(b.worker)) std::abort();
  }
  for (const auto& [k, v] : s.select) {
    if (k.empty() || !gdrmesh::checkText("k", k, lim.label_key).ok() ||
        !gdrmesh::checkText("v", v, lim.label_value).ok()) {
      std::abort();
    }
  }
  if (s.pattern_from_config) return;  // the config's sweeps are checked when it is parsed
  gdrmesh::PairTestSpec probe = s.test;
  probe.initiator.worker = probe.target.worker = "x";
  if (!gdrmesh::validatePairTestSpec(probe, test_limits).ok()) std::abort();
  for (uint64_t size : s.sizes) {
    probe.message_size = size;
    if (size == 0 || !gdrmesh::validatePairTestSpec(probe, test_limits).ok()) std::abort();
  }
}

void checkRoundTrips(const gdrmesh::SweepSpec& s) {
  gdrmesh::v1::SweepSpec wire;
  gdrmesh::convert::toProto(s, &wire);
  auto again = gdrmesh::convert::fromProto(wire);
  if (!again.ok()) std::abort();  // the coordinator's own form of an accepted spec is refused
  gdrmesh::v1::SweepSpec wire2;
  gdrmesh::convert::toProto(*again, &wire2);
  if (!MessageDifferencer::Equals(wire, wire2)) std::abort();
  const gdrmesh::convert::StoredSweepCodec stored;
  const std::string text = stored.encode(s);
  auto decoded = stored.decode(text);
  if (!decoded.ok() || stored.encode(*decoded) != text) std::abort();
  // What an older build stored of the same spec reads as the same spec.
  auto old_row = stored.decode(gdrmesh::convert::ProtoJsonSweepCodec().encode(s));
  if (!old_row.ok() || stored.encode(*old_row) != text) std::abort();
}

void checkPlan(const gdrmesh::SweepSpec& s) {
  // Plans of the size a fuzz input may make cheaply; a large one is the planner tests' job.
  if (s.pattern_from_config || s.random_rounds > 16 || s.pairs.size() > 64 || s.sizes.size() > 4) {
    return;
  }
  static const std::vector<gdrmesh::WorkerStatus> ws = workers();
  auto plan = gdrmesh::planSweep(s, ws);
  if (!plan.ok()) return;
  // Grouped by slot round (round / sizes never decreases: planner.h), each size its own round.
  const int n_sizes = s.sizes.empty() ? 1 : static_cast<int>(s.sizes.size());
  int slot_round = -1;
  std::map<int, std::set<std::string>> busy;
  for (const auto& t : plan->tests) {
    if (t.round < 0 || t.round >= plan->rounds || t.round / n_sizes < slot_round) std::abort();
    slot_round = t.round / n_sizes;
    if (s.pattern != gdrmesh::SweepPattern::kPairs &&
        s.pattern != gdrmesh::SweepPattern::kLoopback &&
        s.pattern != gdrmesh::SweepPattern::kRails) {
      // all-pairs and random: whole hosts are the resource, one test each per round.
      auto& b = busy[t.round];
      if (!b.insert(t.initiator.worker).second || !b.insert(t.target.worker).second) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gdrmesh::v1::SweepSpec in;
  if (!in.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto spec = gdrmesh::convert::fromProto(in);
  if (!spec.ok()) {
    if (spec.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  checkLimits(*spec);
  checkRoundTrips(*spec);
  checkPlan(*spec);
  return 0;
}
