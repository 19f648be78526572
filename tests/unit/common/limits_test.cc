// What a worker may register, and how worker text is made safe for a terminal (issue #9: a
// 3 MB host name and 5000 NICs broke `gdrmesh workers` for everyone; escape sequences and
// newlines from workers reached terminals raw).
#include "common/limits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

namespace gdrmesh {
namespace {

Inventory plausible() {
  Inventory inv;
  inv.hostname = "gpu-node-017";
  inv.transports = {"verbs", "emulated"};
  inv.capabilities.resize(2);
  inv.capabilities[0].bandwidth_ops = {Op::kWrite, Op::kRead, Op::kSend, Op::kWriteImm};
  Nic n;
  n.name = "mlx5_0";
  NicPort p;
  p.state = "ACTIVE";
  p.rate_gbps = 400;
  p.gids.push_back(GidEntry{0, "fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"});
  n.ports.push_back(p);
  inv.nics.assign(8, n);
  Gpu g;
  g.name = "NVIDIA H100 80GB HBM3";
  inv.gpus.assign(8, g);
  return inv;
}

TEST(LimitsTest, APlausibleEightGpuHostIsAccepted) {
  EXPECT_TRUE(checkRegistration("gpu-node-017", plausible(), {{"rack", "r12"}}).ok());
}

TEST(LimitsTest, EachLimitNamesTheField) {
  struct Case {
    const char* field;
    std::function<void(Inventory&, std::map<std::string, std::string>&)> edit;
  };
  const Case cases[] = {
      {"inventory.hostname", [](Inventory& i, auto&) { i.hostname.assign(3 << 20, 'h'); }},
      {"inventory.nics", [](Inventory& i, auto&) { i.nics.resize(5000); }},
      {"inventory.nics[0].ports", [](Inventory& i, auto&) { i.nics[0].ports.resize(100); }},
      {"inventory.nics[1].ports[0].gids",
       [](Inventory& i, auto&) { i.nics[1].ports[0].gids.resize(1000); }},
      {"inventory.gpus", [](Inventory& i, auto&) { i.gpus.resize(1000); }},
      {"inventory.gpus[2]", [](Inventory& i, auto&) { i.gpus[2].name = "H100\x1b[2J"; }},
      {"inventory.notes", [](Inventory& i, auto&) { i.notes.assign(1, std::string(5000, 'n')); }},
      {"inventory.capabilities", [](Inventory& i, auto&) { i.capabilities.resize(9); }},
      {"inventory.capabilities[1].reg_paths",
       [](Inventory& i, auto&) { i.capabilities[1].reg_paths.assign(17, RegPath::kHost); }},
      {"labels",
       [](Inventory&, auto& l) {
         for (int k = 0; k < 40; ++k) l["k" + std::to_string(k)] = "v";
       }},
      {"labels: key", [](Inventory&, auto& l) { l["bad key"] = "v"; }},
      {"labels[rack]", [](Inventory&, auto& l) { l["rack"] = "r12\nforged row"; }},
      // Issue #23: a port rate the figure bound cannot use.
      {"inventory.nics[0].ports[0].rate_gbps",
       [](Inventory& i, auto&) { i.nics[0].ports[0].rate_gbps = 0; }},
      {"inventory.nics[1].ports[0].rate_gbps",
       [](Inventory& i, auto&) { i.nics[1].ports[0].rate_gbps = std::nan(""); }},
      {"inventory.nics[2].ports[0].rate_gbps",
       [](Inventory& i, auto&) {
         i.nics[2].ports[0].rate_gbps = std::numeric_limits<double>::infinity();
       }},
      {"inventory.nics[3].ports[0].rate_gbps",
       [](Inventory& i, auto&) { i.nics[3].ports[0].rate_gbps = -400; }},
      {"inventory.nics[4].ports[0].rate_gbps",
       [](Inventory& i, auto&) { i.nics[4].ports[0].rate_gbps = 5000; }},
      // Issue #23: bidirectional overrides in host and NIC names.
      {"inventory.hostname",
       [](Inventory& i, auto&) {
         i.hostname =
             "gpu-\xe2\x80\xae"
             "710-edon";
       }},
      {"inventory.nics[5]",
       [](Inventory& i, auto&) {
         i.nics[5].name =
             "mlx5_\xe2\x81\xa6"
             "5";
       }},
      {"inventory.gpus[1]", [](Inventory& i, auto&) { i.gpus[1].name = "H100\xe2\x80\x8f"; }},
      {"labels[rack]",
       [](Inventory&, auto& l) {
         l["rack"] =
             "r\xd8\x9c"
             "12";
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    Inventory inv = plausible();
    std::map<std::string, std::string> labels;
    c.edit(inv, labels);
    Status st = checkRegistration("w1", inv, labels);
    ASSERT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_EQ(st.message().rfind(c.field, 0), 0u) << st.message();
    EXPECT_FALSE(st.fix().empty());
    EXPECT_LT(st.message().size(), 300u);  // the refusal does not echo the junk
  }
}

TEST(LimitsTest, ADownPortMayHaveNoRate) {
  Inventory inv = plausible();
  inv.nics[0].ports[0].state = "DOWN";
  inv.nics[0].ports[0].rate_gbps = 0;
  EXPECT_TRUE(checkRegistration("w1", inv, {}).ok());
}

TEST(LimitsTest, EveryBidirectionalControlIsRefusedAndCleaned) {
  const char* controls[] = {"\xd8\x9c",     "\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa",
                            "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae",
                            "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9"};
  for (const char* c : controls) {
    const std::string text = std::string("host") + c + "name";
    SCOPED_TRACE(text);
    EXPECT_EQ(checkText("host", text, 256).code(), Code::kInvalidArgument);
    EXPECT_EQ(cleanText(text), "host?name");
  }
  // Their neighbours are ordinary text: U+2010 (hyphen), U+2065 (unassigned), U+202F (space).
  for (const char* ok : {"\xe2\x80\x90", "\xe2\x81\xa5", "\xe2\x80\xaf", "\xd8\x9b"}) {
    EXPECT_TRUE(checkText("host", std::string("a") + ok, 256).ok()) << ok;
  }
}

TEST(LimitsTest, WorkerNamesAreShortAndPlain) {
  EXPECT_TRUE(validWorkerName("node-1.rack_2"));
  EXPECT_FALSE(validWorkerName(""));
  EXPECT_FALSE(validWorkerName(std::string(65, 'a')));
  EXPECT_FALSE(validWorkerName("w1/../x"));
  EXPECT_FALSE(validWorkerName("w\x1b"));
  Status st = checkRegistration(std::string(3 << 20, 'x'), plausible(), {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_LT(st.message().size(), 300u);
}

TEST(LimitsTest, CleanTextDefusesTerminalControlAndKeepsUtf8) {
  EXPECT_EQ(cleanText("ok: 100 Gb/s"), "ok: 100 Gb/s");
  EXPECT_EQ(cleanText("a\x1b[31mred\x07"), "a?[31mred?");
  EXPECT_EQ(cleanText("row1\nrow2\tx\r"), "row1 row2 x ");
  EXPECT_EQ(cleanText("\x7f"), "?");
  EXPECT_EQ(cleanText("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // é ✓ kept
  EXPECT_EQ(cleanText("\xc2\x9b"
                      "2J"),
            "??2J");  // C1 CSI, invalid as text
  EXPECT_EQ(cleanText("\xff\xfe"), "??");
  EXPECT_EQ(cleanText("\xe2\x9c"), "??");  // truncated sequence
  const std::string cut = cleanText(std::string(10000, 'x'), 100);
  EXPECT_EQ(cut, std::string(100, 'x') + " ...(9900 more bytes)");
  // Cut at a character boundary, never inside one.
  EXPECT_EQ(cleanText("ab\xc3\xa9", 3), "ab ...(2 more bytes)");
  // Plain ASCII at the limit is kept whole; one byte more is cut.
  EXPECT_EQ(cleanText(std::string(100, 'x'), 100), std::string(100, 'x'));
  EXPECT_EQ(cleanText(std::string(101, 'x'), 100), std::string(100, 'x') + " ...(1 more bytes)");
  EXPECT_EQ(cleanText(""), "");
  EXPECT_EQ(cleanText(" ~"), " ~");  // the printable ends
}

}  // namespace
}  // namespace gdrmesh
