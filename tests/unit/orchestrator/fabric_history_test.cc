// The fabric's history as the coordinator keeps it (coordinator/orchestrator/fabric_history.h):
// stored discoveries, their findings against the previous snapshot and against their peers, a
// worker without InfiniBand stored as a finding, and references (@ID, latest, previous); over
// the MemoryStore and a ManualClock, and a fake worker's discovery.
#include "coordinator/orchestrator/fabric_history.h"

#include <gmock/gmock.h>

#include <future>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "coordinator/orchestrator/fabric_source.h"
#include "tests/support/fabric_trees.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/memory_store.h"

namespace gdrmesh::testing {
namespace {

using fabric::Fabric;
using fabric::Node;
using fabric::NodeKind;
using ::testing::HasSubstr;

constexpr uint64_t kLeaf1 = 0x10, kLeaf2 = 0x11, kSpine1 = 0x20, kSpine2 = 0x21;
constexpr uint64_t kH1 = 0x100, kH2 = 0x101, kH3 = 0x102, kH4 = 0x103;

void cable(Fabric& f, uint64_t a, int pa, uint64_t b, int pb, int width = 4,
           const std::string& speed = "HDR") {
  auto find = [&](uint64_t g) -> Node& {
    for (auto* list : {&f.switches, &f.hosts}) {
      for (auto& n : *list) {
        if (n.guid == g) return n;
      }
    }
    throw std::logic_error("no node");
  };
  for (auto [x, px, y, py] : {std::make_tuple(a, pa, b, pb), std::make_tuple(b, pb, a, pa)}) {
    Node& n = find(x);
    fabric::Port p;
    p.number = px;
    p.guid = n.kind == NodeKind::kSwitch ? n.guid : n.guid + 1;
    p.state = "Active";
    p.phys_state = "LinkUp";
    p.width = width;
    p.speed = speed;
    p.remote_guid = y;
    p.remote_port = py;
    n.ports.push_back(p);
  }
}

// Two leaves, two spines, two hosts a leaf; `skip_isl` leaves out leaf1[3] <-> spine1[1];
// `narrow` trains leaf2[4] <-> spine2[2] at 1x.
Fabric tree(bool skip_isl = false, bool narrow = false) {
  Fabric f;
  f.source = "mlx5_0/1";
  for (auto [name, guid] : {std::make_pair("leaf1", kLeaf1), std::make_pair("leaf2", kLeaf2),
                            std::make_pair("spine1", kSpine1), std::make_pair("spine2", kSpine2)}) {
    Node n;
    n.kind = NodeKind::kSwitch;
    n.name = name;
    n.guid = guid;
    n.num_ports = 4;
    f.switches.push_back(n);
  }
  for (auto [name, guid] : {std::make_pair("h1 mlx5_0", kH1), std::make_pair("h2 mlx5_0", kH2),
                            std::make_pair("h3 mlx5_0", kH3), std::make_pair("h4 mlx5_0", kH4)}) {
    Node n;
    n.kind = NodeKind::kHca;
    n.name = name;
    n.guid = guid;
    n.num_ports = 1;
    f.hosts.push_back(n);
  }
  cable(f, kLeaf1, 1, kH1, 1);
  cable(f, kLeaf1, 2, kH2, 1);
  if (!skip_isl) cable(f, kLeaf1, 3, kSpine1, 1);
  cable(f, kLeaf1, 4, kSpine2, 1);
  cable(f, kLeaf2, 1, kH3, 1);
  cable(f, kLeaf2, 2, kH4, 1);
  cable(f, kLeaf2, 3, kSpine1, 2);
  cable(f, kLeaf2, 4, kSpine2, 2, narrow ? 1 : 4);
  f.rebuildLinks();
  return f;
}

fabric::DiscoverOutcome found(Fabric f) {
  fabric::DiscoverOutcome o;
  o.fabric = std::move(f);
  return o;
}

class FabricHistoryTest : public ::testing::Test {
 protected:
  ManualClock clock_{1'790'000'000'000};
  MemoryStore store_;
  FabricRecorder recorder_{store_, clock_};
};

TEST_F(FabricHistoryTest, AStoredDiscoveryIsDiffedAgainstThePreviousOne) {
  auto first = recorder_.record("h1", found(tree()));
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_EQ(first->snapshot.outcome, "ok");
  EXPECT_EQ(first->snapshot.worker, "h1");
  EXPECT_EQ(first->snapshot.taken_ms, clock_.unixMs());
  EXPECT_EQ(first->snapshot.switches, 4u);
  EXPECT_EQ(first->snapshot.hosts, 4u);
  EXPECT_EQ(first->snapshot.links, 8u);
  EXPECT_EQ(first->snapshot.source, "mlx5_0/1");
  EXPECT_EQ(first->previous_id, 0);
  EXPECT_TRUE(first->findings.empty());

  clock_.advance(std::chrono::seconds(60));
  auto second = recorder_.record("h2", found(tree(/*skip_isl=*/true)));
  ASSERT_TRUE(second.ok()) << second.status().toString();
  EXPECT_EQ(second->previous_id, first->snapshot.id);
  ASSERT_EQ(second->findings.size(), 1u);
  EXPECT_EQ(second->findings[0].kind, "link_gone");
  EXPECT_EQ(second->findings[0].switch_name, "leaf1");
  EXPECT_EQ(second->findings[0].port, 3);
  EXPECT_THAT(second->findings[0].message, HasSubstr("leaf1[3]"));

  // Stored: the row, its document (the JSON of docs/fabric.md) and its findings.
  auto row = store_.getFabricSnapshot(second->snapshot.id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->taken_ms, clock_.unixMs());
  EXPECT_THAT((*row)->snapshot_json, HasSubstr("\"format\":\"gdrmesh-fabric/1\""));
  auto stored = store_.fabricFindings(second->snapshot.id);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].kind, "link_gone");
}

TEST_F(FabricHistoryTest, ANarrowLinkIsBelowItsPeersAndNarrowerThanLastTime) {
  ASSERT_TRUE(recorder_.record("h1", found(tree())).ok());
  auto r = recorder_.record("h1", found(tree(false, /*narrow=*/true)));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  std::vector<std::string> kinds;
  for (const auto& f : r->findings) {
    kinds.push_back(f.kind);
    EXPECT_EQ(f.switch_name, "leaf2");
    EXPECT_EQ(f.port, 4);
  }
  EXPECT_THAT(kinds, ::testing::UnorderedElementsAre("link_narrower", "below_peers"));
  for (const auto& f : r->findings) {
    if (f.kind == "below_peers") {
      EXPECT_THAT(f.message, HasSubstr("1x HDR, its 3 peers between switches 4x HDR"));
    }
  }
}

// Issue #20: a discovery through the coordinator replaces its fabric (control_fabric.cc adopts
// the stored snapshot); a restart, a new FabricSource over the same store configured with the
// same file, adopts that snapshot again, passing over a newer one without tables, and says which
// and why. A configured file discovered after the snapshot wins.
TEST_F(FabricHistoryTest, ARestartAdoptsTheSnapshotADiscoveryAdoptedBefore) {
  Fabric configured = twoLevelTree(2, 2, 2);
  configured.discovered_ms = clock_.unixMs() - 3'600'000;
  auto start = [&configured] {
    return std::make_unique<FabricSource>(std::make_shared<const SweepFabric>(
        configured, std::map<std::string, std::string>{}, "fabric.json"));
  };
  auto before = start();
  auto nothing = before->adoptStored(store_);
  ASSERT_TRUE(nothing.ok()) << nothing.status().toString();
  EXPECT_THAT(*nothing, HasSubstr("fabric.json stays the coordinator's fabric"));
  EXPECT_EQ(before->current()->source(), "fabric.json");

  Fabric discovered = rerouteLeafUplinks(twoLevelTree(2, 2, 2), 2, 2);
  discovered.discovered_ms = clock_.unixMs();
  ASSERT_NE(discovered.switches[0].lft, configured.switches[0].lft);  // other tables
  auto rec = recorder_.record("h1", found(discovered));
  ASSERT_TRUE(rec.ok()) << rec.status().toString();
  const std::string id = "@" + std::to_string(rec->snapshot.id);
  ASSERT_TRUE(before->adopt(discovered, id));  // as DiscoverFabric does
  clock_.advance(std::chrono::seconds(60));
  Fabric no_lfts = discovered;  // discovered with --no-lfts: never adopted
  for (auto& sw : no_lfts.switches) sw.lft.assign(sw.lft.size(), fabric::kNoRoute);
  ASSERT_TRUE(recorder_.record("h2", found(no_lfts)).ok());

  auto restarted = start();  // the coordinator starts again with its configured fabric.json
  auto line = restarted->adoptStored(store_);
  ASSERT_TRUE(line.ok()) << line.status().toString();
  EXPECT_EQ(restarted->current()->source(), id) << *line;
  EXPECT_EQ(restarted->current()->fabric().switches[0].lft, discovered.switches[0].lft);
  EXPECT_THAT(*line, HasSubstr("snapshot " + id + " from h1"));
  EXPECT_THAT(*line, HasSubstr("replaces fabric.json"));
  EXPECT_THAT(*line, HasSubstr("1 newer ok snapshots without tables or unreadable passed over"));

  configured.discovered_ms = clock_.unixMs();  // an operator's newer file
  auto newer = start();
  auto kept = newer->adoptStored(store_);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(newer->current()->source(), "fabric.json");
  EXPECT_THAT(*kept, HasSubstr("is newer than the latest stored snapshot " + id));
}

TEST(FabricLinksBelowPeers, NoFindingWithoutAMajorityRate) {
  EXPECT_TRUE(linksBelowPeers(tree()).empty());
  Fabric f = tree(false, true);
  auto below = linksBelowPeers(f);
  ASSERT_EQ(below.size(), 1u);
  EXPECT_EQ(below[0].switch_name, "leaf2");
  // Half 1x, half 4x: no rate is most common, nothing is called slower.
  Fabric tie;
  tie.switches = f.switches;
  tie.hosts = f.hosts;
  tie.rebuildLinks();
  int n = 0;
  for (auto& l : tie.links) l.width = (n++ % 2 == 0) ? 1 : 4;
  EXPECT_TRUE(linksBelowPeers(tie).empty());
}

TEST_F(FabricHistoryTest, AWorkerWithoutInfiniBandIsAStoredFindingNotAnError) {
  fabric::DiscoverOutcome none;
  none.status = failedPrecondition("no InfiniBand device with a umad interface", "load ib_umad");
  auto r = recorder_.record("h3", none);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->snapshot.outcome, "skipped");
  EXPECT_THAT(r->snapshot.detail, HasSubstr("no InfiniBand device on h3: no InfiniBand device"));
  EXPECT_THAT(r->snapshot.detail, HasSubstr("fix: load ib_umad"));
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].kind, "no_fabric");

  fabric::DiscoverOutcome no_module;
  no_module.status = unimplemented("worker h4 was built without InfiniBand fabric discovery");
  auto m = recorder_.record("h4", no_module);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->snapshot.outcome, "skipped");
  EXPECT_THAT(m->snapshot.detail, HasSubstr("no fabric discovery on h4"));

  fabric::DiscoverOutcome broken;
  broken.status = unavailable("switch leaf1 did not answer LFT block 0");
  auto b = recorder_.record("h1", broken);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->snapshot.outcome, "failed");
  EXPECT_EQ(b->findings[0].kind, "discovery_failed");
  EXPECT_THAT(b->snapshot.detail, HasSubstr("fabric discovery failed on h1: switch leaf1"));

  // None of them is an ok snapshot: "latest" has none yet.
  auto latest = recorder_.resolve("latest");
  ASSERT_FALSE(latest.ok());
  EXPECT_EQ(latest.status().code(), Code::kNotFound);
  EXPECT_THAT(latest.status().fix(), HasSubstr("fabric discover --worker"));
  auto listed = store_.listFabricSnapshots(FabricSnapshotQuery{});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 3u);
}

TEST_F(FabricHistoryTest, ReferencesNameStoredSnapshots) {
  auto a = recorder_.record("h1", found(tree()));
  fabric::DiscoverOutcome none;
  none.status = failedPrecondition("no device");
  auto skipped = recorder_.record("h3", none);
  auto b = recorder_.record("h1", found(tree(true)));
  ASSERT_TRUE(a.ok() && skipped.ok() && b.ok());

  auto latest = recorder_.resolve("latest");
  ASSERT_TRUE(latest.ok()) << latest.status().toString();
  EXPECT_EQ(latest->snapshot.id, b->snapshot.id);
  EXPECT_EQ(latest->previous_id, a->snapshot.id);  // the skipped one is no snapshot
  EXPECT_FALSE(latest->snapshot.snapshot_json.empty());
  ASSERT_EQ(latest->findings.size(), 1u);
  auto previous = recorder_.resolve("previous");
  ASSERT_TRUE(previous.ok());
  EXPECT_EQ(previous->snapshot.id, a->snapshot.id);
  auto by_id = recorder_.resolve("@" + std::to_string(skipped->snapshot.id));
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(by_id->snapshot.outcome, "skipped");
  auto bare = recorder_.resolve(std::to_string(a->snapshot.id));
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->snapshot.id, a->snapshot.id);

  for (const std::string bad : {"@", "@x", "@-1", "newest", "@12abc"}) {
    auto r = recorder_.resolve(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr(bad));
  }
  auto missing = recorder_.resolve("@999");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
}

// A worker's answer is read at the coordinator's edge: text of any shape is an error naming
// it, never an exception (nlohmann's json::value() throws on a field of another type; uncaught
// on a gRPC thread it would end the coordinator).
TEST(FabricFromJsonText, WrongTextIsAnErrorNotAnException) {
  const std::string good = fabric::toJson(tree()).dump();
  auto ok = fabric::fabricFromJsonText(good, "worker h1's snapshot");
  ASSERT_TRUE(ok.ok()) << ok.status().toString();
  EXPECT_EQ(ok->links.size(), 8u);
  for (const std::string bad :
       {"", "not json", "[]",
        R"({"format":"gdrmesh-fabric/1","source":5,"switches":[],"hosts":[]})",
        R"({"format":"gdrmesh-fabric/1","switches":[{"name":7}],"hosts":[]})",
        R"({"format":"gdrmesh-fabric/1","switches":[],"hosts":[{"guid":[1],"ports":"x"}]})",
        R"({"format":"other"})"}) {
    Result<Fabric> r = Status();
    EXPECT_NO_THROW(r = fabric::fabricFromJsonText(bad, "worker h1's snapshot")) << bad;
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("worker h1's snapshot")) << bad;
  }
}

TEST_F(FabricHistoryTest, AFakeWorkersDiscoveryIsStored) {
  FakeWorkerChannel worker("h1", clock_);
  worker.behaviour.discover = [](const fabric::DiscoverRequest& r) {
    EXPECT_EQ(r.ca, "mlx5_1");
    return found(tree());
  };
  auto outcome = std::make_shared<std::promise<Result<fabric::DiscoverOutcome>>>();
  fabric::DiscoverRequest req;
  req.ca = "mlx5_1";
  worker.discoverFabric(req, clock_.after(10),
                        [outcome](Result<fabric::DiscoverOutcome> r) { outcome->set_value(r); });
  clock_.advance(std::chrono::seconds(1));  // the fake answers after its command delay
  auto r = outcome->get_future().get();
  ASSERT_TRUE(r.ok()) << r.status().toString();
  auto rec = recorder_.record("h1", *r);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->snapshot.links, 8u);

  // Without a script the fake has no InfiniBand device: an outcome, not an error.
  FakeWorkerChannel bare("h5", clock_);
  auto none = std::make_shared<std::promise<Result<fabric::DiscoverOutcome>>>();
  bare.discoverFabric({}, clock_.after(10),
                      [none](Result<fabric::DiscoverOutcome> x) { none->set_value(x); });
  clock_.advance(std::chrono::seconds(1));
  auto n = none->get_future().get();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->status.code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace gdrmesh::testing
