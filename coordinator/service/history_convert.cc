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

}  // namespace gdrmesh::convert
