//===- DeviceAllocator.h - Cached device memory ----------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CUDA_DEVICEALLOCATOR_H
#define FUSEC_RUNTIME_CUDA_DEVICEALLOCATOR_H

#include "runtime/cuda/CudaApi.h"

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace fusec::cuda {

/// Device memory, cached by size: executables come and go (a benchmark or a
/// test builds many) without paying cuMemAlloc/cuMemFree each time.
class DeviceAllocator {
public:
  /// The process's allocator (never destroyed: it outlives exit).
  static DeviceAllocator &get();

  /// At least `bytes` of device memory; throws fusec::Error naming `what`
  /// when the device has none left, even after the cache is given back.
  CUdeviceptr allocate(size_t bytes, const std::string &what);
  /// Returns memory from allocate(`bytes`) to the cache.
  void release(CUdeviceptr pointer, size_t bytes);

private:
  static size_t roundUp(size_t bytes);
  void releaseCached();

  std::mutex mutex;
  std::multimap<size_t, CUdeviceptr> cached;
};

} // namespace fusec::cuda

#endif
