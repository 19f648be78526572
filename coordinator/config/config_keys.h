// Every key of the cluster config file, by section: the one table the parser checks keys
// against (its "unknown key" errors list a section's keys from here) and `gdrmesh reference`
// prints into docs/reference.md. A key the parser reads must be here, or it is refused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gdrmesh {

struct ConfigKey {
  std::string_view section;  // "(top level)", "sweeps[]", "actions.kubernetes", ...
  std::string_view key;
  std::string_view meaning;  // one line; docs/config.md has the whole story
};

// In the order the reference lists them (and the parser's error lists them).
const std::vector<ConfigKey>& clusterConfigKeys();

// The keys of one section, in table order.
std::vector<std::string> clusterConfigKeysOf(std::string_view section);

}  // namespace gdrmesh
