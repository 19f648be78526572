// The authenticated control plane through real processes: a coordinator serving mutual TLS,
// workers with their own certificates, the CLI as admin or reader, all made by `gdrmesh certs`;
// and raw gRPC clients (the real wire) for what the CLI refuses to even try: a worker's
// certificate asking for another worker's name, no client certificate, another CA's.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

using json = nlohmann::json;

grpc::SslCredentialsOptions credsOf(const std::string& tls_dir, bool with_client_cert = true) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = readFile(tls_dir + "/ca.pem");
  if (with_client_cert) {
    o.pem_cert_chain = readFile(tls_dir + "/cert.pem");
    o.pem_private_key = readFile(tls_dir + "/key.pem");
  }
  return o;
}

std::unique_ptr<v1::ControlService::Stub> control(const std::string& addr,
                                                  const grpc::SslCredentialsOptions& o) {
  return v1::ControlService::NewStub(grpc::CreateChannel(addr, grpc::SslCredentials(o)));
}

grpc::Status listWorkers(v1::ControlService::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ListWorkersResponse resp;
  return stub.ListWorkers(&ctx, v1::ListWorkersRequest(), &resp);
}

// One registration on the real WorkerService stream; returns how the coordinator ended it
// (OK with `registered` set when it accepted).
grpc::Status registerAs(const std::string& addr, const grpc::SslCredentialsOptions& o,
                        const std::string& name, bool simulated, bool* registered) {
  auto stub = v1::WorkerService::NewStub(grpc::CreateChannel(addr, grpc::SslCredentials(o)));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto s = stub->Connect(&ctx);
  v1::WorkerMessage m;
  m.mutable_register_()->set_name(name);
  m.mutable_register_()->set_protocol_version(1);
  m.mutable_register_()->set_simulated(simulated);
  s->Write(m);
  v1::CoordinatorMessage first;
  *registered = s->Read(&first) && first.has_registered();
  if (*registered) ctx.TryCancel();
  s->WritesDone();
  return s->Finish();
}

std::string peerOf(const json& workers, const std::string& name) {
  for (const auto& w : workers) {
    if (w["name"] == name)
      return w["state"].get<std::string>() + " " + w["peer"].get<std::string>();
  }
  return "";
}

class TlsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.startCoordinator();
    c_.startWorker("a");
    c_.startWorker("b");
  }
  LocalCluster c_{Security::kTls};
};

TEST_F(TlsClusterTest, AdminRunsTestsAndSweepsOverMutualTls) {
  auto r = c_.cli({"test", "a", "b", "--size", "4KiB", "--iters", "10", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["status"], "PASSED") << r.out;
  r = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "4KiB", "--iters", "10"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string log = readFile(c_.dir() + "/coordinator.err");
  EXPECT_NE(log.find("worker a registered from"), std::string::npos) << log;
  EXPECT_NE(log.find("certificate worker 'a'"), std::string::npos) << log;
  EXPECT_NE(log.find("StartSweep by admin 'it-admin'"), std::string::npos) << log;
  EXPECT_NE(readFile(c_.dir() + "/coordinator.out").find("mutual TLS"), std::string::npos);
}

// `gdrmesh report` takes its connection options where every client command does (issue #23):
// it reaches a TLS coordinator with the admin's certificate (it used to dial plaintext and
// exit 4), and without credentials it exits 2 naming the fix, as the others do.
TEST_F(TlsClusterTest, ReportReachesATlsCoordinatorAndNeedsCredentials) {
  auto r = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "4KiB", "--iters", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rows = c_.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
  ASSERT_FALSE(rows.empty());
  const std::string id = rows[0]["id"];
  r = c_.cli({"report", id, "--format", "md"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out;

  // No credentials at all (neither flags nor GDRMESH_TLS_DIR / GDRMESH_INSECURE).
  const std::string err = c_.dir() + "/report-nocreds.err";
  const std::string cmd = "env -u GDRMESH_TLS_DIR -u GDRMESH_INSECURE '" + LocalCluster::binary() +
                          "' report " + id + " --format md --coordinator " + c_.address() +
                          " >/dev/null 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), 2) << readFile(err);
  EXPECT_NE(readFile(err).find("no TLS credentials"), std::string::npos) << readFile(err);
  // And the same flags as the others: a reader's --tls-dir reads the report too.
  r = c_.cli({"report", id, "--format", "md", "--tls-dir", c_.issue("reader", "auditor")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(TlsClusterTest, AReaderListsButCannotStartTestsOrSweeps) {
  const std::string reader = c_.issue("reader", "rita");
  auto r = c_.cli({"workers", "-o", "json", "--tls-dir", reader});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 2u) << r.out;
  r = c_.cli({"results", "--tls-dir", reader});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = c_.cli({"sweeps", "--tls-dir", reader});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  r = c_.cli({"test", "a", "b", "--tls-dir", reader});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("RunTest needs an admin credential"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reader 'rita'"), std::string::npos) << r.err;
  r = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--detach", "--tls-dir", reader});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("StartSweep needs an admin credential"), std::string::npos) << r.err;
  EXPECT_TRUE(c_.query("SELECT id FROM results").empty());
  EXPECT_TRUE(c_.query("SELECT id FROM sweeps").empty());

  // A worker's certificate is no CLI credential at all.
  r = c_.cli({"workers", "--tls-dir", c_.issue("worker", "a")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("needs admin or reader"), std::string::npos) << r.err;
}

// The fabric history's RPCs follow the same rules: a reader lists the stored snapshots but may
// not ask a worker to discover (that stores a snapshot); an admin may, and a worker without
// InfiniBand answers a stored finding naming it (exit 3), not an error.
TEST_F(TlsClusterTest, AReaderListsFabricSnapshotsButOnlyAnAdminDiscovers) {
  const std::string reader = c_.issue("reader", "rita");
  auto r = c_.cli({"fabric", "discover", "--worker", "a", "--tls-dir", reader});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("DiscoverFabric needs an admin credential"), std::string::npos) << r.err;
  // Asking every worker at once is as much an admin's call as asking one.
  r = c_.cli({"fabric", "discover", "--lldp", "--all-workers", "--tls-dir", reader});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("DiscoverLldpAll needs an admin credential"), std::string::npos) << r.err;
  r = c_.cli({"fabric", "history", "-o", "json", "--tls-dir", reader});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(json::parse(r.out).empty()) << r.out;

  if (std::ifstream("/sys/class/infiniband_mad/abi_version").good()) {
    GTEST_SKIP() << "this host has an InfiniBand management interface: worker a would find it";
  }
  r = c_.cli({"fabric", "discover", "--worker", "a", "-o", "json"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const json stored = json::parse(r.out);
  EXPECT_EQ(stored["outcome"], "skipped") << r.out;
  EXPECT_NE(stored["detail"].get<std::string>().find(" on a: "), std::string::npos) << r.out;
  ASSERT_EQ(stored["findings"].size(), 1u) << r.out;
  EXPECT_EQ(stored["findings"][0]["kind"], "no_fabric") << r.out;
  r = c_.cli({"fabric", "history", "-o", "json", "--tls-dir", reader});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(json::parse(r.out).size(), 1u) << r.out;
  EXPECT_EQ(json::parse(r.out)[0]["worker"], "a") << r.out;
  const std::string log = readFile(c_.dir() + "/coordinator.err");
  EXPECT_NE(log.find("DiscoverFabric by admin 'it-admin'"), std::string::npos) << log;
}

TEST_F(TlsClusterTest, AWorkerCannotRegisterAsAnotherOrTakeItsNameOver) {
  const std::string before = peerOf(c_.workersJson(), "a");
  ASSERT_EQ(before.rfind("online ", 0), 0u) << before;

  // The worker command refuses before it connects.
  auto r = c_.cli({"worker", "--name", "a", "--tls-dir", c_.issue("worker", "b")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("certificate is for 'b'"), std::string::npos) << r.err;

  // On the wire, b's certificate asking for a's name is refused by the coordinator.
  const auto b_creds = credsOf(c_.issue("worker", "b"));
  bool registered = true;
  auto st = registerAs(c_.address(), b_creds, "a", false, &registered);
  EXPECT_FALSE(registered);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  EXPECT_NE(st.error_message().find("worker name 'a' is not the name in this worker's "
                                    "certificate ('b')"),
            std::string::npos)
      << st.error_message();
  // The real a is not displaced: same connection, still online.
  EXPECT_EQ(peerOf(c_.workersJson(), "a"), before);

  // Nor can b's certificate take the name once a is gone.
  c_.killWorker("a");
  ASSERT_TRUE(c_.waitFor([](const json& ws) {
    for (const auto& w : ws) {
      if (w["name"] == "a") return w["state"] != "online";
    }
    return false;
  }));
  st = registerAs(c_.address(), b_creds, "a", false, &registered);
  EXPECT_FALSE(registered);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  EXPECT_EQ(peerOf(c_.workersJson(), "a").rfind("online", 0), std::string::npos);

  // An admin's or a simulator's certificate registers no real worker either.
  for (const auto& [role, name] : {std::pair{"admin", "it-admin"}, std::pair{"simulator", "a"}}) {
    st = registerAs(c_.address(), credsOf(c_.issue(role, name)), "a", false, &registered);
    EXPECT_FALSE(registered) << role;
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << role;
  }
  // a's own certificate still may.
  st = registerAs(c_.address(), credsOf(c_.issue("worker", "a")), "a", false, &registered);
  EXPECT_TRUE(registered) << st.error_message();
}

TEST_F(TlsClusterTest, NoClientCertificateIsRefused) {
  const auto no_cert = credsOf(c_.issue("admin", "it-admin"), /*with_client_cert=*/false);
  auto st = listWorkers(*control(c_.address(), no_cert));
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  bool registered = true;
  st = registerAs(c_.address(), no_cert, "ghost", false, &registered);
  EXPECT_FALSE(registered);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(peerOf(c_.workersJson(), "ghost"), "");
  // The same client with its certificate gets in.
  EXPECT_TRUE(listWorkers(*control(c_.address(), credsOf(c_.issue("admin", "it-admin")))).ok());
}

TEST_F(TlsClusterTest, ACertificateOfAnotherCaIsRefused) {
  const std::string other = c_.dir() + "/other-ca";
  ASSERT_EQ(c_.cli({"certs", "init", "--dir", other}, false).exit_code, 0);
  ASSERT_EQ(
      c_.cli({"certs", "issue", "--dir", other, "--role", "admin", "--name", "mallory"}, false)
          .exit_code,
      0);
  ASSERT_EQ(c_.cli({"certs", "issue", "--dir", other, "--role", "worker", "--name", "a"}, false)
                .exit_code,
            0);
  // Foreign client certificates, even trusting the real CA, do not get in.
  for (const char* who : {"mallory", "a"}) {
    auto o = credsOf(other + "/" + who);
    o.pem_root_certs = readFile(c_.certsDir() + "/ca.pem");
    EXPECT_FALSE(listWorkers(*control(c_.address(), o)).ok()) << who;
    bool registered = true;
    EXPECT_FALSE(registerAs(c_.address(), o, "a", false, &registered).ok()) << who;
    EXPECT_FALSE(registered) << who;
  }
  // The CLI checks its files first: a certificate that the given CA did not issue.
  auto r = c_.cli({"workers", "--cert", other + "/mallory/cert.pem", "--key",
                   other + "/mallory/key.pem", "--ca", c_.certsDir() + "/ca.pem"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("does not verify against the CA"), std::string::npos) << r.err;
  // A self-consistent foreign folder connects nowhere, and says why it may be.
  r = c_.cli({"workers", "--tls-dir", other + "/mallory"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("tls:"), std::string::npos) << r.err;
}

TEST_F(TlsClusterTest, APlaintextClientOfATlsCoordinatorFailsClearly) {
  auto r = c_.cli({"workers", "--insecure"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("unreachable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tls: this client speaks plaintext"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--tls-dir"), std::string::npos) << r.err;
}

TEST_F(TlsClusterTest, SimulatedWorkersUseASimulatorCertificate) {
  const std::string sim = c_.issue("simulator", "sim");
  // Client-side checks: a worker certificate, or a prefix that is not the certificate's name.
  auto r = c_.cli({"worker", "--simulate", "2", "--tls-dir", c_.issue("worker", "a")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("needs simulator"), std::string::npos) << r.err;
  r = c_.cli({"worker", "--simulate", "2", "--name-prefix", "other", "--tls-dir", sim});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--name-prefix other"), std::string::npos) << r.err;
  // On the wire: the simulator certificate registers simulated workers under its prefix only.
  bool registered = false;
  auto st = registerAs(c_.address(), credsOf(sim), "b2", true, &registered);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  // The real thing: three simulated workers and a test between two of them.
  c_.startWorker("sim-0000", {"--simulate", "3", "--tls-dir", sim});
  ASSERT_TRUE(c_.waitFor([](const json& ws) {
    int n = 0;
    for (const auto& w : ws) n += w["state"] == "online";
    return n == 5;
  }));
  r = c_.cli({"test", "sim-0000", "sim-0002", "--size", "4KiB", "--iters", "10", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["transport"], "simulated") << r.out;
}

// Revocation: `gdrmesh certs revoke` writes the CA's crl.pem; the coordinator (--crl) refuses
// every call made with a revoked certificate, disconnects a connected worker whose
// certificate is revoked while it runs (the file is read again when it changes, no restart),
// and keeps the last good list when the file is broken.
TEST(TlsRevocation, RevokedCertificatesAreRefusedAndAConnectedWorkerIsCutOff) {
  LocalCluster c(Security::kTls);
  const std::string pki = c.certsDir();
  const std::string crl = pki + "/crl.pem";
  const std::string old_reader = c.issue("reader", "old-laptop");
  auto r = c.cli({"certs", "revoke", "--dir", pki, old_reader + "/cert.pem"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("reader 'old-laptop'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 revoked"), std::string::npos) << r.out;

  c.startCoordinator({"--crl", crl});
  c.startWorker("a");
  c.startWorker("b");
  EXPECT_NE(readFile(c.dir() + "/coordinator.out").find("1 revoked"), std::string::npos);

  // The revoked reader is refused; a reader issued later is not.
  r = c.cli({"workers", "--tls-dir", old_reader});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("is revoked"), std::string::npos) << r.err;
  r = c.cli({"workers", "--tls-dir", c.issue("reader", "new-laptop")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = c.cli({"test", "a", "b", "--size", "4KiB", "--iters", "10", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // Revoking b's certificate while b is connected: b is cut off and cannot come back.
  const std::string b_dir = c.issue("worker", "b");
  r = c.cli({"certs", "revoke", "--dir", pki, b_dir + "/cert.pem"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 revoked"), std::string::npos) << r.out;
  EXPECT_TRUE(c.waitFor([](const json& ws) {
    for (const auto& w : ws) {
      if (w["name"] == "b") return w["state"] != "online";
    }
    return false;
  })) << "b still online after its certificate was revoked";
  bool registered = true;
  auto st = registerAs(c.address(), credsOf(b_dir), "b", false, &registered);
  EXPECT_FALSE(registered);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  EXPECT_NE(st.error_message().find("is revoked"), std::string::npos) << st.error_message();
  r = c.cli({"test", "a", "b", "--size", "4KiB", "--iters", "10"});
  EXPECT_NE(r.exit_code, 0) << "a test with a revoked worker must not run: " << r.out;
  // Revoking again says so and changes nothing.
  r = c.cli({"certs", "revoke", "--dir", pki, b_dir + "/cert.pem"}, false);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("was revoked already"), std::string::npos) << r.out;

  // A broken list does not un-revoke anything.
  {
    std::ofstream f(crl, std::ios::trunc);
    f << "-----BEGIN X509 CRL-----\nnot a list\n-----END X509 CRL-----\n";
  }
  r = c.cli({"workers", "--tls-dir", old_reader});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("is revoked"), std::string::npos) << r.err;
  st = registerAs(c.address(), credsOf(b_dir), "b", false, &registered);
  EXPECT_FALSE(registered);
  const std::string log = readFile(c.dir() + "/coordinator.err");
  EXPECT_NE(log.find("disconnecting worker b"), std::string::npos) << log;
  EXPECT_NE(log.find("does not load, keeping the 2 revoked"), std::string::npos) << log;
  // a is untouched throughout.
  r = c.cli({"test", "a", "a", "--size", "4KiB", "--iters", "10"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// An older list cannot un-revoke (issue #23, item 5): a coordinator whose --crl file is
// replaced by an older list of the same CA keeps the newer one in force, and refuses to start
// on the older list after a restart (the newest list's number is kept beside the database).
TEST(TlsRevocation, AnOlderListIsRefusedOnReloadAndAtRestart) {
  LocalCluster c(Security::kTls);
  const std::string pki = c.certsDir();
  const std::string first = c.issue("reader", "laptop-1");
  const std::string second = c.issue("reader", "laptop-2");
  auto r = c.cli({"certs", "revoke", "--dir", pki, first + "/cert.pem"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string list1 = readFile(pki + "/crl.pem");
  r = c.cli({"certs", "revoke", "--dir", pki, second + "/cert.pem"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string list2 = readFile(pki + "/crl.pem");
  const std::string crl = c.dir() + "/crl.pem";  // the coordinator's copy
  auto put = [&](const std::string& text) {
    { std::ofstream(crl + ".new", std::ios::trunc) << text; }
    ASSERT_EQ(std::rename((crl + ".new").c_str(), crl.c_str()), 0);
  };
  put(list2);
  c.startCoordinator({"--crl", crl});
  r = c.cli({"workers", "--tls-dir", second});
  EXPECT_NE(r.err.find("is revoked"), std::string::npos) << r.err;

  // The copy goes back to the first list (laptop-2 not on it): laptop-2 stays refused.
  put(list1);
  r = c.cli({"workers", "--tls-dir", second});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("is revoked"), std::string::npos) << r.err;
  EXPECT_NE(readFile(c.dir() + "/coordinator.err").find("older one, refused"), std::string::npos)
      << readFile(c.dir() + "/coordinator.err");

  // Restarted on the older list: refused at start, naming --crl and the record.
  c.stopCoordinator();
  r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", c.dbPath(), "--tls-dir",
             pki + "/coordinator-coordinator", "--crl", crl},
            false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--crl " + crl), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("older than one this coordinator has used"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(c.dbPath() + ".crl-state"), std::string::npos) << r.err;
  // On the newer list it starts, and laptop-2 is refused.
  put(list2);
  c.startCoordinator({"--crl", crl});
  r = c.cli({"workers", "--tls-dir", second});
  EXPECT_NE(r.err.find("is revoked"), std::string::npos) << r.err;
  r = c.cli({"workers", "--tls-dir", c.issue("reader", "laptop-3")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(TlsRevocation, ACrlOfAnotherCaOrWithoutTlsIsRefusedAtStart) {
  LocalCluster c(Security::kTls);
  LocalCluster other(Security::kTls);
  auto r = other.cli(
      {"certs", "revoke", "--dir", other.certsDir(), other.issue("reader", "x") + "/cert.pem"},
      false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string coord = c.issue("coordinator", "coordinator");
  r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", c.dir() + "/x.db", "--tls-dir",
             coord, "--crl", other.certsDir() + "/crl.pem"},
            false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not signed by this cluster's CA"), std::string::npos) << r.err;
  r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", c.dir() + "/x.db", "--insecure",
             "--crl", other.certsDir() + "/crl.pem"},
            false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--crl: only with TLS"), std::string::npos) << r.err;
}

TEST(InsecureCoordinator, PlaintextIsOnlyEverAskedForAndOnlyOnLoopback) {
  LocalCluster c;
  const std::string db = c.dir() + "/x.db";
  // Neither TLS nor --insecure: refused, naming both ways out.
  auto r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", db});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no TLS credentials"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--insecure"), std::string::npos) << r.err;
  // Plaintext on every interface: refused without the force flag.
  r = c.cli({"coordinator", "--listen", "0.0.0.0:0", "--db", db, "--insecure"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("refusing plaintext gRPC on 0.0.0.0:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--insecure-allow-remote"), std::string::npos) << r.err;
  r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", db, "--insecure-allow-remote"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("only with --insecure"), std::string::npos) << r.err;
  // Forced: it serves (reached over loopback here).
  c.startCoordinator({"--insecure-allow-remote"}, 0, "0.0.0.0");
  r = c.cli({"workers"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(readFile(c.dir() + "/coordinator.out").find("PLAINTEXT"), std::string::npos);
}

TEST(InsecureCoordinator, ATlsClientOfAPlaintextCoordinatorFailsClearly) {
  LocalCluster c;
  const std::string pki = c.dir() + "/pki";
  ASSERT_EQ(c.cli({"certs", "init", "--dir", pki}, false).exit_code, 0);
  ASSERT_EQ(
      c.cli({"certs", "issue", "--dir", pki, "--role", "admin", "--name", "x"}, false).exit_code,
      0);
  c.startCoordinator();
  auto r = c.cli({"workers", "--tls-dir", pki + "/x"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("unreachable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tls: the coordinator answered in plaintext"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gdrmesh::testing
