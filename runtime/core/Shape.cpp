#include "runtime/core/Shape.h"

#include <algorithm>

namespace fusec {

std::string formatShape(const Shape &shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    result[rank - 1 - i] = da == 1 ? db : da;
  }
  return result;
}

bool broadcastsTo(const Shape &from, const Shape &to) {
  std::optional<Shape> joined = broadcastShapes(from, to);
  return from.size() <= to.size() && joined && *joined == to;
}

Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Shape broadcastStrides(const Shape &from, const Shape &to) {
  Shape fromStrides = rowMajorStrides(from);
  Shape strides(to.size(), 0);
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    strides[offset + i] = from[i] == 1 ? 0 : fromStrides[i];
  return strides;
}

BroadcastIndexer::BroadcastIndexer(const Shape &from, const Shape &to)
    : toShape(to), strides(broadcastStrides(from, to)) {}

int64_t BroadcastIndexer::operator()(int64_t linearIndex) const {
  int64_t offset = 0;
  for (size_t i = toShape.size(); i-- > 0;) {
    offset += (linearIndex % toShape[i]) * strides[i];
    linearIndex /= toShape[i];
  }
  return offset;
}

} // namespace fusec
