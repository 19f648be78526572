#include "common/crash_trace.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <typeinfo>

// Under a sanitizer its own handler reports fatal signals, with more; ours stays out.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define GDRMESH_TRACE_SIGNALS 1
#else
#define GDRMESH_TRACE_SIGNALS 0
#endif

namespace gdrmesh {
namespace {

// Each frame as "module+0xOFFSET", the form addr2line takes (with -e module).
void printStack() {
  void* frames[64];
  const int n = backtrace(frames, 64);
  std::fprintf(stderr, "gdrmesh: stack (resolve with addr2line -C -f -e MODULE OFFSET):\n");
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) != 0 && info.dli_fname != nullptr) {
      const auto off =
          reinterpret_cast<uintptr_t>(frames[i]) - reinterpret_cast<uintptr_t>(info.dli_fbase);
      std::fprintf(stderr, "  #%d %s+0x%zx%s%s\n", i, info.dli_fname, static_cast<size_t>(off),
                   info.dli_sname != nullptr ? " " : "",
                   info.dli_sname != nullptr ? info.dli_sname : "");
    } else {
      std::fprintf(stderr, "  #%d %p\n", i, frames[i]);
    }
  }
  std::fflush(stderr);
}

[[noreturn]] void onTerminate() {
  std::fprintf(stderr, "gdrmesh: fatal: std::terminate (report this as a gdrmesh bug): ");
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "uncaught %s: %s\n", typeid(ex).name(), ex.what());
    } catch (...) {
      std::fprintf(stderr, "uncaught exception of unknown type\n");
    }
  } else {
    std::fprintf(stderr, "no active exception\n");
  }
  printStack();
  std::abort();
}

#if GDRMESH_TRACE_SIGNALS
void onSignal(int sig) {
  // Best effort: the process is already broken. Then the default action (core, exit code).
  std::fprintf(stderr, "gdrmesh: fatal: signal %d (report this as a gdrmesh bug)\n", sig);
  printStack();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
#endif

}  // namespace

void installCrashTrace() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  std::set_terminate(onTerminate);
#if GDRMESH_TRACE_SIGNALS
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) std::signal(sig, onSignal);
#endif
}

}  // namespace gdrmesh
