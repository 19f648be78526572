// The table of cluster config keys (coordinator/config/config_keys.h) is the parser's: every key
// it lists is accepted at its section, and a key it does not list is refused with exactly the
// section's keys as the fix. docs/reference.md is printed from the same table.
#include "coordinator/config/config_keys.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "coordinator/config/config_yaml.h"

namespace gdrmesh {
namespace {

// YAML that puts `key: x` into `section`; "" for a section this test does not know (a new
// section: add it here).
std::string yamlWithKey(const std::string& section, const std::string& key) {
  const std::map<std::string, std::string> prefix = {
      {"(top level)", ""},
      {"sweeps[]", "sweeps:\n  - "},
      {"thresholds", "thresholds:\n  "},
      {"host_classes[]", "host_classes:\n  - name: c\n    "},
      {"host_classes[].expect", "host_classes:\n  - name: c\n    expect:\n      "},
      {"schedules[]", "schedules:\n  - "},
      {"retention", "retention:\n  "},
      {"outliers", "outliers:\n  "},
      {"actions", "actions:\n  "},
      {"actions.kubernetes", "actions:\n  kubernetes:\n    "},
      {"hooks[]", "hooks:\n  - "},
      {"log", "log:\n  "},
  };
  auto it = prefix.find(section);
  if (it == prefix.end()) return "";
  if (section == "host_classes[]" && key == "name") return "host_classes:\n  - name: x\n";
  return it->second + key + ": x\n";
}

TEST(ConfigKeys, EveryListedKeyIsAcceptedAtItsSection) {
  ASSERT_FALSE(clusterConfigKeys().empty());
  for (const ConfigKey& k : clusterConfigKeys()) {
    const std::string yaml = yamlWithKey(std::string(k.section), std::string(k.key));
    ASSERT_FALSE(yaml.empty()) << "section " << k.section << " unknown to this test";
    auto c = parseClusterConfig(yaml, "t.yaml");
    // "x" is a wrong value for most keys: any error but an unknown key is fine.
    if (!c.ok()) {
      EXPECT_EQ(c.status().message().find("unknown key"), std::string::npos)
          << k.section << " " << k.key << ": " << c.status().toString();
    }
    EXPECT_FALSE(k.meaning.empty()) << k.section << " " << k.key;
  }
}

TEST(ConfigKeys, AnUnlistedKeyIsRefusedWithTheSectionsKeys) {
  std::set<std::string> sections;
  for (const ConfigKey& k : clusterConfigKeys()) sections.emplace(k.section);
  for (const std::string& section : sections) {
    auto c = parseClusterConfig(yamlWithKey(section, "no_such_key"), "t.yaml");
    ASSERT_FALSE(c.ok()) << section;
    EXPECT_NE(c.status().message().find("no_such_key: unknown key"), std::string::npos)
        << section << ": " << c.status().toString();
    std::string list;
    for (const std::string& key : clusterConfigKeysOf(section)) {
      list += (list.empty() ? "" : ", ") + key;
    }
    EXPECT_EQ(c.status().fix(), "valid keys here: " + list) << section;
  }
}

}  // namespace
}  // namespace gdrmesh
