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

TerminationSignalThread::TerminationSignalThread(std::function<void()> on_signal)
    : thread_([this, on_signal = std::move(on_signal)] {
        waitForTerminationSignal([&] {
          if (!closing_.load()) on_signal();
        });
      }) {}

TerminationSignalThread::~TerminationSignalThread() {
  closing_.store(true);
  // Directed at the thread, where SIGTERM is blocked: its sigwait takes it. When a signal has
  // already ended the wait, this one stays pending on the thread and goes with it.
  // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread): SIGTERM is blocked there, sigwait takes it
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

}  // namespace gdrmesh::cli
