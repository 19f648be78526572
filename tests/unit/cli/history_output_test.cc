// CSV (RFC 4180), the history and compare tables, one result whole, workers with folded notes,
// and "N of M" under the results table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/output.h"
#include "cli/sweep_output.h"
#include "common/capabilities.h"
#include "coordinator/service/history_convert.h"

namespace gdrmesh::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TestResult sample(const std::string& id) {
  TestResult r;
  r.test_id = id;
  r.run_id = "s-1";
  r.started_ms = 1'795'132'800'000;  // 2026-11-20T00:00:00Z
  r.finished_ms = r.started_ms + 1500;
  r.op = Op::kRead;
  r.mode = Mode::kBandwidth;
  r.transport = TransportKind::kVerbs;
  r.initiator = {"h1",
                 "node-1",
                 "mlx5_0",
                 1,
                 0,
                 "0000:17:00.0",
                 MemoryKind::kCuda,
                 RegPath::kDmabuf,
                 3,
                 "PIX",
                 "cpu 3 (numa 0, nic mlx5_0)"};
  r.target = {"h2", "node-2", "mlx5_1", 1, -1, "", MemoryKind::kHost, RegPath::kHost, 3, "", ""};
  r.message_size = 65536;
  r.iterations = 100;
  r.measurement.has_bandwidth = true;
  r.measurement.bw.avg_gbps = 97.25;
  r.status = TestStatus::kPassed;
  return r;
}

TEST(Csv, QuotesOnlyWhatRfc4180Requires) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField(""), "");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csvRows({{"h1", "h2"}, {"a,b", "c"}}), "h1,h2\r\n\"a,b\",c\r\n");
}

TEST(Csv, ResultsHaveAHeaderAndOneRowEachWithEveryField) {
  TestResult failed = sample("t-2");
  failed.status = TestStatus::kFailed;
  failed.measurement.has_bandwidth = false;
  failed.reason = "QP error, \"retry exceeded\"\non h2";
  const std::string csv = resultsCsv({sample("t-1"), failed});
  // Three records (header + 2), each ending in CRLF; the reason's newline stays inside quotes.
  size_t records = 0;
  for (size_t p = csv.find("\r\n"); p != std::string::npos; p = csv.find("\r\n", p + 2)) {
    ++records;
  }
  EXPECT_EQ(records, 3u) << csv;
  EXPECT_EQ(csv.rfind("test_id,run_id,started,finished,status,op,mode,transport,", 0), 0u);
  EXPECT_THAT(csv, HasSubstr("initiator_reg_path"));
  // Each side's CPU binding (docs/metrics.md), before the reason, which stays last.
  EXPECT_THAT(csv,
              HasSubstr(",integrity_where,initiator_cpu_binding,target_cpu_binding,reason\r\n"));
  EXPECT_THAT(csv,
              HasSubstr(",\"cpu 3 (numa 0, nic mlx5_0)\",,"));  // quoted (a comma); target: none
  EXPECT_THAT(csv, HasSubstr("t-1,s-1,2026-11-20T00:00:00.000Z,2026-11-20T00:00:01.500Z,PASSED,"
                             "read,bw,verbs,true,"));
  EXPECT_THAT(csv, HasSubstr(",dmabuf,"));
  EXPECT_THAT(csv, HasSubstr(",97.25,"));
  EXPECT_THAT(csv, HasSubstr("\"QP error, \"\"retry exceeded\"\"\non h2\"\r\n"));
  // Every row has as many fields as the header (counting commas outside quotes).
  std::vector<size_t> fields;
  size_t n = 1;
  bool quoted = false;
  for (size_t i = 0; i < csv.size(); ++i) {
    if (csv[i] == '"') quoted = !quoted;
    if (quoted) continue;
    if (csv[i] == ',') ++n;
    if (csv[i] == '\n') {
      fields.push_back(n);
      n = 1;
    }
  }
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[0], fields[1]);
  EXPECT_EQ(fields[0], fields[2]);
}

TEST(Csv, RecordsFlattenInTheEncodingsOrder) {
  SweepProgress a;
  a.id = "s-1";
  a.state = SweepState::kFinished;
  a.name = "nightly, rack \"r1\"";
  SweepProgress b;
  b.id = "s-2";
  const std::string csv = recordsCsv({toJson(a), toJson(b)}, toJson(SweepProgress{}));
  EXPECT_EQ(csv.rfind("id,state,pattern,name,created,created_ms,", 0), 0u) << csv;
  EXPECT_THAT(csv, HasSubstr("\r\ns-1,finished,,\"nightly, rack \"\"r1\"\"\",,0,"));
  EXPECT_THAT(csv, HasSubstr("\r\ns-2,queued,,,"));
  EXPECT_THAT(csv, HasSubstr(",verdict_counts.pass,verdict_counts.fail,verdict_counts.skip,"));
  PairVerdict v;
  v.src = "h1";
  v.reasons = {"slow", "errors"};
  EXPECT_THAT(recordsCsv({toJson(v)}, toJson(PairVerdict{})), HasSubstr("slow; errors"));
  // No records: the header alone.
  EXPECT_EQ(recordsCsv({}, toJson(ScheduleSummary{})).rfind("name,cron,timezone,", 0), 0u);
}

TEST(HistoryTable, ShowsTimeRunTestDirectionFigureStatusPathAndReason) {
  TestResult back = sample("t-2");
  std::swap(back.initiator, back.target);
  back.status = TestStatus::kFailed;
  back.measurement.has_bandwidth = false;
  back.reason = "link down";
  const std::string t = historyTable({sample("t-1"), back});
  EXPECT_THAT(t, HasSubstr("TIME"));
  EXPECT_THAT(t, HasSubstr("2026-11-20T00:00:00"));
  EXPECT_THAT(t, HasSubstr("s-1"));
  EXPECT_THAT(t, HasSubstr("t-1"));
  EXPECT_THAT(t, HasSubstr("h1/mlx5_0 gpu0 -> h2/mlx5_1"));
  EXPECT_THAT(t, HasSubstr("h2/mlx5_1 -> h1/mlx5_0 gpu0"));
  EXPECT_THAT(t, HasSubstr("97.25 Gb/s"));
  EXPECT_THAT(t, HasSubstr("verbs cuda(dmabuf)->host GPUDirect"));
  EXPECT_THAT(t, HasSubstr("FAILED"));
  EXPECT_THAT(t, HasSubstr("link down"));
  EXPECT_THAT(historyTable({}), HasSubstr("no results"));
}

v1::CompareSweepsResponse wireComparison() {
  v1::CompareSweepsResponse c;
  c.set_a("s-old");
  c.set_b("s-new");
  c.set_tolerance_pct(5);
  c.set_worse(1);
  c.set_added(1);
  auto* w = c.add_rows();
  w->set_src("h1");
  w->set_dst("h2");
  w->set_op(v1::OP_WRITE);
  w->set_mode(v1::MODE_BANDWIDTH);
  w->set_message_size(65536);
  w->set_change("worse");
  w->set_a(100);
  w->set_b(80);
  w->set_unit("Gb/s");
  w->set_change_pct(-20);
  w->set_a_status(v1::TEST_STATUS_PASSED);
  w->set_b_status(v1::TEST_STATUS_PASSED);
  w->set_reason("-20.0% bandwidth, \"slow\"");
  auto* n = c.add_rows();
  n->set_src("h3");
  n->set_dst("h1");
  n->set_op(v1::OP_WRITE);
  n->set_mode(v1::MODE_LATENCY);
  n->set_message_size(8);
  n->set_change("new");
  n->set_b(2.5);
  n->set_unit("us");
  n->set_b_status(v1::TEST_STATUS_PASSED);
  return c;
}

// Converted as `gdrmesh compare` converts the reply: once, then printed.
SweepComparison comparison() {
  return convert::fromProto(wireComparison());
}

TEST(CompareTable, RowsThenASummaryLine) {
  const std::string t = compareTable(comparison());
  EXPECT_THAT(t, HasSubstr("worse"));
  EXPECT_THAT(t, HasSubstr("100.00 Gb/s"));
  EXPECT_THAT(t, HasSubstr("80.00 Gb/s"));
  EXPECT_THAT(t, HasSubstr("-20.0"));
  EXPECT_THAT(t, HasSubstr("PASSED -> PASSED"));
  EXPECT_THAT(t, HasSubstr("- -> PASSED"));
  EXPECT_THAT(t, HasSubstr("64KiB"));
  EXPECT_LT(t.find("worse"), t.find("new"));
  EXPECT_THAT(t, HasSubstr("compare s-old -> s-new (tolerance 5.0%): 1 worse, 0 better, "
                           "0 unchanged, 1 new, 0 missing\n"));
}

TEST(CompareCsv, EmptyCellsForAbsentFigures) {
  const std::string csv = compareCsv(comparison());
  EXPECT_EQ(csv.rfind("change,src,dst,op,mode,message_size_bytes,a,b,unit,change_pct,", 0), 0u);
  EXPECT_THAT(csv, HasSubstr("worse,h1,h2,write,bw,65536,100,80,Gb/s,-20,PASSED,PASSED,,,"
                             "\"-20.0% bandwidth, \"\"slow\"\"\"\r\n"));
  EXPECT_THAT(csv, HasSubstr("new,h3,h1,write,lat,8,,2.5,us,,,PASSED,,,\r\n"));
}

TEST(ResultWhole, EveryFieldOfBothSides) {
  TestResult r = sample("t-9");
  r.plan_index = 4;
  r.path_mtu = 4096;
  r.integrity.checked = true;
  r.integrity.bytes_checked = 65536;
  r.measurement.counters.valid = true;
  r.measurement.counters.errors = 2;
  const std::string t = resultWhole(r);
  for (const char* want : {"t-9",
                           "PASSED",
                           "s-1",
                           "plan index 4",
                           "read bw",
                           "64KiB",
                           "x 100",
                           "path MTU 4096",
                           "verbs cuda(dmabuf)->host GPUDirect",
                           "initiator  h1 (host node-1)  nic mlx5_0 port 1",
                           "gid index 3",
                           "gpu 0 (0000:17:00.0)",
                           "registration dmabuf",
                           "GPU-NIC path PIX",
                           "target     h2 (host node-2)  nic mlx5_1",
                           "registration host",
                           "avg 97.250 Gb/s",
                           "latency    -",
                           "errors 2",
                           "65536 B checked",
                           "gpudirect  yes"}) {
    EXPECT_THAT(t, HasSubstr(want)) << t;
  }
}

// Each side's own part of the claim: GPU (dmabuf) -> GPU (staged) shows "GPUDirect yes" on the
// initiator, "no" on the target, and the test does not claim GPUDirect.
TEST(ResultWhole, EachGpuSideSaysWhetherItWasGpuDirect) {
  TestResult r = sample("t-10");
  r.status = TestStatus::kPassed;
  r.transport = TransportKind::kVerbs;
  r.initiator.memory = r.target.memory = MemoryKind::kCuda;
  r.initiator.reg_path = RegPath::kDmabuf;
  r.target.reg_path = RegPath::kStaged;
  const std::string t = resultWhole(r);
  EXPECT_THAT(t, HasSubstr("verbs cuda(dmabuf)->cuda(staged)\n")) << t;
  const size_t target = t.find("target     ");
  ASSERT_NE(target, std::string::npos) << t;
  EXPECT_THAT(t.substr(0, target), HasSubstr("registration dmabuf"));
  EXPECT_THAT(t.substr(0, target), HasSubstr("GPUDirect yes"));
  EXPECT_THAT(t.substr(target), HasSubstr("registration staged"));
  EXPECT_THAT(t.substr(target), HasSubstr("GPUDirect no"));
  EXPECT_THAT(t, HasSubstr("gpudirect  no"));
}

TEST(WorkersTable, ShowsEachTransportsCapabilities) {
  EXPECT_EQ(capabilityCell(verbsCapabilities()),
            "verbs[gpu:dmabuf/peermem/staged imm cm bidir inline]");
  EXPECT_EQ(capabilityCell(emulatedCapabilities()), "emulated[gpu:staged imm(bw)]");
  TransportCapabilities host_only;
  host_only.transport = TransportKind::kEmulated;
  host_only.memory = {MemoryKind::kHost};
  host_only.reg_paths = {RegPath::kHost};
  host_only.bandwidth_ops = {Op::kWrite};
  EXPECT_EQ(capabilityCell(host_only), "emulated[]");

  WorkerView w;
  w.name = "h1";
  w.state = "online";
  w.inventory.hostname = "n1";
  w.inventory.transports = {"verbs", "emulated"};
  w.inventory.capabilities = {verbsCapabilities(), emulatedCapabilities()};
  WorkerView old;  // a worker from before capabilities were reported
  old.name = "h2";
  old.state = "online";
  old.inventory.hostname = "n2";
  old.inventory.transports = {"emulated"};
  const std::string t = workersTable({w, old});
  EXPECT_THAT(t, HasSubstr("CAPABILITIES"));
  EXPECT_THAT(t, HasSubstr("verbs[gpu:dmabuf/peermem/staged imm cm bidir inline] "
                           "emulated[gpu:staged imm(bw)]"));
  // h2's row: NAME STATE HOST LABELS TRANSPORTS CAPABILITIES ..., with no labels and no
  // capabilities to show.
  const size_t h2 = t.find("\nh2 ");
  ASSERT_NE(h2, std::string::npos) << t;
  std::istringstream row(t.substr(h2 + 1, t.find('\n', h2 + 1) - h2 - 1));
  std::vector<std::string> cells{std::istream_iterator<std::string>(row), {}};
  ASSERT_GE(cells.size(), 6u) << t;
  EXPECT_EQ(cells[3], "-") << t;
  EXPECT_EQ(cells[4], "emulated") << t;
  EXPECT_EQ(cells[5], "-") << t;
}

TEST(WorkersTable, NotesAreFoldedToACountUnlessAsked) {
  WorkerView w;
  w.name = "h1";
  w.state = "online";
  w.inventory.notes = {"verbs: no RDMA device", "cuda: no driver", "gpu 1: no dma-buf"};
  WorkerView quiet;
  quiet.name = "h2";
  quiet.state = "online";
  const std::string folded = workersTable({w, quiet});
  EXPECT_THAT(folded, HasSubstr("3 notes (--notes)"));
  EXPECT_THAT(folded, Not(HasSubstr("no RDMA device")));
  // Header and one line per worker, whatever their notes.
  EXPECT_EQ(std::count(folded.begin(), folded.end(), '\n'), 3);
  const std::string shown = workersTable({w, quiet}, true);
  EXPECT_THAT(shown, HasSubstr("h1: verbs: no RDMA device"));
  EXPECT_THAT(shown, HasSubstr("h1: gpu 1: no dma-buf"));
  EXPECT_THAT(workersCsv({w}), HasSubstr("verbs: no RDMA device; cuda: no driver"));
}

// Issue #23: the coordinator's findings about a worker (protocol violations, a registration that
// contradicts its host class) are always shown, never folded behind --notes.
TEST(WorkersTable, TheCoordinatorsFindingsAreAlwaysShown) {
  WorkerView w;
  w.name = "rogue";
  w.state = "online";
  w.findings = {"2 protocol violations in pair tests, last: integrity: unasked",
                "inventory.gpus: 16 registered (host class 'ndr' expects 8)"};
  WorkerView quiet;
  quiet.name = "h2";
  quiet.state = "online";
  const std::string t = workersTable({w, quiet});
  EXPECT_THAT(t, HasSubstr("2 FINDINGS"));
  EXPECT_THAT(t, HasSubstr("findings of the coordinator\n"));
  EXPECT_THAT(t, HasSubstr("rogue: 2 protocol violations in pair tests, last: integrity: unasked"));
  EXPECT_THAT(t, HasSubstr("rogue: inventory.gpus: 16 registered (host class 'ndr' expects 8)"));
  EXPECT_THAT(workersCsv({w}), HasSubstr("finding: 2 protocol violations"));
  EXPECT_THAT(workersTable({quiet}), Not(HasSubstr("findings")));
}

TEST(ResultsTable, ShowsTestAndRunIdsAndNofM) {
  const std::string t = resultsTable({sample("t-1"), sample("t-2")}, 1234);
  EXPECT_THAT(t, HasSubstr("TEST ID"));
  EXPECT_THAT(t, HasSubstr("RUN"));
  EXPECT_THAT(t, HasSubstr("t-2"));
  EXPECT_THAT(t, HasSubstr("s-1"));
  EXPECT_THAT(t, HasSubstr("2 of 1234 results"));
  EXPECT_THAT(resultsTable({sample("t-1")}, 1), HasSubstr("1 of 1 results"));
}

}  // namespace
}  // namespace gdrmesh::cli
