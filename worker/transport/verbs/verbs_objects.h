// RAII owners for verbs and librdmacm objects: one unique_ptr type per object, with deleters
// that never throw. Destruction order is the caller's member order; VerbsEndpoint declares them
// so that teardown runs as rdma-core's examples do: disconnect, deregister MRs, destroy QPs,
// CQs, PD, close the device (and for rdma_cm: the id, then the event channel).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace gdrmesh::verbs {

struct DeviceListDeleter {
  void operator()(ibv_device** l) const noexcept { ibv_free_device_list(l); }
};
struct ContextDeleter {
  void operator()(ibv_context* c) const noexcept { ibv_close_device(c); }
};
struct PdDeleter {
  void operator()(ibv_pd* p) const noexcept { ibv_dealloc_pd(p); }
};
struct CqDeleter {
  void operator()(ibv_cq* c) const noexcept { ibv_destroy_cq(c); }
};
struct QpDeleter {
  void operator()(ibv_qp* q) const noexcept { ibv_destroy_qp(q); }
};
struct AhDeleter {
  void operator()(ibv_ah* a) const noexcept { ibv_destroy_ah(a); }
};
struct CompChannelDeleter {
  void operator()(ibv_comp_channel* c) const noexcept { ibv_destroy_comp_channel(c); }
};
struct EventChannelDeleter {
  void operator()(rdma_event_channel* c) const noexcept { rdma_destroy_event_channel(c); }
};
// Destroys the QP created with rdma_create_qp (if any), then the id.
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const noexcept {
    if (id->qp) rdma_destroy_qp(id);
    rdma_destroy_id(id);
  }
};

using DeviceListPtr = std::unique_ptr<ibv_device*, DeviceListDeleter>;
using ContextPtr = std::unique_ptr<ibv_context, ContextDeleter>;
using PdPtr = std::unique_ptr<ibv_pd, PdDeleter>;
using CqPtr = std::unique_ptr<ibv_cq, CqDeleter>;
using QpPtr = std::unique_ptr<ibv_qp, QpDeleter>;
using AhPtr = std::unique_ptr<ibv_ah, AhDeleter>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
using EventChannelPtr = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;
using CmIdPtr = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

}  // namespace gdrmesh::verbs
