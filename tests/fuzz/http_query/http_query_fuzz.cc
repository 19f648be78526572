// Fuzzes the status page's query parameters (coordinator/http/api_query.h), the part of an
// HTTP request a client controls after the path: the input is a query string
// ("limit=5&worker=h1", percent-encoded as a browser sends it), decoded into the multimap the
// HTTP library hands the server, and given to every endpoint's parser. Any input must give a
// query or a ParamError, never a crash. A violation aborts (a finding):
//   - a parsed query is within the documented bounds (limit 1..10000, offset <= 999999999,
//     valid worker names and ids, since before until, a finite tolerance in 0..1000);
//   - an unknown or repeated parameter is always refused;
//   - a refusal names the parameter (one the request gave, or a required one it lacks) and
//     says what is wrong and the fix.
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "common/limits.h"
#include "coordinator/http/api_query.h"

namespace {

using gdrmesh::ParamError;
using gdrmesh::QueryParams;

constexpr int64_t kNowMs = 1'795'000'000'000;  // 2026-11-18

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

QueryParams parse(std::string_view q) {
  QueryParams p;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    std::string_view kv = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    p.emplace(decode(kv.substr(0, eq)),
              eq == std::string_view::npos ? std::string() : decode(kv.substr(eq + 1)));
  }
  return p;
}

// What any endpoint's parser owes a request whose parameters are `p`.
void checkRefusal(const QueryParams& p, const ParamError& e,
                  std::initializer_list<const char*> required) {
  if (e.message.empty() || e.fix.empty()) std::abort();
  bool named = p.count(e.parameter) > 0;
  for (const char* r : required) named = named || e.parameter == r;
  if (!named) std::abort();
}

template <typename T>
const T* accepted(const QueryParams& p, const std::variant<T, ParamError>& r,
                  const std::set<std::string>& allowed,
                  std::initializer_list<const char*> required = {}) {
  bool must_refuse = false;
  for (const auto& kv : p) {
    if (allowed.count(kv.first) == 0 || p.count(kv.first) > 1) must_refuse = true;
  }
  if (const auto* e = std::get_if<ParamError>(&r)) {
    checkRefusal(p, *e, required);
    return nullptr;
  }
  if (must_refuse) std::abort();
  return &std::get<T>(r);
}

void checkLimit(uint32_t limit) {
  if (limit < 1 || limit > gdrmesh::kApiMaxLimit) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const QueryParams p = parse(std::string_view(reinterpret_cast<const char*>(data), size));

  if (gdrmesh::parseNoParams(p).has_value() != !p.empty()) std::abort();

  auto results = gdrmesh::parseResultsQuery(p);
  if (const auto* q = accepted(p, results, {"limit", "worker", "status", "run_id"})) {
    checkLimit(q->limit);
    if (!q->worker.empty() && !gdrmesh::validWorkerName(q->worker)) std::abort();
    if (!q->run_id.empty() && !gdrmesh::validTestId(q->run_id)) std::abort();
  }

  auto history = gdrmesh::parseHistoryParams(p, kNowMs);
  if (const auto* q = accepted(
          p, history,
          {"src", "dst", "since", "until", "size", "op", "mode", "direction", "run_id", "limit"},
          {"src", "dst", "until"})) {
    checkLimit(q->limit);
    if (!gdrmesh::validWorkerName(q->src) || !gdrmesh::validWorkerName(q->dst)) std::abort();
    if (q->until_ms <= q->since_ms) std::abort();
    if (!q->run_id.empty() && !gdrmesh::validTestId(q->run_id)) std::abort();
  }

  auto compare = gdrmesh::parseCompareQuery(p);
  if (const auto* q = accepted(p, compare, {"a", "b", "tolerance"}, {"a", "b"})) {
    if (!gdrmesh::validSweepId(q->a) || !gdrmesh::validSweepId(q->b)) std::abort();
    if (!std::isfinite(q->tolerance_pct) || q->tolerance_pct < 0 || q->tolerance_pct > 1000) {
      std::abort();
    }
  }

  auto limit = gdrmesh::parseLimitOnly(p, 20);
  if (const auto* l = accepted(p, limit, {"limit"})) checkLimit(*l);

  auto sweep = gdrmesh::parseSweepQuery(p);
  if (const auto* q = accepted(p, sweep, {"verdicts", "offset", "limit"})) {
    checkLimit(q->page.limit);
    if (q->page.offset > gdrmesh::kApiMaxOffset) std::abort();
  }

  auto fabric_view = gdrmesh::parseFabricQuery(p);
  if (const auto* q = accepted(p, fabric_view, {"switch"})) {
    if (q->only_switch.size() > 256) std::abort();
    for (char c : q->only_switch) {
      if (std::iscntrl(static_cast<unsigned char>(c)) != 0) std::abort();
    }
  }
  return 0;
}
