//===- KernelCache.cpp - Compiled kernels in memory and on disk -----------===//
//
// The facade: keys, the in-memory tables, lookups and failed compiles. The
// parts live beside it: CacheStore (entry format, work files, counters,
// eviction), FileLock, HostCompiler, HostLibrary (dlopen and host
// compiles) and Nvrtc (cubins).
//
//===----------------------------------------------------------------------===//

#include "runtime/cache/KernelCache.h"

#include "runtime/cache/CacheFiles.h"
#include "runtime/cache/CacheStore.h"
#include "runtime/cache/FileLock.h"
#include "runtime/cache/Hash.h"
#include "runtime/cache/HostCompiler.h"
#include "runtime/core/Error.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

namespace fusec {

using namespace cache;

std::string KernelCache::defaultDirectory() {
  if (const char *dir = std::getenv("FUSEC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/fusec";
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fusec";
}

std::shared_ptr<KernelCache> KernelCache::forDirectory(const std::string &dir) {
  static std::mutex registryMutex;
  static std::map<std::string, std::shared_ptr<KernelCache>> registry;
  std::string resolved = dir.empty() ? defaultDirectory() : dir;
  std::lock_guard<std::mutex> lock(registryMutex);
  auto &cache = registry[resolved];
  if (!cache)
    cache = std::make_shared<KernelCache>(resolved);
  return cache;
}

uint64_t KernelCache::parseSize(const std::string &text) {
  auto invalid = [&](const std::string &why) {
    return Error("fusec: '" + text + "' is not a cache size (" + why +
                 "; e.g. 500M, 2G, 64Ki or 0 for no limit)");
  };
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  if (begin == std::string::npos)
    throw invalid("it is empty");
  std::string trimmed = text.substr(begin, end - begin + 1);
  size_t digits = trimmed.find_first_not_of("0123456789.");
  std::string number = trimmed.substr(0, digits);
  std::string suffix =
      digits == std::string::npos ? std::string() : trimmed.substr(digits);
  if (number.empty() || number == "." ||
      std::count(number.begin(), number.end(), '.') > 1)
    throw invalid("it does not start with a number");
  std::string unit;
  for (char c : suffix)
    if (c != ' ')
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'b')
    unit.pop_back();
  else if (unit == "b")
    unit.clear();
  static const std::map<std::string, double> kUnits = {
      {"", 1},           {"k", 1e3},           {"m", 1e6},
      {"g", 1e9},        {"t", 1e12},          {"ki", 1024.0},
      {"mi", 1048576.0}, {"gi", 1073741824.0}, {"ti", 1099511627776.0}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end())
    throw invalid("unknown unit '" + suffix + "'");
  double bytes = std::strtod(number.c_str(), nullptr) * it->second;
  if (!(bytes < 9.2e18))
    throw invalid("it is too large");
  return static_cast<uint64_t>(std::llround(bytes));
}

std::string KernelCache::formatSize(uint64_t bytes) {
  if (bytes < 1000)
    return std::to_string(bytes) + " bytes";
  static const char *const kUnits[] = {"kB", "MB", "GB", "TB", "PB"};
  double value = bytes / 1000.0;
  int unit = 0;
  while (value >= 999.95 && unit < 4) {
    value /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string KernelCache::ownerTag(int pid) {
  return std::to_string(pid) + "-" + startTimeOf(pid) + "-" + namespaceTag();
}

std::string KernelCache::ownerTag() { return ownerTag(getpid()); }

KernelCache::KernelCache(std::string directory)
    : cacheDirectory(directory.empty() ? defaultDirectory()
                                       : std::move(directory)) {
  // The compiler's identity: the command, and the resolved binary's size and
  // modification time (cheap, and changes when the compiler is upgraded).
  std::vector<std::string> command = hostCompileCommand();
  std::string identity;
  for (const std::string &word : command)
    identity += word + " ";
  std::string binary = resolveProgram(command.front());
  struct stat info;
  if (stat(binary.c_str(), &info) == 0)
    identity += binary + ":" + std::to_string(info.st_size) + ":" +
                std::to_string(info.st_mtime);
  compilerIdentity = identity + "\n" + cpuFlags();

  if (const char *limit = std::getenv("FUSEC_CACHE_MAX_SIZE");
      limit && *limit) {
    try {
      sizeLimit = parseSize(limit);
    } catch (const Error &error) {
      std::string why = error.what();
      if (why.rfind("fusec: ", 0) == 0)
        why = why.substr(7);
      sizeLimitProblem = "$FUSEC_CACHE_MAX_SIZE: " + why +
                         "; using the default, " + formatSize(kDefaultMaxSize);
    }
  }
}

void KernelCache::setWarningHandler(
    std::function<void(const std::string &)> handler) {
  std::lock_guard<std::mutex> lock(mutex);
  warningHandler = std::move(handler);
}

void KernelCache::warn(const std::string &message) {
  if (warningHandler)
    warningHandler(message);
  else
    std::cerr << message << "\n";
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

std::string KernelCache::keyFor(const std::string &toolchain,
                                const std::string &source) const {
  uint64_t hash = hashBytes(kCacheFormat);
  hash = hashBytes(toolchain, hash);
  hash = hashBytes(source, hash);
  return toHex(hash);
}

std::string KernelCache::workStem(const std::string &key) const {
  static std::atomic<unsigned> counter{0};
  return cacheDirectory + "/tmp/" + key + "." + ownerTag() + "." +
         std::to_string(counter++);
}

//===----------------------------------------------------------------------===//
// Lookups
//===----------------------------------------------------------------------===//

std::shared_ptr<KernelLibrary>
KernelCache::loadHostLibrary(const std::string &source) {
  std::string key = keyFor(compilerIdentity, source);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) {
    ++counters.memoryHits;
    traceHit("memory", key);
    return it->second;
  }
  std::shared_ptr<KernelLibrary> library = loadOrCompile(key, source);
  loaded[key] = library;
  return library;
}

std::shared_ptr<KernelLibrary>
KernelCache::loadOrCompile(const std::string &key, const std::string &source) {
  std::string entryPath = cacheDirectory + "/host/" + key + ".so";
  makeDirectories(cacheDirectory + "/tmp");
  struct stat before;
  bool existed = stat(entryPath.c_str(), &before) == 0;
  if (auto library = loadEntry(entryPath)) {
    ++counters.diskHits;
    traceHit("disk", key);
    return library;
  }
  // A process's first miss removes what dead processes left in tmp/.
  if (!sweptTemps) {
    sweptTemps = true;
    removeStaleTemps();
  }
  // Another process compiling this key may publish it meanwhile; a corrupt
  // entry already reported is not read again.
  CompileLock compileLock(cacheDirectory + "/tmp/" + key + ".lock");
  struct stat after;
  if (stat(entryPath.c_str(), &after) == 0 &&
      (!existed || after.st_ino != before.st_ino ||
       after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
       after.st_mtim.tv_nsec != before.st_mtim.tv_nsec))
    if (auto library = loadEntry(entryPath)) {
      ++counters.diskHits;
      traceHit("disk", key);
      return library;
    }
  return compileAndLoad(key, source, entryPath);
}

void KernelCache::failCompile(const std::string &key, const std::string &ext,
                              const std::string &source,
                              const std::string &message) {
  makeDirectories(cacheDirectory + "/failed");
  makeDirectories(cacheDirectory + "/tmp");
  std::string saved = cacheDirectory + "/failed/" + key + ext;
  std::string temp = workStem(key) + ext;
  if (!writeFile(temp, source, /*durable=*/false) ||
      std::rename(temp.c_str(), saved.c_str()) != 0) {
    std::remove(temp.c_str());
    throw Error(message + "\n(the kernel source could not be saved at " +
                saved + ")");
  }
  throw Error(message + "\nthe kernel source is saved at " + saved);
}

} // namespace fusec
