//===- FileLock.cpp - The kernel cache's flock-based locks ----------------===//

#include "runtime/cache/FileLock.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace fusec::cache {

namespace {

/// How long a compile waits for another process compiling the same key
/// before compiling it too.
constexpr auto kCompileLockWait = std::chrono::minutes(10);

} // namespace

FileLock::FileLock(const std::string &path, bool wait) {
  fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  int result;
  while ((result = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 &&
         errno == EINTR) {
  }
  if (result != 0) {
    close(fd);
    fd = -1;
  }
}

FileLock::~FileLock() {
  if (fd >= 0)
    close(fd);
}

CompileLock::CompileLock(std::string lockPath) : path(std::move(lockPath)) {
  fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  auto deadline = std::chrono::steady_clock::now() + kCompileLockWait;
  auto pause = std::chrono::milliseconds(1);
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) ||
        std::chrono::steady_clock::now() > deadline) {
      close(fd);
      fd = -1;
      return;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

CompileLock::~CompileLock() {
  if (fd < 0)
    return;
  // Whoever opened this file before the unlink still waits on it and
  // then finds the entry; newcomers create a fresh lock file.
  unlink(path.c_str());
  close(fd);
}

bool lockIsFree(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

} // namespace fusec::cache
