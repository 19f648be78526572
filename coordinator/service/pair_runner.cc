#include "coordinator/service/pair_runner.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "common/units.h"
#include "convert.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;
using Clock = WorkerLink::Clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

bool hasTransport(const pb::Inventory& inv, pb::Transport t) {
  for (int x : inv.transports()) {
    if (x == t) return true;
  }
  return false;
}

std::string transportNotes(const pb::Inventory& inv, const std::string& prefix) {
  for (const auto& n : inv.notes()) {
    if (n.rfind(prefix, 0) == 0) return n;
  }
  return "";
}

std::string knownWorkers(const Registry& r) {
  std::string s;
  for (const auto& e : r.list()) {
    if (!s.empty()) s += ", ";
    s += e.name + (e.online ? "" : " (offline)");
  }
  return s.empty() ? "none" : s;
}

// The side whose memory receives the data: the target, except for READ.
bool initiatorIsDestination(Op op) {
  return op == Op::kRead;
}

}  // namespace

std::string newTestId() {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08llx", static_cast<unsigned long long>(rng() & 0xffffffffULL));
  std::string ts = formatRfc3339(nowUnixMs());
  // t-20261122T151107-1a2b3c4d
  std::string compact;
  for (char c : ts.substr(0, 19)) {
    if (c != '-' && c != ':') compact += c;
  }
  return "t-" + compact + "-" + buf;
}

Status PairRunner::validate(const pb::RunTestRequest& req) const {
  auto checkSide = [&](const pb::EndpointSelector& s, const char* field) -> Status {
    const std::string f(field);
    if (s.worker().empty()) {
      return invalidArgument(f + ": no worker given", "name a worker from `gdrmesh workers`");
    }
    auto w = registry_.get(s.worker());
    if (!w) {
      return notFound(
          f + ": unknown worker '" + s.worker() + "' (known: " + knownWorkers(registry_) + ")",
          "start a worker with --name " + s.worker() + " or pick a known one");
    }
    if (!w->online) {
      return unavailable(f + ": worker '" + s.worker() + "' is offline",
                         "restart the worker, or pick an online one");
    }
    if (!s.device().empty()) {
      bool found = false;
      std::string names;
      for (const auto& n : w->inventory.nics()) {
        names += (names.empty() ? "" : ", ") + n.name();
        if (n.name() == s.device()) found = true;
      }
      if (!found) {
        return notFound(f + ": worker '" + s.worker() + "' has no RDMA device '" + s.device() +
                            "' (has: " + (names.empty() ? "none" : names) + ")",
                        "run `gdrmesh workers` to see each worker's NICs");
      }
    }
    if (s.memory() == pb::MEMORY_KIND_CUDA) {
      int n = w->inventory.gpus_size();
      // No GPUs at all is a state of the host, reported as a SKIPPED result by run().
      if (n > 0 && (s.gpu() < -1 || s.gpu() >= n)) {
        return notFound(f + ": gpu " + std::to_string(s.gpu()) + " not on worker '" + s.worker() +
                        "' (has 0.." + std::to_string(n - 1) + ")");
      }
    } else if (s.gpu() >= 0) {
      return invalidArgument(f + ": a GPU index was given with host memory",
                             "add --memory cuda, or drop the GPU index");
    }
    if (s.memory() != pb::MEMORY_KIND_CUDA &&
        (s.reg_path() == pb::REG_PATH_DMABUF || s.reg_path() == pb::REG_PATH_PEERMEM ||
         s.reg_path() == pb::REG_PATH_STAGED)) {
      return invalidArgument(f + ": registration path " + pb::RegPath_Name(s.reg_path()) +
                                 " applies to GPU memory only",
                             "add --memory cuda or use --reg host");
    }
    return {};
  };
  GDR_RETURN_IF_ERROR(checkSide(req.initiator(), "initiator"));
  GDR_RETURN_IF_ERROR(checkSide(req.target(), "target"));
  if (req.message_size() == 0) {
    return invalidArgument("size: must be > 0", "e.g. --size 64KiB");
  }
  if (req.message_size() > options_.max_message_size) {
    return invalidArgument("size: " + formatSize(req.message_size()) + " is above the maximum " +
                               formatSize(options_.max_message_size),
                           "use a smaller --size (the coordinator's --max-size sets the limit)");
  }
  if (req.iterations() == 0 || req.iterations() > options_.max_iterations) {
    return invalidArgument("iters: must be in 1.." + std::to_string(options_.max_iterations));
  }
  if (req.warmup_iterations() > 1'000'000) {
    return invalidArgument("warmup: must be at most 1000000");
  }
  if (req.num_qps() > 64) return invalidArgument("qps: must be in 1..64");
  if (req.tx_depth() > 8192) return invalidArgument("tx-depth: must be in 1..8192");
  if (req.duration_seconds() < 0 || req.duration_seconds() > 86400) {
    return invalidArgument("duration: must be in 0..86400 s");
  }
  if (req.duration_seconds() > 0 && req.mode() == pb::MODE_LATENCY) {
    return invalidArgument("duration: latency tests count iterations",
                           "use --iters with --mode lat");
  }
  if (req.inline_size() > 4096) return invalidArgument("inline: must be in 0..4096 B");
  if (req.timeout_seconds() < 0 || req.timeout_seconds() > 86400) {
    return invalidArgument("timeout: must be in 0..86400 s");
  }
  if (req.op() == pb::OP_UNSPECIFIED || !pb::Op_IsValid(req.op())) {
    return invalidArgument("op: must be write, read, send or write_imm");
  }
  if (!pb::Mode_IsValid(req.mode()) || !pb::Transport_IsValid(req.transport())) {
    return invalidArgument("mode/transport: unknown value");
  }
  // SRC == DST is allowed: a loopback test on one worker (and, with verbs, one device).
  return {};
}

Result<TestResult> PairRunner::run(const pb::RunTestRequest& req) {
  GDR_RETURN_IF_ERROR(validate(req));
  auto ini = *registry_.get(req.initiator().worker());
  auto tgt = *registry_.get(req.target().worker());

  TestResult r;
  r.test_id = newTestId();
  r.run_id = req.run_id();
  r.started_ms = nowUnixMs();
  r.op = convert::fromProto(req.op());
  r.mode = convert::fromProto(req.mode());
  r.message_size = req.message_size();
  r.iterations = req.iterations();
  r.num_qps = req.num_qps() == 0 ? 1 : req.num_qps();
  auto fillRecord = [](const WorkerEntry& w, const pb::EndpointSelector& s, EndpointRecord* e) {
    e->worker = w.name;
    e->host = w.inventory.hostname();
    e->nic = s.device();
    e->memory = convert::fromProto(s.memory());
    e->gpu = s.memory() == pb::MEMORY_KIND_CUDA ? std::max(0, s.gpu()) : -1;
    if (e->gpu >= 0 && e->gpu < w.inventory.gpus_size()) {
      e->gpu_pci = w.inventory.gpus(e->gpu).pci_bus_id();
    }
    e->reg_path = convert::fromProto(s.reg_path(), RegPath::kAuto);
  };
  fillRecord(ini, req.initiator(), &r.initiator);
  fillRecord(tgt, req.target(), &r.target);

  // Transport: as asked, or the best both sides have. Emulated results are always labelled.
  pb::Transport transport = req.transport();
  if (transport == pb::TRANSPORT_UNSPECIFIED) {
    transport = hasTransport(ini.inventory, pb::TRANSPORT_VERBS) &&
                        hasTransport(tgt.inventory, pb::TRANSPORT_VERBS)
                    ? pb::TRANSPORT_VERBS
                    : pb::TRANSPORT_EMULATED;
  }
  r.transport = convert::fromProto(transport);
  auto finish = [&](TestStatus status, std::string reason) {
    r.status = status;
    r.reason = std::move(reason);
    r.finished_ms = nowUnixMs();
    return r;
  };
  for (const auto* w : {&ini, &tgt}) {
    const auto& sel = w == &ini ? req.initiator() : req.target();
    if (sel.memory() == pb::MEMORY_KIND_CUDA && w->inventory.gpus_size() == 0) {
      std::string note = transportNotes(w->inventory, "cuda");
      return finish(TestStatus::kSkipped, "GPU memory requested but worker " + w->name +
                                              " has no GPUs" +
                                              (note.empty() ? "" : " (" + note + ")") +
                                              "; a GPUDirect result needs a GPU on both sides");
    }
    if (!hasTransport(w->inventory, transport)) {
      std::string note = transportNotes(w->inventory, toString(r.transport));
      return finish(TestStatus::kSkipped, std::string("transport ") + toString(r.transport) +
                                              " not available on worker " + w->name +
                                              (note.empty() ? "" : ": " + note));
    }
  }

  std::random_device rd;
  const uint64_t seed = (static_cast<uint64_t>(rd()) << 32) | rd();
  auto makeSpec = [&](const pb::EndpointSelector& s, pb::Role role) {
    pb::EndpointSpec spec;
    spec.set_test_id(r.test_id);
    spec.set_role(role);
    spec.set_op(req.op());
    spec.set_mode(req.mode() == pb::MODE_UNSPECIFIED ? pb::MODE_BANDWIDTH : req.mode());
    spec.set_buffer_size(req.message_size());
    spec.set_num_qps(r.num_qps);
    spec.set_tx_depth(req.tx_depth());
    spec.set_inline_size(req.inline_size());
    spec.set_device(s.device());
    spec.set_gid_index(req.gid_index());
    spec.set_use_rdma_cm(req.use_rdma_cm());
    spec.set_transport(transport);
    spec.set_memory(s.memory() == pb::MEMORY_KIND_UNSPECIFIED ? pb::MEMORY_KIND_HOST : s.memory());
    spec.set_gpu(s.memory() == pb::MEMORY_KIND_CUDA ? std::max(0, s.gpu()) : -1);
    spec.set_reg_path(s.reg_path() == pb::REG_PATH_UNSPECIFIED ? pb::REG_PATH_AUTO : s.reg_path());
    spec.set_seed(seed);
    // Corruption is injected where the data lands.
    bool dest = (role == pb::ROLE_INITIATOR) == initiatorIsDestination(r.op);
    if (dest) spec.mutable_fault()->set_corrupt_bytes(req.fault().corrupt_bytes());
    if (role == pb::ROLE_TARGET) {
      spec.mutable_fault()->set_invalidate_remote_key(req.fault().invalidate_remote_key());
    }
    return spec;
  };

  auto& il = *ini.link;
  auto& tl = *tgt.link;
  const double cmd_timeout = options_.command_timeout_seconds;
  std::vector<std::pair<WorkerLink*, std::string>> prepared;
  auto releaseAll = [&](const std::string& why) {
    std::vector<std::pair<WorkerLink*, std::shared_ptr<WorkerLink::Pending>>> calls;
    for (auto& [link, who] : prepared) {
      pb::CoordinatorCommand c;
      c.mutable_release()->set_test_id(r.test_id);
      c.mutable_release()->set_reason(why);
      calls.emplace_back(link, link->call(c));
    }
    for (auto& [link, p] : calls) (void)link->wait(p, after(10));
  };
  auto fail = [&](const std::string& phase, const std::string& worker, const Status& st) {
    // A transport error is often the echo of a peer that died: give the coordinator a moment
    // to see a lost stream, and name the lost worker first.
    if (st.code() == Code::kUnavailable || st.code() == Code::kDeadlineExceeded ||
        st.code() == Code::kAborted) {
      const auto grace = after(2.0);
      while (!il.lost() && !tl.lost() && Clock::now() < grace) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    releaseAll(phase + " failed");
    std::string reason;
    for (const auto* w : {&tgt, &ini}) {
      if (w->link->lost())
        reason += "worker lost: " + w->name + " disconnected during " + phase + "; ";
    }
    reason += phase + " on " + worker + ": " + st.message();
    if (!st.fix().empty()) reason += " (fix: " + st.fix() + ")";
    TestStatus status =
        st.code() == Code::kUnimplemented ? TestStatus::kSkipped : TestStatus::kFailed;
    return finish(status, reason);
  };

  // 1. Prepare both sides, target first (it owns the remote region).
  pb::EndpointDesc ini_desc, tgt_desc;
  {
    pb::CoordinatorCommand c;
    *c.mutable_prepare()->mutable_spec() = makeSpec(req.target(), pb::ROLE_TARGET);
    auto rep = tl.wait(tl.call(c), after(cmd_timeout));
    if (!rep.ok()) return fail("prepare", tgt.name, rep.status());
    prepared.emplace_back(&tl, tgt.name);
    tgt_desc = rep->prepare().local();
  }
  {
    pb::CoordinatorCommand c;
    *c.mutable_prepare()->mutable_spec() = makeSpec(req.initiator(), pb::ROLE_INITIATOR);
    auto rep = il.wait(il.call(c), after(cmd_timeout));
    if (!rep.ok()) return fail("prepare", ini.name, rep.status());
    prepared.emplace_back(&il, ini.name);
    ini_desc = rep->prepare().local();
  }
  auto record = [](const pb::EndpointDesc& d, EndpointRecord* e) {
    e->reg_path = convert::fromProto(d.reg_path(), RegPath::kHost);
    e->memory = convert::fromProto(d.memory());
    if (!d.device().empty()) e->nic = d.device();
    e->port = static_cast<int>(d.port());
    e->gid_index = d.gid_index();
    if (!d.topo_class().empty()) e->topo_class = d.topo_class();
  };
  record(ini_desc, &r.initiator);
  record(tgt_desc, &r.target);

  // 2. Hand each side the other's description.
  {
    pb::CoordinatorCommand ct, ci;
    ct.mutable_connect()->set_test_id(r.test_id);
    *ct.mutable_connect()->mutable_peer() = ini_desc;
    ci.mutable_connect()->set_test_id(r.test_id);
    *ci.mutable_connect()->mutable_peer() = tgt_desc;
    auto pt = tl.call(ct);
    auto pi = il.call(ci);
    auto rt = tl.wait(pt, after(cmd_timeout));
    auto ri = il.wait(pi, after(cmd_timeout));
    if (!rt.ok()) return fail("connect", tgt.name, rt.status());
    if (!ri.ok()) return fail("connect", ini.name, ri.status());
    r.path_mtu = static_cast<int>(ri->connect().path_mtu());
  }

  // 3. Run both sides; if either fails, abort the other at once instead of waiting it out.
  const double run_timeout =
      (req.timeout_seconds() > 0 ? req.timeout_seconds() : options_.default_timeout_seconds) +
      req.duration_seconds();
  pb::Measurement ini_m, tgt_m;
  {
    pb::CoordinatorCommand c;
    c.mutable_run()->set_test_id(r.test_id);
    auto* rs = c.mutable_run()->mutable_spec();
    rs->set_message_size(req.message_size());
    rs->set_iterations(req.iterations());
    rs->set_warmup_iterations(req.warmup_iterations());
    rs->set_bidirectional(req.bidirectional());
    rs->set_duration_seconds(req.duration_seconds());
    rs->set_cq_moderation(req.cq_moderation());
    rs->set_timeout_seconds(run_timeout);
    auto pt = tl.call(c);
    auto pi = il.call(c);
    const auto deadline = after(run_timeout + 10);
    while (!(tl.ready(pt) && il.ready(pi)) && Clock::now() < deadline) {
      bool t_failed = tl.ready(pt) && !tl.wait(pt, Clock::now()).ok();
      bool i_failed = il.ready(pi) && !il.wait(pi, Clock::now()).ok();
      if (t_failed || i_failed) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    auto rt = tl.wait(pt, Clock::now());
    auto ri = il.wait(pi, Clock::now());
    if (!ri.ok() && ri.status().code() != Code::kDeadlineExceeded) {
      return fail("run", ini.name, ri.status());
    }
    if (!rt.ok() && rt.status().code() != Code::kDeadlineExceeded) {
      return fail("run", tgt.name, rt.status());
    }
    if (!ri.ok()) return fail("run", ini.name, ri.status());
    if (!rt.ok()) return fail("run", tgt.name, rt.status());
    ini_m = ri->run().measurement();
    tgt_m = rt->run().measurement();
  }
  r.measurement = convert::fromProto(ini_m);
  if (req.duration_seconds() > 0) r.iterations = r.measurement.iterations;  // what ran
  double staging = ini_m.staging_seconds() + tgt_m.staging_seconds();

  // 4. Verify where the data landed.
  {
    const bool ini_dest = initiatorIsDestination(r.op);
    auto& dl = ini_dest ? il : tl;
    const std::string& dn = ini_dest ? ini.name : tgt.name;
    pb::CoordinatorCommand c;
    c.mutable_verify()->set_test_id(r.test_id);
    c.mutable_verify()->set_length(req.message_size());
    auto rep = dl.wait(dl.call(c), after(cmd_timeout));
    if (!rep.ok()) return fail("verify", dn, rep.status());
    r.integrity = convert::fromProto(rep->verify().integrity());
    staging += rep->verify().staging_seconds();
  }
  if (staging > 0 && r.measurement.has_bandwidth) {
    // Staged path: the host<->GPU copies are part of the transfer time.
    r.measurement.staging_seconds = staging;
    auto& bw = r.measurement.bw;
    bw = bandwidthFromTotals(bw.bytes, bw.messages, bw.seconds + staging);
  }
  releaseAll("done");
  prepared.clear();

  if (!r.integrity.ok()) {
    return finish(TestStatus::kFailed, "data integrity: " + r.integrity.toString());
  }
  return finish(TestStatus::kPassed, "");
}

}  // namespace gdrmesh
