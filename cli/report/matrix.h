// The hosts x hosts matrix of a sweep: one cell per (initiator, target) worker pair, one
// matrix per rail when the hosts have several NICs. Built from the judge's verdicts (domain
// types only) and drawn in the terminal (`gdrmesh sweep show --matrix`), in Markdown and in
// HTML (`gdrmesh report`).
//
// A cell is reduced from every verdict of its pair as the status page does: a FAIL if any,
// else a PASS, else a SKIP; among those the largest message size. A PASS cell shows its
// figure relative to a reference: the threshold that applies to the pair (the stricter of the
// two hosts' bandwidth_gbps_min for Gb/s, latency_us_max for us) when the config sets one,
// else the best cell of the sweep in that unit. Higher ratio = better, for latency too.
//
// At large N only the hosts that matter are drawn (failures, skips, suspects); the rest are
// folded and counted, so that the output stays a few kilobytes at 1024 hosts.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh::report {

enum class CellKind { kNone, kPass, kFail, kSkip };

struct MatrixCell {
  CellKind kind = CellKind::kNone;
  const PairVerdict* verdict = nullptr;  // the verdict that speaks for the cell
  double reference = 0;                  // what the figure is measured against (0 = none)
  bool reference_is_threshold = false;
  // Figure relative to the reference, oriented so that 1 = at the reference and higher is
  // better (value / min for Gb/s, max / value for us); -1 when there is no figure or reference.
  double ratio = -1;
};

struct Matrix {
  std::string rail;                // "" when the sweep has one; "mlx5_0", "mlx5_0->mlx5_1"
  std::vector<std::string> hosts;  // workers, sorted: rows (initiator) and columns (target)
  std::map<std::pair<size_t, size_t>, MatrixCell> cells;  // (row, column) -> cell; sparse
  size_t count(CellKind k) const;
};

struct MatrixOptions {
  // Thresholds: per host class when the config has classes. nullptr = no config.
  const ClusterConfig* config = nullptr;
  std::map<std::string, std::map<std::string, std::string>> labels;  // worker -> labels
};

// "h1/mlx5_0" -> {"h1", "mlx5_0"}; "h1" -> {"h1", ""}.
std::pair<std::string, std::string> splitEndpoint(const std::string& endpoint);

// One matrix per rail (NIC pair); one matrix when every verdict uses the same NICs or none.
// Every matrix has the hosts of the whole sweep. `verdicts` must outlive the matrices.
std::vector<Matrix> buildMatrices(const std::vector<PairVerdict>& verdicts,
                                  const MatrixOptions& opts);

// The one-character glyph of a cell: 'X' failed, 's' skipped, '.' not tested, '+' at or above
// the reference, '0'..'9' below it in tenths ('7' = 70-79 %), '?' passed without a figure.
char cellGlyph(const MatrixCell& c);

// Which hosts a drawing shows: all of them up to `max_hosts`; beyond, those with a failed or
// skipped cell or named by a suspect (suspects first, then by failures), at most `max_hosts`.
struct HostSelection {
  std::vector<size_t> shown;   // indexes into Matrix::hosts, in host order
  size_t folded = 0;           // hosts left out that have nothing to show
  size_t hidden_problems = 0;  // hosts with failures/skips/suspects left out by the cap
};
HostSelection selectHosts(const Matrix& m, const std::vector<Suspect>& suspects, size_t max_hosts);

struct TerminalOptions {
  bool colour = false;    // ANSI colours (see useColour)
  size_t max_hosts = 40;  // beyond, fold (capped at kMaxDrawnHosts)
};
inline constexpr size_t kMaxDrawnHosts = 128;

// Whether to colour: stdout is a terminal and NO_COLOR is unset or empty (no-color.org).
bool useColour(bool stdout_is_tty, const char* no_color_env);

// The matrices as text for a terminal: a header per rail, column numbers, one row per host
// ("NN name  glyphs"), the fold note, the reference and the legend.
std::string renderTerminal(const std::vector<Matrix>& matrices,
                           const std::vector<Suspect>& suspects, const TerminalOptions& opts);

// "reference: Gb/s threshold 25 (bandwidth_gbps_min); us best cell 2.10" for a legend.
std::string referenceText(const Matrix& m);

// The legend, one line per item, without colour.
std::vector<std::string> legendLines();

}  // namespace gdrmesh::report
