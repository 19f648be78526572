// `gdrmesh worker --simulate N`: the simulation options of the `worker` subcommand.
// registerWorker (cmd_worker.cc) adds them with addSimulateOptions() and, when
// simulateRequested(), runs runSimulatedWorkers() instead of a real worker.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/tls_args.h"

namespace gdrmesh::cli {

struct SimulateArgs;

// Adds --simulate, --sim-config, --name-prefix and the --sim-* options to `worker`.
std::shared_ptr<SimulateArgs> addSimulateOptions(CLI::App* worker);
// True when --simulate or --sim-config was given.
bool simulateRequested(const SimulateArgs& args);
// Runs the simulated workers until SIGINT/SIGTERM; returns the exit code. `labels` (KEY=VALUE,
// from --label) go with every worker's registration. With TLS every stream presents one
// simulator certificate, whose name must be the --name-prefix.
int runSimulatedWorkers(const SimulateArgs& args, const std::string& coordinator,
                        const std::vector<std::string>& labels, const TlsArgs& tls);

}  // namespace gdrmesh::cli
