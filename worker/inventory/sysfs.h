// Small readers for sysfs/procfs trees under an injectable root directory.
//
// Every path given to these functions is an absolute path INSIDE the root ("/sys/class/net"),
// so that a recorded or generated tree can stand in for the live system. Symbolic links are
// resolved inside the root: an absolute link target is taken relative to the root, and ".."
// never climbs above it. Nothing here throws; a missing or unreadable file is std::nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gdrmesh::sysfs {

// "/tmp/tree" + "/sys/class" -> "/tmp/tree/sys/class"; "/" + "/sys" -> "/sys".
std::string join(const std::string& root, const std::string& path);

// Whole file content, or nullopt if it cannot be opened or read (sysfs answers some reads with
// an error, e.g. gid_attrs of an unused GID slot). Reads at most max_bytes.
std::optional<std::string> readFile(const std::string& root, const std::string& path,
                                    size_t max_bytes = 1 << 20);
// Content with surrounding whitespace (and the trailing newline) removed.
std::optional<std::string> readTrimmed(const std::string& root, const std::string& path);
// A decimal or 0x-prefixed hexadecimal integer.
std::optional<int64_t> readInt(const std::string& root, const std::string& path);

// Entry names of a directory (links included), sorted; empty if it does not exist.
std::vector<std::string> listDir(const std::string& root, const std::string& path);
bool exists(const std::string& root, const std::string& path);
bool isDirectory(const std::string& root, const std::string& path);

// Resolves every symbolic link in path inside root and returns the in-root absolute path
// ("/sys/class/infiniband/mlx5_0" -> "/sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0/
// infiniband/mlx5_0"), or nullopt if a component does not exist or links loop.
std::optional<std::string> resolve(const std::string& root, const std::string& path);

// The last component of a path: "/a/b/c" -> "c".
std::string baseName(const std::string& path);
// Trims ASCII whitespace on both ends.
std::string trim(const std::string& s);
// Sorts names that end in numbers numerically ("2" before "10").
std::vector<std::string> sortedNumerically(std::vector<std::string> names);

}  // namespace gdrmesh::sysfs
