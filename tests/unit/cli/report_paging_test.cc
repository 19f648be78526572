// The CLI reads a sweep's report page by page (fetchSweepReport, fetchJudgedSweep) from an
// in-process gRPC server whose GetSweep and JudgeSweep page as the coordinator does (the
// coordinator's own paging is tested in tests/unit/store/sweep_judge_test.cc): every verdict
// the filter keeps and every result arrive once, in order, over many pages; a coordinator
// older than paging (everything in one message, verdicts_matching 0) is read in one call.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cli/control.h"

namespace gdrmesh::cli {
namespace {

// 23 verdicts (every fifth one FAIL) and 17 results; pages as the coordinator does.
class PagingCoordinator final : public pb::ControlService::Service {
 public:
  // Set and read across gRPC's threads (an uninstrumented library under TSan): atomics.
  std::atomic<bool> old_coordinator{false};  // ignores paging: everything in one message
  std::atomic<int> get_calls{0}, judge_calls{0};

  PagingCoordinator() {
    for (int i = 0; i < 23; ++i) {
      pb::PairVerdict v;
      v.set_test_id("v" + std::to_string(i));
      v.set_verdict(i % 5 == 0 ? "FAIL" : "PASS");
      verdicts_.push_back(v);
    }
    for (int i = 0; i < 17; ++i) {
      pb::TestResult r;
      r.set_test_id("r" + std::to_string(i));
      results_.push_back(r);
    }
  }

  grpc::Status GetSweep(grpc::ServerContext*, const pb::SweepIdRequest* req,
                        pb::SweepReport* out) override {
    ++get_calls;
    out->mutable_progress()->set_id(req->id());
    if (old_coordinator) {
      for (const auto& v : verdicts_) *out->add_verdicts() = v;
      if (req->with_results()) {
        for (const auto& r : results_) *out->add_results() = r;
      }
      return grpc::Status::OK;
    }
    page(req->page(), out);
    if (req->with_results()) {
      const size_t from = req->results_after().empty() ? 0 : std::stoul(req->results_after());
      const size_t n = req->results_limit() == 0 ? results_.size() : req->results_limit();
      for (size_t i = from; i < results_.size() && i < from + n; ++i) {
        *out->add_results() = results_[i];
      }
      if (from + n < results_.size()) out->set_results_next(std::to_string(from + n));
    }
    return grpc::Status::OK;
  }

  grpc::Status JudgeSweep(grpc::ServerContext*, const pb::JudgeSweepRequest* req,
                          pb::SweepReport* out) override {
    ++judge_calls;
    page(req->page(), out);
    return grpc::Status::OK;
  }

 private:
  void page(const pb::SweepReportPage& p, pb::SweepReport* out) const {
    uint64_t matching = 0;
    for (const auto& v : verdicts_) {
      auto* c = out->mutable_verdict_counts();
      v.verdict() == "FAIL" ? c->set_fail(c->fail() + 1) : c->set_pass(c->pass() + 1);
      if (p.verdicts() == pb::VERDICTS_NONE) continue;
      if (p.verdicts() == pb::VERDICTS_FAILED && v.verdict() != "FAIL") continue;
      const uint64_t at = matching++;
      if (at < p.verdict_offset()) continue;
      if (p.verdict_limit() > 0 && at - p.verdict_offset() >= p.verdict_limit()) continue;
      *out->add_verdicts() = v;
    }
    out->set_verdicts_matching(matching);
  }

  std::vector<pb::PairVerdict> verdicts_;
  std::vector<pb::TestResult> results_;
};

class ReportPagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = pb::ControlService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override { server_->Shutdown(); }

  static std::vector<std::string> ids(const pb::SweepReport& r) {
    std::vector<std::string> out;
    for (const auto& v : r.verdicts()) out.push_back(v.test_id());
    for (const auto& x : r.results()) out.push_back(x.test_id());
    return out;
  }

  PagingCoordinator service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<pb::ControlService::Stub> stub_;
};

TEST_F(ReportPagingTest, EveryVerdictAndResultOnceInOrderOverManyPages) {
  pb::SweepReport whole;
  ASSERT_TRUE(fetchSweepReport(*stub_, "s", true, pb::VERDICTS_ALL, &whole, {1000, 1000}).ok());
  EXPECT_EQ(service_.get_calls.load(), 1);
  ASSERT_EQ(whole.verdicts_size(), 23);
  ASSERT_EQ(whole.results_size(), 17);

  service_.get_calls = 0;
  pb::SweepReport paged;
  ASSERT_TRUE(fetchSweepReport(*stub_, "s", true, pb::VERDICTS_ALL, &paged, {4, 3}).ok());
  EXPECT_EQ(ids(paged), ids(whole));
  EXPECT_EQ(service_.get_calls.load(), 6) << "ceil(23/4) pages of verdicts, ceil(17/3) of results";
  EXPECT_EQ(paged.verdict_counts().fail(), 5u);
  EXPECT_EQ(paged.verdict_counts().pass(), 18u);
  EXPECT_TRUE(paged.results_next().empty());
}

TEST_F(ReportPagingTest, FailedOnlyAndNoneKeepTheCounts) {
  pb::SweepReport failing;
  ASSERT_TRUE(fetchSweepReport(*stub_, "s", false, pb::VERDICTS_FAILED, &failing, {2, 3}).ok());
  ASSERT_EQ(failing.verdicts_size(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(failing.verdicts(i).test_id(), "v" + std::to_string(5 * i));
  EXPECT_EQ(failing.results_size(), 0);
  EXPECT_EQ(failing.verdict_counts().pass(), 18u);
  service_.get_calls = 0;
  pb::SweepReport none;
  ASSERT_TRUE(fetchSweepReport(*stub_, "s", true, pb::VERDICTS_NONE, &none, {2, 10}).ok());
  EXPECT_EQ(none.verdicts_size(), 0);
  EXPECT_EQ(none.results_size(), 17);
  EXPECT_EQ(service_.get_calls.load(), 2);
  EXPECT_EQ(none.verdict_counts().fail(), 5u);
}

TEST_F(ReportPagingTest, JudgedSweepPages) {
  pb::JudgeSweepRequest req;
  req.set_id("s");
  req.mutable_page()->set_verdicts(pb::VERDICTS_ALL);
  pb::SweepReport judged;
  ASSERT_TRUE(fetchJudgedSweep(*stub_, req, &judged, {5, 0}).ok());
  EXPECT_EQ(service_.judge_calls.load(), 5);
  ASSERT_EQ(judged.verdicts_size(), 23);
  EXPECT_EQ(judged.verdicts(22).test_id(), "v22");
}

TEST_F(ReportPagingTest, ACoordinatorOlderThanPagingIsReadInOneCall) {
  service_.old_coordinator = true;
  pb::SweepReport r;
  ASSERT_TRUE(fetchSweepReport(*stub_, "s", true, pb::VERDICTS_FAILED, &r, {4, 3}).ok());
  EXPECT_EQ(service_.get_calls.load(), 1);
  EXPECT_EQ(r.verdicts_size(), 23);
  EXPECT_EQ(r.results_size(), 17);
}

}  // namespace
}  // namespace gdrmesh::cli
