//===- ShapeFolding.h - Shape computations evaluated on import -*- C++ -*-===//
//
// The integer subgraphs that compute shapes, axes and bounds (Shape -> Size
// -> Sub -> ConstantOfShape -> Concat -> Reshape, ...) are evaluated while a
// model is read, so the ops that need constant operands get them. ONNX's
// data propagation folds some of them; this folds the rest, exactly.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTENDS_ONNX_SHAPEFOLDING_H
#define FUSEC_FRONTENDS_ONNX_SHAPEFOLDING_H

#include "runtime/core/Tensor.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace fusec {

/// The attribute `name` of `node`, or null.
const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                          const std::string &name);

/// The output of `node` (opset `opset`), evaluated over its constant
/// inputs (`inputs[i]` null where input i is absent or not a constant), or
/// std::nullopt when the node is not a shape computation this folds: an op
/// it does not evaluate, a non-constant or non-integer operand, more than a
/// shape's worth of elements, or a value ONNX leaves undefined (a division
/// by zero, an index out of range). `inputShape` is the static shape of
/// input 0 where known (Shape and Size need nothing else). With `isBound`
/// (the output is needed as a constant: a Range bound, a shape), float
/// Cast, Neg, Add, Sub, Mul and Div fold too, as the kernels compute them.
std::optional<Tensor>
foldShapeComputation(const onnx::NodeProto &node, int64_t opset,
                     const std::vector<const Tensor *> &inputs,
                     const std::optional<Shape> &inputShape, bool isBound);

} // namespace fusec

#endif
