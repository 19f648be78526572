// Commands that run on this host without a coordinator: topo, doctor --local.
#include "cli/cli.h"

namespace gdrmesh::cli {

void registerLocalCommands(CLI::App& /*app*/, Action* /*action*/) {}

}  // namespace gdrmesh::cli
