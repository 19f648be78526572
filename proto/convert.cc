#include "convert.h"

#include "common/limits.h"

namespace gdrmesh::convert {

pb::Op toProto(Op v) {
  switch (v) {
    case Op::kWrite:
      return pb::OP_WRITE;
    case Op::kRead:
      return pb::OP_READ;
    case Op::kSend:
      return pb::OP_SEND;
    case Op::kWriteImm:
      return pb::OP_WRITE_IMM;
  }
  return pb::OP_UNSPECIFIED;
}
pb::Mode toProto(Mode v) {
  return v == Mode::kLatency ? pb::MODE_LATENCY : pb::MODE_BANDWIDTH;
}
pb::MemoryKind toProto(MemoryKind v) {
  return v == MemoryKind::kCuda ? pb::MEMORY_KIND_CUDA : pb::MEMORY_KIND_HOST;
}
pb::RegPath toProto(RegPath v) {
  switch (v) {
    case RegPath::kAuto:
      return pb::REG_PATH_AUTO;
    case RegPath::kHost:
      return pb::REG_PATH_HOST;
    case RegPath::kDmabuf:
      return pb::REG_PATH_DMABUF;
    case RegPath::kPeermem:
      return pb::REG_PATH_PEERMEM;
    case RegPath::kStaged:
      return pb::REG_PATH_STAGED;
  }
  return pb::REG_PATH_UNSPECIFIED;
}
pb::Transport toProto(TransportKind v) {
  switch (v) {
    case TransportKind::kVerbs:
      return pb::TRANSPORT_VERBS;
    case TransportKind::kSimulated:
      return pb::TRANSPORT_SIMULATED;
    case TransportKind::kEmulated:
      break;
  }
  return pb::TRANSPORT_EMULATED;
}
pb::TestStatus toProto(TestStatus v) {
  switch (v) {
    case TestStatus::kPassed:
      return pb::TEST_STATUS_PASSED;
    case TestStatus::kFailed:
      return pb::TEST_STATUS_FAILED;
    case TestStatus::kSkipped:
      return pb::TEST_STATUS_SKIPPED;
    case TestStatus::kError:
      return pb::TEST_STATUS_ERROR;
  }
  return pb::TEST_STATUS_UNSPECIFIED;
}
pb::Role toProto(Role v) {
  return v == Role::kTarget ? pb::ROLE_TARGET : pb::ROLE_INITIATOR;
}

Op fromProto(pb::Op v, Op def) {
  switch (v) {
    case pb::OP_WRITE:
      return Op::kWrite;
    case pb::OP_READ:
      return Op::kRead;
    case pb::OP_SEND:
      return Op::kSend;
    case pb::OP_WRITE_IMM:
      return Op::kWriteImm;
    default:
      return def;
  }
}
Mode fromProto(pb::Mode v, Mode def) {
  switch (v) {
    case pb::MODE_BANDWIDTH:
      return Mode::kBandwidth;
    case pb::MODE_LATENCY:
      return Mode::kLatency;
    default:
      return def;
  }
}
MemoryKind fromProto(pb::MemoryKind v, MemoryKind def) {
  switch (v) {
    case pb::MEMORY_KIND_HOST:
      return MemoryKind::kHost;
    case pb::MEMORY_KIND_CUDA:
      return MemoryKind::kCuda;
    default:
      return def;
  }
}
RegPath fromProto(pb::RegPath v, RegPath def) {
  switch (v) {
    case pb::REG_PATH_AUTO:
      return RegPath::kAuto;
    case pb::REG_PATH_HOST:
      return RegPath::kHost;
    case pb::REG_PATH_DMABUF:
      return RegPath::kDmabuf;
    case pb::REG_PATH_PEERMEM:
      return RegPath::kPeermem;
    case pb::REG_PATH_STAGED:
      return RegPath::kStaged;
    default:
      return def;
  }
}
TransportKind fromProto(pb::Transport v, TransportKind def) {
  switch (v) {
    case pb::TRANSPORT_EMULATED:
      return TransportKind::kEmulated;
    case pb::TRANSPORT_VERBS:
      return TransportKind::kVerbs;
    case pb::TRANSPORT_SIMULATED:
      return TransportKind::kSimulated;
    default:
      return def;
  }
}
TestStatus fromProto(pb::TestStatus v, TestStatus def) {
  switch (v) {
    case pb::TEST_STATUS_PASSED:
      return TestStatus::kPassed;
    case pb::TEST_STATUS_FAILED:
      return TestStatus::kFailed;
    case pb::TEST_STATUS_SKIPPED:
      return TestStatus::kSkipped;
    case pb::TEST_STATUS_ERROR:
      return TestStatus::kError;
    default:
      return def;
  }
}
Role fromProto(pb::Role v, Role def) {
  switch (v) {
    case pb::ROLE_INITIATOR:
      return Role::kInitiator;
    case pb::ROLE_TARGET:
      return Role::kTarget;
    default:
      return def;
  }
}

void toProto(const Measurement& in, pb::Measurement* out) {
  out->set_message_size(in.message_size);
  out->set_iterations(in.iterations);
  out->set_warmup_iterations(in.warmup_iterations);
  out->set_staging_seconds(in.staging_seconds);
  if (in.has_bandwidth) {
    auto* b = out->mutable_bw();
    b->set_bytes(in.bw.bytes);
    b->set_messages(in.bw.messages);
    b->set_seconds(in.bw.seconds);
    b->set_avg_gbps(in.bw.avg_gbps);
    b->set_peak_gbps(in.bw.peak_gbps);
    b->set_msg_rate_mpps(in.bw.msg_rate_mpps);
  }
  if (in.has_latency) {
    auto* l = out->mutable_lat();
    l->set_samples(in.lat.samples);
    l->set_min_us(in.lat.min_us);
    l->set_max_us(in.lat.max_us);
    l->set_median_us(in.lat.median_us);
    l->set_mean_us(in.lat.mean_us);
    l->set_stdev_us(in.lat.stdev_us);
    l->set_p99_us(in.lat.p99_us);
    l->set_p999_us(in.lat.p999_us);
  }
  if (in.counters.valid) {
    auto* c = out->mutable_counters();
    c->set_valid(true);
    c->set_xmit_bytes(in.counters.xmit_bytes);
    c->set_rcv_bytes(in.counters.rcv_bytes);
    c->set_xmit_packets(in.counters.xmit_packets);
    c->set_rcv_packets(in.counters.rcv_packets);
    c->set_errors(in.counters.errors);
  }
}

Measurement fromProto(const pb::Measurement& in) {
  Measurement m;
  m.message_size = in.message_size();
  m.iterations = in.iterations();
  m.warmup_iterations = in.warmup_iterations();
  m.staging_seconds = in.staging_seconds();
  if (in.has_bw()) {
    m.has_bandwidth = true;
    m.bw.bytes = in.bw().bytes();
    m.bw.messages = in.bw().messages();
    m.bw.seconds = in.bw().seconds();
    m.bw.avg_gbps = in.bw().avg_gbps();
    m.bw.peak_gbps = in.bw().peak_gbps();
    m.bw.msg_rate_mpps = in.bw().msg_rate_mpps();
  }
  if (in.has_lat()) {
    m.has_latency = true;
    m.lat.samples = in.lat().samples();
    m.lat.min_us = in.lat().min_us();
    m.lat.max_us = in.lat().max_us();
    m.lat.median_us = in.lat().median_us();
    m.lat.mean_us = in.lat().mean_us();
    m.lat.stdev_us = in.lat().stdev_us();
    m.lat.p99_us = in.lat().p99_us();
    m.lat.p999_us = in.lat().p999_us();
  }
  if (in.has_counters()) {
    m.counters.valid = in.counters().valid();
    m.counters.xmit_bytes = in.counters().xmit_bytes();
    m.counters.rcv_bytes = in.counters().rcv_bytes();
    m.counters.xmit_packets = in.counters().xmit_packets();
    m.counters.rcv_packets = in.counters().rcv_packets();
    m.counters.errors = in.counters().errors();
  }
  return m;
}

void toProto(const IntegrityReport& in, pb::Integrity* out) {
  out->set_checked(in.checked);
  out->set_bytes_checked(in.bytes_checked);
  out->set_wrong_bytes(in.wrong_bytes);
  out->set_first_wrong_offset(in.first_wrong_offset);
  out->set_where(in.where);
  out->set_digested(in.digested);
  out->set_digest(in.digest);
}

IntegrityReport fromProto(const pb::Integrity& in) {
  IntegrityReport r;
  r.checked = in.checked();
  r.bytes_checked = in.bytes_checked();
  r.wrong_bytes = in.wrong_bytes();
  r.first_wrong_offset = in.checked() ? in.first_wrong_offset() : -1;
  r.where = cleanText(in.where(), 256);
  r.digested = in.digested();
  r.digest = in.digest();
  return r;
}

void toProto(const EndpointRecord& in, pb::EndpointRecord* out) {
  out->set_worker(in.worker);
  out->set_host(in.host);
  out->set_nic(in.nic);
  out->set_port(in.port);
  out->set_gpu(in.gpu);
  out->set_gpu_pci(in.gpu_pci);
  out->set_memory(toProto(in.memory));
  out->set_reg_path(toProto(in.reg_path));
  out->set_gid_index(in.gid_index);
  out->set_topo_class(in.topo_class);
  out->set_cpu_binding(in.cpu_binding);
}

EndpointRecord fromProto(const pb::EndpointRecord& in) {
  EndpointRecord r;
  r.worker = in.worker();
  r.host = in.host();
  r.nic = in.nic();
  r.port = in.port();
  r.gpu = in.gpu();
  r.gpu_pci = in.gpu_pci();
  r.memory = fromProto(in.memory());
  r.reg_path = fromProto(in.reg_path(), RegPath::kHost);
  r.gid_index = in.gid_index();
  r.topo_class = in.topo_class();
  r.cpu_binding = in.cpu_binding();
  return r;
}

void toProto(const TestResult& in, pb::TestResult* out) {
  out->set_id(in.id);
  out->set_test_id(in.test_id);
  out->set_plan_index(in.plan_index);
  out->set_run_id(in.run_id);
  out->set_started_ms(in.started_ms);
  out->set_finished_ms(in.finished_ms);
  out->set_op(toProto(in.op));
  out->set_mode(toProto(in.mode));
  out->set_transport(toProto(in.transport));
  toProto(in.initiator, out->mutable_initiator());
  toProto(in.target, out->mutable_target());
  out->set_message_size(in.message_size);
  out->set_iterations(in.iterations);
  out->set_num_qps(in.num_qps);
  out->set_path_mtu(in.path_mtu);
  toProto(in.measurement, out->mutable_measurement());
  toProto(in.integrity, out->mutable_integrity());
  out->set_status(toProto(in.status));
  out->set_reason(in.reason);
  out->set_gpudirect(in.gpudirect());
}

TestResult fromProto(const pb::TestResult& in) {
  TestResult r;
  r.id = in.id();
  r.test_id = in.test_id();
  r.run_id = in.run_id();
  r.plan_index = in.plan_index();
  r.started_ms = in.started_ms();
  r.finished_ms = in.finished_ms();
  r.op = fromProto(in.op());
  r.mode = fromProto(in.mode());
  r.transport = fromProto(in.transport());
  r.initiator = fromProto(in.initiator());
  r.target = fromProto(in.target());
  r.message_size = in.message_size();
  r.iterations = in.iterations();
  r.num_qps = in.num_qps();
  r.path_mtu = in.path_mtu();
  r.measurement = fromProto(in.measurement());
  r.integrity = fromProto(in.integrity());
  r.status = fromProto(in.status());
  r.reason = in.reason();
  return r;
}

void toProto(const Status& in, pb::CommandStatus* out) {
  out->set_ok(in.ok());
  out->set_code(codeName(in.code()));
  out->set_message(in.message());
  out->set_fix(in.fix());
}

Status fromProto(const pb::CommandStatus& in) {
  if (in.ok()) return {};
  static const Code kCodes[] = {
      Code::kInvalidArgument,   Code::kNotFound,         Code::kFailedPrecondition,
      Code::kUnavailable,       Code::kDeadlineExceeded, Code::kAborted,
      Code::kResourceExhausted, Code::kPermissionDenied, Code::kDataLoss,
      Code::kUnimplemented,     Code::kInternal};
  Code code = Code::kInternal;
  for (Code c : kCodes) {
    if (in.code() == codeName(c)) code = c;
  }
  // Text from another process: made safe for terminals and bounded before anyone stores it.
  return Status(code, cleanText(in.message()), cleanText(in.fix(), 1024));
}

namespace {

void counterPortToProto(const fabric::CounterPort& in, pb::CounterPortRef* out) {
  out->set_lid(in.lid);
  out->set_port(static_cast<uint32_t>(in.port));
  out->set_guid(in.guid);
}

fabric::CounterPort counterPortFromProto(const pb::CounterPortRef& in) {
  fabric::CounterPort p;
  p.lid = static_cast<uint16_t>(in.lid());
  p.port = static_cast<int>(in.port());
  p.guid = in.guid();
  return p;
}

}  // namespace

void toProto(const fabric::CounterReadRequest& in, pb::ReadPortCountersRequest* out) {
  out->set_ca(in.ca);
  out->set_ca_port(static_cast<uint32_t>(in.ca_port));
  out->set_timeout_ms(static_cast<uint32_t>(in.timeout_ms));
  out->set_reset(in.reset);
  for (const auto& p : in.ports) counterPortToProto(p, out->add_ports());
}

fabric::CounterReadRequest fromProto(const pb::ReadPortCountersRequest& in) {
  fabric::CounterReadRequest r;
  r.ca = in.ca();
  r.ca_port = static_cast<int>(in.ca_port());
  r.timeout_ms = in.timeout_ms() == 0 ? 500 : static_cast<int>(in.timeout_ms());
  r.reset = in.reset();
  r.ports.reserve(static_cast<size_t>(in.ports_size()));
  for (const auto& p : in.ports()) r.ports.push_back(counterPortFromProto(p));
  return r;
}

void toProto(const fabric::CounterReadOutcome& in, pb::ReadPortCountersReply* out) {
  toProto(in.status, out->mutable_reading());
  for (const auto& p : in.ports) {
    auto* o = out->add_ports();
    counterPortToProto(p.port, o->mutable_port());
    toProto(p.status, o->mutable_status());
    o->set_extended(p.extended);
    o->set_xmit_wait(p.xmit_wait);
    o->set_reset(p.reset);
    for (const auto& [k, v] : p.values) (*o->mutable_values())[k] = v;
  }
}

fabric::CounterReadOutcome fromProto(const pb::ReadPortCountersReply& in) {
  fabric::CounterReadOutcome out;
  out.status = fromProto(in.reading());
  out.ports.reserve(static_cast<size_t>(in.ports_size()));
  for (const auto& p : in.ports()) {
    fabric::PortCounterValues v;
    v.port = counterPortFromProto(p.port());
    v.status = fromProto(p.status());
    v.extended = p.extended();
    v.xmit_wait = p.xmit_wait();
    v.reset = p.reset();
    // Only the counters gdrmesh knows: a worker's other names are dropped at the edge.
    for (const auto& [k, val] : p.values()) {
      if (fabric::counterKind(k) != nullptr) v.values[k] = val;
    }
    out.ports.push_back(std::move(v));
  }
  return out;
}

// ------------------------------------------------------------------ one side of a pair test

namespace {

// The NIC's part, into the wire's VerbsEndpoint or the legacy flat fields of EndpointDesc
// (the same field names on both).
template <class P>
void nicToProto(const VerbsDesc& n, P* v) {
  v->set_device(n.device);
  v->set_port(n.port);
  v->set_link_layer(n.link_layer);
  v->set_lid(n.lid);
  v->set_gid(n.gid);
  v->set_gid_index(n.gid_index);
  v->set_active_mtu(n.active_mtu);
  v->set_max_rd_atomic(n.max_rd_atomic);
  for (const auto& q : n.qps) {
    auto* pq = v->add_qps();
    pq->set_qpn(q.qpn);
    pq->set_psn(q.psn);
  }
}

template <class P>
VerbsDesc nicFromProto(const P& v) {  // the wire's VerbsEndpoint, or the legacy flat fields
  VerbsDesc n;
  n.device = cleanText(v.device(), 256);
  n.port = v.port();
  n.link_layer = cleanText(v.link_layer(), 256);
  n.lid = v.lid();
  n.gid = cleanText(v.gid(), 256);
  n.gid_index = v.gid_index();
  n.active_mtu = v.active_mtu();
  n.max_rd_atomic = v.max_rd_atomic();
  for (const auto& q : v.qps()) n.qps.push_back({q.qpn(), q.psn()});
  return n;
}

}  // namespace

// The per-transport fields live in `transport_fields`; the flat v1 fields are written too for
// readers of earlier v1 releases (the migration note in gdrmesh.proto).
void toProto(const EndpointDesc& in, pb::EndpointDesc* out) {
  out->set_transport(toProto(in.transport()));
  out->set_addr(in.addr);
  out->set_length(in.length);
  out->set_rkey(in.rkey);
  out->set_memory(toProto(in.memory));
  out->set_reg_path(toProto(in.reg_path));
  // The oneof, and the legacy flat fields (deprecated; v2 drops them) for earlier v1 readers:
  // tcp_host/tcp_port carried the emulated address, rdma_cm's address and the simulated
  // worker's name.
  if (const auto* e = in.as<EmulatedDesc>()) {
    out->mutable_emulated()->set_tcp_host(e->tcp_host);
    out->mutable_emulated()->set_tcp_port(e->tcp_port);
    out->set_tcp_host(e->tcp_host);
    out->set_tcp_port(e->tcp_port);
  } else if (const auto* v = in.as<VerbsDesc>()) {
    nicToProto(*v, out->mutable_verbs());
    out->mutable_verbs()->set_cm_host(v->cm_host);
    out->mutable_verbs()->set_cm_port(v->cm_port);
    out->set_tcp_host(v->cm_host);
    out->set_tcp_port(v->cm_port);
    nicToProto(*v, out);
  } else if (const auto* sim = in.as<SimulatedDesc>()) {
    out->mutable_simulated()->set_worker(sim->worker);
    nicToProto(sim->nic, out->mutable_simulated()->mutable_nic());
    out->set_tcp_host(sim->worker);
    nicToProto(sim->nic, out);
  }
  out->set_buffer(in.buffer);
  out->set_gpu(in.gpu);
  out->set_gpu_pci(in.gpu_pci);
  out->set_topo_class(in.topo_class);
  out->set_cpu_binding(in.cpu_binding);
}

EndpointDesc fromProto(const pb::EndpointDesc& in) {
  EndpointDesc d;
  d.addr = in.addr();
  d.length = in.length();
  d.rkey = in.rkey();
  d.memory = fromProto(in.memory());
  d.reg_path = fromProto(in.reg_path(), RegPath::kHost);
  switch (in.transport_fields_case()) {
    case pb::EndpointDesc::kVerbs: {
      VerbsDesc v = nicFromProto(in.verbs());
      v.cm_host = cleanText(in.verbs().cm_host(), 256);
      v.cm_port = in.verbs().cm_port();
      d.fields = std::move(v);
      break;
    }
    case pb::EndpointDesc::kEmulated:
      d.fields = EmulatedDesc{cleanText(in.emulated().tcp_host(), 256), in.emulated().tcp_port()};
      break;
    case pb::EndpointDesc::kSimulated:
      d.fields = SimulatedDesc{cleanText(in.simulated().worker(), 256),
                               nicFromProto(in.simulated().nic())};
      break;
    case pb::EndpointDesc::TRANSPORT_FIELDS_NOT_SET: {
      // An earlier v1 writer: the transport field says which part the flat fields hold.
      const std::string host = cleanText(in.tcp_host(), 256);
      switch (fromProto(in.transport())) {
        case TransportKind::kVerbs: {
          VerbsDesc v = nicFromProto(in);
          v.cm_host = host;
          v.cm_port = in.tcp_port();
          d.fields = std::move(v);
          break;
        }
        case TransportKind::kSimulated:
          d.fields = SimulatedDesc{host, nicFromProto(in)};
          break;
        case TransportKind::kEmulated:
          d.fields = EmulatedDesc{host, in.tcp_port()};
          break;
      }
      break;
    }
  }
  d.buffer = cleanText(in.buffer(), 256);
  d.gpu = in.gpu();
  d.gpu_pci = cleanText(in.gpu_pci(), 256);
  d.topo_class = cleanText(in.topo_class(), 256);
  d.cpu_binding = cleanText(in.cpu_binding(), 256);
  return d;
}

void toProto(const RunSpec& in, pb::RunSpec* out) {
  out->set_message_size(in.message_size);
  out->set_iterations(in.iterations);
  out->set_warmup_iterations(in.warmup_iterations);
  out->set_duration_seconds(in.duration_seconds);
  out->set_bidirectional(in.bidirectional);
  out->set_cq_moderation(in.cq_moderation);
  out->set_timeout_seconds(in.timeout_seconds);
  out->set_end_signal(in.end_signal);
}

RunSpec fromProto(const pb::RunSpec& in) {
  RunSpec r;
  r.message_size = in.message_size();
  r.iterations = in.iterations();
  r.warmup_iterations = in.warmup_iterations();
  r.duration_seconds = in.duration_seconds();
  r.bidirectional = in.bidirectional();
  r.cq_moderation = in.cq_moderation();
  r.timeout_seconds = in.timeout_seconds() > 0 ? in.timeout_seconds() : kDefaultRunTimeoutSeconds;
  r.end_signal = in.end_signal();
  return r;
}

void toProto(const SideSpec& in, pb::EndpointSpec* out) {
  const auto& e = in.endpoint;
  out->set_test_id(e.test_id);
  out->set_role(toProto(e.role));
  out->set_op(toProto(e.op));
  out->set_mode(toProto(e.mode));
  out->set_buffer_size(e.buffer_size);
  out->set_num_qps(e.num_qps);
  out->set_tx_depth(e.tx_depth);
  out->set_rx_depth(e.rx_depth);
  out->set_inline_size(e.inline_size);
  out->set_device(e.device);
  out->set_port(e.port);
  out->set_gid_index(e.gid_index);
  out->set_use_rdma_cm(e.use_rdma_cm);
  out->set_transport(toProto(in.transport));
  out->set_memory(toProto(in.memory));
  out->set_gpu(in.gpu);
  out->set_reg_path(toProto(in.reg));
  out->set_seed(in.seed);
  out->set_fill_seed(in.fill_seed);
  out->set_expect_seed(in.expect_seed);
  if (in.corrupt_bytes > 0 || in.invalidate_remote_key) {
    out->mutable_fault()->set_corrupt_bytes(in.corrupt_bytes);
    out->mutable_fault()->set_invalidate_remote_key(in.invalidate_remote_key);
  }
}

SideSpec fromProto(const pb::EndpointSpec& in) {
  SideSpec s;
  auto& e = s.endpoint;
  e.test_id = in.test_id();
  e.role = fromProto(in.role());
  e.op = fromProto(in.op());
  e.mode = fromProto(in.mode());
  e.buffer_size = in.buffer_size();
  e.num_qps = in.num_qps() == 0 ? kDefaultNumQps : in.num_qps();
  e.tx_depth = in.tx_depth() == 0 ? kDefaultTxDepth : in.tx_depth();
  e.rx_depth = in.rx_depth() == 0 ? kDefaultRxDepth : in.rx_depth();
  e.inline_size = in.inline_size();
  e.device = in.device();
  e.port = in.port() == 0 ? kDefaultPort : in.port();
  e.gid_index = in.gid_index();
  e.use_rdma_cm = in.use_rdma_cm();
  s.transport = fromProto(in.transport());
  s.memory = fromProto(in.memory());
  s.gpu = in.gpu();
  s.reg = fromProto(in.reg_path(), RegPath::kAuto);
  s.seed = in.seed();
  s.fill_seed = in.fill_seed();
  s.expect_seed = in.expect_seed();
  s.corrupt_bytes = in.fault().corrupt_bytes();
  s.invalidate_remote_key = in.fault().invalidate_remote_key();
  return s;
}

void toProto(const SideOutcome& in, pb::SideOutcome* out) {
  if (in.has_measurement) toProto(in.measurement, out->mutable_measurement());
  if (in.verified) toProto(in.integrity, out->mutable_integrity());
  out->set_staging_seconds(in.staging_seconds);
  out->set_path_mtu(in.path_mtu);
}

SideOutcome fromProto(const pb::SideOutcome& in) {
  SideOutcome o;
  o.has_measurement = in.has_measurement();
  if (o.has_measurement) o.measurement = fromProto(in.measurement());
  o.verified = in.has_integrity();
  if (o.verified) o.integrity = fromProto(in.integrity());
  o.staging_seconds = in.staging_seconds();
  o.path_mtu = in.path_mtu();
  return o;
}

// ------------------------------------------------------------------ pair-test request

void toProto(const EndpointSelector& in, pb::EndpointSelector* out) {
  out->set_worker(in.worker);
  out->set_device(in.device);
  out->set_memory(toProto(in.memory));
  out->set_gpu(in.gpu);
  out->set_reg_path(toProto(in.reg));
}

EndpointSelector fromProto(const pb::EndpointSelector& in) {
  EndpointSelector s;
  s.worker = in.worker();
  s.device = in.device();
  s.memory = fromProto(in.memory());
  s.gpu = in.gpu();
  s.reg = fromProto(in.reg_path(), RegPath::kAuto);
  return s;
}

void toProto(const PairTestSpec& in, pb::RunTestRequest* out) {
  toProto(in.initiator, out->mutable_initiator());
  toProto(in.target, out->mutable_target());
  out->set_op(toProto(in.op));
  out->set_mode(toProto(in.mode));
  out->set_message_size(in.message_size);
  out->set_iterations(in.iterations);
  out->set_warmup_iterations(in.warmup_iterations);
  out->set_num_qps(in.num_qps);
  out->set_tx_depth(in.tx_depth);
  out->set_transport(in.transport ? toProto(*in.transport) : pb::TRANSPORT_UNSPECIFIED);
  out->set_gid_index(in.gid_index);
  out->set_use_rdma_cm(in.use_rdma_cm);
  out->set_inline_size(in.inline_size);
  out->set_bidirectional(in.bidirectional);
  out->set_duration_seconds(in.duration_seconds);
  out->set_cq_moderation(in.cq_moderation);
  out->set_timeout_seconds(in.timeout_seconds);
  out->set_run_id(in.run_id);
  if (in.fault.corrupt_bytes > 0 || in.fault.invalidate_remote_key) {
    out->mutable_fault()->set_corrupt_bytes(in.fault.corrupt_bytes);
    out->mutable_fault()->set_invalidate_remote_key(in.fault.invalidate_remote_key);
  }
}

PairTestSpec fromProto(const pb::RunTestRequest& in) {
  PairTestSpec s;
  s.initiator = fromProto(in.initiator());
  s.target = fromProto(in.target());
  s.op = fromProto(in.op());
  s.mode = fromProto(in.mode());
  s.message_size = in.message_size();
  // Zero on the wire means "default" for counts that cannot be zero.
  s.iterations = in.iterations() == 0 ? kDefaultIterations : in.iterations();
  s.warmup_iterations = in.warmup_iterations();
  s.num_qps = in.num_qps() == 0 ? kDefaultNumQps : in.num_qps();
  s.tx_depth = in.tx_depth() == 0 ? kDefaultTxDepth : in.tx_depth();
  if (in.transport() != pb::TRANSPORT_UNSPECIFIED) s.transport = fromProto(in.transport());
  s.gid_index = in.gid_index();
  s.use_rdma_cm = in.use_rdma_cm();
  s.inline_size = in.inline_size();
  s.bidirectional = in.bidirectional();
  s.duration_seconds = in.duration_seconds();
  s.cq_moderation = in.cq_moderation();
  s.timeout_seconds = in.timeout_seconds();
  s.run_id = in.run_id();
  s.fault.corrupt_bytes = in.fault().corrupt_bytes();
  s.fault.invalidate_remote_key = in.fault().invalidate_remote_key();
  return s;
}

}  // namespace gdrmesh::convert
