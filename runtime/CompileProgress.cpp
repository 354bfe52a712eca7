#include "runtime/CompileProgress.h"

#include <cstdio>
#include <unistd.h>

namespace fusec {

/// Compiles shorter than this print nothing.
constexpr std::chrono::milliseconds kQuietCompile(1000);

CompileProgress::CompileProgress(std::string what, size_t groups)
    : CompileProgress(std::move(what), groups, stderr, isatty(2) == 1,
                      kQuietCompile) {}

CompileProgress::CompileProgress(std::string what, size_t groups,
                                 std::FILE *stream, bool toTerminal,
                                 std::chrono::milliseconds quietFor)
    : what(std::move(what)), groups(groups), stream(stream),
      toTerminal(toTerminal), quietFor(quietFor),
      start(std::chrono::steady_clock::now()) {}

CompileProgress::~CompileProgress() {
  if (printed)
    std::fputc('\n', stream);
}

void CompileProgress::groupDone() {
  std::lock_guard<std::mutex> lock(mutex);
  ++done;
  if (!toTerminal || std::chrono::steady_clock::now() - start < quietFor)
    return;
  // \r rewrites the line in place.
  std::fprintf(stream, "\rfusec: compiling %s in %zu group%s: %zu/%zu",
               what.c_str(), groups, groups == 1 ? "" : "s", done, groups);
  std::fflush(stream);
  printed = true;
}

} // namespace fusec
