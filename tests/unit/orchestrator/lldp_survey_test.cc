// `fabric discover --lldp --all-workers` (coordinator/orchestrator/lldp_survey.h,
// FabricRecorder::recordLldpAll): every online worker asked at once over fake channels, under
// one deadline on a ManualClock (a worker that never answers, one whose channel even ignores its
// deadline), a concurrency bound, lost and offline workers; the answers merged and stored as ONE
// snapshot with a finding for every worker without an answer.
#include "coordinator/orchestrator/lldp_survey.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "coordinator/orchestrator/fabric_history.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/memory_store.h"

namespace gdrmesh::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

fabric::LldpNic nic(const std::string& device, const std::string& sw, const std::string& port) {
  fabric::LldpNic n;
  n.device = device;
  n.netdev = "ens_" + device;
  n.link_layer = "Ethernet";
  if (sw.empty()) {
    n.reason = "lldpd hears no neighbour on " + n.netdev;
    n.fix = "enable LLDP on the switch port";
    return n;
  }
  fabric::LldpNeighbour nb;
  nb.interface = n.netdev;
  nb.chassis_name = sw;
  nb.chassis_id = "id-" + sw;
  nb.chassis_id_type = "mac";
  nb.port_id = port;
  n.neighbour = nb;
  return n;
}

// A worker's LLDP answer: its NICs.
fabric::DiscoverOutcome lldpAnswer(const std::string& host, std::vector<fabric::LldpNic> nics) {
  fabric::DiscoverOutcome o;
  o.asked_lldp = true;
  fabric::LldpHost h;
  h.host = host;
  h.nics = std::move(nics);
  o.lldp = h;
  return o;
}

fabric::DiscoverOutcome noLldpd() {
  fabric::DiscoverOutcome o;
  o.asked_lldp = true;
  o.status = notFound("'lldpcli' not found: lldpd is not installed", fabric::kLldpdInstallFix);
  return o;
}

LldpWorkerReply reply(const std::string& worker, fabric::DiscoverOutcome o) {
  LldpWorkerReply r;
  r.worker = worker;
  r.outcome = std::move(o);
  return r;
}

size_t rows(MemoryStore& store) {
  FabricSnapshotQuery q;
  q.limit = 1000;
  auto r = store.listFabricSnapshots(q);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->size() : 0;
}

const LldpWorkerLine& line(const LldpAllRecord& all, const std::string& worker) {
  auto it = std::find_if(all.workers.begin(), all.workers.end(),
                         [&](const LldpWorkerLine& l) { return l.worker == worker; });
  EXPECT_NE(it, all.workers.end()) << worker;
  return *it;
}

std::vector<std::string> kinds(const FabricRecord& rec) {
  std::vector<std::string> out;
  for (const auto& f : rec.findings) out.push_back(f.kind);
  return out;
}

class LldpAllTest : public ::testing::Test {
 protected:
  ManualClock clock_{1'790'000'000'000};
  MemoryStore store_;
  FabricRecorder recorder_{store_, clock_};
  FakeDirectory dir_{clock_};

  // Starts a survey; the replies land in `replies_` when it ends.
  void start(double deadline_seconds, size_t max_concurrency = 0) {
    LldpSurveyOptions o;
    o.deadline_seconds = deadline_seconds;
    o.max_concurrency = max_concurrency;
    startLldpSurvey(dir_, clock_, o,
                    [this](std::vector<LldpWorkerReply> r) { replies_ = std::move(r); });
  }
  size_t asked() {
    size_t n = 0;
    for (const auto& w : dir_.list()) {
      const auto log = dir_.fake(w.name).log();
      n += std::count(log.begin(), log.end(), "discover_fabric ");
    }
    return n;
  }
  const LldpWorkerReply& replyOf(const std::string& worker) {
    auto it = std::find_if(replies_->begin(), replies_->end(),
                           [&](const LldpWorkerReply& r) { return r.worker == worker; });
    EXPECT_NE(it, replies_->end()) << worker;
    return *it;
  }

  std::optional<std::vector<LldpWorkerReply>> replies_;
};

TEST_F(LldpAllTest, AnswersOfEveryWorkerAreOneStoredSnapshotWithAFindingPerMissingWorker) {
  LldpWorkerReply lost;
  lost.worker = "h4";
  lost.call = unavailable("worker lost: h4 (stream closed)");
  LldpWorkerReply offline;
  offline.worker = "h5";
  offline.online = false;
  auto all = recorder_.recordLldpAll(
      {reply("h1", lldpAnswer("h1", {nic("mlx5_0", "leaf01", "Ethernet1"),
                                     nic("mlx5_1", "leaf01", "Ethernet2")})),
       reply("h2", lldpAnswer("h2", {nic("mlx5_0", "leaf02", "Ethernet1")})),
       reply("h3", noLldpd()), lost, offline});
  ASSERT_TRUE(all.ok()) << all.status().toString();
  EXPECT_EQ(rows(store_), 1u);  // one row for five workers
  const FabricRecord& rec = all->record;
  EXPECT_GT(rec.snapshot.id, 0);
  EXPECT_EQ(rec.snapshot.worker, "all workers");
  EXPECT_EQ(rec.snapshot.source, "lldp");
  EXPECT_EQ(rec.snapshot.outcome, "ok");
  EXPECT_EQ(rec.snapshot.detail,
            "LLDP from all workers: 2 of 5 workers answered (1 lost, 1 offline, 1 skipped)");
  EXPECT_EQ(rec.snapshot.switches, 2u);
  EXPECT_EQ(rec.snapshot.links, 3u);
  const auto f = fabric::ethFabricFromJson(nlohmann::json::parse(rec.snapshot.snapshot_json));
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(f->hosts, ElementsAre("h1", "h2"));
  // The skipped worker's finding is the single call's text; the others say why and what stays.
  EXPECT_THAT(kinds(rec), ElementsAre("no_fabric", "no_answer", "no_answer"));
  EXPECT_EQ(rec.findings[0].message,
            "no LLDP answer from h3: 'lldpcli' not found: lldpd is not installed (fix: " +
                std::string(fabric::kLldpdInstallFix) + ")");
  EXPECT_EQ(rec.findings[1].message,
            "no LLDP answer from h4: worker lost: h4 (stream closed); not in the snapshot");
  EXPECT_THAT(rec.findings[2].message, HasSubstr("h5 is offline: not asked"));
  ASSERT_EQ(all->workers.size(), 5u);
  EXPECT_EQ(line(*all, "h1").outcome, "answered");
  EXPECT_EQ(line(*all, "h1").nics, 2u);
  EXPECT_EQ(line(*all, "h1").with_neighbour, 2u);
  EXPECT_EQ(line(*all, "h3").outcome, "skipped");
  EXPECT_EQ(line(*all, "h4").outcome, "lost");
  EXPECT_EQ(line(*all, "h5").outcome, "offline");
}

TEST_F(LldpAllTest, FindingsAreAgainstThePreviousSnapshotForEveryHostThatAnswered) {
  ASSERT_TRUE(
      recorder_
          .recordLldpAll({reply("h1", lldpAnswer("h1", {nic("mlx5_0", "leaf01", "Ethernet1")})),
                          reply("h2", lldpAnswer("h2", {nic("mlx5_0", "leaf01", "Ethernet2")})),
                          reply("h3", lldpAnswer("h3", {nic("mlx5_0", "leaf02", "Ethernet1")}))})
          .ok());
  clock_.advanceSeconds(60);
  LldpWorkerReply slow;
  slow.worker = "h3";
  slow.call = Status(Code::kDeadlineExceeded, "worker h3 did not answer within 120 s");
  auto all = recorder_.recordLldpAll(
      {reply("h1", lldpAnswer("h1", {nic("mlx5_0", "leaf01", "Ethernet7")})),
       reply("h2", lldpAnswer("h2", {nic("mlx5_0", "", "")})), slow,
       reply("h4", lldpAnswer("h4", {nic("mlx5_0", "", "")}))});
  ASSERT_TRUE(all.ok()) << all.status().toString();
  const FabricRecord& rec = all->record;
  EXPECT_EQ(rows(store_), 2u);
  EXPECT_GT(rec.previous_id, 0);
  // h1 moved, h2 lost its neighbour, h4 (first heard) has none, h3 is kept as last heard.
  EXPECT_THAT(kinds(rec), ElementsAre("nic_moved", "neighbour_gone", "no_neighbour", "no_answer"));
  EXPECT_EQ(rec.findings[0].message,
            "h1 mlx5_0/1: moved from leaf01[Ethernet1] to leaf01[Ethernet7]");
  EXPECT_THAT(rec.findings[1].message, HasSubstr("h2 mlx5_0/1: its neighbour leaf01[Ethernet2]"));
  EXPECT_THAT(rec.findings[2].message, HasSubstr("h4 mlx5_0/1: lldpd hears no neighbour"));
  EXPECT_EQ(rec.findings[3].message,
            "no LLDP answer from h3: worker h3 did not answer within 120 s; its NICs stay as "
            "last heard");
  EXPECT_EQ(line(*all, "h3").outcome, "timed_out");
  const auto f = fabric::ethFabricFromJson(nlohmann::json::parse(rec.snapshot.snapshot_json));
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(f->hosts, ElementsAre("h1", "h2", "h3", "h4"));
  const fabric::EthLink* h3 = f->linkOf("h3", "mlx5_0");
  ASSERT_NE(h3, nullptr);
  EXPECT_EQ(h3->switchPortName(), "leaf02[Ethernet1]");
}

TEST_F(LldpAllTest, ARoceHostWhoseLldpdIsDownIsSkippedWithItsNicsAsTheSingleCallStoresThem) {
  // The worker answers its NICs, each with why there is no neighbour, and the host's status.
  fabric::DiscoverOutcome down = lldpAnswer("h1", {nic("mlx5_0", "", "")});
  down.lldp->status = failedPrecondition("lldpd is not running (lldpcli: unable to connect)",
                                         "start it: `systemctl enable --now lldpd`");
  down.lldp->nics[0].reason = "mlx5_0/1: lldpd is not running (lldpcli: unable to connect)";
  auto all = recorder_.recordLldpAll({reply("h1", down)});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(line(*all, "h1").outcome, "skipped");
  EXPECT_EQ(line(*all, "h1").nics, 1u);
  EXPECT_EQ(line(*all, "h1").detail,
            "no LLDP answer from h1: lldpd is not running (lldpcli: unable to connect) (fix: start "
            "it: `systemctl enable --now lldpd`)");
  EXPECT_THAT(kinds(all->record), ElementsAre("no_neighbour"));
  EXPECT_EQ(all->record.snapshot.outcome, "ok");
}

TEST_F(LldpAllTest, NoAnswerAtAllIsSkippedOrFailedAndNothingOnlineStoresNothing) {
  auto skipped = recorder_.recordLldpAll({reply("h1", noLldpd()), reply("h2", noLldpd())});
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(skipped->record.snapshot.outcome, "skipped");
  EXPECT_TRUE(skipped->record.snapshot.snapshot_json.empty());
  EXPECT_THAT(kinds(skipped->record), ElementsAre("no_fabric", "no_fabric"));
  LldpWorkerReply lost;
  lost.worker = "h2";
  lost.call = unavailable("worker lost: h2");
  auto failed = recorder_.recordLldpAll({reply("h1", noLldpd()), lost});
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->record.snapshot.outcome, "failed");
  EXPECT_EQ(rows(store_), 2u);
  LldpWorkerReply offline;
  offline.worker = "h1";
  offline.online = false;
  auto none = recorder_.recordLldpAll({offline});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->record.snapshot.id, 0);
  EXPECT_EQ(none->record.snapshot.detail, "no worker is online");
  EXPECT_EQ(rows(store_), 2u);  // nothing stored
}

TEST_F(LldpAllTest, SurveyAsksEveryOnlineWorkerAtOnceAndTheDeadlineEndsASilentOne) {
  for (const char* h : {"h1", "h2"}) {
    dir_.add(h).behaviour.discover = [h](const fabric::DiscoverRequest& r) {
      EXPECT_TRUE(r.lldp);
      return lldpAnswer(h, {nic("mlx5_0", "leaf01", std::string("Ethernet_") + h)});
    };
  }
  dir_.add("h3").behaviour.discover = [](const fabric::DiscoverRequest&) { return noLldpd(); };
  dir_.add("h4").behaviour.mute = true;  // never answers
  dir_.add("h5");
  dir_.setOffline("h5");
  start(/*deadline_seconds=*/30);
  EXPECT_EQ(asked(), 4u);  // all online workers at once, the offline one not
  clock_.advanceSeconds(1);
  EXPECT_FALSE(replies_.has_value());  // h4 still owes its answer
  clock_.advanceSeconds(30);
  ASSERT_TRUE(replies_.has_value());
  ASSERT_EQ(replies_->size(), 5u);
  EXPECT_TRUE(replyOf("h1").call.ok());
  EXPECT_TRUE(replyOf("h1").outcome.lldp.has_value());
  EXPECT_EQ(replyOf("h3").outcome.status.code(), Code::kNotFound);
  EXPECT_EQ(replyOf("h4").call.code(), Code::kDeadlineExceeded);
  EXPECT_FALSE(replyOf("h5").online);
  auto all = recorder_.recordLldpAll(*replies_);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(rows(store_), 1u);
  EXPECT_EQ(all->record.snapshot.links, 2u);
  EXPECT_EQ(line(*all, "h1").outcome, "answered");
  EXPECT_EQ(line(*all, "h2").outcome, "answered");
  EXPECT_EQ(line(*all, "h3").outcome, "skipped");
  EXPECT_EQ(line(*all, "h4").outcome, "timed_out");
  EXPECT_EQ(line(*all, "h5").outcome, "offline");
}

TEST_F(LldpAllTest, AChannelThatIgnoresItsDeadlineDoesNotHoldTheSurvey) {
  dir_.add("h1").behaviour.discover = [](const fabric::DiscoverRequest&) {
    return lldpAnswer("h1", {nic("mlx5_0", "leaf01", "Ethernet1")});
  };
  auto& broken = dir_.add("h2").behaviour;
  broken.mute = true;
  broken.ignore_deadlines = true;  // its callback never runs at all
  start(/*deadline_seconds=*/10);
  clock_.advanceSeconds(9.9);
  EXPECT_FALSE(replies_.has_value());
  clock_.advanceSeconds(0.2);
  ASSERT_TRUE(replies_.has_value());
  EXPECT_EQ(replyOf("h2").call.code(), Code::kDeadlineExceeded);
  EXPECT_EQ(replyOf("h2").call.message(), "worker h2 did not answer within 10 s");
  EXPECT_TRUE(replyOf("h1").outcome.lldp.has_value());
}

TEST_F(LldpAllTest, TheConcurrencyBoundAsksTheNextAsOneAnswers) {
  for (int i = 1; i <= 5; ++i) {
    const std::string h = "h" + std::to_string(i);
    auto& b = dir_.add(h).behaviour;
    b.command_seconds = 1;
    b.discover = [h](const fabric::DiscoverRequest&) {
      return lldpAnswer(h, {nic("mlx5_0", "leaf01", "Ethernet_" + h)});
    };
  }
  start(/*deadline_seconds=*/60, /*max_concurrency=*/2);
  EXPECT_EQ(asked(), 2u);
  clock_.advanceSeconds(1);
  EXPECT_EQ(asked(), 4u);
  clock_.advanceSeconds(1);
  EXPECT_EQ(asked(), 5u);
  EXPECT_FALSE(replies_.has_value());
  clock_.advanceSeconds(1);
  ASSERT_TRUE(replies_.has_value());
  for (const auto& r : *replies_) EXPECT_TRUE(r.outcome.lldp.has_value()) << r.worker;
}

TEST_F(LldpAllTest, AWorkerNotAskedBeforeTheDeadlineIsPastItToo) {
  dir_.add("a").behaviour.mute = true;
  dir_.add("b").behaviour.mute = true;
  start(/*deadline_seconds=*/5, /*max_concurrency=*/1);
  clock_.advanceSeconds(5);
  ASSERT_TRUE(replies_.has_value());
  EXPECT_EQ(replyOf("a").call.code(), Code::kDeadlineExceeded);
  EXPECT_EQ(replyOf("b").call.code(), Code::kDeadlineExceeded);
  EXPECT_THAT(replyOf("b").call.message(), HasSubstr("not asked within 5 s"));
  EXPECT_EQ(replyOf("b").call.fix(), "raise --deadline or --max-concurrency");
  EXPECT_EQ(asked(), 1u);  // a only: b waited behind it
}

TEST_F(LldpAllTest, LostWorkersAnswerInlineWithoutHoldingTheOthers) {
  for (int i = 0; i < 50; ++i) dir_.add("lost" + std::to_string(i)).lose();
  dir_.add("ok").behaviour.discover = [](const fabric::DiscoverRequest&) {
    return lldpAnswer("ok", {nic("mlx5_0", "leaf01", "Ethernet1")});
  };
  start(/*deadline_seconds=*/5, /*max_concurrency=*/1);
  clock_.advanceSeconds(0.01);
  ASSERT_TRUE(replies_.has_value());
  EXPECT_EQ(replyOf("lost7").call.code(), Code::kUnavailable);
  EXPECT_TRUE(replyOf("ok").outcome.lldp.has_value());
}

TEST_F(LldpAllTest, NoOnlineWorkerEndsAtOnce) {
  dir_.add("h1");
  dir_.setOffline("h1");
  start(/*deadline_seconds=*/5);
  ASSERT_TRUE(replies_.has_value());
  ASSERT_EQ(replies_->size(), 1u);
  EXPECT_FALSE(replies_->front().online);
  EXPECT_EQ(clock_.pendingTimers(), 0u);
}

}  // namespace
}  // namespace gdrmesh::testing
