//===- DType.h - Element types of tensors ----------------------*- C++ -*-===//
#ifndef FUSEC_RUNTIME_CORE_DTYPE_H
#define FUSEC_RUNTIME_CORE_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace fusec {

enum class DType : unsigned char {
#define FUSEC_DTYPE(Enum, ...) Enum,
#include "runtime/core/DTypes.def"
};

enum class DTypeKind { Float, Int, UInt, Bool };

struct DTypeInfo {
  const char *name;
  std::size_t bytes;
  int bits;
  const char *npyDescr;
  const char *storageCType;
  const char *computeCType;
  DTypeKind kind;
};

const DTypeInfo &dtypeInfo(DType dtype);
inline const char *dtypeName(DType dtype) { return dtypeInfo(dtype).name; }
inline std::size_t dtypeBytes(DType dtype) { return dtypeInfo(dtype).bytes; }
inline bool isFloat(DType dtype) {
  return dtypeInfo(dtype).kind == DTypeKind::Float;
}
/// Signed or unsigned integers (not bool).
inline bool isInteger(DType dtype) {
  DTypeKind kind = dtypeInfo(dtype).kind;
  return kind == DTypeKind::Int || kind == DTypeKind::UInt;
}
inline bool isUnsigned(DType dtype) {
  return dtypeInfo(dtype).kind == DTypeKind::UInt;
}
/// The float8/float4 dtypes and the 4- and 2-bit integers: storage types
/// (casts, quantization, moves) that no arithmetic op takes, converted by
/// runtime/core/NarrowTypes.h.
inline bool isNarrow(DType dtype) {
  const DTypeInfo &info = dtypeInfo(dtype);
  return info.bits < 8 * static_cast<int>(info.bytes) ||
         (info.kind == DTypeKind::Float && info.bytes == 1);
}
std::optional<DType> parseDType(std::string_view name);
/// Every dtype, in table order.
const DType *allDTypesBegin();
const DType *allDTypesEnd();

} // namespace fusec

#endif
