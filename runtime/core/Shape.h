//===- Shape.h - Shapes and NumPy broadcasting -----------------*- C++ -*-===//
//
// Plain C++ (no MLIR): used by the IR's type inference and folders, codegen's
// index arithmetic and the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_SHAPE_H
#define FUSEC_RUNTIME_CORE_SHAPE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusec {

using Shape = std::vector<int64_t>;

inline int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// "2x3", or "scalar" for rank 0.
std::string formatShape(const Shape &shape);

/// NumPy broadcasting of two shapes (dims aligned from the right; a dim of 1
/// stretches). Returns nullopt when some aligned pair differs and neither is 1.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Whether `from` broadcasts to exactly `to`.
bool broadcastsTo(const Shape &from, const Shape &to);

/// Strides (in elements) for reading a row-major `from` while iterating `to`:
/// one per dim of `to`, 0 where `from` is broadcast along that dim.
Shape broadcastStrides(const Shape &from, const Shape &to);

/// Row-major strides of a shape.
Shape rowMajorStrides(const Shape &shape);

/// Maps linear indices of `to` to linear indices of a `from` that broadcasts
/// to it. Meant for references and folders, not for hot loops.
class BroadcastIndexer {
public:
  BroadcastIndexer(const Shape &from, const Shape &to);
  int64_t operator()(int64_t linearIndexInTo) const;

private:
  Shape toShape, strides;
};

} // namespace fusec

#endif
