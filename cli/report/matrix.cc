#include "cli/report/matrix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "coordinator/orchestrator/judge.h"

namespace gdrmesh::report {
namespace {

CellKind kindOf(VerdictKind v) {
  switch (v) {
    case VerdictKind::kFail:
      return CellKind::kFail;
    case VerdictKind::kPass:
      return CellKind::kPass;
    case VerdictKind::kSkip:
      return CellKind::kSkip;
  }
  return CellKind::kNone;
}

std::string railOf(const std::string& src_nic, const std::string& dst_nic) {
  if (src_nic == dst_nic) return src_nic;
  return src_nic + "->" + dst_nic;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

const char* ansiOf(const MatrixCell& c) {
  switch (c.kind) {
    case CellKind::kFail:
      return "\x1b[1;97;41m";  // bold white on red
    case CellKind::kSkip:
      return "\x1b[36m";  // cyan
    case CellKind::kNone:
      return "\x1b[90m";  // grey
    case CellKind::kPass:
      break;
  }
  if (c.ratio < 0) return "\x1b[37m";
  if (c.ratio >= 0.9) return "\x1b[32m";  // green
  if (c.ratio >= 0.6) return "\x1b[33m";  // yellow
  return "\x1b[31m";                      // red
}

// Column numbers written vertically, one line per digit.
std::vector<std::string> columnHeader(const std::vector<size_t>& shown, size_t label_width) {
  size_t digits = 1;
  for (size_t i : shown) digits = std::max(digits, std::to_string(i + 1).size());
  std::vector<std::string> lines(digits, std::string(label_width, ' '));
  for (size_t i : shown) {
    std::string n = std::to_string(i + 1);
    n = std::string(digits - n.size(), ' ') + n;
    for (size_t d = 0; d < digits; ++d) {
      lines[d] += ' ';
      lines[d] += n[d];
    }
  }
  return lines;
}

}  // namespace

size_t Matrix::count(CellKind k) const {
  size_t n = 0;
  for (const auto& [key, c] : cells) n += c.kind == k ? 1 : 0;
  return n;
}

std::pair<std::string, std::string> splitEndpoint(const std::string& endpoint) {
  auto slash = endpoint.find('/');
  if (slash == std::string::npos) return {endpoint, ""};
  return {endpoint.substr(0, slash), endpoint.substr(slash + 1)};
}

std::vector<Matrix> buildMatrices(const std::vector<PairVerdict>& verdicts,
                                  const MatrixOptions& opts) {
  std::set<std::string> host_set;
  std::set<std::string> rails;
  for (const auto& v : verdicts) {
    auto [sw, sn] = splitEndpoint(v.src);
    auto [dw, dn] = splitEndpoint(v.dst);
    host_set.insert(sw);
    host_set.insert(dw);
    rails.insert(railOf(sn, dn));
  }
  const std::vector<std::string> hosts(host_set.begin(), host_set.end());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < hosts.size(); ++i) index[hosts[i]] = i;

  // Thresholds once per host: class globs are not matched once per cell.
  std::vector<Thresholds> host_thresholds(hosts.size());
  if (opts.config) {
    static const std::map<std::string, std::string> kNoLabels;
    for (size_t i = 0; i < hosts.size(); ++i) {
      auto it = opts.labels.find(hosts[i]);
      host_thresholds[i] =
          opts.config->thresholdsFor(hosts[i], it == opts.labels.end() ? kNoLabels : it->second);
    }
  }

  const bool one = rails.size() <= 1;
  std::map<std::string, Matrix> by_rail;
  for (const auto& v : verdicts) {
    auto [sw, sn] = splitEndpoint(v.src);
    auto [dw, dn] = splitEndpoint(v.dst);
    const std::string rail = one ? "" : railOf(sn, dn);
    auto [mit, created] = by_rail.try_emplace(rail);
    Matrix& m = mit->second;
    if (created) {
      m.rail = rail;
      m.hosts = hosts;
    }
    MatrixCell& c = m.cells[{index[sw], index[dw]}];
    if (c.verdict == nullptr || speaksBetter(v, *c.verdict)) {
      c.verdict = &v;
      c.kind = kindOf(v.verdict);
    }
  }

  // References: the pair's threshold where set, else the best figure of the matrix's unit.
  std::vector<Matrix> out;
  for (auto& [rail, m] : by_rail) {
    std::map<std::string, double> best;
    for (const auto& [key, c] : m.cells) {
      const PairVerdict& v = *c.verdict;
      if (c.kind != CellKind::kPass || !(v.value > 0) || v.unit.empty()) continue;
      auto it = best.find(v.unit);
      const bool lower_better = v.unit == "us";
      if (it == best.end() || (lower_better ? v.value < it->second : v.value > it->second)) {
        best[v.unit] = v.value;
      }
    }
    for (auto& [key, c] : m.cells) {
      const PairVerdict& v = *c.verdict;
      if (!(v.value > 0) || v.unit.empty() || c.kind == CellKind::kSkip) continue;
      Thresholds t = stricterOf(host_thresholds[key.first], host_thresholds[key.second]);
      std::optional<double> limit;
      if (v.unit == "Gb/s") limit = t.bandwidth_gbps_min;
      if (v.unit == "us") limit = t.latency_us_max;
      if (limit && *limit > 0) {
        c.reference = *limit;
        c.reference_is_threshold = true;
      } else if (auto it = best.find(v.unit); it != best.end()) {
        c.reference = it->second;
      }
      if (c.reference > 0) {
        c.ratio = v.unit == "us" ? c.reference / v.value : v.value / c.reference;
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

char cellGlyph(const MatrixCell& c) {
  switch (c.kind) {
    case CellKind::kNone:
      return '.';
    case CellKind::kFail:
      return 'X';
    case CellKind::kSkip:
      return 's';
    case CellKind::kPass:
      break;
  }
  if (c.ratio < 0) return '?';
  // A hair under the reference (rounding of a stored figure) still reads as "at it".
  if (c.ratio >= 0.9995) return '+';
  int tenth = static_cast<int>(std::floor(c.ratio * 10));
  return static_cast<char>('0' + std::clamp(tenth, 0, 9));
}

HostSelection selectHosts(const Matrix& m, const std::vector<Suspect>& suspects, size_t max_hosts) {
  HostSelection sel;
  const size_t n = m.hosts.size();
  max_hosts = std::max<size_t>(1, std::min(max_hosts, kMaxDrawnHosts));
  if (n <= max_hosts) {
    for (size_t i = 0; i < n; ++i) sel.shown.push_back(i);
    return sel;
  }
  // Problems per host: failed and skipped cells in its row or column.
  std::vector<size_t> fails(n, 0), skips(n, 0);
  for (const auto& [key, c] : m.cells) {
    if (c.kind == CellKind::kFail) {
      ++fails[key.first];
      if (key.second != key.first) ++fails[key.second];
    } else if (c.kind == CellKind::kSkip) {
      ++skips[key.first];
      if (key.second != key.first) ++skips[key.second];
    }
  }
  // Suspects name hosts ("h3"), NICs ("h3/mlx5_1") and links ("a/x<->b/y"); best first.
  std::vector<const Suspect*> ranked;
  ranked.reserve(suspects.size());
  for (const auto& s : suspects) ranked.push_back(&s);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Suspect* a, const Suspect* b) { return a->score > b->score; });
  std::map<std::string, size_t> suspect_rank;
  for (size_t r = 0; r < ranked.size(); ++r) {
    std::string name = ranked[r]->name;
    std::vector<std::string> sides;
    auto link = name.find("<->");
    if (link != std::string::npos) {
      sides = {name.substr(0, link), name.substr(link + 3)};
    } else {
      sides = {name};
    }
    for (const auto& side : sides) suspect_rank.try_emplace(splitEndpoint(side).first, r);
  }
  std::vector<size_t> problems;
  for (size_t i = 0; i < n; ++i) {
    if (fails[i] > 0 || skips[i] > 0 || suspect_rank.count(m.hosts[i]) != 0) problems.push_back(i);
  }
  auto key = [&](size_t i) {
    auto it = suspect_rank.find(m.hosts[i]);
    return std::make_tuple(it == suspect_rank.end() ? ranked.size() : it->second, ~fails[i],
                           ~skips[i], i);
  };
  std::stable_sort(problems.begin(), problems.end(),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  if (problems.size() > max_hosts) {
    sel.hidden_problems = problems.size() - max_hosts;
    problems.resize(max_hosts);
  }
  std::sort(problems.begin(), problems.end());
  sel.shown = std::move(problems);
  sel.folded = n - sel.shown.size() - sel.hidden_problems;
  return sel;
}

bool useColour(bool stdout_is_tty, const char* no_color_env) {
  return stdout_is_tty && (no_color_env == nullptr || no_color_env[0] == '\0');
}

std::string referenceText(const Matrix& m) {
  // Per unit: the thresholds in use (there may be several with host classes) or the best cell.
  std::map<std::string, std::set<double>> thresholds;
  std::map<std::string, double> best;
  for (const auto& [key, c] : m.cells) {
    if (c.reference <= 0 || c.verdict == nullptr) continue;
    if (c.reference_is_threshold) {
      thresholds[c.verdict->unit].insert(c.reference);
    } else {
      best[c.verdict->unit] = c.reference;
    }
  }
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  for (const auto& [unit, set] : thresholds) {
    std::string vals;
    for (double v : set) vals += (vals.empty() ? "" : ", ") + number(v);
    add(std::string(unit == "us" ? "latency_us_max " : "bandwidth_gbps_min ") + vals + " " + unit);
  }
  for (const auto& [unit, v] : best) {
    add("best cell " + number(v) + " " + unit + " (no " +
        (unit == "us" ? "latency_us_max" : "bandwidth_gbps_min") + " threshold)");
  }
  return out.empty() ? "none (no figures)" : out;
}

std::vector<std::string> legendLines() {
  return {
      "+  at or above the reference (threshold, or best cell without one)",
      "9..0  below it, in tenths: 7 = 70-79 % (latency: reference / value)",
      "X  failed    s  skipped    .  not tested    ?  passed without a figure",
      "rows: initiator, columns: target; a cell is the worst verdict of the pair over all sizes",
  };
}

std::string renderTerminal(const std::vector<Matrix>& matrices,
                           const std::vector<Suspect>& suspects, const TerminalOptions& opts) {
  std::ostringstream o;
  if (matrices.empty()) return "no verdicts: nothing to draw\n";
  const char* reset = opts.colour ? "\x1b[0m" : "";
  for (const auto& m : matrices) {
    HostSelection sel = selectHosts(m, suspects, opts.max_hosts);
    o << (m.rail.empty() ? std::string("matrix") : "rail " + m.rail) << ": " << m.hosts.size()
      << " hosts, " << m.cells.size() << " pairs tested: " << m.count(CellKind::kPass) << " pass, "
      << m.count(CellKind::kFail) << " fail, " << m.count(CellKind::kSkip) << " skip\n";
    if (sel.shown.size() < m.hosts.size()) {
      o << "showing " << sel.shown.size() << " of " << m.hosts.size()
        << " hosts: those with failures, skips or suspects; " << sel.folded
        << " hosts folded (no failure, skip or suspect)";
      if (sel.hidden_problems > 0) {
        o << "; " << sel.hidden_problems
          << " more hosts with problems not drawn (raise --max-hosts, or see the report)";
      }
      o << "\n";
    }
    size_t name_width = 0;
    for (size_t i : sel.shown) name_width = std::max(name_width, m.hosts[i].size());
    name_width = std::min<size_t>(name_width, 24);
    const size_t num_width = std::to_string(m.hosts.size()).size();
    const size_t label_width = num_width + 1 + name_width;
    for (const auto& line : columnHeader(sel.shown, label_width)) o << line << "\n";
    for (size_t r : sel.shown) {
      std::string num = std::to_string(r + 1);
      std::string name = m.hosts[r].substr(0, name_width);
      o << std::string(num_width - num.size(), ' ') << num << ' ' << name
        << std::string(name_width - name.size(), ' ');
      for (size_t c : sel.shown) {
        auto it = m.cells.find({r, c});
        MatrixCell cell = it == m.cells.end() ? MatrixCell{} : it->second;
        o << ' ';
        if (opts.colour) o << ansiOf(cell);
        o << cellGlyph(cell) << reset;
      }
      o << "\n";
    }
    o << "reference: " << referenceText(m) << "\n\n";
  }
  o << "legend\n";
  for (const auto& l : legendLines()) o << "  " << l << "\n";
  return o.str();
}

}  // namespace gdrmesh::report
