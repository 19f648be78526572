// Arguments -> requests: the test options shared by `test` and `sweep run`, and SweepSpec
// building with its refusals (each names the flag).
#include "cli/specs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gdrmesh::cli {
namespace {

TEST(TestOptions, DefaultsGiveHostMemoryWriteBandwidth) {
  auto s = toPairTestSpec(TestOptions{});
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->op, Op::kWrite);
  EXPECT_EQ(s->mode, Mode::kBandwidth);
  EXPECT_EQ(s->message_size, 64u * 1024);
  EXPECT_FALSE(s->transport.has_value());
  EXPECT_EQ(s->initiator.memory, MemoryKind::kHost);
  EXPECT_EQ(s->initiator.reg, RegPath::kHost);  // auto on host memory is host
  EXPECT_EQ(s->target.gpu, -1);
}

TEST(TestOptions, CudaMemoryDefaultsToGpuZeroAndKeepsRegPath) {
  TestOptions t;
  t.memory = "cuda";
  t.reg = "dmabuf";
  t.transport = "verbs";
  t.duration = "2s";
  auto s = toPairTestSpec(t);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.gpu, 0);
  EXPECT_EQ(s->target.reg, RegPath::kDmabuf);
  EXPECT_EQ(s->transport, TransportKind::kVerbs);
  EXPECT_DOUBLE_EQ(s->duration_seconds, 2.0);
}

TEST(TestOptions, RefusalsNameTheFlag) {
  auto refuse = [](auto mutate, const std::string& flag) {
    TestOptions t;
    mutate(t);
    auto s = toPairTestSpec(t);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find(flag), std::string::npos) << s.status().toString();
  };
  refuse([](TestOptions& t) { t.op = "atomic"; }, "--op");
  refuse([](TestOptions& t) { t.mode = "x"; }, "--mode");
  refuse([](TestOptions& t) { t.size = "1MB"; }, "--size");
  refuse([](TestOptions& t) { t.size = "0"; }, "--size");
  refuse([](TestOptions& t) { t.iters = 0; }, "--iters");
  refuse([](TestOptions& t) { t.transport = "simulated"; }, "--transport");
  refuse([](TestOptions& t) { t.memory = "gpu"; }, "--memory");
  refuse([](TestOptions& t) { t.reg = "x"; }, "--reg");
  refuse([](TestOptions& t) { t.gpu = 1; }, "--gpu");
  refuse([](TestOptions& t) { t.duration = "soon"; }, "--duration");
  refuse([](TestOptions& t) { t.src_memory = "gpu:0"; }, "--src-memory");
  refuse([](TestOptions& t) { t.dst_memory = "host:1"; }, "--dst-memory");
}

// The combination rules of --memory, --src-memory, --dst-memory, --gpu and --reg
// (common/pair_spec.h applyMemoryOptions), as the CLI spells them.
TEST(TestOptions, EachSideChoosesItsOwnMemory) {
  TestOptions t;
  t.src_memory = "host";
  t.dst_memory = "cuda:1";
  t.reg = "dmabuf";
  auto s = toPairTestSpec(t);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.memory, MemoryKind::kHost);
  EXPECT_EQ(s->initiator.gpu, -1);
  EXPECT_EQ(s->initiator.reg, RegPath::kHost);  // --reg is the GPU sides' path
  EXPECT_EQ(s->target.memory, MemoryKind::kCuda);
  EXPECT_EQ(s->target.gpu, 1);
  EXPECT_EQ(s->target.reg, RegPath::kDmabuf);

  TestOptions r;  // the reverse, GPU index from --gpu
  r.src_memory = "cuda";
  r.gpu = 2;
  s = toPairTestSpec(r);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.memory, MemoryKind::kCuda);
  EXPECT_EQ(s->initiator.gpu, 2);
  EXPECT_EQ(s->initiator.reg, RegPath::kAuto);
  EXPECT_EQ(s->target.memory, MemoryKind::kHost);  // a side given nothing is host

  TestOptions both;  // both on GPUs, different ones
  both.src_memory = "cuda:0";
  both.dst_memory = "cuda:3";
  s = toPairTestSpec(both);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.gpu, 0);
  EXPECT_EQ(s->target.gpu, 3);

  TestOptions shorthand;  // --memory cuda:1 = the same on both sides
  shorthand.memory = "cuda:1";
  s = toPairTestSpec(shorthand);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.gpu, 1);
  EXPECT_EQ(s->target.gpu, 1);
  EXPECT_EQ(s->target.memory, MemoryKind::kCuda);

  TestOptions agree;  // --gpu agreeing with a side's index is not a contradiction
  agree.dst_memory = "cuda:1";
  agree.gpu = 1;
  EXPECT_TRUE(toPairTestSpec(agree).ok());
}

TEST(TestOptions, ContradictoryMemoryFlagsAreRefusedNamingBoth) {
  auto refuse = [](auto mutate, const std::vector<std::string>& flags) {
    TestOptions t;
    mutate(t);
    auto s = toPairTestSpec(t);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    for (const auto& f : flags) {
      EXPECT_NE(s.status().message().find(f), std::string::npos)
          << f << ": " << s.status().toString();
    }
  };
  refuse(
      [](TestOptions& t) {
        t.memory = "cuda";
        t.src_memory = "host";
      },
      {"--src-memory", "--memory"});
  refuse(
      [](TestOptions& t) {
        t.memory = "host";
        t.dst_memory = "host";  // redundant is refused too: one way to say it
      },
      {"--dst-memory", "--memory"});
  refuse(
      [](TestOptions& t) {
        t.dst_memory = "cuda:1";
        t.gpu = 0;
      },
      {"--gpu", "--dst-memory cuda:1"});
  refuse(
      [](TestOptions& t) {
        t.src_memory = "host";
        t.dst_memory = "host";
        t.reg = "peermem";
      },
      {"--reg", "peermem"});
  refuse(
      [](TestOptions& t) {
        t.src_memory = "host";
        t.gpu = 0;
      },
      {"--gpu"});
}

TEST(TestOptions, EachSideChoosesItsOwnRegistrationPath) {
  // Host -> GPU over dma-buf, and GPU (staged) -> GPU (peermem): each side keeps its own path.
  TestOptions t;
  t.src_memory = "host";
  t.dst_memory = "cuda:1";
  t.dst_reg = "dmabuf";
  auto s = toPairTestSpec(t);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.reg, RegPath::kHost);
  EXPECT_EQ(s->target.reg, RegPath::kDmabuf);
  EXPECT_EQ(s->target.gpu, 1);

  TestOptions g;
  g.memory = "cuda";
  g.src_reg = "staged";
  g.dst_reg = "peermem";
  s = toPairTestSpec(g);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.reg, RegPath::kStaged);
  EXPECT_EQ(s->target.reg, RegPath::kPeermem);

  TestOptions one;  // a side without its own path keeps --reg's default (auto)
  one.memory = "cuda";
  one.dst_reg = "dmabuf";
  s = toPairTestSpec(one);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->initiator.reg, RegPath::kAuto);
  EXPECT_EQ(s->target.reg, RegPath::kDmabuf);

  TestOptions host;  // "host" is a host side's own path
  host.src_reg = "host";
  EXPECT_TRUE(toPairTestSpec(host).ok());
}

TEST(TestOptions, PerSideRegistrationRefusalsNameTheFlag) {
  auto refuse = [](auto mutate, const std::vector<std::string>& words) {
    TestOptions t;
    mutate(t);
    auto s = toPairTestSpec(t);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    for (const auto& w : words) {
      EXPECT_NE(s.status().message().find(w), std::string::npos)
          << w << ": " << s.status().toString();
    }
  };
  refuse(
      [](TestOptions& t) {
        t.memory = "cuda";
        t.reg = "dmabuf";
        t.src_reg = "staged";
      },
      {"--src-reg", "--reg"});
  refuse(
      [](TestOptions& t) {
        t.dst_memory = "cuda";
        t.src_reg = "dmabuf";  // SRC is on host memory
      },
      {"--src-reg", "dmabuf", "GPU memory only"});
  refuse(
      [](TestOptions& t) {
        t.src_memory = "cuda";
        t.src_reg = "host";
      },
      {"--src-reg", "host", "does not apply to GPU memory"});
  refuse([](TestOptions& t) { t.dst_reg = "gpudirect"; }, {"--dst-reg", "gpudirect"});
  refuse(
      [](TestOptions& t) {
        t.memory = "cuda";
        t.reg = "host";  // --reg is the GPU sides' path
      },
      {"--reg", "does not apply to GPU memory"});
}

TEST(ParseEndpoint, WorkerAndOptionalNic) {
  EndpointSelector s;
  ASSERT_TRUE(parseEndpoint("h1/mlx5_0", "SRC", &s).ok());
  EXPECT_EQ(s.worker, "h1");
  EXPECT_EQ(s.device, "mlx5_0");
  ASSERT_TRUE(parseEndpoint("h2", "DST", &s).ok());
  EXPECT_EQ(s.device, "");
  EXPECT_FALSE(parseEndpoint("/mlx5_0", "SRC", &s).ok());
  EXPECT_FALSE(parseEndpoint("h1/", "SRC", &s).ok());
}

TEST(SizeArgs, RangeAndList) {
  auto r = parseSizeRange("4KiB..32KiB", "--sweep");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<uint64_t>{4096, 8192, 16384, 32768}));
  auto d = parseSizeRange("default", "--sweep");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->front(), 2u);
  EXPECT_EQ(d->back(), 8u << 20);
  EXPECT_FALSE(parseSizeRange("4KiB", "--sweep-sizes").ok());
  EXPECT_FALSE(parseSizeRange("8KiB..4KiB", "--sweep-sizes").ok());
  auto l = parseSizeList({"4KiB,1MiB", "2"}, "--sizes");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (std::vector<uint64_t>{4096, 1 << 20, 2}));
  auto bad = parseSizeList({"4KiB,,1MiB"}, "--sizes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--sizes"), std::string::npos);
}

TEST(PairsFile, CommentsBlanksAndBothSeparators) {
  auto p = parsePairsFile("# rack 12\nh1:h2\n\n  h3/mlx5_0  h4/mlx5_1  # comment\n", "p.txt");
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(*p, (std::vector<std::string>{"h1:h2", "h3/mlx5_0:h4/mlx5_1"}));
  auto bad = parsePairsFile("h1:h2\nh3\n", "p.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("p.txt:2"), std::string::npos) << bad.status().toString();
  EXPECT_FALSE(parsePairsFile("a b c\n", "p.txt").ok());
}

TEST(BuildSweepSpec, AllPairsWithOptions) {
  SweepArgs a;
  a.pattern = "all-pairs";
  a.direction = "both";
  a.hosts = {"h1", "h2", "h3"};
  a.exclude = {"h4"};
  a.select = {"rack=r12"};
  a.sizes = {"4KiB", "1MiB"};
  a.max_concurrency = 8;
  a.retries = 2;
  a.baseline = "previous";
  a.name = "nightly";
  a.queue = true;
  TestOptions t;
  t.op = "read";
  t.memory = "cuda";
  auto s = buildSweepSpec(a, t, "", "thresholds: {}\n");
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->pattern(), "all-pairs");
  EXPECT_EQ(s->direction(), "both");
  EXPECT_EQ(s->hosts_size(), 3);
  EXPECT_EQ(s->exclude(0), "h4");
  EXPECT_EQ(s->select(0), "rack=r12");
  ASSERT_EQ(s->sizes_size(), 2);
  EXPECT_EQ(s->sizes(1), 1u << 20);
  EXPECT_EQ(s->max_concurrency(), 8u);
  EXPECT_EQ(s->retries(), 2u);
  EXPECT_EQ(s->baseline(), "previous");
  EXPECT_EQ(s->config_yaml(), "thresholds: {}\n");
  EXPECT_TRUE(s->localise());
  EXPECT_TRUE(s->queue());
  EXPECT_EQ(s->test().op(), v1::OP_READ);
  EXPECT_EQ(s->test().initiator().memory(), v1::MEMORY_KIND_CUDA);
  EXPECT_EQ(s->test().initiator().gpu(), 0);
  EXPECT_TRUE(s->test().initiator().worker().empty());
}

TEST(BuildSweepSpec, PairsFromArgumentsAndFile) {
  SweepArgs a;
  a.pattern = "pairs";
  a.pairs = {"h1:h2/mlx5_0"};
  a.pairs_file = "pairs.txt";
  a.sweep_sizes = "2..8";
  a.no_localise = true;
  auto s = buildSweepSpec(a, TestOptions{}, "h3 h4\n", "");
  ASSERT_TRUE(s.ok()) << s.status().toString();
  ASSERT_EQ(s->pairs_size(), 2);
  EXPECT_EQ(s->pairs(0), "h1:h2/mlx5_0");
  EXPECT_EQ(s->pairs(1), "h3:h4");
  EXPECT_EQ(s->sizes_size(), 3);
  EXPECT_FALSE(s->localise());
}

TEST(BuildSweepSpec, RefusalsNameTheFlag) {
  auto refuse = [](auto mutate, const std::string& flag) {
    SweepArgs a;
    a.pattern = "all-pairs";
    TestOptions t;
    mutate(a, t);
    auto s = buildSweepSpec(a, t, "", "");
    ASSERT_FALSE(s.ok()) << flag;
    EXPECT_NE(s.status().message().find(flag), std::string::npos) << s.status().toString();
  };
  refuse([](SweepArgs& a, TestOptions&) { a.pattern = "mesh"; }, "--pattern");
  refuse([](SweepArgs& a, TestOptions&) { a.pattern = "pairs"; }, "--pattern pairs");
  refuse([](SweepArgs& a, TestOptions&) { a.pairs = {"h1:h2"}; }, "PAIRS");
  refuse(
      [](SweepArgs& a, TestOptions&) {
        a.pattern = "pairs";
        a.pairs = {"h1-h2"};
      },
      "PAIRS");
  refuse([](SweepArgs& a, TestOptions&) { a.direction = "up"; }, "--direction");
  refuse(
      [](SweepArgs& a, TestOptions& t) {
        a.direction = "bidir";
        t.mode = "lat";
      },
      "--direction");
  refuse([](SweepArgs& a, TestOptions&) { a.rounds = 4; }, "--rounds");
  refuse([](SweepArgs& a, TestOptions&) { a.select = {"rack"}; }, "--select");
  refuse([](SweepArgs& a, TestOptions&) { a.hosts = {"h1", ""}; }, "--hosts");
  refuse(
      [](SweepArgs& a, TestOptions&) {
        a.hosts = {"h1"};
        a.exclude = {"h1"};
      },
      "--exclude");
  refuse([](SweepArgs& a, TestOptions&) { a.sizes = {"1MB"}; }, "--sizes");
  refuse([](SweepArgs&, TestOptions& t) { t.op = "cas"; }, "--op");
}

TEST(BuildSweepSpec, RandomTakesRoundsAndSeed) {
  SweepArgs a;
  a.pattern = "random";
  a.rounds = 5;
  a.seed = 42;
  auto s = buildSweepSpec(a, TestOptions{}, "", "");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->random_rounds(), 5u);
  EXPECT_EQ(s->seed(), 42u);
  // Left out: the coordinator's default (3), sent as absent.
  a.rounds.reset();
  s = buildSweepSpec(a, TestOptions{}, "", "");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_random_rounds());
}

// Issue #22: `--rounds 0` silently became 3. It is refused, naming the flag and the range.
TEST(BuildSweepSpec, RoundsZeroIsRefusedWithTheRange) {
  SweepArgs a;
  a.pattern = "random";
  a.rounds = 0;
  auto s = buildSweepSpec(a, TestOptions{}, "", "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(s.status().message(), "--rounds: 0 is out of range 1..100000");
  a.rounds = 100001;
  s = buildSweepSpec(a, TestOptions{}, "", "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "--rounds: 100001 is out of range 1..100000");
  a.rounds = 100000;
  EXPECT_TRUE(buildSweepSpec(a, TestOptions{}, "", "").ok());
}

// Names are sent trimmed ("a, b" gives " b"), so a name in both lists is found trimmed too:
// `--hosts "a, b" --exclude b` was sent as hosts a,b excluding b instead of refused.
TEST(BuildSweepSpec, ANameInHostsAndExcludeIsRefusedWhateverItsSpaces) {
  for (const auto& [hosts, exclude] :
       std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
           {{"a", " b"}, {"b"}}, {{"a", "b"}, {"b "}}, {{" b\t"}, {" b "}}}) {
    SweepArgs a;
    a.pattern = "all-pairs";
    a.hosts = hosts;
    a.exclude = exclude;
    auto s = buildSweepSpec(a, TestOptions{}, "", "");
    ASSERT_FALSE(s.ok()) << "--hosts " << hosts.back() << " --exclude " << exclude.back();
    EXPECT_EQ(s.status().message(), "--exclude: 'b' is also in --hosts");
    EXPECT_EQ(s.status().fix(), "keep it in one list");
  }
}

TEST(SinglePairSweep, OnePairTheSizesAndNoLocalisation) {
  v1::RunTestRequest req;
  req.mutable_initiator()->set_worker("a");
  req.mutable_initiator()->set_device("mlx5_0");
  req.mutable_target()->set_worker("b");
  req.set_iterations(10);
  auto s = singlePairSweep("a/mlx5_0", "b", req, {4096, 8192});
  EXPECT_EQ(s.pattern(), "pairs");
  ASSERT_EQ(s.pairs_size(), 1);
  EXPECT_EQ(s.pairs(0), "a/mlx5_0:b");
  EXPECT_EQ(s.sizes_size(), 2);
  EXPECT_FALSE(s.localise());
  EXPECT_EQ(s.test().iterations(), 10u);
  EXPECT_TRUE(s.test().initiator().worker().empty());
}

}  // namespace
}  // namespace gdrmesh::cli
