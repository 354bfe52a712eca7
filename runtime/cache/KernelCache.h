//===- KernelCache.h - Compiled kernels in memory and on disk --*- C++ -*-===//
//
// Kernel sources are compiled by the host compiler into shared libraries
// (CUDA sources by NVRTC into cubins), content-addressed by a hash of the
// source, the compiler's identity, its flags and the CPU (flags include
// -march=native). The on-disk cache is shared by every process that names
// the same directory:
//
//   host/<key>.so        a library: ELF bytes, then a 24-byte trailer (payload
//   cuda/<key>.cubin     size, FNV-1a hash, magic "FUSECSO1")
//   failed/<key>.cpp|.cu the source of a failed compile, kept for the user
//   tmp/<key>.<owner>.<n>[.ext]  work files and directories of one compile;
//                        <owner> is <pid>-<start time>-<namespace tag>
//   tmp/<key>.lock       held (flock) by the process compiling <key>
//   stats                counters: approximate size and entry count, hits,
//                        misses, corrupt entries, evictions (flock'ed)
//   cleanup.lock         held by the process that evicts or sweeps
//
// Rules: an entry is published by renaming a complete, fsync'ed file over
// its name, never written in place; a reader validates the trailer of the
// inode it opened and maps that very inode (through a private hard link),
// so a truncated, corrupt or concurrently replaced entry is detected,
// reported and rebuilt, never loaded. Eviction only unlinks, which is safe
// for readers holding the file open or mapped; a reader that finds its
// entry gone compiles it again. Work files of processes that are no longer
// alive are removed; a live process's files never are.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CACHE_KERNELCACHE_H
#define FUSEC_RUNTIME_CACHE_KERNELCACHE_H

#include <cstdint>
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
  /// A kernel of a symbolic program also takes the dims' sizes.
  using SizedKernelFn = void (*)(const void *const *inputs,
                                 void *const *outputs, const int64_t *sizes);
  KernelLibrary(void *handle, std::string path,
                std::shared_ptr<const std::string> code)
      : handle(handle), libraryPath(std::move(path)),
        libraryCode(std::move(code)) {}
  /// The kernel named `name`; throws fusec::Error if it is missing.
  KernelFn lookup(const std::string &name) const;
  const std::string &path() const { return libraryPath; }
  /// The shared object's bytes (what a package stores).
  const std::shared_ptr<const std::string> &code() const { return libraryCode; }

private:
  void *handle;
  std::string libraryPath;
  std::shared_ptr<const std::string> libraryCode;
};

/// Loads a shared object held in memory (through an anonymous file, never
/// a name others could replace); `path` names it in messages. Throws
/// fusec::Error when the bytes do not load.
std::shared_ptr<KernelLibrary>
loadLibraryFromMemory(std::shared_ptr<const std::string> code,
                      const std::string &path);

/// This process's lookups in one KernelCache object.
struct CacheStats {
  int memoryHits = 0, diskHits = 0, compiles = 0, corruptEntries = 0;
  /// Entries this process removed to keep the cache under its size limit.
  int evictions = 0;
};

/// The counters every process sharing a cache directory keeps in its
/// `stats` file.
struct CacheCounters {
  /// The size and number of entries, kept approximately between scans.
  uint64_t bytes = 0, entries = 0;
  uint64_t hits = 0, misses = 0, corruptEntries = 0, evictions = 0;
};

/// What `fusec --cache-stats` prints: a scan of the directory.
struct CacheReport {
  std::string directory;
  uint64_t hostEntries = 0, cudaEntries = 0, failedSources = 0;
  /// Bytes of every entry and failed source (file sizes).
  uint64_t bytes = 0;
  /// The size limit in bytes (0: none), and a warning if
  /// $FUSEC_CACHE_MAX_SIZE could not be read.
  uint64_t maxSize = 0;
  std::string maxSizeProblem;
  /// Entries whose trailer does not match their bytes (with verify).
  uint64_t invalidEntries = 0;
  /// Work files and directories in tmp/: of live compiles, and left by
  /// processes that are gone (removed by the next cleanup).
  uint64_t liveTemps = 0, staleTemps = 0;
  CacheCounters counters;
};

class KernelCache {
public:
  /// A cache in `directory`; "" means defaultDirectory(). Its size limit is
  /// $FUSEC_CACHE_MAX_SIZE, else kDefaultMaxSize.
  explicit KernelCache(std::string directory = "");

  /// 1 GB (10^9 bytes): a host library is 16-100 KB, so more than ten
  /// thousand compiled programs.
  static constexpr uint64_t kDefaultMaxSize = 1000000000ull;
  /// Work files whose owner cannot be checked (another host or PID
  /// namespace, an unknown name) are stale after this many seconds.
  static constexpr int64_t kForeignTempSeconds = 24 * 3600;

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

  /// The size limit in bytes; 0 means none.
  uint64_t maxSize() const { return sizeLimit; }
  void setMaxSize(uint64_t bytes) { sizeLimit = bytes; }

  /// Scans the directory: entries, sizes, work files and the shared
  /// counters; with `verify`, reads every entry and checks its trailer.
  CacheReport report(bool verify) const;
  /// Removes stale work files, then least recently used entries (oldest
  /// modification time first; a disk hit renews it) until the cache is at
  /// most `targetBytes` (the size limit when omitted), and recounts the
  /// size. Returns the number of entries removed. A target of 0 evicts
  /// nothing (no limit); clear() empties the cache.
  uint64_t cleanUp();
  uint64_t cleanUp(uint64_t targetBytes);
  /// Removes every entry and failed source and the stale work files; a
  /// live compile's files stay. The hit/miss counters are kept.
  void clear();
  /// Removes work files whose owner is gone; returns how many.
  uint64_t removeStaleTemps() const;

  /// "500M", "2G", "1.5GB", "64Ki", "1048576": decimal suffixes k/K, M, G, T
  /// and binary Ki, Mi, Gi, Ti, an optional trailing B; no suffix means
  /// bytes; 0 means no limit. Throws fusec::Error on anything else.
  static uint64_t parseSize(const std::string &text);
  /// "1.5 MB" (decimal units).
  static std::string formatSize(uint64_t bytes);
  /// The owner tag this process puts in its work files' names; for
  /// another live process of this host with `pid`, that process's tag.
  static std::string ownerTag();
  static std::string ownerTag(int pid);

  /// The host compile command: $CXX (split on spaces) or `c++`, then flags.
  static std::vector<std::string> hostCompileCommand();
  /// The flags of that command that decide what kernel code computes and
  /// how fast (not how it is linked): kernel repros build with them too.
  static const std::vector<std::string> &hostKernelCodeFlags();

private:
  /// Content address of `source` built by `toolchain` (compiler identity,
  /// version, target, options).
  std::string keyFor(const std::string &toolchain,
                     const std::string &source) const;
  /// The entry's payload if it is valid; warns and counts it when corrupt.
  /// With `fd`, the entry is kept open there on success (-1 otherwise).
  bool readEntry(const std::string &path, std::string &payload,
                 int *fd = nullptr);
  [[noreturn]] void failCompile(const std::string &key, const std::string &ext,
                                const std::string &source,
                                const std::string &message);
  std::shared_ptr<KernelLibrary> loadOrCompile(const std::string &key,
                                               const std::string &source);
  /// The entry at `entryPath` loaded, or null when it is missing, corrupt
  /// or disappears while being opened.
  std::shared_ptr<KernelLibrary> loadEntry(const std::string &entryPath);
  std::shared_ptr<KernelLibrary> compileAndLoad(const std::string &key,
                                                const std::string &source,
                                                const std::string &entryPath);
  /// A fresh work-file stem in tmp/ for `key`, tagged with this process.
  std::string workStem(const std::string &key) const;
  /// Cleans up (see cleanUp) and, when the cache is over `trigger` bytes
  /// (0: never), evicts down to `target`. Without `wait`, returns 0 at once
  /// when another process is cleaning up.
  uint64_t cleanUpTo(uint64_t trigger, uint64_t target, bool wait);
  /// Accounts for a published entry of `bytes` (replacing `oldBytes`, or a
  /// new one when `replaced` is false) and evicts when over the limit.
  void recordWrite(uint64_t bytes, bool replaced, uint64_t oldBytes);
  void recordHit();
  void recordCorrupt();
  void warn(const std::string &message);

  std::string cacheDirectory;
  std::string compilerIdentity;
  uint64_t sizeLimit = kDefaultMaxSize;
  std::string sizeLimitProblem;
  bool sweptTemps = false;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<KernelLibrary>> loaded;
  std::map<std::string, std::shared_ptr<const std::string>> cubins;
  CacheStats counters;
  std::function<void(const std::string &)> warningHandler;
};

} // namespace fusec

#endif
