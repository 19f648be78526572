// Certificate revocation on the coordinator (`--crl FILE`): the cluster CA's revocation list
// (security/certs.h, `gdrmesh certs revoke`), re-read whenever the file changes, so that a
// revoked certificate is refused from its next call on without a restart.
//
// A file that no longer loads (half-copied, signed by another CA) keeps the last good list in
// force and is reported once per change; a list cannot be emptied by breaking its file.
//
// Thread contract: thread-safe; check() is called from gRPC's threads for every call.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/status.h"
#include "security/certs.h"

namespace gdrmesh {

class RevocationList {
 public:
  // Loads `path`, a CRL issued by the CA of `ca_pem`. An error names the file and the fix (the
  // coordinator refuses to start on one).
  static Result<std::shared_ptr<RevocationList>> open(const std::string& path,
                                                      const std::string& ca_pem);

  // kPermissionDenied naming the certificate's identity and serial when it is revoked. Looks
  // at the file first (one stat) and re-reads it when it changed.
  Status check(const CertInfo& cert);
  // Bumped whenever a re-read changes the set of revoked serials: holders of long-lived
  // connections check their peer again when it moves.
  uint64_t generation();
  size_t size();

 private:
  RevocationList(std::string path, std::string ca_pem)
      : path_(std::move(path)), ca_pem_(std::move(ca_pem)) {}
  struct FileStamp {
    ino_t inode = 0;
    int64_t mtime_ns = 0;
    int64_t size = -1;
    bool operator==(const FileStamp& o) const {
      return inode == o.inode && mtime_ns == o.mtime_ns && size == o.size;
    }
  };
  static FileStamp stamp(const std::string& path);
  Status load();   // mu_ held
  void refresh();  // mu_ held

  const std::string path_;
  const std::string ca_pem_;
  std::mutex mu_;
  FileStamp seen_;                 // guarded by mu_
  std::set<std::string> serials_;  // guarded by mu_
  uint64_t generation_ = 0;        // guarded by mu_
};

}  // namespace gdrmesh
