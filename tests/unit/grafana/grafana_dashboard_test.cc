// Every metric the Grafana dashboard queries is one the coordinator's /metrics prints (for a
// sweep with passes, failures and suspects, so that every family has series) and one that
// docs/api.md documents; every label a legend uses is a label of that metric.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "coordinator/http/status_http_server.h"

namespace gdrmesh {
namespace {

std::string readSource(const std::string& rel) {
  std::ifstream f(std::string(GDRMESH_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Query {
  std::string expr;
  std::string legend;
};

void collectQueries(const nlohmann::json& j, std::vector<Query>* out) {
  if (j.is_object()) {
    // Panel targets ("expr") and query variables of the templating; a datasource variable's
    // "query" is a plugin name ("prometheus"), not PromQL.
    const bool query_variable = j.contains("type") && j["type"] == "query";
    for (const char* key : {"expr", "query", "definition"}) {
      if (std::string(key) != "expr" && !query_variable) continue;
      if (j.contains(key) && j[key].is_string()) {
        out->push_back(
            {j[key].get<std::string>(), j.contains("legendFormat") && j["legendFormat"].is_string()
                                            ? j["legendFormat"].get<std::string>()
                                            : ""});
      }
    }
    for (const auto& [k, v] : j.items()) collectQueries(v, out);
  } else if (j.is_array()) {
    for (const auto& v : j) collectQueries(v, out);
  }
}

std::set<std::string> metricNames(const std::string& text) {
  std::set<std::string> out;
  static const std::regex re("gdrmesh_[a-z0-9_]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    out.insert(it->str());
  }
  return out;
}

// metric name -> label names, from the sample lines of a Prometheus text exposition.
std::map<std::string, std::set<std::string>> seriesLabels(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream in(text);
  static const std::regex label("([a-z_]+)=\"");
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l[0] == '#') continue;
    const auto end = l.find_first_of("{ ");
    const std::string name = l.substr(0, end);
    auto& labels = out[name];
    if (end != std::string::npos && l[end] == '{') {
      const std::string body = l.substr(end, l.find('}') - end);
      for (auto it = std::sregex_iterator(body.begin(), body.end(), label);
           it != std::sregex_iterator(); ++it) {
        labels.insert((*it)[1].str());
      }
    }
  }
  return out;
}

PairVerdict verdict(const std::string& src, const std::string& dst, VerdictKind k) {
  PairVerdict v;
  v.src = src;
  v.dst = dst;
  v.verdict = k;
  v.value = 90;
  v.unit = "Gb/s";
  v.message_size = 1 << 20;
  return v;
}

std::string fullMetrics() {
  WorkerSummary w;
  w.name = "a";
  w.state = "online";
  SweepReportData r;
  r.progress.id = "s-1";
  r.progress.state = SweepState::kFinished;
  r.progress.verdict = "FAIL";
  r.progress.started_ms = 1000;
  r.progress.finished_ms = 61000;
  r.progress.tests_total = r.progress.tests_done = 2;
  r.progress.tests_failed = 1;
  r.verdicts = {verdict("a", "b", VerdictKind::kPass), verdict("a", "c", VerdictKind::kFail)};
  r.suspects = {{"host", "c", 0.9, {"failed with 1 of 1 partners"}}};
  return metricsText({w}, r);
}

TEST(GrafanaDashboard, EveryQueriedMetricIsServedAndDocumented) {
  const std::string dashboard = readSource("deploy/grafana/gdrmesh.json");
  ASSERT_FALSE(dashboard.empty()) << "deploy/grafana/gdrmesh.json not found";
  auto j = nlohmann::json::parse(dashboard);
  std::vector<Query> queries;
  collectQueries(j, &queries);
  ASSERT_GE(queries.size(), 5u) << "the dashboard has panels with queries";

  const std::string metrics = fullMetrics();
  const auto served = seriesLabels(metrics);
  const std::string docs = readSource("docs/api.md");
  ASSERT_FALSE(docs.empty());
  std::set<std::string> queried;
  for (const auto& q : queries) {
    const auto names = metricNames(q.expr);
    EXPECT_FALSE(names.empty()) << "a query of no gdrmesh metric: " << q.expr;
    for (const auto& name : names) {
      queried.insert(name);
      auto it = served.find(name);
      ASSERT_NE(it, served.end()) << "the dashboard queries " << name
                                  << " which /metrics does not print:\n"
                                  << metrics;
      EXPECT_NE(docs.find("`" + name + "`"), std::string::npos)
          << name << " is not documented in docs/api.md";
      // {{label}} in a legend must be a label of the metric queried.
      static const std::regex legend_label("\\{\\{([a-z_]+)\\}\\}");
      for (auto l = std::sregex_iterator(q.legend.begin(), q.legend.end(), legend_label);
           l != std::sregex_iterator(); ++l) {
        EXPECT_EQ(it->second.count((*l)[1].str()), 1u)
            << "legend {{" << (*l)[1].str() << "}} of " << q.expr << " is not a label of " << name;
      }
    }
  }
  EXPECT_GE(queried.size(), 5u);
}

// The other direction: every family /metrics prints is documented (so that a dashboard author
// can find it).
TEST(GrafanaDashboard, EveryServedMetricIsDocumented) {
  const std::string docs = readSource("docs/api.md");
  for (const auto& [name, labels] : seriesLabels(fullMetrics())) {
    EXPECT_NE(docs.find("`" + name + "`"), std::string::npos) << name << " undocumented";
  }
}

}  // namespace
}  // namespace gdrmesh
