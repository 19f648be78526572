// The acceptance report and the terminal matrix through real processes: a coordinator, four
// workers on the software transport, the CLI, the real SQLite file. A host class with an
// unreachable threshold makes every pair of w4 fail, deterministically.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class ReportTest : public ::testing::Test {
 protected:
  // Runs the sweep once for every test of the suite's process (each TEST_F has its own
  // cluster: the fixture is cheap enough at 4 workers).
  std::string runFailingSweep() {
    c_.startCoordinator();
    for (const char* w : {"w1", "w2", "w3", "w4"}) c_.startWorker(w);
    const std::string cfg = c_.dir() + "/cluster.yaml";
    std::ofstream(cfg) << "thresholds:\n  bandwidth_gbps_min: 0.001\n"
                          "host_classes:\n  - name: strict\n    match: \"w4\"\n"
                          "    thresholds:\n      bandwidth_gbps_min: 100000\n";
    auto r = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "64KiB", "--iters", "20",
                     "--config", cfg});
    EXPECT_EQ(r.exit_code, 1) << "the sweep fails on w4: " << r.out << r.err;
    auto rows = c_.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
    return rows.empty() ? "" : rows[0]["id"];
  }
  LocalCluster c_;
};

TEST_F(ReportTest, MarkdownAndHtmlReportsOfASweepWithAFailure) {
  const std::string id = runFailingSweep();
  ASSERT_FALSE(id.empty());
  const std::string kernel = trimmed(readFile("/proc/sys/kernel/osrelease"));

  const std::string md_path = c_.dir() + "/report.md";
  auto md = c_.cli({"report", id, "--format", "md", "--out", md_path});
  ASSERT_EQ(md.exit_code, 0) << md.out << md.err;
  EXPECT_NE(md.err.find("written to " + md_path), std::string::npos) << md.err;
  const std::string text = readFile(md_path);
  for (const std::string& s :
       {"# GPUDirect RDMA acceptance report: sweep " + id, std::string("**Verdict: FAIL**"),
        std::string("## Failures ("), std::string("bandwidth\\_gbps\\_min 100000.000"),
        std::string("class strict"), std::string("## Suspects"), std::string("1. host w4"),
        std::string("## Environment"), std::string("| w1 | online | 0.1.0 | ") + kernel + " |",
        std::string("## Matrix")}) {
    EXPECT_NE(text.find(s), std::string::npos) << "missing " << s << " in\n" << text;
  }
  // Every failure is a pair of w4, and each of w1..w3 failed with it.
  std::istringstream lines(text);
  std::set<std::string> failed_with;
  bool in_failures = false;
  int x_cells = 0;
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("## ", 0) == 0) in_failures = l.rfind("## Failures", 0) == 0;
    if (in_failures && l.rfind("| ", 0) == 0 && l.find("| Initiator") == std::string::npos &&
        l.find("---") == std::string::npos) {
      EXPECT_NE(l.find(" w4 |"), std::string::npos) << l;
      for (const char* w : {"w1", "w2", "w3"}) {
        if (l.find(std::string("| ") + w + " |") != std::string::npos) failed_with.insert(w);
      }
    }
    // Matrix rows: "| 2 w2 | . | \\+ | X | ... |": an X only in w4's row or column (4th).
    if (l.size() > 6 && l.rfind("| ", 0) == 0 && std::isdigit(static_cast<unsigned char>(l[2])) &&
        l.find(" w") == 3) {
      std::vector<std::string> cells;
      std::istringstream row(l.substr(l.find('|', 1) + 1));
      for (std::string c; std::getline(row, c, '|');) {
        if (!c.empty() && c != " ") cells.push_back(c);
      }
      ASSERT_EQ(cells.size(), 4u) << l;
      for (size_t i = 0; i < cells.size(); ++i) {
        if (cells[i] != " X ") continue;
        ++x_cells;
        EXPECT_TRUE(l.rfind("| 4 w4 |", 0) == 0 || i == 3) << l;
      }
    }
  }
  EXPECT_EQ(failed_with, (std::set<std::string>{"w1", "w2", "w3"})) << text;
  EXPECT_GE(x_cells, 3) << text;

  // HTML to stdout (no --out): one self-contained document.
  auto html = c_.cli({"report", id, "--format", "html"});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.out.find("id=\"verdict\" class=\"verdict fail\">FAIL<"), std::string::npos);
  EXPECT_NE(html.out.find("<td class=\"cf\" title=\"w1 -&gt; w4: FAIL"), std::string::npos)
      << html.out;
  EXPECT_EQ(html.out.find("http://"), std::string::npos);
  EXPECT_EQ(html.out.find("https://"), std::string::npos);

  // Bad input names the flag.
  auto bad = c_.cli({"report", id, "--format", "pdf"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--format"), std::string::npos) << bad.err;
  auto missing = c_.cli({"report", "no-such-sweep", "--format", "md"});
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  auto unwritable = c_.cli({"report", id, "--out", c_.dir() + "/no/such/dir/r.html"});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_NE(unwritable.err.find("--out"), std::string::npos) << unwritable.err;
}

TEST_F(ReportTest, SweepShowMatrixInTheTerminal) {
  const std::string id = runFailingSweep();
  ASSERT_FALSE(id.empty());
  // stdout is a pipe here: no colour, whatever the terminal.
  auto r = c_.cli({"sweep", "show", id, "--matrix"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  for (const char* s : {"matrix: 4 hosts", "legend", "X  failed",
                        "reference: bandwidth_gbps_min 0.001, 100000 Gb/s"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing " << s << " in\n" << r.out;
  }
  // Rows "N wN  c c c c": every X in w4's row or column.
  std::istringstream lines(r.out);
  int rows = 0, x_cells = 0;
  for (std::string l; std::getline(lines, l);) {
    if (l.size() < 5 || !std::isdigit(static_cast<unsigned char>(l[0])) || l[1] != ' ' ||
        l[2] != 'w') {
      continue;
    }
    ++rows;
    const std::string cells = l.substr(4);
    ASSERT_EQ(cells.size(), 8u) << l;
    for (size_t i = 0; i < 4; ++i) {
      if (cells[2 * i + 1] != 'X') continue;
      ++x_cells;
      EXPECT_TRUE(l[0] == '4' || i == 3) << l;
    }
  }
  EXPECT_EQ(rows, 4) << r.out;
  EXPECT_GE(x_cells, 3) << r.out;
  auto json = c_.cli({"sweep", "show", id, "--matrix", "-o", "json"});
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_NE(json.err.find("--matrix"), std::string::npos) << json.err;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Issue #22, "what an operator reads", through real processes: an acceptance run of two
// sweeps says what each ran (text, JUnit, report), the words of tests and verdicts cannot
// contradict, and the figures show even when every verdict passes.
TEST_F(ReportTest, AcceptanceRunSaysWhatEachSweepRan) {
  c_.startCoordinator();
  c_.startWorker("w1", {"--label", "rack=r1"});
  for (const char* w : {"w2", "w3"}) c_.startWorker(w);
  const std::string cfg = c_.dir() + "/accept.yaml";
  std::ofstream(cfg) << "sweeps:\n"
                        "  - pattern: all-pairs\n    op: write\n    sizes: [4KiB, 64KiB]\n"
                        "    iters: 20\n"
                        "  - pattern: all-pairs\n    op: read\n    size: 4KiB\n    iters: 30\n"
                        "thresholds:\n  bandwidth_gbps_min: 0.0001\n";
  const std::string junit = c_.dir() + "/accept.xml";
  auto r = c_.cli({"accept", "--config", cfg, "--junit", junit});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* s : {"what ran: the config's 2 sweeps", "write bw 4KiB,64KiB  20 iters",
                        "read bw 4KiB         30 iters", "tests     9/9 ran: 9 data verified",
                        "verdicts  9 PASS, 0 FAIL, 0 SKIP: verdict PASS", "figures over pairs",
                        "write  bw    64KiB  3"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing " << s << " in\n" << r.out;
  }
  EXPECT_EQ(r.out.find("passed"), std::string::npos) << r.out;

  // JUnit: one suite per sweep of the config, cases of class gdrmesh.<pattern>.
  const std::string xml = readFile(junit);
  EXPECT_EQ(count(xml, "<testsuite "), 2u) << xml;
  EXPECT_EQ(count(xml, "classname=\"gdrmesh.all-pairs\""), 9u) << xml;
  EXPECT_EQ(xml.find("gdrmesh.config"), std::string::npos) << xml;

  // The acceptance report: each sweep as it ran, not the CLI's template (write bw 64KiB x 1000).
  auto rows = c_.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
  ASSERT_FALSE(rows.empty());
  const std::string id = rows[0]["id"];
  auto md = c_.cli({"report", id, "--format", "md"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  for (const char* s :
       {"the config's 2 sweeps ran",
        "| 1 | all-pairs, one | write bw | 4KiB, 64KiB "
        "| 20 (+",
        "| 2 | all-pairs, one | read bw | 4KiB | 30 (+", "| host -&gt; host | 3 |", "## Figures"}) {
    EXPECT_NE(md.out.find(s), std::string::npos) << "missing " << s << " in\n" << md.out;
  }
  EXPECT_EQ(md.out.find("1000 (+"), std::string::npos) << md.out;
  EXPECT_EQ(md.out.find("reg auto"), std::string::npos) << md.out;

  // --verdicts all prints every verdict, not only the failing ones.
  auto all = c_.cli({"sweep", "show", id, "--verdicts", "all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("verdicts (9, 0 failing)"), std::string::npos) << all.out;
  EXPECT_EQ(count(all.out, "\nPASS "), 9u) << all.out;

  // The labels --select matches, in every output of `workers`.
  auto ws = c_.cli({"workers"});
  EXPECT_NE(ws.out.find("rack=r1"), std::string::npos) << ws.out;
  auto wj = c_.cli({"workers", "-o", "json"});
  EXPECT_NE(wj.out.find("\"rack\": \"r1\""), std::string::npos) << wj.out;
  auto wc = c_.cli({"workers", "-o", "csv"});
  EXPECT_NE(wc.out.find("rack=r1"), std::string::npos) << wc.out;

  // -o csv for `test` and `sweep run`, as for the other queries.
  auto t = c_.cli({"test", "w1", "w2", "--size", "4KiB", "--iters", "10", "-o", "csv"});
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_EQ(t.out.rfind("test_id,run_id,started,", 0), 0u) << t.out;
  EXPECT_EQ(count(t.out, "\r\n"), 2u) << t.out;
  auto sw = c_.cli({"sweep", "run", "--pattern", "pairs", "w1:w2", "--size", "4KiB", "--iters",
                    "10", "-o", "csv"});
  ASSERT_EQ(sw.exit_code, 0) << sw.out << sw.err;
  EXPECT_EQ(sw.out.rfind("test_id,src,dst,", 0), 0u) << sw.out;

  // An unknown command says so and names the nearest.
  auto typo = c_.cli({"wokers"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("unknown command 'wokers'; did you mean 'workers'?"), std::string::npos)
      << typo.err;
}

// Issue #22: `sweep show --matrix` of a running sweep drew nothing though results existed (the
// verdicts are stored at the end). Each test here runs 6 s, so the sweep is still running when
// the first result is stored; it is cancelled after the check.
TEST_F(ReportTest, MatrixOfARunningSweep) {
  c_.startCoordinator();
  for (const char* w : {"w1", "w2", "w3"}) c_.startWorker(w);
  auto started = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--direction", "both", "--size",
                         "4KiB", "--duration", "6s", "--detach"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  std::string id = trimmed(started.out);
  bool stored = false;
  for (int i = 0; i < 600 && !stored; ++i) {  // until the first result is stored (<= 60 s)
    stored = !c_.query("SELECT id FROM results WHERE run_id = '" + id + "' LIMIT 1").empty();
    if (!stored) ::usleep(100 * 1000);
  }
  ASSERT_TRUE(stored);
  auto r = c_.cli({"sweep", "show", id, "--matrix"});
  c_.cli({"sweep", "cancel", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.out.find(" running"), std::string::npos) << "the sweep ended early:\n" << r.out;
  EXPECT_NE(r.out.find("provisional: judged from the "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pairs tested: "), std::string::npos) << r.out;  // a matrix is drawn
}

}  // namespace
}  // namespace gdrmesh::testing
