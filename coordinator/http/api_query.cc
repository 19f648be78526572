#include "coordinator/http/api_query.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "common/limits.h"
#include "common/time_point.h"
#include "common/units.h"

namespace gdrmesh {
namespace {

constexpr const char* kWorkerFix =
    "use 1-64 characters from A-Z a-z 0-9 . _ -, as `gdrmesh workers` lists them";

bool has(const QueryParams& p, const std::string& key) {
  return p.count(key) > 0;
}

// The first value of `key` ("" when absent); checkParams refuses repeated ones first.
std::string value(const QueryParams& p, const std::string& key) {
  auto it = p.find(key);
  return it == p.end() ? std::string() : it->second;
}

bool digits(const std::string& v) {
  return std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Rejects parameters outside `allowed` and repeated ones.
std::optional<ParamError> checkParams(const QueryParams& p, const std::set<std::string>& allowed) {
  std::string names;
  for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
  for (const auto& [key, v] : p) {
    if (allowed.count(key) == 0) {
      return ParamError{
          key, "unknown query parameter '" + cleanText(key, 80) + "'",
          allowed.empty() ? "this endpoint takes no parameters" : "use only: " + names};
    }
    if (p.count(key) > 1) {
      return ParamError{key, "query parameter '" + key + "' given more than once", "give it once"};
    }
  }
  return std::nullopt;
}

std::optional<ParamError> parseLimit(const QueryParams& p, uint32_t* limit) {
  if (!has(p, "limit")) return std::nullopt;
  const std::string v = value(p, "limit");
  const std::string fix = "give a whole number from 1 to " + std::to_string(kApiMaxLimit);
  if (v.empty() || v.size() > 6 || !digits(v)) {
    return ParamError{"limit", "limit '" + cleanText(v, 80) + "' is not a number", fix};
  }
  const unsigned long n = std::stoul(v);
  if (n < 1 || n > kApiMaxLimit) {
    return ParamError{"limit", "limit " + v + " is out of range", fix};
  }
  *limit = static_cast<uint32_t>(n);
  return std::nullopt;
}

std::optional<ParamError> parseOffset(const QueryParams& p, uint64_t* offset) {
  if (!has(p, "offset")) return std::nullopt;
  const std::string v = value(p, "offset");
  if (v.empty() || v.size() > 9 || !digits(v)) {
    return ParamError{"offset",
                      "offset '" + cleanText(v, 80) + "' is not a whole number from 0 to " +
                          std::to_string(kApiMaxOffset),
                      "give the next_offset of the previous page (0 for the first)"};
  }
  *offset = std::stoull(v);
  return std::nullopt;
}

std::optional<ParamError> parseRunId(const QueryParams& p, std::string* run_id) {
  if (!has(p, "run_id")) return std::nullopt;
  *run_id = value(p, "run_id");
  if (!validTestId(*run_id)) {
    return ParamError{"run_id",
                      "run_id is empty, longer than 128 characters or holds control characters",
                      "give a run id as `gdrmesh results` prints it (a sweep's id for its tests)"};
  }
  return std::nullopt;
}

// "5", "5%", "2.5%" -> percent in 0..1000.
std::optional<ParamError> parseTolerance(const std::string& v, double* pct) {
  std::string s = v;
  if (!s.empty() && s.back() == '%') s.pop_back();
  char* end = nullptr;
  const double x = s.empty() ? -1 : std::strtod(s.c_str(), &end);
  if (s.empty() || end == nullptr || *end != '\0' || !std::isfinite(x) || x < 0 || x > 1000) {
    return ParamError{"tolerance",
                      "tolerance '" + cleanText(v, 80) + "' is not a percentage from 0 to 1000",
                      "e.g. tolerance=5%"};
  }
  *pct = x;
  return std::nullopt;
}

}  // namespace

bool validSweepId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == ':';
  });
}

bool validTestId(const std::string& id) {
  return !id.empty() && id.size() <= 128 && std::none_of(id.begin(), id.end(), [](char c) {
    return std::iscntrl(static_cast<unsigned char>(c)) != 0;
  });
}

std::optional<ParamError> parseNoParams(const QueryParams& p) {
  return checkParams(p, {});
}

ParsedQuery<ResultQuery> parseResultsQuery(const QueryParams& p) {
  if (auto e = checkParams(p, {"limit", "worker", "status", "run_id"})) return *e;
  ResultQuery q;
  q.limit = kApiResultsDefaultLimit;
  if (auto e = parseLimit(p, &q.limit)) return *e;
  if (has(p, "worker")) {
    q.worker = value(p, "worker");
    if (!validWorkerName(q.worker)) {
      return ParamError{"worker", "worker '" + cleanText(q.worker, 80) + "' is not a worker name",
                        kWorkerFix};
    }
  }
  if (has(p, "status")) {
    const std::string v = value(p, "status");
    std::string upper = v;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) {
      return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    });
    auto st = parseTestStatus(upper);
    if (!st) {
      return ParamError{"status", "status '" + cleanText(v, 80) + "' is not a test status",
                        "use one of passed, failed, skipped, error"};
    }
    q.status = *st;
  }
  if (auto e = parseRunId(p, &q.run_id)) return *e;
  return q;
}

ParsedQuery<HistoryQuery> parseHistoryParams(const QueryParams& p, int64_t now_ms) {
  if (auto e = checkParams(p, {"src", "dst", "since", "until", "size", "op", "mode", "direction",
                               "run_id", "limit"})) {
    return *e;
  }
  HistoryQuery q;
  if (auto e = parseRunId(p, &q.run_id)) return *e;
  for (const char* side : {"src", "dst"}) {
    if (!has(p, side)) {
      return ParamError{side, std::string("parameter '") + side + "' is required",
                        "give both workers of the pair: /api/history?src=W1&dst=W2"};
    }
    const std::string v = value(p, side);
    if (!validWorkerName(v)) {
      return ParamError{
          side, std::string(side) + " '" + cleanText(v, 80) + "' is not a worker name", kWorkerFix};
    }
    (std::string(side) == "src" ? q.src : q.dst) = v;
  }
  for (const char* bound : {"since", "until"}) {
    if (!has(p, bound)) continue;
    auto t = parseTimePoint(value(p, bound), now_ms, bound);
    if (!t.ok()) return ParamError{bound, t.status().message(), t.status().fix()};
    (std::string(bound) == "since" ? q.since_ms : q.until_ms) = *t;
  }
  if (q.until_ms <= q.since_ms) {
    return ParamError{"until", "until is not after since", "give since an earlier time"};
  }
  if (has(p, "size")) {
    auto size = parseSize(value(p, "size"), "size");
    if (!size.ok()) return ParamError{"size", size.status().message(), size.status().fix()};
    q.message_size = *size;
  }
  if (has(p, "op")) {
    auto op = parseOp(value(p, "op"));
    if (!op) {
      return ParamError{"op", "op '" + cleanText(value(p, "op"), 80) + "' is not an operation",
                        "use one of write, read, send, write_imm"};
    }
    q.op = *op;
  }
  if (has(p, "mode")) {
    auto mode = parseMode(value(p, "mode"));
    if (!mode) {
      return ParamError{"mode", "mode '" + cleanText(value(p, "mode"), 80) + "' is not a mode",
                        "use bw or lat"};
    }
    q.mode = *mode;
  }
  if (has(p, "direction")) {
    const std::string d = value(p, "direction");
    if (d != "both" && d != "one") {
      return ParamError{"direction", "direction '" + cleanText(d, 80) + "' is not a direction",
                        "use both (default) or one (src -> dst only)"};
    }
    q.both_directions = d == "both";
  }
  q.limit = kApiResultsDefaultLimit;
  if (auto e = parseLimit(p, &q.limit)) return *e;
  return q;
}

ParsedQuery<CompareQuery> parseCompareQuery(const QueryParams& p) {
  if (auto e = checkParams(p, {"a", "b", "tolerance"})) return *e;
  CompareQuery q;
  q.tolerance_pct = HistoryQueries::kDefaultTolerancePct;
  for (const char* k : {"a", "b"}) {
    if (!has(p, k) || !validSweepId(value(p, k))) {
      return ParamError{k, std::string("parameter '") + k + "' is missing or not a sweep id",
                        "give two sweep ids as /api/sweeps lists them: ?a=OLD&b=NEW"};
    }
  }
  q.a = value(p, "a");
  q.b = value(p, "b");
  if (has(p, "tolerance")) {
    if (auto e = parseTolerance(value(p, "tolerance"), &q.tolerance_pct)) return *e;
  }
  return q;
}

ParsedQuery<uint32_t> parseLimitOnly(const QueryParams& p, uint32_t default_limit) {
  if (auto e = checkParams(p, {"limit"})) return *e;
  uint32_t limit = default_limit;
  if (auto e = parseLimit(p, &limit)) return *e;
  return limit;
}

ParsedQuery<SweepQuery> parseSweepQuery(const QueryParams& p) {
  if (auto e = checkParams(p, {"verdicts", "offset", "limit"})) return *e;
  SweepQuery q;
  if (auto e = parseLimit(p, &q.page.limit)) return *e;
  if (auto e = parseOffset(p, &q.page.offset)) return *e;
  if (has(p, "verdicts")) {
    const std::string v = value(p, "verdicts");
    if (v == "failed") {
      q.filter = VerdictFilter::kFailed;
    } else if (v == "none") {
      q.filter = VerdictFilter::kNone;
    } else if (v != "all") {
      return ParamError{"verdicts", "verdicts '" + cleanText(v, 80) + "' is not a verdict filter",
                        "use one of all, failed, none"};
    }
  }
  return q;
}

ParsedQuery<FabricQuery> parseFabricQuery(const QueryParams& p) {
  if (auto e = checkParams(p, {"switch"})) return *e;
  FabricQuery q;
  if (!has(p, "switch")) return q;
  q.only_switch = value(p, "switch");
  const bool control = std::any_of(q.only_switch.begin(), q.only_switch.end(), [](char c) {
    return std::iscntrl(static_cast<unsigned char>(c)) != 0;
  });
  if (q.only_switch.empty() || q.only_switch.size() > 256 || control) {
    return ParamError{"switch",
                      "switch '" + cleanText(q.only_switch, 80) +
                          "' is empty, longer than 256 characters or holds control characters",
                      "give a switch's name as the fabric view lists it (its node description, "
                      "or an LLDP switch's name or chassis ID)"};
  }
  return q;
}

}  // namespace gdrmesh
