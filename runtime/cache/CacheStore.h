//===- CacheStore.h - Entries, work files and counters ----------*- C++ -*-===//
//
// The on-disk format of the kernel cache (KernelCache.h describes the
// layout): self-validating entries, the owners of work files in tmp/, and
// cache hits on the trace. KernelCache's counting, eviction and cleanup are
// defined in CacheStore.cpp. Internal to the kernel cache.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CACHE_CACHESTORE_H
#define FUSEC_RUNTIME_CACHE_CACHESTORE_H

#include <cstddef>
#include <ctime>
#include <string>

namespace fusec::cache {

/// Bumped whenever the entry format or the kernel ABI changes.
constexpr const char *kCacheFormat = "fusec-host-cache-v1";
/// Trailer after the library bytes: payload size, payload hash, magic.
constexpr size_t kTrailerBytes = 24;

/// The trailer that makes an entry self-validating.
std::string trailerFor(const std::string &payload);
/// Why the entry at `path` cannot be trusted, or "" when it is valid.
std::string validateEntry(const std::string &bytes);

/// This boot and PID namespace: PIDs and start times are only comparable
/// between processes with the same tag.
const std::string &namespaceTag();
/// The start time of process `pid` (clock ticks since boot), "" when there
/// is no such process.
std::string startTimeOf(long pid);
/// Whether the work file or directory `name` in tmp/ belongs to a process
/// that is gone (or, for a foreign or unknown owner, is old enough).
bool isStaleTemp(const std::string &name, time_t modified);

/// A cache hit on the trace: an instant event naming the slice it lies in
/// (the caller's, named after the kernels), which is told the outcome.
void traceHit(const char *where, const std::string &key);

} // namespace fusec::cache

#endif
