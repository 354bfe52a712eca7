//===- CacheFiles.h - File helpers of the kernel cache ----------*- C++ -*-===//
//
// Whole-file reads and writes, directories and suffixes, as the cache's
// parts (entries, locks, the host compiler, loading) use them. Internal to
// the kernel cache: callers use KernelCache.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CACHE_CACHEFILES_H
#define FUSEC_RUNTIME_CACHE_CACHEFILES_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fusec::cache {

/// The bytes of the file at `path` ("" when it cannot be read; `ok` says).
std::string readFile(const std::string &path, bool *ok = nullptr);
/// All of `fd` from its start; false on a read error.
bool readAll(int fd, std::string &bytes);
bool writeAll(int fd, const char *data, size_t size);
/// Writes `bytes` to a new file `path`; with `durable`, flushes it to the
/// disk (entries, before they are published: a crash of the machine then
/// leaves the old entry or the whole new one).
bool writeFile(const std::string &path, const std::string &bytes, bool durable);
/// The size of the file at `path`, if there is one.
bool fileSize(const std::string &path, uint64_t &size);
/// Creates `path` and its parents; throws fusec::Error on failure.
void makeDirectories(const std::string &path);
/// The names in `dir` (not . and ..); empty when it does not exist.
std::vector<std::string> listDirectory(const std::string &dir);
/// Removes a file or a directory tree; a name already gone is fine.
void removeTree(const std::string &path);
/// runtime/ has no LLVM; code that has uses llvm::StringRef::ends_with.
bool endsWith(const std::string &text, const std::string &suffix);

} // namespace fusec::cache

#endif
