//===- CompileProgress.h - A long compile's progress on stderr -*- C++ -*-===//
//
// A model's kernels compile in groups, one compiler (NVRTC or the host's)
// per group on a thread each. When that takes longer than a second and
// stderr is a terminal, the user sees how far it got:
//
//   fusec: compiling 48 kernels for sm_90a in 16 groups: 9/16
//
// Nothing is printed for quick compiles (cache hits), nor into files or
// pipes, where the line would only clutter logs.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_COMPILEPROGRESS_H
#define FUSEC_RUNTIME_COMPILEPROGRESS_H

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace fusec {

class CompileProgress {
public:
  /// `what`: "48 kernels for sm_90a"; `groups`: the compiles to wait for.
  /// Writes to stderr when it is a terminal, after a second.
  CompileProgress(std::string what, size_t groups);
  /// The same, writing to `stream` when `toTerminal`, once `quietFor` has
  /// passed (tests drive it through a file).
  CompileProgress(std::string what, size_t groups, std::FILE *stream,
                  bool toTerminal, std::chrono::milliseconds quietFor);
  /// Ends the progress line, if one was printed.
  ~CompileProgress();
  CompileProgress(const CompileProgress &) = delete;
  CompileProgress &operator=(const CompileProgress &) = delete;

  /// One group finished (any thread).
  void groupDone();

private:
  std::string what;
  size_t groups, done = 0;
  std::FILE *stream;
  bool toTerminal, printed = false;
  std::chrono::milliseconds quietFor;
  std::chrono::steady_clock::time_point start;
  std::mutex mutex;
};

} // namespace fusec

#endif
