#include "coordinator/service/history_convert.h"

#include <algorithm>
#include <limits>

#include "convert.h"

namespace gdrmesh::convert {

namespace {
// The most rows one request returns unless it asks for all of them.
constexpr uint32_t kMaxLimit = 10000;
constexpr uint32_t kDefaultLimit = 50;
}  // namespace

Result<HistoryQuery> fromProto(const v1::HistoryRequest& in) {
  HistoryQuery q;
  q.src = in.src();
  q.dst = in.dst();
  q.both_directions = !in.one_direction();
  q.since_ms = in.since_ms();
  q.until_ms = in.until_ms() == 0 ? std::numeric_limits<int64_t>::max() : in.until_ms();
  q.message_size = in.message_size();
  if (in.op() != v1::OP_UNSPECIFIED) {
    if (!v1::Op_IsValid(in.op())) {
      return invalidArgument("--op: unknown value " + std::to_string(in.op()),
                             "use write, read, send or write_imm");
    }
    q.op = fromProto(in.op());
  }
  if (in.mode() != v1::MODE_UNSPECIFIED) {
    if (!v1::Mode_IsValid(in.mode())) {
      return invalidArgument("--mode: unknown value " + std::to_string(in.mode()), "use bw or lat");
    }
    q.mode = fromProto(in.mode());
  }
  q.limit = in.all() ? 0 : in.limit() == 0 ? kDefaultLimit : std::min(in.limit(), kMaxLimit);
  return q;
}

void toProto(const ComparisonRow& in, v1::ComparisonRow* out) {
  out->set_src(in.src);
  out->set_dst(in.dst);
  out->set_op(toProto(in.op));
  out->set_mode(toProto(in.mode));
  out->set_message_size(in.message_size);
  out->set_change(toString(in.change));
  if (in.a) out->set_a(*in.a);
  if (in.b) out->set_b(*in.b);
  out->set_unit(in.unit);
  if (in.change_pct) out->set_change_pct(*in.change_pct);
  if (in.a_status) out->set_a_status(toProto(*in.a_status));
  if (in.b_status) out->set_b_status(toProto(*in.b_status));
  out->set_a_test_id(in.a_test_id);
  out->set_b_test_id(in.b_test_id);
  out->set_reason(in.reason);
}

void toProto(const SweepComparison& in, v1::CompareSweepsResponse* out) {
  out->set_a(in.a);
  out->set_b(in.b);
  out->set_tolerance_pct(in.tolerance_pct);
  for (const ComparisonRow& r : in.rows) toProto(r, out->add_rows());
  out->set_worse(static_cast<uint32_t>(in.worse));
  out->set_better(static_cast<uint32_t>(in.better));
  out->set_unchanged(static_cast<uint32_t>(in.unchanged));
  out->set_added(static_cast<uint32_t>(in.added));
  out->set_missing(static_cast<uint32_t>(in.missing));
}

void toProto(const ScheduleSummary& in, v1::ScheduleInfo* out) {
  out->set_name(in.name);
  out->set_cron(in.cron);
  out->set_timezone(in.timezone);
  out->set_next_run_ms(in.next_run_ms);
  out->set_last_run_ms(in.last_run_ms);
  out->set_last_sweep_id(in.last_sweep_id);
  out->set_last_state(in.last_state);
  out->set_missed(in.missed);
  out->set_last_detail(in.last_detail);
  out->set_last_sweep_state(in.last_sweep_state);
  out->set_last_sweep_verdict(in.last_sweep_verdict);
  out->set_catch_up_due_ms(in.catch_up_due_ms);
}

void toProto(const ActionRecord& in, v1::NodeAction* out) {
  out->set_id(in.id);
  out->set_recorded_ms(in.recorded_ms);
  out->set_sweep_id(in.sweep_id);
  out->set_node(in.node);
  out->set_action(in.action);
  out->set_outcome(in.outcome);
  out->set_actuator(in.actuator);
  out->set_reason(in.reason);
  out->set_detail(in.detail);
}

ComparisonRow fromProto(const v1::ComparisonRow& in) {
  ComparisonRow r;
  r.src = in.src();
  r.dst = in.dst();
  r.op = fromProto(in.op());
  r.mode = fromProto(in.mode());
  r.message_size = in.message_size();
  for (ChangeKind c : {ChangeKind::kWorse, ChangeKind::kBetter, ChangeKind::kUnchanged,
                       ChangeKind::kNew, ChangeKind::kMissing}) {
    if (in.change() == toString(c)) r.change = c;
  }
  if (in.has_a()) r.a = in.a();
  if (in.has_b()) r.b = in.b();
  r.unit = in.unit();
  if (in.has_change_pct()) r.change_pct = in.change_pct();
  if (in.a_status() != v1::TEST_STATUS_UNSPECIFIED) r.a_status = fromProto(in.a_status());
  if (in.b_status() != v1::TEST_STATUS_UNSPECIFIED) r.b_status = fromProto(in.b_status());
  r.a_test_id = in.a_test_id();
  r.b_test_id = in.b_test_id();
  r.reason = in.reason();
  return r;
}

SweepComparison fromProto(const v1::CompareSweepsResponse& in) {
  SweepComparison c;
  c.a = in.a();
  c.b = in.b();
  c.tolerance_pct = in.tolerance_pct();
  for (const auto& r : in.rows()) c.rows.push_back(fromProto(r));
  c.worse = in.worse();
  c.better = in.better();
  c.unchanged = in.unchanged();
  c.added = in.added();
  c.missing = in.missing();
  return c;
}

ScheduleSummary fromProto(const v1::ScheduleInfo& in) {
  ScheduleSummary s;
  s.name = in.name();
  s.cron = in.cron();
  s.timezone = in.timezone();
  s.next_run_ms = in.next_run_ms();
  s.last_run_ms = in.last_run_ms();
  s.last_sweep_id = in.last_sweep_id();
  s.last_state = in.last_state();
  s.missed = in.missed();
  s.last_detail = in.last_detail();
  s.last_sweep_state = in.last_sweep_state();
  s.last_sweep_verdict = in.last_sweep_verdict();
  s.catch_up_due_ms = in.catch_up_due_ms();
  return s;
}

ActionRecord fromProto(const v1::NodeAction& in) {
  ActionRecord a;
  a.id = in.id();
  a.recorded_ms = in.recorded_ms();
  a.sweep_id = in.sweep_id();
  a.node = in.node();
  a.action = in.action();
  a.outcome = in.outcome();
  a.actuator = in.actuator();
  a.reason = in.reason();
  a.detail = in.detail();
  return a;
}

}  // namespace gdrmesh::convert
