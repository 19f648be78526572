#include <pthread.h>

#include <csignal>

#include "cli/cli.h"

namespace gdrmesh::cli {

void blockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void waitForTerminationSignal(const std::function<void()>& on_signal) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  on_signal();
}

}  // namespace gdrmesh::cli
