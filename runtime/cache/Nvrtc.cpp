//===- Nvrtc.cpp - CUDA kernels compiled by NVRTC into cubins -------------===//

#include "runtime/cache/CacheFiles.h"
#include "runtime/cache/CacheStore.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"
#include "runtime/cuda/CudaApi.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fusec {

using namespace cache;

std::shared_ptr<const std::string>
KernelCache::loadCubin(const std::string &source, const std::string &arch,
                       const std::vector<std::string> &options) {
  std::string toolchain = "nvrtc " + cuda::nvrtcVersion() + " " + arch;
  for (const std::string &option : options)
    toolchain += " " + option;
  std::string key = keyFor(toolchain, source);

  std::string entryPath = cacheDirectory + "/cuda/" + key + ".cubin";
  std::string cubin;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cubins.find(key); it != cubins.end()) {
      ++counters.memoryHits;
      traceHit("memory", key);
      return it->second;
    }
    if (readEntry(entryPath, cubin)) {
      ++counters.diskHits;
      traceHit("disk", key);
      recordHit();
      auto shared = std::make_shared<const std::string>(std::move(cubin));
      cubins[key] = shared;
      return shared;
    }
  }
  // Compiling happens unlocked, so that the groups of one program compile
  // in parallel; two threads compiling the same source each publish an
  // identical entry by an atomic rename.
  try {
    trace::Scope scope("nvrtc compile", "compile",
                       {{"key", key}, {"arch", arch}});
    cubin = cuda::compileCuda(source, arch, options, /*ptx=*/false);
  } catch (const Error &error) {
    trace::annotate({"cache", "compile failed"});
    failCompile(key, ".cu", source, error.what());
  }
  trace::annotate({"cache", "compiled"});
  makeDirectories(cacheDirectory + "/cuda");
  makeDirectories(cacheDirectory + "/tmp");
  std::string temp = workStem(key) + ".cubin";
  std::string entry = cubin + trailerFor(cubin);
  uint64_t oldBytes = 0;
  bool replaced = fileSize(entryPath, oldBytes);
  bool published = writeFile(temp, entry, /*durable=*/true) &&
                   std::rename(temp.c_str(), entryPath.c_str()) == 0;
  int publishError = errno;
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.compiles;
  if (published) {
    recordWrite(entry.size(), replaced, oldBytes);
  } else {
    // The cubin is in memory: this process goes on uncached.
    std::remove(temp.c_str());
    warn("fusec: warning: cannot publish cache entry " + entryPath + ": " +
         std::strerror(publishError));
  }
  auto [it, inserted] = cubins.try_emplace(key, nullptr);
  if (inserted)
    it->second = std::make_shared<const std::string>(std::move(cubin));
  return it->second;
}

} // namespace fusec
