// SqliteStore: the spool (ResultSpooling), "<db>.spool" beside the database, and the space held
// back for it ("<db>.spool-reserve").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "coordinator/store/sqlite_columns.h"
#include "coordinator/store/sqlite_internal.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {

// The store's private helpers: sqlite_internal.h (statements, the read lease) and
// sqlite_columns.h, store_columns.h (the column lists).
using namespace sqlite_detail;
using namespace store_detail;

namespace {

// The spool's line format: "gdrmesh-spool-1" then every result column in visiting order, each
// percent-escaped (no tab, newline or '%' left raw), tab-separated, one result per line. A line
// cut short by a crash (no newline, or the wrong number of fields) is not a result.
constexpr const char* kSpoolMagic = "gdrmesh-spool-1";

std::string spoolEscape(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (unsigned char ch : v) {
    if (ch == '%' || ch == '\t' || ch == '\n' || ch == '\r') {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

bool spoolUnescape(const std::string& v, std::string* out) {
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '%') {
      *out += v[i];
      continue;
    }
    if (i + 2 >= v.size() || !std::isxdigit(static_cast<unsigned char>(v[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(v[i + 2]))) {
      return false;
    }
    const unsigned int x = static_cast<unsigned int>(std::stoul(v.substr(i + 1, 2), nullptr, 16));
    *out += static_cast<char>(x);
    i += 2;
  }
  return true;
}

class SpoolEncoder {
 public:
  std::string line = kSpoolMagic;
  void field(const char* /*name*/, const std::string& v) { add(spoolEscape(v)); }
  void field(const char* /*name*/, int64_t v) { add(std::to_string(v)); }
  void field(const char* /*name*/, uint64_t v) { add(std::to_string(v)); }
  void field(const char* /*name*/, uint32_t v) { add(std::to_string(v)); }
  void field(const char* /*name*/, int v) { add(std::to_string(v)); }
  void field(const char* /*name*/, bool v) { add(v ? "1" : "0"); }
  void field(const char* /*name*/, double v) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    add(buf);
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* /*name*/, E v) {
    add(toString(v));
  }
  void derivedGpuDirect(const char* /*name*/, const TestResult& /*unused*/) {}

 private:
  void add(const std::string& f) {
    line += '\t';
    line += f;
  }
};

class SpoolDecoder {
 public:
  explicit SpoolDecoder(std::vector<std::string> fields) : f_(std::move(fields)) {}
  const std::string& problem() const { return problem_; }
  bool complete() const { return problem_.empty() && i_ == f_.size(); }

  void field(const char* name, std::string& v) {
    if (const std::string* t = next(name); t && !spoolUnescape(*t, &v)) bad(name, *t);
  }
  void field(const char* name, int64_t& v) { integer(name, &v); }
  void field(const char* name, uint64_t& v) {
    int64_t x = 0;
    integer(name, &x);
    v = static_cast<uint64_t>(x);
  }
  void field(const char* name, uint32_t& v) {
    int64_t x = 0;
    integer(name, &x);
    v = static_cast<uint32_t>(x);
  }
  void field(const char* name, int& v) {
    int64_t x = 0;
    integer(name, &x);
    v = static_cast<int>(x);
  }
  void field(const char* name, bool& v) {
    int64_t x = 0;
    integer(name, &x);
    v = x != 0;
  }
  void field(const char* name, double& v) {
    const std::string* t = next(name);
    if (!t) return;
    char* end = nullptr;
    v = std::strtod(t->c_str(), &end);
    if (end == t->c_str() || *end != '\0') bad(name, *t);
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* name, E& v) {
    if (const std::string* t = next(name); t && !parseEnum(*t, &v)) bad(name, *t);
  }
  void derivedGpuDirect(const char* /*name*/, TestResult& /*unused*/) {}

 private:
  const std::string* next(const char* name) {
    if (i_ >= f_.size()) {
      bad(name, "(missing)");
      return nullptr;
    }
    return &f_[i_++];
  }
  void integer(const char* name, int64_t* v) {
    const std::string* t = next(name);
    if (!t) return;
    char* end = nullptr;
    errno = 0;
    *v = std::strtoll(t->c_str(), &end, 10);
    if (end == t->c_str() || *end != '\0' || errno != 0) bad(name, *t);
  }
  void bad(const char* name, const std::string& v) {
    if (problem_.empty()) problem_ = std::string("field ") + name + " holds '" + v + "'";
  }
  std::vector<std::string> f_;
  size_t i_ = 0;
  std::string problem_;
};

// Makes a file's directory entry durable (a new or removed spool survives a power cut).
void syncDirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string SqliteStore::spoolPath() const {
  return path_ == ":memory:" ? std::string() : path_ + ".spool";
}

std::string SqliteStore::spoolReservePath() const {
  return path_ == ":memory:" ? std::string() : path_ + ".spool-reserve";
}

void SqliteStore::fillSpoolReserve() {
  const std::string path = spoolReservePath();
  if (path.empty() || spool_reserve_ == 0) return;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // Allocated blocks, not a sparse file: giving them back is what frees space on a full disk.
  (void)::posix_fallocate(fd, 0, static_cast<off_t>(spool_reserve_));
  ::close(fd);
}

bool SqliteStore::releaseSpoolReserve() {
  const std::string path = spoolReservePath();
  struct stat sb {};
  if (path.empty() || ::stat(path.c_str(), &sb) != 0 || sb.st_size <= 0) return false;
  // One block at a time: what one spool record needs, and less than the database needs for a
  // transaction (a WAL frame is a page plus its header, an insert writes several), so space
  // given back here goes to the spool, not to a retried insert.
  const off_t step = std::max<off_t>(4096, sb.st_blksize);
  return ::truncate(path.c_str(), sb.st_size > step ? sb.st_size - step : 0) == 0;
}

int SqliteStore::appendToSpool(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : ENOSPC;
      // Leave no partial record behind: cut the file back to where this record began.
      struct stat sb {};
      if (::fstat(fd, &sb) == 0) {
        (void)::ftruncate(fd, sb.st_size - static_cast<off_t>(line.size() - left));
      }
      ::close(fd);
      return e;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    struct stat sb {};
    if (::fstat(fd, &sb) == 0) (void)::ftruncate(fd, sb.st_size - static_cast<off_t>(line.size()));
    ::close(fd);
    return e;
  }
  ::close(fd);
  return 0;
}

Status SqliteStore::spoolResult(const TestResult& result) {
  GDR_RETURN_IF_ERROR(checkInsertable(result));
  const std::string path = spoolPath();
  if (path.empty()) {
    return failedPrecondition("an in-memory database has no spool file",
                              "use a database file (--db PATH)");
  }
  SpoolEncoder enc;
  visitResultColumns(result, enc);
  enc.line += '\n';
  std::lock_guard<std::mutex> lock(spool_mu_);
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  int e = appendToSpool(path, enc.line);
  // A full disk: the space held back for this moment goes, a block at a time.
  while ((e == ENOSPC || e == EDQUOT) && releaseSpoolReserve()) e = appendToSpool(path, enc.line);
  if (e != 0) {
    return Status(
        e == ENOSPC || e == EDQUOT || e == EFBIG ? Code::kResourceExhausted : Code::kUnavailable,
        "cannot append to spool file " + path + " (" + std::strerror(e) + "): result " +
            result.test_id + " is held in memory only, not durable",
        "free space on (or make writable) the disk that holds " + path_ +
            "; results held in memory are lost if the coordinator is killed");
  }
  if (!existed) syncDirectoryOf(path);
  return Status();
}

Result<SpoolReplay> SqliteStore::replaySpool() {
  SpoolReplay out;
  const std::string path = spoolPath();
  if (path.empty()) return out;
  std::lock_guard<std::mutex> lock(spool_mu_);
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno == ENOENT || ::access(path.c_str(), F_OK) != 0) return out;
    return unavailable("cannot read spool file " + path + " (" + std::strerror(errno) + ")",
                       "make it readable by the coordinator; it holds results not yet stored");
  }
  std::stringstream buffer;
  buffer << f.rdbuf();
  const std::string data = buffer.str();
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) {
      ++out.torn;  // the last record was cut short by a crash mid-append: never acknowledged
      break;
    }
    std::string line = data.substr(pos, nl - pos);
    pos = nl + 1;
    std::vector<std::string> fields;
    size_t start = 0;
    for (;;) {
      const size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (fields.empty() || fields.front() != kSpoolMagic) {
      ++out.torn;
      continue;
    }
    fields.erase(fields.begin());
    // Spooled by a build before migration 7: without the last two fields (empty bindings).
    const size_t spooled = resultColumns().size() - 1;  // gpudirect is derived, not spooled
    if (fields.size() + 2 == spooled) fields.resize(spooled);
    TestResult r;
    SpoolDecoder dec(std::move(fields));
    visitResultColumns(r, dec);
    if (!dec.complete()) {
      ++out.torn;
      continue;
    }
    // Stored already (by a retry before the crash, or an earlier replay): not again.
    GDR_ASSIGN_OR_RETURN(std::optional<TestResult> have, getResult(r.test_id));
    if (have) {
      ++out.already_stored;
      continue;
    }
    Result<int64_t> id = insertResult(r);
    if (!id.ok()) {
      return id.status().withContext("replaying spool file " + path + " (kept; " +
                                     std::to_string(out.replayed) + " results replayed so far)");
    }
    ++out.replayed;
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return unavailable(
        "cannot remove spool file " + path + " after replaying it (" + std::strerror(errno) + ")",
        "remove it by hand; its results are stored");
  }
  syncDirectoryOf(path);
  fillSpoolReserve();  // the disk had room for every result: hold space back again
  return out;
}

}  // namespace gdrmesh
