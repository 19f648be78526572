#include "coordinator/actions/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "common/clock_alarm.h"

namespace gdrmesh {

namespace {

constexpr size_t kRunnerOutputCap = size_t{1} << 20;

void closeRunnerFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// What is left of `deadline` on the clock, as poll(2)'s timeout: at least 1 ms while some is
// left, at most a minute (the clock's alarm ends a longer wait; this only bounds one poll).
int runnerPollMs(const Clock& clock, Clock::TimePoint deadline) {
  const Clock::TimePoint now = clock.now();
  if (now >= deadline) return 0;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<int64_t>(left, 60'000));
}

}  // namespace

std::string describeArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain =
        !a.empty() && a.find_first_of(" \t\n'\"\\$`;&|<>()*?[]{}!#~") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

namespace {

// Pipes for the child's stdin, stdout and stderr (close-on-exec: only the dup2'd ends reach it).
// On failure none is left open.
Status openRunnerPipes(const std::vector<std::string>& argv, int in[2], int out[2], int err[2]) {
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int* p : {in, out, err}) {
      closeRunnerFd(p[0]);
      closeRunnerFd(p[1]);
    }
    return unavailable(describeArgv(argv) + ": pipe: " + std::strerror(e),
                       "raise the open-file limit");
  }
  return Status();
}

// Starts argv[0] (PATH lookup) with its stdin, stdout and stderr on the given descriptors.
// Returns posix_spawnp's error: 0 when it started, and *pid is set.
int spawnRunnerChild(const std::vector<std::string>& argv, int stdin_fd, int stdout_fd,
                     int stderr_fd, pid_t* pid) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // posix_spawn (vfork + exec in glibc): safe in a process with threads, and it reports a
  // program that cannot be run as its return value.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group (killed whole at the deadline), no signal blocked (the coordinator
  // blocks SIGTERM and SIGINT in every thread for its signal thread) and default actions.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  const int spawned = ::posix_spawnp(pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return spawned;
}

// Writes `input` into the child's stdin (non-blocking, closed once all is written or the child
// stops reading) and reads its stdout and stderr (at most kRunnerOutputCap each kept) until both
// close or `deadline` passes on the clock (`alarm` is set to it). Closes each descriptor it is
// done with. Returns whether the deadline passed; *broken_pipe tells whether a write met a
// closed pipe (EPIPE).
bool pumpRunnerPipes(int& in_w, int& out_r, int& err_r, const std::string& input,
                     const Clock& clock, Clock::TimePoint deadline, ClockAlarm& alarm,
                     CommandOutput* result, bool* broken_pipe) {
  size_t written = 0;
  while (out_r >= 0 || err_r >= 0) {
    const int left = runnerPollMs(clock, deadline);
    if (left <= 0) return true;
    pollfd fds[4];
    int n = 0;
    for (int fd : {out_r, err_r}) {
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    }
    if (in_w >= 0) fds[n++] = {in_w, POLLOUT, 0};
    fds[n++] = {alarm.fd(), POLLIN, 0};
    const int ready = ::poll(fds, static_cast<nfds_t>(n), left);
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < n && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == alarm.fd()) {
        alarm.drain();  // the deadline, as the loop's next look at the clock sees
        continue;
      }
      if (fds[i].fd == in_w) {
        const ssize_t w = ::write(in_w, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) {
          *broken_pipe = *broken_pipe || errno == EPIPE;
          written = input.size();
        }
        if (written >= input.size()) closeRunnerFd(in_w);
        continue;
      }
      char buf[4096];
      const ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      std::string& into = fds[i].fd == out_r ? result->out : result->err;
      if (r > 0) {
        if (into.size() < kRunnerOutputCap) into.append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        closeRunnerFd(fds[i].fd == out_r ? out_r : err_r);
      }
    }
  }
  return false;
}

// Kills the child's whole process group (and the child, should it have left it), then reaps it.
void killRunnerChild(pid_t pid, int* status) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, status, 0);
}

// The pipes closed: the program has ended (or closed them); waits for it up to `deadline` on
// the clock, in poll(2) on a pidfd of the child and on `alarm`. False when the deadline passed
// (the child is killed and reaped).
bool waitRunnerChild(pid_t pid, const Clock& clock, Clock::TimePoint deadline, ClockAlarm& alarm,
                     int* status) {
  // A kernel without pidfd_open (before 5.3): the child is looked at every few milliseconds.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  bool exited = true;
  while (true) {
    const pid_t w = ::waitpid(pid, status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    const int left = runnerPollMs(clock, deadline);
    if (left <= 0) {
      killRunnerChild(pid, status);
      exited = false;
      break;
    }
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {alarm.fd(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, pidfd >= 0 ? left : std::min(left, 2));
    if (ready > 0 && fds[1].revents != 0) alarm.drain();
  }
  if (pidfd >= 0) ::close(pidfd);
  return exited;
}

}  // namespace

Result<CommandOutput> ProcessRunner::run(const std::vector<std::string>& argv,
                                         double timeout_seconds, const std::string& input) {
  if (argv.empty() || argv[0].empty()) {
    return invalidArgument("command: empty argv", "give the program and its arguments");
  }
  // The child's deadline is on the injected clock: poll(2) on its pipes (and then on the
  // child) also waits for `alarm`, which the clock marks at the deadline.
  const Clock::TimePoint deadline = clock_.after(timeout_seconds);
  ClockAlarm alarm(clock_);
  alarm.set(deadline);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  GDR_RETURN_IF_ERROR(openRunnerPipes(argv, in, out, err));
  pid_t pid = -1;
  const int spawned = spawnRunnerChild(argv, in[0], out[1], err[1], &pid);
  closeRunnerFd(in[0]);
  closeRunnerFd(out[1]);
  closeRunnerFd(err[1]);
  if (spawned != 0) {
    closeRunnerFd(in[1]);
    closeRunnerFd(out[0]);
    closeRunnerFd(err[0]);
    return notFound(argv[0] + ": cannot run it: " + std::strerror(spawned),
                    "install it or give its full path in the config");
  }
  // A program may exit without reading its input: writing into the closed pipe then raises
  // SIGPIPE, whose default action ends the whole process. It is blocked on this thread while
  // the input is written, and one raised meanwhile is taken off before it is unblocked.
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  bool broken_pipe = false;
  ::fcntl(in[1], F_SETFL, O_NONBLOCK);
  if (input.empty()) closeRunnerFd(in[1]);

  CommandOutput result;
  const bool timed_out =
      pumpRunnerPipes(in[1], out[0], err[0], input, clock_, deadline, alarm, &result, &broken_pipe);
  closeRunnerFd(in[1]);
  closeRunnerFd(out[0]);
  closeRunnerFd(err[0]);
  if (broken_pipe && !sigismember(&old_set, SIGPIPE)) {
    const timespec now_ts{0, 0};
    while (::sigtimedwait(&pipe_set, nullptr, &now_ts) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  int status = 0;
  if (timed_out) {
    killRunnerChild(pid, &status);
    return Status(Code::kDeadlineExceeded,
                  describeArgv(argv) + ": still running after " + std::to_string(timeout_seconds) +
                      " s; killed",
                  "raise the command's timeout in the config, or fix what it waits on");
  }
  if (!waitRunnerChild(pid, clock_, deadline, alarm, &status)) {
    return Status(Code::kDeadlineExceeded,
                  describeArgv(argv) + ": still running after " + std::to_string(timeout_seconds) +
                      " s; killed",
                  "raise the command's timeout in the config");
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace gdrmesh
