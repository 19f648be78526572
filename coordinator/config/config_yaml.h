// Parses the cluster config file (YAML, docs/config.md) into the domain ClusterConfig.
// Errors name the key path ("sweeps[0].size"), what is wrong and the fix.
#pragma once

#include <string>

#include "common/status.h"
#include "coordinator/orchestrator/cluster_config.h"

namespace gdrmesh {

// `origin` names the file in errors.
Result<ClusterConfig> parseClusterConfig(const std::string& yaml_text,
                                         const std::string& origin = "config");

}  // namespace gdrmesh
