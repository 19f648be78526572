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

#include "worker/memory/buffer.h"
#include "worker/transport/transport.h"

namespace gdrmesh::contract {

// How to make the transport under test and what it promises beyond the common contract.
struct TransportContractParam {
  std::string name;  // test-name part: letters and digits only ("Emulated", "VerbsRxe")
  std::function<std::unique_ptr<Transport>()> make;
  // Adjusts the endpoint spec of both sides (device, port, listen host...). May be empty.
  std::function<void(EndpointSpec&)> configure;
  // True when the transport only moves host memory: createEndpoint on GPU memory must be
  // refused, and the refusal must name the 'staged' registration path.
  bool host_memory_only = false;
};

void PrintTo(const TransportContractParam& p, std::ostream* os);

// How long any blocked call may take to return after the event that should end it.
inline constexpr std::chrono::seconds kPrompt{10};

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
#define GDRMESH_INSTANTIATE_TRANSPORT_CONTRACT(prefix, ...)                                     \
  INSTANTIATE_TEST_SUITE_P(prefix, TransportContractTest, ::testing::Values(__VA_ARGS__),       \
                           ::gdrmesh::contract::contractName);                                  \
  INSTANTIATE_TEST_SUITE_P(                                                                     \
      prefix, TransportTransferTest,                                                            \
      ::testing::Combine(                                                                       \
          ::testing::Values(__VA_ARGS__),                                                       \
          ::testing::Values(::gdrmesh::Op::kWrite, ::gdrmesh::Op::kRead, ::gdrmesh::Op::kSend), \
          ::testing::Values(size_t{1}, size_t{4096 + 3}, size_t{1} << 20),                      \
          ::testing::Values(::gdrmesh::Mode::kBandwidth, ::gdrmesh::Mode::kLatency)),           \
      ::gdrmesh::contract::transferName)
