// Last words of a process that dies of a bug: the uncaught exception (std::terminate) or the
// fatal signal, and the stack as offsets into each module, on stderr, so that a crash in a
// daemon's log can be located afterwards (`addr2line -C -f -e BINARY OFFSET...` on the same
// build). Fabric faults are results, never crashes: this is only for our own defects.
#pragma once

namespace gdrmesh {

// Installs the handlers once per process (std::set_terminate; SIGSEGV, SIGBUS, SIGILL, SIGFPE,
// after which the signal's default action runs).
void installCrashTrace();

}  // namespace gdrmesh
