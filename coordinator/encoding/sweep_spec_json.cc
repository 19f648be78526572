// A sweep's spec in the domain encoding (sweep_json.h): printed inside reports and stored with
// the sweep, and read back from the store.
#include <string>
#include <utility>

#include "common/json_fields.h"
#include "coordinator/encoding/sweep_json.h"

namespace gdrmesh {
namespace {

std::string specSelectorText(const EndpointSelector& e) {
  return e.worker + (e.device.empty() ? "" : "/" + e.device);
}

EndpointSelector specSelectorFromText(const std::string& s) {
  EndpointSelector e;
  const auto slash = s.find('/');
  e.worker = s.substr(0, slash);
  if (slash != std::string::npos) e.device = s.substr(slash + 1);
  return e;
}

using SpecFields = JsonFields<OrderedJson>;

EndpointSelector specSelectorFromJson(SpecFields r) {
  EndpointSelector e;
  e.worker = r.text("worker");
  e.device = r.text("device");
  e.memory = r.named("memory", [](const std::string& s) { return parseMemoryKind(s); });
  e.gpu = r.integer("gpu");
  e.reg = r.named("reg", [](const std::string& s) { return parseRegPath(s); });
  return e;
}

PairTestSpec specTestFromJson(SpecFields r) {
  PairTestSpec t;
  t.initiator = specSelectorFromJson(r.object("initiator"));
  t.target = specSelectorFromJson(r.object("target"));
  t.op = r.named("op", [](const std::string& s) { return parseOp(s); });
  t.mode = r.named("mode", [](const std::string& s) { return parseMode(s); });
  t.message_size = r.count("message_size");
  t.iterations = r.count("iterations");
  t.warmup_iterations = r.count("warmup_iterations");
  t.num_qps = r.count32("num_qps");
  t.tx_depth = r.count32("tx_depth");
  const std::string transport = r.text("transport");
  if (!transport.empty()) {  // "": none chosen
    auto k = parseTransportKind(transport);
    if (!k) r.fail(r.path("transport"), "'" + transport + "' is not a transport");
    t.transport = k;
  }
  t.gid_index = r.integer("gid_index");
  t.use_rdma_cm = r.flag("use_rdma_cm");
  t.inline_size = r.count32("inline_size");
  t.bidirectional = r.flag("bidirectional");
  t.duration_seconds = r.number("duration_seconds");
  t.cq_moderation = r.count32("cq_moderation");
  t.timeout_seconds = r.number("timeout_seconds");
  t.run_id = r.text("run_id");
  SpecFields fault = r.object("fault");
  t.fault.corrupt_bytes = fault.count("corrupt_bytes");
  t.fault.invalidate_remote_key = fault.flag("invalidate_remote_key");
  return t;
}

}  // namespace

OrderedJson toJson(const EndpointSelector& e) {
  return {{"worker", e.worker},
          {"device", e.device},
          {"memory", toString(e.memory)},
          {"gpu", e.gpu},
          {"reg", toString(e.reg)}};
}

OrderedJson toJson(const PairTestSpec& t) {
  return {{"initiator", toJson(t.initiator)},
          {"target", toJson(t.target)},
          {"op", toString(t.op)},
          {"mode", toString(t.mode)},
          {"message_size", t.message_size},
          {"iterations", t.iterations},
          {"warmup_iterations", t.warmup_iterations},
          {"num_qps", t.num_qps},
          {"tx_depth", t.tx_depth},
          {"transport", t.transport ? toString(*t.transport) : ""},
          {"gid_index", t.gid_index},
          {"use_rdma_cm", t.use_rdma_cm},
          {"inline_size", t.inline_size},
          {"bidirectional", t.bidirectional},
          {"duration_seconds", t.duration_seconds},
          {"cq_moderation", t.cq_moderation},
          {"timeout_seconds", t.timeout_seconds},
          {"run_id", t.run_id},
          {"fault",
           {{"corrupt_bytes", t.fault.corrupt_bytes},
            {"invalidate_remote_key", t.fault.invalidate_remote_key}}}};
}

OrderedJson toJson(const SweepSpec& s) {
  OrderedJson pairs = OrderedJson::array();
  for (const auto& [a, b] : s.pairs)
    pairs.push_back(specSelectorText(a) + ":" + specSelectorText(b));
  OrderedJson select = OrderedJson::object();
  for (const auto& [k, v] : s.select) select[k] = v;
  OrderedJson sizes = OrderedJson::array();
  for (uint64_t z : s.sizes) sizes.push_back(z);
  return {{"pattern", s.pattern_from_config ? "" : toString(s.pattern)},
          {"pairs", std::move(pairs)},
          {"direction", toString(s.direction)},
          {"random_rounds", s.random_rounds},
          {"seed", s.seed},
          {"hosts", s.hosts},
          {"exclude", s.exclude},
          {"select", std::move(select)},
          {"test", toJson(s.test)},
          {"sizes", std::move(sizes)},
          {"max_concurrency", s.max_concurrency},
          {"retries", s.retries},
          {"config_yaml", s.config_yaml},
          {"name", s.name},
          {"queue", s.queue},
          {"localise", s.localise},
          {"baseline", s.baseline}};
}

Result<SweepSpec> sweepSpecFromJson(const OrderedJson& j) {
  SweepSpec s;
  Status error = Status::okStatus();
  SpecFields r(j, "", "sweep spec JSON", &error);
  const std::string pattern = r.text("pattern");
  if (r.ok()) {
    if (pattern.empty()) {
      s.pattern_from_config = true;
    } else if (auto p = parseSweepPattern(pattern)) {
      s.pattern = *p;
    } else {
      r.fail("pattern", "'" + pattern + "' is not a pattern");
    }
  }
  for (const auto& text : r.texts("pairs")) {
    const auto colon = text.find(':');
    if (colon == std::string::npos) {
      r.fail("pairs", "'" + text + "' is not SRC:DST");
      break;
    }
    s.pairs.emplace_back(specSelectorFromText(text.substr(0, colon)),
                         specSelectorFromText(text.substr(colon + 1)));
  }
  s.direction = r.named("direction", [](const std::string& t) { return parseSweepDirection(t); });
  s.random_rounds = r.count32("random_rounds");
  s.seed = r.count("seed");
  s.hosts = r.texts("hosts");
  s.exclude = r.texts("exclude");
  s.select = r.textMap("select");
  s.test = specTestFromJson(r.object("test"));
  s.sizes = r.counts("sizes");
  s.max_concurrency = r.count32("max_concurrency");
  s.retries = r.count32("retries");
  s.config_yaml = r.text("config_yaml");
  s.name = r.text("name");
  s.queue = r.flag("queue");
  s.localise = r.flag("localise");
  s.baseline = r.text("baseline");
  if (!error.ok()) return error;
  return s;
}

Result<SweepSpec> sweepSpecFromJsonText(const std::string& text) {
  auto j = OrderedJson::parse(text, nullptr, false);
  if (j.is_discarded()) {
    return invalidArgument("sweep spec JSON: the text does not parse as JSON",
                           "write it with the domain encoding (docs/json.md)");
  }
  return sweepSpecFromJson(j);
}

}  // namespace gdrmesh
