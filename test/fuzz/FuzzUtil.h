//===- FuzzUtil.h - Shared helpers of the libFuzzer harnesses --*- C++ -*-===//
//
// Every loader takes a path, as a user's file does: each harness writes the
// input into a private directory on tmpfs and calls the public entry point
// on it. Only fusec::Error may escape a loader; anything else (another
// exception, a sanitizer report, a crash) is a finding.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_FUZZ_FUZZUTIL_H
#define FUSEC_TEST_FUZZ_FUZZUTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fusec::fuzz {

/// A directory of this process's own ($FUSEC_FUZZ_TMPDIR, else /dev/shm,
/// else /tmp), removed at exit.
inline const std::string &workDirectory() {
  static const std::string directory = [] {
    const char *base = std::getenv("FUSEC_FUZZ_TMPDIR");
    std::string root = base && *base                   ? base
                       : access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                       : "/tmp";
    std::string pattern = root + "/fusec-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("fusec-fuzz: mkdtemp");
      std::abort();
    }
    static std::string removeCommand;
    removeCommand = "rm -rf '" + pattern + "'";
    std::atexit([] {
      if (std::system(removeCommand.c_str()) != 0) {
      }
    });
    return pattern;
  }();
  return directory;
}

/// Writes the input to `name` inside workDirectory(); its path.
inline std::string writeInput(const uint8_t *data, size_t size,
                              const std::string &name) {
  std::string path = workDirectory() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(data),
            static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::perror(("fusec-fuzz: writing " + path).c_str());
    std::abort();
  }
  return path;
}

} // namespace fusec::fuzz

#endif
