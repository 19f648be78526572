#include "worker/inventory/sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <system_error>

namespace gdrmesh::sysfs {
namespace {

namespace fs = std::filesystem;

// Owns a file descriptor; closing never throws.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : path) {
    if (c == '/') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

}  // namespace

std::string join(const std::string& root, const std::string& path) {
  std::string r = root.empty() ? "/" : root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (path.empty()) return r;
  std::string p = path.front() == '/' ? path : "/" + path;
  if (r == "/") return p;
  return r + p;
}

std::optional<std::string> readFile(const std::string& root, const std::string& path,
                                    size_t max_bytes) {
  Fd fd(::open(join(root, path).c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  while (out.size() < max_bytes) {
    size_t want = std::min(sizeof(buf), max_bytes - out.size());
    ssize_t n = ::read(fd.get(), buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0'; };
  while (b < e && ws(s[b])) ++b;
  while (e > b && ws(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::optional<std::string> readTrimmed(const std::string& root, const std::string& path) {
  auto content = readFile(root, path);
  if (!content) return std::nullopt;
  return trim(*content);
}

std::optional<int64_t> readInt(const std::string& root, const std::string& path) {
  auto text = readTrimmed(root, path);
  if (!text || text->empty()) return std::nullopt;
  const char* begin = text->c_str();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(begin, &end, 0);
  if (errno != 0 || end == begin) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::vector<std::string> listDir(const std::string& root, const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(join(root, path), ec);
  if (ec) return names;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& root, const std::string& path) {
  std::error_code ec;
  return fs::exists(join(root, path), ec);
}

bool isDirectory(const std::string& root, const std::string& path) {
  std::error_code ec;
  return fs::is_directory(join(root, path), ec);
}

std::optional<std::string> resolve(const std::string& root, const std::string& path) {
  std::deque<std::string> todo;
  for (auto& p : splitPath(path)) todo.push_back(p);
  std::vector<std::string> cur;  // resolved components inside the root
  int links = 0;
  while (!todo.empty()) {
    std::string comp = todo.front();
    todo.pop_front();
    if (comp == ".") continue;
    if (comp == "..") {
      if (!cur.empty()) cur.pop_back();
      continue;
    }
    std::string in_root;
    for (auto& c : cur) in_root += "/" + c;
    in_root += "/" + comp;
    std::error_code ec;
    fs::path full(join(root, in_root));
    auto st = fs::symlink_status(full, ec);
    if (ec || !fs::exists(st)) return std::nullopt;
    if (fs::is_symlink(st)) {
      if (++links > 40) return std::nullopt;
      fs::path target = fs::read_symlink(full, ec);
      if (ec) return std::nullopt;
      std::string t = target.string();
      if (!t.empty() && t.front() == '/') cur.clear();
      auto parts = splitPath(t);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_front(*it);
      continue;
    }
    cur.push_back(comp);
  }
  std::string out;
  for (auto& c : cur) out += "/" + c;
  return out.empty() ? std::string("/") : out;
}

std::string baseName(const std::string& path) {
  auto parts = splitPath(path);
  return parts.empty() ? std::string() : parts.back();
}

std::vector<std::string> sortedNumerically(std::vector<std::string> names) {
  auto key = [](const std::string& s) {
    size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    std::string prefix = s.substr(0, i);
    long long num = i < s.size() ? std::strtoll(s.c_str() + i, nullptr, 10) : -1;
    return std::make_pair(prefix, num);
  };
  std::stable_sort(names.begin(), names.end(),
                   [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  return names;
}

}  // namespace gdrmesh::sysfs
