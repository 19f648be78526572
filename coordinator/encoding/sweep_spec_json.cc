// A sweep's spec in the domain encoding (sweep_json.h): printed inside reports and stored with
// the sweep, and read back from the store.
#include <limits>
#include <type_traits>
#include <utility>

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

// Reads the fields of one object; the first missing or mistyped field is the error.
class SpecReader {
 public:
  SpecReader(const OrderedJson& j, std::string where) : j_(j), where_(std::move(where)) {}

  const OrderedJson* field(const char* name, bool (OrderedJson::*is)() const noexcept,
                           const char* type) {
    if (!error_.ok()) return nullptr;
    if (!j_.is_object()) {
      fail(where_.empty() ? "the document" : where_, "is not a JSON object");
      return nullptr;
    }
    auto it = j_.find(name);
    if (it == j_.end()) {
      fail(path(name), "is missing");
      return nullptr;
    }
    if (!((*it).*is)()) {
      fail(path(name), std::string("is not ") + type);
      return nullptr;
    }
    return &*it;
  }
  std::string text(const char* name) {
    const auto* v = field(name, &OrderedJson::is_string, "a string");
    return v ? v->get<std::string>() : std::string();
  }
  uint64_t count(const char* name) {
    const auto* v = field(name, &OrderedJson::is_number_unsigned, "a number >= 0");
    return v ? v->get<uint64_t>() : 0;
  }
  uint32_t count32(const char* name) {
    const uint64_t v = count(name);
    if (v > std::numeric_limits<uint32_t>::max()) fail(path(name), "is too large");
    return static_cast<uint32_t>(v);
  }
  int integer(const char* name) {
    const auto* v = field(name, &OrderedJson::is_number_integer, "an integer");
    if (!v) return 0;
    const int64_t x = v->get<int64_t>();
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
      fail(path(name), "is out of range");
      return 0;
    }
    return static_cast<int>(x);
  }
  double number(const char* name) {
    const auto* v = field(name, &OrderedJson::is_number, "a number");
    return v ? v->get<double>() : 0;
  }
  bool flag(const char* name) {
    const auto* v = field(name, &OrderedJson::is_boolean, "true or false");
    return v ? v->get<bool>() : false;
  }
  std::vector<std::string> texts(const char* name) {
    std::vector<std::string> out;
    const auto* v = field(name, &OrderedJson::is_array, "an array");
    if (!v) return out;
    for (const auto& x : *v) {
      if (!x.is_string()) {
        fail(path(name), "holds an element that is not a string");
        return {};
      }
      out.push_back(x.get<std::string>());
    }
    return out;
  }
  // An enum by its documented name: `parse` returns an optional.
  template <typename Parse>
  auto named(const char* name, Parse parse) -> std::decay_t<decltype(*parse(std::string()))> {
    const std::string t = text(name);
    auto v = parse(t);
    if (!error_.ok()) return {};
    if (!v) {
      fail(path(name), "'" + t + "' is not one of its names");
      return {};
    }
    return *v;
  }
  std::string path(const char* name) const { return where_.empty() ? name : where_ + "." + name; }
  void fail(const std::string& what, const std::string& why) {
    if (error_.ok()) {
      error_ = invalidArgument("sweep spec JSON: " + what + " " + why,
                               "write it with the domain encoding (docs/json.md)");
    }
  }
  void take(const Status& st) {
    if (error_.ok() && !st.ok()) error_ = st;
  }
  const Status& error() const { return error_; }

 private:
  const OrderedJson& j_;
  std::string where_;
  Status error_ = Status::okStatus();
};

EndpointSelector specSelectorFromJson(SpecReader& parent, const char* name) {
  EndpointSelector e;
  const auto* v = parent.field(name, &OrderedJson::is_object, "an object");
  if (!v) return e;
  SpecReader r(*v, parent.path(name));
  e.worker = r.text("worker");
  e.device = r.text("device");
  e.memory = r.named("memory", [](const std::string& s) { return parseMemoryKind(s); });
  e.gpu = r.integer("gpu");
  e.reg = r.named("reg", [](const std::string& s) { return parseRegPath(s); });
  parent.take(r.error());
  return e;
}

PairTestSpec specTestFromJson(SpecReader& parent) {
  PairTestSpec t;
  const auto* v = parent.field("test", &OrderedJson::is_object, "an object");
  if (!v) return t;
  SpecReader r(*v, "test");
  t.initiator = specSelectorFromJson(r, "initiator");
  t.target = specSelectorFromJson(r, "target");
  t.op = r.named("op", [](const std::string& s) { return parseOp(s); });
  t.mode = r.named("mode", [](const std::string& s) { return parseMode(s); });
  t.message_size = r.count("message_size");
  t.iterations = r.count("iterations");
  t.warmup_iterations = r.count("warmup_iterations");
  t.num_qps = r.count32("num_qps");
  t.tx_depth = r.count32("tx_depth");
  const std::string transport = r.text("transport");
  if (!transport.empty()) {
    auto k = parseTransportKind(transport);
    if (!k) r.fail("test.transport", "'" + transport + "' is not a transport");
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
  if (const auto* f = r.field("fault", &OrderedJson::is_object, "an object")) {
    SpecReader fr(*f, "test.fault");
    t.fault.corrupt_bytes = fr.count("corrupt_bytes");
    t.fault.invalidate_remote_key = fr.flag("invalidate_remote_key");
    r.take(fr.error());
  }
  parent.take(r.error());
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
  SpecReader r(j, "");
  const std::string pattern = r.text("pattern");
  if (r.error().ok()) {
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
  if (const auto* sel = r.field("select", &OrderedJson::is_object, "an object")) {
    for (const auto& [k, v] : sel->items()) {
      if (!v.is_string()) {
        r.fail("select." + k, "is not a string");
        break;
      }
      s.select[k] = v.get<std::string>();
    }
  }
  s.test = specTestFromJson(r);
  if (const auto* sizes = r.field("sizes", &OrderedJson::is_array, "an array")) {
    for (const auto& z : *sizes) {
      if (!z.is_number_unsigned()) {
        r.fail("sizes", "holds an element that is not a number >= 0");
        break;
      }
      s.sizes.push_back(z.get<uint64_t>());
    }
  }
  s.max_concurrency = r.count32("max_concurrency");
  s.retries = r.count32("retries");
  s.config_yaml = r.text("config_yaml");
  s.name = r.text("name");
  s.queue = r.flag("queue");
  s.localise = r.flag("localise");
  s.baseline = r.text("baseline");
  if (!r.error().ok()) return r.error();
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
