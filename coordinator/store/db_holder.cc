#include "coordinator/store/db_holder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace gdrmesh {
namespace {

std::string thisHost() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// The lock file's text: "key=value" lines (pid, host, listen).
std::optional<DatabaseHolderInfo> parse(const std::string& text) {
  DatabaseHolderInfo info;
  bool any = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    if (key == "pid") {
      info.pid = std::strtoll(value.c_str(), nullptr, 10);
      any = true;
    } else if (key == "host") {
      info.host = value;
      any = true;
    } else if (key == "listen") {
      info.listen = value;
    }
  }
  if (!any) return std::nullopt;
  return info;
}

std::string readAll(int fd) {
  std::string out;
  char buf[512];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || out.size() > 4096) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

Status lockFileError(const std::string& lock, const std::string& db, int e) {
  std::string dir = std::filesystem::path(lock).parent_path().string();
  if (dir.empty()) dir = ".";
  const std::string what = "cannot create lock file " + lock + " beside database " + db + " (" +
                           std::strerror(e) + "; one database has one coordinator, and the lock " +
                           "file says which)";
  if (e == ENOENT || e == ENOTDIR) {
    return notFound(what, "create the directory (mkdir -p " + dir +
                              "), or pass --db a path in an existing directory");
  }
  if (e == EACCES || e == EPERM || e == EROFS) {
    return Status(Code::kPermissionDenied, what,
                  "make " + dir +
                      " writable for the coordinator's user (a read-only mount: remount it "
                      "read-write; an immutable directory: chattr -i), or pass --db a path in a "
                      "writable directory");
  }
  return unavailable(what, "check the file system that holds " + dir);
}

}  // namespace

std::string DatabaseHolderInfo::describe() const {
  return "pid " + std::to_string(pid) + " on host " + (host.empty() ? "?" : host) +
         (listen.empty() ? std::string(", not listening yet") : ", listening on " + listen);
}

std::string DatabaseHolder::lockPath(const std::string& db_path) {
  return db_path + ".lock";
}

Result<std::unique_ptr<DatabaseHolder>> DatabaseHolder::acquire(const std::string& db_path) {
  if (db_path.empty()) {
    return invalidArgument("database path is empty", "pass --db <file>, e.g. /var/lib/gdrmesh/db");
  }
  const std::string lock = lockPath(db_path);
  // A holder that ends removes the file while it still holds the lock: a file locked here that
  // is no longer the one at the path belonged to it, and the lock is taken again on the new one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return lockFileError(lock, db_path, errno);
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      const int e = errno;
      const std::optional<DatabaseHolderInfo> holder = parse(readAll(fd));
      ::close(fd);
      if (e != EWOULDBLOCK) {
        return unavailable("cannot lock " + lock + " (" + std::strerror(e) + ")",
                           "put the database on a local file system that supports flock");
      }
      const std::string who =
          holder ? holder->describe() : std::string("a process that has not written its name yet");
      return failedPrecondition(
          "database " + db_path + " is in use by another coordinator: " + who + " (lock file " +
              lock + "); one database has one coordinator",
          "stop that coordinator first" +
              (holder ? " (kill " + std::to_string(holder->pid) + " on " + holder->host + ")"
                      : std::string()) +
              ", or give this coordinator its own --db");
    }
    struct stat locked {};
    struct stat named {};
    if (::fstat(fd, &locked) != 0 || ::stat(lock.c_str(), &named) != 0 ||
        locked.st_ino != named.st_ino || locked.st_dev != named.st_dev) {
      ::close(fd);  // removed (or replaced) by a holder that ended meanwhile: lock the new one
      continue;
    }
    std::unique_ptr<DatabaseHolder> holder(new DatabaseHolder(lock, fd));
    holder->previous_ = parse(readAll(fd));
    DatabaseHolderInfo me;
    me.pid = static_cast<int64_t>(::getpid());
    me.host = thisHost();
    // The lock is what counts; a full disk that refuses the few bytes of the name must not stop
    // the coordinator (another one is then told "has not written its name yet").
    (void)holder->write(me);
    return holder;
  }
  return unavailable("cannot lock " + lock + ": it was replaced 100 times while being locked",
                     "start one coordinator at a time on database " + db_path);
}

DatabaseHolder::~DatabaseHolder() {
  (void)::unlink(path_.c_str());  // before the lock goes: see acquire()
  ::close(fd_);
}

Status DatabaseHolder::announce(const std::string& listen) {
  DatabaseHolderInfo me;
  me.pid = static_cast<int64_t>(::getpid());
  me.host = thisHost();
  me.listen = listen;
  return write(me);
}

Status DatabaseHolder::write(const DatabaseHolderInfo& info) {
  const std::string text =
      "pid=" + std::to_string(info.pid) + "\nhost=" + info.host + "\nlisten=" + info.listen + "\n";
  // Shorter text first cut back, then written whole at offset 0: a reader sees at worst an
  // empty file (named as "a process that has not written its name yet").
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    const int e = errno;
    return unavailable("cannot write lock file " + path_ + " (" + std::strerror(e) + ")",
                       "free space on (or make writable) the disk that holds " + path_);
  }
  return Status();
}

}  // namespace gdrmesh
