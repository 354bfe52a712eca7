//===- KernelCacheTest.cpp - Hits, misses, corruption, concurrency, LRU ---===//

#include "TestUtil.h"

#include "runtime/cache/Hash.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/file.h>
#include <sys/stat.h>
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

void setAge(const std::string &path, int age);

/// Writes `payload` at `path` as a valid entry (payload, then the trailer
/// KernelCache writes) last used `age` seconds ago.
void writeEntry(const std::string &path, const std::string &payload, int age) {
  uint64_t size = payload.size(), hash = hashBytes(payload);
  std::string bytes = payload;
  bytes.append(reinterpret_cast<const char *>(&size), 8);
  bytes.append(reinterpret_cast<const char *>(&hash), 8);
  bytes.append("FUSECSO1", 8);
  std::ofstream(path, std::ios::binary) << bytes;
  setAge(path, age);
}

void setAge(const std::string &path, int age) {
  struct timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= age;
  times[1] = times[0];
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

bool exists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

void makeDir(const std::string &path) {
  REQUIRE((mkdir(path.c_str(), 0755) == 0 || errno == EEXIST));
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

TEST_CASE("cache sizes parse with decimal and binary suffixes", "[cache]") {
  CHECK(KernelCache::parseSize("0") == 0);
  CHECK(KernelCache::parseSize("1048576") == 1048576);
  CHECK(KernelCache::parseSize("500M") == 500000000ull);
  CHECK(KernelCache::parseSize("2G") == 2000000000ull);
  CHECK(KernelCache::parseSize("2GB") == 2000000000ull);
  CHECK(KernelCache::parseSize("1.5G") == 1500000000ull);
  CHECK(KernelCache::parseSize("100k") == 100000);
  CHECK(KernelCache::parseSize("100K") == 100000);
  CHECK(KernelCache::parseSize("64Ki") == 65536);
  CHECK(KernelCache::parseSize("64KiB") == 65536);
  CHECK(KernelCache::parseSize("1Gi") == 1073741824ull);
  CHECK(KernelCache::parseSize("3T") == 3000000000000ull);
  CHECK(KernelCache::parseSize(" 10 M ") == 10000000);
  CHECK(KernelCache::parseSize("12B") == 12);
  for (const char *bad :
       {"", "M", "-1", "5X", "1e3", "1.2.3", "2 G G", "99999999999T", "Gi5"})
    CHECK_THROWS_AS(KernelCache::parseSize(bad), Error);
  // The message is copied while the exception is alive.
  CHECK_THAT(
      []() -> std::string {
        try {
          KernelCache::parseSize("5X");
        } catch (const Error &error) {
          return error.what();
        }
        return "";
      }(),
      Contains("'5X' is not a cache size"));
  CHECK(KernelCache::formatSize(999) == "999 bytes");
  CHECK(KernelCache::formatSize(1500) == "1.5 kB");
  CHECK(KernelCache::formatSize(KernelCache::kDefaultMaxSize) == "1.0 GB");
  CHECK(KernelCache::formatSize(2500000000000ull) == "2.5 TB");
}

TEST_CASE("the size limit comes from FUSEC_CACHE_MAX_SIZE", "[cache]") {
  std::string dir = test::freshTempDir("limit");
  const char *saved = std::getenv("FUSEC_CACHE_MAX_SIZE");
  std::string savedValue = saved ? saved : "";
  setenv("FUSEC_CACHE_MAX_SIZE", "2Mi", 1);
  CHECK(KernelCache(dir).maxSize() == 2097152);
  setenv("FUSEC_CACHE_MAX_SIZE", "0", 1);
  CHECK(KernelCache(dir).maxSize() == 0);
  setenv("FUSEC_CACHE_MAX_SIZE", "lots", 1);
  KernelCache fallback(dir);
  CHECK(fallback.maxSize() == KernelCache::kDefaultMaxSize);
  CHECK_THAT(fallback.report(false).maxSizeProblem,
             Contains("$FUSEC_CACHE_MAX_SIZE: 'lots' is not a cache size"));
  unsetenv("FUSEC_CACHE_MAX_SIZE");
  CHECK(KernelCache(dir).maxSize() == KernelCache::kDefaultMaxSize);
  if (saved)
    setenv("FUSEC_CACHE_MAX_SIZE", savedValue.c_str(), 1);
}

TEST_CASE("eviction removes the least recently used entries first", "[cache]") {
  std::string dir = test::freshTempDir("lru");
  makeDir(dir + "/host");
  makeDir(dir + "/cuda");
  makeDir(dir + "/failed");
  std::string kb(1000 - 24, 'x');
  // Oldest first: failed source, a, cubin b, c, d.
  std::ofstream(dir + "/failed/f.cpp") << std::string(1000, 's');
  setAge(dir + "/failed/f.cpp", 500);
  writeEntry(dir + "/host/a.so", kb, 400);
  writeEntry(dir + "/cuda/b.cubin", kb, 300);
  writeEntry(dir + "/host/c.so", kb, 200);
  writeEntry(dir + "/host/d.so", kb, 100);

  KernelCache cache(dir);
  CacheReport before = cache.report(/*verify=*/true);
  CHECK(before.hostEntries == 3);
  CHECK(before.cudaEntries == 1);
  CHECK(before.failedSources == 1);
  CHECK(before.bytes == 5000);
  CHECK(before.invalidEntries == 0);

  // Under its limit, a cleanup only recounts.
  cache.setMaxSize(5000);
  CHECK(cache.cleanUp() == 0);
  CHECK(cache.report(false).counters.bytes == 5000);

  cache.setMaxSize(2500);
  CHECK(cache.cleanUp() == 3);
  CHECK_FALSE(exists(dir + "/failed/f.cpp"));
  CHECK_FALSE(exists(dir + "/host/a.so"));
  CHECK_FALSE(exists(dir + "/cuda/b.cubin"));
  CHECK(exists(dir + "/host/c.so"));
  CHECK(exists(dir + "/host/d.so"));
  CacheReport after = cache.report(false);
  CHECK(after.bytes == 2000);
  CHECK(after.counters.bytes == 2000);
  CHECK(after.counters.entries == 2);
  CHECK(after.counters.evictions == 3);

  // A limit of 0 is none; clear() empties the cache.
  cache.setMaxSize(0);
  CHECK(cache.cleanUp() == 0);
  cache.clear();
  CHECK(cache.report(false).bytes == 0);
  CHECK(cache.report(false).counters.entries == 0);
}

TEST_CASE("a disk hit renews an entry and a write past the limit evicts",
          "[cache]") {
  std::string dir = test::freshTempDir("lru-hit");
  compileInChildProcess(dir);
  std::string used = onlyEntry(dir);
  std::string big(400000 - 24, 'x');
  writeEntry(dir + "/host/older.so", big, 100);
  writeEntry(dir + "/host/newer.so", big, 50);
  setAge(used, 200);
  // Counters lost (or an older cache): the next write recounts.
  REQUIRE(std::remove((dir + "/stats").c_str()) == 0);

  KernelCache cache(dir);
  CHECK(callAddOne(*cache.loadHostLibrary(kSource), 1) == 2);
  CHECK(cache.stats().diskHits == 1);
  struct stat info;
  REQUIRE(stat(used.c_str(), &info) == 0);
  CHECK(info.st_mtime >= std::time(nullptr) - 10);

  // 800 KB of big entries and two small libraries against a 600 KB limit:
  // the write evicts to 90% of it, least recently used first.
  cache.setMaxSize(600000);
  const char *other = R"(
#include <stdint.h>
extern "C" void add_two(const void *const *in, void *const *out) {
  ((int32_t *)out[0])[0] = ((const int32_t *)in[0])[0] + 2;
}
)";
  cache.loadHostLibrary(other);
  CHECK(cache.stats().compiles == 1);
  CHECK(cache.stats().evictions == 1);
  CHECK_FALSE(exists(dir + "/host/older.so"));
  CHECK(exists(dir + "/host/newer.so"));
  CHECK(exists(used));
  CHECK(entriesIn(dir + "/host").size() == 3);
  CacheReport report = cache.report(/*verify=*/true);
  CHECK(report.counters.bytes == report.bytes);
  CHECK(report.counters.entries == 3);
  CHECK(report.counters.hits == 1);
  CHECK(report.counters.misses == 1); // the first was counted in the lost file
  CHECK(report.invalidEntries == 0);
}

TEST_CASE("an entry that validates but does not load is recompiled",
          "[cache]") {
  std::string dir = test::freshTempDir("not-elf");
  compileInChildProcess(dir);
  std::string entry = onlyEntry(dir);
  // Replaced as a writer would: a new file renamed over the entry.
  writeEntry(dir + "/garbage", "this is not a shared library", 0);
  REQUIRE(std::rename((dir + "/garbage").c_str(), entry.c_str()) == 0);
  KernelCache cache(dir);
  std::vector<std::string> warnings;
  cache.setWarningHandler(
      [&](const std::string &message) { warnings.push_back(message); });
  CHECK(callAddOne(*cache.loadHostLibrary(kSource), 5) == 6);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("cannot be loaded"));
  CHECK(cache.stats().corruptEntries == 1);
  CHECK(cache.stats().compiles == 1);
  CHECK(KernelCache(dir).report(true).invalidEntries == 0);
  CHECK(KernelCache(dir).report(false).counters.corruptEntries == 1);
}

TEST_CASE("work files of dead processes are removed and live ones kept",
          "[cache]") {
  std::string dir = test::freshTempDir("stale");
  std::string tmp = dir + "/tmp";
  makeDir(tmp);
  // A process that is gone: a child, tagged while it lived, then reaped.
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  std::string dead = KernelCache::ownerTag(child);
  kill(child, SIGKILL);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  std::string self = KernelCache::ownerTag();
  std::string ns = self.substr(self.rfind('-') + 1);
  std::string reused = std::to_string(getpid()) + "-1-" + ns;
  std::string foreign = "123-456-0000ffff";
  CHECK(dead != KernelCache::ownerTag(child));

  std::string key = "0123456789abcdef";
  // Stale: a dead owner's work directory and private link, a reused PID's
  // source, an old file of a foreign owner, an unheld lock file.
  makeDir(tmp + "/" + key + "." + dead + ".0");
  std::ofstream(tmp + "/" + key + "." + dead + ".0/kernels.cpp") << "x";
  std::ofstream(tmp + "/" + key + "." + dead + ".1.so") << "x";
  std::ofstream(tmp + "/" + key + "." + reused + ".2.cpp") << "x";
  std::ofstream(tmp + "/" + key + "." + foreign + ".3.so") << "x";
  setAge(tmp + "/" + key + "." + foreign + ".3.so", 2 * 24 * 3600);
  std::ofstream(tmp + "/" + key + ".lock") << "";
  // Live: this process's work directory, a recent foreign file, a lock
  // file someone holds.
  makeDir(tmp + "/" + key + "." + self + ".4");
  std::ofstream(tmp + "/" + key + "." + self + ".4/kernels.cpp") << "x";
  std::ofstream(tmp + "/" + key + "." + foreign + ".5.so") << "x";
  std::string heldLock = tmp + "/fedcba9876543210.lock";
  int lockFd = open(heldLock.c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(lockFd >= 0);
  REQUIRE(flock(lockFd, LOCK_EX) == 0);

  KernelCache cache(dir);
  CacheReport report = cache.report(false);
  CHECK(report.staleTemps == 5);
  CHECK(report.liveTemps == 3);
  CHECK(cache.removeStaleTemps() == 5);
  std::vector<std::string> left = entriesIn(tmp);
  std::sort(left.begin(), left.end());
  std::vector<std::string> kept = {tmp + "/" + key + "." + foreign + ".5.so",
                                   tmp + "/" + key + "." + self + ".4",
                                   heldLock};
  std::sort(kept.begin(), kept.end()); // the order depends on this pid
  CHECK(left == kept);
  CHECK(exists(tmp + "/" + key + "." + self + ".4/kernels.cpp"));
  close(lockFd);
  CHECK(cache.report(false).staleTemps == 1);
}

TEST_CASE("a compile killed midway leaves nothing once the next miss ran",
          "[cache]") {
  std::string dir = test::freshTempDir("killed");
  // A child that compiles and is killed while the compiler runs.
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      KernelCache(dir).loadHostLibrary(kSource);
    } catch (...) {
    }
    _exit(0);
  }
  // Wait for its work directory to appear (the compiler is then running).
  bool started = false;
  for (int i = 0; i < 2000 && !started; ++i) {
    for (const std::string &name : entriesIn(dir + "/tmp"))
      started |= name.find(".lock") == std::string::npos;
    if (!started)
      usleep(5000);
  }
  kill(child, SIGKILL);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  if (!started || !entriesIn(dir + "/host").empty()) {
    // The compile finished first on this machine: nothing to look at.
    CHECK(entriesIn(dir + "/host").size() <= 1);
    return;
  }
  // Its compiler's process group is killed with it: give the watcher a
  // moment, then the next miss sweeps what was left.
  usleep(200000);
  KernelCache cache(dir);
  CHECK(cache.report(false).staleTemps >= 1);
  CHECK(callAddOne(*cache.loadHostLibrary(kSource), 1) == 2);
  CHECK(entriesIn(dir + "/tmp").empty());
  CHECK(cache.report(true).invalidEntries == 0);
}
