#include "worker/simulate/sim_config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace gdrmesh {
namespace {

std::vector<std::string> splitColons(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(':', start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

Result<double> parseNumber(std::string_view text, const std::string& field) {
  std::string s(text);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v)) {
    return invalidArgument(field + ": '" + s + "' is not a number");
  }
  return v;
}

Result<uint64_t> parseCount(std::string_view text, const std::string& field) {
  std::string s(text);
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s.front() == '-' || end != s.c_str() + s.size() || errno != 0) {
    return invalidArgument(field + ": '" + s + "' is not a non-negative integer");
  }
  return static_cast<uint64_t>(v);
}

// "WORKER" or "WORKER/NIC".
void splitTarget(const std::string& target, SimFault* f) {
  auto slash = target.find('/');
  f->worker = target.substr(0, slash);
  if (slash != std::string::npos) f->nic = target.substr(slash + 1);
}

// One --sim-fault spec being parsed: its colon-separated parts (the kind first) and what its
// errors quote.
struct SimFaultText {
  std::vector<std::string> parts;
  std::string where;  // "--sim-fault 'SPEC'"
  std::string usage;
  const std::string& kind() const { return parts[0]; }
};

// The kinds that apply to a whole worker refuse a NIC.
Status requireWholeWorker(const SimFaultText& t, const SimFault& f) {
  if (!f.nic.empty()) {
    return invalidArgument(t.where + ": " + t.kind() + " applies to a worker", t.usage);
  }
  return {};
}

// slow:WORKER[/NIC]:FACTOR
Status parseSlowFault(const SimFaultText& t, SimFault* f) {
  if (t.parts.size() != 3) {
    return invalidArgument(t.where + ": expected slow:WORKER[/NIC]:FACTOR", t.usage);
  }
  GDR_ASSIGN_OR_RETURN(f->factor, parseNumber(t.parts[2], t.where + " FACTOR"));
  if (f->factor <= 0) {
    return invalidArgument(t.where + ": FACTOR must be > 0 (0.5 = half speed)");
  }
  f->kind = SimFault::Kind::kSlow;
  return {};
}

// flap:WORKER:P
Status parseFlapFault(const SimFaultText& t, SimFault* f) {
  if (t.parts.size() != 3) return invalidArgument(t.where + ": expected flap:WORKER:P", t.usage);
  GDR_RETURN_IF_ERROR(requireWholeWorker(t, *f));
  GDR_ASSIGN_OR_RETURN(f->probability, parseNumber(t.parts[2], t.where + " P"));
  if (f->probability < 0 || f->probability > 1) {
    return invalidArgument(t.where + ": P must be within [0, 1]");
  }
  f->kind = SimFault::Kind::kFlap;
  return {};
}

// link:WORKER[/NIC]:WORKER[/NIC]:FACTOR or glitch:WORKER:WORKER:FACTOR[:N]
Status parseLinkFault(const SimFaultText& t, SimFault* f) {
  const bool link = t.kind() == "link";
  if (link ? t.parts.size() != 4 : t.parts.size() < 4 || t.parts.size() > 5) {
    return invalidArgument(t.where + (link ? ": expected link:WORKER[/NIC]:WORKER[/NIC]:FACTOR"
                                           : ": expected glitch:WORKER:WORKER:FACTOR[:N]"),
                           t.usage);
  }
  if (!link) GDR_RETURN_IF_ERROR(requireWholeWorker(t, *f));
  SimFault peer;
  splitTarget(t.parts[2], &peer);
  if (peer.worker.empty() || (t.parts[2].find('/') != std::string::npos && peer.nic.empty()) ||
      (!link && !peer.nic.empty())) {
    return invalidArgument(t.where + ": the second end names no worker, or an empty NIC", t.usage);
  }
  if (peer.worker == f->worker) {
    return invalidArgument(t.where + ": both ends are " + f->worker, "name two different workers");
  }
  f->peer = peer.worker;
  f->peer_nic = peer.nic;
  GDR_ASSIGN_OR_RETURN(f->factor, parseNumber(t.parts[3], t.where + " FACTOR"));
  if (f->factor <= 0) {
    return invalidArgument(t.where + ": FACTOR must be > 0 (0.5 = half speed)");
  }
  f->after_n = 1;
  if (t.parts.size() == 5) {
    GDR_ASSIGN_OR_RETURN(f->after_n, parseCount(t.parts[4], t.where + " N"));
  }
  f->kind = link ? SimFault::Kind::kLink : SimFault::Kind::kGlitch;
  return {};
}

// mute:WORKER[:AFTER_N]
Status parseMuteFault(const SimFaultText& t, SimFault* f) {
  if (t.parts.size() > 3) {
    return invalidArgument(t.where + ": expected mute:WORKER[:AFTER_N]", t.usage);
  }
  GDR_RETURN_IF_ERROR(requireWholeWorker(t, *f));
  if (t.parts.size() == 3) {
    GDR_ASSIGN_OR_RETURN(f->after_n, parseCount(t.parts[2], t.where + " AFTER_N"));
  }
  f->kind = SimFault::Kind::kMute;
  return {};
}

// drop:WORKER:AFTER_N
Status parseDropFault(const SimFaultText& t, SimFault* f) {
  if (t.parts.size() != 3) {
    return invalidArgument(t.where + ": expected drop:WORKER:AFTER_N", t.usage);
  }
  GDR_RETURN_IF_ERROR(requireWholeWorker(t, *f));
  GDR_ASSIGN_OR_RETURN(f->after_n, parseCount(t.parts[2], t.where + " AFTER_N"));
  f->kind = SimFault::Kind::kDrop;
  return {};
}

}  // namespace

Result<SimFault> parseSimFault(std::string_view spec) {
  const SimFaultText t{
      splitColons(spec), "--sim-fault '" + std::string(spec) + "'",
      "use slow:WORKER[/NIC]:FACTOR, fail:WORKER[/NIC], flap:WORKER:P, mute:WORKER[:AFTER_N], "
      "drop:WORKER:AFTER_N, link:WORKER[/NIC]:WORKER[/NIC]:FACTOR, "
      "glitch:WORKER:WORKER:FACTOR[:N] or port:SWITCH[PORT]:FACTOR (with --sim-fabric)"};
  SimFault f;
  f.text = std::string(spec);
  const std::string& kind = t.kind();
  if (kind == "port") {
    GDR_ASSIGN_OR_RETURN(SimBadPort bad, parseSimBadPort(std::string(spec.substr(5))));
    f.kind = SimFault::Kind::kPort;
    f.switch_name = bad.switch_name;
    f.port = bad.port;
    f.factor = bad.factor;
    return f;
  }
  if (t.parts.size() < 2 || t.parts[1].empty()) {
    return invalidArgument(t.where + ": names no worker", t.usage);
  }
  splitTarget(t.parts[1], &f);
  if (f.worker.empty() || (t.parts[1].find('/') != std::string::npos && f.nic.empty())) {
    return invalidArgument(t.where + ": empty worker or NIC name", t.usage);
  }
  if (kind == "slow") {
    GDR_RETURN_IF_ERROR(parseSlowFault(t, &f));
  } else if (kind == "fail") {
    if (t.parts.size() != 2) {
      return invalidArgument(t.where + ": expected fail:WORKER[/NIC]", t.usage);
    }
    f.kind = SimFault::Kind::kFail;
  } else if (kind == "flap") {
    GDR_RETURN_IF_ERROR(parseFlapFault(t, &f));
  } else if (kind == "link" || kind == "glitch") {
    GDR_RETURN_IF_ERROR(parseLinkFault(t, &f));
  } else if (kind == "mute") {
    GDR_RETURN_IF_ERROR(parseMuteFault(t, &f));
  } else if (kind == "drop") {
    GDR_RETURN_IF_ERROR(parseDropFault(t, &f));
  } else {
    return invalidArgument(t.where + ": unknown fault kind '" + kind + "'", t.usage);
  }
  return f;
}

std::string simWorkerName(const std::string& prefix, int index, int count) {
  size_t width = std::to_string(count > 1 ? count - 1 : 0).size();
  if (width < 4) width = 4;
  std::string digits = std::to_string(index);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return prefix + "-" + digits;
}

std::vector<std::string> simWorkerNames(const SimConfig& config) {
  if (!config.names.empty()) return config.names;
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(std::max(config.count, 0)));
  for (int i = 0; i < config.count; ++i) {
    out.push_back(simWorkerName(config.name_prefix, i, config.count));
  }
  return out;
}

Status validateSimConfig(const SimConfig& c) {
  if (c.count < 1 || c.count > 100000) {
    return invalidArgument("--simulate: " + std::to_string(c.count) + " workers; use 1..100000");
  }
  if (c.name_prefix.empty()) return invalidArgument("--name-prefix: must not be empty");
  if (c.nics < 1 || c.nics > 64) return invalidArgument("nics: use 1..64");
  if (c.gpus < 0 || c.gpus > 64) return invalidArgument("gpus: use 0..64");
  if (!(c.nic_rate_gbps > 0)) return invalidArgument("nic_rate_gbps: must be > 0");
  if (!(c.test_ms >= 0)) return invalidArgument("--sim-test-ms: must be >= 0");
  if (!(c.bandwidth_gbps > 0)) return invalidArgument("--sim-bandwidth-gbps: must be > 0");
  if (!(c.latency_us > 0)) return invalidArgument("--sim-latency-us: must be > 0");
  if (c.connections < 0) return invalidArgument("--sim-connections: must be >= 0");
  if (!(c.noise >= 0 && c.noise <= 0.5)) {
    return invalidArgument("noise: " + std::to_string(c.noise) + " is outside [0, 0.5]",
                           "give the spread as a fraction (0.05 = +-5 %)");
  }
  if (!c.names.empty() && c.names.size() != static_cast<size_t>(c.count)) {
    return invalidArgument("--simulate " + std::to_string(c.count) + ": " +
                               std::to_string(c.names.size()) + " worker names given",
                           "give as many names as workers");
  }
  const std::vector<std::string> all = simWorkerNames(c);
  const std::set<std::string> names(all.begin(), all.end());
  for (const auto& f : c.faults) {
    if (f.kind == SimFault::Kind::kPort) {
      if (!c.fabric) {
        return invalidArgument("--sim-fault '" + f.text + "': a port fault needs a fabric",
                               "add --sim-fabric FILE (a `gdrmesh fabric discover --save` "
                               "snapshot)");
      }
      continue;
    }
    const bool two_ends = !f.peer.empty();
    for (int end = 0; end < (two_ends ? 2 : 1); ++end) {
      const std::string& worker = end == 0 ? f.worker : f.peer;
      const std::string& nic = end == 0 ? f.nic : f.peer_nic;
      if (names.count(worker) == 0) {
        return invalidArgument(
            "--sim-fault '" + f.text + "': no simulated worker '" + worker + "' here",
            "names run " + all.front() + " .. " + all.back());
      }
      if (!nic.empty()) {
        bool known = false;
        for (int n = 0; n < c.nics; ++n) known = known || nic == "mlx5_" + std::to_string(n);
        if (!known) {
          return invalidArgument("--sim-fault '" + f.text + "': no NIC '" + nic + "'",
                                 "simulated NICs are mlx5_0 .. mlx5_" + std::to_string(c.nics - 1));
        }
      }
    }
  }
  return {};
}

Status parseSimConfigText(std::string_view text, SimConfig* c) {
  std::istringstream in{std::string(text)};
  std::string raw;
  int line_no = 0;
  bool in_faults = false;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line(raw);
    auto hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = "sim config line " + std::to_string(line_no);
    if (line.front() == '-') {
      if (!in_faults) return invalidArgument(where + ": list item outside 'faults:'");
      GDR_ASSIGN_OR_RETURN(auto f, parseSimFault(trim(line.substr(1))));
      c->faults.push_back(std::move(f));
      continue;
    }
    auto sep = line.find_first_of(":=");
    if (sep == std::string_view::npos) {
      return invalidArgument(where + ": expected 'key: value'");
    }
    std::string key(trim(line.substr(0, sep)));
    std::string_view value = trim(line.substr(sep + 1));
    in_faults = false;
    const std::string field = where + " " + key;
    if (key == "faults" && value.empty()) {
      in_faults = true;
    } else if (key == "fault") {
      GDR_ASSIGN_OR_RETURN(auto f, parseSimFault(value));
      c->faults.push_back(std::move(f));
    } else if (key == "end_signal") {
      if (value != "true" && value != "false") {
        return invalidArgument(field + ": '" + std::string(value) + "' is not true or false");
      }
      c->end_signal = value == "true";
    } else if (key == "name_prefix") {
      c->name_prefix = std::string(value);
    } else if (key == "coordinator") {
      c->coordinator = std::string(value);
    } else if (key == "count" || key == "nics" || key == "gpus" || key == "connections" ||
               key == "seed" || key == "heartbeat_ms") {
      GDR_ASSIGN_OR_RETURN(uint64_t v, parseCount(value, field));
      if (key == "seed") {
        c->seed = v;
      } else if (v > 1'000'000) {
        return invalidArgument(field + ": " + std::to_string(v) + " is too large");
      } else {
        int iv = static_cast<int>(v);
        (key == "count"         ? c->count
         : key == "nics"        ? c->nics
         : key == "gpus"        ? c->gpus
         : key == "connections" ? c->connections
                                : c->heartbeat_ms) = iv;
      }
    } else if (key == "test_ms" || key == "bandwidth_gbps" || key == "latency_us" ||
               key == "nic_rate_gbps" || key == "noise") {
      GDR_ASSIGN_OR_RETURN(double v, parseNumber(value, field));
      (key == "test_ms"          ? c->test_ms
       : key == "bandwidth_gbps" ? c->bandwidth_gbps
       : key == "latency_us"     ? c->latency_us
       : key == "noise"          ? c->noise
                                 : c->nic_rate_gbps) = v;
    } else {
      return invalidArgument(where + ": unknown key '" + key + "'",
                             "keys: count, name_prefix, nics, nic_rate_gbps, gpus, test_ms, "
                             "bandwidth_gbps, latency_us, noise, seed, connections, coordinator, "
                             "end_signal, fault, faults");
    }
  }
  return {};
}

Status loadSimConfigFile(const std::string& path, SimConfig* config) {
  std::ifstream f(path);
  if (!f) return notFound("--sim-config " + path + ": cannot be read", "check the path");
  std::stringstream ss;
  ss << f.rdbuf();
  return parseSimConfigText(ss.str(), config).withContext(path);
}

}  // namespace gdrmesh
