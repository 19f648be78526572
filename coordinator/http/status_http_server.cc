#include "coordinator/http/status_http_server.h"

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <variant>

#include "common/json.h"
#include "common/limits.h"
#include "common/time_point.h"
#include "common/units.h"
#include "coordinator/http/api_query.h"
#include "coordinator/http/http_auth_hook.h"
#include "coordinator/http/request_gate.h"
#include "web/web_assets.h"

namespace gdrmesh {
namespace {

using nlohmann::json;

// /api/results reads and writes a large answer this many rows at a time.
constexpr uint32_t kResultsPage = 500;
// How far back /api/sweeps/latest and /metrics look for an ended sweep.
constexpr uint32_t kLatestLookback = 50;
constexpr const char* kHttpFix =
    "give a local address and a free port, e.g. --http 127.0.0.1:8080 (port 0 picks a free "
    "port)";

// Worker-provided strings may hold invalid UTF-8: replace it rather than throw.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void sendJson(httplib::Response& res, int http_status, const json& j) {
  res.status = http_status;
  res.set_content(dump(j), "application/json");
}

void sendError(httplib::Response& res, int http_status, const std::string& parameter,
               const std::string& message, const std::string& fix) {
  json j{{"error", message}, {"fix", fix}};
  j["parameter"] = parameter.empty() ? json(nullptr) : json(parameter);
  sendJson(res, http_status, j);
}

void sendParamError(httplib::Response& res, const ParamError& e) {
  sendError(res, 400, e.parameter, e.message, e.fix);
}

void sendStatus(httplib::Response& res, const Status& st) {
  int http = 500;
  if (st.code() == Code::kInvalidArgument) http = 400;
  if (st.code() == Code::kNotFound) http = 404;
  if (st.code() == Code::kUnavailable || st.code() == Code::kResourceExhausted) http = 503;
  sendError(res, http, "", st.toString(), st.fix());
}

// Splits "HOST:PORT" / "[V6]:PORT". Port 0..65535.
Result<std::pair<std::string, int>> parseHostPort(const std::string& hp) {
  const Status bad = invalidArgument("--http '" + hp + "': expected HOST:PORT", kHttpFix);
  const size_t colon = hp.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= hp.size()) return bad;
  std::string host = hp.substr(0, colon);
  const std::string port = hp.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return invalidArgument("--http '" + hp + "': an IPv6 address needs brackets",
                           "write it as --http [::1]:8080");
  }
  if (port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad;
  }
  const int p = std::stoi(port);
  if (p > 65535) {
    return invalidArgument("--http '" + hp + "': port " + port + " is out of range 0-65535",
                           kHttpFix);
  }
  return std::make_pair(host, p);
}

bool ended(SweepState s) {
  return s != SweepState::kQueued && s != SweepState::kRunning;
}

}  // namespace

// httplib's request processing on a request the gate (request_gate.h) has read whole: the
// routes, the token gate, default headers and the exception handler as httplib runs them, over
// a stream that reads the gate's buffer and writes to the client's socket.
class GatedHttpServer final : public httplib::Server {
 public:
  // httplib's chunked writer (/api/results over kResultsPage rows) ends an answer once
  // svr_sock_ is INVALID_SOCKET, its sign of shutting down. The gate owns the real socket and
  // httplib never listens (so never closes this): it only marks serving on and off.
  void serving(bool on) { svr_sock_ = on ? std::numeric_limits<int>::max() : INVALID_SOCKET; }
  void serve(const GatedRequest& r, const RequestGateLimits& limits, Clock& clock) {
    BufferedStream s(r, limits, clock);
    bool closed = false;
    (void)process_request(s, /*close_connection=*/true, closed, nullptr);
  }

 private:
  class BufferedStream final : public httplib::Stream {
   public:
    BufferedStream(const GatedRequest& r, const RequestGateLimits& limits, Clock& clock)
        : r_(r), writer_(r.fd, clock, limits.write_timeout, limits.response_timeout) {}
    bool is_readable() const override { return pos_ < r_.bytes.size(); }
    // A write may wait `write_timeout` for room; the whole answer gets `response_timeout`; both
    // on the coordinator's clock (ResponseWriter, request_gate.h).
    bool is_writable() const override { return writer_.writable(); }
    ssize_t read(char* ptr, size_t size) override {
      const size_t n = std::min(size, r_.bytes.size() - pos_);
      std::memcpy(ptr, r_.bytes.data() + pos_, n);
      pos_ += n;
      return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* ptr, size_t size) override { return writer_.write(ptr, size); }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
      address(::getpeername, ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
      address(::getsockname, ip, port);
    }
    socket_t socket() const override { return r_.fd; }

   private:
    void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      char host[NI_MAXHOST] = {0};
      char serv[NI_MAXSERV] = {0};
      if (get(r_.fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 ||
          ::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), serv,
                        sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return;
      }
      ip = host;
      port = std::atoi(serv);
    }
    const GatedRequest& r_;
    mutable ResponseWriter writer_;  // httplib asks is_writable() of a const stream
    size_t pos_ = 0;
  };
};

class StatusHttpServer::Impl {
 public:
  Impl(StatusSource& source, Clock& clock, std::shared_ptr<const HttpTokenGate> gate,
       RequestGateLimits limits)
      : source_(source),
        clock_(clock),
        limits_(limits),
        gate_(limits, clock, [this](const GatedRequest& r) { server_.serve(r, limits_, clock_); }) {
    installTokenGate(server_, std::move(gate));  // the reader token: before every route
    routes();
  }

  Result<int> start(const std::string& host_port) {
    GDR_ASSIGN_OR_RETURN(auto hp, parseHostPort(host_port));
    server_.serving(true);
    auto port = gate_.start(hp.first, hp.second, "--http " + host_port);
    if (!port.ok() && port.status().code() != Code::kFailedPrecondition) server_.serving(false);
    return port;
  }

  void stop() {
    server_.serving(false);  // answers being streamed end now
    gate_.stop();
  }

 private:
  // httplib tries the routes of a method in the order they were added: the catch-alls last.
  void routes() {
    serverSettings();
    workerAndResultRoutes();
    sweepRoutes();
    fallbackRoutes();
  }

  // Limits, default headers and the exception handler, for every route.
  void serverSettings() {
    // The gate's limits (request_gate.h) bound what a request may be; this is httplib's own
    // check of a body it reads.
    server_.set_payload_max_length(limits_.max_body_bytes);
    server_.set_default_headers({{"Cache-Control", "no-store"},
                                 {"X-Content-Type-Options", "nosniff"},
                                 {"X-Frame-Options", "DENY"},
                                 {"Referrer-Policy", "no-referrer"}});
    server_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, const std::exception_ptr& ep) {
          std::string what = "unknown exception";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          sendError(res, 500, "", "internal error in the status page: " + what,
                    "report this as a gdrmesh bug");
        });
  }

  // /healthz, /api/workers, /api/results[/ID], /api/history, /api/compare, /api/summary.
  void workerAndResultRoutes() {
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain; charset=utf-8");
    });
    server_.Get("/api/workers", [this](const httplib::Request& req, httplib::Response& res) {
      if (auto e = parseNoParams(req.params)) return sendParamError(res, *e);
      sendJson(res, 200, workersJson(source_.workers()));
    });
    server_.Get("/api/results", [this](const httplib::Request& req, httplib::Response& res) {
      auto parsed = parseResultsQuery(req.params);
      if (auto* e = std::get_if<ParamError>(&parsed)) return sendParamError(res, *e);
      const auto& q = std::get<ResultQuery>(parsed);
      if (q.limit <= kResultsPage) {
        auto rows = source_.results(q);
        if (!rows.ok()) return sendStatus(res, rows.status());
        json j = json::array();
        for (const auto& r : *rows) j.push_back(toJson(r));
        return sendJson(res, 200, j);
      }
      streamResults(q, res);
    });
    server_.Get(R"(/api/results/([^/]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  if (auto e = parseNoParams(req.params)) return sendParamError(res, *e);
                  const std::string id = req.matches[1];
                  if (!validTestId(id)) {
                    return sendError(res, 400, "id", "test id is not a test id",
                                     "give a test id as /api/results lists it");
                  }
                  auto r = source_.result(id);
                  if (!r.ok()) return sendStatus(res, r.status());
                  sendJson(res, 200, toJson(*r));
                });
    server_.Get("/api/history", [this](const httplib::Request& req, httplib::Response& res) {
      auto parsed = parseHistoryParams(req.params, source_.unixMs());
      if (auto* e = std::get_if<ParamError>(&parsed)) return sendParamError(res, *e);
      auto rows = source_.history(std::get<HistoryQuery>(parsed));
      if (!rows.ok()) return sendStatus(res, rows.status());
      json j = json::array();
      for (const auto& r : *rows) j.push_back(toJson(r));
      sendJson(res, 200, j);
    });
    server_.Get("/api/compare", [this](const httplib::Request& req, httplib::Response& res) {
      auto parsed = parseCompareQuery(req.params);
      if (auto* e = std::get_if<ParamError>(&parsed)) return sendParamError(res, *e);
      const auto& q = std::get<CompareQuery>(parsed);
      auto c = source_.compare(q.a, q.b, q.tolerance_pct);
      if (!c.ok()) return sendStatus(res, c.status());
      sendJson(res, 200, comparisonJson(*c));
    });
    server_.Get("/api/summary", [this](const httplib::Request& req, httplib::Response& res) {
      auto parsed = parseLimitOnly(req.params, kApiSummaryDefaultLimit);
      if (auto* e = std::get_if<ParamError>(&parsed)) return sendParamError(res, *e);
      ResultQuery q;
      q.limit = std::get<uint32_t>(parsed);
      auto rows = source_.results(q);
      if (!rows.ok()) return sendStatus(res, rows.status());
      sendJson(res, 200, summaryJson(source_.workers(), *rows, q.limit));
    });
  }

  // /api/sweeps[/ID|/latest][/fabric] and /metrics (the latest ended sweep).
  void sweepRoutes() {
    server_.Get("/api/sweeps", [this](const httplib::Request& req, httplib::Response& res) {
      auto parsed = parseLimitOnly(req.params, kApiSweepsDefaultLimit);
      if (auto* e = std::get_if<ParamError>(&parsed)) return sendParamError(res, *e);
      auto list = source_.sweeps(std::get<uint32_t>(parsed));
      if (!list.ok()) return sendStatus(res, list.status());
      json j = json::array();
      for (const auto& p : *list) j.push_back(sweepProgressJson(p));
      sendJson(res, 200, j);
    });
    server_.Get(R"(/api/sweeps/([^/]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  auto parsed = parseSweepQuery(req.params);
                  if (auto* e = std::get_if<ParamError>(&parsed)) return sendParamError(res, *e);
                  const auto& q = std::get<SweepQuery>(parsed);
                  std::string id = req.matches[1];
                  if (!resolveSweepId(id, res)) return;
                  auto report = source_.sweep(id);
                  if (!report.ok()) return sendStatus(res, report.status());
                  sendJson(res, 200, sweepJson(*report, q.filter, q.page));
                });
    server_.Get(R"(/api/sweeps/([^/]+)/fabric)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  auto parsed = parseFabricQuery(req.params);
                  if (auto* e = std::get_if<ParamError>(&parsed)) return sendParamError(res, *e);
                  const std::string& only = std::get<FabricQuery>(parsed).only_switch;
                  std::string id = req.matches[1];
                  if (!resolveSweepId(id, res)) return;
                  auto report = source_.sweep(id);
                  if (!report.ok()) return sendStatus(res, report.status());
                  sendFabricView(res, *report, only);
                });
    server_.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      if (auto e = parseNoParams(req.params)) return sendParamError(res, *e);
      std::optional<SweepReportData> last;
      auto id = latestSweepId(true);
      if (id.ok()) {
        auto report = source_.sweep(*id);
        if (report.ok()) {
          last = std::move(*report);
        } else if (report.status().code() != Code::kNotFound) {
          return sendStatus(res, report.status());
        }
      } else if (id.status().code() != Code::kNotFound) {
        return sendStatus(res, id.status());
      }
      res.set_content(metricsText(source_.workers(), last), "text/plain; version=0.0.4");
    });
  }

  // Any other /api/ path is a JSON 404; anything else is a file of the page (web/).
  void fallbackRoutes() {
    server_.Get("/api/.*", [](const httplib::Request& req, httplib::Response& res) {
      sendError(res, 404, "", "no API endpoint " + req.path,
                "use /api/workers, /api/results, /api/history, /api/compare, /api/summary, "
                "/api/sweeps, /api/sweeps/ID/fabric");
    });
    server_.Get("/.*", [](const httplib::Request& req, httplib::Response& res) {
      const web::Asset* a = web::findAsset(req.path);
      if (a == nullptr) {
        res.status = 404;
        res.set_content("not found: " + req.path + "\n", "text/plain; charset=utf-8");
        return;
      }
      // Nothing outside this server is ever loaded by the page.
      res.set_header("Content-Security-Policy",
                     "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
      res.set_content(reinterpret_cast<const char*>(a->data), a->size,
                      std::string(a->content_type));
    });
  }

  // A large answer (limit > kResultsPage) is sent as it is read: pages of kResultsPage rows
  // by keyset (ResultQuery::before_*), each turned into JSON and written before the next is
  // read, so the coordinator holds one page, not 10,000 rows and their JSON. The first page
  // is read before the status line, so a failing store still answers 503 with a body; a
  // failure after that closes the connection (the client sees a truncated answer, never a
  // short one that looks whole).
  void streamResults(const ResultQuery& q, httplib::Response& res) {
    struct Stream {
      ResultQuery page;
      uint32_t left = 0;
      std::vector<TestResult> rows;  // the page read, not yet written
      bool opened = false;           // "[" written
      bool any = false;              // a row written
      bool last = false;             // no page after `rows`
    };
    auto st = std::make_shared<Stream>();
    st->page = q;
    st->left = q.limit;
    auto read = [this](Stream& s) -> Status {
      s.page.limit = std::min(s.left, kResultsPage);
      auto rows = source_.results(s.page);
      if (!rows.ok()) return rows.status();
      s.rows = std::move(*rows);
      uint32_t stored = 0;
      for (const auto& r : s.rows) {
        if (r.id <= 0) continue;  // not stored yet (first page only)
        ++stored;
        s.page.before_started_ms = r.started_ms;
        s.page.before_id = r.id;
      }
      s.left -= std::min(s.left, stored);
      s.last = stored < s.page.limit || s.left == 0;
      return Status();
    };
    Status first = read(*st);
    if (!first.ok()) return sendStatus(res, first);
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json", [st, read](size_t /*offset*/, httplib::DataSink& sink) {
          std::string out = st->opened ? "" : "[";
          st->opened = true;
          for (const auto& r : st->rows) {
            if (st->any) out += ",";
            out += dump(toJson(r));
            st->any = true;
          }
          st->rows.clear();
          if (st->last) {
            out += "]";
            if (!sink.write(out.data(), out.size())) return false;
            sink.done();
            return true;
          }
          if (!out.empty() && !sink.write(out.data(), out.size())) return false;
          return read(*st).ok();  // false: httplib closes the connection
        });
  }

  // The fabric view of `report`: its links, and the hosts under each switch of the fabric the
  // source names for it (fabric_hosts.h); 404 when a `switch` filter names nothing in it.
  void sendFabricView(httplib::Response& res, const SweepReportData& report,
                      const std::string& only_switch) {
    const FabricHostTables hosts = fabricHostTables(
        source_.fabricOf(report.progress.id), source_.workers(), report.verdicts, report.suspects);
    json view = sweepFabricJson(report, hosts, only_switch);
    if (!only_switch.empty() && !fabricViewShows(view)) {
      return sendError(res, 404, "switch",
                       "no switch '" + cleanText(only_switch, 80) +
                           "' in the fabric view of sweep " + report.progress.id,
                       "give a switch the view lists (/api/sweeps/" + report.progress.id +
                           "/fabric without switch=)");
    }
    sendJson(res, 200, view);
  }

  // The newest sweep that has ended; unless `ended_only`, the newest of any state when none has.
  // The sweep an /api/sweeps/ID request names: `latest` resolved, a malformed id refused.
  // False once the error is in `res`.
  bool resolveSweepId(std::string& id, httplib::Response& res) {
    if (id == "latest") {
      auto latest = latestSweepId(false);
      if (!latest.ok()) {
        sendStatus(res, latest.status());
        return false;
      }
      id = *latest;
    } else if (!validSweepId(id)) {
      sendError(res, 400, "id", "sweep id '" + id + "' is not a sweep id",
                "give an id as /api/sweeps or `gdrmesh sweeps` lists it");
      return false;
    }
    return true;
  }

  Result<std::string> latestSweepId(bool ended_only) {
    GDR_ASSIGN_OR_RETURN(auto list, source_.sweeps(kLatestLookback));
    for (const auto& p : list) {
      if (ended(p.state)) return p.id;
    }
    if (!ended_only && !list.empty()) return list.front().id;
    return notFound("no sweep has " + std::string(ended_only ? "ended" : "been run") + " yet",
                    "run one with `gdrmesh sweep run --pattern all-pairs`");
  }

  StatusSource& source_;
  Clock& clock_;
  const RequestGateLimits limits_;
  GatedHttpServer server_;
  RequestGate gate_;  // last: stopped (its workers joined) before the server goes
};

RequestGateLimits StatusHttpServer::defaultLimits() {
  RequestGateLimits l;
  // One worker per core, 8 to 16: dozens of readers (dashboards, scripts, people) are served
  // in parallel. With 4, 40 concurrent readers on a 16-core host waited ~88 ms (median) for a
  // static file; with 32, readers took half the running sweep's pace and doubled the peak RSS
  // (tests/fault/load/readers_load.sh, docs/benchmarks.md). Slow clients never hold a worker:
  // the gate reads every request whole first.
  l.workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 8, 16);
  return l;
}

StatusHttpServer::StatusHttpServer(StatusSource& source, Clock& clock,
                                   std::shared_ptr<const HttpTokenGate> gate,
                                   std::optional<RequestGateLimits> limits)
    : impl_(std::make_unique<Impl>(source, clock, std::move(gate),
                                   limits ? *limits : defaultLimits())) {}

StatusHttpServer::~StatusHttpServer() {
  stop();
}

Result<int> StatusHttpServer::start(const std::string& host_port) {
  return impl_->start(host_port);
}

void StatusHttpServer::stop() {
  impl_->stop();
}

}  // namespace gdrmesh
