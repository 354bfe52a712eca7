//===- KernelCacheTest.cpp - Hits, misses, corruption, concurrency -------===//

#include "TestUtil.h"

#include "runtime/CudaApi.h"
#include "runtime/KernelCache.h"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace fusec;
using Catch::Matchers::Contains;

namespace {

const char *kSource = R"(
#include <stdint.h>
extern "C" void add_one(const void *const *in, void *const *out) {
  ((int32_t *)out[0])[0] = ((const int32_t *)in[0])[0] + 1;
}
)";

int callAddOne(const KernelLibrary &library, int32_t value) {
  int32_t result = 0;
  const void *inputs[] = {&value};
  void *outputs[] = {&result};
  library.lookup("add_one")(inputs, outputs);
  return result;
}

std::vector<std::string> entriesIn(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *handle = opendir(dir.c_str())) {
    while (dirent *entry = readdir(handle))
      if (entry->d_name[0] != '.')
        names.push_back(dir + "/" + entry->d_name);
    closedir(handle);
  }
  return names;
}

std::string onlyEntry(const std::string &cacheDir) {
  std::vector<std::string> entries = entriesIn(cacheDir + "/host");
  REQUIRE(entries.size() == 1);
  return entries[0];
}

/// Fills the cache from another process, so this one never maps the entry
/// the test then damages (truncating a mapped file would fault this process).
void compileInChildProcess(const std::string &dir) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      KernelCache(dir).loadHostLibrary(kSource);
      _exit(0);
    } catch (...) {
      _exit(1);
    }
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

} // namespace

TEST_CASE("a miss compiles, a repeat hits memory, a new cache hits disk",
          "[cache]") {
  std::string dir = test::freshTempDir("cache");
  KernelCache cache(dir);
  CHECK(callAddOne(*cache.loadHostLibrary(kSource), 41) == 42);
  CHECK(cache.stats().compiles == 1);
  CHECK(callAddOne(*cache.loadHostLibrary(kSource), 1) == 2);
  CHECK(cache.stats().memoryHits == 1);
  CHECK(cache.stats().compiles == 1);

  KernelCache second(dir);
  CHECK(callAddOne(*second.loadHostLibrary(kSource), 9) == 10);
  CHECK(second.stats().diskHits == 1);
  CHECK(second.stats().compiles == 0);
  // No temp files are left behind.
  CHECK(entriesIn(dir + "/tmp").empty());
}

TEST_CASE("a corrupt entry is reported and recompiled", "[cache]") {
  std::string dir = test::freshTempDir("corrupt");
  compileInChildProcess(dir);
  std::string entry = onlyEntry(dir);
  std::string bytes;
  {
    std::ifstream in(entry, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string damaged;
  SECTION("truncated") { damaged = bytes.substr(0, bytes.size() / 2); }
  SECTION("a flipped byte") {
    damaged = bytes;
    damaged[damaged.size() / 3] ^= 0x5a;
  }
  SECTION("empty") { damaged = ""; }
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << damaged;

  KernelCache cache(dir);
  std::vector<std::string> warnings;
  cache.setWarningHandler(
      [&](const std::string &message) { warnings.push_back(message); });
  CHECK(callAddOne(*cache.loadHostLibrary(kSource), 1) == 2);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("is corrupt"));
  CHECK_THAT(warnings[0], Contains(entry));
  CHECK(cache.stats().corruptEntries == 1);
  CHECK(cache.stats().compiles == 1);
  // The rebuilt entry is trusted again by the next process.
  KernelCache after(dir);
  after.loadHostLibrary(kSource);
  CHECK(after.stats().diskHits == 1);
}

TEST_CASE("a failed compile reports the log and keeps the source", "[cache]") {
  std::string dir = test::freshTempDir("failed");
  KernelCache cache(dir);
  std::string message;
  try {
    cache.loadHostLibrary("this is not C++;\n");
  } catch (const Error &error) {
    message = error.what();
  }
  CHECK_THAT(message, Contains("the host compiler failed"));
  CHECK_THAT(message, Contains("error"));
  size_t at = message.find("saved at ");
  REQUIRE(at != std::string::npos);
  size_t end = message.find('\n', at);
  std::string saved = message.substr(
      at + 9, end == std::string::npos ? std::string::npos : end - at - 9);
  std::ifstream source(saved);
  CHECK(source.good());
}

TEST_CASE("processes compiling the same kernel at once all succeed",
          "[cache]") {
  std::string dir = test::freshTempDir("concurrent");
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Each child is a separate process with its own cache object.
      int status = 1;
      try {
        KernelCache cache(dir);
        status =
            callAddOne(*cache.loadHostLibrary(kSource), i) == i + 1 ? 0 : 2;
      } catch (...) {
        status = 3;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  onlyEntry(dir);
  KernelCache after(dir);
  after.loadHostLibrary(kSource);
  CHECK(after.stats().diskHits == 1);
  CHECK(after.stats().corruptEntries == 0);
}

TEST_CASE("a failed NVRTC compile reports the log and keeps the source",
          "[cache][nvrtc]") {
  FUSEC_SKIP_IF(cuda::nvrtcUnavailableReason());
  std::string dir = test::freshTempDir("nvrtc-failed");
  KernelCache cache(dir);
  std::string message;
  try {
    cache.loadCubin("extern \"C\" __global__ void k() { undeclared(); }\n",
                    "sm_90a", {});
  } catch (const Error &error) {
    message = error.what();
  }
  CHECK_THAT(message, Contains("NVRTC failed"));
  CHECK_THAT(message, Contains("undeclared"));
  size_t at = message.find("saved at ");
  REQUIRE(at != std::string::npos);
  std::ifstream source(message.substr(at + 9));
  CHECK(source.good());
}

TEST_CASE("cubins are cached by source, arch and options", "[cache][nvrtc]") {
  FUSEC_SKIP_IF(cuda::nvrtcUnavailableReason());
  std::string dir = test::freshTempDir("cubins");
  const char *source = "extern \"C\" __global__ void k(float *x) { x[0] = "
                       "sinf(x[0]); }\n";
  KernelCache cache(dir);
  auto precise = cache.loadCubin(source, "sm_90a", {});
  auto again = cache.loadCubin(source, "sm_90a", {});
  auto older = cache.loadCubin(source, "sm_80", {});
  auto fast = cache.loadCubin(source, "sm_90a", {"--use_fast_math"});
  CHECK(precise == again);
  CHECK(cache.stats().compiles == 3);
  CHECK(*precise != *older);
  KernelCache second(dir);
  CHECK(*second.loadCubin(source, "sm_80", {}) == *older);
  CHECK(second.stats().diskHits == 1);
  CHECK(second.stats().compiles == 0);
}
