// The transport contract: one parameterised GoogleTest suite that every Transport must pass.
// It is written against the Transport/Endpoint interfaces only (worker/transport/transport.h),
// so that each implementation (emulated now, verbs on Soft-RoCE later) instantiates it:
//
//   #include "tests/unit/emulated/transport_contract.h"
//   namespace gdrmesh::contract {
//   GDRMESH_INSTANTIATE_TRANSPORT_CONTRACT(Verbs, myVerbsParam());
//   }
//
// and links transport_contract.cc into its test binary. A transport that is not viable here
// (no RDMA device) makes every case skip with the reason from Transport::viable().
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "worker/memory/buffer.h"
#include "worker/transport/transport.h"

namespace gdrmesh::contract {

// How to make the transport under test, and where a transport's real behaviour differs from
// the emulated transport's, which outcome the contract allows instead (each field says why).
// The defaults are the strictest outcome.
struct TransportContractParam {
  std::string name;  // test-name part: letters and digits only ("Emulated", "Verbs")
  std::function<std::unique_ptr<Transport>()> make;
  // Adjusts the endpoint spec of each side (device, port, listen host...); the spec's role is
  // set when it is called. May be empty.
  std::function<void(EndpointSpec&)> configure;
  // A transport that is not viable here fails every case instead of skipping it (set where
  // the test runs on a machine made for it, e.g. inside the Soft-RoCE VM).
  bool must_be_viable = false;
  // True when the transport only moves host memory: createEndpoint on GPU memory must be
  // refused, and the refusal must name the 'staged' registration path.
  bool host_memory_only = false;
  // False where a send carries no remote key (RDMA sends land in the receiver's posted buffer;
  // only RDMA write/read/write_imm name the peer's region): a send with a wrong key then
  // must land intact instead of failing.
  bool send_checks_key = true;
  // True where run() refuses a message larger than the peer's published region before
  // anything moves (kInvalidArgument naming the peer's size) instead of failing at the peer.
  bool checks_peer_length_locally = false;
  // How the target of a send run learns that its initiator went away: promptly
  // (kUnavailable, a closed stream) or only at its run's deadline (kDeadlineExceeded: an RC
  // queue pair receives no notice when its peer's QP is destroyed).
  bool target_sees_initiator_loss_promptly = true;
  // Codes an initiator may see when its target is destroyed mid-run. kUnavailable always; a
  // transport that releases the target's memory before its connection (verbs: the MR goes
  // before the QP) may report the peer's region as gone (kFailedPrecondition); one whose
  // requests to a vanished peer can go unanswered without a transport error (rxe drops packets
  // for a destroyed QP and has been seen not to exhaust its retries) may end the run at its
  // deadline (kDeadlineExceeded), which the contract then holds to the run's timeout.
  std::vector<Code> peer_destroyed_codes = {Code::kUnavailable};
};

void PrintTo(const TransportContractParam& p, std::ostream* os);

// How long any blocked call may take to return after the event that should end it: 10 s,
// times GDRMESH_TEST_TIME_SCALE (sanitizer legs, the emulated Soft-RoCE VM).
std::chrono::seconds prompt();
// `seconds` times GDRMESH_TEST_TIME_SCALE.
double scaled(double seconds);

// One side of a pair: its buffer and its endpoint. The buffer outlives the endpoint.
struct Side {
  std::unique_ptr<Buffer> buffer;
  std::unique_ptr<Endpoint> endpoint;
  uint64_t seed = 0;  // the pattern the buffer was filled with
};

// An initiator and a target over host buffers filled with initiatorSeed/targetSeed patterns.
// The destructor aborts both endpoints before destroying them, so that nothing a failed test
// leaves running can block.
class Pair {
 public:
  static constexpr uint64_t kTestSeed = 0x6764726d657368ULL;
  ~Pair();
  // Creates both endpoints over buffers of the given sizes.
  Status create(Transport& transport, const TransportContractParam& param, Op op, Mode mode,
                size_t initiator_size, size_t target_size);
  // Exchanges local() descriptions (the target's may be tampered with first) and connects
  // both sides, the target on another thread.
  Status connect(const std::function<void(EndpointDesc&)>& tamper_target_desc = {});
  void abortBoth();

  Side initiator;
  Side target;
};

class TransportContractTest : public ::testing::TestWithParam<TransportContractParam> {
 protected:
  void SetUp() override;
  std::unique_ptr<Transport> transport_;
};

// (transport, op, message size, mode): a transfer that must land exactly.
using TransferParam = std::tuple<TransportContractParam, Op, size_t, Mode>;

class TransportTransferTest : public ::testing::TestWithParam<TransferParam> {
 protected:
  void SetUp() override;
  std::unique_ptr<Transport> transport_;
};

std::string contractName(const ::testing::TestParamInfo<TransportContractParam>& info);
std::string transferName(const ::testing::TestParamInfo<TransferParam>& info);

}  // namespace gdrmesh::contract

// Instantiates the whole contract for one or more TransportContractParam values. Use it inside
// namespace gdrmesh::contract (GoogleTest needs the fixture names unqualified).
#define GDRMESH_INSTANTIATE_TRANSPORT_CONTRACT(prefix, ...)                                    \
  INSTANTIATE_TEST_SUITE_P(prefix, TransportContractTest, ::testing::Values(__VA_ARGS__),      \
                           ::gdrmesh::contract::contractName);                                 \
  INSTANTIATE_TEST_SUITE_P(                                                                    \
      prefix, TransportTransferTest,                                                           \
      ::testing::Combine(                                                                      \
          ::testing::Values(__VA_ARGS__),                                                      \
          ::testing::Values(::gdrmesh::Op::kWrite, ::gdrmesh::Op::kRead, ::gdrmesh::Op::kSend, \
                            ::gdrmesh::Op::kWriteImm),                                         \
          ::testing::Values(size_t{1}, size_t{4096 + 3}, size_t{1} << 20),                     \
          ::testing::Values(::gdrmesh::Mode::kBandwidth, ::gdrmesh::Mode::kLatency)),          \
      ::gdrmesh::contract::transferName)
