#include "coordinator/http/status_http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "common/json.h"
#include "common/units.h"
#include "web/web_assets.h"

namespace gdrmesh {
namespace {

using nlohmann::json;

constexpr uint32_t kMaxLimit = 10000;
constexpr uint32_t kResultsDefaultLimit = 50;
constexpr uint32_t kSummaryDefaultLimit = 500;
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

void sendStatus(httplib::Response& res, const Status& st) {
  int http = 500;
  if (st.code() == Code::kInvalidArgument) http = 400;
  if (st.code() == Code::kUnavailable || st.code() == Code::kResourceExhausted) http = 503;
  sendError(res, http, "", st.toString(), st.fix());
}

bool validWorkerName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// A query parameter error: the name of the parameter, what is wrong, the fix.
struct ParamError {
  std::string parameter;
  std::string message;
  std::string fix;
};

// Rejects parameters outside `allowed` and repeated ones.
std::optional<ParamError> checkParams(const httplib::Request& req,
                                      const std::set<std::string>& allowed) {
  std::string names;
  for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
  for (const auto& [key, value] : req.params) {
    if (allowed.count(key) == 0) {
      return ParamError{
          key, "unknown query parameter '" + key + "'",
          allowed.empty() ? "this endpoint takes no parameters" : "use only: " + names};
    }
    if (req.get_param_value_count(key) > 1) {
      return ParamError{key, "query parameter '" + key + "' given more than once", "give it once"};
    }
  }
  return std::nullopt;
}

std::optional<ParamError> parseLimit(const httplib::Request& req, uint32_t* limit) {
  if (!req.has_param("limit")) return std::nullopt;
  const std::string v = req.get_param_value("limit");
  const std::string fix = "give a whole number from 1 to " + std::to_string(kMaxLimit);
  if (v.empty() || v.size() > 6 ||
      !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return ParamError{"limit", "limit '" + v + "' is not a number", fix};
  }
  const unsigned long n = std::stoul(v);
  if (n < 1 || n > kMaxLimit) {
    return ParamError{"limit", "limit " + v + " is out of range", fix};
  }
  *limit = static_cast<uint32_t>(n);
  return std::nullopt;
}

std::optional<ParamError> parseResultQuery(const httplib::Request& req, ResultQuery* q) {
  if (auto e = checkParams(req, {"limit", "worker", "status", "run_id"})) return e;
  q->limit = kResultsDefaultLimit;
  if (auto e = parseLimit(req, &q->limit)) return e;
  if (req.has_param("worker")) {
    q->worker = req.get_param_value("worker");
    if (!validWorkerName(q->worker)) {
      return ParamError{"worker", "worker '" + q->worker + "' is not a worker name",
                        "use 1-64 characters from A-Z a-z 0-9 . _ -, as `gdrmesh workers` "
                        "lists them"};
    }
  }
  if (req.has_param("status")) {
    std::string v = req.get_param_value("status");
    std::string upper = v;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) {
      return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    });
    auto st = parseTestStatus(upper);
    if (!st) {
      return ParamError{"status", "status '" + v + "' is not a test status",
                        "use one of passed, failed, skipped, error"};
    }
    q->status = *st;
  }
  if (req.has_param("run_id")) {
    q->run_id = req.get_param_value("run_id");
    if (q->run_id.size() > 128 || std::any_of(q->run_id.begin(), q->run_id.end(), [](char c) {
          return std::iscntrl(static_cast<unsigned char>(c)) != 0;
        })) {
      return ParamError{"run_id",
                        "run_id is longer than 128 characters or holds control characters",
                        "give a run id as `gdrmesh results` prints it"};
    }
  }
  return std::nullopt;
}

// Which way the bytes of a result moved, for the summary.
const char* dataPathClass(const TestResult& r) {
  if (r.transport == TransportKind::kEmulated) return "emulated";
  if (r.gpudirect()) return "gpudirect";
  if (r.initiator.reg_path == RegPath::kStaged || r.target.reg_path == RegPath::kStaged) {
    return "staged";
  }
  return "rdma_host";
}

const char* statusKey(TestStatus s) {
  switch (s) {
    case TestStatus::kPassed:
      return "passed";
    case TestStatus::kFailed:
      return "failed";
    case TestStatus::kSkipped:
      return "skipped";
    case TestStatus::kError:
      return "error";
  }
  return "error";
}

json statusCounts() {
  return {{"passed", 0}, {"failed", 0}, {"skipped", 0}, {"error", 0}};
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

}  // namespace

json workersJson(const std::vector<WorkerSummary>& workers) {
  return toJson(workers);
}

json summaryJson(const std::vector<WorkerSummary>& workers, const std::vector<TestResult>& results,
                 uint32_t limit) {
  json j;
  j["generated"] = nowRfc3339();
  int online = 0;
  for (const auto& w : workers) online += w.state == "online" ? 1 : 0;
  j["workers"] = {{"total", workers.size()},
                  {"online", online},
                  {"offline", static_cast<int>(workers.size()) - online}};

  json by_status = statusCounts();
  json data_path{{"gpudirect", 0}, {"rdma_host", 0}, {"staged", 0}, {"emulated", 0}};
  // Every known worker is listed, with or without results.
  std::map<std::string, json> per_worker;
  for (const auto& w : workers) per_worker[w.name] = statusCounts();
  int64_t latest_ms = 0;
  for (const auto& r : results) {
    const char* key = statusKey(r.status);
    by_status[key] = by_status[key].get<int>() + 1;
    const char* path = dataPathClass(r);
    data_path[path] = data_path[path].get<int>() + 1;
    std::set<std::string> sides{r.initiator.worker, r.target.worker};
    for (const auto& name : sides) {
      if (name.empty()) continue;
      auto it = per_worker.try_emplace(name, statusCounts()).first;
      it->second[key] = it->second[key].get<int>() + 1;
    }
    latest_ms = std::max(latest_ms, r.started_ms);
  }
  j["results"] = {{"considered", results.size()}, {"limit", limit}, {"by_status", by_status}};
  j["latest_started"] = latest_ms ? formatRfc3339(latest_ms) : "";
  j["data_path"] = data_path;
  j["per_worker"] = json::array();
  for (auto& [name, counts] : per_worker) {
    json row = counts;
    row["worker"] = name;
    j["per_worker"].push_back(std::move(row));
  }
  return j;
}

class StatusHttpServer::Impl {
 public:
  explicit Impl(StatusSource& source) : source_(source) { routes(); }

  Result<int> start(const std::string& host_port) {
    if (thread_.joinable()) {
      return Status(Code::kFailedPrecondition, "the status page server is already started",
                    "call stop() first");
    }
    GDR_ASSIGN_OR_RETURN(auto hp, parseHostPort(host_port));
    int port = 0;
    if (hp.second == 0) {
      port = server_.bind_to_any_port(hp.first);
    } else if (server_.bind_to_port(hp.first, hp.second)) {
      port = hp.second;
    } else {
      port = -1;
    }
    if (port <= 0) {
      return unavailable("--http " + host_port +
                             ": cannot listen there (the address is not local or does not "
                             "resolve, or the port is in use)",
                         kHttpFix);
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib's stop() only works once the accept loop runs: wait for it (bounded).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!server_.is_running()) {
      stop();
      return internalError("the status page server did not start within 10 s on " + host_port);
    }
    return port;
  }

  void stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

 private:
  void routes() {
    // A small pool: the page is read by a few people, not served at scale.
    server_.new_task_queue = [] { return new httplib::ThreadPool(4); };
    // Short keep-alive so that stop() does not wait long on idle browser connections.
    server_.set_keep_alive_timeout(1);
    server_.set_read_timeout(5, 0);
    server_.set_write_timeout(5, 0);
    server_.set_payload_max_length(64 * 1024);
    // httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port
    // without an error: keep only SO_REUSEADDR (restart while old connections linger).
    server_.set_socket_options([](socket_t sock) {
      int yes = 1;
      (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_.set_default_headers({{"Cache-Control", "no-store"},
                                 {"X-Content-Type-Options", "nosniff"},
                                 {"X-Frame-Options", "DENY"},
                                 {"Referrer-Policy", "no-referrer"}});
    server_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
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

    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain; charset=utf-8");
    });
    server_.Get("/api/workers", [this](const httplib::Request& req, httplib::Response& res) {
      if (auto e = checkParams(req, {}))
        return sendError(res, 400, e->parameter, e->message, e->fix);
      sendJson(res, 200, workersJson(source_.workers()));
    });
    server_.Get("/api/results", [this](const httplib::Request& req, httplib::Response& res) {
      ResultQuery q;
      if (auto e = parseResultQuery(req, &q)) {
        return sendError(res, 400, e->parameter, e->message, e->fix);
      }
      auto rows = source_.results(q);
      if (!rows.ok()) return sendStatus(res, rows.status());
      json j = json::array();
      for (const auto& r : *rows) j.push_back(toJson(r));
      sendJson(res, 200, j);
    });
    server_.Get("/api/summary", [this](const httplib::Request& req, httplib::Response& res) {
      ResultQuery q;
      q.limit = kSummaryDefaultLimit;
      if (auto e = checkParams(req, {"limit"})) {
        return sendError(res, 400, e->parameter, e->message, e->fix);
      }
      if (auto e = parseLimit(req, &q.limit)) {
        return sendError(res, 400, e->parameter, e->message, e->fix);
      }
      auto rows = source_.results(q);
      if (!rows.ok()) return sendStatus(res, rows.status());
      sendJson(res, 200, summaryJson(source_.workers(), *rows, q.limit));
    });
    server_.Get("/api/.*", [](const httplib::Request& req, httplib::Response& res) {
      sendError(res, 404, "", "no API endpoint " + req.path,
                "use /api/workers, /api/results, /api/summary");
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

  StatusSource& source_;
  httplib::Server server_;
  std::thread thread_;
};

StatusHttpServer::StatusHttpServer(StatusSource& source) : impl_(std::make_unique<Impl>(source)) {}

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
