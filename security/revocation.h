// Certificate revocation on the coordinator (`--crl FILE`): the cluster CA's revocation list
// (security/certs.h, `gdrmesh certs revoke`), re-read whenever the file changes, so that a
// revoked certificate is refused from its next call on without a restart.
//
// A file that no longer loads (half-copied, signed by another CA) keeps the last good list in
// force and is reported once per change; a list cannot be emptied by breaking its file. A
// file that goes missing is reported once, and once more when it comes back; meanwhile the
// last good list stays in force.
//
// A list cannot be rolled back either: a list older than the newest one this coordinator has
// used (a lower CRL number; without numbers on both, an earlier lastUpdate) is refused, at
// start (open() fails) and when the file changes (the newer list stays in force). The newest
// list's number and lastUpdate are kept in `Options::state_path` (the coordinator: a file
// beside its database), so that a restart refuses the older list as well.
//
// Thread contract: thread-safe; check() is called from gRPC's threads for every call.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/status.h"
#include "common/sync/mutex.h"
#include "security/certs.h"

namespace gdrmesh {

class RevocationList {
 public:
  struct Options {
    // Where the newest list's number and lastUpdate are kept across restarts ("": in memory
    // only). A file that cannot be written at open() is an error.
    std::string state_path;
    // Where reports go (one line each; default: stderr, "gdrmesh coordinator: " first).
    std::function<void(const std::string&)> log;
  };

  // Loads `path`, a CRL issued by the CA of `ca_pem`. An error names the file and the fix (the
  // coordinator refuses to start on one), also for a list older than the one `state_path`
  // records.
  static Result<std::shared_ptr<RevocationList>> open(const std::string& path,
                                                      const std::string& ca_pem,
                                                      Options options = {});

  // kPermissionDenied naming the certificate's identity and serial when it is revoked. Looks
  // at the file first (one stat) and re-reads it when it changed.
  Status check(const CertInfo& cert);
  // Bumped whenever a re-read changes the set of revoked serials: holders of long-lived
  // connections check their peer again when it moves.
  uint64_t generation();
  size_t size();

  // How new a list is: its CRL number when it has one, and its lastUpdate.
  struct Mark {
    std::optional<uint64_t> number;
    int64_t this_update_ms = 0;
    bool operator==(const Mark& o) const {
      return number == o.number && this_update_ms == o.this_update_ms;
    }
  };
  // Whether `a` is older than `b`: by number when both have one, else by lastUpdate.
  static bool older(const Mark& a, const Mark& b);

 private:
  RevocationList(std::string path, std::string ca_pem, Options options);
  struct FileStamp {
    ino_t inode = 0;
    int64_t mtime_ns = 0;
    int64_t size = -1;  // -1: the file is missing
    bool operator==(const FileStamp& o) const {
      return inode == o.inode && mtime_ns == o.mtime_ns && size == o.size;
    }
  };
  static FileStamp stamp(const std::string& path);
  Status readState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status writeState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the file; a list older than newest_ is refused (*rolled_back). A newer one is
  // recorded; *state_error says when that failed (the list is in force all the same).
  Status load(bool* rolled_back, Status* state_error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void refresh() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void report(const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const std::string ca_pem_;
  const Options options_;
  Mutex mu_;
  FileStamp seen_ ABSL_GUARDED_BY(mu_);
  bool missing_ ABSL_GUARDED_BY(mu_) = false;        // reported missing, not back yet
  std::optional<Mark> newest_ ABSL_GUARDED_BY(mu_);  // the newest list used (or recorded)
  std::set<std::string> serials_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gdrmesh
