#include "runtime/CompileProgress.h"

#include <cstdio>
#include <unistd.h>

namespace fusec {

/// Compiles shorter than this print nothing.
constexpr std::chrono::milliseconds kQuietCompile(1000);

CompileProgress::CompileProgress(std::string what, size_t groups)
    : what(std::move(what)), groups(groups), toTerminal(isatty(2) == 1),
      start(std::chrono::steady_clock::now()) {}

CompileProgress::~CompileProgress() {
  if (printed)
    std::fputc('\n', stderr);
}

void CompileProgress::groupDone() {
  std::lock_guard<std::mutex> lock(mutex);
  ++done;
  if (!toTerminal || std::chrono::steady_clock::now() - start < kQuietCompile)
    return;
  // \r rewrites the line in place.
  std::fprintf(stderr, "\rfusec: compiling %s in %zu group%s: %zu/%zu",
               what.c_str(), groups, groups == 1 ? "" : "s", done, groups);
  std::fflush(stderr);
  printed = true;
}

} // namespace fusec
