// A SweepCodec for tests that never read a sweep's spec back: every spec is stored as "{}" and
// read back as the default SweepSpec.
#pragma once

#include <string>

#include "coordinator/orchestrator/sweep_manager.h"

namespace gdrmesh::testing {

class EmptyCodec final : public SweepCodec {
 public:
  std::string encode(const SweepSpec& /*spec*/) const override { return "{}"; }
  Result<SweepSpec> decode(const std::string& /*text*/) const override { return SweepSpec{}; }
};

}  // namespace gdrmesh::testing
