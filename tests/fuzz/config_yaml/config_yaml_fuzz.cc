// Fuzzes the cluster config parser (coordinator/config/config_yaml.h) with arbitrary text: a
// config file or the config_yaml of a SweepSpec is outside input. Any text must give a config
// or an error Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "coordinator/config/config_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cfg = gdrmesh::parseClusterConfig(text, "fuzz.yaml");
  if (!cfg.ok()) {
    // Errors name what failed; reading the message must be safe too.
    volatile size_t n = cfg.status().message().size();
    (void)n;
  }
  return 0;
}
