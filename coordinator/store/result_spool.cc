#include "coordinator/store/result_spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/store/store_columns.h"

namespace gdrmesh {

using store_detail::checkInsertable;
using store_detail::parseEnum;
using store_detail::resultColumns;
using store_detail::visitResultColumns;

namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr int kSpoolFormat = 2;
// The first field of every line of the earlier format.
constexpr const char* kLegacySpoolMagic = "gdrmesh-spool-1";

// A figure as JSON: a number, or the name of a value that is not finite (JSON has none).
OrderedJson spoolDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// Writes each result column as a member of `out`, in visiting order.
class SpoolJsonWriter {
 public:
  OrderedJson out = OrderedJson::object();
  void field(const char* name, const std::string& v) { out[name] = v; }
  void field(const char* name, int64_t v) { out[name] = v; }
  void field(const char* name, uint64_t v) { out[name] = v; }
  void field(const char* name, uint32_t v) { out[name] = v; }
  void field(const char* name, int v) { out[name] = v; }
  void field(const char* name, bool v) { out[name] = v; }
  void field(const char* name, double v) { out[name] = spoolDouble(v); }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* name, E v) {
    out[name] = toString(v);
  }
  void derivedGpuDirect(const char* /*name*/, const TestResult& /*unused*/) {}
};

// Reads each result column from the members of `in`; keeps the first problem.
class SpoolJsonReader {
 public:
  explicit SpoolJsonReader(const nlohmann::json& in) : in_(in) {}
  const std::string& problem() const { return problem_; }

  void field(const char* name, std::string& v) {
    if (const nlohmann::json* j = member(name, nlohmann::json::value_t::string)) {
      v = j->get<std::string>();
    }
  }
  void field(const char* name, int64_t& v) { integer(name, &v); }
  void field(const char* name, uint64_t& v) {
    const nlohmann::json* j = member(name, nlohmann::json::value_t::number_unsigned);
    if (j) v = j->get<uint64_t>();
  }
  void field(const char* name, uint32_t& v) {
    int64_t x = 0;
    integer(name, &x);
    if (x < 0 || x > std::numeric_limits<uint32_t>::max()) bad(name, std::to_string(x));
    v = static_cast<uint32_t>(x);
  }
  void field(const char* name, int& v) {
    int64_t x = 0;
    integer(name, &x);
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
      bad(name, std::to_string(x));
    }
    v = static_cast<int>(x);
  }
  void field(const char* name, bool& v) {
    if (const nlohmann::json* j = member(name, nlohmann::json::value_t::boolean))
      v = j->get<bool>();
  }
  void field(const char* name, double& v) {
    const auto it = in_.find(name);
    if (it == in_.end()) return bad(name, "(missing)");
    if (it->is_number()) {
      v = it->get<double>();
    } else if (it->is_null() || *it == "NaN") {
      v = std::numeric_limits<double>::quiet_NaN();
    } else if (*it == "Infinity" || *it == "-Infinity") {
      v = *it == "Infinity" ? std::numeric_limits<double>::infinity()
                            : -std::numeric_limits<double>::infinity();
    } else {
      bad(name, it->dump());
    }
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* name, E& v) {
    const nlohmann::json* j = member(name, nlohmann::json::value_t::string);
    if (j && !parseEnum(j->get<std::string>(), &v)) bad(name, j->dump());
  }
  void derivedGpuDirect(const char* /*name*/, TestResult& /*unused*/) {}

 private:
  // The member `name` when it has type `type` (any integer for the integer types).
  const nlohmann::json* member(const char* name, nlohmann::json::value_t type) {
    const auto it = in_.find(name);
    if (it == in_.end()) {
      bad(name, "(missing)");
      return nullptr;
    }
    const bool integral = type == nlohmann::json::value_t::number_unsigned;
    if (integral ? !it->is_number_unsigned() : it->type() != type) {
      bad(name, it->dump());
      return nullptr;
    }
    return &*it;
  }
  void integer(const char* name, int64_t* v) {
    const auto it = in_.find(name);
    if (it == in_.end()) return bad(name, "(missing)");
    if (!it->is_number_integer()) return bad(name, it->dump());
    *v = it->get<int64_t>();
  }
  void bad(const char* name, const std::string& value) {
    if (problem_.empty()) problem_ = std::string("member ") + name + " holds " + value;
  }
  const nlohmann::json& in_;
  std::string problem_;
};

std::string spoolLine(const TestResult& result) {
  SpoolJsonWriter w;
  visitResultColumns(result, w);
  OrderedJson line = OrderedJson::object();
  line["spool"] = kSpoolFormat;
  line["result"] = std::move(w.out);
  return line.dump() + "\n";
}

bool legacySpoolUnescape(const std::string& v, std::string* out) {
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

class LegacySpoolDecoder {
 public:
  explicit LegacySpoolDecoder(std::vector<std::string> fields) : f_(std::move(fields)) {}
  const std::string& problem() const { return problem_; }
  bool complete() const { return problem_.empty() && i_ == f_.size(); }

  void field(const char* name, std::string& v) {
    if (const std::string* t = next(name); t && !legacySpoolUnescape(*t, &v)) bad(name, *t);
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
void syncSpoolDirectory(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// One append of `line` to the spool file (synced); 0 or the errno that stopped it, with nothing
// of the line left in the file.
int appendSpoolLine(const std::string& path, const std::string& line) {
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

// A line of the earlier format (without its newline); nullopt when it is not a whole record.
std::optional<TestResult> readLegacySpoolLine(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  if (fields.empty() || fields.front() != kLegacySpoolMagic) return std::nullopt;
  fields.erase(fields.begin());
  // Spooled by a build before migration 8: without the last two fields (empty bindings).
  const size_t spooled = resultColumns().size() - 1;  // gpudirect is derived, not spooled
  if (fields.size() + 2 == spooled) fields.resize(spooled);
  TestResult r;
  LegacySpoolDecoder dec(std::move(fields));
  visitResultColumns(r, dec);
  if (!dec.complete()) return std::nullopt;
  return r;
}

// One line (without its newline) of either format; nullopt when it is not a whole record.
std::optional<TestResult> readSpoolLine(const std::string& line) {
  if (line.rfind(kLegacySpoolMagic, 0) == 0) return readLegacySpoolLine(line);
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto format = j.find("spool");
  const auto result = j.find("result");
  if (format == j.end() || *format != kSpoolFormat || result == j.end() || !result->is_object()) {
    return std::nullopt;
  }
  TestResult r;
  SpoolJsonReader reader(*result);
  visitResultColumns(r, reader);
  if (!reader.problem().empty()) return std::nullopt;
  return r;
}

// The whole records of the spool's text, in order; `torn` counts the lines that are not.
std::vector<TestResult> readSpoolText(const std::string& data, uint64_t* torn) {
  std::vector<TestResult> rows;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) {
      ++*torn;  // the last record was cut short by a crash mid-append: never acknowledged
      break;
    }
    std::optional<TestResult> r = readSpoolLine(data.substr(pos, nl - pos));
    pos = nl + 1;
    if (r) {
      rows.push_back(std::move(*r));
    } else {
      ++*torn;
    }
  }
  return rows;
}

}  // namespace

ResultSpool::ResultSpool(std::string path, uint64_t reserve_bytes)
    : path_(std::move(path)), reserve_bytes_(reserve_bytes) {
  fillReserve();
}

std::string ResultSpool::spoolPathFor(const std::string& db_path) {
  return db_path.empty() || db_path == ":memory:" ? std::string() : db_path + ".spool";
}

std::string ResultSpool::reservePath() const {
  return path_.empty() ? std::string() : path_ + "-reserve";
}

void ResultSpool::fillReserve() {
  const std::string path = reservePath();
  if (path.empty() || reserve_bytes_ == 0) return;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // Allocated blocks, not a sparse file: giving them back is what frees space on a full disk.
  (void)::posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes_));
  ::close(fd);
}

bool ResultSpool::releaseReserve() {
  const std::string path = reservePath();
  struct stat sb {};
  if (path.empty() || ::stat(path.c_str(), &sb) != 0 || sb.st_size <= 0) return false;
  // One block at a time: what one spool record needs, and less than the database needs for a
  // transaction (a WAL frame is a page plus its header, an insert writes several), so space
  // given back here goes to the spool, not to a retried insert.
  const off_t step = std::max<off_t>(4096, sb.st_blksize);
  return ::truncate(path.c_str(), sb.st_size > step ? sb.st_size - step : 0) == 0;
}

Status ResultSpool::append(const TestResult& result) {
  GDR_RETURN_IF_ERROR(checkInsertable(result));
  if (path_.empty()) {
    return failedPrecondition("an in-memory database has no spool file",
                              "use a database file (--db PATH)");
  }
  const std::string line = spoolLine(result);
  MutexLock lock(mu_);
  const bool existed = ::access(path_.c_str(), F_OK) == 0;
  int e = appendSpoolLine(path_, line);
  // A full disk: the space held back for this moment goes, a block at a time.
  while ((e == ENOSPC || e == EDQUOT) && releaseReserve()) e = appendSpoolLine(path_, line);
  if (e != 0) {
    const std::string dir = std::filesystem::path(path_).parent_path().string();
    return Status(
        e == ENOSPC || e == EDQUOT || e == EFBIG ? Code::kResourceExhausted : Code::kUnavailable,
        "cannot append to spool file " + path_ + " (" + std::strerror(e) + "): result " +
            result.test_id + " is held in memory only, not durable",
        "free space on (or make writable) the disk that holds " +
            (dir.empty() ? std::string(".") : dir) +
            "; results held in memory are lost if the coordinator is killed");
  }
  if (!existed) syncSpoolDirectory(path_);
  return Status();
}

Result<SpoolReplay> ResultSpool::replay(ResultRecords& store) {
  SpoolReplay out;
  if (path_.empty()) return out;
  MutexLock lock(mu_);
  std::ifstream f(path_, std::ios::binary);
  if (!f) {
    if (errno == ENOENT || ::access(path_.c_str(), F_OK) != 0) return out;
    return unavailable("cannot read spool file " + path_ + " (" + std::strerror(errno) + ")",
                       "make it readable by the coordinator; it holds results not yet stored");
  }
  std::stringstream buffer;
  buffer << f.rdbuf();
  const std::string data = buffer.str();
  const bool legacy = data.rfind(kLegacySpoolMagic, 0) == 0 ||
                      data.find(std::string("\n") + kLegacySpoolMagic) != std::string::npos;
  std::vector<TestResult> rows = readSpoolText(data, &out.torn);
  for (size_t i = 0; i < rows.size(); ++i) {
    // Stored already (by a retry before the crash, or an earlier replay): not again.
    Result<std::optional<TestResult>> have = store.getResult(rows[i].test_id);
    Status st = have.ok() ? Status() : have.status();
    if (st.ok() && *have) {
      ++out.already_stored;
      continue;
    }
    if (st.ok()) st = store.insertResult(rows[i]).status();
    if (!st.ok()) {
      // Kept; a spool of the earlier format now holds the rest as JSON lines.
      std::string kept = "kept";
      if (legacy) {
        Status rw = rewrite(
            std::vector<TestResult>(rows.begin() + static_cast<std::ptrdiff_t>(i), rows.end()));
        kept += rw.ok() ? ", rewritten as JSON lines" : " as it was: " + rw.message();
      }
      return st.withContext("replaying spool file " + path_ + " (" + kept + "; " +
                            std::to_string(out.replayed) + " results replayed so far)");
    }
    ++out.replayed;
  }
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return unavailable(
        "cannot remove spool file " + path_ + " after replaying it (" + std::strerror(errno) + ")",
        "remove it by hand; its results are stored");
  }
  syncSpoolDirectory(path_);
  fillReserve();  // the disk had room for every result: hold space back again
  return out;
}

// Replaces the file with `rows` as JSON lines: written beside it, synced, renamed over it.
Status ResultSpool::rewrite(const std::vector<TestResult>& rows) {
  const std::string tmp = path_ + ".tmp";
  (void)::unlink(tmp.c_str());
  for (const TestResult& r : rows) {
    if (int e = appendSpoolLine(tmp, spoolLine(r)); e != 0) {
      (void)::unlink(tmp.c_str());
      return unavailable("cannot write " + tmp + " (" + std::strerror(e) + ")");
    }
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    (void)::unlink(tmp.c_str());
    return unavailable("cannot rename " + tmp + " to " + path_ + " (" + std::strerror(e) + ")");
  }
  syncSpoolDirectory(path_);
  return Status();
}

}  // namespace gdrmesh
