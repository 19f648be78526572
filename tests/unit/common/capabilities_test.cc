// Capabilities before operations: what each transport says it supports, and the rule that
// refuses a side no transport of its worker can serve (common/capabilities.h).
#include "common/capabilities.h"

#include <gtest/gtest.h>

namespace gdrmesh {
namespace {

WorkerStatus worker(const std::string& name, std::vector<TransportCapabilities> caps,
                    std::vector<std::string> notes = {}) {
  WorkerStatus w;
  w.name = name;
  w.state = "online";
  for (const auto& c : caps) w.inventory.transports.push_back(toString(c.transport));
  w.inventory.capabilities = std::move(caps);
  w.inventory.notes = std::move(notes);
  w.inventory.gpus.emplace_back();  // a GPU: cuda requests are judged on capabilities
  return w;
}

PairTestSpec spec(Op op, Mode mode) {
  PairTestSpec s;
  s.initiator.worker = "w1";
  s.target.worker = "w2";
  s.op = op;
  s.mode = mode;
  return s;
}

TEST(Capabilities, EachTransportSaysWhatItSupports) {
  const auto e = emulatedCapabilities();
  EXPECT_EQ(e.transport, TransportKind::kEmulated);
  EXPECT_TRUE(unsupportedBy(e, spec(Op::kWriteImm, Mode::kBandwidth), Role::kInitiator).empty());
  EXPECT_EQ(unsupportedBy(e, spec(Op::kWriteImm, Mode::kLatency), Role::kInitiator),
            std::vector<std::string>{"--op write_imm --mode lat"});
  const auto v = verbsCapabilities();
  for (Op op : {Op::kWrite, Op::kRead, Op::kSend, Op::kWriteImm}) {
    for (Mode m : {Mode::kBandwidth, Mode::kLatency}) {
      EXPECT_TRUE(unsupportedBy(v, spec(op, m), Role::kTarget).empty())
          << toString(op) << " " << toString(m);
    }
  }
  EXPECT_TRUE(v.rdma_cm);
  EXPECT_FALSE(e.rdma_cm);
  EXPECT_EQ(simulatedCapabilities().transport, TransportKind::kSimulated);
}

TEST(Capabilities, PerSideMemoryAndRegistration) {
  const auto e = emulatedCapabilities();
  PairTestSpec s = spec(Op::kWrite, Mode::kBandwidth);
  s.target.memory = MemoryKind::kCuda;
  s.target.reg = RegPath::kAuto;
  // The initiator (host) is fine; the target's auto needs dmabuf or peermem.
  EXPECT_TRUE(unsupportedBy(e, s, Role::kInitiator).empty());
  EXPECT_EQ(unsupportedBy(e, s, Role::kTarget),
            std::vector<std::string>{"--reg auto (dmabuf or peermem) on cuda memory"});
  s.target.reg = RegPath::kStaged;
  EXPECT_TRUE(unsupportedBy(e, s, Role::kTarget).empty());
  s.target.reg = RegPath::kDmabuf;
  EXPECT_EQ(unsupportedBy(e, s, Role::kTarget),
            std::vector<std::string>{"--reg dmabuf on cuda memory"});
  EXPECT_TRUE(unsupportedBy(verbsCapabilities(), s, Role::kTarget).empty());
}

TEST(Capabilities, OptionsSizesAndInline) {
  PairTestSpec s = spec(Op::kWrite, Mode::kBandwidth);
  s.use_rdma_cm = true;
  s.gid_index = 3;
  s.bidirectional = true;
  s.inline_size = 64;
  EXPECT_EQ(unsupportedBy(emulatedCapabilities(), s, Role::kInitiator),
            (std::vector<std::string>{"--inline 64", "--rdma-cm", "--gid-index", "--bidir"}));
  EXPECT_TRUE(unsupportedBy(verbsCapabilities(), s, Role::kInitiator).empty());
  TransportCapabilities small = verbsCapabilities();
  small.max_message_size = 1 << 20;
  small.max_inline = 32;
  s.message_size = 2 << 20;
  auto u = unsupportedBy(small, s, Role::kInitiator);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0], "--size 2MiB (at most 1MiB)");
  EXPECT_EQ(u[1], "--inline 64 (at most 32)");
}

TEST(Capabilities, ImpossibleRequestIsRefusedNamingWorkerSideAndWhy) {
  const auto w1 = worker("w1", {emulatedCapabilities()});
  const auto w2 = worker("w2", {emulatedCapabilities()},
                         {"verbs: no RDMA device found (ibv_get_device_list returned 0)"});
  PairTestSpec s = spec(Op::kWriteImm, Mode::kLatency);
  s.target.memory = MemoryKind::kCuda;
  s.target.reg = RegPath::kDmabuf;
  Status st = checkCapabilities(s, w1, w2);
  ASSERT_EQ(st.code(), Code::kFailedPrecondition) << st.toString();
  // The initiator is checked first: the op alone is already impossible there.
  EXPECT_EQ(st.message().rfind("worker w1 (SRC, initiator) has no transport that supports "
                               "--op write_imm --mode lat: ",
                               0),
            0u)
      << st.message();
  s.op = Op::kWrite;  // now only the target's registration is impossible
  st = checkCapabilities(s, w1, w2);
  ASSERT_EQ(st.code(), Code::kFailedPrecondition) << st.toString();
  const std::string m = st.message();
  EXPECT_NE(m.find("worker w2 (DST, target) has no transport that supports --reg dmabuf on "
                   "cuda memory"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("verbs: not available here (verbs: no RDMA device found"), std::string::npos)
      << m;
  EXPECT_NE(m.find("emulated: supports bw write, read, send, write_imm; lat write, read, send"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("simulated"), std::string::npos) << "not an alternative for a real worker";
  EXPECT_NE(st.fix().find("gdrmesh workers -o json"), std::string::npos);
}

TEST(Capabilities, PossibleRequestsPass) {
  const auto both = worker("w2", {verbsCapabilities(), emulatedCapabilities()});
  PairTestSpec s = spec(Op::kWriteImm, Mode::kLatency);
  s.initiator.memory = MemoryKind::kCuda;
  s.initiator.reg = RegPath::kDmabuf;
  EXPECT_TRUE(checkCapabilities(s, both, both).ok());
  // Only the transport asked for counts.
  s.transport = TransportKind::kEmulated;
  EXPECT_EQ(checkCapabilities(s, both, both).code(), Code::kFailedPrecondition);
  EXPECT_EQ(transportsServing(both.inventory, s, Role::kTarget), std::vector<TransportKind>{});
  s.transport.reset();
  EXPECT_EQ(transportsServing(both.inventory, s, Role::kTarget),
            std::vector<TransportKind>{TransportKind::kVerbs});
}

TEST(Capabilities, StatesOfTheHostAreLeftToTheRun) {
  PairTestSpec s = spec(Op::kWrite, Mode::kBandwidth);
  s.transport = TransportKind::kVerbs;
  s.use_rdma_cm = true;
  // The worker lacks verbs altogether: a SKIPPED result says so, not a refusal.
  const auto emu = worker("w2", {emulatedCapabilities()});
  EXPECT_TRUE(checkCapabilities(s, emu, emu).ok());
  // GPU memory where there is no GPU: SKIPPED naming the side, whatever the transports say.
  s = spec(Op::kWrite, Mode::kBandwidth);
  s.target.memory = MemoryKind::kCuda;
  s.target.reg = RegPath::kDmabuf;
  auto nogpu = emu;
  nogpu.inventory.gpus.clear();
  EXPECT_TRUE(checkCapabilities(s, emu, nogpu).ok());
  EXPECT_FALSE(checkCapabilities(s, emu, emu).ok());
  // A worker from before capabilities: nothing is refused on a guess.
  auto old = emu;
  old.inventory.capabilities.clear();
  EXPECT_TRUE(checkCapabilities(s, emu, old).ok());
}

}  // namespace
}  // namespace gdrmesh
