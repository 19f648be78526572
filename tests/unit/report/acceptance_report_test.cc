// The acceptance report renderers: content, Markdown tables, escaping of hostile strings, and
// an HTML file that needs nothing from the network.
#include "cli/report/acceptance_report.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace gdrmesh::report {
namespace {

const std::string kHostile = "<script>alert('x')</script>|a\nb & \"q\" `c` *d*";

PairVerdict verdict(const std::string& src, const std::string& dst, VerdictKind k, double gbps) {
  PairVerdict v;
  v.test_id = "t-" + src + "-" + dst;
  v.src = src;
  v.dst = dst;
  v.message_size = 65536;
  v.verdict = k;
  v.value = gbps;
  v.unit = "Gb/s";
  return v;
}

WorkerStatus worker(const std::string& name) {
  WorkerStatus w;
  w.name = name;
  w.state = "online";
  w.inventory.hostname = name;
  w.inventory.worker_version = "0.1.0";
  w.inventory.kernel_release = "6.1.0-18-amd64";
  w.inventory.nvidia_driver_version = "550.54.15";
  w.inventory.cuda_driver_version = "12.4";
  w.inventory.rdma_core_version = "44.0";
  Nic n;
  n.name = "mlx5_0";
  n.fw_version = "28.39.1002";
  NicPort p;
  p.state = "ACTIVE";
  p.rate_gbps = 400;
  p.link_layer = "InfiniBand";
  n.ports.push_back(p);
  w.inventory.nics.push_back(n);
  Gpu g;
  g.name = "NVIDIA H100 80GB HBM3";
  g.gpu_direct_rdma_supported = true;
  w.inventory.gpus = {g, g};
  w.inventory.preflight.push_back({"gpudirect.peermem", "peer memory", "PASS", "", ""});
  return w;
}

// Four hosts; w2->w4 failed, w3 suspected; w4 has no stored inventory; w3's firmware, a
// preflight detail and the failure reason are hostile.
ReportInput sample(ClusterConfig* cfg) {
  ReportInput in;
  auto& s = in.sweep;
  s.progress.id = "s-20261123-0930";
  s.progress.state = SweepState::kFinished;
  s.progress.verdict = "FAIL";
  s.progress.pattern = "all-pairs";
  s.progress.started_ms = 1795426200000;
  s.progress.finished_ms = 1795426262000;
  s.progress.tests_total = s.progress.tests_done = 6;
  s.progress.tests_failed = 1;
  s.spec.pattern = SweepPattern::kAllPairs;
  s.spec.test.message_size = 65536;
  s.spec.config_yaml = "thresholds:\n  bandwidth_gbps_min: 5\n";
  const char* hosts[] = {"w1", "w2", "w3", "w4"};
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) {
      const bool fail = a == 1 && b == 3;
      PairVerdict v = verdict(hosts[a], hosts[b], fail ? VerdictKind::kFail : VerdictKind::kPass,
                              fail ? 0.5 : 10);
      if (fail) v.reasons = {"bandwidth_gbps_min: 0.50 Gb/s < 5 " + kHostile};
      s.verdicts.push_back(v);
      TestResult r;
      r.test_id = v.test_id;
      r.initiator.worker = hosts[a];
      r.target.worker = hosts[b];
      r.status = TestStatus::kPassed;
      r.measurement.has_bandwidth = true;
      r.measurement.bw.avg_gbps = v.value;
      r.measurement.bw.peak_gbps = v.value + 1;
      s.results.push_back(r);
    }
  }
  Suspect sus;
  sus.kind = "host";
  sus.name = "w3";
  sus.score = 0.8;
  sus.evidence = {"failed with 1 of 3 partners"};
  Suspect low;
  low.kind = "link";
  low.name = "w2<->w4";
  low.score = 0.2;
  s.suspects = {low, sus};
  in.workers = {worker("w1"), worker("w2"), worker("w3")};
  in.workers[2].inventory.nics[0].fw_version = kHostile;
  in.workers[2].inventory.preflight.push_back(
      {"rdma.devices", "RDMA devices", "FAIL", kHostile, "load the driver"});
  cfg->thresholds.bandwidth_gbps_min = 5;
  in.config = cfg;
  in.generated_ms = 1795426300000;
  return in;
}

TEST(AcceptanceReport, MarkdownHasEverySection) {
  ClusterConfig cfg;
  const std::string md = renderMarkdown(sample(&cfg));
  for (const char* s :
       {"# GPUDirect RDMA acceptance report: sweep s-20261123-0930", "**Verdict: FAIL**",
        "## Summary", "## Configuration", "## Thresholds", "## Matrix", "## Suspects",
        "## Failures (1)", "## Environment", "bandwidth\\_gbps\\_min 5", "6.1.0-18-amd64",
        "550.54.15", "28.39.1002", "2x NVIDIA H100 80GB HBM3 (GPUDirect RDMA 2/2)",
        "no stored inventory", "2026-11-23T09:30:00", "Duration | 1m02s"}) {
    EXPECT_NE(md.find(s), std::string::npos) << "missing " << s << "\n" << md;
  }
  // Suspects ranked: the host (0.8) before the link (0.2).
  EXPECT_LT(md.find("1. host w3 (score 0.80)"), md.find("2. link w2&lt;-&gt;w4"));
  EXPECT_NE(md.find("failed with 1 of 3 partners"), std::string::npos);
  // The failure with its figures.
  EXPECT_NE(md.find("| 1 | w2 | w4 | 64KiB | 0.50 Gb/s | avg 0.50 Gb/s, peak 1.50 Gb/s"),
            std::string::npos)
      << md;
}

// Every row of a Markdown table has as many unescaped pipes as its header: no cell breaks it.
TEST(AcceptanceReport, MarkdownTablesSurviveHostileStrings) {
  ClusterConfig cfg;
  const std::string md = renderMarkdown(sample(&cfg));
  EXPECT_EQ(md.find("<script"), std::string::npos) << "no raw HTML";
  EXPECT_NE(md.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(md.find("\\|a b"), std::string::npos) << "pipe escaped, newline a space";
  auto pipes = [](const std::string& l) {
    int n = 0;
    for (size_t i = 0; i < l.size(); ++i) n += l[i] == '|' && (i == 0 || l[i - 1] != '\\');
    return n;
  };
  std::istringstream lines(md);
  int expected = -1, rows = 0;
  bool in_fence = false;
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("```", 0) == 0) in_fence = !in_fence;
    if (in_fence) continue;
    if (l.empty() || l[0] != '|') {
      expected = -1;
      continue;
    }
    if (expected < 0) expected = pipes(l);
    EXPECT_EQ(pipes(l), expected) << l;
    ++rows;
  }
  EXPECT_GT(rows, 30);
}

TEST(AcceptanceReport, HtmlEscapesAndIsSelfContained) {
  ClusterConfig cfg;
  const std::string html = renderHtml(sample(&cfg));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "hostile text is not markup";
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  for (const char* banned : {"http://", "https://", "<link", " src=", "href=", "url(", "@import"}) {
    EXPECT_EQ(html.find(banned), std::string::npos) << "external reference " << banned;
  }
  // Colour, a legend and the failed cell with its figure in the tooltip.
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("class=\"legend\""), std::string::npos);
  EXPECT_NE(
      html.find("<td class=\"cf\" title=\"w2 -&gt; w4: FAIL 64KiB 0.50 Gb/s (threshold 5.00)"),
      std::string::npos)
      << html;
  EXPECT_NE(html.find("id=\"verdict\" class=\"verdict fail\">FAIL<"), std::string::npos);
}

TEST(AcceptanceReport, LargeSweepsFoldTheMatrix) {
  ClusterConfig cfg;
  ReportInput in = sample(&cfg);
  in.sweep.verdicts.clear();
  in.sweep.results.clear();
  in.sweep.suspects.clear();
  for (int i = 0; i < 1024; ++i) {
    in.sweep.verdicts.push_back(verdict("n" + std::to_string(1000 + i),
                                        "n" + std::to_string(1000 + (i + 1) % 1024),
                                        i == 10 ? VerdictKind::kFail : VerdictKind::kPass, 10));
  }
  const std::string md = renderMarkdown(in);
  EXPECT_NE(md.find("Showing 2 of 1024 hosts"), std::string::npos);
  EXPECT_NE(md.find("1022 hosts folded"), std::string::npos);
  const std::string html = renderHtml(in);
  EXPECT_NE(html.find("Showing 2 of 1024 hosts"), std::string::npos);
  // The environment table still lists every host of the sweep.
  EXPECT_EQ(sweepHosts(in.sweep).size(), 1024u);
  EXPECT_LT(md.size(), 512u * 1024u);
}

TEST(AcceptanceReport, NoConfigAndNoFailures) {
  ReportInput in;
  in.sweep.progress.id = "s-1";
  in.sweep.progress.verdict = "PASS";
  in.sweep.verdicts = {verdict("a", "b", VerdictKind::kPass, 1)};
  const std::string md = renderMarkdown(in);
  EXPECT_NE(md.find("No cluster config"), std::string::npos);
  EXPECT_NE(md.find("## Failures (0)"), std::string::npos);
  EXPECT_NE(md.find("None: no pair failed."), std::string::npos);
}

// An acceptance run has no test of its own: the Configuration shows each sweep of its config as
// it ran (issue #22: it showed the CLI's template, write bw 64KiB x 1000, for every `accept`),
// and a host side reads "host", never "gpu0 reg auto".
TEST(AcceptanceReport, AcceptanceRunShowsEachSweepOfItsConfig) {
  ClusterConfig cfg;
  ReportInput in = sample(&cfg);
  in.sweep.spec = SweepSpec{};
  in.sweep.spec.pattern_from_config = true;  // the CLI's template defaults stay in spec.test
  in.sweep.spec.test.initiator.gpu = 0;
  SweepSpec write;
  write.pattern = SweepPattern::kAllPairs;
  write.test.op = Op::kWrite;
  write.test.iterations = 50;
  write.sizes = {4096, 1048576};
  SweepSpec lat = write;
  lat.test.mode = Mode::kLatency;
  lat.test.iterations = 1000;
  lat.sizes = {2};
  lat.test.target.memory = MemoryKind::kCuda;
  lat.test.target.reg = RegPath::kDmabuf;
  cfg.sweeps = {write, lat};
  in.sweep.parts = sweepParts(in.sweep.spec, cfg.sweeps, {6, 6});
  const std::string md = renderMarkdown(in);
  for (const char* s :
       {"the config's 2 sweeps ran", "| 1 | all-pairs, one | write bw | 4KiB, 1MiB | 50 (+",
        "| 2 | all-pairs, one | write lat | 2B | 1000 (+", "| host -&gt; host | 6 |",
        "| host -&gt; cuda gpu0, registration dmabuf | 6 |"}) {
    EXPECT_NE(md.find(s), std::string::npos) << "missing " << s << "\n" << md;
  }
  EXPECT_EQ(md.find("reg auto"), std::string::npos) << md;
  EXPECT_EQ(md.find("| Message sizes | 64KiB"), std::string::npos) << md;
  // Without parts from the coordinator, the parsed config still says what ran.
  in.sweep.parts.clear();
  const std::string old = renderMarkdown(in);
  EXPECT_NE(old.find("| 2 | all-pairs, one | write lat | 2B | 1000 (+"), std::string::npos) << old;
}

// The words cannot contradict: tests ran and their data was verified; the verdicts say PASS or
// FAIL (issue #22: "15 passed, 0 failed" beside verdict FAIL).
TEST(AcceptanceReport, TestWordsAndVerdictWordsDiffer) {
  ClusterConfig cfg;
  const std::string md = renderMarkdown(sample(&cfg));
  EXPECT_NE(md.find("6 of 6 ran: 5 data verified, 1 not verified, 0 skipped"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| Verdicts | FAIL 1, PASS 5, SKIP 0: verdict FAIL |"), std::string::npos)
      << md;
  EXPECT_EQ(md.find(" passed, "), std::string::npos) << md;
}

// Figures even when every verdict passes: the spread per (op, mode, size), the worst pairs and
// hosts.
TEST(AcceptanceReport, FiguresSection) {
  ClusterConfig cfg;
  ReportInput in = sample(&cfg);
  const std::string md = renderMarkdown(in);
  EXPECT_NE(md.find("## Figures"), std::string::npos) << md;
  EXPECT_NE(md.find("| write bw | 64KiB | 6 | 0.50 Gb/s | 10.00 Gb/s | 10.00 Gb/s | w2 -&gt; w4 "
                    "0.50"),
            std::string::npos)
      << md;
}

// A simulated result moved no byte: it never reads "data verified".
TEST(AcceptanceReport, SimulatedResultsSayNoDataMoved) {
  ClusterConfig cfg;
  ReportInput in = sample(&cfg);
  for (auto& r : in.sweep.results) {
    r.transport = TransportKind::kSimulated;
    r.integrity.checked = true;
    r.integrity.bytes_checked = 65536;
  }
  const std::string md = renderMarkdown(in);
  EXPECT_NE(md.find("simulated: no data moved"), std::string::npos) << md;
  EXPECT_EQ(md.find("data verified;"), std::string::npos) << md;
}

TEST(Escaping, HtmlAndMarkdown) {
  EXPECT_EQ(htmlEscape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(mdEscape("a|b\r\nc\\d *e* _f_ `g` [h] #i <j>"),
            "a\\|b c\\\\d \\*e\\* \\_f\\_ \\`g\\` \\[h\\] \\#i &lt;j&gt;");
}

}  // namespace
}  // namespace gdrmesh::report
