#include "common/limits.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace gdrmesh {
namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when invalid. C1 controls (U+0080..U+009F)
// count as invalid: some terminals act on them.
size_t utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  if (cp >= 0x80 && cp <= 0x9F) return 0;
  return n;
}

// Length of the Unicode bidirectional control at s[i] (U+061C, U+200E, U+200F,
// U+202A..U+202E, U+2066..U+2069), 0 when there is none. They reorder what a terminal or a
// report shows (a host name that reads backwards, a NIC name that hides another), so they
// count as control characters.
size_t bidiLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  if (b(0) == 0xD8 && b(1) == 0x9C) return 2;  // U+061C ARABIC LETTER MARK
  if (b(0) != 0xE2) return 0;
  if (b(1) == 0x80 && (b(2) == 0x8E || b(2) == 0x8F || (b(2) >= 0xAA && b(2) <= 0xAE))) return 3;
  if (b(1) == 0x81 && b(2) >= 0xA6 && b(2) <= 0xA9) return 3;
  return 0;
}

bool hasControl(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return true;
    if (c < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8Length(s, i);
    if (n == 0 || bidiLength(s, i) > 0) return true;
    i += n;
  }
  return false;
}

Status tooMany(const std::string& field, size_t n, size_t max) {
  return invalidArgument(field + ": " + std::to_string(n) + " entries, at most " +
                             std::to_string(max) + " are accepted",
                         "report the host's real inventory (docs/security.md lists the limits)");
}

Status text(const std::string& field, const std::string& v, size_t max) {
  if (v.size() > max) {
    return invalidArgument(
        field + ": " + std::to_string(v.size()) + " bytes, at most " + std::to_string(max),
        "shorten it (docs/security.md lists the limits)");
  }
  if (hasControl(v)) {
    return invalidArgument(field + ": holds a control character or invalid UTF-8",
                           "send printable UTF-8 text only");
  }
  return {};
}

}  // namespace

Status checkText(const std::string& field, std::string_view value, size_t max_bytes) {
  return text(field, std::string(value), max_bytes);
}

bool validWorkerName(std::string_view n, size_t max_len) {
  if (n.empty() || n.size() > max_len) return false;
  for (char c : n) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

namespace {

// checkRegistration's parts, one per part of the inventory (and the labels).

Status checkRegisteredPort(const std::string& pf, const NicPort& port,
                           const RegistrationLimits& lim) {
  const size_t st = lim.short_text;
  for (const auto* v : {&port.state, &port.link_layer, &port.netdev}) {
    GDR_RETURN_IF_ERROR(text(pf, *v, st));
  }
  if (!std::isfinite(port.rate_gbps) || port.rate_gbps < 0 ||
      port.rate_gbps > lim.max_port_rate_gbps) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g", port.rate_gbps);
    return invalidArgument(pf + ".rate_gbps: " + buf + " is not a port rate (0.." +
                               std::to_string(static_cast<int>(lim.max_port_rate_gbps)) + " Gb/s)",
                           "report the port's rate as sysfs has it (docs/results-trust.md)");
  }
  if (port.state == "ACTIVE" && port.rate_gbps == 0) {
    return invalidArgument(pf + ".rate_gbps: 0 on an ACTIVE port",
                           "report the port's rate as sysfs has it (.../ports/N/rate); an "
                           "active port has one (docs/results-trust.md)");
  }
  if (port.gids.size() > lim.gids_per_port) {
    return tooMany(pf + ".gids", port.gids.size(), lim.gids_per_port);
  }
  for (const auto& g : port.gids) {
    GDR_RETURN_IF_ERROR(text(pf + ".gids", g.gid, st));
    GDR_RETURN_IF_ERROR(text(pf + ".gids", g.type, st));
  }
  return {};
}

Status checkRegisteredNics(const Inventory& inv, const RegistrationLimits& lim) {
  const size_t st = lim.short_text;
  if (inv.nics.size() > lim.nics) return tooMany("inventory.nics", inv.nics.size(), lim.nics);
  for (size_t i = 0; i < inv.nics.size(); ++i) {
    const Nic& n = inv.nics[i];
    const std::string f = "inventory.nics[" + std::to_string(i) + "]";
    for (const auto* v : {&n.name, &n.pci_bus_id, &n.node_guid, &n.fw_version}) {
      GDR_RETURN_IF_ERROR(text(f, *v, st));
    }
    if (n.ports.size() > lim.ports_per_nic) {
      return tooMany(f + ".ports", n.ports.size(), lim.ports_per_nic);
    }
    for (size_t p = 0; p < n.ports.size(); ++p) {
      GDR_RETURN_IF_ERROR(
          checkRegisteredPort(f + ".ports[" + std::to_string(p) + "]", n.ports[p], lim));
    }
  }
  return {};
}

// GPUs, transports and their capabilities.
Status checkRegisteredDevices(const Inventory& inv, const RegistrationLimits& lim) {
  const size_t st = lim.short_text;
  if (inv.gpus.size() > lim.gpus) return tooMany("inventory.gpus", inv.gpus.size(), lim.gpus);
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    const Gpu& g = inv.gpus[i];
    const std::string f = "inventory.gpus[" + std::to_string(i) + "]";
    for (const auto* v : {&g.name, &g.uuid, &g.pci_bus_id, &g.nearest_nic, &g.nearest_class}) {
      GDR_RETURN_IF_ERROR(text(f, *v, st));
    }
  }
  if (inv.transports.size() > lim.transports) {
    return tooMany("inventory.transports", inv.transports.size(), lim.transports);
  }
  for (const auto& t : inv.transports) GDR_RETURN_IF_ERROR(text("inventory.transports", t, st));
  if (inv.capabilities.size() > lim.transports) {
    return tooMany("inventory.capabilities", inv.capabilities.size(), lim.transports);
  }
  for (size_t i = 0; i < inv.capabilities.size(); ++i) {
    const TransportCapabilities& c = inv.capabilities[i];
    const std::string f = "inventory.capabilities[" + std::to_string(i) + "]";
    const std::pair<const char*, size_t> lists[] = {{".bandwidth_ops", c.bandwidth_ops.size()},
                                                    {".latency_ops", c.latency_ops.size()},
                                                    {".memory", c.memory.size()},
                                                    {".reg_paths", c.reg_paths.size()}};
    for (const auto& [list, n] : lists) {
      if (n > lim.capability_values) return tooMany(f + list, n, lim.capability_values);
    }
  }
  return {};
}

Status checkRegisteredNotes(const Inventory& inv, const RegistrationLimits& lim) {
  const size_t st = lim.short_text, lt = lim.long_text;
  if (inv.notes.size() > lim.notes) return tooMany("inventory.notes", inv.notes.size(), lim.notes);
  for (const auto& n : inv.notes) GDR_RETURN_IF_ERROR(text("inventory.notes", n, lt));
  if (inv.preflight.size() > lim.preflight) {
    return tooMany("inventory.preflight", inv.preflight.size(), lim.preflight);
  }
  for (const auto& c : inv.preflight) {
    for (const auto* v : {&c.id, &c.title, &c.status}) {
      GDR_RETURN_IF_ERROR(text("inventory.preflight", *v, st));
    }
    GDR_RETURN_IF_ERROR(text("inventory.preflight[" + c.id + "].detail", c.detail, lt));
    GDR_RETURN_IF_ERROR(text("inventory.preflight[" + c.id + "].remediation", c.remediation, lt));
  }
  return {};
}

Status checkRegisteredLabels(const std::map<std::string, std::string>& labels,
                             const RegistrationLimits& lim) {
  if (labels.size() > lim.labels) return tooMany("labels", labels.size(), lim.labels);
  for (const auto& [k, v] : labels) {
    bool ok_key = !k.empty() && k.size() <= lim.label_key;
    for (char c : k) {
      const auto u = static_cast<unsigned char>(c);
      if (!std::isalnum(u) && c != '.' && c != '_' && c != '/' && c != '-') ok_key = false;
    }
    if (!ok_key) {
      return invalidArgument("labels: key '" + cleanText(k, 80) + "': use 1-" +
                                 std::to_string(lim.label_key) +
                                 " characters from A-Z a-z 0-9 . _ / -",
                             "gdrmesh worker --label KEY=VALUE");
    }
    GDR_RETURN_IF_ERROR(text("labels[" + k + "]", v, lim.label_value));
  }
  return {};
}

}  // namespace

Status checkRegistration(const std::string& name, const Inventory& inv,
                         const std::map<std::string, std::string>& labels,
                         const RegistrationLimits& lim) {
  if (!validWorkerName(name, lim.name)) {
    return invalidArgument("name: worker name '" + cleanText(name, 80) + "': use 1-" +
                               std::to_string(lim.name) + " characters from A-Z a-z 0-9 . _ -",
                           "start the worker with --name NAME");
  }
  const size_t st = lim.short_text;
  GDR_RETURN_IF_ERROR(text("inventory.hostname", inv.hostname, st));
  GDR_RETURN_IF_ERROR(text("inventory.worker_version", inv.worker_version, st));
  GDR_RETURN_IF_ERROR(text("inventory.cuda_driver_version", inv.cuda_driver_version, st));
  GDR_RETURN_IF_ERROR(text("inventory.rdma_core_version", inv.rdma_core_version, st));
  GDR_RETURN_IF_ERROR(text("inventory.kernel_release", inv.kernel_release, st));
  GDR_RETURN_IF_ERROR(text("inventory.nvidia_driver_version", inv.nvidia_driver_version, st));
  GDR_RETURN_IF_ERROR(checkRegisteredNics(inv, lim));
  GDR_RETURN_IF_ERROR(checkRegisteredDevices(inv, lim));
  GDR_RETURN_IF_ERROR(checkRegisteredNotes(inv, lim));
  return checkRegisteredLabels(labels, lim);
}

std::string cleanText(std::string_view s, size_t max_bytes) {
  // Most text is short printable ASCII (a worker's host name, NIC, GID): kept as it is, without
  // the byte-by-byte walk below (every reply of a pair test carries a few such fields).
  if (s.size() <= max_bytes &&
      std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7F; })) {
    return std::string(s);
  }
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 1;
    if (c >= 0x80) n = utf8Length(s, i);
    if (out.size() + std::max<size_t>(n, 1) > max_bytes) break;
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (n > 0 && bidiLength(s, i) > 0) {
      out += '?';  // one mark for the whole control
    } else if (c < 0x20 || c == 0x7F || n == 0) {
      out += '?';
      n = 1;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  if (i < s.size()) out += " ...(" + std::to_string(s.size() - i) + " more bytes)";
  return out;
}

}  // namespace gdrmesh
