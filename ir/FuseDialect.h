//===- FuseDialect.h - The fuse dialect and its ops ------------*- C++ -*-===//
#ifndef FUSE_IR_FUSEDIALECT_H
#define FUSE_IR_FUSEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/ElementwiseOps.h"
#include "ir/FuseDialect.h.inc"
#include "ir/FusionKind.h"
#include "ir/LibraryOps.h"

// The interfaces' declarations name FusionKind and ReductionCombiner.
#include "ir/FuseInterfaces.h.inc"

namespace fuse {

/// Result type of an elementwise op of the table: NumPy broadcast of the
/// operand shapes, dtype per the op's row.
llvm::LogicalResult
inferElementwiseResultType(llvm::StringRef opName, mlir::MLIRContext *context,
                           std::optional<mlir::Location> loc,
                           mlir::ValueRange operands,
                           llvm::SmallVectorImpl<mlir::Type> &inferred);

/// Attribute naming a graph input (on function arguments) or output (on
/// function results); absent names become argN / resultN.
constexpr const char *kValueNameAttr = "fuse.name";

/// "tensor<2x3xf32>", for messages.
std::string typeString(mlir::Type type);

/// The graph node an op came from (its NameLoc), or "" if it has none.
std::string nodeNameOf(mlir::Location loc);
/// "'fuse.add' (node 'a1')", for messages about an op.
std::string describeOp(mlir::Operation *op);

/// The type of reducing `operand` along `axes` (sorted, non-negative).
mlir::RankedTensorType reducedTensorType(mlir::RankedTensorType operand,
                                         llvm::ArrayRef<int64_t> axes,
                                         bool keepdims);
/// Whether every reduced axis of `operand` has size 1: a sum, product, max,
/// min or mean over them is the operand itself (a fold, or a reshape when
/// the axes are dropped).
bool reducesUnitAxesOnly(mlir::RankedTensorType operand,
                         llvm::ArrayRef<int64_t> axes);
/// ONNX's axis in [-rank, rank) as a dim index, or nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Constant folding and identities (x+0, x*1, ...) for the table's ops.
mlir::OpFoldResult foldElementwise(mlir::Operation *op,
                                   llvm::ArrayRef<mlir::Attribute> operands);
} // namespace fuse

#define GET_OP_CLASSES
#include "ir/FuseOps.h.inc"

#endif
