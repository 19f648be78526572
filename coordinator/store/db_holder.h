// DatabaseHolder: one database has one coordinator (issue #22).
//
// A coordinator holds an advisory lock (flock, exclusive) on "<db>.lock" beside the database
// for as long as it runs. The file says who holds it (pid, host, listen address) so that a
// second coordinator started on the same --db refuses to start naming the holder, before it
// touches the schema, the spool, the markers of tests in flight or a sweep to resume.
//
// The kernel releases the lock when the holder's process ends in any way (kill -9 included),
// so a stale holder is one whose lock is free: the next coordinator takes the file over
// (previous() tells whose it was). The lock is not SQLite's: SQLite's own locks stay shared,
// so readers (the store's reader connection, the status page, a sqlite3 shell) keep reading
// while the coordinator runs; locking_mode=EXCLUSIVE would lock them all out (docs/faults.md).
//
// A holder that ends removes the file before it lets the lock go. acquire() checks that the
// file it locked is still the one at the path, so a starter that opened the file just before
// the holder removed it cannot end up holding a lock nobody else sees.
//
// Thread contract: announce() and the destructor are called by the owner's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/status.h"

namespace gdrmesh {

// Who holds (or held) a database, as its lock file says.
struct DatabaseHolderInfo {
  int64_t pid = 0;
  std::string host;
  std::string listen;  // "" while that coordinator had not started listening yet
  // "pid 123 on host h, listening on 127.0.0.1:7070" (or "..., not listening yet").
  std::string describe() const;
};

class DatabaseHolder {
 public:
  // "<db_path>.lock".
  static std::string lockPath(const std::string& db_path);
  // Takes the lock of `db_path` for this process. kFailedPrecondition when another process holds
  // it (the message names the holder, the fix says what to do); kPermissionDenied or
  // kUnavailable when the lock file cannot be created (a read-only or missing directory).
  static Result<std::unique_ptr<DatabaseHolder>> acquire(const std::string& db_path);

  ~DatabaseHolder();  // removes the lock file, then releases the lock
  DatabaseHolder(const DatabaseHolder&) = delete;
  DatabaseHolder& operator=(const DatabaseHolder&) = delete;

  // Records the address this coordinator listens on (once listening has succeeded).
  Status announce(const std::string& listen);
  // The holder named in the file when this one took it over: a coordinator that ended without
  // removing it (killed). nullopt when the file was new or empty.
  const std::optional<DatabaseHolderInfo>& previous() const { return previous_; }
  const std::string& path() const { return path_; }

 private:
  DatabaseHolder(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  Status write(const DatabaseHolderInfo& info);

  const std::string path_;
  const int fd_;
  std::optional<DatabaseHolderInfo> previous_;
};

}  // namespace gdrmesh
