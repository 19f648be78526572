// The cluster config parser: the documented examples parse as written, and every kind of bad
// input is refused with the key path, what is wrong and the fix.
#include "coordinator/config/config_yaml.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace gdrmesh {
namespace {

TEST(ConfigYaml, TheSmallestExampleParsesAsWritten) {
  const std::string text =
      "sweeps:\n"
      "  - pattern: all-pairs\n"
      "    size: 64KiB\n"
      "    iters: 50\n"
      "thresholds:\n"
      "  bandwidth_gbps_min: 25\n";
  auto c = parseClusterConfig(text, "gdrmesh.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  ASSERT_EQ(c->sweeps.size(), 1u);
  EXPECT_EQ(c->sweeps[0].pattern, SweepPattern::kAllPairs);
  EXPECT_EQ(c->sweeps[0].test.message_size, 65536u);
  EXPECT_EQ(c->sweeps[0].test.iterations, 50u);
  ASSERT_TRUE(c->thresholds.bandwidth_gbps_min.has_value());
  EXPECT_EQ(*c->thresholds.bandwidth_gbps_min, 25.0);
  EXPECT_FALSE(c->thresholds.latency_us_max.has_value());
  EXPECT_EQ(c->source, text);
  EXPECT_EQ(c->thresholdsFor("any", {}).bandwidth_gbps_min, 25.0);
}

TEST(ConfigYaml, OutlierDetectionIsOnByDefaultAndConfigurable) {
  auto d = parseClusterConfig("", "empty.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->outliers.detect);
  EXPECT_EQ(d->outliers.fail, OutlierOptions::Fail::kAuto);
  EXPECT_DOUBLE_EQ(d->outliers.robust_z, 5);
  EXPECT_DOUBLE_EQ(d->outliers.min_shortfall, 0.1);
  EXPECT_FALSE(d->hasThresholds());
  auto c = parseClusterConfig(
      "outliers:\n  detect: false\n  fail: never\n  robust_z: 3.5\n  min_shortfall: 0.2\n"
      "  min_partners: 6\n  min_hosts: 8\nhost_classes:\n  - name: a\n    thresholds:\n"
      "      latency_us_max: 9\n",
      "o.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_FALSE(c->outliers.detect);
  EXPECT_EQ(c->outliers.fail, OutlierOptions::Fail::kNever);
  EXPECT_DOUBLE_EQ(c->outliers.robust_z, 3.5);
  EXPECT_DOUBLE_EQ(c->outliers.min_shortfall, 0.2);
  EXPECT_EQ(c->outliers.min_partners, 6);
  EXPECT_EQ(c->outliers.min_hosts, 8);
  EXPECT_TRUE(c->hasThresholds());  // a class's threshold counts
}

TEST(ConfigYaml, FabricAndFabricHostsAreReadAndCheckedNamingTheKey) {
  auto c = parseClusterConfig(
      "fabric: fabric.json\nfabric_hosts:\n  gpu07: \"node07 mlx5_0\"\n  gpu08: node08\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->fabric, "fabric.json");
  EXPECT_EQ(c->fabric_hosts.size(), 2U);
  EXPECT_EQ(c->fabric_hosts.at("gpu07"), "node07 mlx5_0");
  EXPECT_EQ(c->fabric_hosts.at("gpu08"), "node08");
  auto list = parseClusterConfig("fabric_hosts: [a, b]\n", "c.yaml");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().toString().find("fabric_hosts"), std::string::npos)
      << list.status().toString();
  auto empty = parseClusterConfig("fabric: \"\"\n", "c.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().toString().find("fabric discover --save"), std::string::npos)
      << empty.status().toString();
}

// OpenSM's compute-node order for cover sweeps (docs/fabric.md): a file name; empty is refused
// naming the key and what to give.
TEST(ConfigYaml, FabricCaOrderIsAFileName) {
  auto c =
      parseClusterConfig("fabric: f.json\nfabric_ca_order: opensm-ftree-ca-order.dump\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->fabric_ca_order, "opensm-ftree-ca-order.dump");
  auto empty = parseClusterConfig("fabric_ca_order: \"\"\n", "c.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().toString().find("fabric_ca_order"), std::string::npos);
  EXPECT_NE(empty.status().toString().find("opensm-ftree-ca-order.dump"), std::string::npos)
      << empty.status().toString();
}

TEST(ConfigYaml, EmptyFileIsAnEmptyConfig) {
  auto c = parseClusterConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->sweeps.empty());
}

// The full example of docs/config.md, read from the document itself so that the two agree.
TEST(ConfigYaml, TheFullExampleInTheDocsParses) {
  std::ifstream in(std::string(GDRMESH_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md missing";
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string md = doc.str();
  const std::string begin = "```yaml\n# full example\n";
  const size_t at = md.find(begin);
  ASSERT_NE(at, std::string::npos);
  const size_t end = md.find("```", at + begin.size());
  const std::string text = md.substr(at + 8, end - at - 8);
  auto c = parseClusterConfig(text, "docs/config.md");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  ASSERT_EQ(c->sweeps.size(), 3u);
  const SweepSpec& rails = c->sweeps[1];
  EXPECT_EQ(rails.pattern, SweepPattern::kRails);
  EXPECT_EQ(rails.sizes, (std::vector<uint64_t>{4096, 65536, 1 << 20, 8 << 20}));
  EXPECT_EQ(rails.test.initiator.memory, MemoryKind::kCuda);
  EXPECT_EQ(rails.test.target.reg, RegPath::kDmabuf);
  EXPECT_EQ(rails.direction, SweepDirection::kBidir);
  EXPECT_EQ(rails.select.at("pool"), "training");
  EXPECT_EQ(rails.test.duration_seconds, 10.0);
  EXPECT_EQ(rails.test.timeout_seconds, 120.0);
  EXPECT_EQ(rails.test.num_qps, 4u);
  EXPECT_EQ(rails.max_concurrency, 64u);
  EXPECT_EQ(rails.retries, 2u);
  const SweepSpec& random = c->sweeps[2];
  EXPECT_EQ(random.random_rounds, 5u);
  EXPECT_EQ(random.seed, 1234u);
  EXPECT_EQ(random.exclude, std::vector<std::string>{"gpu-b07"});
  EXPECT_EQ(random.test.mode, Mode::kLatency);
  ASSERT_EQ(c->host_classes.size(), 2u);
  EXPECT_EQ(c->host_classes[0].match, "gpu-a*");
  EXPECT_EQ(c->host_classes[0].expect.gpus, 8);
  EXPECT_EQ(c->host_classes[0].expect.transports, std::vector<std::string>{"verbs"});
  // A class's unset thresholds inherit the global ones; its own win.
  const Thresholds a = c->thresholdsFor("gpu-a03", {});
  EXPECT_EQ(a.line_rate_fraction_min, 0.95);
  EXPECT_EQ(a.best_pair_fraction_min, 0.93);
  const Thresholds other = c->thresholdsFor("cpu-01", {});
  EXPECT_EQ(other.line_rate_fraction_min, 0.9);
  EXPECT_EQ(c->classOf("gpu-b02", {{"sku", "hdr"}})->name, "hdr-nodes");
  EXPECT_EQ(c->classOf("gpu-b02", {}), nullptr);
  ASSERT_EQ(c->schedules.size(), 1u);
  EXPECT_EQ(c->schedules[0].cron, "0 2 * * *");
  EXPECT_EQ(c->schedules[0].timezone, "Europe/Berlin");
  EXPECT_EQ(c->schedules[0].sweep.pattern, SweepPattern::kAllPairs);
  EXPECT_EQ(c->schedules[0].sweep.name, "nightly");
  EXPECT_TRUE(c->schedules[0].catch_up);
  EXPECT_EQ(c->schedules[0].catch_up_grace_seconds, 900.0);
}

TEST(ConfigYaml, ScheduleCatchUpIsOffByDefault) {
  auto c = parseClusterConfig("schedules:\n  - name: n\n    cron: '0 2 * * *'\n    sweep: {}\n",
                              "f.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_FALSE(c->schedules[0].catch_up);
  EXPECT_EQ(c->schedules[0].catch_up_grace_seconds, 600.0);
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* expect_in_message;  // the key path and what is wrong
  const char* expect_in_fix;      // "" = any
};

class ConfigYamlBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigYamlBad, IsRefusedNamingThePath) {
  const BadCase& c = GetParam();
  auto r = parseClusterConfig(c.yaml, "bad.yaml");
  ASSERT_FALSE(r.ok()) << c.name;
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find(c.expect_in_message), std::string::npos)
      << c.name << ": " << r.status().toString();
  EXPECT_NE(r.status().message().find("bad.yaml:"), std::string::npos) << r.status().toString();
  EXPECT_NE(r.status().fix().find(c.expect_in_fix), std::string::npos)
      << c.name << ": " << r.status().toString();
}

const BadCase kBad[] = {
    {"unknown_top_key", "sweep:\n  - pattern: all-pairs\n", "(top level).sweep: unknown key",
     "sweeps, thresholds, host_classes, schedules"},
    {"unknown_sweep_key", "sweeps:\n  - pattern: all-pairs\n    itters: 5\n",
     "sweeps[0].itters: unknown key", "iters"},
    {"bad_size", "sweeps:\n  - size: 64KB\n", "sweeps[0].size: suffix 'KB' is ambiguous", ""},
    {"size_and_sizes", "sweeps:\n  - size: 4KiB\n    sizes: [8KiB]\n",
     "sweeps[0].sizes: give size or sizes, not both", "sizes:"},
    {"bad_pattern", "sweeps:\n  - pattern: ring\n",
     "sweeps[0].pattern: 'ring' is not one of: pairs, all-pairs", ""},
    {"iters_not_number", "sweeps:\n  - iters: many\n", "sweeps[0].iters: 'many' is not a whole",
     ""},
    {"iters_zero", "sweeps:\n  - iters: 0\n", "sweeps[0].iters: 0 is out of range", ""},
    {"bad_duration", "sweeps:\n  - duration: 5 fortnights\n",
     "sweeps[0].duration: unknown duration unit", "use ms, s, m or h"},
    {"sweeps_not_list", "sweeps:\n  pattern: all-pairs\n", "sweeps: must be a list", ""},
    {"threshold_not_number", "thresholds:\n  bandwidth_gbps_min: fast\n",
     "thresholds.bandwidth_gbps_min: 'fast' is not a number", ""},
    {"fraction_out_of_range", "thresholds:\n  line_rate_fraction_min: 90\n",
     "thresholds.line_rate_fraction_min: 90", "0.9 = 90 %"},
    {"unknown_threshold", "thresholds:\n  bandwidth_min: 5\n", "thresholds.bandwidth_min: unknown",
     "bandwidth_gbps_min"},
    {"class_without_name", "host_classes:\n  - match: gpu-*\n", "host_classes[0].name: missing",
     ""},
    {"class_twice", "host_classes:\n  - name: a\n  - name: a\n",
     "host_classes[1].name: class 'a' is defined twice", ""},
    {"bad_expect_key", "host_classes:\n  - name: a\n    expect:\n      gpu: 8\n",
     "host_classes[0].expect.gpu: unknown key", "gpus"},
    {"bad_transport", "host_classes:\n  - name: a\n    expect:\n      transports: [rdma]\n",
     "host_classes[0].expect.transports[0]: 'rdma' is not one of", ""},
    {"cron_fields", "schedules:\n  - name: n\n    cron: '0 2 * *'\n    sweep: {}\n",
     "schedules[0].cron: '0 2 * *' has 4 fields, not 5", "minute hour"},
    {"schedule_without_sweep", "schedules:\n  - name: n\n    cron: '0 2 * * *'\n",
     "schedules[0].sweep: missing", ""},
    {"catch_up_not_bool",
     "schedules:\n  - name: n\n    cron: '0 2 * * *'\n    catch_up: maybe\n    sweep: {}\n",
     "schedules[0].catch_up: 'maybe' is not true or false", ""},
    {"grace_without_catch_up",
     "schedules:\n  - name: n\n    cron: '0 2 * * *'\n    grace: 5m\n    sweep: {}\n",
     "schedules[0].grace: is used only with catch_up: true", "catch_up: true"},
    {"grace_out_of_range",
     "schedules:\n  - name: n\n    cron: '0 2 * * *'\n    catch_up: true\n    grace: 2d\n"
     "    sweep: {}\n",
     "schedules[0].grace:", ""},
    {"schedule_sweep_bad",
     "schedules:\n  - name: n\n    cron: '0 2 * * *'\n    sweep:\n"
     "      op: poke\n",
     "schedules[0].sweep.op: 'poke' is not one of", ""},
    {"select_not_map", "sweeps:\n  - select: rack=a\n", "sweeps[0].select: must be a mapping", ""},
    {"gpu_with_host_memory", "sweeps:\n  - gpu: 1\n", "sweeps[0].gpu: a GPU index was given",
     "memory: cuda"},
    {"reg_with_host_memory", "sweeps:\n  - reg: dmabuf\n",
     "sweeps[0].reg: dmabuf applies to GPU memory only", "memory: cuda"},
    {"memory_with_src_memory", "sweeps:\n  - memory: cuda\n    src_memory: host\n",
     "sweeps[0].src_memory: cannot be combined with memory", "dst_memory: cuda:0"},
    {"reg_with_src_reg", "sweeps:\n  - memory: cuda\n    reg: dmabuf\n    src_reg: staged\n",
     "sweeps[0].src_reg: cannot be combined with reg", "dst_reg: dmabuf"},
    {"gpu_path_on_host_side", "sweeps:\n  - dst_memory: cuda\n    src_reg: peermem\n",
     "sweeps[0].src_reg: registration path peermem applies to GPU memory only", "cuda memory"},
    {"gpu_contradicts_side", "sweeps:\n  - dst_memory: cuda:1\n    gpu: 0\n",
     "sweeps[0].gpu: 0 contradicts dst_memory: cuda:1", "drop gpu"},
    {"bad_side_memory", "sweeps:\n  - src_memory: cuda:x\n",
     "sweeps[0].src_memory: 'cuda:x': 'x' is not a GPU index", "cuda:N"},
    {"latency_with_duration", "sweeps:\n  - mode: lat\n    duration: 10s\n",
     "sweeps[0].duration: latency tests count iterations", ""},
    {"pairs_pattern_without_pairs", "sweeps:\n  - pattern: pairs\n",
     "sweeps[0].pairs: the pairs pattern needs a list", ""},
    {"bad_pair", "sweeps:\n  - pattern: pairs\n    pairs: [a-b]\n",
     "sweeps[0].pairs[0]: 'a-b' is not INITIATOR[/NIC]:TARGET[/NIC]", ""},
    {"not_yaml", "sweeps: [a, b\n", "not valid YAML", "indentation"},
    {"top_level_list", "- a\n- b\n", "(top level): must be a mapping", ""},
    {"outliers_unknown_key", "outliers:\n  z: 3\n", "outliers.z: unknown key", "robust_z"},
    {"outliers_bad_fail", "outliers:\n  fail: sometimes\n",
     "outliers.fail: 'sometimes' is not one of: auto, always, never", "auto:"},
    {"outliers_bad_detect", "outliers:\n  detect: yes please\n",
     "outliers.detect: 'yes please' is not true or false", ""},
    {"outliers_shortfall_range", "outliers:\n  min_shortfall: 10\n",
     "outliers.min_shortfall: is outside [0, 1)", "0.1 = 10 %"},
    {"outliers_z_range", "outliers:\n  robust_z: 0.5\n", "outliers.robust_z: is outside", ""},
    {"outliers_min_hosts", "outliers:\n  min_hosts: 2\n", "outliers.min_hosts: 2 is out of range",
     ""},
};

INSTANTIATE_TEST_SUITE_P(Cases, ConfigYamlBad, ::testing::ValuesIn(kBad),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(ConfigYaml, ErrorsCarryTheLineNumber) {
  auto r = parseClusterConfig("sweeps:\n  - pattern: all-pairs\n    iters: x\n", "f.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("f.yaml:3: sweeps[0].iters", 0), 0u) << r.status().message();
}

TEST(ConfigYaml, EachSideChoosesItsOwnMemory) {
  auto c = parseClusterConfig(
      "sweeps:\n  - src_memory: host\n    dst_memory: cuda:1\n    reg: dmabuf\n"
      "  - src_memory: cuda\n    gpu: 2\n    reg: staged\n  - memory: cuda:3\n",
      "x");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  ASSERT_EQ(c->sweeps.size(), 3u);
  const PairTestSpec& a = c->sweeps[0].test;
  EXPECT_EQ(a.initiator.memory, MemoryKind::kHost);
  EXPECT_EQ(a.initiator.reg, RegPath::kHost);  // reg applies to the GPU side only
  EXPECT_EQ(a.target.memory, MemoryKind::kCuda);
  EXPECT_EQ(a.target.gpu, 1);
  EXPECT_EQ(a.target.reg, RegPath::kDmabuf);
  const PairTestSpec& b = c->sweeps[1].test;
  EXPECT_EQ(b.initiator.memory, MemoryKind::kCuda);
  EXPECT_EQ(b.initiator.gpu, 2);
  EXPECT_EQ(b.initiator.reg, RegPath::kStaged);
  EXPECT_EQ(b.target.memory, MemoryKind::kHost);
  const PairTestSpec& m = c->sweeps[2].test;
  EXPECT_EQ(m.initiator.gpu, 3);
  EXPECT_EQ(m.target.gpu, 3);
  EXPECT_EQ(m.target.memory, MemoryKind::kCuda);
}

TEST(ConfigYaml, EachSideChoosesItsOwnRegistrationPath) {
  auto c = parseClusterConfig(
      "sweeps:\n  - memory: cuda\n    src_reg: staged\n    dst_reg: dmabuf\n"
      "  - src_memory: host\n    dst_memory: cuda:1\n    dst_reg: peermem\n",
      "x");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  ASSERT_EQ(c->sweeps.size(), 2u);
  EXPECT_EQ(c->sweeps[0].test.initiator.reg, RegPath::kStaged);
  EXPECT_EQ(c->sweeps[0].test.target.reg, RegPath::kDmabuf);
  EXPECT_EQ(c->sweeps[1].test.initiator.reg, RegPath::kHost);
  EXPECT_EQ(c->sweeps[1].test.target.reg, RegPath::kPeermem);
}

TEST(ConfigYaml, PairsAndListsParse) {
  auto c = parseClusterConfig(
      "sweeps:\n  - pattern: pairs\n    pairs: ['a/mlx5_0:b/mlx5_1', 'c:d']\n"
      "    hosts: [a, b, c, d]\n    direction: both\n    seed: 7\n",
      "x");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  const auto& s = c->sweeps[0];
  ASSERT_EQ(s.pairs.size(), 2u);
  EXPECT_EQ(s.pairs[0].first.worker, "a");
  EXPECT_EQ(s.pairs[0].first.device, "mlx5_0");
  EXPECT_EQ(s.pairs[0].second.device, "mlx5_1");
  EXPECT_EQ(s.pairs[1].second.worker, "d");
  EXPECT_EQ(s.pairs[1].second.device, "");
  EXPECT_EQ(s.hosts.size(), 4u);
  EXPECT_EQ(s.direction, SweepDirection::kBoth);
}

// Issue #20: the fabric reader, the reset permission (off unless given) and the counters'
// thresholds as rates over their defaults; a bad rate or counter names the key and the fix.
TEST(ConfigYaml, FabricReaderAndCounterThresholds) {
  auto plain = parseClusterConfig("fabric: f.json\n", "t.yaml");
  ASSERT_TRUE(plain.ok()) << plain.status().toString();
  EXPECT_TRUE(plain->fabric_reader.empty());
  EXPECT_FALSE(plain->fabric_counters_reset);
  EXPECT_EQ(plain->fabric_thresholds.size(), defaultCounterThresholds().size());
  auto c = parseClusterConfig(
      "fabric: f.json\nfabric_reader: ib01\nfabric_counters_reset: true\n"
      "fabric_thresholds:\n  SymbolErrorCounter: 30/min\n  PortXmitWait: 5000\n",
      "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->fabric_reader, "ib01");
  EXPECT_TRUE(c->fabric_counters_reset);
  std::map<std::string, CounterThreshold> by;
  for (const auto& t : c->fabric_thresholds) by[t.counter] = t;
  EXPECT_EQ(by.size(), defaultCounterThresholds().size());  // overridden, not added twice
  EXPECT_EQ(by["SymbolErrorCounter"].count, 30);
  EXPECT_EQ(by["SymbolErrorCounter"].per_seconds, 60);
  EXPECT_EQ(by["PortXmitWait"].count, 5000);
  EXPECT_EQ(by["PortXmitWait"].per_seconds, 0);
  EXPECT_EQ(by["LinkDownedCounter"].count, 0);  // the defaults stand
  auto bad = parseClusterConfig("fabric_thresholds:\n  SymbolErrorCounter: lots/h\n", "t.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().toString().find("fabric_thresholds.SymbolErrorCounter"), std::string::npos)
      << bad.status().toString();
  auto data = parseClusterConfig("fabric_thresholds:\n  PortXmitData: 10\n", "t.yaml");
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().toString().find("not an error counter"), std::string::npos)
      << data.status().toString();
}

}  // namespace
}  // namespace gdrmesh
