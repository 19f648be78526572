// A temporary directory (mkdtemp, under $TMPDIR or /tmp) removed with everything in it when the
// object dies. Shared by the suites (tests/support/CMakeLists.txt: gdrmesh_test_files).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace gdrmesh::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/gdrmesh-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `text` to `rel` (a path below the directory), creating the folders on the way.
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(file(rel)).parent_path());
    std::ofstream(file(rel)) << text;
  }

 private:
  std::string path_;
};

}  // namespace gdrmesh::testing
