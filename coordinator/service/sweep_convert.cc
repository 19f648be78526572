#include "coordinator/service/sweep_convert.h"

#include <google/protobuf/util/json_util.h>

#include "common/limits.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/encoding/sweep_json.h"

namespace gdrmesh::convert {
namespace {

constexpr const char* kWorkerNameFix =
    "use worker names as `gdrmesh workers` lists them (1-64 characters from A-Z a-z 0-9 . _ -)";

Result<std::pair<EndpointSelector, EndpointSelector>> parsePair(const std::string& s,
                                                                const SweepLimits& lim) {
  auto colon = s.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    return invalidArgument("pairs: '" + cleanText(s, 80) + "' is not SRC:DST",
                           "write each pair as WORKER[/NIC]:WORKER[/NIC], e.g. h1:h2");
  }
  auto side = [&](const std::string& x) -> Result<EndpointSelector> {
    EndpointSelector e;
    auto slash = x.find('/');
    e.worker = x.substr(0, slash);
    if (slash != std::string::npos) e.device = x.substr(slash + 1);
    if (!validWorkerName(e.worker)) {
      return invalidArgument("pairs: '" + cleanText(e.worker, 80) + "' is not a worker name",
                             kWorkerNameFix);
    }
    if (slash != std::string::npos) {
      if (e.device.empty()) {
        return invalidArgument("pairs: '" + cleanText(s, 80) + "' names no NIC after '/'",
                               "write WORKER/NIC (e.g. h1/mlx5_0) or WORKER alone");
      }
      GDR_RETURN_IF_ERROR(checkText("pairs: NIC name", e.device, lim.device));
    }
    return e;
  };
  GDR_ASSIGN_OR_RETURN(auto a, side(s.substr(0, colon)));
  GDR_ASSIGN_OR_RETURN(auto b, side(s.substr(colon + 1)));
  return std::make_pair(std::move(a), std::move(b));
}

Status checkHosts(const char* field, const google::protobuf::RepeatedPtrField<std::string>& names,
                  const SweepLimits& lim) {
  if (static_cast<size_t>(names.size()) > lim.hosts) {
    return invalidArgument(std::string(field) + ": " + std::to_string(names.size()) +
                               " names, at most " + std::to_string(lim.hosts),
                           "use --select with worker labels to choose many hosts");
  }
  for (const auto& n : names) {
    if (!validWorkerName(n)) {
      return invalidArgument(
          std::string(field) + ": '" + cleanText(n, 80) + "' is not a worker name", kWorkerNameFix);
    }
  }
  return {};
}

// The pattern, or none when the config's `sweeps:` say what to run.
Status sweepPatternFromProto(const v1::SweepSpec& in, SweepSpec* s) {
  if (in.pattern().empty()) {
    if (in.config_yaml().empty()) {
      return invalidArgument(
          "pattern: no pattern given",
          "use --pattern pairs|all-pairs|rails|loopback|random|cover|bisection, or give a "
          "config whose `sweeps:` say what to run");
    }
    s->pattern_from_config = true;
    return {};
  }
  auto p = parseSweepPattern(in.pattern());
  if (!p) {
    return invalidArgument("pattern: '" + cleanText(in.pattern(), 80) + "' is not a pattern",
                           "use pairs, all-pairs, rails, loopback, random, cover or bisection");
  }
  s->pattern = *p;
  return {};
}

Status sweepPairsFromProto(const v1::SweepSpec& in, const SweepLimits& lim, SweepSpec* s) {
  if (static_cast<size_t>(in.pairs_size()) > lim.pairs) {
    return invalidArgument("pairs: " + std::to_string(in.pairs_size()) + " pairs, at most " +
                               std::to_string(lim.pairs),
                           "split the list into several sweeps, or use --pattern all-pairs");
  }
  for (const auto& pr : in.pairs()) {
    GDR_ASSIGN_OR_RETURN(auto pair, parsePair(pr, lim));
    s->pairs.push_back(std::move(pair));
  }
  if (s->pattern == SweepPattern::kPairs && !s->pattern_from_config && s->pairs.empty()) {
    return invalidArgument("pairs: the pairs pattern needs at least one SRC:DST",
                           "e.g. gdrmesh sweep run --pattern pairs h1:h2 h3:h4");
  }
  return {};
}

// The direction, and the random pattern's rounds and seed.
Status sweepDirectionFromProto(const v1::SweepSpec& in, const SweepLimits& lim, SweepSpec* s) {
  if (!in.direction().empty()) {
    auto d = parseSweepDirection(in.direction());
    if (!d) {
      return invalidArgument("direction: '" + cleanText(in.direction(), 80) +
                             "' is not one of one, both, bidir");
    }
    s->direction = *d;
  }
  if (in.has_random_rounds() &&
      (in.random_rounds() < 1 || in.random_rounds() > lim.random_rounds)) {
    return invalidArgument("rounds: " + std::to_string(in.random_rounds()) +
                               " is out of range 1.." + std::to_string(lim.random_rounds),
                           "give the number of random matchings, or leave it out for 3");
  }
  if (in.has_random_rounds()) s->random_rounds = in.random_rounds();
  s->seed = in.seed();
  return {};
}

// The hosts it runs on: named, excluded, selected by label.
Status sweepHostsFromProto(const v1::SweepSpec& in, const SweepLimits& lim, SweepSpec* s) {
  GDR_RETURN_IF_ERROR(checkHosts("hosts", in.hosts(), lim));
  GDR_RETURN_IF_ERROR(checkHosts("exclude", in.exclude(), lim));
  if (static_cast<size_t>(in.select_size()) > lim.selectors) {
    return invalidArgument("select: " + std::to_string(in.select_size()) + " selectors, at most " +
                           std::to_string(lim.selectors));
  }
  s->hosts.assign(in.hosts().begin(), in.hosts().end());
  s->exclude.assign(in.exclude().begin(), in.exclude().end());
  for (const auto& sel : in.select()) {
    auto eq = sel.find('=');
    if (eq == std::string::npos || eq == 0) {
      return invalidArgument("select: '" + cleanText(sel, 80) + "' is not KEY=VALUE",
                             "e.g. --select rack=r12");
    }
    GDR_RETURN_IF_ERROR(checkText("select: key", sel.substr(0, eq), lim.label_key));
    GDR_RETURN_IF_ERROR(checkText("select: value", sel.substr(eq + 1), lim.label_value));
    s->select[sel.substr(0, eq)] = sel.substr(eq + 1);
  }
  return {};
}

// The test each pair runs (its defaults filled in) and the message sizes it runs at.
Status sweepTestFromProto(const v1::SweepSpec& in, const SweepLimits& lim, SweepSpec* s) {
  s->test = fromProto(in.test());
  if (in.test().message_size() == 0) s->test.message_size = kDefaultMessageSize;
  if (in.test().iterations() == 0) s->test.iterations = kDefaultIterations;
  s->test.warmup_iterations =
      in.test().warmup_iterations() == 0 ? kDefaultWarmupIterations : in.test().warmup_iterations();
  if (static_cast<size_t>(in.sizes_size()) > lim.sizes) {
    return invalidArgument("sizes: at most " + std::to_string(lim.sizes) + " sizes");
  }
  s->sizes.assign(in.sizes().begin(), in.sizes().end());
  const PairTestLimits test_limits;
  for (uint64_t sz : s->sizes) {
    if (sz == 0) return invalidArgument("sizes: a size of 0", "sizes must be > 0");
    if (sz > test_limits.max_message_size) {
      return invalidArgument("sizes: " + formatSize(sz) + " is above the largest message size " +
                                 formatSize(test_limits.max_message_size),
                             "give sizes up to " + formatSize(test_limits.max_message_size));
    }
  }
  return {};
}

// How it runs: concurrency, retries, the config, its name, queueing, localising, baseline.
Status sweepRunFromProto(const v1::SweepSpec& in, const SweepLimits& lim, SweepSpec* s) {
  s->max_concurrency = in.max_concurrency();
  if (in.retries() > lim.retries) {
    return invalidArgument("retries: must be in 0.." + std::to_string(lim.retries));
  }
  if (in.config_yaml().size() > lim.config_yaml) {
    return invalidArgument("config: " + std::to_string(in.config_yaml().size()) +
                               " bytes, at most " + std::to_string(lim.config_yaml),
                           "keep the cluster config under 1 MiB");
  }
  GDR_RETURN_IF_ERROR(checkText("name", in.name(), lim.text));
  GDR_RETURN_IF_ERROR(checkText("baseline", in.baseline(), lim.text));
  s->retries = in.retries();
  s->config_yaml = in.config_yaml();
  s->name = in.name();
  s->queue = in.queue();
  s->localise = in.localise();
  s->baseline = in.baseline();
  return {};
}

}  // namespace

Result<SweepSpec> fromProto(const v1::SweepSpec& in) {
  const SweepLimits lim;
  SweepSpec s;
  GDR_RETURN_IF_ERROR(sweepPatternFromProto(in, &s));
  GDR_RETURN_IF_ERROR(sweepPairsFromProto(in, lim, &s));
  GDR_RETURN_IF_ERROR(sweepDirectionFromProto(in, lim, &s));
  GDR_RETURN_IF_ERROR(sweepHostsFromProto(in, lim, &s));
  GDR_RETURN_IF_ERROR(sweepTestFromProto(in, lim, &s));
  GDR_RETURN_IF_ERROR(sweepRunFromProto(in, lim, &s));
  if (!s.pattern_from_config) {
    // The test's settings as each pair runs them (the workers are placeholders).
    PairTestSpec probe = s.test;
    probe.initiator.worker = probe.target.worker = "x";
    GDR_RETURN_IF_ERROR(validatePairTestSpec(probe, PairTestLimits{}));
  }
  return s;
}

void toProto(const SweepSpec& in, v1::SweepSpec* out) {
  out->set_pattern(in.pattern_from_config ? "" : toString(in.pattern));
  for (const auto& [a, b] : in.pairs) {
    out->add_pairs(a.worker + (a.device.empty() ? "" : "/" + a.device) + ":" + b.worker +
                   (b.device.empty() ? "" : "/" + b.device));
  }
  out->set_direction(toString(in.direction));
  out->set_random_rounds(in.random_rounds);
  out->set_seed(in.seed);
  for (const auto& h : in.hosts) out->add_hosts(h);
  for (const auto& h : in.exclude) out->add_exclude(h);
  for (const auto& [k, v] : in.select) out->add_select(k + "=" + v);
  toProto(in.test, out->mutable_test());
  for (uint64_t s : in.sizes) out->add_sizes(s);
  out->set_max_concurrency(in.max_concurrency);
  out->set_retries(in.retries);
  out->set_config_yaml(in.config_yaml);
  out->set_name(in.name);
  out->set_queue(in.queue);
  out->set_localise(in.localise);
  out->set_baseline(in.baseline);
}

void toProto(const SweepProgress& in, v1::SweepProgress* out) {
  out->set_id(in.id);
  out->set_state(toString(in.state));
  out->set_pattern(in.pattern);
  out->set_name(in.name);
  out->set_created_ms(in.created_ms);
  out->set_started_ms(in.started_ms);
  out->set_finished_ms(in.finished_ms);
  out->set_tests_total(in.tests_total);
  out->set_tests_done(in.tests_done);
  out->set_tests_failed(in.tests_failed);
  out->set_tests_skipped(in.tests_skipped);
  out->set_tests_running(in.tests_running);
  out->set_rounds_total(in.rounds_total);
  out->set_elapsed_seconds(in.elapsed_seconds);
  out->set_eta_seconds(in.eta_seconds);
  out->set_reason(in.reason);
  out->set_retests(in.retests);
  out->set_verdict(in.verdict);
  out->mutable_verdict_counts()->set_pass(in.verdict_counts.pass);
  out->mutable_verdict_counts()->set_fail(in.verdict_counts.fail);
  out->mutable_verdict_counts()->set_skip(in.verdict_counts.skip);
  out->set_report_pending(in.report_pending);
}

void toProto(const PairVerdict& in, v1::PairVerdict* out) {
  out->set_test_id(in.test_id);
  out->set_src(in.src);
  out->set_dst(in.dst);
  out->set_message_size(in.message_size);
  out->set_verdict(toString(in.verdict));
  for (const auto& r : in.reasons) out->add_reasons(r);
  out->set_value(in.value);
  out->set_unit(in.unit);
  out->set_topo_class(in.topo_class);
  out->set_retest(in.retest);
  out->set_op(toProto(in.op));
  out->set_mode(toProto(in.mode));
}

void toProto(const Suspect& in, v1::Suspect* out) {
  out->set_kind(in.kind);
  out->set_name(in.name);
  out->set_score(in.score);
  for (const auto& e : in.evidence) out->add_evidence(e);
}

void toProto(const SweepReportData& in, v1::SweepReport* out) {
  toProto(in.progress, out->mutable_progress());
  toProto(in.spec, out->mutable_spec());
  for (const auto& r : in.results) toProto(r, out->add_results());
  for (const auto& v : in.verdicts) toProto(v, out->add_verdicts());
  for (const auto& s : in.suspects) toProto(s, out->add_suspects());
  for (const auto& n : in.notes) out->add_notes(n);
  for (const auto& l : in.links) {
    auto* v = out->add_links();
    v->set_link(l.link);
    v->set_switch_name(l.switch_name);
    v->set_switch_guid(l.switch_guid);
    v->set_port(static_cast<uint32_t>(l.port));
    v->set_remote_name(l.remote_name);
    v->set_remote_guid(l.remote_guid);
    v->set_remote_port(static_cast<uint32_t>(l.remote_port));
    v->set_verdict(l.verdict);
    for (const auto& e : l.evidence) v->add_evidence(e);
  }
  out->mutable_verdict_counts()->set_pass(in.verdict_counts.pass);
  out->mutable_verdict_counts()->set_fail(in.verdict_counts.fail);
  out->mutable_verdict_counts()->set_skip(in.verdict_counts.skip);
  out->set_verdicts_matching(in.verdicts_matching);
  out->set_results_next(in.results_next);
  for (const auto& part : in.parts) {
    auto* p = out->add_parts();
    p->set_index(part.index);
    toProto(part.spec, p->mutable_spec());
    p->set_plan_begin(part.plan_begin);
    p->set_planned(part.planned);
    p->set_planned_known(part.planned_known);
  }
  for (const auto& f : in.figures) {
    auto* s = out->add_figures();
    s->set_op(toProto(f.op));
    s->set_mode(toProto(f.mode));
    s->set_message_size(f.message_size);
    s->set_unit(f.unit);
    s->set_pairs(f.pairs);
    s->set_min(f.min);
    s->set_median(f.median);
    s->set_max(f.max);
    for (const auto& w : f.worst) {
      auto* x = s->add_worst();
      x->set_src(w.src);
      x->set_dst(w.dst);
      x->set_value(w.value);
    }
    for (const auto& h : f.worst_hosts) {
      auto* x = s->add_worst_hosts();
      x->set_host(h.host);
      x->set_median(h.median);
      x->set_pairs(h.pairs);
    }
  }
}

Status fromProto(const v1::SweepReportPage& in, VerdictFilter* filter, VerdictPage* page) {
  switch (in.verdicts()) {
    case v1::VERDICTS_ALL:
      *filter = VerdictFilter::kAll;
      break;
    case v1::VERDICTS_FAILED:
      *filter = VerdictFilter::kFailed;
      break;
    case v1::VERDICTS_NONE:
      *filter = VerdictFilter::kNone;
      break;
    default:
      return invalidArgument(
          "page.verdicts " + std::to_string(in.verdicts()) + " is not a verdict filter",
          "use VERDICTS_ALL, VERDICTS_FAILED or VERDICTS_NONE");
  }
  page->offset = in.verdict_offset();
  page->limit = in.verdict_limit();
  return Status::okStatus();
}

Result<SweepReportQuery> fromProto(const v1::SweepIdRequest& in) {
  SweepReportQuery q;
  q.with_results = in.with_results();
  q.results_limit = in.results_limit();
  q.results_after = in.results_after();
  GDR_RETURN_IF_ERROR(fromProto(in.page(), &q.verdicts, &q.page));
  return q;
}

SweepProgress fromProto(const v1::SweepProgress& in) {
  SweepProgress p;
  p.id = in.id();
  p.state = parseSweepState(in.state()).value_or(SweepState::kQueued);
  p.pattern = in.pattern();
  p.name = in.name();
  p.created_ms = in.created_ms();
  p.started_ms = in.started_ms();
  p.finished_ms = in.finished_ms();
  p.tests_total = in.tests_total();
  p.tests_done = in.tests_done();
  p.tests_failed = in.tests_failed();
  p.tests_skipped = in.tests_skipped();
  p.tests_running = in.tests_running();
  p.rounds_total = in.rounds_total();
  p.retests = in.retests();
  p.elapsed_seconds = in.elapsed_seconds();
  p.eta_seconds = in.eta_seconds();
  p.reason = in.reason();
  p.verdict = in.verdict();
  p.verdict_counts.pass = in.verdict_counts().pass();
  p.verdict_counts.fail = in.verdict_counts().fail();
  p.verdict_counts.skip = in.verdict_counts().skip();
  p.report_pending = in.report_pending();
  return p;
}

PairVerdict fromProto(const v1::PairVerdict& in) {
  PairVerdict v;
  v.test_id = in.test_id();
  v.src = in.src();
  v.dst = in.dst();
  v.message_size = in.message_size();
  v.verdict = in.verdict() == "PASS"   ? VerdictKind::kPass
              : in.verdict() == "FAIL" ? VerdictKind::kFail
                                       : VerdictKind::kSkip;
  v.reasons.assign(in.reasons().begin(), in.reasons().end());
  v.value = in.value();
  v.unit = in.unit();
  v.topo_class = in.topo_class();
  v.retest = in.retest();
  v.op = convert::fromProto(in.op());
  v.mode = convert::fromProto(in.mode());
  return v;
}

Suspect fromProto(const v1::Suspect& in) {
  Suspect s;
  s.kind = in.kind();
  s.name = in.name();
  s.score = in.score();
  s.evidence.assign(in.evidence().begin(), in.evidence().end());
  return s;
}

namespace {

// A spec that no longer validates, as it was sent: what a report prints of it (its pattern,
// direction, test template, sizes, hosts and config), unchecked.
SweepSpec specAsSent(const v1::SweepSpec& in) {
  SweepSpec s;
  if (in.pattern().empty()) {
    s.pattern_from_config = true;
  } else if (auto p = parseSweepPattern(in.pattern())) {
    s.pattern = *p;
  }
  if (auto d = parseSweepDirection(in.direction())) s.direction = *d;
  s.test = fromProto(in.test());
  if (in.test().message_size() == 0) s.test.message_size = kDefaultMessageSize;
  if (in.test().iterations() == 0) s.test.iterations = kDefaultIterations;
  s.sizes.assign(in.sizes().begin(), in.sizes().end());
  s.config_yaml = in.config_yaml();
  s.hosts.assign(in.hosts().begin(), in.hosts().end());
  s.exclude.assign(in.exclude().begin(), in.exclude().end());
  s.name = in.name();
  return s;
}

}  // namespace

SweepReportData fromProto(const v1::SweepReport& in, std::string* spec_error) {
  SweepReportData r;
  r.progress = fromProto(in.progress());
  auto spec = fromProto(in.spec());
  if (spec.ok()) {
    r.spec = std::move(spec).value();
  } else {
    if (spec_error) *spec_error = spec.status().message();
    r.spec = specAsSent(in.spec());
  }
  for (const auto& x : in.results()) r.results.push_back(convert::fromProto(x));
  for (const auto& x : in.verdicts()) r.verdicts.push_back(fromProto(x));
  for (const auto& x : in.suspects()) r.suspects.push_back(fromProto(x));
  r.notes.assign(in.notes().begin(), in.notes().end());
  r.verdict_counts.pass = in.verdict_counts().pass();
  r.verdict_counts.fail = in.verdict_counts().fail();
  r.verdict_counts.skip = in.verdict_counts().skip();
  r.verdicts_matching = in.verdicts_matching();
  r.results_next = in.results_next();
  for (const auto& x : in.parts()) {
    SweepPart part;
    part.index = x.index();
    auto s = fromProto(x.spec());
    part.spec = s.ok() ? std::move(s).value() : specAsSent(x.spec());
    part.plan_begin = x.plan_begin();
    part.planned = x.planned();
    part.planned_known = x.planned_known();
    r.parts.push_back(std::move(part));
  }
  for (const auto& x : in.figures()) {
    FigureSummary f;
    f.op = convert::fromProto(x.op());
    f.mode = convert::fromProto(x.mode());
    f.message_size = x.message_size();
    f.unit = x.unit();
    f.pairs = x.pairs();
    f.min = x.min();
    f.median = x.median();
    f.max = x.max();
    for (const auto& w : x.worst()) f.worst.push_back({w.src(), w.dst(), w.value()});
    for (const auto& h : x.worst_hosts())
      f.worst_hosts.push_back({h.host(), h.median(), h.pairs()});
    r.figures.push_back(std::move(f));
  }
  for (const auto& x : in.links()) {
    LinkVerdictRecord l;
    l.sweep_id = r.progress.id;
    l.link = x.link();
    l.switch_name = x.switch_name();
    l.switch_guid = x.switch_guid();
    l.port = static_cast<int>(x.port());
    l.remote_name = x.remote_name();
    l.remote_guid = x.remote_guid();
    l.remote_port = static_cast<int>(x.remote_port());
    l.verdict = x.verdict();
    l.evidence.assign(x.evidence().begin(), x.evidence().end());
    r.links.push_back(std::move(l));
  }
  return r;
}

std::string ProtoJsonSweepCodec::encode(const SweepSpec& spec) const {
  v1::SweepSpec p;
  toProto(spec, &p);
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(p, &out, o);
  return out;
}

Result<SweepSpec> ProtoJsonSweepCodec::decode(const std::string& text) const {
  v1::SweepSpec p;
  auto st = google::protobuf::util::JsonStringToMessage(text, &p);
  if (!st.ok()) return invalidArgument("stored sweep spec: " + std::string(st.message()));
  return fromProto(p);
}

std::string StoredSweepCodec::encode(const SweepSpec& spec) const {
  return toJson(spec).dump();
}

Result<SweepSpec> StoredSweepCodec::decode(const std::string& text) const {
  auto domain = sweepSpecFromJsonText(text);
  if (domain.ok()) return domain;
  // A row of an older build: protobuf's JSON mapping.
  auto old = ProtoJsonSweepCodec().decode(text);
  if (old.ok()) return old;
  return invalidArgument("stored sweep spec: neither the domain encoding (" +
                             domain.status().message() + ") nor protobuf's JSON mapping (" +
                             old.status().message() + ")",
                         "the row is damaged: run the sweep again");
}

}  // namespace gdrmesh::convert
