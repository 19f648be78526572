#include "cli/report/acceptance_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "cli/report/matrix.h"
#include "common/units.h"

namespace gdrmesh::report {
namespace {

// ------------------------------------------------------------------ helpers

std::string num(double v, int precision = 2) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", precision, v);
  return buf;
}

std::string when(int64_t ms) {
  return ms > 0 ? formatRfc3339(ms) : "-";
}

std::string duration(double seconds) {
  if (seconds < 0) return "-";
  auto total = static_cast<long long>(std::llround(seconds));
  char buf[48];
  if (total < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", total);
  } else if (total < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", total / 60, total % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm%02llds", total / 3600, (total % 3600) / 60,
                  total % 60);
  }
  return buf;
}

std::string joined(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

std::string orDash(const std::string& s) {
  return s.empty() ? "-" : s;
}

// A cell of a table: text (escaped by the writer), a class for HTML colouring, a tooltip.
struct Cell {
  std::string text;
  std::string cls;
  // Implicit on purpose: rows read as lists of strings ({"Sweep", p.id}).
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT(google-explicit-constructor): see above
  Cell(const char* t) : text(t) {}             // NOLINT(google-explicit-constructor): see above
  Cell(std::string t, std::string c) : text(std::move(t)), cls(std::move(c)) {}
};
using Row = std::vector<Cell>;

struct ListItem {
  std::string text;
  std::vector<std::string> sub;
  std::string cls;
};

// The report's content is written once, through this interface; Markdown and HTML differ only
// in how each block is drawn. Every string passed in is raw: the writer escapes it.
class Writer {
 public:
  virtual ~Writer() = default;
  virtual void title(const std::string& text, const std::string& verdict) = 0;
  virtual void heading(const std::string& text) = 0;
  virtual void para(const std::string& text) = 0;
  virtual void table(const Row& header, const std::vector<Row>& rows) = 0;
  virtual void list(const std::vector<ListItem>& items, bool ordered) = 0;
  virtual void pre(const std::string& summary, const std::string& text) = 0;
  virtual void matrix(const Matrix& m, const HostSelection& sel) = 0;
  virtual void legend(const std::vector<std::string>& lines) = 0;
  virtual std::string finish() = 0;
};

const char* statusClass(const std::string& s) {
  if (s == "PASS" || s == "PASSED") return "pass";
  if (s == "FAIL" || s == "FAILED" || s == "ERROR") return "fail";
  if (s == "WARN" || s == "SKIP" || s == "SKIPPED") return "warn";
  return "";
}

const char* cellClass(const MatrixCell& c) {
  switch (c.kind) {
    case CellKind::kFail:
      return "cf";
    case CellKind::kSkip:
      return "cs";
    case CellKind::kNone:
      return "cn";
    case CellKind::kPass:
      break;
  }
  if (c.ratio < 0) return "cq";
  if (c.ratio >= 0.9) return "c9";
  if (c.ratio >= 0.6) return "c6";
  return "c0";
}

std::string cellTitle(const Matrix& m, size_t r, size_t c, const MatrixCell& cell) {
  std::string t = m.hosts[r] + " -> " + m.hosts[c];
  if (cell.verdict == nullptr) return t + ": not tested";
  const PairVerdict& v = *cell.verdict;
  t += ": " + std::string(toString(v.verdict)) + " " + formatSize(v.message_size);
  if (!v.unit.empty()) t += " " + num(v.value) + " " + v.unit;
  if (cell.reference > 0) {
    t += " (" + std::string(cell.reference_is_threshold ? "threshold " : "best ") +
         num(cell.reference) + ")";
  }
  if (!v.reasons.empty()) t += ": " + joined(v.reasons, "; ");
  return t;
}

// ------------------------------------------------------------------ Markdown

class MarkdownWriter final : public Writer {
 public:
  void title(const std::string& text, const std::string& verdict) override {
    o_ << "# " << mdEscape(text) << "\n\n**Verdict: " << mdEscape(verdict) << "**\n\n";
  }
  void heading(const std::string& text) override { o_ << "## " << mdEscape(text) << "\n\n"; }
  void para(const std::string& text) override { o_ << mdEscape(text) << "\n\n"; }
  void table(const Row& header, const std::vector<Row>& rows) override {
    auto line = [this](const Row& r) {
      o_ << "|";
      for (const auto& c : r) o_ << " " << (c.text.empty() ? " " : mdEscape(c.text)) << " |";
      o_ << "\n";
    };
    line(header);
    o_ << "|";
    for (size_t i = 0; i < header.size(); ++i) o_ << "---|";
    o_ << "\n";
    for (const auto& r : rows) line(r);
    o_ << "\n";
  }
  void list(const std::vector<ListItem>& items, bool ordered) override {
    int n = 0;
    for (const auto& i : items) {
      o_ << (ordered ? std::to_string(++n) + ". " : "- ") << mdEscape(i.text) << "\n";
      for (const auto& s : i.sub) o_ << "   - " << mdEscape(s) << "\n";
    }
    o_ << "\n";
  }
  void pre(const std::string& summary, const std::string& text) override {
    // A fence longer than any run of backticks in the text cannot be closed by it.
    size_t run = 0, longest = 0;
    for (char ch : text) {
      run = ch == '`' ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    const std::string fence(std::max<size_t>(3, longest + 1), '`');
    o_ << mdEscape(summary) << ":\n\n" << fence << "\n" << text;
    if (!text.empty() && text.back() != '\n') o_ << "\n";
    o_ << fence << "\n\n";
  }
  void matrix(const Matrix& m, const HostSelection& sel) override {
    o_ << "| |";
    for (size_t c : sel.shown) o_ << " " << c + 1 << " |";
    o_ << "\n|---|";
    for (size_t i = 0; i < sel.shown.size(); ++i) o_ << ":-:|";
    o_ << "\n";
    for (size_t r : sel.shown) {
      o_ << "| " << r + 1 << " " << mdEscape(m.hosts[r]) << " |";
      for (size_t c : sel.shown) {
        auto it = m.cells.find({r, c});
        const char g = cellGlyph(it == m.cells.end() ? MatrixCell{} : it->second);
        // Markdown would read a lone + or * as a list marker or emphasis: escape them.
        o_ << " " << (g == '+' ? std::string("\\+") : std::string(1, g)) << " |";
      }
      o_ << "\n";
    }
    o_ << "\n";
  }
  void legend(const std::vector<std::string>& lines) override {
    for (const auto& l : lines) o_ << "- " << mdEscape(l) << "\n";
    o_ << "\n";
  }
  std::string finish() override { return o_.str(); }

 private:
  std::ostringstream o_;
};

// ------------------------------------------------------------------ HTML

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;color:#1b1f24;background:#fff}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 12px}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f7}.verdict{display:inline-block;padding:4px 14px;border-radius:4px;font-weight:700;font-size:18px}
.pass{background:#d7f5dd;color:#0a5c1f}.fail{background:#ffd9d6;color:#8c1007}.warn{background:#fff1c2;color:#6b4e00}
table.matrix td,table.matrix th{padding:0;width:20px;height:20px;text-align:center;font:12px/20px ui-monospace,Menlo,Consolas,monospace}
table.matrix th.h{text-align:left;padding:0 6px;width:auto;white-space:nowrap}
.c9{background:#2da44e;color:#fff}.c6{background:#e3b341;color:#000}.c0{background:#f0883e;color:#000}
.cf{background:#cf222e;color:#fff;font-weight:700}.cs{background:#8c959f;color:#fff}.cn{background:#f6f8fa;color:#8c959f}.cq{background:#d0d7de}
pre{background:#f6f8fa;padding:8px;overflow:auto;white-space:pre-wrap}ul.legend{list-style:none;padding:0}
.sw{display:inline-block;width:14px;height:14px;vertical-align:middle;margin-right:6px;border:1px solid #d0d7de}
.muted{color:#57606a}
)css";

class HtmlWriter final : public Writer {
 public:
  explicit HtmlWriter(const std::string& page_title) {
    o_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       // Nothing may be fetched: the file is the whole report, and it opens offline.
       << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\">\n"
       << "<title>" << htmlEscape(page_title) << "</title>\n<style>" << kStyle
       << "</style>\n</head>\n<body>\n";
  }
  void title(const std::string& text, const std::string& verdict) override {
    o_ << "<h1>" << htmlEscape(text) << "</h1>\n<p><span id=\"verdict\" class=\"verdict "
       << statusClass(verdict) << "\">" << htmlEscape(verdict) << "</span></p>\n";
  }
  void heading(const std::string& text) override {
    std::string id;
    for (char ch : text) {
      if (std::isalnum(static_cast<unsigned char>(ch))) {
        id += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      } else if (!id.empty() && id.back() != '-') {
        id += '-';
      }
    }
    while (!id.empty() && id.back() == '-') id.pop_back();
    o_ << "<h2 id=\"" << htmlEscape(id) << "\">" << htmlEscape(text) << "</h2>\n";
  }
  void para(const std::string& text) override { o_ << "<p>" << htmlEscape(text) << "</p>\n"; }
  void table(const Row& header, const std::vector<Row>& rows) override {
    o_ << "<table>\n<tr>";
    for (const auto& c : header) o_ << "<th>" << htmlEscape(c.text) << "</th>";
    o_ << "</tr>\n";
    for (const auto& r : rows) {
      o_ << "<tr>";
      for (const auto& c : r) {
        o_ << "<td" << (c.cls.empty() ? "" : " class=\"" + htmlEscape(c.cls) + "\"") << ">"
           << htmlEscape(c.text) << "</td>";
      }
      o_ << "</tr>\n";
    }
    o_ << "</table>\n";
  }
  void list(const std::vector<ListItem>& items, bool ordered) override {
    o_ << (ordered ? "<ol>\n" : "<ul>\n");
    for (const auto& i : items) {
      o_ << "<li" << (i.cls.empty() ? "" : " class=\"" + htmlEscape(i.cls) + "\"") << ">"
         << htmlEscape(i.text);
      if (!i.sub.empty()) {
        o_ << "<ul>";
        for (const auto& s : i.sub) o_ << "<li>" << htmlEscape(s) << "</li>";
        o_ << "</ul>";
      }
      o_ << "</li>\n";
    }
    o_ << (ordered ? "</ol>\n" : "</ul>\n");
  }
  void pre(const std::string& summary, const std::string& text) override {
    o_ << "<details><summary>" << htmlEscape(summary) << "</summary><pre>" << htmlEscape(text)
       << "</pre></details>\n";
  }
  void matrix(const Matrix& m, const HostSelection& sel) override {
    o_ << "<table class=\"matrix\">\n<tr><th class=\"h\">initiator \\ target</th>";
    for (size_t c : sel.shown) {
      o_ << "<th title=\"" << htmlEscape(m.hosts[c]) << "\">" << c + 1 << "</th>";
    }
    o_ << "</tr>\n";
    for (size_t r : sel.shown) {
      o_ << "<tr><th class=\"h\">" << r + 1 << " " << htmlEscape(m.hosts[r]) << "</th>";
      for (size_t c : sel.shown) {
        auto it = m.cells.find({r, c});
        const MatrixCell cell = it == m.cells.end() ? MatrixCell{} : it->second;
        o_ << "<td class=\"" << cellClass(cell) << "\" title=\""
           << htmlEscape(cellTitle(m, r, c, cell)) << "\">" << cellGlyph(cell) << "</td>";
      }
      o_ << "</tr>\n";
    }
    o_ << "</table>\n";
  }
  void legend(const std::vector<std::string>& lines) override {
    o_ << "<ul class=\"legend\">\n"
       << "<li><span class=\"sw c9\"></span>at or above the reference, or within 90 % of it"
       << "</li>\n<li><span class=\"sw c6\"></span>60-89 % of the reference</li>\n"
       << "<li><span class=\"sw c0\"></span>below 60 % of the reference</li>\n"
       << "<li><span class=\"sw cf\"></span>failed (X)</li>\n"
       << "<li><span class=\"sw cs\"></span>skipped (s)</li>\n"
       << "<li><span class=\"sw cn\"></span>not tested (.)</li>\n";
    for (const auto& l : lines) o_ << "<li class=\"muted\">" << htmlEscape(l) << "</li>\n";
    o_ << "</ul>\n";
  }
  std::string finish() override {
    o_ << "</body>\n</html>\n";
    return o_.str();
  }

 private:
  std::ostringstream o_;
};

// ------------------------------------------------------------------ content

std::string thresholdsText(const Thresholds& t) {
  std::vector<std::string> parts;
  auto add = [&parts](const char* name, const std::optional<double>& v) {
    if (v) parts.push_back(std::string(name) + " " + num(*v, 3));
  };
  add("bandwidth_gbps_min", t.bandwidth_gbps_min);
  add("latency_us_max", t.latency_us_max);
  add("line_rate_fraction_min", t.line_rate_fraction_min);
  add("best_pair_fraction_min", t.best_pair_fraction_min);
  add("lowest_latency_factor_max", t.lowest_latency_factor_max);
  add("gpu_host_ratio_min", t.gpu_host_ratio_min);
  add("regression_tolerance", t.regression_tolerance);
  return parts.empty() ? "none" : joined(parts, ", ");
}

// "host", or "cuda gpu0, registration dmabuf" (a GPU side with no index is GPU 0).
std::string selectorText(const EndpointSelector& e) {
  if (e.memory != MemoryKind::kCuda) return "host";
  return "cuda gpu" + std::to_string(e.gpu < 0 ? 0 : e.gpu) + ", registration " + toString(e.reg);
}

std::string sizesText(const SweepSpec& spec) {
  std::string sizes;
  for (uint64_t s : spec.sizes) sizes += (sizes.empty() ? "" : ", ") + formatSize(s);
  return sizes.empty() ? formatSize(spec.test.message_size) : sizes;
}

std::string iterationsText(const PairTestSpec& t) {
  return t.duration_seconds > 0 ? num(t.duration_seconds, 1) + " s per test"
                                : std::to_string(t.iterations) + " (+" +
                                      std::to_string(t.warmup_iterations) + " warm-up)";
}

// What ran: one row per part (each sweep of an acceptance run's config, in order).
void writeParts(const std::vector<SweepPart>& parts, Writer& w) {
  std::vector<Row> rows;
  for (const auto& part : parts) {
    const auto& s = part.spec;
    const auto& t = s.test;
    rows.push_back({std::to_string(part.index + 1),
                    std::string(toString(s.pattern)) + ", " + toString(s.direction),
                    std::string(toString(t.op)) + " " + toString(t.mode) +
                        (t.bidirectional ? ", bidirectional" : ""),
                    sizesText(s), iterationsText(t), std::to_string(t.num_qps),
                    t.transport ? toString(*t.transport) : "best both sides have",
                    selectorText(t.initiator) + " -> " + selectorText(t.target),
                    part.planned_known ? std::to_string(part.planned) : "-"});
  }
  w.table({"#", "Pattern", "Operation", "Message sizes", "Iterations", "QPs", "Transport",
           "Memory (initiator -> target)", "Tests planned"},
          rows);
}

// The sweep at a glance: id, verdict, state, times, pattern and the counts of tests and verdicts.
void writeSummaryTable(const ReportInput& in, const std::vector<std::string>& hosts, Writer& w) {
  const auto& p = in.sweep.progress;
  const auto& spec = in.sweep.spec;
  std::map<std::string, int> by_status{{"PASSED", 0}, {"FAILED", 0}, {"SKIPPED", 0}, {"ERROR", 0}};
  for (const auto& r : in.sweep.results) ++by_status[toString(r.status)];
  std::map<std::string, int> by_verdict{{"PASS", 0}, {"FAIL", 0}, {"SKIP", 0}};
  for (const auto& v : in.sweep.verdicts) ++by_verdict[toString(v.verdict)];
  auto counts = [](const std::map<std::string, int>& m) {
    std::string s;
    for (const auto& [k, n] : m) s += (s.empty() ? "" : ", ") + k + " " + std::to_string(n);
    return s;
  };
  const uint32_t verified = p.tests_done >= p.tests_failed + p.tests_skipped
                                ? p.tests_done - p.tests_failed - p.tests_skipped
                                : 0;
  double secs = p.elapsed_seconds;
  if (p.finished_ms > 0 && p.started_ms > 0)
    secs = static_cast<double>(p.finished_ms - p.started_ms) / 1e3;

  w.heading("Summary");
  std::vector<Row> rows;
  rows.push_back({"Sweep", p.id + (p.name.empty() ? "" : " (" + p.name + ")")});
  rows.push_back({"Verdict", Cell(orDash(p.verdict), statusClass(p.verdict))});
  rows.push_back({"State", p.state == SweepState::kFinished || p.reason.empty()
                               ? std::string(toString(p.state))
                               : std::string(toString(p.state)) + ": " + p.reason});
  rows.push_back({"Started", when(p.started_ms)});
  rows.push_back({"Finished", when(p.finished_ms)});
  rows.push_back({"Duration", duration(secs)});
  rows.push_back({"Pattern", spec.pattern_from_config
                                 ? std::string("config: the sweeps of the config (Configuration)")
                                 : orDash(p.pattern) + ", direction " + toString(spec.direction)});
  rows.push_back({"Hosts", std::to_string(hosts.size())});
  // The words of docs/json.md: a test ran and its data was verified or not; a verdict is PASS
  // or FAIL against the thresholds.
  rows.push_back({"Tests", std::to_string(p.tests_done) + " of " + std::to_string(p.tests_total) +
                               " ran: " + std::to_string(verified) + " data verified, " +
                               std::to_string(p.tests_failed) + " not verified, " +
                               std::to_string(p.tests_skipped) + " skipped; " +
                               std::to_string(p.retests) + " retests, " +
                               std::to_string(p.rounds_total) + " rounds"});
  rows.push_back({"Results by stored status", in.sweep.results.empty()
                                                  ? std::string("results not fetched")
                                                  : counts(by_status)});
  rows.push_back({"Verdicts", counts(by_verdict) +
                                  (p.verdict.empty() ? std::string() : ": verdict " + p.verdict)});
  rows.push_back({"Report generated", when(in.generated_ms)});
  w.table({"", ""}, rows);
}

// How the sweep was asked for: its test (or, for an acceptance run, the parts it ran) and the
// settings every sweep has.
void writeConfiguration(const ReportInput& in, Writer& w) {
  const auto& spec = in.sweep.spec;
  w.heading("Configuration");
  const auto& t = spec.test;
  std::string select;
  for (const auto& [k, v] : spec.select) select += (select.empty() ? "" : ", ") + k + "=" + v;
  std::vector<Row> cfg;
  // An acceptance run has no test of its own: its config's sweeps ran, each with its own.
  std::vector<SweepPart> parts = in.sweep.parts;
  if (parts.empty() && spec.pattern_from_config && in.config != nullptr) {
    parts = sweepParts(spec, in.config->sweeps, {});
  }
  if (spec.pattern_from_config) {
    w.para(parts.empty() ? "An acceptance run of the config's sweeps; the config could not be "
                           "read, so what each ran is not known (the stored config is below)."
                         : "An acceptance run: the config's " + std::to_string(parts.size()) +
                               " sweeps ran in this order, one after the other.");
    if (!parts.empty()) writeParts(parts, w);
  } else {
    cfg = {
        {"Operation", std::string(toString(t.op)) + ", " + toString(t.mode) +
                          (t.bidirectional ? ", bidirectional" : "")},
        {"Message sizes", sizesText(spec)},
        {"Iterations", iterationsText(t)},
        {"Queue pairs", std::to_string(t.num_qps)},
        {"Transport", t.transport ? toString(*t.transport) : "best both sides have"},
        {"Initiator memory", selectorText(t.initiator)},
        {"Target memory", selectorText(t.target)},
    };
  }
  std::vector<Row> common{
      {"Hosts asked for", spec.hosts.empty() ? "every online worker" : joined(spec.hosts, ", ")},
      {"Excluded", orDash(joined(spec.exclude, ", "))},
      {"Label selector", orDash(select)},
      {"Max concurrency", spec.max_concurrency == 0 ? std::string("resources only")
                                                    : std::to_string(spec.max_concurrency)},
      {"Retries", std::to_string(spec.retries)},
      {"Localisation",
       spec.localise ? "on (failing pairs retested with known-good partners)" : "off"},
      {"Baseline", orDash(spec.baseline)},
  };
  cfg.insert(cfg.end(), common.begin(), common.end());
  if (spec.pattern == SweepPattern::kRandom && !spec.pattern_from_config) {
    cfg.push_back({"Random rounds / seed",
                   std::to_string(spec.random_rounds) + " / " + std::to_string(spec.seed)});
  }
  w.table({"Setting", "Value"}, cfg);
}

// The thresholds the verdicts were judged by: the config's own, then each host class's.
void writeThresholds(const ReportInput& in, Writer& w) {
  const auto& spec = in.sweep.spec;
  w.heading("Thresholds");
  if (!in.config_error.empty()) {
    w.para("The sweep's stored config could not be read: " + in.config_error);
  }
  if (in.config == nullptr) {
    w.para("No cluster config: verdicts judge each test's status only (no figure thresholds).");
  } else {
    std::vector<Row> th{{"all hosts", "-", thresholdsText(in.config->thresholds)}};
    for (const auto& c : in.config->host_classes) {
      Thresholds eff = c.thresholds;
      eff.inheritFrom(in.config->thresholds);
      std::string match = c.match.empty() ? "any name" : "name " + c.match;
      for (const auto& [k, v] : c.labels) match += ", " + k + "=" + v;
      th.push_back({"class " + c.name, match, thresholdsText(eff)});
    }
    w.table({"Scope", "Matches", "Thresholds"}, th);
    if (!spec.config_yaml.empty())
      w.pre("Cluster config as stored with the sweep", spec.config_yaml);
  }
}

void writeSummary(const ReportInput& in, const std::vector<std::string>& hosts, Writer& w) {
  writeSummaryTable(in, hosts, w);
  writeConfiguration(in, w);
  writeThresholds(in, w);
}

void writeMatrix(const ReportInput& in, size_t max_hosts, Writer& w) {
  w.heading("Matrix");
  MatrixOptions mo;
  mo.config = in.config;
  for (const auto& wk : in.workers) mo.labels[wk.name] = wk.labels;
  auto matrices = buildMatrices(in.sweep.verdicts, mo);
  if (matrices.empty()) {
    w.para("No verdicts: nothing to draw.");
    return;
  }
  for (const auto& m : matrices) {
    HostSelection sel = selectHosts(m, in.sweep.suspects, max_hosts);
    std::string head =
        (m.rail.empty() ? std::string("All pairs") : "Rail " + m.rail) + ": " +
        std::to_string(m.hosts.size()) + " hosts, " + std::to_string(m.cells.size()) +
        " pairs tested (" + std::to_string(m.count(CellKind::kPass)) + " pass, " +
        std::to_string(m.count(CellKind::kFail)) + " fail, " +
        std::to_string(m.count(CellKind::kSkip)) + " skip). Reference: " + referenceText(m) + ".";
    w.para(head);
    if (sel.shown.size() < m.hosts.size()) {
      std::string fold =
          "Showing " + std::to_string(sel.shown.size()) + " of " + std::to_string(m.hosts.size()) +
          " hosts: those with failures, skips or suspects; " + std::to_string(sel.folded) +
          " hosts folded (no failure, skip or suspect).";
      if (sel.hidden_problems > 0) {
        fold += " " + std::to_string(sel.hidden_problems) +
                " more hosts with problems are not drawn; the failures section lists them all.";
      }
      w.para(fold);
    }
    w.matrix(m, sel);
  }
  w.legend(legendLines());
}

// What was measured, even when every verdict is PASS: per (op, mode, size), the spread over
// pairs, the worst pairs and the hosts with the worst medians.
void writeFigures(const ReportInput& in, Writer& w) {
  w.heading("Figures");
  const std::vector<FigureSummary> figures =
      in.sweep.figures.empty() ? summariseFigures(in.sweep.verdicts) : in.sweep.figures;
  if (figures.empty()) {
    w.para("No figures: no verdict has a measured value.");
    return;
  }
  w.para(
      "Per operation, mode and message size, over every pair with a figure (retests left "
      "out). Gb/s: average bandwidth, higher is better; us: median latency, lower is better. "
      "Worst first.");
  std::vector<Row> rows;
  for (const auto& f : figures) {
    std::vector<std::string> worst, hosts;
    for (const auto& p : f.worst) worst.push_back(p.src + " -> " + p.dst + " " + num(p.value));
    for (const auto& h : f.worst_hosts) hosts.push_back(h.host + " " + num(h.median));
    rows.push_back({std::string(toString(f.op)) + " " + toString(f.mode),
                    formatSize(f.message_size), std::to_string(f.pairs), num(f.min) + " " + f.unit,
                    num(f.median) + " " + f.unit, num(f.max) + " " + f.unit,
                    orDash(joined(worst, "; ")), orDash(joined(hosts, "; "))});
  }
  w.table({"Test", "Size", "Pairs", "Min", "Median", "Max", "Worst pairs", "Worst hosts (median)"},
          rows);
}

void writeSuspects(const ReportInput& in, Writer& w) {
  w.heading("Suspects");
  if (in.sweep.suspects.empty()) {
    w.para(
        in.sweep.verdicts.empty() ||
                std::none_of(in.sweep.verdicts.begin(), in.sweep.verdicts.end(),
                             [](const PairVerdict& v) { return v.verdict == VerdictKind::kFail; })
            ? "None: no pair failed."
            : "None named: the failures do not point at one host, NIC or link.");
    return;
  }
  std::vector<const Suspect*> ranked;
  for (const auto& s : in.sweep.suspects) ranked.push_back(&s);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Suspect* a, const Suspect* b) { return a->score > b->score; });
  std::vector<ListItem> items;
  items.reserve(ranked.size());
  for (const auto* s : ranked) {
    items.push_back({s->kind + " " + s->name + " (score " + num(s->score) + ")", s->evidence, ""});
  }
  w.para("Most likely at fault first; the score ranks, it is not a probability.");
  w.list(items, true);
}

std::string figures(const TestResult& r) {
  std::vector<std::string> f;
  const auto& m = r.measurement;
  if (m.has_bandwidth) {
    f.push_back("avg " + num(m.bw.avg_gbps) + " Gb/s, peak " + num(m.bw.peak_gbps) + " Gb/s");
  }
  if (m.has_latency) {
    f.push_back("median " + num(m.lat.median_us) + " us, p99 " + num(m.lat.p99_us) + " us");
  }
  if (r.transport == TransportKind::kSimulated) {
    f.push_back("simulated: no data moved");
  } else if (r.integrity.checked) {
    f.push_back(r.integrity.wrong_bytes == 0
                    ? "data verified"
                    : std::to_string(r.integrity.wrong_bytes) + " wrong bytes from offset " +
                          std::to_string(r.integrity.first_wrong_offset));
  }
  f.push_back(std::string(toString(r.transport)) + ", " + toString(r.status));
  return joined(f, "; ");
}

void writeFailures(const ReportInput& in, Writer& w) {
  std::map<std::string, const TestResult*> by_test;
  for (const auto& r : in.sweep.results) by_test[r.test_id] = &r;
  std::vector<Row> rows;
  for (const auto& v : in.sweep.verdicts) {
    if (v.verdict != VerdictKind::kFail) continue;
    auto it = by_test.find(v.test_id);
    std::string fig = v.unit.empty() ? "-" : num(v.value) + " " + v.unit;
    std::string detail = it == by_test.end() ? "-" : figures(*it->second);
    rows.push_back({std::to_string(rows.size() + 1), v.src, v.dst, formatSize(v.message_size),
                    Cell(fig, "fail"), detail, orDash(v.topo_class) + (v.retest ? ", retest" : ""),
                    v.reasons.empty() ? "-" : joined(v.reasons, "; "), v.test_id});
  }
  w.heading("Failures (" + std::to_string(rows.size()) + ")");
  if (rows.empty()) {
    w.para("No pair failed.");
    return;
  }
  w.table(
      {"#", "Initiator", "Target", "Size", "Judged figure", "Measured", "Class", "Reason", "Test"},
      rows);
}

std::string preflightSummary(const Inventory& inv) {
  std::map<std::string, int> n;
  for (const auto& c : inv.preflight) ++n[c.status];
  if (inv.preflight.empty()) return "none recorded";
  std::string s;
  for (const char* k : {"FAIL", "WARN", "PASS", "UNKNOWN", "N/A"}) {
    if (n[k] > 0) s += (s.empty() ? "" : ", ") + std::to_string(n[k]) + " " + k;
  }
  return s;
}

void writeEnvironment(const ReportInput& in, const std::vector<std::string>& hosts, Writer& w) {
  w.heading("Environment");
  std::map<std::string, const WorkerStatus*> by_name;
  for (const auto& wk : in.workers) by_name[wk.name] = &wk;
  std::vector<Row> rows;
  std::vector<ListItem> problems;
  for (const auto& h : hosts) {
    auto it = by_name.find(h);
    if (it == by_name.end()) {
      rows.push_back(
          {h, Cell("no stored inventory", "warn"), "-", "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    const WorkerStatus& wk = *it->second;
    const Inventory& inv = wk.inventory;
    std::vector<std::string> nics;
    for (const auto& n : inv.nics) {
      std::string s = n.name + " fw " + orDash(n.fw_version);
      for (const auto& p : n.ports) {
        s += ", port " + std::to_string(p.port) + " " + orDash(p.state) + " " +
             num(p.rate_gbps, 0) + " Gb/s " + p.link_layer;
      }
      nics.push_back(s);
    }
    std::map<std::string, int> gpu_models;
    int gdr = 0;
    for (const auto& g : inv.gpus) {
      ++gpu_models[g.name];
      gdr += g.gpu_direct_rdma_supported ? 1 : 0;
    }
    std::string gpus;
    for (const auto& [name, count] : gpu_models) {
      gpus += (gpus.empty() ? "" : ", ") + std::to_string(count) + "x " + name;
    }
    if (!inv.gpus.empty()) {
      gpus +=
          " (GPUDirect RDMA " + std::to_string(gdr) + "/" + std::to_string(inv.gpus.size()) + ")";
    }
    std::string pf = preflightSummary(inv);
    std::string pf_cls = pf.find("FAIL") != std::string::npos   ? "fail"
                         : pf.find("WARN") != std::string::npos ? "warn"
                                                                : "";
    rows.push_back({h + (wk.simulated ? " (simulated)" : ""), wk.state, orDash(inv.worker_version),
                    orDash(inv.kernel_release), orDash(inv.nvidia_driver_version),
                    orDash(inv.cuda_driver_version), orDash(inv.rdma_core_version),
                    nics.empty() ? "none" : joined(nics, "; "), gpus.empty() ? "none" : gpus,
                    Cell(pf, pf_cls)});
    for (const auto& c : inv.preflight) {
      if (c.status != "FAIL" && c.status != "WARN") continue;
      std::vector<std::string> sub;
      if (!c.detail.empty()) sub.push_back(c.detail);
      if (!c.remediation.empty()) sub.push_back("fix: " + c.remediation);
      problems.push_back(
          {h + ": " + c.status + " " + c.id + " (" + c.title + ")", sub, statusClass(c.status)});
    }
    for (const auto& n : inv.notes) problems.push_back({h + ": note: " + n, {}, ""});
  }
  w.para("From the inventories the coordinator stores for each worker (as last registered).");
  w.table({"Host", "State", "Worker", "Kernel", "NVIDIA driver", "CUDA driver", "rdma-core",
           "NICs (firmware, ports)", "GPUs", "Preflight"},
          rows);
  if (!problems.empty()) {
    w.para("Preflight warnings and failures, and notes:");
    w.list(problems, false);
  }
}

std::string writeReport(const ReportInput& in, Writer& w, size_t default_max_hosts) {
  const auto& p = in.sweep.progress;
  const std::vector<std::string> hosts = sweepHosts(in.sweep);
  const std::string verdict = !p.verdict.empty() ? p.verdict : toString(p.state);
  w.title("GPUDirect RDMA acceptance report: sweep " + p.id, verdict);
  writeSummary(in, hosts, w);
  writeMatrix(in, in.max_matrix_hosts > 0 ? in.max_matrix_hosts : default_max_hosts, w);
  writeFigures(in, w);
  writeSuspects(in, w);
  writeFailures(in, w);
  writeEnvironment(in, hosts, w);
  if (!in.sweep.notes.empty()) {
    w.heading("Notes");
    std::vector<ListItem> items;
    for (const auto& n : in.sweep.notes) items.push_back({n, {}, ""});
    w.list(items, false);
  }
  return w.finish();
}

}  // namespace

std::vector<std::string> sweepHosts(const SweepReportData& sweep) {
  std::set<std::string> hosts(sweep.spec.hosts.begin(), sweep.spec.hosts.end());
  for (const auto& v : sweep.verdicts) {
    hosts.insert(splitEndpoint(v.src).first);
    hosts.insert(splitEndpoint(v.dst).first);
  }
  for (const auto& r : sweep.results) {
    if (!r.initiator.worker.empty()) hosts.insert(r.initiator.worker);
    if (!r.target.worker.empty()) hosts.insert(r.target.worker);
  }
  hosts.erase("");
  return {hosts.begin(), hosts.end()};
}

std::string renderMarkdown(const ReportInput& in) {
  MarkdownWriter w;
  return writeReport(in, w, 32);
}

std::string renderHtml(const ReportInput& in) {
  HtmlWriter w("gdrmesh acceptance report: sweep " + in.sweep.progress.id);
  return writeReport(in, w, 64);
}

}  // namespace gdrmesh::report
