// The status page's files (web/*.html, *.js, *.css), embedded in the binary at build time by
// web/embed_assets.cmake so that the coordinator serves them without any file on disk.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace gdrmesh::web {

struct Asset {
  std::string_view path;          // "/index.html"
  std::string_view content_type;  // "text/html; charset=utf-8"
  const unsigned char* data;
  size_t size;
};

// Every embedded file (generated).
const std::vector<Asset>& assets();

// The asset served at `path` ("/" is "/index.html"), or nullptr.
const Asset* findAsset(std::string_view path);

}  // namespace gdrmesh::web
