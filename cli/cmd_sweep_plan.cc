// `gdrmesh sweep plan --pattern cover|bisection --fabric FILE` (docs/fabric.md): the rounds of a
// `cover` or `bisection` sweep, planned from a saved snapshot without running anything; an LLDP
// (RoCE) snapshot's estimated cover is cli/fabric_lldp.cc's. No coordinator, no device.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/fabric_cli.h"
#include "cli/fabric_lldp.h"
#include "cli/output.h"
#include "common/fabric/bisection.h"
#include "common/fabric/cover.h"
#include "common/fabric/fabric.h"

namespace gdrmesh::cli {
namespace {

struct SweepPlanArgs {
  std::string pattern;
  std::string file;  // --fabric
  int max_rounds = 64;
  std::string ca_order;  // --ca-order: OpenSM's opensm-ftree-ca-order.dump
  std::string output = "table";
};

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

nlohmann::json bisectionPlanJson(const fabric::BisectionPlan& plan, double ms) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : plan.pairs) {
    pairs.push_back({{"a", p.a},
                     {"a_port", p.a_port},
                     {"a_lid", p.a_lid},
                     {"b", p.b},
                     {"b_port", p.b_port},
                     {"b_lid", p.b_lid}});
  }
  nlohmann::json rounds = nlohmann::json::array();
  rounds.push_back(std::move(pairs));
  return {{"pattern", "bisection"},
          {"hosts", plan.hosts},
          {"levels", plan.levels},
          {"top_switches", plan.top},
          {"pods", plan.pods},
          {"pods_a", plan.pods_a},
          {"half_a", plan.half_a},
          {"half_b", plan.half_b},
          {"sitting_out", plan.sitting_out},
          {"top_links_a", plan.top_links_a},
          {"top_links_b", plan.top_links_b},
          {"top_gbps_a", plan.top_gbps_a},
          {"top_gbps_b", plan.top_gbps_b},
          {"bisection_gbps", plan.bound_gbps},
          {"planning_ms", ms},
          {"rounds", std::move(rounds)}};
}

int runBisectionPlan(const SweepPlanArgs& a, const fabric::Fabric& f) {
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = fabric::planBisection(f);
  const double ms = msSince(t0);
  if (!plan.ok()) return fabricFail("plan", plan.status().withContext("pattern bisection"));
  if (a.output == "json") {
    std::cout << bisectionPlanJson(*plan, ms).dump(1) << "\n";
    return kExitOk;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "bisection: 1 round, %zu pairs across the top level (%zu switches of %d levels) "
                "between %zu and %zu hosts (%zu of %zu pods); bisection bandwidth %.1f Gb/s per "
                "direction (top-level links: half A %zu, %.1f Gb/s; half B %zu, %.1f Gb/s; "
                "signalling rates), planned in %.1f ms",
                plan->pairs.size(), plan->top.size(), plan->levels, plan->half_a.size(),
                plan->half_b.size(), plan->pods_a, plan->pods, plan->bound_gbps, plan->top_links_a,
                plan->top_gbps_a, plan->top_links_b, plan->top_gbps_b, ms);
  std::vector<std::vector<std::string>> rows{{"A", "B"}};
  for (const auto& p : plan->pairs) {
    rows.push_back({p.a + "/" + std::to_string(p.a_port), p.b + "/" + std::to_string(p.b_port)});
  }
  std::cout << "round 1: " << plan->pairs.size() << " pairs\n" << renderTable(rows) << "\n";
  for (const auto& h : plan->sitting_out) std::cout << "sits out (no partner): " << h << "\n";
  std::cout << line << "\n";
  return kExitOk;
}

// --ca-order FILE: OpenSM's compute-node order (fabric::parseFtreeCaOrder); errors name the file.
Result<std::vector<uint16_t>> readCaOrderOption(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return invalidArgument("--ca-order " + path + ": cannot be read",
                           "give the opensm-ftree-ca-order.dump OpenSM wrote in its log file's "
                           "directory");
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto order = fabric::parseFtreeCaOrder(text.str());
  if (!order.ok()) return order.status().withContext("--ca-order " + path);
  return order;
}

nlohmann::json coverPlanJson(const fabric::CoverPlan& plan, size_t all_pairs_rounds, double ms) {
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& r : plan.rounds) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& p : r) {
      pairs.push_back({{"a", p.a},
                       {"a_port", p.a_port},
                       {"a_lid", p.a_lid},
                       {"b", p.b},
                       {"b_port", p.b_port},
                       {"b_lid", p.b_lid},
                       {"new_links", p.new_links}});
    }
    rounds.push_back(std::move(pairs));
  }
  return {{"pattern", "cover"},
          {"hosts", plan.hosts},
          {"directed_links", plan.directed_links},
          {"routable", plan.routable},
          {"covered", plan.covered},
          {"uncovered", plan.uncovered},
          {"unroutable", plan.unroutable},
          {"lower_bound", plan.lower_bound},
          {"leaf_bound", plan.leaf_bound},
          {"tables_bound", plan.tables_bound},
          {"source_bound", plan.source_bound},
          {"source_bound_why", plan.source_bound_why},
          {"all_pairs_rounds", all_pairs_rounds},
          {"planning_ms", ms},
          {"rounds", std::move(rounds)}};
}

void printCoverPlan(const fabric::CoverPlan& plan, int max_rounds, size_t all_pairs_rounds,
                    double ms) {
  for (size_t i = 0; i < plan.rounds.size(); ++i) {
    std::vector<std::vector<std::string>> rows{{"A", "B", "NEW_LINKS"}};
    for (const auto& p : plan.rounds[i]) {
      rows.push_back({p.a + "/" + std::to_string(p.a_port), p.b + "/" + std::to_string(p.b_port),
                      std::to_string(p.new_links)});
    }
    std::cout << "round " << i + 1 << ": " << plan.rounds[i].size() << " pairs\n"
              << renderTable(rows) << "\n";
  }
  for (const auto& u : plan.uncovered) std::cout << "not covered: " << u << "\n";
  if (!plan.uncovered.empty() && plan.lower_bound > max_rounds) {
    // Why the plan stopped short: the tables need more rounds than it was allowed.
    std::cout << "the tables need at least " << plan.lower_bound << " rounds"
              << (plan.source_bound == plan.lower_bound ? " (" + plan.source_bound_why + ")"
                                                        : std::string())
              << "; --max-rounds " << max_rounds << " stopped the plan (fix: --max-rounds "
              << plan.lower_bound << " or more, or route with OpenSM's ftree told its roots: "
              << "docs/fabric.md)\n";
  }
  for (const auto& u : plan.unroutable) {
    std::cout << "no route crosses (no test can load it): " << u << "\n";
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "cover: %zu rounds (lower bound %d; all-pairs %zu) cover %zu of %zu routable "
                "directed inter-switch links (%zu in all), %zu hosts, planned in %.1f ms\n",
                plan.rounds.size(), plan.lower_bound, all_pairs_rounds, plan.covered, plan.routable,
                plan.directed_links, plan.hosts, ms);
  std::cout << line;
}

int runCoverPlan(const SweepPlanArgs& a, const fabric::Fabric& f) {
  fabric::CoverOptions o;
  o.max_rounds = a.max_rounds;
  if (!a.ca_order.empty()) {
    auto order = readCaOrderOption(a.ca_order);
    if (!order.ok()) return fabricFail("plan", order.status());
    o.ca_order = std::move(*order);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = fabric::planCover(f, o);
  const double ms = msSince(t0);
  if (!plan.ok()) return fabricFail("plan", plan.status());
  const size_t all_pairs_rounds = plan->hosts % 2 == 0 ? plan->hosts - 1 : plan->hosts;
  if (a.output == "json") {
    std::cout << coverPlanJson(*plan, all_pairs_rounds, ms).dump(1) << "\n";
  } else {
    printCoverPlan(*plan, a.max_rounds, all_pairs_rounds, ms);
  }
  return plan->uncovered.empty() ? kExitOk : kExitFailed;
}

int runSweepPlan(const SweepPlanArgs& a) {
  if (a.pattern != "cover" && a.pattern != "bisection") {
    return fabricFail("plan", invalidArgument("--pattern " + a.pattern +
                                                  ": `sweep plan` plans cover and bisection",
                                              "use --pattern cover or bisection --fabric FILE"));
  }
  if (a.file.empty()) {
    return fabricFail(
        "plan", invalidArgument("--pattern " + a.pattern +
                                    " is planned from a fabric: --fabric "
                                    "FILE is missing",
                                "give --fabric FILE, a snapshot `gdrmesh fabric discover --save "
                                "FILE` wrote"));
  }
  auto eth = loadLldpSnapshotFile(a.file);
  if (!eth.ok()) return fabricFail("plan", eth.status());
  if (eth->has_value()) return runLldpPlan(**eth, a.pattern, a.max_rounds, a.output);
  auto f = fabric::loadFabricFile(a.file);
  if (!f.ok()) return fabricFail("plan", f.status());
  if (a.pattern == "bisection") return runBisectionPlan(a, *f);
  return runCoverPlan(a, *f);
}

}  // namespace

void registerSweepPlan(CLI::App* sweep, Action* action) {
  auto a = std::make_shared<SweepPlanArgs>();
  auto* cmd = sweep->add_subcommand(
      "plan", "Print a sweep's rounds and pairs without running it (--pattern cover or bisection)");
  cmd->add_option("--pattern", a->pattern,
                  "cover: load every inter-switch link; bisection: half the hosts to the other "
                  "half across the top level")
      ->required();
  cmd->add_option("--fabric", a->file, "fabric snapshot (fabric discover -o json); required");
  cmd->add_option("--max-rounds", a->max_rounds, "stop after this many rounds (default 64)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--ca-order", a->ca_order,
                  "cover: OpenSM's opensm-ftree-ca-order.dump; its order seeds the first round");
  cmd->add_option("-o,--output", a->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->callback([action, a] { *action = [a] { return runSweepPlan(*a); }; });
}

}  // namespace gdrmesh::cli
