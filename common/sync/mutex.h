// Mutexes the compiler checks (issue #19). A member that a mutex guards is declared with
// ABSL_GUARDED_BY(mu_), a private function called with it held with
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_), and clang's -Wthread-safety (an error in every clang
// build, CMakeLists.txt) rejects an access without the lock. GCC ignores the attributes.
//
// Why a wrapper of std::mutex and not absl::Mutex (Abseil is linked, through gRPC):
// - libstdc++'s std::mutex, std::lock_guard and std::unique_lock carry no capability
//   attributes, so the analysis cannot see them take or release anything; these types are the
//   same std::mutex with the attributes added, nothing else (no extra state, no extra cost).
// - The waits stay std::condition_variable waits and gdrmesh::waitUntil (common/clock.h) on the
//   std::unique_lock<std::mutex> that UniqueLock holds: absl::Mutex would need absl::CondVar and
//   a second waitUntil, a rewrite of every wait.
// - Debian's libabsl is built without ThreadSanitizer, so TSan would not see absl::Mutex's
//   happens-before edges (false reports); and this distribution's absl::Mutex checks every lock
//   for deadlock cycles unless each process turns that off (coordinator_server.cc does so for
//   gRPC's own mutexes).
//
// Use:
//   mutable gdrmesh::Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_) = 0;
//   void bumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
//   ...
//   gdrmesh::MutexLock lock(mu_);    // as std::lock_guard
//   gdrmesh::UniqueLock lock(mu_);   // as std::unique_lock: unlock()/lock(), and waits:
//   cv_.wait(lock.native(), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_; });
// A lambda that reads guarded state while its caller holds the lock (a wait's predicate) says
// so with ABSL_EXCLUSIVE_LOCKS_REQUIRED: the analysis checks each lambda as a function of its
// own, and std::condition_variable (a system header) is not checked for calling it.
#pragma once

#include <absl/base/thread_annotations.h>

#include <mutex>

namespace gdrmesh {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

  // The std::mutex itself, for UniqueLock; not for locking directly (the analysis would not
  // see it).
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// As std::lock_guard: holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// As std::unique_lock: holds `mu` from construction, may release and take it again, and lends
// its std::unique_lock<std::mutex> to std::condition_variable waits and gdrmesh::waitUntil
// (which give the mutex back before they return, so the analysis's view stays true).
class ABSL_SCOPED_LOCKABLE UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lock_(mu.native()) {}
  ~UniqueLock() ABSL_UNLOCK_FUNCTION() = default;
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { lock_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }

  // For waits only; unlocking through it would hide the release from the analysis.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace gdrmesh
