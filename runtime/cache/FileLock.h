//===- FileLock.h - The kernel cache's flock-based locks --------*- C++ -*-===//
//
// Internal to the kernel cache: the cleanup lock (one process evicts or
// sweeps at a time) and the per-key compile lock.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CACHE_FILELOCK_H
#define FUSEC_RUNTIME_CACHE_FILELOCK_H

#include <string>

namespace fusec::cache {

/// An flock on `path` held for this object's lifetime.
class FileLock {
public:
  /// Blocks until the lock is held when `wait`; otherwise held() says.
  FileLock(const std::string &path, bool wait);
  ~FileLock();
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  bool held() const { return fd >= 0; }

private:
  int fd = -1;
};

/// The lock a process holds while it compiles one key: others wanting the
/// same key wait, then find the entry published. It only saves work — two
/// processes compiling one key at once each publish an identical entry —
/// so a lock that cannot be had in time (or at all) is given up on.
class CompileLock {
public:
  explicit CompileLock(std::string lockPath);
  ~CompileLock();
  CompileLock(const CompileLock &) = delete;
  CompileLock &operator=(const CompileLock &) = delete;

private:
  std::string path;
  int fd = -1;
};

/// Whether nobody holds the lock file at `path` (then it is stale).
bool lockIsFree(const std::string &path);

} // namespace fusec::cache

#endif
