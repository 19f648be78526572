// gdrmesh: is GPUDirect RDMA really working across the fleet, and how fast?
#include <cstdio>
#include <exception>

#include "cli/cli.h"
#include "cli/suggest.h"
#include "common/crash_trace.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"gdrmesh: GPUDirect RDMA acceptance tests and fabric sweeps", "gdrmesh"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gdrmesh 0.1.0");
  gdrmesh::cli::Action action;
  gdrmesh::cli::registerCoordinator(app, &action);
  gdrmesh::cli::registerWorker(app, &action);
  gdrmesh::cli::registerClientCommands(app, &action);
  gdrmesh::cli::registerSweepCommands(app, &action);
  gdrmesh::cli::registerHistoryCommands(app, &action);
  gdrmesh::cli::registerAcceptCommand(app, &action);
  gdrmesh::cli::registerLocalCommands(app, &action);
  gdrmesh::cli::registerReportCommand(app, &action);
  gdrmesh::cli::registerCertsCommands(app, &action);
  gdrmesh::cli::registerFabricCommands(app, &action);
  gdrmesh::cli::registerReferenceCommand(app, &action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // `gdrmesh wokers`: name the word and the nearest command, not "arguments not expected".
    if (auto msg = gdrmesh::cli::unknownCommandMessage(
            app, std::vector<std::string>(argv + 1, argv + argc))) {
      std::fprintf(stderr, "%s\n", msg->c_str());
      return gdrmesh::cli::kExitUsage;
    }
    int rc = app.exit(e);
    return rc == 0 ? 0 : gdrmesh::cli::kExitUsage;
  }
  if (!gdrmesh::cli::prepareClientOptions()) return gdrmesh::cli::kExitUsage;
  return action ? action() : gdrmesh::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  gdrmesh::installCrashTrace();  // a thread's uncaught exception or a fatal signal: where
  // An exception that reaches here is a bug of ours (fabric faults are results): say so and
  // exit with kExitInternal instead of std::terminate's abort.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gdrmesh: internal error: %s (report this as a gdrmesh bug)\n", e.what());
  } catch (...) {
    std::fputs("gdrmesh: internal error: unknown exception (report this as a gdrmesh bug)\n",
               stderr);
  }
  return gdrmesh::cli::kExitInternal;
}
