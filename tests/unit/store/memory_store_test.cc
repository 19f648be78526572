// The contract suite on the in-memory store of tests/support (MemoryStore): the fake that unit
// tests use passes every test SqliteStore passes.
#include "tests/support/memory_store.h"

#include <memory>

#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

class MemoryStoreHarness : public StoreHarness {
 public:
  static Result<std::unique_ptr<StoreHarness>> make() {
    return std::unique_ptr<StoreHarness>(std::make_unique<MemoryStoreHarness>());
  }
  ResultStore& store() override { return store_; }
  SweepStore& sweeps() override { return store_; }
  ActionStore& actions() override { return store_; }
  HookStateStore& hookState() override { return store_; }
  TestPathStore& paths() override { return store_; }
  FabricHistory& fabric() override { return store_; }
  LinkCounterStore& linkCounters() override { return store_; }
  bool persistent() const override { return false; }
  Status reopen() override { return unimplemented("in-memory store"); }

 private:
  MemoryStore store_;
};

INSTANTIATE_TEST_SUITE_P(Memory, ResultStoreContractTest,
                         ::testing::Values(StoreFactory{"MemoryStore", &MemoryStoreHarness::make}),
                         storeFactoryName);

}  // namespace
}  // namespace gdrmesh::testing
