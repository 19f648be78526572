// `gdrmesh coordinator`: the gRPC services, the store and (optionally) the status page.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/cli.h"
#include "cli/control.h"
#include "cli/fabric_lldp.h"
#include "common/fabric/cover.h"
#include "common/fabric/fabric.h"
#include "common/fabric/host_match.h"
#include "common/log.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/actions/action_engine.h"
#include "coordinator/actions/command_runner.h"
#include "coordinator/actions/hooks.h"
#include "coordinator/actions/kubernetes_actuator.h"
#include "coordinator/actions/slurm_actuator.h"
#include "coordinator/config/config_yaml.h"
#include "coordinator/http/http_auth.h"
#include "coordinator/http/status_http_server.h"
#include "coordinator/orchestrator/fabric_source.h"
#include "coordinator/orchestrator/retention.h"
#include "coordinator/orchestrator/sweep_fabric.h"
#include "coordinator/service/coordinator_server.h"
#include "coordinator/store/db_holder.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh::cli {
namespace {

// What the status page shows: the live registry, the store (plus results the store has not
// accepted yet, as ListResults does) and the sweeps of the SweepManager.
class CoordinatorStatusSource final : public StatusSource {
 public:
  // `fabric` (null: none) and `lldp` (null: none): the coordinator's fabric, what the fabric
  // view's host tables are drawn on.
  CoordinatorStatusSource(CoordinatorServer& server, ResultRecords& store, Clock& clock,
                          std::shared_ptr<FabricSource> fabric,
                          std::shared_ptr<const fabric::EthFabric> lldp)
      : server_(server),
        store_(store),
        clock_(clock),
        fabric_(std::move(fabric)),
        lldp_(std::move(lldp)) {}
  std::vector<WorkerSummary> workers() override {
    std::vector<WorkerSummary> out;
    for (const auto& e : server_.registry().list()) {
      WorkerSummary w;
      w.name = e.name;
      w.state = e.state;
      w.last_heartbeat_ms = e.last_heartbeat_ms;
      w.connected_ms = e.connected_ms;
      w.peer = e.peer;
      w.active_tests = e.active_tests;
      w.inventory = e.inventory;
      out.push_back(std::move(w));
    }
    return out;
  }
  Result<std::vector<TestResult>> results(const ResultQuery& q) override {
    auto rows = store_.queryResults(q);
    if (!rows.ok()) return rows.status();
    std::vector<TestResult> out;
    // Results not stored yet are newer than any stored one: they lead the first page only.
    if (q.before_id > 0) return rows;
    for (auto& t : server_.unstored()) {
      bool worker_ok =
          q.worker.empty() || t.initiator.worker == q.worker || t.target.worker == q.worker;
      bool status_ok = !q.status || t.status == *q.status;
      bool run_ok = q.run_id.empty() || t.run_id == q.run_id;
      if (worker_ok && status_ok && run_ok) out.push_back(std::move(t));
    }
    out.insert(out.end(), rows->begin(), rows->end());
    return out;
  }
  Result<std::vector<SweepProgress>> sweeps(uint32_t limit) override {
    return server_.sweeps().list(limit);
  }
  // Without results: the page reads those through results(run_id = the sweep id).
  Result<SweepReportData> sweep(const std::string& id) override {
    return server_.sweeps().report(id);
  }
  Result<std::vector<TestResult>> history(const HistoryQuery& q) override {
    return server_.history().history(q);
  }
  Result<TestResult> result(const std::string& test_id) override {
    auto r = server_.history().result(test_id);
    if (r.ok() || r.status().code() != Code::kNotFound) return r;
    for (auto& t : server_.unstored()) {
      if (t.test_id == test_id) return std::move(t);  // not yet accepted by the store
    }
    return r;
  }
  Result<SweepComparison> compare(const std::string& a, const std::string& b,
                                  double tolerance_pct) override {
    return server_.history().compare(a, b, tolerance_pct);
  }
  int64_t unixMs() override { return clock_.unixMs(); }
  // The fabric of now for every sweep (a stored sweep keeps no snapshot of its own).
  FabricOfSweep fabricOf(const std::string& /*id*/) override {
    return {fabric_ ? fabric_->current() : nullptr, lldp_};
  }

 private:
  CoordinatorServer& server_;
  ResultRecords& store_;
  Clock& clock_;
  const std::shared_ptr<FabricSource> fabric_;
  const std::shared_ptr<const fabric::EthFabric> lldp_;
};

// Removes the database files a failed start created (the database did not exist before it):
// a coordinator that could not listen must not leave an empty database behind. Declared before
// the store, so it runs after the store has closed the file.
class NewDatabaseCleanup {
 public:
  explicit NewDatabaseCleanup(std::string db) : db_(std::move(db)) {
    std::error_code ec;
    armed_ =
        db_ != ":memory:" && !std::filesystem::exists(std::filesystem::symlink_status(db_, ec));
  }
  ~NewDatabaseCleanup() {
    if (!armed_) return;
    for (const char* suffix : {"", "-wal", "-shm", "-journal", ".spool", ".spool-reserve"}) {
      (void)std::remove((db_ + suffix).c_str());
    }
  }
  NewDatabaseCleanup(const NewDatabaseCleanup&) = delete;
  NewDatabaseCleanup& operator=(const NewDatabaseCleanup&) = delete;
  void keep() { armed_ = false; }

 private:
  const std::string db_;
  bool armed_ = false;
};

struct CoordinatorArgs {
  std::string listen = "127.0.0.1:7070";
  std::string db;
  std::string http;
  std::string http_token_file;
  bool http_allow_anonymous = false;
  std::string port_file;
  std::string max_size = "1GiB";
  int heartbeat_ms = 1000;
  std::string command_timeout = "10s";
  std::string register_deadline = "10s";
  std::string config;
  std::string fabric;           // "": the config's fabric:, else none
  std::string fabric_ca_order;  // "": the config's fabric_ca_order:, else none
  int retention_days = -1;      // -1: the config's retention.days (else keep everything)
  TlsArgs tls;
  bool insecure_allow_remote = false;
  std::string crl;
  int64_t test_db_max_pages = 0;  // TEST ONLY (hidden): 0 = no limit
  std::string log_format;         // "": the config's log.format, else text
  std::string log_level;          // "": the config's log.level, else info
};

// What the coordinator announces on stdout as it starts ("listening on ..."): unchanged in the
// text format (scripts read it); with --log-format json a line of the log instead, so that
// everything it writes is JSON.
// `text` is the whole stdout line, `msg` the log's message.
void announceCoordinator(const ComponentLog& log, const std::string& text, std::string msg,
                         LogFields fields = {}) {
  if (logFormat() == LogFormat::kJson) {
    log.info(std::move(msg), std::move(fields));
    return;
  }
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

std::string coordinatorPrefixed(const std::string& msg) {
  return "gdrmesh coordinator: " + msg;
}

// What a start is made of, read and checked before anything starts. A step that fails returns
// the line to log (the start then exits 2, usage), as it is printed.
using StartError = std::optional<std::string>;

struct CoordinatorSetup {
  CoordinatorOptions opts;
  CertInfo cert;
  std::shared_ptr<const HttpTokenGate> http_gate;
  RetentionOptions retention;
  ActionOptions actions;
  std::vector<HookOptions> hook_options;
  LogFormat log_format = LogFormat::kText;
  LogLevel log_level = LogLevel::kInfo;
  // The fabric snapshot's file and where it was named (--fabric, or the config's fabric:).
  std::string fabric_file;
  std::string fabric_origin;
  std::map<std::string, std::string> fabric_hosts;
  // OpenSM's compute-node order (--fabric-ca-order, or the config's fabric_ca_order:).
  std::string ca_order_file;
  std::string ca_order_origin;
};

// A file the config names, relative to the config file's folder, as an operator reads the file.
std::string besideConfig(const std::string& config, const std::string& name) {
  std::filesystem::path file(name);
  if (file.is_relative()) file = std::filesystem::path(config).parent_path() / file;
  return file.string();
}

// The log first: every line after this one is in its format (common/log.h). The config's `log:`
// applies once the config is read, where the command line names no value.
StartError setUpLog(const CoordinatorArgs& a, CoordinatorSetup& s) {
  if (!a.log_format.empty()) {
    auto f = parseLogFormat(a.log_format);
    if (!f.ok()) return coordinatorPrefixed(f.status().toString());
    s.log_format = *f;
  }
  if (!a.log_level.empty()) {
    auto l = parseLogLevel(a.log_level);
    if (!l.ok()) return coordinatorPrefixed(l.status().toString());
    s.log_level = *l;
  }
  configureLog(s.log_format, s.log_level);
  routeGrpcLog("coordinator");
  return std::nullopt;
}

// TLS, the certificate revocation list and plaintext's limits.
StartError readSecurity(const CoordinatorArgs& a, const ComponentLog& log, CoordinatorSetup& s) {
  s.opts.listen = a.listen;
  if (a.insecure_allow_remote && !a.tls.insecure) {
    return std::string("--insecure-allow-remote: only with --insecure");
  }
  auto tls = resolveTls(a.tls, {PeerRole::kCoordinator}, &s.cert);
  if (!tls.ok()) return tls.status().toString();
  s.opts.tls = *tls;
  s.opts.insecure_allow_remote = a.insecure_allow_remote;
  if (a.crl.empty()) return std::nullopt;
  if (!s.opts.tls) {
    return std::string(
        "--crl: only with TLS (--tls-dir); plaintext (--insecure) has no certificates to revoke");
  }
  // The newest list's number is kept beside the database: a restart refuses an older list as
  // the running coordinator does (security/revocation.h).
  RevocationList::Options crl_options;
  if (a.db != ":memory:") crl_options.state_path = a.db + ".crl-state";
  auto revoked = RevocationList::open(a.crl, s.opts.tls->ca_pem, crl_options);
  if (!revoked.ok()) return revoked.status().toString();
  s.opts.revoked = *revoked;
  const std::string msg =
      "revocation list " + a.crl + ": " + std::to_string(s.opts.revoked->size()) + " revoked";
  announceCoordinator(log, coordinatorPrefixed(msg), msg, {{"revoked", s.opts.revoked->size()}});
  return std::nullopt;
}

// The status page: a token file is read (and checked) before anything starts; a page on a
// non-loopback address without one needs --http-allow-anonymous.
StartError readHttp(const CoordinatorArgs& a, CoordinatorSetup& s) {
  if (a.http.empty() && (!a.http_token_file.empty() || a.http_allow_anonymous)) {
    return std::string(a.http_token_file.empty() ? "--http-allow-anonymous" : "--http-token-file") +
           ": only with --http HOST:PORT";
  }
  if (!a.http_token_file.empty() && a.http_allow_anonymous) {
    return std::string(
        "--http-token-file and --http-allow-anonymous contradict each other (fix: give one)");
  }
  if (!a.http_token_file.empty()) {
    auto gate = HttpTokenGate::fromFile(a.http_token_file);
    if (!gate.ok()) return gate.status().toString();
    s.http_gate = std::make_shared<const HttpTokenGate>(std::move(*gate));
  }
  if (!a.http.empty()) {
    Status st = checkHttpExposure(a.http, s.http_gate != nullptr, a.http_allow_anonymous);
    if (!st.ok()) return st.toString();
  }
  return std::nullopt;
}

// A duration option within [lo, hi] seconds; `range` says the range in the fix.
Result<double> durationOption(const std::string& value, const std::string& option, double lo,
                              double hi, const std::string& range) {
  auto d = parseDurationSeconds(value, option);
  if (d.ok() && (*d < lo || *d > hi)) {
    return invalidArgument(option + ": " + value + " is out of range", "give " + range);
  }
  return d;
}

// Heartbeats, the workers' deadlines and the largest message.
StartError readLimits(const CoordinatorArgs& a, CoordinatorSetup& s) {
  s.opts.heartbeat_interval_ms = a.heartbeat_ms;
  auto command_timeout =
      durationOption(a.command_timeout, "--command-timeout", 0.1, 3600, "100ms to 1h, e.g. 5s");
  if (!command_timeout.ok()) return command_timeout.status().toString();
  s.opts.pair.command_timeout_seconds = *command_timeout;
  auto register_deadline =
      durationOption(a.register_deadline, "--register-deadline", 1, 600, "1s to 10m, e.g. 30s");
  if (!register_deadline.ok()) return register_deadline.status().toString();
  s.opts.register_deadline_ms = static_cast<int>(*register_deadline * 1000);
  auto max = parseSize(a.max_size, "--max-size");
  if (!max.ok()) return max.status().toString();
  s.opts.limits.max_message_size = *max;
  return std::nullopt;
}

// --config (thresholds, schedules, retention, actions, hooks, log) and --retention-days.
StartError readConfig(const CoordinatorArgs& a, CoordinatorSetup& s) {
  s.opts.parse_config = [](const std::string& yaml) { return parseClusterConfig(yaml, "config"); };
  if (!a.config.empty()) {
    std::ifstream f(a.config);
    if (!f) return "--config " + a.config + ": cannot read the file";
    std::stringstream ss;
    ss << f.rdbuf();
    auto cfg = parseClusterConfig(ss.str(), a.config);
    if (!cfg.ok()) return "--config: " + cfg.status().toString();
    Status st = Scheduler::validate(cfg->schedules);
    if (!st.ok()) return "--config " + a.config + ": " + st.toString();
    if (cfg->log_format && a.log_format.empty()) s.log_format = *cfg->log_format;
    if (cfg->log_level && a.log_level.empty()) s.log_level = *cfg->log_level;
    configureLog(s.log_format, s.log_level);
    s.opts.config_yaml = ss.str();
    s.opts.schedules = cfg->schedules;
    s.retention = cfg->retention;
    s.actions = cfg->actions;
    s.hook_options = cfg->hooks;
    s.fabric_hosts = cfg->fabric_hosts;
    s.opts.sweeps.counters.reader = cfg->fabric_reader;
    s.opts.sweeps.counters.reset = cfg->fabric_counters_reset;
    s.opts.sweeps.counters.thresholds = cfg->fabric_thresholds;
    if (!cfg->fabric.empty()) {
      s.fabric_file = besideConfig(a.config, cfg->fabric);
      s.fabric_origin = "--config " + a.config + ": fabric";
    }
    if (!cfg->fabric_ca_order.empty()) {
      s.ca_order_file = besideConfig(a.config, cfg->fabric_ca_order);
      s.ca_order_origin = "--config " + a.config + ": fabric_ca_order";
    }
  }
  if (!a.fabric.empty()) {  // the command line wins
    s.fabric_file = a.fabric;
    s.fabric_origin = "--fabric";
  }
  if (!a.fabric_ca_order.empty()) {
    s.ca_order_file = a.fabric_ca_order;
    s.ca_order_origin = "--fabric-ca-order";
  }
  if (a.retention_days >= 0) s.retention.days = static_cast<uint32_t>(a.retention_days);
  if (Status st = validateRetention(s.retention); !st.ok()) {
    return "--retention-days: " + st.toString();
  }
  return std::nullopt;
}

// The fabric snapshot (--fabric or the config's fabric:): read and checked before anything starts.
StartError readFabric(const ComponentLog& log, CoordinatorSetup& s) {
  if (s.fabric_file.empty()) {
    if (!s.fabric_hosts.empty()) {
      return std::string(
          "fabric_hosts: given without a fabric (fix: add `fabric: FILE` to the config or "
          "--fabric FILE, a snapshot `gdrmesh fabric discover --save FILE` wrote)");
    }
    if (!s.opts.sweeps.counters.reader.empty()) {
      return std::string(
          "fabric_reader: given without a fabric (fix: add `fabric: FILE` to the config or "
          "--fabric FILE, a snapshot `gdrmesh fabric discover --save FILE` wrote)");
    }
    return std::nullopt;
  }
  if (auto eth = loadLldpSnapshotFile(s.fabric_file); !eth.ok() || eth->has_value()) {
    // RoCE: a snapshot `fabric discover --lldp` saved. No paths; the reports' coverage notes
    // are estimates (coordinator/orchestrator/sweep_lldp.h).
    if (!eth.ok()) return s.fabric_origin + " " + s.fabric_file + ": " + eth.status().toString();
    if (!s.opts.sweeps.counters.reader.empty()) {
      return s.fabric_origin + " " + s.fabric_file +
             ": an LLDP (RoCE) snapshot has no switch ports to read counters from (fix: drop "
             "fabric_reader:, it reads InfiniBand switches)";
    }
    const std::string msg = "fabric " + s.fabric_file + " (lldp): " + fabric::ethSummary(**eth) +
                            "; sweep reports estimate coverage from it";
    announceCoordinator(log, coordinatorPrefixed(msg), msg,
                        {{"fabric", s.fabric_file}, {"switches", (*eth)->switches.size()}});
    s.opts.sweeps.lldp_fabric = std::make_shared<const fabric::EthFabric>(std::move(**eth));
    return std::nullopt;
  }
  auto f = fabric::loadFabricFile(s.fabric_file);
  if (!f.ok()) {
    return s.fabric_origin + " " + s.fabric_file + ": " + f.status().toString() +
           " (fix: save a snapshot with `gdrmesh fabric discover --save FILE` and name it)";
  }
  if (f->routedLftEntries() == 0) {
    return s.fabric_origin + " " + s.fabric_file +
           ": the snapshot has no forwarding tables (discovered with --no-lfts?); paths need "
           "them (fix: `gdrmesh fabric discover --save FILE` without --no-lfts)";
  }
  const std::string msg =
      "fabric " + s.fabric_file + ": " + std::to_string(f->switches.size()) + " switches, " +
      std::to_string(f->hosts.size()) + " HCAs, " + std::to_string(f->links.size()) + " links" +
      (s.fabric_hosts.empty()
           ? std::string()
           : ", " + std::to_string(s.fabric_hosts.size()) + " fabric_hosts entries") +
      "; workers are matched to HCAs by node description as they register";
  announceCoordinator(log, coordinatorPrefixed(msg), msg,
                      {{"fabric", s.fabric_file}, {"switches", f->switches.size()}});
  s.opts.sweeps.fabric =
      std::make_shared<const SweepFabric>(std::move(*f), s.fabric_hosts, s.fabric_file);
  // A newer snapshot a discovery through this coordinator stores replaces it (fabric_source.h).
  s.opts.sweeps.fabric_source = std::make_shared<FabricSource>(s.opts.sweeps.fabric);
  return std::nullopt;
}

// OpenSM's compute-node order (--fabric-ca-order or the config's fabric_ca_order:): read and
// checked at start, only beside an InfiniBand fabric. A `cover` sweep's plan starts from it, as
// `gdrmesh sweep plan --ca-order` does.
StartError readCaOrder(const ComponentLog& log, CoordinatorSetup& s) {
  if (s.ca_order_file.empty()) return std::nullopt;
  const std::string named = s.ca_order_origin + " " + s.ca_order_file;
  if (!s.opts.sweeps.fabric) {
    return named +
           ": OpenSM's compute-node order needs an InfiniBand fabric (fix: add `fabric: FILE` or "
           "--fabric FILE, a snapshot `gdrmesh fabric discover --save FILE` wrote)";
  }
  std::ifstream in(s.ca_order_file);
  if (!in) {
    return named +
           ": cannot be read (fix: name the opensm-ftree-ca-order.dump OpenSM's ftree writes in "
           "its log file's folder, /var/log by default)";
  }
  std::stringstream text;
  text << in.rdbuf();
  auto order = fabric::parseFtreeCaOrder(text.str());
  if (!order.ok()) return named + ": " + order.status().toString();
  const std::string msg = "fabric: cover sweeps start from OpenSM's compute-node order " +
                          s.ca_order_file + " (" + std::to_string(order->size()) + " nodes)";
  announceCoordinator(log, coordinatorPrefixed(msg), msg, {{"ca_order", s.ca_order_file}});
  s.opts.sweeps.fabric_ca_order = std::move(*order);
  s.opts.sweeps.fabric_ca_order_file = s.ca_order_file;
  return std::nullopt;
}

// At start, the fabric against the workers this database knows (they register again soon): what
// has no HCA, what HCA has no worker, and mapping entries that name nothing. Each sweep's report
// says it again for the workers of its time.
void logFabricMatch(const SweepFabric& fabric, WorkerRecords& store, const ComponentLog& log) {
  auto known = store.listWorkers();
  if (!known.ok()) {
    log.warn("fabric: the known workers could not be read: " + known.status().toString());
    return;
  }
  std::vector<fabric::WorkerHost> hosts;
  hosts.reserve(known->size());
  for (const WorkerRecord& w : *known) hosts.push_back({w.name, w.hostname});
  const fabric::HostMatch m = fabric::matchHosts(fabric.fabric(), hosts, fabric.hostMapping());
  const std::string line = fabric::describeMatch(m, hosts.size()) +
                           " (the workers this database knows, against " + fabric.source() + ")";
  if (m.workers_without_hca.empty() && m.hcas_without_worker.empty() && m.problems.empty()) {
    log.info(line);
  } else {
    log.warn(line);
  }
}

// One database has one coordinator: the lock comes before the schema, the spool, the markers of
// tests in flight and any sweep to resume are touched (issue #22).
StartError holdDatabase(const CoordinatorArgs& a, const ComponentLog& log,
                        std::unique_ptr<DatabaseHolder>& holder) {
  if (a.db == ":memory:") return std::nullopt;
  auto held = DatabaseHolder::acquire(a.db);
  if (!held.ok()) return "--db " + a.db + ": " + held.status().toString();
  holder = std::move(*held);
  if (const auto& gone = holder->previous()) {
    log.warn("--db " + a.db + ": taking over from a coordinator that ended without releasing it (" +
             gone->describe() + "; its lock was free, so its process is gone)");
  }
  return std::nullopt;
}

// The database, its schema brought up to date, and the spool beside it.
StartError openStore(const CoordinatorArgs& a, CoordinatorSetup& s,
                     std::unique_ptr<SqliteStore>& store) {
  auto opened = SqliteStore::open(a.db);
  if (!opened.ok()) return "--db " + a.db + ": " + opened.status().toString();
  store = std::move(*opened);
  s.opts.spool_path = ResultSpool::spoolPathFor(a.db);
  if (a.test_db_max_pages > 0) {
    // TEST ONLY: a database that cannot grow past this many pages (a full disk, unprivileged).
    Status st = store->setMaxPageCountForTesting(a.test_db_max_pages);
    if (!st.ok()) return "--test-db-max-pages: " + st.toString();
  }
  return std::nullopt;
}

// Every worker, client and pending connection holds a descriptor: the soft open-file limit (often
// 1024) goes up to the hard one (systemd unit: LimitNOFILE), both logged.
void raiseFileLimit(const ComponentLog& log) {
  auto files = raiseOpenFileLimit();
  if (!files.ok()) {
    log.warn(files.status().toString());
    return;
  }
  const std::string msg = "open-file limit " + std::to_string(files->soft) + " (was " +
                          std::to_string(files->soft_before) + "; hard limit " +
                          std::to_string(files->hard) + ")";
  announceCoordinator(log, coordinatorPrefixed(msg), msg);
}

// Acting on verdicts (`actions:` in --config, off unless turned on) and hooks (`hooks:`: told of
// every sweep's end and of suspects appearing and clearing, on their own thread).
class Reactions {
 public:
  Reactions(const CoordinatorSetup& s, Store& store, Clock& clock, const ComponentLog& log)
      : runner_(clock), hook_transport_(runner_) {
    const ActionOptions& actions = s.actions;
    if (actions.mode != ActionOptions::Mode::kOff) {
      if (actions.actuator == "slurm") {
        actuator_ = std::make_unique<SlurmActuator>(runner_, actions.scontrol,
                                                    actions.command_timeout_seconds);
      } else {
        kube_api_ = makeKubeApi(actions.kubernetes_api, actions.kubernetes_token_file,
                                actions.kubernetes_ca_file, actions.command_timeout_seconds);
        actuator_ = std::make_unique<KubernetesActuator>(*kube_api_);
      }
      engine_ = std::make_unique<ActionEngine>(actions, *actuator_, store, clock);
      char breaker[96];
      std::snprintf(breaker, sizeof(breaker),
                    "at most %g %% of the cluster's hosts drained within %g s",
                    actions.max_share * 100, actions.window_seconds);
      const std::string msg = std::string("actions ") + toString(actions.mode) + " through " +
                              actuator_->name() + " (circuit breaker: " + breaker + ")";
      announceCoordinator(log, coordinatorPrefixed(msg), msg,
                          {{"mode", toString(actions.mode)}, {"actuator", actuator_->name()}});
    }
    if (!s.hook_options.empty()) {
      hooks_ =
          std::make_unique<Hooks>(s.hook_options, hook_transport_, clock, Hooks::Logger(), &store);
      const std::string msg =
          std::to_string(s.hook_options.size()) + " hook(s) told of sweep ends and suspects";
      announceCoordinator(log, coordinatorPrefixed(msg), msg);
    }
  }

  // The sweeps' end callback, or none when neither acts.
  std::function<std::vector<std::string>(const SweepEnding&)> onEnd() const {
    if (!engine_ && !hooks_) return {};
    return [engine = engine_.get(), h = hooks_.get()](const SweepEnding& end) {
      std::vector<std::string> lines;
      if (engine) lines = engine->onSweepEnd(end);
      if (h) h->onSweepEnd(end, lines);
      return lines;
    };
  }

 private:
  ProcessRunner runner_;
  std::unique_ptr<KubeApi> kube_api_;
  std::unique_ptr<Actuator> actuator_;
  std::unique_ptr<ActionEngine> engine_;
  DefaultHookTransport hook_transport_;
  std::unique_ptr<Hooks> hooks_;
};

// Says where the coordinator listens (the log, the database's holder record, --port-file).
void announceListening(const CoordinatorArgs& a, const CoordinatorSetup& s, int port,
                       DatabaseHolder* holder, const ComponentLog& log) {
  const std::string host = a.listen.substr(0, a.listen.rfind(':'));
  const std::string where = host + ":" + std::to_string(port);
  if (holder != nullptr) {
    if (Status st = holder->announce(where); !st.ok()) log.error(st.toString());
  }
  const std::string msg = "listening on " + where + " (db " + a.db + ", " +
                          (s.opts.tls ? "mutual TLS as " + s.cert.identity.describe()
                                      : std::string("PLAINTEXT, no authentication (--insecure)")) +
                          ")";
  announceCoordinator(log, "gdrmesh coordinator " + msg, msg, {{"listen", where}, {"db", a.db}});
  if (!a.port_file.empty()) {
    std::string tmp = a.port_file + ".tmp";
    {
      std::ofstream f(tmp);
      f << port << "\n";
    }
    std::rename(tmp.c_str(), a.port_file.c_str());
  }
}

// Serves until SIGINT or SIGTERM: the gRPC server, the status page, retention.
int serve(const CoordinatorArgs& a, CoordinatorSetup& s, DatabaseHolder* holder, SqliteStore& store,
          SystemClock& clock, const ComponentLog& startup_log, NewDatabaseCleanup& cleanup) {
  const ComponentLog log("coordinator", &clock);
  Reactions reactions(s, store, clock, log);
  s.opts.sweeps.on_end = reactions.onEnd();
  s.opts.action_store = &store;
  if (s.opts.sweeps.fabric) {
    s.opts.sweeps.paths = &store;
    s.opts.sweeps.link_counters = &store;
  }
  s.opts.fabric_history = &store;
  CoordinatorServer server(s.opts, store, store, clock);
  auto port = server.start();
  if (!port.ok()) {
    startup_log.error("--listen: " + port.status().toString());
    return kExitUsage;
  }
  // After the start: the fabric the sweeps use may be a stored snapshot adopted again.
  if (s.opts.sweeps.fabric_source) {
    if (auto current = s.opts.sweeps.fabric_source->current()) logFabricMatch(*current, store, log);
  }
  cleanup.keep();
  announceListening(a, s, *port, holder, startup_log);
  CoordinatorStatusSource source(server, store, clock, s.opts.sweeps.fabric_source,
                                 s.opts.sweeps.lldp_fabric);
  StatusHttpServer http(source, clock, s.http_gate);
  if (!a.http.empty()) {
    auto hp = http.start(a.http);
    if (!hp.ok()) {
      startup_log.error(hp.status().toString());
      server.shutdown();
      return kExitUsage;
    }
    std::string hh = a.http.substr(0, a.http.rfind(':'));
    const std::string msg = "status page on http://" + hh + ":" + std::to_string(*hp) + "/ (" +
                            (s.http_gate ? "reader token required" : "no authentication") + ")";
    announceCoordinator(log, "gdrmesh " + msg, msg, {{"http", hh + ":" + std::to_string(*hp)}});
  }
  // Raw rows older than the retention are deleted in short batches (hourly by default); every
  // ended sweep's aggregates are kept.
  Retention retainer(clock, store, store, s.retention, &store);
  if (s.retention.days > 0) {
    retainer.start();
    const std::string msg = "keeping raw results " + std::to_string(s.retention.days) +
                            " days (per-sweep aggregates forever)";
    announceCoordinator(log, coordinatorPrefixed(msg), msg);
  }
  TerminationSignalThread signals([&] { server.shutdown(); });
  server.wait();
  retainer.stop();
  http.stop();
  log.info("stopped");
  return kExitOk;
}

int runCoordinator(const CoordinatorArgs& a) {
  CoordinatorSetup s;
  if (StartError e = setUpLog(a, s)) {
    std::fprintf(stderr, "%s\n", e->c_str());
    return kExitUsage;
  }
  // The coordinator's lines before its clock exists (refused options, the database) and after.
  const ComponentLog startup_log("coordinator");
  StartError e = readSecurity(a, startup_log, s);
  if (!e) e = readHttp(a, s);
  if (!e) e = readLimits(a, s);
  if (!e) e = readConfig(a, s);
  if (!e) e = readFabric(startup_log, s);
  if (!e) e = readCaOrder(startup_log, s);
  // A file over the file-size limit (ulimit -f) is a write error (EFBIG) the store reports and
  // the writer spools and retries, never a signal that kills the coordinator with results
  // answered and not stored. Before any file is opened.
  if (!e) std::signal(SIGXFSZ, SIG_IGN);
  std::unique_ptr<DatabaseHolder> holder;
  if (!e) e = holdDatabase(a, startup_log, holder);
  if (e) {
    startup_log.error(*e);
    return kExitUsage;
  }
  // A start that fails before it listens leaves no new database behind: declared before the
  // store, so it acts once the store has closed the file, and after the holder's lock.
  NewDatabaseCleanup cleanup(a.db);
  std::unique_ptr<SqliteStore> store;
  if (StartError opened = openStore(a, s, store)) {
    startup_log.error(*opened);
    return kExitUsage;
  }
  raiseFileLimit(startup_log);
  blockTerminationSignals();
  SystemClock clock;
  return serve(a, s, holder.get(), *store, clock, startup_log, cleanup);
}

}  // namespace

void registerCoordinator(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("coordinator", "Run the coordinator (gRPC server, results DB)");
  auto a = std::make_shared<CoordinatorArgs>();
  cmd->add_option("--listen", a->listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--db", a->db, "SQLite results database file (created if missing)")->required();
  cmd->add_option("--http", a->http, "HOST:PORT for the status page (off when not given)");
  cmd->add_option("--http-token-file", a->http_token_file,
                  "the status page's reader token: every request must send it (Authorization: "
                  "Bearer TOKEN, or the cookie /login?token=TOKEN sets); mode 600")
      ->group("Security (docs/security.md)");
  cmd->add_flag("--http-allow-anonymous", a->http_allow_anonymous,
                "serve the status page without a token on a non-loopback --http address "
                "(whoever reaches it reads every worker, result and sweep)")
      ->group("Security (docs/security.md)");
  cmd->add_option("--port-file", a->port_file, "write the bound gRPC port to this file");
  cmd->add_option("--max-size", a->max_size, "largest message size a test may ask for")
      ->capture_default_str();
  cmd->add_option("--config", a->config,
                  "cluster config (YAML, docs/config.md): default thresholds and schedules");
  cmd->add_option("--fabric", a->fabric,
                  "InfiniBand fabric snapshot (`gdrmesh fabric discover --save FILE`): each "
                  "test's path is stored, slow pairs sharing a link blame it, sweeps report "
                  "link coverage (docs/fabric.md); overrides the config's fabric:");
  cmd->add_option("--fabric-ca-order", a->fabric_ca_order,
                  "OpenSM's opensm-ftree-ca-order.dump: `cover` sweeps start from it as `sweep "
                  "plan --ca-order` does (docs/fabric.md); overrides the config's "
                  "fabric_ca_order:");
  cmd->add_option("--retention-days", a->retention_days,
                  "delete raw result rows older than N days (0: keep all; per-sweep aggregates "
                  "are kept forever); overrides the config's retention.days")
      ->check(CLI::Range(0, 36500));
  cmd->add_option("--heartbeat-ms", a->heartbeat_ms, "worker heartbeat interval")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  cmd->add_option("--command-timeout", a->command_timeout,
                  "how long a worker may take to answer one command of a pair test (prepare, "
                  "connect, verify, release; a run gets its own timeout on top); a worker that "
                  "never answers fails its test after this long (100ms to 1h)")
      ->capture_default_str();
  cmd->add_option("--register-deadline", a->register_deadline,
                  "how long a new worker stream may take to send its Register message before it "
                  "is closed (a connection that never registers holds a slot; 1s to 10m; raise "
                  "it for very large inventories over slow links)")
      ->capture_default_str();
  cmd->add_option("--log-format", a->log_format,
                  "the log on stderr: text (lines as a terminal reads them) or json (one JSON "
                  "object per line: ts, level, component, msg and the line's fields; the "
                  "startup announcements too); default: the config's log.format, else text")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", a->log_level,
                  "the lowest level logged: debug, info, warn or error; default: the config's "
                  "log.level, else info")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  cmd->add_option("--test-db-max-pages", a->test_db_max_pages,
                  "TEST ONLY: the database may not grow past N pages (a full disk)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->group("");
  addTlsOptions(cmd, &a->tls, /*env_insecure=*/false);
  cmd->add_option("--crl", a->crl,
                  "the cluster CA's revocation list (crl.pem of `gdrmesh certs revoke`): its "
                  "certificates are refused, and read again whenever the file changes; a list "
                  "older than the newest used (kept in DB.crl-state) is refused")
      ->group("Security (docs/security.md)");
  cmd->add_flag("--insecure-allow-remote", a->insecure_allow_remote,
                "with --insecure: allow plaintext on a non-loopback --listen address (anyone "
                "who reaches it can register workers and start tests)")
      ->group("Security (docs/security.md)");
  cmd->callback([action, a] { *action = [a] { return runCoordinator(*a); }; });
}

}  // namespace gdrmesh::cli
