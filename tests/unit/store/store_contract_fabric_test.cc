// The store contract, continued: the fabric's history (FabricHistory): discovered snapshots,
// their findings and the retention of their documents, for every implementation the suite is
// instantiated against.
#include <gmock/gmock.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

using ::testing::HasSubstr;

FabricSnapshotRecord fabricSnapshot(const std::string& worker, int64_t taken_ms,
                                    const std::string& outcome = "ok") {
  FabricSnapshotRecord r;
  r.taken_ms = taken_ms;
  r.worker = worker;
  r.outcome = outcome;
  if (outcome == "ok") {
    r.source = "mlx5_0/1";
    r.switches = 8;
    r.hosts = 16;
    r.links = 32;
    // JSON with quotes, UTF-8 and a byte SQL would choke on when it were spliced.
    r.snapshot_json = R"({"format":"gdrmesh-fabric/1","source":"mlx5_0/1","name":"leaf 'ü'"})";
  } else {
    r.detail = "no InfiniBand device on " + worker + ": no umad device";
  }
  return r;
}

void expectSameSnapshot(const FabricSnapshotRecord& want, const FabricSnapshotRecord& got,
                        bool with_json) {
  EXPECT_EQ(got.taken_ms, want.taken_ms);
  EXPECT_EQ(got.worker, want.worker);
  EXPECT_EQ(got.source, want.source);
  EXPECT_EQ(got.outcome, want.outcome);
  EXPECT_EQ(got.detail, want.detail);
  EXPECT_EQ(got.switches, want.switches);
  EXPECT_EQ(got.hosts, want.hosts);
  EXPECT_EQ(got.links, want.links);
  EXPECT_EQ(got.snapshot_json, with_json ? want.snapshot_json : std::string());
}

TEST_P(ResultStoreContractTest, FabricSnapshotsAreListedNewestFirstWithFindings) {
  const FabricSnapshotRecord first = fabricSnapshot("h1", 100);
  const FabricSnapshotRecord skipped = fabricSnapshot("h3", 200, "skipped");
  const FabricSnapshotRecord second = fabricSnapshot("h1", 300);
  const std::vector<FabricFindingRecord> findings = {
      {"link_gone", "leaf01", 17, "leaf01[17] <-> spine01[1]: gone (was 4x HDR)"},
      {"below_peers", "leaf02", 3, "leaf02[3] <-> spine02[2]: 1x HDR, its peers 4x HDR"}};
  auto id1 = fabric().recordFabricSnapshot(first, {});
  auto id2 = fabric().recordFabricSnapshot(skipped, {});
  auto id3 = fabric().recordFabricSnapshot(second, findings);
  ASSERT_TRUE(id1.ok() && id2.ok() && id3.ok())
      << id1.status().toString() << id2.status().toString() << id3.status().toString();
  EXPECT_LT(*id1, *id2);
  EXPECT_LT(*id2, *id3);

  auto all = fabric().listFabricSnapshots(FabricSnapshotQuery{0, "", "", 0, false});
  ASSERT_TRUE(all.ok()) << all.status().toString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, *id3);
  EXPECT_EQ((*all)[2].id, *id1);
  expectSameSnapshot(second, (*all)[0], false);
  expectSameSnapshot(skipped, (*all)[1], false);

  auto with_json = fabric().listFabricSnapshots(FabricSnapshotQuery{1, "", "", 0, true});
  ASSERT_TRUE(with_json.ok()) << with_json.status().toString();
  ASSERT_EQ(with_json->size(), 1u);
  expectSameSnapshot(second, (*with_json)[0], true);

  // Filters: worker, outcome, keyset page below an id.
  auto h1 = fabric().listFabricSnapshots(FabricSnapshotQuery{0, "h1", "", 0, false});
  ASSERT_TRUE(h1.ok());
  EXPECT_EQ(h1->size(), 2u);
  auto ok = fabric().listFabricSnapshots(FabricSnapshotQuery{0, "", "ok", 0, false});
  ASSERT_TRUE(ok.ok());
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1].id, *id1);
  auto page = fabric().listFabricSnapshots(FabricSnapshotQuery{1, "", "", *id3, false});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].id, *id2);

  auto got = fabric().getFabricSnapshot(*id3);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->id, *id3);
  expectSameSnapshot(second, **got, true);
  auto none = fabric().getFabricSnapshot(*id3 + 100);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto f = fabric().fabricFindings(*id3);
  ASSERT_TRUE(f.ok()) << f.status().toString();
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].kind, "link_gone");
  EXPECT_EQ((*f)[0].switch_name, "leaf01");
  EXPECT_EQ((*f)[0].port, 17);
  EXPECT_EQ((*f)[0].message, findings[0].message);
  EXPECT_EQ((*f)[1].kind, "below_peers");
  auto f1 = fabric().fabricFindings(*id1);
  ASSERT_TRUE(f1.ok());
  EXPECT_TRUE(f1->empty());
  auto unknown = fabric().fabricFindings(*id3 + 100);
  ASSERT_TRUE(unknown.ok());
  EXPECT_TRUE(unknown->empty());
}

TEST_P(ResultStoreContractTest, FabricSnapshotsRefuseRecordsWithoutWorkerOrOutcome) {
  FabricSnapshotRecord r = fabricSnapshot("h1", 1);
  r.worker.clear();
  auto a = fabric().recordFabricSnapshot(r, {});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(a.status().message(), HasSubstr("worker"));
  r = fabricSnapshot("h1", 1);
  r.outcome = "maybe";
  auto b = fabric().recordFabricSnapshot(r, {});
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("maybe"));
  r = fabricSnapshot("h1", 1);
  r.snapshot_json.clear();
  auto c = fabric().recordFabricSnapshot(r, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  auto listed = fabric().listFabricSnapshots(FabricSnapshotQuery{});
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

TEST_P(ResultStoreContractTest, FabricRetentionDropsOldDocumentsButKeepsTheNewestOk) {
  auto old1 = fabric().recordFabricSnapshot(fabricSnapshot("h1", 10), {});
  auto old2 = fabric().recordFabricSnapshot(fabricSnapshot("h1", 20), {{"link_gone", "s", 1, "x"}});
  auto old_skip = fabric().recordFabricSnapshot(fabricSnapshot("h3", 25, "skipped"), {});
  auto recent = fabric().recordFabricSnapshot(fabricSnapshot("h1", 1000), {});
  ASSERT_TRUE(old1.ok() && old2.ok() && old_skip.ok() && recent.ok());

  auto zero = fabric().dropFabricSnapshotsBefore(500, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), Code::kInvalidArgument);

  // One a batch, oldest first.
  auto first = fabric().dropFabricSnapshotsBefore(500, 1);
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_EQ(*first, 1u);
  EXPECT_TRUE((*fabric().getFabricSnapshot(*old1))->snapshot_json.empty());
  EXPECT_FALSE((*fabric().getFabricSnapshot(*old2))->snapshot_json.empty());
  auto rest = fabric().dropFabricSnapshotsBefore(500, 100);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(*rest, 1u);  // old2 (the skipped one has no document)
  auto again = fabric().dropFabricSnapshotsBefore(500, 100);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
  // Rows, counts and findings stay; the recent one keeps its document.
  auto row = fabric().getFabricSnapshot(*old2);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->links, 32u);
  EXPECT_EQ(fabric().fabricFindings(*old2)->size(), 1u);
  EXPECT_FALSE((*fabric().getFabricSnapshot(*recent))->snapshot_json.empty());

  // The newest ok snapshot keeps its document whatever its age.
  auto all_old = fabric().dropFabricSnapshotsBefore(5000, 100);
  ASSERT_TRUE(all_old.ok());
  EXPECT_EQ(*all_old, 0u);
  EXPECT_FALSE((*fabric().getFabricSnapshot(*recent))->snapshot_json.empty());
  auto listed = fabric().listFabricSnapshots(FabricSnapshotQuery{0, "", "", 0, false});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 4u);
}

}  // namespace
}  // namespace gdrmesh::testing
