#include "worker/transport/verbs/verbs_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <random>
#include <vector>

#include "worker/transport/verbs/verbs_errors.h"
#include "worker/transport/verbs/verbs_objects.h"
#include "worker/transport/verbs/verbs_select.h"

namespace gdrmesh {
namespace {

using verbs::CmIdPtr;
using verbs::ContextPtr;
using verbs::CqPtr;
using verbs::DeviceListPtr;
using verbs::EventChannelPtr;
using verbs::PdPtr;
using verbs::QpPtr;

constexpr int kPollBatch = 16;               // perftest's CTX_POLL_BATCH
constexpr uint32_t kDefaultCqMod = 100;      // perftest's default cq_mod
constexpr uint32_t kFinalImm = 0xffffffffu;  // last message of a duration run
constexpr int kCmResolveMs = 5000;           // rdma_resolve_addr/route timeouts
constexpr double kCmConnectSeconds = 60;     // connect(): the peer's side must show up by then

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char* portStateName(ibv_port_state s) {
  return ibv_port_state_str(s);
}

Status noDeviceStatus() {
  return failedPrecondition(
      "no RDMA device found (libibverbs lists 0 devices)",
      "load the NIC's RDMA driver (e.g. modprobe mlx5_ib) and check `ibv_devices`; for "
      "Soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <ifname>");
}

struct OpenDevice {
  ContextPtr ctx;
  std::string name;
  uint32_t port = 1;
  ibv_port_attr port_attr{};
};

// Opens `want` (or the first device whose `port` is ACTIVE) and queries the port.
Result<OpenDevice> openDevice(const std::string& want, uint32_t port) {
  int n = 0;
  DeviceListPtr list(ibv_get_device_list(&n));
  if (!list && (errno == EPERM || errno == EACCES)) {
    return verbs::callError("ibv_get_device_list", errno, "host");
  }
  // No kernel support (ENOSYS) and an empty list mean the same thing here.
  if (!list || n == 0) return noDeviceStatus();
  std::string seen;
  Status last_error;
  for (int i = 0; i < n; ++i) {
    ibv_device* dev = list.get()[i];
    const std::string name = ibv_get_device_name(dev);
    if (!want.empty() && name != want) {
      seen += (seen.empty() ? "" : ", ") + name;
      continue;
    }
    OpenDevice d;
    d.name = name;
    d.port = port;
    d.ctx.reset(ibv_open_device(dev));
    if (!d.ctx) {
      last_error = verbs::callError("ibv_open_device", errno, name);
      if (!want.empty()) return last_error;
      continue;
    }
    int rc = ibv_query_port(d.ctx.get(), static_cast<uint8_t>(port), &d.port_attr);
    if (rc) {
      last_error = verbs::callError("ibv_query_port(" + std::to_string(port) + ")", rc, name,
                                    "check the port number (ibv_devinfo)");
      if (!want.empty()) return last_error;
      continue;
    }
    if (d.port_attr.state != IBV_PORT_ACTIVE) {
      last_error = failedPrecondition(
          "port " + std::to_string(port) + " of " + name + " is " +
              portStateName(d.port_attr.state) + ", not ACTIVE",
          "check the link (cable, switch port, `ip link` of the bound net device for RoCE, the "
          "subnet manager for InfiniBand)");
      if (!want.empty()) return last_error;
      continue;
    }
    return d;
  }
  if (!want.empty()) {
    return notFound("RDMA device '" + want + "' not found (present: " + seen + ")",
                    "pick one of the listed devices (ibv_devices)");
  }
  if (!last_error.ok()) return last_error.withContext("no RDMA device with an ACTIVE port: ");
  return noDeviceStatus();
}

// Reads the port's GID table: ibv_query_gid_ex for type and value, sysfs as the fallback.
std::vector<verbs::GidCandidate> readGidTable(ibv_context* ctx, const std::string& dev,
                                              uint32_t port, int table_len,
                                              const std::string& sysfs_root) {
  std::vector<verbs::GidCandidate> out;
  for (int i = 0; i < table_len && i < 256; ++i) {
    verbs::GidCandidate c;
    c.index = i;
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(i), &entry, 0) == 0) {
      std::memcpy(c.raw.data(), entry.gid.raw, 16);
      switch (entry.gid_type) {
        case IBV_GID_TYPE_IB:
          c.type = verbs::GidType::kIb;
          break;
        case IBV_GID_TYPE_ROCE_V1:
          c.type = verbs::GidType::kRoceV1;
          break;
        case IBV_GID_TYPE_ROCE_V2:
          c.type = verbs::GidType::kRoceV2;
          break;
        default:
          c.type = verbs::GidType::kUnknown;
          break;
      }
    } else {
      ibv_gid gid{};
      if (ibv_query_gid(ctx, static_cast<uint8_t>(port), i, &gid) != 0) continue;
      std::memcpy(c.raw.data(), gid.raw, 16);
      c.type = verbs::readSysfsGidType(sysfs_root, dev, port, i);
    }
    if (!verbs::isZeroGid(c.raw)) out.push_back(c);
  }
  return out;
}

// Latency loops signal every kLatSignal-th send (below the smallest tx_depth we allow in
// practice: the send queue never fills with unreaped work requests).
constexpr uint64_t kLatSignal = 16;

// Deadline and abort checks for the busy-polling loops.
class Watch {
 public:
  Watch(const std::atomic<bool>& aborted, double timeout_s, std::string device)
      : aborted_(aborted), device_(std::move(device)), timeout_s_(timeout_s) {
    start_ = nowNs();
    deadline_ = timeout_s > 0 ? start_ + static_cast<uint64_t>(timeout_s * 1e9) : UINT64_MAX;
  }
  // Cheap enough for every spin: the clock is read once per 16384 calls (under emulation a
  // clock read is a system call plus an HPET access, microseconds: once per 256 spins it
  // showed in 2 B latencies; 16384 spins are still well under a millisecond).
  Status check(const char* what) {
    if (aborted_.load(std::memory_order_relaxed)) {
      return Status(Code::kAborted, std::string("aborted while ") + what + " on " + device_);
    }
    if ((++spins_ & 0x3fff) == 0 && nowNs() > deadline_) {
      char t[32];
      std::snprintf(t, sizeof(t), "%.1f", timeout_s_);
      return Status(Code::kDeadlineExceeded,
                    "run on " + device_ + " timed out after " + t + " s while " + what,
                    "the peer stopped (or never started) its side, or the path drops packets; "
                    "check the peer's result and the port state");
    }
    return Status();
  }

 private:
  const std::atomic<bool>& aborted_;
  std::string device_;
  double timeout_s_;
  uint64_t start_ = 0, deadline_ = 0;
  uint32_t spins_ = 0;
};

const char* opName(Op op) {
  switch (op) {
    case Op::kWrite:
      return "RDMA write";
    case Op::kRead:
      return "RDMA read";
    case Op::kSend:
      return "send";
    case Op::kWriteImm:
      return "RDMA write with immediate";
  }
  return "?";
}

class VerbsEndpointImpl final : public VerbsEndpoint {
 public:
  VerbsEndpointImpl(const EndpointSpec& spec, Buffer& buffer, verbs::MrRegistrar& registrar,
                    std::string sysfs_root, uint32_t max_rd_atomic)
      : spec_(spec),
        buffer_(buffer),
        registrar_(registrar),
        sysfs_root_(std::move(sysfs_root)),
        max_rd_atomic_(max_rd_atomic) {}

  ~VerbsEndpointImpl() override {
    // rdma_cm: disconnect first (the peer sees DISCONNECTED), then the members go in order.
    for (auto& id : cm_ids_) {
      if (id && id->qp) rdma_disconnect(id.get());
    }
  }

  Status init(RegPath reg);

  const EndpointDesc& local() const override { return local_; }
  Status connect(const EndpointDesc& peer) override;
  Result<Measurement> run(const RunSpec& spec) override;
  void abort() override { aborted_.store(true); }
  uint32_t pathMtu() const override { return path_mtu_; }

  int gidIndex() const override { return gid_index_; }
  const std::string& registrationAttempts() const override { return reg_.attempts; }
  void deregisterForFaultTest() override { static_cast<void>(deregisterMr()); }
  uint32_t rdAtomic() const override { return rd_atomic_; }
  Status invalidateRemoteAccessForTest() override { return deregisterMr(); }

 private:
  struct Stream;
  Status fail(Status s) {
    broken_ = true;
    return s;
  }
  Status deregisterMr();
  uint64_t localAddr(uint64_t off) const {
    return reinterpret_cast<uintptr_t>(buffer_.data()) + off;
  }
  uint32_t lkey() const { return reg_.mr ? reg_.mr->lkey : 0; }
  Status postRecv(size_t q);
  Status initCm();
  Status connectCm(const EndpointDesc& peer);
  Status createCmQp(rdma_cm_id* id, size_t q);
  // RC QP attributes from the spec: our CQs, tx/rx depth, one SGE, the inline size.
  // Signalling interval of the latency loops: never more unreaped sends than the queue holds.
  uint64_t latSignalEvery() const {
    return std::max<uint64_t>(1, std::min<uint64_t>(kLatSignal, spec_.tx_depth));
  }
  ibv_qp_init_attr qpInitAttr() const {
    ibv_qp_init_attr attr{};
    attr.send_cq = send_cq_.get();
    attr.recv_cq = recv_cq_.get();
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = spec_.tx_depth;
    attr.cap.max_recv_wr = spec_.rx_depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = spec_.inline_size;
    return attr;
  }
  // Waits for the next event on the rdma_cm channel (abort and deadline aware). The caller acks.
  Result<rdma_cm_event*> nextCmEvent(uint64_t deadline_ns, const char* what);
  Status modifyToInit(ibv_qp* qp);
  Status modifyToRtr(ibv_qp* qp, const QpInfo& remote, const ibv_gid& dgid);
  Status modifyToRts(ibv_qp* qp, uint32_t psn);
  Status checkWc(const ibv_wc& wc, const char* what);
  Status pollOne(ibv_cq* cq, ibv_wc* wc, Watch& watch, const char* what);

  Result<Measurement> runBandwidth(const RunSpec& rs);
  Result<Measurement> runLatency(const RunSpec& rs);
  // Receive progress survives from the warm-up into the measured phase: a batch may hold
  // messages of both.
  struct RecvProgress {
    std::vector<uint64_t> received;
    std::vector<bool> final_seen;
  };
  Status pump(Stream& st, Watch& watch, RecvProgress& rx);
  Status initiatorLatency(const RunSpec& rs, Watch& watch, std::vector<double>* samples);
  Status targetLatency(const RunSpec& rs, Watch& watch);

  EndpointSpec spec_;
  Buffer& buffer_;
  verbs::MrRegistrar& registrar_;
  std::string sysfs_root_;
  uint32_t max_rd_atomic_ = 16;
  EndpointDesc local_;
  EndpointDesc peer_;
  std::string dev_;
  uint32_t port_ = 1;
  ibv_port_attr port_attr_{};
  ibv_device_attr dev_attr_{};
  bool roce_ = false;
  int gid_index_ = -1;
  std::vector<uint32_t> psns_;
  bool needs_recv_ = false;
  uint64_t recv_offset_ = 0;
  uint64_t recv_length_ = 0;
  uint32_t path_mtu_ = 0;
  uint32_t rd_atomic_ = 1;
  bool connected_ = false;
  bool broken_ = false;
  std::atomic<bool> aborted_{false};

  // rdma_cm (use_rdma_cm): the event channel, the listening (target) or bound (initiator) ids,
  // and per QP the connection's id, which owns its QP (rdma_create_qp). vctx_ is the context
  // everything is allocated on: rdma_cm's for the bound id, ctx_ otherwise.
  EventChannelPtr cm_channel_;
  CmIdPtr cm_listen_;
  std::string cm_ip_;

  // Verbs objects. Destroyed in reverse order: MR (and dma-buf), QPs (rdma_cm: after a
  // disconnect, with their ids), CQs, PD, device; then the listening id and the channel.
  ContextPtr ctx_;
  ibv_context* vctx_ = nullptr;
  PdPtr pd_;
  CqPtr send_cq_;
  CqPtr recv_cq_;
  std::vector<QpPtr> owned_qps_;
  std::vector<CmIdPtr> cm_ids_;
  std::vector<ibv_qp*> qps_;  // the QPs in use, in order (owned by owned_qps_ or cm_ids_)
  verbs::Registration reg_;
};

Status VerbsEndpointImpl::init(RegPath reg) {
  if (spec_.num_qps == 0) return invalidArgument("num_qps must be >= 1");
  if (spec_.tx_depth == 0 || spec_.rx_depth == 0) {
    return invalidArgument("tx_depth and rx_depth must be >= 1");
  }
  if (spec_.buffer_size == 0 || spec_.buffer_size > buffer_.size()) {
    return invalidArgument("buffer_size " + std::to_string(spec_.buffer_size) + " must be in 1.." +
                           std::to_string(buffer_.size()) + " (the buffer " + buffer_.describe() +
                           ")");
  }
  GDR_ASSIGN_OR_RETURN(OpenDevice d, openDevice(spec_.device, spec_.port));
  ctx_ = std::move(d.ctx);
  vctx_ = ctx_.get();
  dev_ = d.name;
  port_ = d.port;
  port_attr_ = d.port_attr;
  if (int rc = ibv_query_device(ctx_.get(), &dev_attr_)) {
    return verbs::callError("ibv_query_device", rc, dev_);
  }
  roce_ = port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET;

  ibv_gid gid{};
  if (roce_ || spec_.gid_index >= 0) {
    auto table = readGidTable(ctx_.get(), dev_, port_, port_attr_.gid_tbl_len, sysfs_root_);
    GDR_ASSIGN_OR_RETURN(gid_index_,
                         verbs::selectGidIndex(table, roce_, spec_.gid_index, dev_, port_));
    if (int rc = ibv_query_gid(ctx_.get(), static_cast<uint8_t>(port_), gid_index_, &gid)) {
      return verbs::callError("ibv_query_gid(" + std::to_string(gid_index_) + ")", rc, dev_);
    }
  }

  if (spec_.use_rdma_cm) GDR_RETURN_IF_ERROR(initCm());
  pd_.reset(ibv_alloc_pd(vctx_));
  if (!pd_) return verbs::callError("ibv_alloc_pd", errno, dev_);
  GDR_ASSIGN_OR_RETURN(reg_, verbs::registerBuffer(registrar_, pd_.get(), buffer_, reg, dev_));

  const int send_cqe = static_cast<int>(spec_.tx_depth * spec_.num_qps + 16);
  const int recv_cqe = static_cast<int>(spec_.rx_depth * spec_.num_qps + 16);
  send_cq_.reset(ibv_create_cq(vctx_, send_cqe, nullptr, nullptr, 0));
  if (!send_cq_) {
    return verbs::callError("ibv_create_cq(" + std::to_string(send_cqe) + ")", errno, dev_,
                            "lower tx_depth or num_qps");
  }
  recv_cq_.reset(ibv_create_cq(vctx_, recv_cqe, nullptr, nullptr, 0));
  if (!recv_cq_) {
    return verbs::callError("ibv_create_cq(" + std::to_string(recv_cqe) + ")", errno, dev_,
                            "lower rx_depth or num_qps");
  }
  std::random_device rd;
  std::mt19937 rng(rd());
  for (uint32_t i = 0; i < spec_.num_qps && spec_.use_rdma_cm; ++i) {
    // The QPs come with the connections (rdma_create_qp in connect()); the count is what the
    // peer checks.
    local_.qps.push_back(QpInfo{});
  }
  for (uint32_t i = 0; i < spec_.num_qps && !spec_.use_rdma_cm; ++i) {
    ibv_qp_init_attr attr = qpInitAttr();
    QpPtr qp(ibv_create_qp(pd_.get(), &attr));
    if (!qp) {
      return verbs::callError(
          "ibv_create_qp(RC, send_wr=" + std::to_string(spec_.tx_depth) +
              ", recv_wr=" + std::to_string(spec_.rx_depth) +
              ", inline=" + std::to_string(spec_.inline_size) + ")",
          errno, dev_,
          "the device limits are max_qp_wr=" + std::to_string(dev_attr_.max_qp_wr) +
              "; lower tx_depth/rx_depth or inline_size");
    }
    psns_.push_back(rng() & 0xffffff);
    local_.qps.push_back(QpInfo{qp->qp_num, psns_.back()});
    qps_.push_back(qp.get());
    owned_qps_.push_back(std::move(qp));
  }
  rd_atomic_ = std::max<uint32_t>(
      1, std::min<uint32_t>({max_rd_atomic_, static_cast<uint32_t>(dev_attr_.max_qp_rd_atom),
                             static_cast<uint32_t>(dev_attr_.max_qp_init_rd_atom)}));
  local_.max_rd_atomic = rd_atomic_;  // the peer negotiates down to this (perftest's "OUT")

  // Receives: send and write_imm consume them, latency uses them for the first exchange.
  needs_recv_ = spec_.op == Op::kSend || spec_.op == Op::kWriteImm || spec_.mode == Mode::kLatency;
  if (spec_.role == Role::kInitiator && spec_.mode == Mode::kBandwidth) {
    // Only the reverse direction of a bidirectional run lands here.
    recv_offset_ = spec_.buffer_size / 2;
    recv_length_ = spec_.buffer_size - recv_offset_;
  } else {
    recv_offset_ = 0;
    recv_length_ = spec_.buffer_size;
  }

  local_.transport = TransportKind::kVerbs;
  local_.addr = reinterpret_cast<uintptr_t>(buffer_.data());
  local_.length = buffer_.size();
  local_.rkey = reg_.mr->rkey;
  local_.memory = buffer_.kind();
  local_.reg_path = reg_.path;
  local_.device = dev_;
  local_.port = port_;
  local_.link_layer = roce_ ? "Ethernet" : "InfiniBand";
  local_.lid = port_attr_.lid;
  std::array<uint8_t, 16> raw{};
  std::memcpy(raw.data(), gid.raw, 16);
  local_.gid = gid_index_ >= 0 ? verbs::formatGid(raw) : std::string();
  local_.gid_index = gid_index_;
  local_.active_mtu = verbs::mtuEnumToBytes(port_attr_.active_mtu);
  if (spec_.use_rdma_cm) {
    // The rdma_cm address rides in the emulated transport's fields: the target's listening
    // address and port, the initiator's bound address (port 0).
    local_.tcp_host = cm_ip_;
    local_.tcp_port = cm_listen_ ? ntohs(rdma_get_src_port(cm_listen_.get())) : 0;
  }
  return Status();
}

// rdma_cm needs an IP address on the device: the IPv4 address of the selected GID (RoCE v2,
// ::ffff:a.b.c.d). The target binds and listens on it (port 0: the kernel picks one), the
// initiator binds one id per QP to it; both take rdma_cm's verbs context, on which the PD,
// CQs and MR are then created.
Status VerbsEndpointImpl::initCm() {
  if (!roce_ || gid_index_ < 0) {
    return unimplemented("rdma_cm mode on " + dev_ + " needs a RoCE port with an IPv4 GID",
                         "use the out-of-band exchange (use_rdma_cm off) on InfiniBand ports");
  }
  ibv_gid gid{};
  if (int rc = ibv_query_gid(ctx_.get(), static_cast<uint8_t>(port_), gid_index_, &gid)) {
    return verbs::callError("ibv_query_gid(" + std::to_string(gid_index_) + ")", rc, dev_);
  }
  std::array<uint8_t, 16> raw{};
  std::memcpy(raw.data(), gid.raw, 16);
  if (!verbs::isIpv4MappedGid(raw)) {
    return failedPrecondition(
        "rdma_cm mode: GID " + std::to_string(gid_index_) + " of " + dev_ + " (" +
            verbs::formatGid(raw) + ") is not an IPv4 address",
        "give the bound net device an IPv4 address (ip addr add ... dev <netdev>) or pick the "
        "IPv4-mapped GID index");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  std::memcpy(&addr.sin_addr, raw.data() + 12, 4);
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  cm_ip_ = ip;

  cm_channel_.reset(rdma_create_event_channel());
  if (!cm_channel_) return verbs::callError("rdma_create_event_channel", errno, dev_);
  // Non-blocking: nextCmEvent() polls with a deadline and watches abort().
  const int fl = fcntl(cm_channel_->fd, F_GETFL);
  if (fl < 0 || fcntl(cm_channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    return verbs::callError("fcntl(O_NONBLOCK) on the rdma_cm channel", errno, dev_);
  }
  auto bound = [&](CmIdPtr* out) -> Status {
    rdma_cm_id* raw_id = nullptr;
    if (rdma_create_id(cm_channel_.get(), &raw_id, nullptr, RDMA_PS_TCP)) {
      return verbs::callError("rdma_create_id", errno, dev_);
    }
    out->reset(raw_id);
    if (rdma_bind_addr(raw_id, reinterpret_cast<sockaddr*>(&addr))) {
      return verbs::callError("rdma_bind_addr(" + cm_ip_ + ")", errno, dev_,
                              "the address must be configured on " + dev_ + "'s net device");
    }
    if (!raw_id->verbs || ibv_get_device_name(raw_id->verbs->device) != dev_) {
      return failedPrecondition(
          "rdma_cm bound " + cm_ip_ + " to " +
              (raw_id->verbs ? std::string(ibv_get_device_name(raw_id->verbs->device))
                             : std::string("no device")) +
              ", not " + dev_,
          "the address belongs to another RDMA device; check `rdma link` and `ip addr`");
    }
    vctx_ = raw_id->verbs;
    return Status();
  };
  if (spec_.role == Role::kTarget) {
    GDR_RETURN_IF_ERROR(bound(&cm_listen_));
    if (rdma_listen(cm_listen_.get(), static_cast<int>(spec_.num_qps) + 4)) {
      return verbs::callError("rdma_listen(" + cm_ip_ + ")", errno, dev_);
    }
  } else {
    for (uint32_t i = 0; i < spec_.num_qps; ++i) {
      CmIdPtr id;
      GDR_RETURN_IF_ERROR(bound(&id));
      cm_ids_.push_back(std::move(id));
    }
  }
  return Status();
}

Result<rdma_cm_event*> VerbsEndpointImpl::nextCmEvent(uint64_t deadline_ns, const char* what) {
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(cm_channel_.get(), &ev) == 0) return ev;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return verbs::callError("rdma_get_cm_event", errno, dev_);
    }
    if (aborted_.load()) {
      return Status(Code::kAborted, std::string("aborted while ") + what + " on " + dev_);
    }
    if (nowNs() > deadline_ns) {
      return Status(Code::kDeadlineExceeded, "rdma_cm on " + dev_ + ": timed out while " + what,
                    "check that the peer runs its side with use_rdma_cm and that " + cm_ip_ +
                        " reaches the peer's address");
    }
    pollfd pfd{cm_channel_->fd, POLLIN, 0};
    ::poll(&pfd, 1, 100);  // short slices: abort() is noticed within 100 ms
  }
}

// rdma_create_qp on the connection's id: the QP lives on rdma_cm's context with our PD and CQs
// and is in INIT afterwards, so receives go up before the connection is accepted/established.
Status VerbsEndpointImpl::createCmQp(rdma_cm_id* id, size_t q) {
  ibv_qp_init_attr attr = qpInitAttr();
  if (rdma_create_qp(id, pd_.get(), &attr)) {
    return verbs::callError("rdma_create_qp(RC, send_wr=" + std::to_string(spec_.tx_depth) +
                                ", recv_wr=" + std::to_string(spec_.rx_depth) + ")",
                            errno, dev_, "lower tx_depth/rx_depth or inline_size");
  }
  qps_[q] = id->qp;
  if (needs_recv_) {
    for (uint32_t i = 0; i < spec_.rx_depth; ++i) GDR_RETURN_IF_ERROR(postRecv(q));
  }
  return Status();
}

// Initiator: per QP resolve address and route, create the QP, connect (private data: the QP
// index). Target: accept num_qps connection requests, placing each at the index it carries.
// Outstanding reads are negotiated through the connection parameters (min of both sides).
Status VerbsEndpointImpl::connectCm(const EndpointDesc& peer) {
  const uint64_t deadline = nowNs() + static_cast<uint64_t>(kCmConnectSeconds * 1e9);
  const size_t nq = spec_.num_qps;
  qps_.assign(nq, nullptr);
  auto eventName = [](const rdma_cm_event* ev) { return std::string(rdma_event_str(ev->event)); };
  // Waits for `want` on `id`; other events are errors.
  auto expect = [&](rdma_cm_id* id, rdma_cm_event_type want, const char* what) -> Status {
    GDR_ASSIGN_OR_RETURN(rdma_cm_event * ev, nextCmEvent(deadline, what));
    if (ev->event == want && ev->id == id) {
      rdma_ack_cm_event(ev);
      return Status();
    }
    const std::string got = eventName(ev);
    const int status = ev->status;
    rdma_ack_cm_event(ev);
    return unavailable("rdma_cm on " + dev_ + ": " + got + " (status " + std::to_string(status) +
                           ") while " + what + " with " + peer.tcp_host + ":" +
                           std::to_string(peer.tcp_port),
                       "check the peer's address and port, that it listens (use_rdma_cm on "
                       "both sides) and the route between the two (ip route get)");
  };
  rdma_conn_param param{};
  param.responder_resources = static_cast<uint8_t>(rd_atomic_);
  param.initiator_depth = static_cast<uint8_t>(rd_atomic_);
  param.retry_count = 7;
  param.rnr_retry_count = 7;

  if (spec_.role == Role::kInitiator) {
    if (peer.tcp_host.empty() || peer.tcp_port == 0 || peer.tcp_port > 65535) {
      return invalidArgument("peer " + peer.device + " published no rdma_cm address (" +
                                 peer.tcp_host + ":" + std::to_string(peer.tcp_port) + ")",
                             "set use_rdma_cm on both sides");
    }
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<uint16_t>(peer.tcp_port));
    if (inet_pton(AF_INET, peer.tcp_host.c_str(), &dst.sin_addr) != 1) {
      return invalidArgument("peer " + peer.device + " sent an unreadable rdma_cm address '" +
                             peer.tcp_host + "'");
    }
    for (size_t q = 0; q < nq; ++q) {
      rdma_cm_id* id = cm_ids_[q].get();
      if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), kCmResolveMs)) {
        return verbs::callError("rdma_resolve_addr(" + peer.tcp_host + ")", errno, dev_);
      }
      GDR_RETURN_IF_ERROR(expect(id, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving the address"));
      if (id->verbs != vctx_) {
        return failedPrecondition("rdma_cm on " + dev_ + ": the route from " + cm_ip_ + " to " +
                                      peer.tcp_host + " leaves through another RDMA device",
                                  "check `ip route get " + peer.tcp_host + " from " + cm_ip_ +
                                      "` (two devices in one namespace need policy routing)");
      }
      if (rdma_resolve_route(id, kCmResolveMs)) {
        return verbs::callError("rdma_resolve_route(" + peer.tcp_host + ")", errno, dev_);
      }
      GDR_RETURN_IF_ERROR(expect(id, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route"));
      GDR_RETURN_IF_ERROR(createCmQp(id, q));
      const uint32_t index = static_cast<uint32_t>(q);
      param.private_data = &index;
      param.private_data_len = sizeof(index);
      if (rdma_connect(id, &param)) {
        return verbs::callError("rdma_connect(" + peer.tcp_host + ")", errno, dev_);
      }
      GDR_RETURN_IF_ERROR(expect(id, RDMA_CM_EVENT_ESTABLISHED, "connecting"));
    }
  } else {
    // Requests and ESTABLISHED events interleave (the initiator connects one QP at a time).
    cm_ids_.resize(nq);
    size_t accepted = 0, established = 0;
    while (accepted < nq || established < nq) {
      GDR_ASSIGN_OR_RETURN(rdma_cm_event * ev,
                           nextCmEvent(deadline, "waiting for the initiator's connections"));
      if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
        rdma_ack_cm_event(ev);
        ++established;
        continue;
      }
      if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
        const std::string got = eventName(ev);
        const int status = ev->status;
        rdma_ack_cm_event(ev);
        return unavailable("rdma_cm on " + dev_ + ": " + got + " (status " +
                               std::to_string(status) + ") while accepting connections on " +
                               cm_ip_ + ":" + std::to_string(local_.tcp_port),
                           "check the initiator's result and the route between the two");
      }
      rdma_cm_id* child = ev->id;
      uint32_t index = UINT32_MAX;
      if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(index)) {
        std::memcpy(&index, ev->param.conn.private_data, sizeof(index));
      }
      const uint8_t their_init = ev->param.conn.initiator_depth;
      const uint8_t their_resp = ev->param.conn.responder_resources;
      rdma_ack_cm_event(ev);
      if (index >= nq || cm_ids_[index]) {
        rdma_reject(child, nullptr, 0);
        rdma_destroy_id(child);
        return invalidArgument("rdma_cm on " + dev_ + ": connection request for QP index " +
                                   std::to_string(index) + " of " + std::to_string(nq),
                               "both sides must use the same num_qps");
      }
      cm_ids_[index].reset(child);
      GDR_RETURN_IF_ERROR(createCmQp(child, index));
      rdma_conn_param acc = param;
      acc.responder_resources = std::min<uint8_t>(param.responder_resources, their_init);
      acc.initiator_depth = std::min<uint8_t>(param.initiator_depth, their_resp);
      if (rdma_accept(child, &acc)) return verbs::callError("rdma_accept", errno, dev_);
      ++accepted;
    }
  }
  // The path MTU rdma_cm chose (from the route), for pathMtu().
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  if (ibv_query_qp(qps_[0], &qa, IBV_QP_PATH_MTU, &qi) == 0) {
    path_mtu_ = verbs::mtuEnumToBytes(qa.path_mtu);
  }
  return Status();
}

// The MR goes now; the QPs, CQs and PD stay (the PD is deallocated after the QPs at
// destruction, with no MR left on it). A failed deregistration keeps the MR owned, so that
// destruction tries again.
Status VerbsEndpointImpl::deregisterMr() {
  if (!reg_.mr) return Status();
  ibv_mr* mr = reg_.mr.release();
  if (int rc = registrar_.deregMr(mr)) {
    reg_.mr.reset(mr);
    return verbs::callError("ibv_dereg_mr", rc, dev_, "fault injection: the MR stays registered");
  }
  return Status();
}

Status VerbsEndpointImpl::postRecv(size_t q) {
  ibv_sge sge{};
  sge.addr = localAddr(recv_offset_);
  sge.length = static_cast<uint32_t>(recv_length_);
  sge.lkey = lkey();
  ibv_recv_wr wr{};
  wr.wr_id = q;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qps_[q], &wr, &bad)) {
    return verbs::callError("ibv_post_recv", rc, dev_);
  }
  return Status();
}

Status VerbsEndpointImpl::modifyToInit(ibv_qp* qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(port_);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
  if (int rc = ibv_modify_qp(
          qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    return verbs::modifyQpError("INIT", rc, dev_, gid_index_, 0, peer_.gid);
  }
  return Status();
}

Status VerbsEndpointImpl::modifyToRtr(ibv_qp* qp, const QpInfo& remote, const ibv_gid& dgid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(verbs::mtuBytesToEnum(path_mtu_));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = static_cast<uint8_t>(rd_atomic_);
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = static_cast<uint16_t>(peer_.lid);
  a.ah_attr.sl = 0;
  a.ah_attr.src_path_bits = 0;
  a.ah_attr.port_num = static_cast<uint8_t>(port_);
  if (roce_ || gid_index_ >= 0) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.flow_label = 0;
    a.ah_attr.grh.traffic_class = 0;
  }
  if (int rc =
          ibv_modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    return verbs::modifyQpError("RTR", rc, dev_, gid_index_, path_mtu_, peer_.gid);
  }
  return Status();
}

Status VerbsEndpointImpl::modifyToRts(ibv_qp* qp, uint32_t psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = psn;
  a.max_rd_atomic = static_cast<uint8_t>(rd_atomic_);
  if (int rc = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
    return verbs::modifyQpError("RTS", rc, dev_, gid_index_, path_mtu_, peer_.gid);
  }
  return Status();
}

Status VerbsEndpointImpl::connect(const EndpointDesc& peer) {
  if (connected_) return failedPrecondition("connect() called twice on " + dev_);
  if (aborted_.load()) return Status(Code::kAborted, "aborted before connect on " + dev_);
  if (peer.transport != TransportKind::kVerbs) {
    return invalidArgument(std::string("peer description is for the ") + toString(peer.transport) +
                           " transport, not verbs");
  }
  if (peer.max_rd_atomic > 0) rd_atomic_ = std::min(rd_atomic_, peer.max_rd_atomic);
  if (peer.qps.size() != spec_.num_qps) {
    return invalidArgument("peer " + peer.device + " has " + std::to_string(peer.qps.size()) +
                               " QPs, this side " + std::to_string(spec_.num_qps),
                           "both sides must use the same num_qps");
  }
  if ((peer.link_layer == "Ethernet") != roce_) {
    return invalidArgument("link layers differ: " + dev_ + " is " + local_.link_layer + ", peer " +
                           peer.device + " is " + peer.link_layer);
  }
  peer_ = peer;
  if (spec_.use_rdma_cm) {
    GDR_RETURN_IF_ERROR(fail(connectCm(peer)));
    broken_ = false;
    connected_ = true;
    return Status();
  }
  GDR_ASSIGN_OR_RETURN(path_mtu_,
                       verbs::negotiatePathMtu(local_.active_mtu, peer.active_mtu, peer.device));
  ibv_gid dgid{};
  if (roce_ || gid_index_ >= 0) {
    std::array<uint8_t, 16> raw{};
    if (!verbs::parseGid(peer.gid, &raw)) {
      return invalidArgument("peer " + peer.device + " sent an unreadable GID '" + peer.gid + "'");
    }
    std::memcpy(dgid.raw, raw.data(), 16);
  }
  for (size_t q = 0; q < qps_.size(); ++q) {
    GDR_RETURN_IF_ERROR(fail(modifyToInit(qps_[q])));
    // Receives go up before RTR so that nothing the peer sends finds an empty queue.
    if (needs_recv_) {
      for (uint32_t i = 0; i < spec_.rx_depth; ++i) GDR_RETURN_IF_ERROR(fail(postRecv(q)));
    }
    GDR_RETURN_IF_ERROR(fail(modifyToRtr(qps_[q], peer.qps[q], dgid)));
    GDR_RETURN_IF_ERROR(fail(modifyToRts(qps_[q], psns_[q])));
  }
  broken_ = false;
  connected_ = true;
  return Status();
}

Status VerbsEndpointImpl::checkWc(const ibv_wc& wc, const char* what) {
  if (wc.status == IBV_WC_SUCCESS) return Status();
  Status s = verbs::completionError(wc.status, wc.vendor_err, what, dev_, wc.qp_num);
  // A port that went down explains most errors better than the completion status does. The
  // QP's error can arrive before the port's state changes (rxe fails the QP when the net device
  // goes down, then raises the port event): after a local QP or transport error, wait a
  // bounded moment for the device's asynchronous port event before reading the state.
  ibv_port_attr pa{};
  bool down = ibv_query_port(ctx_.get(), static_cast<uint8_t>(port_), &pa) == 0 &&
              pa.state != IBV_PORT_ACTIVE;
  if (!down && (wc.status == IBV_WC_LOC_QP_OP_ERR || wc.status == IBV_WC_RETRY_EXC_ERR)) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (!down && std::chrono::steady_clock::now() < until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            until - std::chrono::steady_clock::now())
                            .count();
      pollfd p{ctx_->async_fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left))) > 0) {
        ibv_async_event ev{};
        if (ibv_get_async_event(ctx_.get(), &ev) == 0) ibv_ack_async_event(&ev);
      }
      down = ibv_query_port(ctx_.get(), static_cast<uint8_t>(port_), &pa) == 0 &&
             pa.state != IBV_PORT_ACTIVE;
    }
  }
  if (down) {
    return unavailable("port " + std::to_string(port_) + " of " + dev_ + " is now " +
                           portStateName(pa.state) + ": " + s.message(),
                       "the link went down during the test: check the cable/switch port, "
                       "`ip link` of the bound net device (RoCE), the subnet manager (IB)");
  }
  return s;
}

Status VerbsEndpointImpl::pollOne(ibv_cq* cq, ibv_wc* wc, Watch& watch, const char* what) {
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n > 0) return checkWc(*wc, what);
    if (n < 0) return verbs::callError("ibv_poll_cq", EIO, dev_);
    GDR_RETURN_IF_ERROR(watch.check(what));
  }
}

// One direction of a bandwidth run (sender side), plus the receive side where messages arrive.
struct VerbsEndpointImpl::Stream {
  bool send = false;
  bool recv = false;
  Op op = Op::kWrite;
  uint64_t size = 0;
  uint64_t local_off = 0;
  uint64_t remote_off = 0;
  uint64_t count = 0;  // per QP; 0 = until end_ns (duration)
  uint64_t end_ns = 0;
  uint32_t cq_mod = 1;
  bool record = false;
  uint64_t recv_expected = 0;  // per QP, cumulative over the phases; 0 = until the final marker
  std::vector<uint64_t> posted_ns, completed_ns;
  uint64_t messages = 0;
};

Status VerbsEndpointImpl::pump(Stream& st, Watch& watch, RecvProgress& rx) {
  const size_t nq = qps_.size();
  std::vector<uint64_t> posted(nq, 0), completed(nq, 0);
  std::vector<uint64_t>& received = rx.received;
  std::vector<bool>& final_seen = rx.final_seen;
  std::vector<bool> stopped(nq, !st.send);
  std::vector<std::deque<uint64_t>> marks(nq);
  const bool duration = st.count == 0;
  const bool use_inline = st.op != Op::kRead && st.size <= spec_.inline_size;

  ibv_sge sge{};
  sge.addr = localAddr(st.local_off);
  sge.length = static_cast<uint32_t>(st.size);
  sge.lkey = lkey();
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  switch (st.op) {
    case Op::kWrite:
      wr.opcode = IBV_WR_RDMA_WRITE;
      break;
    case Op::kRead:
      wr.opcode = IBV_WR_RDMA_READ;
      break;
    case Op::kSend:
      wr.opcode = IBV_WR_SEND;
      break;
    case Op::kWriteImm:
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      break;
  }
  wr.wr.rdma.remote_addr = peer_.addr + st.remote_off;
  wr.wr.rdma.rkey = peer_.rkey;
  const ibv_wr_opcode base_opcode = wr.opcode;
  const unsigned base_flags = use_inline ? IBV_SEND_INLINE : 0;

  ibv_wc wc[kPollBatch];
  for (;;) {
    if (st.send) {
      const bool time_up = duration && nowNs() >= st.end_ns;
      for (size_t q = 0; q < nq; ++q) {
        if (stopped[q]) continue;
        while (posted[q] - completed[q] < spec_.tx_depth) {
          bool last = false;
          if (duration) {
            last = time_up;
          } else {
            last = posted[q] + 1 == st.count;
          }
          const bool signal = last || (posted[q] + 1) % st.cq_mod == 0;
          wr.wr_id = q;
          wr.send_flags = base_flags | (signal ? IBV_SEND_SIGNALED : 0);
          wr.opcode = base_opcode;
          wr.imm_data = htonl(static_cast<uint32_t>(posted[q]));
          if (duration && last) {
            // The receiver stops at this marker; sends carry it as immediate data.
            if (st.op == Op::kSend) wr.opcode = IBV_WR_SEND_WITH_IMM;
            wr.imm_data = htonl(kFinalImm);
          }
          if (st.record) st.posted_ns.push_back(nowNs());
          ibv_send_wr* bad = nullptr;
          if (int rc = ibv_post_send(qps_[q], &wr, &bad)) {
            return verbs::callError("ibv_post_send (" + std::string(opName(st.op)) + ")", rc, dev_);
          }
          ++posted[q];
          if (signal) marks[q].push_back(posted[q]);
          if (last) {
            stopped[q] = true;
            break;
          }
        }
      }
      int n = ibv_poll_cq(send_cq_.get(), kPollBatch, wc);
      if (n < 0) return verbs::callError("ibv_poll_cq", EIO, dev_);
      if (n > 0) {
        const uint64_t t = st.record ? nowNs() : 0;
        for (int i = 0; i < n; ++i) {
          GDR_RETURN_IF_ERROR(checkWc(wc[i], opName(st.op)));
          const size_t q = wc[i].wr_id;
          if (q >= nq || marks[q].empty()) return internalError("unexpected send completion");
          const uint64_t upto = marks[q].front();
          marks[q].pop_front();
          if (st.record) st.completed_ns.insert(st.completed_ns.end(), upto - completed[q], t);
          completed[q] = upto;
        }
      }
    }
    if (st.recv) {
      int n = ibv_poll_cq(recv_cq_.get(), kPollBatch, wc);
      if (n < 0) return verbs::callError("ibv_poll_cq", EIO, dev_);
      for (int i = 0; i < n; ++i) {
        GDR_RETURN_IF_ERROR(checkWc(wc[i], "receive"));
        const size_t q = wc[i].wr_id;
        if (q >= nq) return internalError("unexpected receive completion");
        ++received[q];
        if ((wc[i].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[i].imm_data) == kFinalImm) {
          final_seen[q] = true;
        }
        GDR_RETURN_IF_ERROR(postRecv(q));
      }
    }
    bool done = true;
    for (size_t q = 0; q < nq && done; ++q) {
      if (st.send && !(stopped[q] && completed[q] == posted[q])) done = false;
      if (st.recv) {
        if (st.recv_expected > 0 ? received[q] < st.recv_expected : !final_seen[q]) done = false;
      }
    }
    if (done) break;
    GDR_RETURN_IF_ERROR(
        watch.check(st.send ? "waiting for send completions" : "waiting for the peer's messages"));
  }
  for (size_t q = 0; q < nq; ++q) st.messages += posted[q];
  return Status();
}

Result<Measurement> VerbsEndpointImpl::runBandwidth(const RunSpec& rs) {
  Measurement m;
  m.message_size = rs.message_size;
  m.iterations = rs.iterations;
  m.warmup_iterations = rs.warmup_iterations;
  const bool initiator = spec_.role == Role::kInitiator;
  const bool duration = rs.duration_seconds > 0;
  const bool recv_op = spec_.op == Op::kSend || spec_.op == Op::kWriteImm;
  const bool sends = initiator || rs.bidirectional;
  const bool receives = recv_op && (!initiator || rs.bidirectional);
  if (!sends && !receives) return m;  // write/read target: the NIC does the work

  Watch watch(aborted_, rs.timeout_seconds, dev_);
  const uint64_t half = spec_.buffer_size / 2;
  const uint64_t off = initiator ? 0 : half;  // reverse direction uses the upper half
  uint32_t cq_mod = rs.cq_moderation ? rs.cq_moderation : kDefaultCqMod;
  cq_mod = std::max<uint32_t>(1, std::min(cq_mod, spec_.tx_depth));

  RecvProgress rx;
  rx.received.assign(qps_.size(), 0);
  rx.final_seen.assign(qps_.size(), false);
  // Warm-up (not measured): counted, so the receiver knows how many messages to expect.
  if (rs.warmup_iterations > 0) {
    Stream w;
    w.send = sends;
    w.recv = receives;
    w.op = spec_.op;
    w.size = rs.message_size;
    w.local_off = w.remote_off = off;
    w.count = rs.warmup_iterations;
    w.cq_mod = cq_mod;
    w.recv_expected = rs.warmup_iterations;
    GDR_RETURN_IF_ERROR(fail(pump(w, watch, rx)));
  }
  Stream st;
  st.send = sends;
  st.recv = receives;
  st.op = spec_.op;
  st.size = rs.message_size;
  st.local_off = st.remote_off = off;
  st.cq_mod = cq_mod;
  if (duration) {
    st.count = 0;
    st.recv_expected = 0;
    st.end_ns = nowNs() + static_cast<uint64_t>(rs.duration_seconds * 1e9);
  } else {
    st.count = rs.iterations;
    st.recv_expected = rs.warmup_iterations + rs.iterations;
    st.record = sends;
    st.posted_ns.reserve(rs.iterations * qps_.size());
    st.completed_ns.reserve(rs.iterations * qps_.size());
  }
  const uint64_t t0 = nowNs();
  GDR_RETURN_IF_ERROR(fail(pump(st, watch, rx)));
  const uint64_t t1 = nowNs();
  if (sends) {
    m.has_bandwidth = true;
    if (st.record) {
      m.bw = computeBandwidth(rs.message_size, st.posted_ns, st.completed_ns, spec_.tx_depth);
    } else {
      m.bw = bandwidthFromTotals(st.messages * rs.message_size, st.messages,
                                 static_cast<double>(t1 - t0) / 1e9);
      m.iterations = st.messages / qps_.size();
    }
  }
  return m;
}

Status VerbsEndpointImpl::initiatorLatency(const RunSpec& rs, Watch& watch,
                                           std::vector<double>* samples) {
  ibv_qp* qp = qps_[0];
  const uint64_t s = rs.message_size;
  const uint64_t total = rs.warmup_iterations + rs.iterations;
  samples->reserve(rs.iterations);
  ibv_sge sge{};
  sge.addr = localAddr(0);
  sge.length = static_cast<uint32_t>(s);
  sge.lkey = lkey();
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = peer_.addr;
  wr.wr.rdma.rkey = peer_.rkey;
  const unsigned inl = (spec_.op != Op::kRead && s <= spec_.inline_size) ? IBV_SEND_INLINE : 0;
  wr.send_flags = IBV_SEND_SIGNALED | inl;
  ibv_send_wr* bad = nullptr;
  ibv_wc wc{};
  auto post = [&](ibv_wr_opcode opc, uint32_t imm) -> Status {
    wr.opcode = opc;
    wr.imm_data = htonl(imm);
    if (int rc = ibv_post_send(qp, &wr, &bad)) {
      return verbs::callError("ibv_post_send (" + std::string(opName(spec_.op)) + ")", rc, dev_);
    }
    return Status();
  };
  auto waitRecv = [&]() -> Status {
    GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, "waiting for the pong"));
    return postRecv(0);
  };

  // One clock read per iteration, as perftest (a stamp per post, samples from consecutive
  // stamps): each sample covers one whole iteration, and the clock is read half as often (under
  // emulation clock_gettime is a system call plus an HPET read, several microseconds).
  uint64_t prev = 0;
  auto stamp = [&](uint64_t k, double divisor) {
    const uint64_t t = nowNs();
    if (k > rs.warmup_iterations) samples->push_back(static_cast<double>(t - prev) / divisor);
    prev = t;
  };
  if (spec_.op == Op::kRead) {
    prev = nowNs();
    for (uint64_t k = 1; k <= total; ++k) {
      GDR_RETURN_IF_ERROR(post(IBV_WR_RDMA_READ, 0));
      GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA read"));
      stamp(k, 1e3);
    }
    return Status();
  }
  const bool poll_memory = spec_.op == Op::kWrite && buffer_.kind() == MemoryKind::kHost &&
                           peer_.memory == MemoryKind::kHost;
  volatile uint8_t* last = static_cast<volatile uint8_t*>(buffer_.data()) + (s - 1);
  uint8_t base = 0;
  if (poll_memory) {
    // First exchange through the CQ, so that both sides know the byte the counter starts from.
    base = *last;
    GDR_RETURN_IF_ERROR(post(IBV_WR_RDMA_WRITE_WITH_IMM, 0));
    GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA write (sync)"));
    GDR_RETURN_IF_ERROR(waitRecv());
  }
  const ibv_wr_opcode opc = spec_.op == Op::kSend ? IBV_WR_SEND : IBV_WR_RDMA_WRITE_WITH_IMM;
  prev = nowNs();
  for (uint64_t k = 1; k <= total; ++k) {
    if (poll_memory) {
      const uint8_t v = static_cast<uint8_t>(base + k);
      const uint8_t pong = static_cast<uint8_t>(v ^ 0x80);
      *last = v;
      GDR_RETURN_IF_ERROR(post(IBV_WR_RDMA_WRITE, 0));
      while (*last != pong) GDR_RETURN_IF_ERROR(watch.check("waiting for the pong"));
      GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA write"));
    } else {
      // Selective signalling: the send completion is not on the ping-pong's critical path, so
      // only every kLatSignal-th send (and the last) is signalled and reaped.
      const bool signal = k % latSignalEvery() == 0 || k == total;
      wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | inl;
      GDR_RETURN_IF_ERROR(post(opc, static_cast<uint32_t>(k)));
      GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, "waiting for the pong"));
      GDR_RETURN_IF_ERROR(postRecv(0));
      if (signal) GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, opName(spec_.op)));
    }
    stamp(k, 2e3);
  }
  if (poll_memory) {
    // Restore the counter byte and hand the target our [0, size) intact.
    *last = base;
    wr.send_flags = IBV_SEND_SIGNALED;
    GDR_RETURN_IF_ERROR(post(IBV_WR_RDMA_WRITE, 0));
    GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA write (restore)"));
  }
  return Status();
}

Status VerbsEndpointImpl::targetLatency(const RunSpec& rs, Watch& watch) {
  if (spec_.op == Op::kRead) return Status();
  ibv_qp* qp = qps_[0];
  const uint64_t s = rs.message_size;
  const uint64_t total = rs.warmup_iterations + rs.iterations;
  ibv_sge sge{};
  sge.addr = localAddr(0);
  sge.length = static_cast<uint32_t>(s);
  sge.lkey = lkey();
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = peer_.addr;
  wr.wr.rdma.rkey = peer_.rkey;
  const unsigned inl = s <= spec_.inline_size ? IBV_SEND_INLINE : 0;
  wr.send_flags = IBV_SEND_SIGNALED | inl;
  ibv_send_wr* bad = nullptr;
  ibv_wc wc{};
  auto post = [&](ibv_wr_opcode opc, uint32_t imm) -> Status {
    wr.opcode = opc;
    wr.imm_data = htonl(imm);
    if (int rc = ibv_post_send(qp, &wr, &bad)) {
      return verbs::callError("ibv_post_send (" + std::string(opName(spec_.op)) + ")", rc, dev_);
    }
    return Status();
  };
  const bool poll_memory = spec_.op == Op::kWrite && buffer_.kind() == MemoryKind::kHost &&
                           peer_.memory == MemoryKind::kHost;
  volatile uint8_t* last = static_cast<volatile uint8_t*>(buffer_.data()) + (s - 1);
  uint8_t base = 0;
  if (poll_memory) {
    GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, "waiting for the first ping"));
    GDR_RETURN_IF_ERROR(postRecv(0));
    base = *last;  // the initiator's byte, delivered by the first exchange
    GDR_RETURN_IF_ERROR(post(IBV_WR_RDMA_WRITE_WITH_IMM, 0));
    GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA write (sync)"));
  }
  for (uint64_t k = 1; k <= total; ++k) {
    if (poll_memory) {
      const uint8_t v = static_cast<uint8_t>(base + k);
      while (*last != v) GDR_RETURN_IF_ERROR(watch.check("waiting for the ping"));
      *last = static_cast<uint8_t>(v ^ 0x80);
      GDR_RETURN_IF_ERROR(post(IBV_WR_RDMA_WRITE, 0));
      GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA write"));
    } else {
      GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, "waiting for the ping"));
      const ibv_wr_opcode opc = spec_.op == Op::kSend ? IBV_WR_SEND : IBV_WR_RDMA_WRITE_WITH_IMM;
      const bool signal = k % latSignalEvery() == 0 || k == total;
      wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | inl;
      GDR_RETURN_IF_ERROR(post(opc, static_cast<uint32_t>(k)));
      GDR_RETURN_IF_ERROR(postRecv(0));
      if (signal) GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, opName(spec_.op)));
    }
  }
  return Status();
}

Result<Measurement> VerbsEndpointImpl::runLatency(const RunSpec& rs) {
  Measurement m;
  m.message_size = rs.message_size;
  m.iterations = rs.iterations;
  m.warmup_iterations = rs.warmup_iterations;
  Watch watch(aborted_, rs.timeout_seconds, dev_);
  if (spec_.role == Role::kTarget) {
    GDR_RETURN_IF_ERROR(fail(targetLatency(rs, watch)));
    return m;
  }
  std::vector<double> samples;
  GDR_RETURN_IF_ERROR(fail(initiatorLatency(rs, watch, &samples)));
  m.has_latency = true;
  m.lat = computeLatency(std::move(samples));
  return m;
}

Result<Measurement> VerbsEndpointImpl::run(const RunSpec& rs) {
  if (!connected_) return failedPrecondition("run() before connect() on " + dev_);
  if (aborted_.load()) return Status(Code::kAborted, "endpoint on " + dev_ + " was aborted");
  if (broken_) {
    return failedPrecondition("endpoint on " + dev_ + " failed earlier; create a new one");
  }
  // After the fault injection only a target runs (its peer's accesses are what must fail).
  if (!reg_.mr && spec_.role != Role::kTarget) {
    return failedPrecondition("memory region on " + dev_ + " was deregistered (fault injection)",
                              "create a new endpoint");
  }
  if (rs.message_size == 0 || rs.message_size > spec_.buffer_size ||
      rs.message_size > peer_.length || rs.message_size > 0xffffffffull) {
    return invalidArgument("message_size " + std::to_string(rs.message_size) + " must be in 1.." +
                           std::to_string(std::min<uint64_t>(spec_.buffer_size, peer_.length)) +
                           " (this buffer and the peer's)");
  }
  if (rs.bidirectional && spec_.mode == Mode::kLatency) {
    return invalidArgument("bidirectional applies to bandwidth runs only");
  }
  if (rs.bidirectional && rs.message_size > spec_.buffer_size / 2) {
    return invalidArgument(
        "bidirectional runs need message_size <= buffer_size / 2 (the reverse "
        "direction uses the upper half)",
        "allocate buffer_size >= 2 * message_size");
  }
  if (spec_.mode == Mode::kLatency && rs.duration_seconds > 0) {
    return invalidArgument("latency runs take a fixed iteration count, not duration_seconds");
  }
  if (rs.duration_seconds <= 0 && rs.iterations == 0) {
    return invalidArgument("iterations must be >= 1 (or duration_seconds > 0)");
  }
  const auto before = verbs::readCounterSnapshot(sysfs_root_, dev_, port_);
  Result<Measurement> r = spec_.mode == Mode::kBandwidth ? runBandwidth(rs) : runLatency(rs);
  if (!r.ok() && r.status().code() == Code::kDeadlineExceeded) {
    // A link that went down can leave the QP retrying silently (rxe does when the net device is
    // down): the port state, not the timeout, is the cause to report.
    ibv_port_attr pa{};
    if (ibv_query_port(ctx_.get(), static_cast<uint8_t>(port_), &pa) == 0 &&
        pa.state != IBV_PORT_ACTIVE) {
      return unavailable("port " + std::to_string(port_) + " of " + dev_ + " is now " +
                             portStateName(pa.state) + ": " + r.status().message(),
                         "the link went down during the test: check the cable/switch port, "
                         "`ip link` of the bound net device (RoCE), the subnet manager (IB)");
    }
  }
  if (!r.ok()) return r;
  const auto after = verbs::readCounterSnapshot(sysfs_root_, dev_, port_);
  r->counters = verbs::counterDelta(before, after);
  return r;
}

}  // namespace

VerbsTransport::VerbsTransport(VerbsOptions options) : options_(std::move(options)) {}

Status VerbsTransport::viable() const {
  int n = 0;
  DeviceListPtr list(ibv_get_device_list(&n));
  if (!list) {
    if (errno == EPERM || errno == EACCES) {
      return Status(Code::kPermissionDenied, "cannot list RDMA devices: permission denied",
                    "run as root or add the user to the rdma group");
    }
    return noDeviceStatus();
  }
  if (n == 0) return noDeviceStatus();
  std::string states;
  for (int i = 0; i < n; ++i) {
    const std::string name = ibv_get_device_name(list.get()[i]);
    if (!options_.devices.empty() && std::find(options_.devices.begin(), options_.devices.end(),
                                               name) == options_.devices.end()) {
      continue;  // not one of `gdrmesh worker --nic`
    }
    ContextPtr ctx(ibv_open_device(list.get()[i]));
    if (!ctx) {
      states +=
          (states.empty() ? "" : ", ") + name + ": cannot open (" + verbs::errnoName(errno) + ")";
      continue;
    }
    ibv_device_attr attr{};
    if (ibv_query_device(ctx.get(), &attr)) continue;
    for (uint32_t p = 1; p <= attr.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx.get(), static_cast<uint8_t>(p), &pa)) continue;
      if (pa.state == IBV_PORT_ACTIVE) return Status();
      states += (states.empty() ? "" : ", ") + name + "/" + std::to_string(p) + ": " +
                portStateName(pa.state);
    }
  }
  return failedPrecondition(
      std::to_string(n) + " RDMA device(s) but no ACTIVE port (" + states + ")",
      "bring the links up: check cables and switch ports, `ip link set <netdev> up` for RoCE, "
      "a running subnet manager for InfiniBand");
}

Result<std::unique_ptr<VerbsEndpoint>> VerbsTransport::createVerbsEndpoint(const EndpointSpec& spec,
                                                                           Buffer& buffer,
                                                                           RegPath reg) {
  EndpointSpec use = spec;
  if (!options_.devices.empty()) {
    if (use.device.empty()) {
      use.device = options_.devices.front();
    } else if (std::find(options_.devices.begin(), options_.devices.end(), use.device) ==
               options_.devices.end()) {
      std::string names;
      for (const auto& d : options_.devices) names += (names.empty() ? "" : ", ") + d;
      return notFound(
          "RDMA device '" + use.device + "' is not offered by this worker (--nic " + names + ")",
          "pick one of the worker's NICs (`gdrmesh workers`)");
    }
  }
  auto ep = std::make_unique<VerbsEndpointImpl>(
      use, buffer, options_.registrar ? *options_.registrar : verbs::systemRegistrar(),
      options_.sysfs_root, options_.max_rd_atomic);
  GDR_RETURN_IF_ERROR(ep->init(reg));
  return std::unique_ptr<VerbsEndpoint>(std::move(ep));
}

Result<std::unique_ptr<Endpoint>> VerbsTransport::createEndpoint(const EndpointSpec& spec,
                                                                 Buffer& buffer, RegPath reg) {
  GDR_ASSIGN_OR_RETURN(auto ep, createVerbsEndpoint(spec, buffer, reg));
  return std::unique_ptr<Endpoint>(std::move(ep));
}

}  // namespace gdrmesh
