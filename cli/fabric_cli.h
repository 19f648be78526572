// What the fabric commands share (cmd_fabric.cc: `gdrmesh fabric ...`; cmd_sweep_plan.cc:
// `gdrmesh sweep plan`, docs/fabric.md). No protobuf here.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"
#include "common/status.h"

namespace gdrmesh::cli {

// Prints "gdrmesh fabric CMD: MESSAGE" and the fix; the exit code by the error's kind (bad input
// 2, no InfiniBand here 3, anything else 1).
int fabricFail(const char* cmd, const Status& st);

// `gdrmesh sweep plan --pattern cover|bisection --fabric FILE`, under `sweep`.
void registerSweepPlan(CLI::App* sweep, Action* action);

}  // namespace gdrmesh::cli
