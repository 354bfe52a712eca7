//===- KernelCache.h - Compiled kernels in memory and on disk --*- C++ -*-===//
//
// Kernel sources are compiled by the host compiler into shared libraries,
// content-addressed by a hash of the source, the compiler's identity, its
// flags and the CPU (flags include -march=native). Disk entries are written
// atomically (temp file + rename) and carry a trailer with their size and
// hash, so a truncated or corrupt entry is detected, reported and rebuilt;
// several processes compiling the same kernel at once all succeed.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_KERNELCACHE_H
#define FUSEC_RUNTIME_KERNELCACHE_H

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fusec {

/// A loaded library of kernels. Libraries stay loaded for the process's
/// lifetime (their OpenMP threads may outlive a dlclose).
class KernelLibrary {
public:
  using KernelFn = void (*)(const void *const *inputs, void *const *outputs);
  KernelLibrary(void *handle, std::string path)
      : handle(handle), libraryPath(std::move(path)) {}
  /// The kernel named `name`; throws fusec::Error if it is missing.
  KernelFn lookup(const std::string &name) const;
  const std::string &path() const { return libraryPath; }

private:
  void *handle;
  std::string libraryPath;
};

struct CacheStats {
  int memoryHits = 0, diskHits = 0, compiles = 0, corruptEntries = 0;
};

class KernelCache {
public:
  /// A cache in `directory`; "" means defaultDirectory().
  explicit KernelCache(std::string directory = "");

  /// $FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec, else ~/.cache/fusec.
  static std::string defaultDirectory();
  /// The process-wide cache for a directory ("" for the default), so every
  /// compiled model shares one in-memory table.
  static std::shared_ptr<KernelCache> forDirectory(const std::string &dir);

  /// The library built from `source` by the host compiler, compiling it on
  /// a miss. Throws fusec::Error with the compiler's log on failure.
  std::shared_ptr<KernelLibrary> loadHostLibrary(const std::string &source);

  /// The cubin NVRTC builds from `source` for `arch` (e.g. "sm_90a") with
  /// `options`, compiled on a miss. The key adds the arch, the NVRTC version
  /// and the options. Throws fusec::Error with NVRTC's log on failure.
  std::shared_ptr<const std::string>
  loadCubin(const std::string &source, const std::string &arch,
            const std::vector<std::string> &options);

  const std::string &directory() const { return cacheDirectory; }
  CacheStats stats() const;
  /// Where warnings (e.g. a corrupt entry) go; stderr by default.
  void setWarningHandler(std::function<void(const std::string &)> handler);

  /// The host compile command: $CXX (split on spaces) or `c++`, then flags.
  static std::vector<std::string> hostCompileCommand();

private:
  /// Content address of `source` built by `toolchain` (compiler identity,
  /// version, target, options).
  std::string keyFor(const std::string &toolchain,
                     const std::string &source) const;
  /// The entry's payload if it is valid; warns and counts it when corrupt.
  bool readEntry(const std::string &path, std::string &payload);
  [[noreturn]] void failCompile(const std::string &key, const std::string &ext,
                                const std::string &source,
                                const std::string &message);
  std::shared_ptr<KernelLibrary> loadOrCompile(const std::string &key,
                                               const std::string &source);
  std::shared_ptr<KernelLibrary> compileAndLoad(const std::string &key,
                                                const std::string &source,
                                                const std::string &entryPath);
  void warn(const std::string &message);

  std::string cacheDirectory;
  std::string compilerIdentity;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<KernelLibrary>> loaded;
  std::map<std::string, std::shared_ptr<const std::string>> cubins;
  CacheStats counters;
  std::function<void(const std::string &)> warningHandler;
};

} // namespace fusec

#endif
