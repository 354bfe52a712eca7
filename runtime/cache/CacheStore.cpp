//===- CacheStore.cpp - Entries, work files and counters ------------------===//

#include "runtime/cache/CacheStore.h"

#include "runtime/cache/CacheFiles.h"
#include "runtime/cache/FileLock.h"
#include "runtime/cache/Hash.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Trace.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fusec {

namespace cache {

namespace {

constexpr char kTrailerMagic[8] = {'F', 'U', 'S', 'E', 'C', 'S', 'O', '1'};
/// The `stats` file: magic, six counters, a hash of the counters.
constexpr char kStatsMagic[8] = {'F', 'U', 'S', 'E', 'C', 'S', 'T', '1'};
constexpr size_t kStatsCounters = 6;
constexpr size_t kStatsBytes = 8 + 8 * kStatsCounters + 8;
/// The counters' size when it must be recounted (they were lost).
constexpr uint64_t kUnknownBytes = ~0ull;

struct EntryFile {
  std::string path;
  uint64_t size;
  struct timespec modified;
};

/// Every entry and failed source, with its size and modification time.
std::vector<EntryFile> listEntries(const std::string &dir) {
  std::vector<EntryFile> files;
  for (const char *sub : {"/host", "/cuda", "/failed"}) {
    std::string folder = dir + sub;
    for (const std::string &name : listDirectory(folder)) {
      std::string path = folder + "/" + name;
      struct stat info;
      if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        continue;
      files.push_back(
          {path, static_cast<uint64_t>(info.st_size), info.st_mtim});
    }
  }
  return files;
}

//===----------------------------------------------------------------------===//
// The shared counters
//===----------------------------------------------------------------------===//

std::string encodeCounters(const CacheCounters &c) {
  uint64_t values[kStatsCounters] = {c.bytes,  c.entries,        c.hits,
                                     c.misses, c.corruptEntries, c.evictions};
  std::string bytes(kStatsBytes, '\0');
  std::memcpy(bytes.data(), kStatsMagic, 8);
  std::memcpy(bytes.data() + 8, values, sizeof values);
  uint64_t hash = hashBytes(std::string_view(bytes.data(), 8 + sizeof values));
  std::memcpy(bytes.data() + 8 + sizeof values, &hash, 8);
  return bytes;
}

bool decodeCounters(const std::string &bytes, CacheCounters &c) {
  if (bytes.size() != kStatsBytes ||
      std::memcmp(bytes.data(), kStatsMagic, 8) != 0)
    return false;
  uint64_t values[kStatsCounters], hash;
  std::memcpy(values, bytes.data() + 8, sizeof values);
  std::memcpy(&hash, bytes.data() + 8 + sizeof values, 8);
  if (hashBytes(std::string_view(bytes.data(), 8 + sizeof values)) != hash)
    return false;
  c = {values[0], values[1], values[2], values[3], values[4], values[5]};
  return true;
}

/// Runs `update(counters, known)` on the directory's counters under the
/// stats file's lock and writes them back; `known` is false when the file
/// was missing or damaged (the counters then start from zero). False when
/// the file cannot be used at all (the cache still works, uncounted).
bool updateCounters(const std::string &dir,
                    const std::function<void(CacheCounters &, bool)> &update) {
  int fd = open((dir + "/stats").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  while (flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      close(fd);
      return false;
    }
  std::string bytes;
  CacheCounters counters;
  bool known = readAll(fd, bytes) && decodeCounters(bytes, counters);
  if (!known)
    counters = CacheCounters();
  update(counters, known);
  std::string encoded = encodeCounters(counters);
  bool ok = pwrite(fd, encoded.data(), encoded.size(), 0) ==
            static_cast<ssize_t>(encoded.size());
  close(fd);
  return ok;
}

CacheCounters readCounters(const std::string &dir) {
  CacheCounters counters;
  std::string bytes = readFile(dir + "/stats");
  if (!decodeCounters(bytes, counters))
    counters = CacheCounters();
  return counters;
}

} // namespace

void traceHit(const char *where, const std::string &key) {
  if (!trace::enabled())
    return;
  trace::Scope *caller = trace::Scope::innermost();
  trace::instant(std::string("kernel cache hit (") + where + ")", "cache",
                 {{"key", key}, {"for", caller ? caller->name() : ""}});
  trace::annotate({"cache", std::string(where) + " hit"});
}

const std::string &namespaceTag() {
  static const std::string tag = [] {
    std::string id = readFile("/proc/sys/kernel/random/boot_id");
    char link[256];
    ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link);
    if (n > 0)
      id.append(link, n);
    return toHex(hashBytes(id)).substr(0, 8);
  }();
  return tag;
}

std::string startTimeOf(long pid) {
  std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos)
    return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  // Field 22 of the file; the first after the command is field 3.
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field))
      return "";
  return field;
}

bool isStaleTemp(const std::string &name, time_t modified) {
  auto foreignRule = [&] {
    return std::time(nullptr) - modified > KernelCache::kForeignTempSeconds;
  };
  // <key>.<pid>-<start>-<namespace>.<n>[.<ext>]
  size_t first = name.find('.');
  size_t second =
      first == std::string::npos ? first : name.find('.', first + 1);
  if (second == std::string::npos)
    return foreignRule();
  std::string owner = name.substr(first + 1, second - first - 1);
  size_t dash1 = owner.find('-');
  size_t dash2 =
      dash1 == std::string::npos ? dash1 : owner.find('-', dash1 + 1);
  if (dash2 == std::string::npos)
    return foreignRule();
  std::string pidText = owner.substr(0, dash1);
  std::string start = owner.substr(dash1 + 1, dash2 - dash1 - 1);
  if (owner.substr(dash2 + 1) != namespaceTag() || pidText.empty() ||
      pidText.find_first_not_of("0123456789") != std::string::npos ||
      pidText.size() > 9)
    return foreignRule();
  return startTimeOf(std::stol(pidText)) != start;
}

std::string trailerFor(const std::string &payload) {
  uint64_t size = payload.size(), hash = hashBytes(payload);
  std::string trailer(kTrailerBytes, '\0');
  std::memcpy(trailer.data(), &size, 8);
  std::memcpy(trailer.data() + 8, &hash, 8);
  std::memcpy(trailer.data() + 16, kTrailerMagic, 8);
  return trailer;
}

std::string validateEntry(const std::string &bytes) {
  if (bytes.size() < kTrailerBytes)
    return "it is truncated";
  const char *trailer = bytes.data() + bytes.size() - kTrailerBytes;
  if (std::memcmp(trailer + 16, kTrailerMagic, 8) != 0)
    return "its trailer is missing";
  uint64_t size, hash;
  std::memcpy(&size, trailer, 8);
  std::memcpy(&hash, trailer + 8, 8);
  if (size != bytes.size() - kTrailerBytes)
    return "its size does not match its trailer";
  if (hashBytes(std::string_view(bytes.data(), size)) != hash)
    return "its content hash does not match";
  return "";
}

} // namespace cache

using namespace cache;

//===----------------------------------------------------------------------===//
// Counters, eviction and cleanup
//===----------------------------------------------------------------------===//

void KernelCache::recordHit() {
  updateCounters(cacheDirectory, [](CacheCounters &counters, bool known) {
    ++counters.hits;
    if (!known)
      counters.bytes = kUnknownBytes; // the next write recounts
  });
}

void KernelCache::recordCorrupt() {
  ++counters.corruptEntries;
  updateCounters(cacheDirectory, [](CacheCounters &counters, bool known) {
    ++counters.corruptEntries;
    if (!known)
      counters.bytes = kUnknownBytes;
  });
}

void KernelCache::recordWrite(uint64_t bytes, bool replaced,
                              uint64_t oldBytes) {
  if (!sizeLimitProblem.empty()) {
    warn("fusec: warning: " + sizeLimitProblem);
    sizeLimitProblem.clear();
  }
  bool unknown = false, overLimit = false;
  updateCounters(cacheDirectory, [&](CacheCounters &c, bool known) {
    unknown = !known || c.bytes == kUnknownBytes;
    ++c.misses;
    if (unknown) {
      c.bytes = kUnknownBytes;
    } else if (replaced) {
      c.bytes = c.bytes + bytes > oldBytes ? c.bytes + bytes - oldBytes : 0;
    } else {
      c.bytes += bytes;
      ++c.entries;
    }
    overLimit = sizeLimit != 0 && c.bytes > sizeLimit;
  });
  // A scan when the counters were lost (a new or an older cache: it also
  // recounts them) or when the cache may be over its limit; evicting to
  // 90% of the limit leaves room for the next writes before another scan.
  // A process already cleaning up does it for everyone.
  if (unknown || overLimit)
    counters.evictions += static_cast<int>(
        cleanUpTo(sizeLimit, sizeLimit - sizeLimit / 10, /*wait=*/false));
}

uint64_t KernelCache::removeStaleTemps() const {
  std::string tmp = cacheDirectory + "/tmp";
  uint64_t removed = 0;
  for (const std::string &name : listDirectory(tmp)) {
    std::string path = tmp + "/" + name;
    if (endsWith(name, ".lock")) {
      // Unheld lock files only; one opened meanwhile by a process about
      // to wait on it costs at most a duplicate compile.
      if (lockIsFree(path) && unlink(path.c_str()) == 0)
        ++removed;
      continue;
    }
    struct stat info;
    if (lstat(path.c_str(), &info) != 0 || !isStaleTemp(name, info.st_mtime))
      continue;
    removeTree(path);
    ++removed;
  }
  return removed;
}

uint64_t KernelCache::cleanUp() {
  return cleanUpTo(sizeLimit, sizeLimit, /*wait=*/true);
}

uint64_t KernelCache::cleanUp(uint64_t targetBytes) {
  return cleanUpTo(targetBytes, targetBytes, /*wait=*/true);
}

uint64_t KernelCache::cleanUpTo(uint64_t trigger, uint64_t target, bool wait) {
  makeDirectories(cacheDirectory);
  FileLock lock(cacheDirectory + "/cleanup.lock", wait);
  if (!lock.held())
    return 0;
  removeStaleTemps();
  CacheCounters before = readCounters(cacheDirectory);
  std::vector<EntryFile> files = listEntries(cacheDirectory);
  uint64_t total = 0;
  for (const EntryFile &file : files)
    total += file.size;
  uint64_t removed = 0, remaining = files.size();
  if (trigger != 0 && total > trigger) {
    // Least recently used first: a disk hit renews an entry's mtime.
    std::sort(files.begin(), files.end(),
              [](const EntryFile &a, const EntryFile &b) {
                if (a.modified.tv_sec != b.modified.tv_sec)
                  return a.modified.tv_sec < b.modified.tv_sec;
                if (a.modified.tv_nsec != b.modified.tv_nsec)
                  return a.modified.tv_nsec < b.modified.tv_nsec;
                return a.path < b.path;
              });
    for (const EntryFile &file : files) {
      if (total <= target)
        break;
      // Unlinking is safe for readers: one holding the file open or mapped
      // keeps its inode; one arriving later misses and recompiles.
      if (unlink(file.path.c_str()) == 0 || errno == ENOENT) {
        total -= file.size;
        --remaining;
        ++removed;
      }
    }
  }
  // What was written while scanning is added back to the recount.
  updateCounters(cacheDirectory, [&](CacheCounters &c, bool known) {
    bool counted =
        known && c.bytes != kUnknownBytes && before.bytes != kUnknownBytes;
    uint64_t addedBytes =
        counted && c.bytes > before.bytes ? c.bytes - before.bytes : 0;
    uint64_t addedEntries =
        counted && c.entries > before.entries ? c.entries - before.entries : 0;
    c.bytes = total + addedBytes;
    c.entries = remaining + addedEntries;
    c.evictions += removed;
  });
  return removed;
}

void KernelCache::clear() {
  makeDirectories(cacheDirectory);
  FileLock lock(cacheDirectory + "/cleanup.lock", /*wait=*/true);
  for (const EntryFile &file : listEntries(cacheDirectory))
    unlink(file.path.c_str());
  removeStaleTemps();
  updateCounters(cacheDirectory, [](CacheCounters &c, bool) {
    c.bytes = 0;
    c.entries = 0;
  });
}

CacheReport KernelCache::report(bool verify) const {
  CacheReport report;
  report.directory = cacheDirectory;
  report.maxSize = sizeLimit;
  report.maxSizeProblem = sizeLimitProblem;
  for (const EntryFile &file : listEntries(cacheDirectory)) {
    report.bytes += file.size;
    bool failed = file.path.compare(cacheDirectory.size(), 8, "/failed/") == 0;
    if (failed) {
      ++report.failedSources;
      continue;
    }
    ++(endsWith(file.path, ".cubin") ? report.cudaEntries : report.hostEntries);
    if (!verify)
      continue;
    int fd = open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue; // evicted meanwhile
    std::string bytes;
    if (!readAll(fd, bytes) || !validateEntry(bytes).empty())
      ++report.invalidEntries;
    close(fd);
  }
  std::string tmp = cacheDirectory + "/tmp";
  for (const std::string &name : listDirectory(tmp)) {
    std::string path = tmp + "/" + name;
    bool stale;
    if (endsWith(name, ".lock")) {
      stale = lockIsFree(path);
    } else {
      struct stat info;
      if (lstat(path.c_str(), &info) != 0)
        continue;
      stale = isStaleTemp(name, info.st_mtime);
    }
    ++(stale ? report.staleTemps : report.liveTemps);
  }
  report.counters = readCounters(cacheDirectory);
  return report;
}

bool KernelCache::readEntry(const std::string &path, std::string &payload,
                            int *keepFd) {
  if (keepFd)
    *keepFd = -1;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  std::string bytes;
  std::string problem =
      readAll(fd, bytes) ? validateEntry(bytes) : "it cannot be read";
  if (!problem.empty()) {
    close(fd);
    recordCorrupt();
    warn("fusec: warning: cache entry " + path + " is corrupt (" + problem +
         "); recompiling it");
    return false;
  }
  // Least recently used: a hit renews the entry's modification time (for
  // a library, once it is loaded).
  if (!keepFd)
    futimens(fd, nullptr);
  bytes.resize(bytes.size() - kTrailerBytes);
  payload = std::move(bytes);
  if (keepFd)
    *keepFd = fd;
  else
    close(fd);
  return true;
}

} // namespace fusec
