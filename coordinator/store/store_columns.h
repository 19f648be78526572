// The columns of a stored result and a stored sweep, listed once and walked by visitors (names,
// SQL binding and reading in sqlite_columns.h; the spool's legacy reader), and the rule for a
// result any store refuses. No SQLite here: the spool (gdrmesh_store_api) uses it too. Private to
// coordinator/store and its tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "coordinator/store/store.h"

namespace gdrmesh {
namespace store_detail {

// ---------------------------------------------------------------------------------------------
// One list of the results columns, walked by three visitors (names, binding, reading), so the
// INSERT, the SELECT and the struct cannot drift apart.
template <typename R, typename V>
void visitResultColumns(R& r, V& v) {
  v.field("test_id", r.test_id);
  v.field("run_id", r.run_id);
  v.field("plan_index", r.plan_index);  // migration 2
  v.field("started_ms", r.started_ms);
  v.field("finished_ms", r.finished_ms);
  v.field("op", r.op);
  v.field("mode", r.mode);
  v.field("transport", r.transport);
  v.derivedGpuDirect("gpudirect", r);
  v.field("initiator_worker", r.initiator.worker);
  v.field("initiator_host", r.initiator.host);
  v.field("initiator_nic", r.initiator.nic);
  v.field("initiator_port", r.initiator.port);
  v.field("initiator_gpu", r.initiator.gpu);
  v.field("initiator_gpu_pci", r.initiator.gpu_pci);
  v.field("initiator_memory", r.initiator.memory);
  v.field("initiator_reg_path", r.initiator.reg_path);
  v.field("initiator_gid_index", r.initiator.gid_index);
  v.field("initiator_topo_class", r.initiator.topo_class);
  v.field("target_worker", r.target.worker);
  v.field("target_host", r.target.host);
  v.field("target_nic", r.target.nic);
  v.field("target_port", r.target.port);
  v.field("target_gpu", r.target.gpu);
  v.field("target_gpu_pci", r.target.gpu_pci);
  v.field("target_memory", r.target.memory);
  v.field("target_reg_path", r.target.reg_path);
  v.field("target_gid_index", r.target.gid_index);
  v.field("target_topo_class", r.target.topo_class);
  v.field("message_size", r.message_size);
  v.field("iterations", r.iterations);
  v.field("num_qps", r.num_qps);
  v.field("path_mtu", r.path_mtu);
  v.field("meas_message_size", r.measurement.message_size);
  v.field("meas_iterations", r.measurement.iterations);
  v.field("meas_warmup_iterations", r.measurement.warmup_iterations);
  v.field("meas_staging_seconds", r.measurement.staging_seconds);
  v.field("bw_valid", r.measurement.has_bandwidth);
  v.field("bw_bytes", r.measurement.bw.bytes);
  v.field("bw_messages", r.measurement.bw.messages);
  v.field("bw_seconds", r.measurement.bw.seconds);
  v.field("bw_avg_gbps", r.measurement.bw.avg_gbps);
  v.field("bw_peak_gbps", r.measurement.bw.peak_gbps);
  v.field("bw_msg_rate_mpps", r.measurement.bw.msg_rate_mpps);
  v.field("lat_valid", r.measurement.has_latency);
  v.field("lat_samples", r.measurement.lat.samples);
  v.field("lat_min_us", r.measurement.lat.min_us);
  v.field("lat_max_us", r.measurement.lat.max_us);
  v.field("lat_median_us", r.measurement.lat.median_us);
  v.field("lat_mean_us", r.measurement.lat.mean_us);
  v.field("lat_stdev_us", r.measurement.lat.stdev_us);
  v.field("lat_p99_us", r.measurement.lat.p99_us);
  v.field("lat_p999_us", r.measurement.lat.p999_us);
  v.field("ctr_valid", r.measurement.counters.valid);
  v.field("ctr_xmit_bytes", r.measurement.counters.xmit_bytes);
  v.field("ctr_rcv_bytes", r.measurement.counters.rcv_bytes);
  v.field("ctr_xmit_packets", r.measurement.counters.xmit_packets);
  v.field("ctr_rcv_packets", r.measurement.counters.rcv_packets);
  v.field("ctr_errors", r.measurement.counters.errors);
  v.field("integrity_checked", r.integrity.checked);
  v.field("integrity_bytes_checked", r.integrity.bytes_checked);
  v.field("integrity_wrong_bytes", r.integrity.wrong_bytes);
  v.field("integrity_first_wrong_offset", r.integrity.first_wrong_offset);
  v.field("integrity_where", r.integrity.where);
  v.field("status", r.status);
  v.field("reason", r.reason);
  // Migration 7; last, so that a spool line of an earlier build is these two short
  // (ResultSpool::replay fills them in).
  v.field("initiator_cpu_binding", r.initiator.cpu_binding);
  v.field("target_cpu_binding", r.target.cpu_binding);
}

// The sweeps columns, in the same way. `id` must stay first and `created_ms` is never updated
// (updateSweepSql relies on both). The report (megabytes for 1024 hosts) lives in sweep_reports
// (migration 6), so a list of sweeps never walks a report's overflow pages.
template <typename R, typename V>
void visitSweepColumns(R& s, V& v) {
  v.field("id", s.id);
  v.field("state", s.state);
  v.field("pattern", s.pattern);
  v.field("name", s.name);
  v.field("spec_json", s.spec_json);
  v.field("plan_json", s.plan_json);
  v.field("created_ms", s.created_ms);
  v.field("started_ms", s.started_ms);
  v.field("finished_ms", s.finished_ms);
  v.field("tests_total", s.tests_total);
  v.field("reason", s.reason);
  v.field("verdict", s.verdict);
  v.field("verdicts_pass", s.verdicts_pass);  // migration 7
  v.field("verdicts_fail", s.verdicts_fail);
  v.field("verdicts_skip", s.verdicts_skip);
}

inline bool parseEnum(std::string_view s, Op* out) {
  auto v = parseOp(s);
  if (v) *out = *v;
  return v.has_value();
}
inline bool parseEnum(std::string_view s, Mode* out) {
  auto v = parseMode(s);
  if (v) *out = *v;
  return v.has_value();
}
inline bool parseEnum(std::string_view s, MemoryKind* out) {
  auto v = parseMemoryKind(s);
  if (v) *out = *v;
  return v.has_value();
}
inline bool parseEnum(std::string_view s, RegPath* out) {
  auto v = parseRegPath(s);
  if (v) *out = *v;
  return v.has_value();
}
inline bool parseEnum(std::string_view s, TransportKind* out) {
  auto v = parseTransportKind(s);
  if (v) *out = *v;
  return v.has_value();
}
inline bool parseEnum(std::string_view s, TestStatus* out) {
  auto v = parseTestStatus(s);
  if (v) *out = *v;
  return v.has_value();
}

struct ColumnNames {
  std::vector<std::string> names;
  template <typename T>
  void field(const char* name, const T& /*unused*/) {
    names.emplace_back(name);
  }
  void derivedGpuDirect(const char* name, const TestResult& /*unused*/) {
    names.emplace_back(name);
  }
};

inline const std::vector<std::string>& resultColumns() {
  static const std::vector<std::string> kColumns = [] {
    ColumnNames n;
    const TestResult r;
    visitResultColumns(r, n);
    return n.names;
  }();
  return kColumns;
}

inline const std::vector<std::string>& sweepColumns() {
  static const std::vector<std::string> kColumns = [] {
    ColumnNames n;
    const SweepRecord r;
    visitSweepColumns(r, n);
    return n.names;
  }();
  return kColumns;
}

// A result every store refuses before writing anything.
inline Status checkInsertable(const TestResult& result) {
  if (result.test_id.empty()) {
    return invalidArgument("result.test_id is empty", "every stored result needs a unique id");
  }
  // 'auto' is a request: a result that passed must say which path ran. A test that ended before
  // any registration (skipped, failed in prepare) keeps the request it was given.
  if (result.status == TestStatus::kPassed &&
      (result.initiator.reg_path == RegPath::kAuto || result.target.reg_path == RegPath::kAuto)) {
    return invalidArgument(
        "result " + result.test_id + ": reg_path 'auto' is a request, not a path that ran",
        "store the registration path the transport actually used");
  }
  if (result.plan_index < -1) {
    return invalidArgument("result " + result.test_id + ": plan_index " +
                               std::to_string(result.plan_index) + " is negative",
                           "use the test's index in its sweep plan, or -1 outside sweeps");
  }
  return Status();
}

}  // namespace store_detail
}  // namespace gdrmesh
