#include "security/certs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/units.h"

namespace gdrmesh {
namespace {

struct Free {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(X509_CRL* p) const { X509_CRL_free(p); }
  void operator()(X509_REVOKED* p) const { X509_REVOKED_free(p); }
  void operator()(ASN1_TIME* p) const { ASN1_TIME_free(p); }
};
template <typename T>
using Ptr = std::unique_ptr<T, Free>;

// The last OpenSSL error, as text ("" when none).
std::string sslError() {
  unsigned long e = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (e == 0) return "";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

Result<std::string> readFile(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return Status(Code::kFailedPrecondition,
                  what + " " + path + ": cannot read (" + std::strerror(errno) + ")",
                  "check the path and its permissions; certificates come from `gdrmesh certs "
                  "issue`");
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Status writeFile(const std::string& path, const std::string& data, mode_t mode) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return Status(Code::kFailedPrecondition, "cannot write " + tmp + ": " + std::strerror(errno),
                  "check that the folder exists and is writable");
  }
  bool ok = ::fchmod(fd, mode) == 0;
  size_t off = 0;
  while (ok && off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status(Code::kFailedPrecondition, "cannot write " + path + ": " + err,
                  "check free space and permissions");
  }
  return {};
}

Status makeDir(const std::string& dir, const std::string& flag) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return {};
  return invalidArgument(
      flag + " " + dir + ": cannot create the folder (" + std::strerror(errno) + ")",
      "create its parent, or pick another folder");
}

Result<Ptr<X509>> readCert(const std::string& pem, const std::string& what) {
  Ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Ptr<X509> cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) {
    return invalidArgument(what + ": not a PEM certificate (" + sslError() + ")",
                           "pass the cert.pem written by `gdrmesh certs issue`");
  }
  return Result<Ptr<X509>>(std::move(cert));
}

Result<Ptr<EVP_PKEY>> readKey(const std::string& pem, const std::string& what) {
  Ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Ptr<EVP_PKEY> key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    return invalidArgument(what + ": not a PEM private key (" + sslError() + ")",
                           "pass the key.pem written by `gdrmesh certs issue`");
  }
  return Result<Ptr<EVP_PKEY>>(std::move(key));
}

std::string bioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data);  // NOLINT(google-runtime-int)
  return n > 0 && data != nullptr ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string certPem(X509* cert) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return bioText(bio.get());
}

std::string keyPem(EVP_PKEY* key) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  return bioText(bio.get());
}

std::string nameText(const X509_NAME* name) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  return bioText(bio.get());
}

std::string entry(const X509_NAME* name, int nid) {
  int i = X509_NAME_get_index_by_NID(name, nid, -1);
  if (i < 0) return "";
  const ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

int64_t asn1Ms(const ASN1_TIME* t) {
  struct tm tm {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

Result<Ptr<EVP_PKEY>> newKey() {
  Ptr<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx.get(), NID_X9_62_prime256v1) != 1 ||
      EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    return internalError("generating an ECDSA P-256 key failed: " + sslError());
  }
  return Ptr<EVP_PKEY>(raw);
}

Status addName(X509_NAME* name, const char* field, const std::string& value) {
  if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                 0) != 1) {
    return invalidArgument(std::string("certificate ") + field + " '" + value + "': " + sslError());
  }
  return {};
}

Status addExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ptr<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return invalidArgument("certificate extension " + std::string(OBJ_nid2sn(nid)) + " '" + value +
                           "': " + sslError());
  }
  return {};
}

// A certificate for `key`, signed by `signer` (issued by `issuer`; both null: self-signed).
Result<Ptr<X509>> makeCert(EVP_PKEY* key,
                           const std::vector<std::pair<const char*, std::string>>& subject,
                           X509* issuer, EVP_PKEY* signer, int64_t not_before_s, int days,
                           const std::vector<std::pair<int, std::string>>& exts) {
  Ptr<X509> cert(X509_new());
  unsigned char serial[16];
  if (!cert || RAND_bytes(serial, sizeof serial) != 1) {
    return internalError("creating a certificate failed: " + sslError());
  }
  serial[0] &= 0x7f;  // a positive serial number
  Ptr<BIGNUM> bn(BN_bin2bn(serial, sizeof serial, nullptr));
  X509_set_version(cert.get(), 2);
  BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get()));
  ASN1_TIME_set(X509_getm_notBefore(cert.get()), static_cast<time_t>(not_before_s));
  ASN1_TIME_set(X509_getm_notAfter(cert.get()),
                static_cast<time_t>(not_before_s + int64_t{days} * 86400));
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& [field, value] : subject) GDR_RETURN_IF_ERROR(addName(name, field, value));
  X509* iss = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(iss));
  for (const auto& [nid, value] : exts) GDR_RETURN_IF_ERROR(addExt(cert.get(), iss, nid, value));
  if (X509_sign(cert.get(), signer != nullptr ? signer : key, EVP_sha256()) <= 0) {
    return internalError("signing the certificate failed: " + sslError());
  }
  return Result<Ptr<X509>>(std::move(cert));
}

// The CA folder of `certs init`: its certificate (PEM and parsed) and its key, which must match.
struct CaFolder {
  std::string pem;
  Ptr<X509> cert;
  Ptr<EVP_PKEY> key;
};

Result<CaFolder> loadCa(const std::string& dir) {
  CaFolder f;
  GDR_ASSIGN_OR_RETURN(f.pem, readFile(dir + "/ca.pem", "--dir: CA certificate"));
  GDR_ASSIGN_OR_RETURN(std::string key_pem, readFile(dir + "/ca.key", "--dir: CA key"));
  GDR_ASSIGN_OR_RETURN(f.cert, readCert(f.pem, dir + "/ca.pem"));
  GDR_ASSIGN_OR_RETURN(f.key, readKey(key_pem, dir + "/ca.key"));
  if (X509_check_private_key(f.cert.get(), f.key.get()) != 1) {
    ERR_clear_error();
    return invalidArgument("--dir " + dir + ": ca.key is not the key of ca.pem",
                           "restore the CA folder written by `gdrmesh certs init`");
  }
  return f;
}

std::string serialHex(const ASN1_INTEGER* serial) {
  Ptr<BIGNUM> bn(ASN1_INTEGER_to_BN(serial, nullptr));
  if (!bn) return "";
  char* hex = BN_bn2hex(bn.get());
  if (hex == nullptr) return "";
  std::string out(hex);
  OPENSSL_free(hex);
  return out;
}

Result<Ptr<X509_CRL>> readCrl(const std::string& pem, const std::string& what) {
  Ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Ptr<X509_CRL> crl(bio ? PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!crl) {
    return invalidArgument(what + ": not a PEM certificate revocation list (" + sslError() + ")",
                           "pass the crl.pem written by `gdrmesh certs revoke`");
  }
  return Result<Ptr<X509_CRL>>(std::move(crl));
}

// The CRL's issuer is the CA and its signature verifies with the CA's key.
Status checkCrlIssuer(X509_CRL* crl, X509* ca, const std::string& what) {
  EVP_PKEY* ca_key = X509_get0_pubkey(ca);
  if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca)) != 0 ||
      ca_key == nullptr || X509_CRL_verify(crl, ca_key) != 1) {
    ERR_clear_error();
    return invalidArgument(what + ": not signed by this cluster's CA",
                           "use the crl.pem that `gdrmesh certs revoke --dir CA_DIR` wrote for "
                           "the CA whose ca.pem this node uses");
  }
  return {};
}

std::string sanEntry(const std::string& s) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1) {
    return "IP:" + s;
  }
  return "DNS:" + s;
}

}  // namespace

Result<CertInfo> parseCertificate(const std::string& pem, const std::string& what) {
  GDR_ASSIGN_OR_RETURN(Ptr<X509> cert, readCert(pem, what));
  CertInfo info;
  const X509_NAME* subject = X509_get_subject_name(cert.get());
  info.subject = nameText(subject);
  info.issuer = nameText(X509_get_issuer_name(cert.get()));
  info.not_before_ms = asn1Ms(X509_get0_notBefore(cert.get()));
  info.not_after_ms = asn1Ms(X509_get0_notAfter(cert.get()));
  info.serial = serialHex(X509_get0_serialNumber(cert.get()));
  const std::string fix = "use a certificate issued with `gdrmesh certs issue`";
  if (entry(subject, NID_organizationName) != "gdrmesh") {
    return invalidArgument(
        what + ": subject '" + info.subject + "' is not a gdrmesh identity (O=gdrmesh missing)",
        fix);
  }
  auto role = parseRole(entry(subject, NID_organizationalUnitName), what + ": subject OU (role)");
  if (!role.ok()) return Status(role.status().code(), role.status().message(), fix);
  info.identity.role = *role;
  info.identity.name = entry(subject, NID_commonName);
  if (!validIdentityName(info.identity.name)) {
    return invalidArgument(what + ": subject CN '" + info.identity.name +
                               "' is not a valid name (1-64 of A-Z a-z 0-9 . _ -)",
                           fix);
  }
  return info;
}

TlsPaths tlsDirPaths(const std::string& dir) {
  return {dir + "/ca.pem", dir + "/cert.pem", dir + "/key.pem"};
}

Result<TlsMaterial> loadTls(const TlsPaths& paths, const std::vector<PeerRole>& roles,
                            int64_t now_ms, const std::string& flag, CertInfo* info_out) {
  TlsMaterial m;
  GDR_ASSIGN_OR_RETURN(m.ca_pem, readFile(paths.ca, flag + ": CA certificate"));
  GDR_ASSIGN_OR_RETURN(m.cert_pem, readFile(paths.cert, flag + ": certificate"));
  GDR_ASSIGN_OR_RETURN(m.key_pem, readFile(paths.key, flag + ": private key"));
  GDR_ASSIGN_OR_RETURN(Ptr<X509> ca, readCert(m.ca_pem, flag + ": " + paths.ca));
  GDR_ASSIGN_OR_RETURN(Ptr<X509> cert, readCert(m.cert_pem, flag + ": " + paths.cert));
  GDR_ASSIGN_OR_RETURN(Ptr<EVP_PKEY> key, readKey(m.key_pem, flag + ": " + paths.key));
  GDR_ASSIGN_OR_RETURN(CertInfo info, parseCertificate(m.cert_pem, flag + ": " + paths.cert));
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return invalidArgument(flag + ": " + paths.key + " is not the private key of " + paths.cert,
                           "use the key.pem written together with that cert.pem");
  }
  if (now_ms < info.not_before_ms) {
    return Status(Code::kFailedPrecondition,
                  flag + ": certificate " + paths.cert + " (" + info.identity.describe() +
                      ") is not valid before " + formatRfc3339(info.not_before_ms),
                  "check this host's clock");
  }
  if (now_ms > info.not_after_ms) {
    return Status(Code::kFailedPrecondition,
                  flag + ": certificate " + paths.cert + " (" + info.identity.describe() +
                      ") expired on " + formatRfc3339(info.not_after_ms),
                  "issue a new one: `gdrmesh certs issue --role " +
                      std::string(toString(info.identity.role)) + " --name " + info.identity.name +
                      "`");
  }
  Ptr<X509_STORE> store(X509_STORE_new());
  Ptr<X509_STORE_CTX> ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr) != 1) {
    return internalError("certificate check setup failed: " + sslError());
  }
  X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx.get()),
                             static_cast<time_t>(now_ms / 1000));
  if (X509_verify_cert(ctx.get()) != 1) {
    const char* why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
    ERR_clear_error();
    return invalidArgument(flag + ": certificate " + paths.cert + " (issuer " + info.issuer +
                               ") does not verify against the CA " + paths.ca + ": " + why,
                           "use the ca.pem of the CA that issued it (every node of a cluster "
                           "shares one `gdrmesh certs init` CA)");
  }
  bool allowed = false;
  std::string want;
  for (PeerRole r : roles) {
    allowed = allowed || r == info.identity.role;
    want += (want.empty() ? "" : " or ") + std::string(toString(r));
  }
  if (!allowed) {
    return invalidArgument(flag + ": certificate " + paths.cert + " is for " +
                               info.identity.describe() + "; this command needs " + want,
                           "issue one with `gdrmesh certs issue --role " +
                               std::string(toString(roles.empty() ? PeerRole::kReader : roles[0])) +
                               "`");
  }
  if (info_out != nullptr) *info_out = info;
  return m;
}

Status initCa(const CaOptions& o) {
  if (o.dir.empty()) return invalidArgument("--dir: required (the folder for the cluster CA)");
  if (o.days < 1) return invalidArgument("--days: must be >= 1");
  GDR_RETURN_IF_ERROR(makeDir(o.dir, "--dir"));
  const std::string cert_path = o.dir + "/ca.pem";
  const std::string key_path = o.dir + "/ca.key";
  if (!o.force && (exists(cert_path) || exists(key_path))) {
    return invalidArgument("--dir " + o.dir + ": a CA exists there already (" + cert_path + ")",
                           "keep it (every certificate it issued depends on it), or pass --force "
                           "to replace it");
  }
  GDR_ASSIGN_OR_RETURN(Ptr<EVP_PKEY> key, newKey());
  const int64_t now_s = static_cast<int64_t>(std::time(nullptr));
  GDR_ASSIGN_OR_RETURN(
      Ptr<X509> cert,
      makeCert(key.get(), {{"O", "gdrmesh"}, {"CN", o.name}}, nullptr, nullptr, now_s - 300, o.days,
               {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                {NID_key_usage, "critical,keyCertSign,cRLSign"},
                {NID_subject_key_identifier, "hash"}}));
  GDR_RETURN_IF_ERROR(writeFile(key_path, keyPem(key.get()), 0600));
  return writeFile(cert_path, certPem(cert.get()), 0644);
}

Result<std::string> issueCertificate(const IssueOptions& o) {
  if (o.ca_dir.empty()) return invalidArgument("--dir: required (the CA folder of `certs init`)");
  if (!validIdentityName(o.name)) {
    return invalidArgument("--name '" + o.name + "': use 1-64 characters from A-Z a-z 0-9 . _ -",
                           "for a worker, its worker name (`gdrmesh worker --name`)");
  }
  if (o.days < 1) return invalidArgument("--days: must be >= 1");
  for (const auto& s : o.sans) {
    if (s.empty() || s.find_first_of(", \t") != std::string::npos) {
      return invalidArgument("--san '" + s + "': one host name or IP address per entry",
                             "e.g. --san coord.example.com,10.0.0.5");
    }
  }
  GDR_ASSIGN_OR_RETURN(CaFolder folder, loadCa(o.ca_dir));
  const std::string& ca_pem = folder.pem;
  X509* ca = folder.cert.get();
  EVP_PKEY* ca_key = folder.key.get();
  const std::string out = o.out_dir.empty() ? o.ca_dir + "/" + o.name : o.out_dir;
  GDR_RETURN_IF_ERROR(makeDir(out, "--out"));
  const TlsPaths paths = tlsDirPaths(out);
  if (!o.force && (exists(paths.cert) || exists(paths.key))) {
    return invalidArgument("--out " + out + ": a certificate exists there already",
                           "pass --force to replace it, or pick another --out");
  }
  std::vector<std::pair<int, std::string>> exts{
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, o.role == PeerRole::kCoordinator ? "serverAuth" : "clientAuth"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"}};
  std::vector<std::string> sans = o.sans;
  if (o.role == PeerRole::kCoordinator) sans.insert(sans.begin(), o.name);
  std::string san;
  for (const auto& s : sans) san += (san.empty() ? "" : ",") + sanEntry(s);
  if (!san.empty()) exts.emplace_back(NID_subject_alt_name, san);
  GDR_ASSIGN_OR_RETURN(Ptr<EVP_PKEY> key, newKey());
  const int64_t start =
      o.not_before_s ? *o.not_before_s : static_cast<int64_t>(std::time(nullptr)) - 300;
  GDR_ASSIGN_OR_RETURN(
      Ptr<X509> cert,
      makeCert(key.get(), {{"O", "gdrmesh"}, {"OU", toString(o.role)}, {"CN", o.name}}, ca, ca_key,
               start, o.days, exts));
  GDR_RETURN_IF_ERROR(writeFile(paths.key, keyPem(key.get()), 0600));
  GDR_RETURN_IF_ERROR(writeFile(paths.cert, certPem(cert.get()), 0644));
  GDR_RETURN_IF_ERROR(writeFile(paths.ca, ca_pem, 0644));
  return out;
}

Result<RevokedSerials> loadCrl(const std::string& crl_pem, const std::string& ca_pem,
                               const std::string& what) {
  GDR_ASSIGN_OR_RETURN(Ptr<X509_CRL> crl, readCrl(crl_pem, what));
  GDR_ASSIGN_OR_RETURN(Ptr<X509> ca, readCert(ca_pem, what + ": CA certificate"));
  GDR_RETURN_IF_ERROR(checkCrlIssuer(crl.get(), ca.get(), what));
  RevokedSerials out;
  out.this_update_ms = asn1Ms(X509_CRL_get0_lastUpdate(crl.get()));
  int critical = 0;
  auto* number = static_cast<ASN1_INTEGER*>(
      X509_CRL_get_ext_d2i(crl.get(), NID_crl_number, &critical, nullptr));
  if (number != nullptr) {
    uint64_t v = 0;
    if (ASN1_INTEGER_get_uint64(&v, number) == 1) out.number = v;
    ASN1_INTEGER_free(number);
  }
  ERR_clear_error();
  if (const ASN1_TIME* next = X509_CRL_get0_nextUpdate(crl.get()))
    out.next_update_ms = asn1Ms(next);
  STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl.get());
  const int n = revoked == nullptr ? 0 : sk_X509_REVOKED_num(revoked);
  for (int i = 0; i < n; ++i) {
    const X509_REVOKED* r = sk_X509_REVOKED_value(revoked, i);
    std::string hex = serialHex(X509_REVOKED_get0_serialNumber(r));
    if (!hex.empty()) out.serials.push_back(std::move(hex));
  }
  std::sort(out.serials.begin(), out.serials.end());
  out.serials.erase(std::unique(out.serials.begin(), out.serials.end()), out.serials.end());
  return out;
}

Result<RevokeOutcome> revokeCertificate(const RevokeOptions& o) {
  if (o.ca_dir.empty()) return invalidArgument("--dir: required (the CA folder of `certs init`)");
  if (o.days < 1) return invalidArgument("--days: must be >= 1");
  GDR_ASSIGN_OR_RETURN(CaFolder folder, loadCa(o.ca_dir));
  const std::string& ca_pem = folder.pem;
  X509* ca = folder.cert.get();
  EVP_PKEY* ca_key = folder.key.get();
  GDR_ASSIGN_OR_RETURN(std::string cert_pem, readFile(o.cert_file, "certificate"));
  GDR_ASSIGN_OR_RETURN(Ptr<X509> cert, readCert(cert_pem, o.cert_file));
  GDR_ASSIGN_OR_RETURN(CertInfo info, parseCertificate(cert_pem, o.cert_file));
  EVP_PKEY* ca_pub = X509_get0_pubkey(ca);
  if (ca_pub == nullptr || X509_verify(cert.get(), ca_pub) != 1) {
    ERR_clear_error();
    return invalidArgument(o.cert_file + ": not issued by the CA in " + o.ca_dir,
                           "revoke it with the CA folder that issued it");
  }
  RevokeOutcome out;
  out.crl_path = o.ca_dir + "/crl.pem";
  out.revoked = info;
  Ptr<X509_CRL> crl(X509_CRL_new());
  if (!crl || X509_CRL_set_version(crl.get(), 1) != 1 ||
      X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(ca)) != 1) {
    return internalError("creating the revocation list failed: " + sslError());
  }
  // Keep what the list revoked before (it must be this CA's list).
  std::vector<std::string> serials;
  uint64_t number = 1;
  if (exists(out.crl_path)) {
    GDR_ASSIGN_OR_RETURN(std::string old_pem, readFile(out.crl_path, "--dir: revocation list"));
    GDR_ASSIGN_OR_RETURN(RevokedSerials old, loadCrl(old_pem, ca_pem, out.crl_path));
    serials = old.serials;
    number = old.number.value_or(0) + 1;
  }
  out.already = std::find(serials.begin(), serials.end(), info.serial) != serials.end();
  if (!out.already) serials.push_back(info.serial);
  std::sort(serials.begin(), serials.end());
  const time_t now = std::time(nullptr);
  for (const auto& hex : serials) {
    BIGNUM* raw = nullptr;
    if (BN_hex2bn(&raw, hex.c_str()) == 0) continue;
    Ptr<BIGNUM> bn(raw);
    Ptr<X509_REVOKED> r(X509_REVOKED_new());
    ASN1_INTEGER* serial = BN_to_ASN1_INTEGER(bn.get(), nullptr);
    Ptr<ASN1_TIME> when(ASN1_TIME_set(nullptr, now));
    const bool ok = r && serial != nullptr && when &&
                    X509_REVOKED_set_serialNumber(r.get(), serial) == 1 &&
                    X509_REVOKED_set_revocationDate(r.get(), when.get()) == 1;
    ASN1_INTEGER_free(serial);
    if (!ok || X509_CRL_add0_revoked(crl.get(), r.get()) != 1) {
      return internalError("adding serial " + hex +
                           " to the revocation list failed: " + sslError());
    }
    static_cast<void>(r.release());  // owned by the CRL now
  }
  // The CRL number: a coordinator that has seen this list refuses every older one.
  // (ASN1_INTEGER is ASN1_TIME's type to the compiler: freed by hand, not by Ptr.)
  ASN1_INTEGER* crl_number = ASN1_INTEGER_new();
  const bool numbered = crl_number != nullptr && ASN1_INTEGER_set_uint64(crl_number, number) == 1 &&
                        X509_CRL_add1_ext_i2d(crl.get(), NID_crl_number, crl_number, 0, 0) == 1;
  ASN1_INTEGER_free(crl_number);
  if (!numbered) return internalError("numbering the revocation list failed: " + sslError());
  Ptr<ASN1_TIME> last(ASN1_TIME_set(nullptr, now));
  Ptr<ASN1_TIME> next(ASN1_TIME_set(nullptr, now + static_cast<time_t>(o.days) * 86400));
  if (!last || !next || X509_CRL_set1_lastUpdate(crl.get(), last.get()) != 1 ||
      X509_CRL_set1_nextUpdate(crl.get(), next.get()) != 1 || X509_CRL_sort(crl.get()) != 1 ||
      X509_CRL_sign(crl.get(), ca_key, EVP_sha256()) <= 0) {
    return internalError("signing the revocation list failed: " + sslError());
  }
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509_CRL(bio.get(), crl.get()) != 1) {
    return internalError("writing the revocation list failed: " + sslError());
  }
  GDR_RETURN_IF_ERROR(writeFile(out.crl_path, bioText(bio.get()), 0644));
  out.entries = serials.size();
  return out;
}

}  // namespace gdrmesh
