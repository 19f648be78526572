// The libibmad port a management query goes through (private to gdrmesh_fabric_discovery).
// rdma-core 56 added mad_rpc_open_port2 (separate SMI and GSI devices on newer HCAs); older
// ones have only mad_rpc_open_port, which opens every class on one device. Discovery's LFT
// queries take the SMI side, the performance (counter) queries the GSI side.
#pragma once

#include <infiniband/mad.h>

#include <string>
#include <vector>

namespace gdrmesh::fabric {

class MadPort {
 public:
  enum class Side { kSmi, kGsi };
  // Opens `classes` on CA `ca` ("" = the first) port `port`; get() is null when that failed.
  MadPort(const std::string& ca, int port, std::vector<int> classes, Side side) {
    char* name = ca.empty() ? nullptr : const_cast<char*>(ca.c_str());  // NOLINT: C API
    const int n = static_cast<int>(classes.size());
#ifdef GDRMESH_HAVE_MAD_RPC_OPEN_PORT2
    pair_ = mad_rpc_open_port2(name, port, classes.data(), n, side == Side::kSmi ? 1 : 0);
    if (pair_ != nullptr) port_ = side == Side::kSmi ? pair_->smi.port : pair_->gsi.port;
#else
    (void)side;
    port_ = mad_rpc_open_port(name, port, classes.data(), n);
#endif
  }
  ~MadPort() {
#ifdef GDRMESH_HAVE_MAD_RPC_OPEN_PORT2
    if (pair_ != nullptr) mad_rpc_close_port2(pair_);
#else
    if (port_ != nullptr) mad_rpc_close_port(port_);
#endif
  }
  MadPort(const MadPort&) = delete;
  MadPort& operator=(const MadPort&) = delete;
  ibmad_port* get() const {
    return port_;
  }

 private:
#ifdef GDRMESH_HAVE_MAD_RPC_OPEN_PORT2
  ibmad_ports_pair* pair_ = nullptr;
#endif
  ibmad_port* port_ = nullptr;
};

}  // namespace gdrmesh::fabric
