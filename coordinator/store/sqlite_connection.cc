// SqliteStore's connections: open, configure and migrate, the reader, prepared statements,
// transactions, and the Status of a SQLite error (what failed, where, and the fix).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/store/sqlite_columns.h"
#include "coordinator/store/sqlite_internal.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {

// The store's private helpers: sqlite_internal.h (statements, the read lease) and
// sqlite_columns.h, store_columns.h (the column lists).
using namespace sqlite_detail;
using namespace store_detail;

namespace {

std::string dbFix(const std::string& path) {
  return "point --db at another file, or move " + path +
         " aside; the coordinator creates a new database where none exists";
}

}  // namespace

SqliteStore::SqliteStore(std::string path, DbPtr db) : path_(std::move(path)) {
  writer_.db = std::move(db);
}

SqliteStore::~SqliteStore() {
  // Closing the last connection checkpoints the WAL, which stores into the mapped WAL index: not
  // while the file system refuses it (SIGBUS). The WAL stays, and the next open reads it.
  if (path_ != ":memory:" && !walIndexWritable().ok()) {
    for (Conn* c : {&writer_, reader_.get()}) {
      if (c != nullptr && c->db) {
        (void)sqlite3_db_config(c->db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
      }
    }
  }
  if (reader_) {
    MutexLock lock(reader_->mu);
    reader_->stmts.clear();  // finalize before the connection closes
    reader_->db.reset();
  }
  MutexLock lock(writer_.mu);
  writer_.stmts.clear();
  writer_.db.reset();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path) {
  return open(path, SqliteStoreOptions{});
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path,
                                                       const SqliteStoreOptions& options) {
  namespace fs = std::filesystem;
  if (path.empty()) {
    return invalidArgument("database path is empty", "pass --db <file>, e.g. /var/lib/gdrmesh/db");
  }
  const bool in_memory = path == ":memory:";
  if (!in_memory) {
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (!fs::exists(st)) {
      return notFound("directory " + dir.string() + " does not exist (database " + path + ")",
                      "create it (mkdir -p " + dir.string() + ") or pass --db a path in an " +
                          "existing directory");
    }
    if (!fs::is_directory(st)) {
      return failedPrecondition(dir.string() + " is not a directory (database " + path + ")",
                                "pass --db a path inside a directory");
    }
    // Refused writes: EACCES from file modes; EPERM (an immutable file, which stops root too)
    // and EROFS (a read-only mount) from the file system.
    const auto refused = [](int e) { return e == EACCES || e == EPERM || e == EROFS; };
    const std::string read_only_fix =
        " (a read-only mount: remount it read-write; an immutable file: chattr -i)";
    // WAL creates <path>-wal and <path>-shm beside the database: the directory must be writable.
    if (::access(dir.c_str(), W_OK | X_OK) != 0 && refused(errno)) {
      const bool ro = errno != EACCES;
      return Status(Code::kPermissionDenied,
                    (ro ? "directory " + dir.string() + " is read-only"
                        : "no write permission on directory " + dir.string()) +
                        " (database " + path + "; WAL mode creates " + path +
                        "-wal and -shm there)",
                    ro ? "make " + dir.string() + " writable" + read_only_fix +
                             ", or pass --db a path in a writable directory"
                       : "run the coordinator as a user that can write " + dir.string() +
                             " (chown/chmod), or pass --db a path in a writable directory");
    }
    if (fs::exists(fs::path(path), ec) && ::access(path.c_str(), R_OK | W_OK) != 0 &&
        refused(errno)) {
      const bool ro = errno != EACCES;
      return Status(
          Code::kPermissionDenied,
          ro ? "database " + path + " is read-only"
             : "no read/write permission on database " + path,
          ro ? "make " + path + " writable" + read_only_fix + ", or pass --db another file"
             : "chown/chmod " + path + " to the coordinator's user, or pass --db another file");
    }
  }

  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  DbPtr db(raw);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, std::move(db)));
  store->on_query_row_ = options.on_query_row_for_testing;
  MutexLock lock(store->writer_.mu);
  if (rc != SQLITE_OK) {
    if (!store->writer_.db) {
      return Status(Code::kResourceExhausted, "out of memory opening database " + path);
    }
    return store->error(store->writer_, rc, "open");
  }
  // A WAL index left read-only: refused here, before SQLite maps it.
  GDR_RETURN_IF_ERROR(store->walIndexWritable());
  GDR_RETURN_IF_ERROR(store->configure(options));
  return store;
}

Status SqliteStore::configure(const SqliteStoreOptions& options) {
  sqlite3_extended_result_codes(writer_.db.get(), 1);
  sqlite3_busy_timeout(writer_.db.get(), options.busy_timeout_ms);
  const std::vector<SqliteMigration>& migrations =
      options.migrations ? *options.migrations : sqliteSchemaMigrations();
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return internalError("schema migration list is not numbered 1..N: entry " +
                           std::to_string(i) + " has version " +
                           std::to_string(migrations[i].version));
    }
  }
  const int latest = migrations.empty() ? 0 : migrations.back().version;

  // Read-only checks first, so a file that is not ours is never modified. The first read of
  // the header is also where "not a database" shows up.
  GDR_ASSIGN_OR_RETURN(const int64_t app_id,
                       queryInt(writer_, "read application_id", "PRAGMA application_id"));
  GDR_ASSIGN_OR_RETURN(const int64_t version,
                       queryInt(writer_, "read user_version", "PRAGMA user_version"));
  GDR_ASSIGN_OR_RETURN(
      const int64_t tables,
      queryInt(writer_, "count tables",
               "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"));
  if (app_id != 0 && app_id != kApplicationId) {
    return failedPrecondition("database " + path_ +
                                  " belongs to another application (application_id " +
                                  std::to_string(app_id) + ")",
                              dbFix(path_));
  }
  if (version == 0 && tables > 0) {
    return failedPrecondition("database " + path_ + " is a SQLite file but not a gdrmesh " +
                                  "database (it has tables and no gdrmesh schema version)",
                              dbFix(path_));
  }
  if (version > latest) {
    return failedPrecondition(
        "database " + path_ + " has schema version " + std::to_string(version) +
            ", newer than this gdrmesh build understands (" + std::to_string(latest) + ")",
        "run a gdrmesh coordinator at least as new as the one that wrote " + path_ +
            ", or point --db at another file");
  }

  GDR_ASSIGN_OR_RETURN(const std::string mode,
                       queryText(writer_, "set journal_mode", "PRAGMA journal_mode = WAL"));
  const bool in_memory = path_ == ":memory:";
  if (!in_memory && mode != "wal") {
    return failedPrecondition("could not switch database " + path_ + " to WAL mode (journal " +
                                  "mode stays '" + mode + "')",
                              "put the database on a local filesystem that supports shared " +
                                  std::string("memory (not NFS)"));
  }
  GDR_RETURN_IF_ERROR(execOnce(writer_, "set synchronous", "PRAGMA synchronous = NORMAL"));
  GDR_RETURN_IF_ERROR(execOnce(writer_, "set foreign_keys", "PRAGMA foreign_keys = ON"));
  // 32 MiB of page cache for the writer (SQLite's default is 2 MiB): a sweep's report rows go
  // into two host indexes at a thousand places at once (every host of a round), whose pages
  // otherwise spill and are read again for each batch (store_bench: a 1024-host report's write
  // took a fifth less CPU, half the system time). Pages are allocated as they are used.
  GDR_RETURN_IF_ERROR(execOnce(writer_, "set cache_size", "PRAGMA cache_size = -32768"));
  GDR_RETURN_IF_ERROR(migrate(migrations));
  // A database that opened but cannot be written (SQLite falls back to read-only when the file
  // refuses O_RDWR) would accept tests and keep none of their results: one write now proves it
  // can. PRAGMA takes no bound parameters; the value is our own integer constant.
  if (latest > 0) {
    GDR_RETURN_IF_ERROR(execOnce(writer_, "check that the database can be written",
                                 "PRAGMA user_version = " + std::to_string(latest)));
  }
  return openReader(options);
}

Status SqliteStore::walIndexWritable() const {
  if (path_ == ":memory:") return Status();
  const std::string shm = path_ + "-shm";
  if (::access(shm.c_str(), W_OK) == 0) return Status();
  const int e = errno;
  if (e != EACCES && e != EPERM && e != EROFS) return Status();  // none yet: SQLite creates it
  return Status(Code::kPermissionDenied,
                "cannot write database " + path_ + ": its WAL index " + shm + " refuses writes (" +
                    std::strerror(e) +
                    "); SQLite maps that file and would be killed (SIGBUS) writing to it, so "
                    "nothing is written until it is writable again",
                "give the coordinator's user write access to " + shm + " and " + path_ +
                    " again (an immutable file: chattr -i; a read-only mount: remount it "
                    "read-write); results held meanwhile are stored then, without a restart");
}

Status SqliteStore::openPrivateReader(Conn& c) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX,
                                 "unix-none");
  c.db.reset(raw);
  if (!c.db) return Status(Code::kResourceExhausted, "out of memory opening database " + path_);
  if (rc != SQLITE_OK) return error(c, rc, "open a private read-only connection");
  sqlite3_extended_result_codes(c.db.get(), 1);
  (void)sqlite3_db_config(c.db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  // Exclusive locking mode before the first read: the WAL index is built in heap memory.
  return execOnce(c, "set locking_mode", "PRAGMA locking_mode = EXCLUSIVE");
}

Status SqliteStore::openReader(const SqliteStoreOptions& options) {
  if (path_ == ":memory:") return Status();  // a second connection would be another database
  auto conn = std::make_unique<Conn>();
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr);
  conn->db.reset(raw);
  if (!conn->db) return Status(Code::kResourceExhausted, "out of memory opening database " + path_);
  if (rc != SQLITE_OK) return error(*conn, rc, "open read-only connection");
  sqlite3_extended_result_codes(conn->db.get(), 1);
  // A WAL reader waits only while the writer checkpoints or recovers the WAL.
  sqlite3_busy_timeout(conn->db.get(), options.busy_timeout_ms);
  // The first read proves the connection works (and sees the migrated schema).
  MutexLock lock(conn->mu);
  Result<int64_t> version = queryInt(*conn, "read user_version", "PRAGMA user_version");
  if (!version.ok()) return version.status().withContext("read-only connection");
  reader_ = std::move(conn);
  return Status();
}

Status SqliteStore::migrate(const std::vector<SqliteMigration>& migrations) {
  for (const SqliteMigration& m : migrations) {
    GDR_ASSIGN_OR_RETURN(const int64_t current,
                         queryInt(writer_, "read user_version", "PRAGMA user_version"));
    if (current >= m.version) continue;
    Status s = applyMigration(m);
    if (!s.ok()) {
      return s.withContext("schema migration " + std::to_string(m.version) + " (" + m.name +
                           ") of " + path_);
    }
  }
  return Status();
}

Status SqliteStore::applyMigration(const SqliteMigration& m) {
  GDR_RETURN_IF_ERROR(begin());
  // Another process may have migrated between our check and our write lock: look again.
  Result<int64_t> current = queryInt(writer_, "read user_version", "PRAGMA user_version");
  if (!current.ok()) {
    rollbackQuietly();
    return current.status();
  }
  if (*current >= m.version) return commit();
  for (const std::string& sql : m.statements) {
    Status s = execOnce(writer_, "migration " + std::to_string(m.version), sql);
    if (!s.ok()) {
      rollbackQuietly();
      return s;
    }
  }
  // PRAGMA takes no bound parameters; the value is our own integer constant, not input.
  Status s =
      execOnce(writer_, "set user_version", "PRAGMA user_version = " + std::to_string(m.version));
  if (!s.ok()) {
    rollbackQuietly();
    return s;
  }
  return commit();
}

Result<sqlite3_stmt*> SqliteStore::statement(Conn& c, const std::string& name,
                                             const std::string& sql) {
  auto it = c.stmts.find(name);
  if (it != c.stmts.end()) return it->second.get();
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(c.db.get(), sql.c_str(), static_cast<int>(sql.size() + 1),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  StmtPtr s(raw);
  if (rc != SQLITE_OK) return error(c, rc, "prepare " + name);
  if (!s) return internalError("statement " + name + " is empty");
  sqlite3_stmt* out = s.get();
  c.stmts.emplace(name, std::move(s));
  return out;
}

Status SqliteStore::execOnce(Conn& c, const std::string& name, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(c.db.get(), sql.c_str(), static_cast<int>(sql.size() + 1), 0,
                                    &raw, nullptr);
  StmtPtr s(raw);
  if (rc != SQLITE_OK) return error(c, rc, "prepare " + name);
  if (!s) return Status();
  int step;
  while ((step = sqlite3_step(s.get())) == SQLITE_ROW) {
  }
  if (step != SQLITE_DONE) return error(c, step, name);
  return Status();
}

Result<int64_t> SqliteStore::queryInt(Conn& c, const std::string& name, const std::string& sql) {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, name, sql));
  StmtScope scope(s);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, name);
  return static_cast<int64_t>(sqlite3_column_int64(s, 0));
}

Result<std::string> SqliteStore::queryText(Conn& c, const std::string& name,
                                           const std::string& sql) {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, name, sql));
  StmtScope scope(s);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, name);
  return columnText(s, 0);
}

Status SqliteStore::begin() {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "begin", "BEGIN IMMEDIATE"));
  StmtScope scope(s);
  const int rc = sqlite3_step(s);
  return rc == SQLITE_DONE ? Status() : error(writer_, rc, "begin");
}

Status SqliteStore::commit() {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "commit", "COMMIT"));
  Status st;
  {
    StmtScope scope(s);  // reset before the ROLLBACK below
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) return Status();
    st = error(writer_, rc, "commit");
  }
  rollbackQuietly();
  return st;
}

void SqliteStore::rollbackQuietly() noexcept {
  if (sqlite3_get_autocommit(writer_.db.get())) return;  // already rolled back (e.g. FULL)
  // Preparing the statement allocates; out of memory here must not terminate the process (a
  // transaction left open fails the next BEGIN, with the reason).
  try {
    Result<sqlite3_stmt*> s = statement(writer_, "rollback", "ROLLBACK");
    if (!s.ok()) return;
    StmtScope scope(*s);
    (void)sqlite3_step(*s);
  } catch (...) {  // nothing more to do in a quiet rollback
  }
}

namespace {

// True when the file system refuses writes to the database, its WAL or its directory (a
// read-only mount, an immutable file, file modes). SQLite does not always keep the errno of a
// failed write (sqlite3_system_errno can be 0 after an I/O error), so it is asked directly.
bool writeRefused(const std::string& path) {
  const auto refused = [](const std::string& p, int mode) {
    return ::access(p.c_str(), mode) != 0 && (errno == EACCES || errno == EPERM || errno == EROFS);
  };
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return refused(path, W_OK) || refused(path + "-wal", W_OK) || refused(dir, W_OK | X_OK);
}

// True when the process has a file-size limit (RLIMIT_FSIZE) and the database or its WAL has
// reached it, within a WAL frame (SQLite reports the failed write as SQLITE_IOERR_WRITE and does
// not always keep its errno, EFBIG).
bool atFileSizeLimit(const std::string& path) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return false;
  constexpr rlim_t kLargestFrame = 65536 + 24;  // the largest page and its frame header
  for (const std::string& f : {path, path + "-wal"}) {
    struct stat sb {};
    if (::stat(f.c_str(), &sb) == 0 &&
        static_cast<rlim_t>(sb.st_size) + kLargestFrame >= lim.rlim_cur) {
      return true;
    }
  }
  return false;
}

// The errors whose cause is the file system under database `path`, whatever SQLite's code
// (`primary`) says of them: writes refused, the file-size limit, a full disk. `sys`: the
// errno SQLite saw; `detail`: SQLite's own words. None for any other error.
std::optional<Status> sqliteFileSystemError(const std::string& path, int primary, int sys,
                                            const std::string& detail) {
  if (primary == SQLITE_IOERR && (sys == EPERM || sys == EROFS || sys == EACCES ||
                                  (path != ":memory:" && writeRefused(path)))) {
    // A write refused by the file system: read-only mount, immutable file, no permission.
    return Status(Code::kPermissionDenied,
                  "cannot write database " + path + " (" + detail +
                      (sys != 0 ? std::string(": ") + std::strerror(sys) : std::string()) +
                      "; the file system refuses writes)",
                  "give the coordinator's user write access to " + path +
                      " and its directory (a read-only mount or an immutable file: mount it "
                      "read-write, chattr -i), or pass --db another file");
  }
  if (primary == SQLITE_IOERR && (sys == EFBIG || (path != ":memory:" && atFileSizeLimit(path)))) {
    // Over the process's file-size limit (RLIMIT_FSIZE): the coordinator ignores SIGXFSZ, so
    // the write fails here instead of killing it.
    return Status(Code::kResourceExhausted,
                  "database " + path + " reached the coordinator's file-size limit (" + detail +
                      ": " + std::strerror(EFBIG) + ")",
                  "raise the coordinator's file-size limit (ulimit -f unlimited; LimitFSIZE= in "
                  "its systemd unit), or move the database (--db); the failed write was rolled "
                  "back");
  }
  if (primary == SQLITE_FULL || (primary == SQLITE_IOERR && sys == ENOSPC)) {
    return Status(Code::kResourceExhausted, "database disk is full: " + path + " (" + detail + ")",
                  "free space on the filesystem that holds " + path +
                      " (df -h), or move the database (--db); the failed write was rolled back");
  }
  return std::nullopt;
}

}  // namespace

// The file system's errors first, then one case per SQLite primary code.
Status SqliteStore::error(const Conn& c, int rc, const std::string& what) const {
  const int primary = rc & 0xff;
  const std::string msg = sqlite3_errmsg(c.db.get());
  const int sys = sqlite3_system_errno(c.db.get());
  const std::string detail =
      what + ": " + msg + " [" + sqlite3_errstr(rc) + ", code " + std::to_string(rc) + "]";
  if (auto st = sqliteFileSystemError(path_, primary, sys, detail)) return *st;
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return unavailable("database is locked by another process: " + path_ + " (" + detail + ")",
                         "another coordinator (or a sqlite3 shell) holds " + path_ +
                             "; stop it, or give this coordinator its own --db");
    case SQLITE_NOTADB:
      return failedPrecondition(
          "not a database (or its header is corrupt): " + path_ + " (" + detail + ")",
          dbFix(path_));
    case SQLITE_CORRUPT:
      // The salvage is the .dump route of docs/operations.md ("Backup and restore"): the
      // shell's .recover fails on a gdrmesh database with Debian 12's sqlite3 3.40.1.
      return Status(Code::kDataLoss, "database is corrupt: " + path_ + " (" + detail + ")",
                    "restore " + path_ +
                        " from a backup; without one, stop the coordinator and salvage what "
                        "SQLite can still read into a new file, keeping the schema version: "
                        "`sqlite3 " +
                        path_ + " .dump | sqlite3 " + path_ + ".salvaged && sqlite3 " + path_ +
                        ".salvaged \"PRAGMA user_version = $(sqlite3 " + path_ +
                        " 'PRAGMA user_version')\"`, then move " + path_ +
                        " (and its -wal, -shm) aside and the salvaged file in its place "
                        "(docs/operations.md, \"Backup and restore\"); or " +
                        dbFix(path_));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return Status(Code::kPermissionDenied, "cannot write database " + path_ + " (" + detail + ")",
                    "give the coordinator's user write access to " + path_ +
                        " and its directory (WAL needs the -wal and -shm files)");
    case SQLITE_CANTOPEN:
      if (sys == EACCES || sys == EPERM) {
        return Status(Code::kPermissionDenied,
                      "no permission to open database " + path_ + " (" + detail + ")",
                      "give the coordinator's user read/write access to " + path_ +
                          " and its directory, or pass --db another file");
      }
      return unavailable(
          "cannot open database " + path_ + " (" + detail + ": " + std::strerror(sys) + ")",
          "check that " + path_ + " and its directory exist and are writable");
    case SQLITE_IOERR:
      return unavailable(
          "I/O error on database " + path_ + " (" + detail + ": " + std::strerror(sys) + ")",
          "check the disk that holds " + path_ + " (dmesg, smartctl)");
    case SQLITE_CONSTRAINT:
      return invalidArgument("database " + path_ + " refused the row (" + detail + ")");
    case SQLITE_NOMEM:
      return Status(Code::kResourceExhausted, "out of memory in SQLite (" + detail + ")");
    default:
      return internalError("sqlite error on " + path_ + " (" + detail + ")");
  }
}

Result<std::vector<std::string>> SqliteStore::explain(const std::string& name,
                                                      const std::string& sql) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Not cached: a test helper. EXPLAIN QUERY PLAN needs no bound values.
  const std::string text = "EXPLAIN QUERY PLAN " + sql;
  sqlite3_stmt* raw = nullptr;
  const int prc = sqlite3_prepare_v2(c.db.get(), text.c_str(), -1, &raw, nullptr);
  StmtPtr s(raw);
  if (prc != SQLITE_OK) return error(c, prc, "prepare explain " + name);
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(columnText(s.get(), 3));
  if (rc != SQLITE_DONE) return error(c, rc, "explain " + name);
  return out;
}

Result<int> SqliteStore::schemaVersion() {
  MutexLock lock(writer_.mu);
  GDR_ASSIGN_OR_RETURN(const int64_t v,
                       queryInt(writer_, "read user_version", "PRAGMA user_version"));
  return static_cast<int>(v);
}

Result<std::string> SqliteStore::journalMode() {
  MutexLock lock(writer_.mu);
  return queryText(writer_, "read journal_mode", "PRAGMA journal_mode");
}

Status SqliteStore::setMaxPageCountForTesting(int64_t pages) {
  MutexLock lock(writer_.mu);
  // PRAGMA takes no bound parameters; a test-only integer, not input.
  return execOnce(writer_, "set max_page_count",
                  "PRAGMA max_page_count = " + std::to_string(pages));
}

Result<int64_t> SqliteStore::pageCountForTesting() {
  MutexLock lock(writer_.mu);
  return queryInt(writer_, "read page_count", "PRAGMA page_count");
}

}  // namespace gdrmesh
