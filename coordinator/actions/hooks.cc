#include "coordinator/actions/hooks.h"

#include <httplib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "common/log.h"
#include "common/sync/mutex.h"

namespace gdrmesh {

namespace {

// The hosts a suspect names: a host, the host of a NIC, both ends of a link.
std::vector<std::string> hookSuspectHosts(const std::string& kind, const std::string& name) {
  std::vector<std::string> out;
  if (kind == "threshold") return out;
  const size_t arrow = name.find("<->");
  if (arrow == std::string::npos) {
    out.push_back(name.substr(0, name.find('/')));
    return out;
  }
  for (const std::string& end : {name.substr(0, arrow), name.substr(arrow + 3)}) {
    out.push_back(end.substr(0, end.find('/')));
  }
  return out;
}

nlohmann::json hookSuspectJson(const Suspect& s) {
  return {{"kind", s.kind}, {"name", s.name}, {"score", s.score}, {"evidence", s.evidence}};
}

// "http://host:port/path" -> ("http://host:port", "/path").
std::pair<std::string, std::string> splitHookUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return {url, "/"};
  return {url.substr(0, slash), url.substr(slash)};
}

}  // namespace

std::vector<std::string> hookEvents(const SweepEnding& end, const std::vector<std::string>& actions,
                                    std::set<std::string>* previous) {
  nlohmann::json suspects = nlohmann::json::array();
  for (const Suspect& s : end.suspects) suspects.push_back(hookSuspectJson(s));
  const nlohmann::json sweep = {{"id", end.sweep_id},     {"state", toString(end.state)},
                                {"verdict", end.verdict}, {"reason", end.reason},
                                {"hosts", end.hosts},     {"suspects", suspects},
                                {"actions", actions}};
  std::vector<std::string> out;
  out.push_back(nlohmann::json{{"event", "sweep-end"}, {"sweep", sweep}}.dump());
  if (end.state != SweepState::kFinished) return out;
  std::set<std::string> now;  // "kind name"
  for (const Suspect& s : end.suspects) {
    const std::string key = s.kind + " " + s.name;
    now.insert(key);
    if (!previous->count(key)) {
      out.push_back(nlohmann::json{
          {"event", "suspect-appeared"}, {"sweep", sweep}, {"suspect", hookSuspectJson(s)}}
                        .dump());
    }
  }
  const std::set<std::string> tested(end.hosts.begin(), end.hosts.end());
  std::set<std::string> kept = now;
  for (const std::string& key : *previous) {
    if (now.count(key)) continue;
    const std::string kind = key.substr(0, key.find(' '));
    const std::string name = key.substr(key.find(' ') + 1);
    bool all_tested = true;
    for (const auto& h : hookSuspectHosts(kind, name)) all_tested = all_tested && tested.count(h);
    if (!all_tested) {
      kept.insert(key);  // not tested this time: neither cleared nor forgotten
      continue;
    }
    out.push_back(nlohmann::json{{"event", "suspect-cleared"},
                                 {"sweep", sweep},
                                 {"suspect", {{"kind", kind}, {"name", name}}}}
                      .dump());
  }
  *previous = std::move(kept);
  return out;
}

Status DefaultHookTransport::deliver(const HookOptions& hook, const std::string& json) {
  if (!hook.command.empty()) {
    GDR_ASSIGN_OR_RETURN(CommandOutput out, runner_.run(hook.command, hook.timeout_seconds, json));
    if (out.exit_code != 0) {
      std::string why = out.err.empty() ? out.out : out.err;
      if (why.size() > 300) why.resize(300);
      return unavailable(describeArgv(hook.command) + ": exit " + std::to_string(out.exit_code) +
                             (why.empty() ? "" : ": " + why),
                         "the hook command must read the event's JSON on stdin and exit 0");
    }
    return Status::okStatus();
  }
  httplib::Headers headers;
  if (!hook.token_file.empty()) {
    std::ifstream f(hook.token_file);
    if (!f) {
      return failedPrecondition(
          "hook " + hook.url + ": token_file " + hook.token_file + ": cannot read it",
          "give a readable file holding the bearer token");
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string token = ss.str();
    while (!token.empty() &&
           (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
      token.pop_back();
    }
    headers.emplace("Authorization", "Bearer " + token);
  }
  const auto [base, path] = splitHookUrl(hook.url);
  httplib::Client client(base);
  // Real time on purpose: the HTTP client's socket timeouts, not a coordinator timer.
  const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::duration<double>(hook.timeout_seconds));
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  auto res = client.Post(path, headers, json, "application/json");
  if (!res) {
    return unavailable("hook POST " + hook.url + ": " + httplib::to_string(res.error()),
                       "check that the receiver listens at that address");
  }
  if (res->status < 200 || res->status >= 300) {
    return unavailable("hook POST " + hook.url + ": HTTP " + std::to_string(res->status),
                       "the receiver must answer 2xx");
  }
  return Status::okStatus();
}

Hooks::Hooks(std::vector<HookOptions> hooks, HookTransport& transport, Clock& clock, Logger log,
             HookStateStore* state)
    : hooks_(std::move(hooks)),
      transport_(transport),
      clock_(clock),
      log_(std::move(log)),
      state_(state),
      waiting_(hooks_.size(), 0) {
  if (!log_) {
    log_ = [&clock](const std::string& line) { ComponentLog("coordinator", &clock).warn(line); };
  }
  if (state_ != nullptr) {
    auto known = state_->hookSuspects();
    if (known.ok()) {
      previous_ = std::move(*known);
    } else {
      log_("hooks: cannot read the suspects last announced (" + known.status().toString() +
           "); every suspect of the next sweep is announced as new");
    }
  }
  thread_ = std::thread([this] { loop(); });
}

Hooks::~Hooks() {
  line_.close();  // no retry timer reaches this object from now on
  std::set<Clock::TimerId> timers;
  size_t dropped = 0;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    timers.swap(timers_);
    for (size_t w : waiting_) dropped += w;
  }
  cv_.notify_all();
  for (Clock::TimerId t : timers) clock_.cancel(t);
  if (thread_.joinable()) thread_.join();
  if (dropped > 0) {
    log_("hooks: " + std::to_string(dropped) + " event(s) not delivered at shutdown");
  }
}

void Hooks::push(Item item) {
  ready_.push_back(std::move(item));
  cv_.notify_all();
}

void Hooks::onSweepEnd(const SweepEnding& end, const std::vector<std::string>& actions) {
  MutexLock lock(mu_);
  const std::set<std::string> before = previous_;
  const std::vector<std::string> events = hookEvents(end, actions, &previous_);
  if (state_ != nullptr && previous_ != before) {
    if (Status st = state_->setHookSuspects(previous_); !st.ok()) {
      log_("hooks: cannot keep the suspects announced (" + st.toString() +
           "); a restart announces them again");
    }
  }
  for (size_t h = 0; h < hooks_.size(); ++h) {
    for (const std::string& e : events) {
      if (waiting_[h] >= static_cast<size_t>(hooks_[h].queue_limit)) {
        ++counters_.dropped;
        log_("hooks: " + (hooks_[h].url.empty() ? describeArgv(hooks_[h].command) : hooks_[h].url) +
             ": " + std::to_string(waiting_[h]) + " events waiting already; dropped one of sweep " +
             end.sweep_id);
        continue;
      }
      ++waiting_[h];
      push({h, e, 0});
    }
  }
}

void Hooks::loop() {
  UniqueLock lock(mu_);
  while (true) {
    cv_.wait(lock.native(),
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !ready_.empty(); });
    if (stopping_) return;
    Item item = std::move(ready_.front());
    ready_.pop_front();
    ++busy_;
    lock.unlock();
    const HookOptions& hook = hooks_[item.hook];
    const Status st = transport_.deliver(hook, item.json);
    ++item.tries;
    const std::string name = hook.url.empty() ? describeArgv(hook.command) : hook.url;
    if (st.ok() || item.tries >= hook.attempts) {
      lock.lock();
      --busy_;
      --waiting_[item.hook];
      if (st.ok()) {
        ++counters_.delivered;
      } else {
        ++counters_.dropped;
        log_("hooks: " + name + ": dropped an event after " + std::to_string(item.tries) +
             " tries: " + st.toString());
      }
      cv_.notify_all();
      continue;
    }
    const double backoff = hook.backoff_seconds * std::pow(2.0, item.tries - 1);
    log_("hooks: " + name + ": try " + std::to_string(item.tries) + " of " +
         std::to_string(hook.attempts) + " failed (" + st.toString() + "); again in " +
         std::to_string(backoff) + " s");
    // The retry waits on the clock, never on this thread: other hooks' events go on.
    auto held = std::make_shared<Item>(std::move(item));
    auto timer_id = std::make_shared<Clock::TimerId>(0);
    Lifeline::Ref ref = line_.ref();
    lock.lock();
    ++counters_.retried;
    const Clock::TimerId id = clock_.schedule(clock_.after(backoff), [this, ref, held, timer_id] {
      ref.run([&] {
        MutexLock l(mu_);
        timers_.erase(*timer_id);
        --busy_;
        push(std::move(*held));
      });
    });
    *timer_id = id;
    timers_.insert(id);  // busy_ stays counted until the timer pushes the item back
    cv_.notify_all();
  }
}

void Hooks::waitIdle() {
  UniqueLock lock(mu_);
  cv_.wait(lock.native(),
           [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_.empty() && busy_ == 0; });
}

void Hooks::waitCounters(const std::function<bool(const Counters&)>& pred) {
  UniqueLock lock(mu_);
  cv_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pred(counters_); });
}

Hooks::Counters Hooks::counters() const {
  MutexLock lock(mu_);
  return counters_;
}

}  // namespace gdrmesh
