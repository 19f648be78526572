#include "worker/transport/verbs/verbs_select.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gdrmesh::verbs {
namespace {

GidCandidate gid(int index, const std::string& text, GidType type) {
  GidCandidate c;
  c.index = index;
  EXPECT_TRUE(parseGid(text, &c.raw)) << text;
  c.type = type;
  return c;
}

// rxe's table: 0 link-local v2, 1 IPv4-mapped v2.
std::vector<GidCandidate> rxeTable() {
  return {gid(0, "fe80::b0cd:aeff:fe11:2233", GidType::kRoceV2),
          gid(1, "::ffff:10.77.0.1", GidType::kRoceV2)};
}

// An mlx5 RoCE table: v1 and v2 per address.
std::vector<GidCandidate> mlxTable() {
  return {gid(0, "fe80::1", GidType::kRoceV1), gid(1, "fe80::1", GidType::kRoceV2),
          gid(2, "::ffff:192.168.1.5", GidType::kRoceV1),
          gid(3, "::ffff:192.168.1.5", GidType::kRoceV2), gid(4, "2001:db8::5", GidType::kRoceV2)};
}

TEST(GidSelect, PrefersRoceV2Ipv4Mapped) {
  auto r = selectGidIndex(rxeTable(), true, -1, "rxe0", 1);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(*r, 1);
  auto m = selectGidIndex(mlxTable(), true, -1, "mlx5_0", 1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, 3);
}

TEST(GidSelect, FallsBackToGlobalThenLinkLocalThenV1) {
  auto t = mlxTable();
  t.erase(t.begin() + 3);  // no v2 IPv4-mapped
  EXPECT_EQ(*selectGidIndex(t, true, -1, "mlx5_0", 1), 4);
  t.pop_back();  // no v2 global
  EXPECT_EQ(*selectGidIndex(t, true, -1, "mlx5_0", 1), 1);
  std::vector<GidCandidate> v1 = {gid(0, "fe80::1", GidType::kRoceV1)};
  EXPECT_EQ(*selectGidIndex(v1, true, -1, "mlx5_0", 1), 0);
}

TEST(GidSelect, OverrideHonouredAndChecked) {
  EXPECT_EQ(*selectGidIndex(rxeTable(), true, 0, "rxe0", 1), 0);
  auto bad = selectGidIndex(rxeTable(), true, 7, "rxe0", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("gid_index 7 on rxe0 port 1"), std::string::npos);
  EXPECT_NE(bad.status().message().find("1=0000:0000:0000:0000:0000:ffff:0a4d:0001"),
            std::string::npos)
      << bad.status().message();
}

TEST(GidSelect, EmptyRoceTableFailsWithFix) {
  std::vector<GidCandidate> none;
  auto r = selectGidIndex(none, true, -1, "rxe0", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().fix().find("ip addr add"), std::string::npos);
}

TEST(GidSelect, InfinibandUsesIndexZero) {
  std::vector<GidCandidate> ib = {gid(0, "fe80::2:c903:a:1", GidType::kIb),
                                  gid(1, "fe80::2:c903:a:2", GidType::kIb)};
  EXPECT_EQ(*selectGidIndex(ib, false, -1, "mlx5_0", 1), 0);
}

TEST(GidFormat, RoundTrip) {
  std::array<uint8_t, 16> raw{};
  ASSERT_TRUE(parseGid("::ffff:10.77.0.2", &raw));
  EXPECT_TRUE(isIpv4MappedGid(raw));
  EXPECT_FALSE(isLinkLocalGid(raw));
  const std::string text = formatGid(raw);
  EXPECT_EQ(text, "0000:0000:0000:0000:0000:ffff:0a4d:0002");
  std::array<uint8_t, 16> back{};
  ASSERT_TRUE(parseGid(text, &back));
  EXPECT_EQ(raw, back);
  EXPECT_FALSE(parseGid("not a gid", &back));
}

TEST(GidType, ParsesSysfsText) {
  EXPECT_EQ(parseGidType("RoCE v2\n"), GidType::kRoceV2);
  EXPECT_EQ(parseGidType("IB/RoCE v1\n"), GidType::kRoceV1);
  EXPECT_EQ(parseGidType("IB"), GidType::kIb);
  EXPECT_EQ(parseGidType(""), GidType::kUnknown);
}

TEST(Mtu, EnumBytes) {
  EXPECT_EQ(mtuEnumToBytes(IBV_MTU_1024), 1024u);
  EXPECT_EQ(mtuEnumToBytes(IBV_MTU_4096), 4096u);
  EXPECT_EQ(mtuBytesToEnum(2048), static_cast<int>(IBV_MTU_2048));
  EXPECT_EQ(mtuBytesToEnum(1500), 0);
}

TEST(Mtu, NegotiatesMinimum) {
  EXPECT_EQ(*negotiatePathMtu(4096, 1024, "rxe1"), 1024u);
  EXPECT_EQ(*negotiatePathMtu(1024, 4096, "rxe1"), 1024u);
  EXPECT_EQ(*negotiatePathMtu(2048, 2048, "rxe1"), 2048u);
  auto bad = negotiatePathMtu(4096, 1500, "rxe1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rxe1"), std::string::npos);
  EXPECT_FALSE(negotiatePathMtu(4096, 0, "x").ok());
}

TEST(Counters, IbWordsAndRxePackets) {
  CounterSnapshot a, b;
  a.values = {
      {"port_xmit_data", 100}, {"port_rcv_data", 10}, {"port_xmit_packets", 5}, {"link_downed", 0}};
  b.values = {{"port_xmit_data", 1100},
              {"port_rcv_data", 20},
              {"port_xmit_packets", 9},
              {"link_downed", 1}};
  PortCounters c = counterDelta(a, b);
  EXPECT_TRUE(c.valid);
  EXPECT_EQ(c.xmit_bytes, 4000u);
  EXPECT_EQ(c.rcv_bytes, 40u);
  EXPECT_EQ(c.xmit_packets, 4u);
  EXPECT_EQ(c.errors, 1u);
  CounterSnapshot r1, r2;
  r1.values = {{"sent_pkts", 10}, {"rcvd_pkts", 3}, {"retry_exceeded_err", 0}};
  r2.values = {{"sent_pkts", 60}, {"rcvd_pkts", 4}, {"retry_exceeded_err", 2}};
  PortCounters rx = counterDelta(r1, r2);
  EXPECT_TRUE(rx.valid);
  EXPECT_EQ(rx.xmit_bytes, 0u);
  EXPECT_EQ(rx.xmit_packets, 50u);
  EXPECT_EQ(rx.rcv_packets, 1u);
  EXPECT_EQ(rx.errors, 2u);
  EXPECT_FALSE(counterDelta(CounterSnapshot{}, CounterSnapshot{}).valid);
}

TEST(Counters, ReadsFakeSysfs) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/verbs_sysfs_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path root = tmpl;
  const fs::path port = root / "class/infiniband/rxe0/ports/1";
  fs::create_directories(port / "hw_counters");
  fs::create_directories(port / "gid_attrs/types");
  std::ofstream(port / "hw_counters/sent_pkts") << "123\n";
  std::ofstream(port / "gid_attrs/types/1") << "RoCE v2\n";
  CounterSnapshot s = readCounterSnapshot(root.string(), "rxe0", 1);
  uint64_t v = 0;
  EXPECT_TRUE(s.find("sent_pkts", &v));
  EXPECT_EQ(v, 123u);
  EXPECT_EQ(readSysfsGidType(root.string(), "rxe0", 1, 1), GidType::kRoceV2);
  EXPECT_EQ(readSysfsGidType(root.string(), "rxe0", 1, 2), GidType::kUnknown);
  fs::remove_all(root);
}

}  // namespace
}  // namespace gdrmesh::verbs
