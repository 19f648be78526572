#include "security/revocation.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace gdrmesh {

RevocationList::FileStamp RevocationList::stamp(const std::string& path) {
  struct stat st {};
  FileStamp s;
  if (::stat(path.c_str(), &st) != 0) return s;
  s.inode = st.st_ino;
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  s.size = static_cast<int64_t>(st.st_size);
  return s;
}

Result<std::shared_ptr<RevocationList>> RevocationList::open(const std::string& path,
                                                             const std::string& ca_pem) {
  std::shared_ptr<RevocationList> list(new RevocationList(path, ca_pem));
  std::lock_guard<std::mutex> lock(list->mu_);
  GDR_RETURN_IF_ERROR(list->load());
  return list;
}

Status RevocationList::load() {
  const FileStamp now = stamp(path_);
  std::ifstream f(path_, std::ios::binary);
  if (!f) {
    return Status(Code::kFailedPrecondition, "--crl " + path_ + ": cannot read the file",
                  "give the crl.pem written by `gdrmesh certs revoke --dir CA_DIR`");
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto crl = loadCrl(ss.str(), ca_pem_, "--crl " + path_);
  seen_ = now;  // a broken file is reported once, not on every call
  if (!crl.ok()) return crl.status();
  std::set<std::string> serials(crl->serials.begin(), crl->serials.end());
  if (serials != serials_) {
    serials_ = std::move(serials);
    ++generation_;
  }
  return {};
}

void RevocationList::refresh() {
  if (stamp(path_) == seen_) return;
  Status st = load();
  if (!st.ok()) {
    std::fprintf(stderr,
                 "gdrmesh coordinator: the revocation list changed but does not load, keeping "
                 "the %zu revoked serials read before: %s\n",
                 serials_.size(), st.toString().c_str());
  } else {
    std::fprintf(stderr, "gdrmesh coordinator: revocation list %s read again: %zu revoked\n",
                 path_.c_str(), serials_.size());
  }
}

Status RevocationList::check(const CertInfo& cert) {
  std::lock_guard<std::mutex> lock(mu_);
  refresh();
  if (serials_.count(cert.serial) == 0) return {};
  return Status(
      Code::kPermissionDenied,
      "the certificate of " + cert.identity.describe() + " (serial " + cert.serial + ") is revoked",
      "issue a new certificate: `gdrmesh certs issue --role " +
          std::string(toString(cert.identity.role)) + " --name " + cert.identity.name +
          " --force`");
}

uint64_t RevocationList::generation() {
  std::lock_guard<std::mutex> lock(mu_);
  refresh();
  return generation_;
}

size_t RevocationList::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return serials_.size();
}

}  // namespace gdrmesh
