//===- TypeUtils.h - Between MLIR types and runtime dtypes -----*- C++ -*-===//
#ifndef FUSE_IR_TYPEUTILS_H
#define FUSE_IR_TYPEUTILS_H

#include "runtime/core/DType.h"
#include "runtime/core/Shape.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace fuse {

/// The dtype of an MLIR element type, or nullopt if fusec does not support it.
std::optional<fusec::DType> toDType(mlir::Type elementType);
mlir::Type toElementType(mlir::MLIRContext *context, fusec::DType dtype);
inline fusec::Shape toShape(mlir::RankedTensorType type) {
  return fusec::Shape(type.getShape().begin(), type.getShape().end());
}
/// The dtype of a tensor type of the fuse dialect (checked by verifiers).
fusec::DType dtypeOf(mlir::Type tensorType);

/// Element `index` of a constant as a double (splats repeat element 0; ints
/// are read signed, i1 as 0/1; exact for ints up to 2^53).
double constantElement(mlir::DenseElementsAttr attr, int64_t index);

} // namespace fuse

#endif
