//===- FuzzCacheEntry.cpp - Kernel-cache entries read from disk ----------===//
//
// Each input is the file a cache lookup finds on disk: the harness writes
// it where KernelCache::loadCubin looks for its key, then looks the source
// up in a fresh cache (so nothing is remembered in memory). A valid entry is
// returned as bytes and never loaded or run. An invalid one must be
// reported and recompiled; the harness makes that recompile fail at once
// (an option NVRTC rejects before parsing anything), so each run costs a
// file read, not a compile. Cubin entries are used rather than host
// libraries because a valid host entry is dlopen'ed: running fuzzed bytes
// through the dynamic loader tests glibc, not fusec.
//
// The entry's path is computed as KernelCache computes it; the first run
// checks that (a valid entry must be a disk hit), so a change of the key
// format stops the harness instead of silently fuzzing nothing.
//
//===----------------------------------------------------------------------===//
#include "FuzzUtil.h"

#include "runtime/cache/Hash.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Error.h"
#include "runtime/cuda/CudaApi.h"

#include <cstring>
#include <iostream>
#include <sys/stat.h>

namespace {

const char *const kSource = "extern \"C\" __global__ void fuzz() {}\n";
const char *const kArch = "sm_90a";
const std::vector<std::string> kOptions = {"--fusec-fuzz-no-such-option"};

std::string cacheDirectory() { return fusec::fuzz::workDirectory() + "/cache"; }

/// Where loadCubin looks for kSource (KernelCache::keyFor,
/// runtime/cache/KernelCache.cpp).
const std::string &entryPath() {
  static const std::string path = [] {
    std::string toolchain =
        "nvrtc " + fusec::cuda::nvrtcVersion() + " " + kArch;
    for (const std::string &option : kOptions)
      toolchain += " " + option;
    uint64_t hash = fusec::hashBytes("fusec-host-cache-v1");
    hash = fusec::hashBytes(toolchain, hash);
    hash = fusec::hashBytes(kSource, hash);
    mkdir(cacheDirectory().c_str(), 0755);
    mkdir((cacheDirectory() + "/cuda").c_str(), 0755);
    return cacheDirectory() + "/cuda/" + fusec::toHex(hash) + ".cubin";
  }();
  return path;
}

/// The entry KernelCache writes for `payload`: the bytes, then a trailer
/// of size, FNV-1a hash and magic.
std::string validEntry(const std::string &payload) {
  uint64_t size = payload.size(), hash = fusec::hashBytes(payload);
  std::string entry = payload;
  entry.append(reinterpret_cast<const char *>(&size), 8);
  entry.append(reinterpret_cast<const char *>(&hash), 8);
  entry.append("FUSECSO1", 8);
  return entry;
}

/// Looks kSource up with `entry` on disk; true on a disk hit.
bool lookUp(const std::string &entry, std::string *payload = nullptr) {
  fusec::fuzz::writeInput(reinterpret_cast<const uint8_t *>(entry.data()),
                          entry.size(), "entry");
  if (std::rename((fusec::fuzz::workDirectory() + "/entry").c_str(),
                  entryPath().c_str()) != 0) {
    std::perror("fusec-fuzz: rename");
    std::abort();
  }
  fusec::KernelCache cache(cacheDirectory());
  cache.setWarningHandler([](const std::string &) {});
  try {
    std::shared_ptr<const std::string> cubin =
        cache.loadCubin(kSource, kArch, kOptions);
    if (payload)
      *payload = *cubin;
    return true;
  } catch (const fusec::Error &error) {
    // The failed recompile: anything else would mean a compile ran.
    if (!std::strstr(error.what(), "NVRTC failed")) {
      std::cerr << "fusec-fuzz: unexpected error: " << error.what() << "\n";
      std::abort();
    }
    if (cache.stats().corruptEntries != 1) {
      std::cerr << "fusec-fuzz: the entry was not read (stale key format?)\n";
      std::abort();
    }
    return false;
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (!fusec::cuda::nvrtcUnavailableReason().empty()) {
    std::cerr << "fusec-fuzz: NVRTC is needed to form cubin cache keys: "
              << fusec::cuda::nvrtcUnavailableReason() << "\n";
    std::exit(1);
  }
  std::string payload;
  if (!lookUp(validEntry("a cubin"), &payload) || payload != "a cubin") {
    std::cerr << "fusec-fuzz: a valid entry at " << entryPath()
              << " was not a disk hit: KernelCache's key format changed; "
                 "update FuzzCacheEntry.cpp\n";
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string entry(reinterpret_cast<const char *>(data), size);
  std::string payload;
  if (lookUp(entry, &payload) &&
      payload != entry.substr(0, entry.size() - 24)) {
    std::cerr << "fusec-fuzz: a disk hit returned the wrong payload\n";
    std::abort();
  }
  return 0;
}
