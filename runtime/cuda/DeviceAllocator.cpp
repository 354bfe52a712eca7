#include "runtime/cuda/DeviceAllocator.h"

#include <algorithm>

namespace fusec::cuda {

DeviceAllocator &DeviceAllocator::get() {
  static DeviceAllocator *allocator = new DeviceAllocator; // outlives exit
  return *allocator;
}

CUdeviceptr DeviceAllocator::allocate(size_t bytes, const std::string &what) {
  bytes = roundUp(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cached.find(bytes);
    if (it != cached.end()) {
      CUdeviceptr pointer = it->second;
      cached.erase(it);
      return pointer;
    }
  }
  CUdeviceptr pointer = 0;
  CUresult result = driver().cuMemAlloc(&pointer, bytes);
  if (result != 0) {
    // Give the cache back to the driver and try once more.
    releaseCached();
    result = driver().cuMemAlloc(&pointer, bytes);
  }
  check(result, "cuMemAlloc",
        what + " (" + std::to_string(bytes >> 20) + " MiB)");
  return pointer;
}

void DeviceAllocator::release(CUdeviceptr pointer, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  cached.emplace(roundUp(bytes), pointer);
}

size_t DeviceAllocator::roundUp(size_t bytes) {
  size_t granule = bytes >= (size_t(1) << 20) ? (size_t(1) << 20) : 512;
  return std::max<size_t>(granule, (bytes + granule - 1) / granule * granule);
}

void DeviceAllocator::releaseCached() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[bytes, pointer] : cached)
    driver().cuMemFree(pointer);
  cached.clear();
}

} // namespace fusec::cuda
