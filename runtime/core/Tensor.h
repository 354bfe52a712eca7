//===- Tensor.h - Host tensors ---------------------------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CORE_TENSOR_H
#define FUSEC_RUNTIME_CORE_TENSOR_H

#include "runtime/core/DType.h"
#include "runtime/core/Shape.h"

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace fusec {

/// Allocates on cache-line (64-byte) boundaries: kernels write large
/// outputs with streaming stores, which need whole lines.
template <typename T> struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <typename U> CacheLineAllocator(const CacheLineAllocator<U> &) {}
  T *allocate(size_t count) {
    return static_cast<T *>(::operator new(count * sizeof(T), kAlignment));
  }
  void deallocate(T *pointer, size_t) {
    ::operator delete(pointer, kAlignment);
  }
  template <typename U> bool operator==(const CacheLineAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const CacheLineAllocator<U> &) const {
    return false;
  }
};

/// A tensor's storage.
using TensorBytes = std::vector<uint8_t, CacheLineAllocator<uint8_t>>;

/// A dense row-major host tensor owning its bytes (little-endian elements;
/// f16/bf16 as raw 16-bit patterns, i1 as one byte 0/1).
struct Tensor {
  DType dtype = DType::F32;
  Shape shape;
  TensorBytes bytes;

  Tensor() = default;
  Tensor(DType dtype, Shape shape)
      : dtype(dtype), shape(std::move(shape)),
        bytes(fusec::numElements(this->shape) * dtypeBytes(dtype)) {}

  int64_t numElements() const { return fusec::numElements(shape); }
  void *data() { return bytes.data(); }
  const void *data() const { return bytes.data(); }
  template <typename T> T *as() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(bytes.data());
  }

  /// Element i as a double (f16/bf16 decoded, ints exact up to 2^53).
  double at(int64_t index) const;
  /// Stores a double into element i, rounded/wrapped to the dtype.
  void set(int64_t index, double value);
  /// "f32[2x3]".
  std::string typeString() const;
};

/// A dense row-major tensor in the memory of the GPU a CUDA model runs on,
/// owned by the caller: `address` is its CUdeviceptr.
struct DeviceTensor {
  DType dtype = DType::F32;
  Shape shape;
  uint64_t address = 0;
};

} // namespace fusec

#endif
