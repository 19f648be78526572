#include <cstdio>

#include "cli/cli.h"

namespace gdrmesh::cli {

int usageFailure(const char* cmd, const Status& st) {
  std::fprintf(stderr, "gdrmesh %s: %s\n", cmd, st.message().c_str());
  if (!st.fix().empty()) std::fprintf(stderr, "  fix: %s\n", st.fix().c_str());
  return kExitUsage;
}

}  // namespace gdrmesh::cli
