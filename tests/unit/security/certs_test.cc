// The cluster CA and certificates (security/certs.h) with the real OpenSSL library, in a
// temporary folder: what is issued parses back to its role and name, keys are private, and
// every way a node's TLS files can be wrong is reported as such.
#include "security/certs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "security/revocation.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh {
namespace {

using ::gdrmesh::testing::TempDir;

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

class CertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    CaOptions ca;
    ca.dir = caDir();
    Status st = initCa(ca);
    ASSERT_TRUE(st.ok()) << st.toString();
  }
  std::string caDir() const { return tmp_.file("ca"); }
  std::string issue(PeerRole role, const std::string& name, IssueOptions o = {}) {
    o.ca_dir = o.ca_dir.empty() ? caDir() : o.ca_dir;
    o.role = role;
    o.name = name;
    auto out = issueCertificate(o);
    EXPECT_TRUE(out.ok()) << out.status().toString();
    return out.ok() ? *out : "";
  }
  TempDir tmp_;
};

TEST_F(CertsTest, CaKeyIsPrivate) {
  EXPECT_EQ(modeOf(caDir() + "/ca.key"), 0600u);
  EXPECT_EQ(modeOf(caDir()), 0700u);
  EXPECT_NE(slurp(caDir() + "/ca.pem").find("BEGIN CERTIFICATE"), std::string::npos);
}

TEST_F(CertsTest, IssuedCertificateParsesToItsRoleAndName) {
  for (PeerRole role : {PeerRole::kCoordinator, PeerRole::kWorker, PeerRole::kSimulator,
                        PeerRole::kAdmin, PeerRole::kReader}) {
    const std::string name = std::string("n-") + toString(role);
    const std::string dir = issue(role, name);
    ASSERT_EQ(dir, caDir() + "/" + name);
    EXPECT_EQ(modeOf(dir + "/key.pem"), 0600u);
    auto info = parseCertificate(slurp(dir + "/cert.pem"), "cert.pem");
    ASSERT_TRUE(info.ok()) << info.status().toString();
    EXPECT_EQ(info->identity.role, role);
    EXPECT_EQ(info->identity.name, name);
    EXPECT_NE(info->subject.find("OU = " + std::string(toString(role))), std::string::npos)
        << info->subject;
    // Default validity: a year, starting a few minutes ago.
    const int64_t days = (info->not_after_ms - info->not_before_ms) / 86400000;
    EXPECT_EQ(days, 365);
    EXPECT_LE(info->not_before_ms, nowMs());
    EXPECT_EQ(slurp(dir + "/ca.pem"), slurp(caDir() + "/ca.pem"));
  }
}

TEST_F(CertsTest, LoadTlsAcceptsMatchingFilesForTheRightRole) {
  const std::string dir = issue(PeerRole::kWorker, "gpu-01");
  CertInfo info;
  auto m = loadTls(tlsDirPaths(dir), {PeerRole::kWorker}, nowMs(), "--tls-dir", &info);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(info.identity.name, "gpu-01");
  EXPECT_NE(m->cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(m->key_pem.find("PRIVATE KEY"), std::string::npos);
}

TEST_F(CertsTest, AWrongRoleIsNamed) {
  const std::string dir = issue(PeerRole::kReader, "bob");
  auto m = loadTls(tlsDirPaths(dir), {PeerRole::kWorker}, nowMs(), "--tls-dir " + dir);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("reader 'bob'"), std::string::npos) << m.status().toString();
  EXPECT_NE(m.status().message().find("needs worker"), std::string::npos) << m.status().toString();
  EXPECT_NE(m.status().message().find("--tls-dir " + dir), std::string::npos);
}

TEST_F(CertsTest, AKeyOfAnotherCertificateIsRefused) {
  const std::string a = issue(PeerRole::kWorker, "a");
  const std::string b = issue(PeerRole::kWorker, "b");
  TlsPaths p = tlsDirPaths(a);
  p.key = b + "/key.pem";
  auto m = loadTls(p, {PeerRole::kWorker}, nowMs(), "--key");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("is not the private key of"), std::string::npos)
      << m.status().toString();
}

TEST_F(CertsTest, ACertificateOfAnotherCaIsRefused) {
  CaOptions other;
  other.dir = tmp_.file("other-ca");
  ASSERT_TRUE(initCa(other).ok());
  IssueOptions o;
  o.ca_dir = other.dir;
  const std::string foreign = issue(PeerRole::kWorker, "gpu-01", o);
  TlsPaths p = tlsDirPaths(foreign);
  p.ca = caDir() + "/ca.pem";  // this cluster's CA
  auto m = loadTls(p, {PeerRole::kWorker}, nowMs(), "--tls-dir");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("does not verify against the CA"), std::string::npos)
      << m.status().toString();
}

TEST_F(CertsTest, AnExpiredCertificateSaysWhenAndHowToRenew) {
  IssueOptions o;
  o.days = 1;
  o.not_before_s = static_cast<int64_t>(std::time(nullptr)) - 10 * 86400;
  const std::string dir = issue(PeerRole::kWorker, "old", o);
  auto m = loadTls(tlsDirPaths(dir), {PeerRole::kWorker}, nowMs(), "--tls-dir");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(m.status().message().find("expired on"), std::string::npos) << m.status().toString();
  EXPECT_NE(m.status().fix().find("certs issue --role worker --name old"), std::string::npos)
      << m.status().fix();
}

TEST_F(CertsTest, ACertificateNotYetValidPointsAtTheClock) {
  const std::string dir = issue(PeerRole::kWorker, "w");
  auto m = loadTls(tlsDirPaths(dir), {PeerRole::kWorker}, nowMs() - 86400000, "--tls-dir");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("not valid before"), std::string::npos)
      << m.status().toString();
  EXPECT_NE(m.status().fix().find("clock"), std::string::npos);
}

TEST_F(CertsTest, MissingAndGarbageFilesAreNamed) {
  TlsPaths p = tlsDirPaths(tmp_.file("nowhere"));
  auto m = loadTls(p, {PeerRole::kWorker}, nowMs(), "--tls-dir nowhere");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(p.ca), std::string::npos) << m.status().toString();

  const std::string dir = issue(PeerRole::kWorker, "w");
  std::ofstream(dir + "/cert.pem") << "not a certificate\n";
  m = loadTls(tlsDirPaths(dir), {PeerRole::kWorker}, nowMs(), "--tls-dir");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("not a PEM certificate"), std::string::npos)
      << m.status().toString();
}

TEST_F(CertsTest, TheCaCertificateIsNoNodeIdentity) {
  auto info = parseCertificate(slurp(caDir() + "/ca.pem"), "ca.pem");
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("role"), std::string::npos) << info.status().toString();
}

TEST_F(CertsTest, NothingIsOverwrittenUnlessForced) {
  CaOptions ca;
  ca.dir = caDir();
  Status st = initCa(ca);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.fix().find("--force"), std::string::npos);

  issue(PeerRole::kWorker, "w");
  IssueOptions o;
  o.ca_dir = caDir();
  o.role = PeerRole::kWorker;
  o.name = "w";
  EXPECT_FALSE(issueCertificate(o).ok());
  o.force = true;
  EXPECT_TRUE(issueCertificate(o).ok());
}

TEST_F(CertsTest, BadIssueInputNamesTheField) {
  IssueOptions o;
  o.ca_dir = caDir();
  o.name = "a b";
  auto r = issueCertificate(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--name"), std::string::npos);
  o.name = "coord";
  o.sans = {"a,b"};
  r = issueCertificate(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--san"), std::string::npos);
  o.sans = {};
  o.ca_dir = tmp_.file("no-ca");
  r = issueCertificate(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ca.pem"), std::string::npos) << r.status().toString();
}

// Revocation: the CA's list grows one serial at a time, is signed by the CA, and a
// RevocationList refuses exactly the revoked certificates, re-reading the file when it changes
// and keeping the last good list when the file breaks.
TEST_F(CertsTest, RevokedSerialsAreListedSignedAndRefused) {
  const std::string a = issue(PeerRole::kWorker, "gpu-01");
  const std::string b = issue(PeerRole::kWorker, "gpu-02");
  auto info_a = parseCertificate(slurp(a + "/cert.pem"), "a");
  auto info_b = parseCertificate(slurp(b + "/cert.pem"), "b");
  ASSERT_TRUE(info_a.ok() && info_b.ok());
  EXPECT_EQ(info_a->serial.size(), 32u) << info_a->serial;  // 16 random bytes, hex
  EXPECT_NE(info_a->serial, info_b->serial);

  RevokeOptions o;
  o.ca_dir = caDir();
  o.cert_file = a + "/cert.pem";
  auto first = revokeCertificate(o);
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_EQ(first->entries, 1u);
  EXPECT_FALSE(first->already);
  EXPECT_EQ(first->revoked.serial, info_a->serial);
  const std::string ca_pem = slurp(caDir() + "/ca.pem");
  auto list = RevocationList::open(first->crl_path, ca_pem);
  ASSERT_TRUE(list.ok()) << list.status().toString();
  const uint64_t g0 = (*list)->generation();
  Status st = (*list)->check(*info_a);
  EXPECT_EQ(st.code(), Code::kPermissionDenied);
  EXPECT_NE(st.message().find("worker 'gpu-01'"), std::string::npos) << st.toString();
  EXPECT_NE(st.fix().find("certs issue --role worker --name gpu-01"), std::string::npos);
  EXPECT_TRUE((*list)->check(*info_b).ok());

  // b joins the list: the same RevocationList sees it without being opened again.
  o.cert_file = b + "/cert.pem";
  auto second = revokeCertificate(o);
  ASSERT_TRUE(second.ok()) << second.status().toString();
  EXPECT_EQ(second->entries, 2u);
  EXPECT_FALSE((*list)->check(*info_b).ok());
  EXPECT_GT((*list)->generation(), g0);
  auto again = revokeCertificate(o);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already);
  EXPECT_EQ(again->entries, 2u);
  auto serials = loadCrl(slurp(second->crl_path), ca_pem, "crl");
  ASSERT_TRUE(serials.ok()) << serials.status().toString();
  EXPECT_EQ(serials->serials.size(), 2u);
  EXPECT_GT(serials->next_update_ms, serials->this_update_ms);

  // A broken file keeps both revoked.
  { std::ofstream(second->crl_path, std::ios::trunc) << "garbage"; }
  EXPECT_FALSE((*list)->check(*info_a).ok());
  EXPECT_FALSE((*list)->check(*info_b).ok());
  EXPECT_EQ((*list)->size(), 2u);
}

TEST_F(CertsTest, AListOfAnotherCaOrACertificateOfAnotherCaIsRefused) {
  CaOptions other;
  other.dir = tmp_.file("other-ca");
  ASSERT_TRUE(initCa(other).ok());
  IssueOptions io;
  io.ca_dir = other.dir;
  const std::string foreign = issue(PeerRole::kWorker, "gpu-09", io);
  RevokeOptions o;
  o.ca_dir = other.dir;
  o.cert_file = foreign + "/cert.pem";
  auto theirs = revokeCertificate(o);
  ASSERT_TRUE(theirs.ok()) << theirs.status().toString();
  // Their list is not ours.
  auto list = RevocationList::open(theirs->crl_path, slurp(caDir() + "/ca.pem"));
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("not signed by this cluster's CA"), std::string::npos)
      << list.status().toString();
  // Our CA cannot revoke their certificate.
  o.ca_dir = caDir();
  auto mine = revokeCertificate(o);
  ASSERT_FALSE(mine.ok());
  EXPECT_NE(mine.status().message().find("not issued by the CA"), std::string::npos)
      << mine.status().toString();
  EXPECT_FALSE(RevocationList::open(tmp_.file("missing.pem"), slurp(caDir() + "/ca.pem")).ok());
}

}  // namespace
}  // namespace gdrmesh
