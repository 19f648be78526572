// The InfiniBand fabric as gdrmesh sees it: switches, hosts (HCAs), their ports, the links
// between them and every switch's linear forwarding table (LFT). A pure model: no libibmad or
// libibnetdisc types and no protobuf, so the worker (worker/fabric/ fills it from the wire), the
// CLI and later the coordinator share it. Its JSON form is documented in docs/fabric.md.
//
// What is derived from it here, computed only from the model:
//   - diffFabrics(): what changed between two snapshots (a link gone, narrower, slower, down),
//     each finding naming the switch and port;
//   - tracePath(): the hop-by-hop path (switch, in port, out port) of one HCA port to another,
//     read from the switches' LFTs, never from LID arithmetic.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gdrmesh::fabric {

enum class NodeKind { kSwitch, kHca, kRouter };
const char* nodeKindName(NodeKind kind);

// An LFT entry with no route ("no entry" in the IBA: port 255).
inline constexpr uint8_t kNoRoute = 255;

// One physical port of a node (switch ports 1..N; an HCA's ports 1..N). A switch's LID lives
// on its management port 0, which is not listed here: Node::lid holds it.
struct Port {
  int number = 0;
  uint64_t guid = 0;       // port GUID (a switch's ports share the node GUID)
  uint16_t lid = 0;        // base LID of an HCA port; 0 on switch ports and when unassigned
  std::string state;       // logical state: Down, Init, Armed, Active
  std::string phys_state;  // physical state: Polling, LinkUp, Disabled, ...
  int width = 0;           // active lanes: 1, 2, 4, 8, 12 (0: unknown, link down)
  std::string speed;       // active lane speed: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR
  // The other end, when linked (remote_guid 0: nothing attached or link down).
  uint64_t remote_guid = 0;
  int remote_port = 0;
};

struct Node {
  NodeKind kind = NodeKind::kHca;
  std::string name;  // node description ("leaf01", "node7 mlx5_0")
  uint64_t guid = 0;
  uint16_t lid = 0;   // switches: the LID of management port 0
  int num_ports = 0;  // ports the node has (NumPorts), connected or not
  std::vector<Port> ports;
  // Switches only: LinearFDBTop and the LFT indexed by destination LID (0..lft_top); an entry
  // is the out port (0: the switch itself) or kNoRoute.
  uint16_t lft_top = 0;
  std::vector<uint8_t> lft;

  const Port* port(int number) const;
  // The out port for `dlid`, or kNoRoute when the table has no entry for it.
  uint8_t route(uint16_t dlid) const { return dlid < lft.size() ? lft[dlid] : kNoRoute; }
};

struct LinkEnd {
  std::string node;
  uint64_t guid = 0;  // node GUID
  int port = 0;
  bool operator==(const LinkEnd& o) const { return guid == o.guid && port == o.port; }
};

// One cable. `a` is the end with the smaller (node GUID, port), so a link has one spelling.
struct Link {
  LinkEnd a, b;
  int width = 0;
  std::string speed;
  std::string state;
};

struct Fabric {
  std::string source;         // "mlx5_0/1": the local port discovery started from
  int64_t discovered_ms = 0;  // unix ms
  std::vector<Node> switches;
  std::vector<Node> hosts;  // HCAs (and routers)
  std::vector<Link> links;

  // Linear scans: for one look-up. Loops over many paths use a FabricIndex.
  const Node* nodeByGuid(uint64_t guid) const;
  const Node* nodeByName(const std::string& name) const;
  // Fills `links` from the nodes' ports (each cable once, `a` the smaller end), sorted.
  void rebuildLinks();
  // Number of LFT entries with a route, over every switch.
  size_t routedLftEntries() const;
};

// Lane speed in Gb/s (signalling per lane as the IBA names it: SDR 2.5 ... NDR 100), 0 when
// unknown; and the rank used to call a link "slower".
double laneGbps(const std::string& speed);
std::string widthName(int width);  // 4 -> "4x", 0 -> "?"

// JSON (docs/fabric.md): {"format", "source", "discovered_ms", "switches", "hosts", "links"}.
nlohmann::json toJson(const Fabric& f);
Result<Fabric> fabricFromJson(const nlohmann::json& j);
Result<Fabric> loadFabricFile(const std::string& path);

// ------------------------------------------------------------------ diff

struct Finding {
  std::string kind;         // link_gone, link_new, link_narrower, link_slower, link_down,
                            // node_gone, node_new
  std::string switch_name;  // the switch the finding names ("" for a host-only node)
  int port = 0;             // its port (0 for node findings)
  std::string message;      // "leaf01[12] <-> spine02[7]: width 4x -> 1x"
};
// What changed from `before` to `after`. Links and nodes are matched by GUID (and port).
std::vector<Finding> diffFabrics(const Fabric& before, const Fabric& after);

// ------------------------------------------------------------------ index

// A fabric's nodes by GUID and by name, and each node's ports by number, built once: tracing the
// paths of a 1,024-host all-pairs sweep looks a node up millions of times (docs/benchmarks.md).
// Holds pointers into the fabric: valid while that Fabric is neither changed nor moved. The
// first node of a GUID or name wins, as Fabric::nodeByGuid/nodeByName find it.
class FabricIndex {
 public:
  struct Entry {
    const Node* node = nullptr;
    std::vector<const Port*> ports;  // by port number; nullptr where the node lists none
    const Port* port(int number) const {
      return number >= 0 && static_cast<size_t>(number) < ports.size()
                 ? ports[static_cast<size_t>(number)]
                 : nullptr;
    }
  };
  explicit FabricIndex(const Fabric& f);
  FabricIndex(const FabricIndex&) = delete;
  FabricIndex& operator=(const FabricIndex&) = delete;

  const Fabric& fabric() const { return *fabric_; }
  const Entry* entry(uint64_t guid) const;
  const Node* node(uint64_t guid) const {
    const Entry* e = entry(guid);
    return e != nullptr ? e->node : nullptr;
  }
  const Node* nodeNamed(const std::string& name) const;

 private:
  const Fabric* fabric_;
  std::vector<Entry> entries_;
  std::unordered_map<uint64_t, size_t> by_guid_;
  std::unordered_map<std::string, const Node*> by_name_;
};

// ------------------------------------------------------------------ paths

struct Hop {
  std::string switch_name;
  uint64_t switch_guid = 0;
  int in_port = 0;
  int out_port = 0;
};

// An HCA port of the fabric: a host named by node description or GUID, and its port.
struct Endpoint {
  const Node* node = nullptr;
  const Port* port = nullptr;
};
// "node7 mlx5_0", "node7 mlx5_0/1", "0x0002c90300a1b2c3" or ".../2": resolves against the
// hosts of `f`. Without a port, the host's first active port (or the only one).
Result<Endpoint> findEndpoint(const Fabric& f, const std::string& spec);

// The switches a packet from `src` to `dst` crosses, hop by hop, each with the port it enters
// and the port the switch's LFT sends it out of. Reads only the LFTs and the links; a missing
// entry, a dead link or a loop is an error naming the switch and LID. The first form indexes the
// fabric for this one call; tracing many paths, build a FabricIndex once and use the second.
Result<std::vector<Hop>> tracePath(const Fabric& f, const Endpoint& src, const Endpoint& dst);
Result<std::vector<Hop>> tracePath(const FabricIndex& ix, const Endpoint& src, const Endpoint& dst);

std::string guidHex(uint64_t guid);  // "0x0000000000200001"

}  // namespace gdrmesh::fabric
