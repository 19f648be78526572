// Tests of common/status.h: Status, Result<T> and the propagation macros.
#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

namespace gdrmesh {
namespace {

Result<int> half(int v) {
  if (v % 2 != 0) return invalidArgument("value: " + std::to_string(v) + " is odd", "pass even");
  return v / 2;
}

// Uses both macros; `reached` records how far it got.
Result<int> quarter(int v, int* reached) {
  *reached = 0;
  GDR_ASSIGN_OR_RETURN(int h, half(v));
  *reached = 1;
  GDR_ASSIGN_OR_RETURN(int q, half(h));
  *reached = 2;
  return q;
}

Status checkPositive(int v) {
  if (v <= 0) return failedPrecondition("v: must be > 0");
  return {};
}

Status both(int a, int b, int* reached) {
  *reached = 0;
  GDR_RETURN_IF_ERROR(checkPositive(a));
  *reached = 1;
  GDR_RETURN_IF_ERROR(checkPositive(b));
  *reached = 2;
  return {};
}

TEST(StatusTest, DefaultIsOk) {
  Status st;
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(st.code(), Code::kOk);
  EXPECT_EQ(st.toString(), "OK");
  EXPECT_TRUE(Status::okStatus().ok());
}

TEST(StatusTest, ToStringHasCodeMessageAndFix) {
  Status st = invalidArgument("--size: must be > 0", "pass --size 64KiB");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.toString(), "INVALID_ARGUMENT: --size: must be > 0 (fix: pass --size 64KiB)");
  EXPECT_EQ(notFound("gpu 3").toString(), "NOT_FOUND: gpu 3");  // no empty "(fix: )"
}

TEST(StatusTest, WithContextPrefixesAndKeepsCodeAndFix) {
  Status st = unavailable("peer closed", "restart the worker").withContext("run on worker a");
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(), "run on worker a: peer closed");
  EXPECT_EQ(st.fix(), "restart the worker");
  EXPECT_TRUE(Status().withContext("ctx").ok());
  EXPECT_EQ(Status().withContext("ctx").message(), "");
}

TEST(StatusTest, EveryCodeHasADistinctName) {
  std::set<std::string> names;
  const Code codes[] = {Code::kOk,
                        Code::kInvalidArgument,
                        Code::kNotFound,
                        Code::kFailedPrecondition,
                        Code::kUnavailable,
                        Code::kDeadlineExceeded,
                        Code::kAborted,
                        Code::kResourceExhausted,
                        Code::kPermissionDenied,
                        Code::kDataLoss,
                        Code::kUnimplemented,
                        Code::kInternal};
  for (Code c : codes) {
    std::string n = codeName(c);
    EXPECT_NE(n, "UNKNOWN");
    names.insert(n);
  }
  EXPECT_EQ(names.size(), sizeof(codes) / sizeof(codes[0]));
  EXPECT_EQ(internalError("x").code(), Code::kInternal);
  EXPECT_EQ(unimplemented("x").code(), Code::kUnimplemented);
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> v = half(8);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 4);
  EXPECT_EQ(v.value(), 4);
  EXPECT_TRUE(v.status().ok());

  Result<int> e = half(3);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(e.status().message(), "value: 3 is odd");
  EXPECT_EQ(e.status().fix(), "pass even");
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
  Result<std::string> s = std::string("abc");
  EXPECT_EQ(s->size(), 3u);
}

TEST(ResultTest, AssignOrReturnPropagatesTheFirstError) {
  int reached = -1;
  Result<int> ok = quarter(12, &reached);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  EXPECT_EQ(reached, 2);

  Result<int> first = quarter(5, &reached);
  EXPECT_FALSE(first.ok());
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(first.status().message(), "value: 5 is odd");

  Result<int> second = quarter(6, &reached);  // 6 -> 3 -> odd
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(second.status().message(), "value: 3 is odd");
  EXPECT_EQ(second.status().fix(), "pass even");
}

TEST(ResultTest, ReturnIfErrorPropagates) {
  int reached = -1;
  EXPECT_TRUE(both(1, 2, &reached).ok());
  EXPECT_EQ(reached, 2);
  Status st = both(1, 0, &reached);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_EQ(reached, 1);
}

TEST(ResultTest, ResultFromAnOkStatusNeverLooksLikeSuccessWithoutAValue) {
  // A programmer mistake: `return Status();` in a function returning Result<T>. With NDEBUG the
  // assert is gone; the Result must still not pass as OK through GDR_ASSIGN_OR_RETURN, whose
  // caller would then return an OK status with no value.
#ifdef NDEBUG
  Result<int> r = Status();
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.status().ok()) << "a failed Result reports an OK status: callers propagate OK";
#else
  EXPECT_DEATH(
      {
        Result<int> r = Status();
        (void)r;
      },
      "OK status");
#endif
}

}  // namespace
}  // namespace gdrmesh
