// The cluster CA and certificates (security/certs.h) with the real OpenSSL library, in a
// temporary folder: what is issued parses back to its role and name, keys are private, and
// every way a node's TLS files can be wrong is reported as such.
#include "security/certs.h"

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

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

// A CRL of the CA in `ca_dir`, made with OpenSSL directly (not `certs revoke`): revoking
// `serials` (hex), with this lastUpdate and, when given, a CRL number.
std::string opensslCrl(const std::string& ca_dir, const std::vector<std::string>& serials,
                       time_t last_update, std::optional<uint64_t> number) {
  const std::string ca_pem = slurp(ca_dir + "/ca.pem");
  const std::string key_pem = slurp(ca_dir + "/ca.key");
  BIO* cb = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  X509* ca = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  X509_CRL* crl = X509_CRL_new();
  EXPECT_TRUE(ca != nullptr && key != nullptr && crl != nullptr);
  X509_CRL_set_version(crl, 1);
  X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca));
  ASN1_TIME* when = ASN1_TIME_set(nullptr, last_update);
  for (const auto& hex : serials) {
    BIGNUM* bn = nullptr;
    BN_hex2bn(&bn, hex.c_str());
    ASN1_INTEGER* serial = BN_to_ASN1_INTEGER(bn, nullptr);
    X509_REVOKED* r = X509_REVOKED_new();
    X509_REVOKED_set_serialNumber(r, serial);
    X509_REVOKED_set_revocationDate(r, when);
    X509_CRL_add0_revoked(crl, r);
    ASN1_INTEGER_free(serial);
    BN_free(bn);
  }
  ASN1_TIME* next = ASN1_TIME_set(nullptr, last_update + 30 * 86400);
  X509_CRL_set1_lastUpdate(crl, when);
  X509_CRL_set1_nextUpdate(crl, next);
  if (number) {
    ASN1_INTEGER* n = ASN1_INTEGER_new();
    ASN1_INTEGER_set_uint64(n, *number);
    X509_CRL_add1_ext_i2d(crl, NID_crl_number, n, 0, 0);
    ASN1_INTEGER_free(n);
  }
  X509_CRL_sort(crl);
  EXPECT_GT(X509_CRL_sign(crl, key, EVP_sha256()), 0);
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509_CRL(out, crl);
  char* data = nullptr;
  const long len = BIO_get_mem_data(out, &data);  // NOLINT(google-runtime-int): OpenSSL's type
  std::string pem(data, static_cast<size_t>(len));
  BIO_free(out);
  ASN1_TIME_free(next);
  ASN1_TIME_free(when);
  X509_CRL_free(crl);
  EVP_PKEY_free(key);
  X509_free(ca);
  BIO_free(kb);
  BIO_free(cb);
  return pem;
}

void writeText(const std::string& path, const std::string& text) {
  // Through a new file and a rename, as a copy tool would: the list sees a new inode.
  std::ofstream(path + ".new", std::ios::trunc) << text;
  ASSERT_EQ(std::rename((path + ".new").c_str(), path.c_str()), 0);
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

// An older list cannot un-revoke (issue #23, item 5): `certs revoke` numbers its lists; a
// list older than the newest used is refused when the file changes (the newer list stays in
// force) and at the next start (its number is recorded in the state file).
TEST_F(CertsTest, AnOlderListIsRefusedOnReloadAndAfterARestart) {
  const std::string a = issue(PeerRole::kAdmin, "alice");
  const std::string b = issue(PeerRole::kWorker, "gpu-02");
  auto info_a = parseCertificate(slurp(a + "/cert.pem"), "a");
  auto info_b = parseCertificate(slurp(b + "/cert.pem"), "b");
  ASSERT_TRUE(info_a.ok() && info_b.ok());
  const std::string ca_pem = slurp(caDir() + "/ca.pem");
  RevokeOptions o;
  o.ca_dir = caDir();
  o.cert_file = a + "/cert.pem";
  auto first = revokeCertificate(o);
  ASSERT_TRUE(first.ok()) << first.status().toString();
  const std::string list1 = slurp(first->crl_path);
  o.cert_file = b + "/cert.pem";
  ASSERT_TRUE(revokeCertificate(o).ok());  // in the same second, most likely: numbers decide
  const std::string list2 = slurp(first->crl_path);
  auto l1 = loadCrl(list1, ca_pem, "1");
  auto l2 = loadCrl(list2, ca_pem, "2");
  ASSERT_TRUE(l1.ok() && l2.ok());
  EXPECT_EQ(l1->number, std::optional<uint64_t>(1));
  EXPECT_EQ(l2->number, std::optional<uint64_t>(2));

  const std::string crl = tmp_.file("crl.pem");
  const std::string state = tmp_.file("results.db.crl-state");
  writeText(crl, list2);
  std::vector<std::string> logged;
  RevocationList::Options ro;
  ro.state_path = state;
  ro.log = [&](const std::string& line) { logged.push_back(line); };
  auto list = RevocationList::open(crl, ca_pem, ro);
  ASSERT_TRUE(list.ok()) << list.status().toString();
  EXPECT_NE(slurp(state).find("crl_number=2"), std::string::npos) << slurp(state);
  const uint64_t g = (*list)->generation();

  // The file goes back to list 1 (b not revoked in it): b stays refused.
  writeText(crl, list1);
  EXPECT_EQ((*list)->check(*info_b).code(), Code::kPermissionDenied);
  EXPECT_EQ((*list)->check(*info_a).code(), Code::kPermissionDenied);
  EXPECT_EQ((*list)->generation(), g);
  EXPECT_EQ((*list)->size(), 2u);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("older one, refused"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("number 1"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("number 2"), std::string::npos) << logged[0];

  // A restart on list 1 is refused, naming --crl and the record; on list 2 it starts.
  auto restarted = RevocationList::open(crl, ca_pem, ro);
  ASSERT_FALSE(restarted.ok());
  EXPECT_NE(restarted.status().message().find("--crl " + crl), std::string::npos)
      << restarted.status().toString();
  EXPECT_NE(restarted.status().message().find("older than one this coordinator has used"),
            std::string::npos)
      << restarted.status().toString();
  EXPECT_NE(restarted.status().message().find(state), std::string::npos);
  EXPECT_NE(restarted.status().fix().find("crl.pem"), std::string::npos);
  writeText(crl, list2);
  EXPECT_TRUE(RevocationList::open(crl, ca_pem, ro).ok());
  // A newer list (3) is taken and recorded.
  o.cert_file = a + "/cert.pem";
  ASSERT_TRUE(revokeCertificate(o).ok());
  writeText(crl, slurp(first->crl_path));
  EXPECT_EQ((*list)->check(*info_b).code(), Code::kPermissionDenied);
  EXPECT_NE(slurp(state).find("crl_number=3"), std::string::npos) << slurp(state);
  EXPECT_NE(logged.back().find("read again: 2 revoked"), std::string::npos) << logged.back();
}

// Lists made by other tools (OpenSSL here) may have no CRL number: lastUpdate decides.
TEST_F(CertsTest, WithoutNumbersAnEarlierLastUpdateIsOlder) {
  const std::string a = issue(PeerRole::kWorker, "gpu-01");
  auto info_a = parseCertificate(slurp(a + "/cert.pem"), "a");
  ASSERT_TRUE(info_a.ok());
  const std::string ca_pem = slurp(caDir() + "/ca.pem");
  const time_t now = std::time(nullptr);
  const std::string older = opensslCrl(caDir(), {}, now - 86400, std::nullopt);
  const std::string newer = opensslCrl(caDir(), {info_a->serial}, now - 60, std::nullopt);
  const std::string crl = tmp_.file("crl.pem");
  RevocationList::Options ro;
  ro.state_path = tmp_.file("state");
  ro.log = [](const std::string&) {};
  writeText(crl, newer);
  auto list = RevocationList::open(crl, ca_pem, ro);
  ASSERT_TRUE(list.ok()) << list.status().toString();
  EXPECT_EQ(slurp(ro.state_path).find("crl_number"), std::string::npos) << slurp(ro.state_path);
  writeText(crl, older);
  EXPECT_EQ((*list)->check(*info_a).code(), Code::kPermissionDenied);
  auto restarted = RevocationList::open(crl, ca_pem, ro);
  ASSERT_FALSE(restarted.ok());
  EXPECT_NE(restarted.status().message().find("no number"), std::string::npos)
      << restarted.status().toString();
  // The same lastUpdate again is not older; a numbered list of a later date is newer.
  writeText(crl, newer);
  EXPECT_TRUE(RevocationList::open(crl, ca_pem, ro).ok());
  writeText(crl, opensslCrl(caDir(), {}, now, 7));
  EXPECT_TRUE(RevocationList::open(crl, ca_pem, ro).ok());
  EXPECT_NE(slurp(ro.state_path).find("crl_number=7"), std::string::npos);
  // Numbers decide between numbered lists, whatever their dates.
  writeText(crl, opensslCrl(caDir(), {}, now - 3600, 6));
  EXPECT_FALSE(RevocationList::open(crl, ca_pem, ro).ok());
  writeText(crl, opensslCrl(caDir(), {}, now - 3600, 8));
  EXPECT_TRUE(RevocationList::open(crl, ca_pem, ro).ok());
  // A record that is not one is refused, naming it.
  { std::ofstream(ro.state_path, std::ios::trunc) << "crl_number=x\n"; }
  auto broken = RevocationList::open(crl, ca_pem, ro);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find(ro.state_path), std::string::npos);
}

// A missing list is reported once when it goes and once when it is back (it was reported on
// every call, twice a second); meanwhile its serials stay refused.
TEST_F(CertsTest, AMissingListIsReportedOnceAndOnceWhenItIsBack) {
  const std::string a = issue(PeerRole::kWorker, "gpu-01");
  auto info_a = parseCertificate(slurp(a + "/cert.pem"), "a");
  ASSERT_TRUE(info_a.ok());
  RevokeOptions o;
  o.ca_dir = caDir();
  o.cert_file = a + "/cert.pem";
  auto revoked = revokeCertificate(o);
  ASSERT_TRUE(revoked.ok());
  std::vector<std::string> logged;
  RevocationList::Options ro;
  ro.log = [&](const std::string& line) { logged.push_back(line); };
  auto list = RevocationList::open(revoked->crl_path, slurp(caDir() + "/ca.pem"), ro);
  ASSERT_TRUE(list.ok()) << list.status().toString();
  const std::string saved = slurp(revoked->crl_path);
  ASSERT_EQ(std::remove(revoked->crl_path.c_str()), 0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ((*list)->check(*info_a).code(), Code::kPermissionDenied);
    (void)(*list)->generation();
  }
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("is missing"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("1 serials it revoked stay refused"), std::string::npos) << logged[0];
  writeText(revoked->crl_path, saved);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE((*list)->check(*info_a).ok());
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_NE(logged[1].find("is back: 1 revoked"), std::string::npos) << logged[1];
}

}  // namespace
}  // namespace gdrmesh
