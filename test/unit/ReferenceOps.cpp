//===- ReferenceOps.cpp - An independent f64 reference for reductions ----===//
//
// Deliberately naive: every op walks coordinates with plain loops and
// accumulates in long double, so that nothing here shares a bug with the
// compiler's decompositions or kernels.
//
//===----------------------------------------------------------------------===//

#include "ReferenceOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace fusec::ref {

namespace {

bool isFloatType(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

int64_t product(const Shape &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= shape[i];
  return n;
}

Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    throw std::invalid_argument("axis " + std::to_string(axis) +
                                " out of range for rank " +
                                std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// Maps linear indices of `to` to linear indices of `from`, which
/// broadcasts to `to` (dims aligned from the right, size-1 dims stretch).
class Broadcast {
public:
  Broadcast(const Shape &from, const Shape &to) : to(to) {
    if (from.size() > to.size())
      throw std::invalid_argument("broadcast to a lower rank");
    Shape fromStrides = stridesOf(from);
    size_t offset = to.size() - from.size();
    strides.assign(to.size(), 0);
    for (size_t i = 0; i < from.size(); ++i) {
      if (from[i] == to[offset + i])
        strides[offset + i] = fromStrides[i];
      else if (from[i] != 1)
        throw std::invalid_argument("shapes do not broadcast");
    }
  }
  int64_t operator()(int64_t linear) const {
    int64_t result = 0;
    for (size_t i = to.size(); i-- > 0;) {
      int64_t coordinate = to[i] ? linear % to[i] : 0;
      linear = to[i] ? linear / to[i] : 0;
      result += coordinate * strides[i];
    }
    return result;
  }

private:
  Shape to, strides;
};

} // namespace

Shape broadcastPair(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("shapes do not broadcast");
    result[i] = da == 1 ? db : da;
  }
  return result;
}

int64_t intAt(const Tensor &t, int64_t i) {
  switch (t.dtype) {
  case DType::I8:
    return t.as<int8_t>()[i];
  case DType::I32:
    return t.as<int32_t>()[i];
  case DType::I64:
    return t.as<int64_t>()[i];
  case DType::I1:
    return t.as<uint8_t>()[i] != 0;
  case DType::I16:
    return t.as<int16_t>()[i];
  case DType::U8:
    return t.as<uint8_t>()[i];
  case DType::U16:
    return t.as<uint16_t>()[i];
  case DType::U32:
    return t.as<uint32_t>()[i];
  case DType::U64: // from 2^63 as negative int64: only wrapping ops read it
    return static_cast<int64_t>(t.as<uint64_t>()[i]);
  default:
    return static_cast<int64_t>(t.at(i));
  }
}

void setInt(Tensor &t, int64_t i, int64_t value) {
  switch (t.dtype) {
  case DType::I8:
    t.as<int8_t>()[i] = static_cast<int8_t>(value);
    return;
  case DType::I32:
    t.as<int32_t>()[i] = static_cast<int32_t>(value);
    return;
  case DType::I64:
    t.as<int64_t>()[i] = value;
    return;
  case DType::I1:
    t.as<uint8_t>()[i] = value != 0;
    return;
  case DType::I16:
    t.as<int16_t>()[i] = static_cast<int16_t>(value);
    return;
  case DType::U8:
    t.as<uint8_t>()[i] = static_cast<uint8_t>(value);
    return;
  case DType::U16:
    t.as<uint16_t>()[i] = static_cast<uint16_t>(value);
    return;
  case DType::U32:
    t.as<uint32_t>()[i] = static_cast<uint32_t>(value);
    return;
  case DType::U64:
    t.as<uint64_t>()[i] = static_cast<uint64_t>(value);
    return;
  default:
    t.set(i, static_cast<double>(value));
  }
}

int64_t intMin(DType dtype) {
  switch (dtype) {
  case DType::I8:
    return std::numeric_limits<int8_t>::min();
  case DType::I32:
    return std::numeric_limits<int32_t>::min();
  case DType::I64:
    return std::numeric_limits<int64_t>::min();
  case DType::I16:
    return std::numeric_limits<int16_t>::min();
  case DType::I4:
  case DType::I2:
    return -(int64_t(1) << (dtypeInfo(dtype).bits - 1));
  case DType::U4:
  case DType::U2:
  case DType::I1:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return 0;
  default:
    throw std::invalid_argument("intMin of a float dtype");
  }
}

int64_t intMax(DType dtype) {
  switch (dtype) {
  case DType::I8:
    return std::numeric_limits<int8_t>::max();
  case DType::I32:
    return std::numeric_limits<int32_t>::max();
  case DType::I64:
    return std::numeric_limits<int64_t>::max();
  case DType::I1:
    return 1;
  case DType::I16:
    return std::numeric_limits<int16_t>::max();
  case DType::I4:
  case DType::I2:
    return (int64_t(1) << (dtypeInfo(dtype).bits - 1)) - 1;
  case DType::U4:
  case DType::U2:
    return (int64_t(1) << dtypeInfo(dtype).bits) - 1;
  case DType::U8:
    return std::numeric_limits<uint8_t>::max();
  case DType::U16:
    return std::numeric_limits<uint16_t>::max();
  case DType::U32:
    return std::numeric_limits<uint32_t>::max();
  case DType::U64:
    // 2^64 - 1 read as int64 (-1), as intAt reads u64: the identity of an
    // empty min is then right, and the tests keep u64 values below 2^63.
    return -1;
  default:
    throw std::invalid_argument("intMax of a float dtype");
  }
}

ReduceKind reduceKindFromOp(const std::string &op) {
  if (op == "reduce_sum")
    return ReduceKind::Sum;
  if (op == "reduce_mean")
    return ReduceKind::Mean;
  if (op == "reduce_max")
    return ReduceKind::Max;
  if (op == "reduce_min")
    return ReduceKind::Min;
  if (op == "reduce_prod")
    return ReduceKind::Prod;
  if (op == "reduce_l2")
    return ReduceKind::L2;
  if (op == "reduce_log_sum_exp")
    return ReduceKind::LogSumExp;
  throw std::invalid_argument("not a reduction: " + op);
}

const char *reduceOpName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "reduce_sum";
  case ReduceKind::Mean:
    return "reduce_mean";
  case ReduceKind::Max:
    return "reduce_max";
  case ReduceKind::Min:
    return "reduce_min";
  case ReduceKind::Prod:
    return "reduce_prod";
  case ReduceKind::L2:
    return "reduce_l2";
  case ReduceKind::LogSumExp:
    return "reduce_log_sum_exp";
  }
  return "?";
}

std::vector<int64_t>
resolveAxes(const std::optional<std::vector<int64_t>> &axes, int64_t rank,
            bool noopWithEmptyAxes) {
  std::vector<bool> reduced(rank, false);
  if (!axes || axes->empty()) {
    if (!noopWithEmptyAxes)
      reduced.assign(rank, true);
  } else {
    for (int64_t axis : *axes) {
      int64_t a = normalizeAxis(axis, rank);
      if (reduced[a])
        throw std::invalid_argument("repeated axis");
      reduced[a] = true;
    }
  }
  std::vector<int64_t> result;
  for (int64_t i = 0; i < rank; ++i)
    if (reduced[i])
      result.push_back(i);
  return result;
}

Shape reducedShape(const Shape &shape, const std::vector<int64_t> &axes,
                   bool keepdims) {
  Shape result;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool isReduced = false;
    for (int64_t axis : axes)
      isReduced |= axis == static_cast<int64_t>(i);
    if (!isReduced)
      result.push_back(shape[i]);
    else if (keepdims)
      result.push_back(1);
  }
  return result;
}

std::vector<std::vector<int64_t>>
reductionGroups(const Shape &shape, const std::vector<int64_t> &axes) {
  Shape kept = reducedShape(shape, axes, /*keepdims=*/true);
  Shape keptStrides = stridesOf(kept);
  std::vector<bool> isReduced(shape.size(), false);
  for (int64_t axis : axes)
    isReduced[axis] = true;
  std::vector<std::vector<int64_t>> groups(numElements(kept));
  int64_t total = numElements(shape);
  Shape coordinate(shape.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t out = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!isReduced[d])
        out += coordinate[d] * keptStrides[d];
    groups[out].push_back(i);
    // Next coordinate, row-major.
    for (size_t d = shape.size(); d-- > 0;) {
      if (++coordinate[d] < shape[d])
        break;
      coordinate[d] = 0;
    }
  }
  return groups;
}

namespace {

/// Calls visit(outputIndex, inputIndex) for every input element, in
/// row-major order of the input: the streaming form of reductionGroups.
template <typename Visit>
void forEachElement(const Shape &shape, const std::vector<int64_t> &axes,
                    Visit visit) {
  Shape kept = reducedShape(shape, axes, /*keepdims=*/true);
  Shape keptStrides = stridesOf(kept);
  std::vector<bool> isReduced(shape.size(), false);
  for (int64_t axis : axes)
    isReduced[axis] = true;
  int64_t total = numElements(shape);
  Shape coordinate(shape.size(), 0);
  int64_t out = 0;
  for (int64_t i = 0; i < total; ++i) {
    visit(out, i);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++coordinate[d] < shape[d]) {
        if (!isReduced[d])
          out += keptStrides[d];
        break;
      }
      if (!isReduced[d])
        out -= (shape[d] - 1) * keptStrides[d];
      coordinate[d] = 0;
    }
  }
}

struct FloatAccumulator {
  long double sum = 0, squares = 0, product = 1, expSum = 0;
  double largest = -std::numeric_limits<double>::infinity();
  double smallest = std::numeric_limits<double>::infinity();
  double largestFinite = -std::numeric_limits<double>::infinity();
  bool anyNaN = false, anyPositiveInf = false;
  int64_t count = 0;
};

struct IntAccumulator {
  uint64_t sum = 0, product = 1; // modulo 2^64: wraps like any narrower width
  __int128 exactSum = 0;
  long double squares = 0;
  int64_t largest, smallest;
  int64_t count = 0;
};

Tensor reduceFloat(ReduceKind kind, const Tensor &x,
                   const std::vector<int64_t> &axes, const Shape &shape) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<FloatAccumulator> acc(numElements(shape));
  forEachElement(x.shape, axes, [&](int64_t out, int64_t in) {
    FloatAccumulator &a = acc[out];
    double v = x.at(in);
    a.count++;
    a.sum += v;
    a.squares += static_cast<long double>(v) * v;
    a.product *= v;
    if (std::isnan(v))
      a.anyNaN = true;
    if (v > a.largest)
      a.largest = v;
    if (v < a.smallest)
      a.smallest = v;
    if (v == inf)
      a.anyPositiveInf = true;
    else if (std::isfinite(v) && v > a.largestFinite)
      a.largestFinite = v;
  });
  if (kind == ReduceKind::LogSumExp)
    forEachElement(x.shape, axes, [&](int64_t out, int64_t in) {
      FloatAccumulator &a = acc[out];
      double v = x.at(in);
      if (std::isfinite(v))
        a.expSum += std::exp(static_cast<long double>(v) - a.largestFinite);
    });
  Tensor result(DType::F64, shape);
  for (size_t g = 0; g < acc.size(); ++g) {
    const FloatAccumulator &a = acc[g];
    double value = nan;
    switch (kind) {
    case ReduceKind::Sum:
      value = static_cast<double>(a.sum);
      break;
    case ReduceKind::Mean:
      value = a.count ? static_cast<double>(a.sum / a.count) : nan;
      break;
    case ReduceKind::Max:
      value = a.anyNaN ? nan : a.largest;
      break;
    case ReduceKind::Min:
      value = a.anyNaN ? nan : a.smallest;
      break;
    case ReduceKind::Prod:
      value = static_cast<double>(a.product);
      break;
    case ReduceKind::L2:
      value = static_cast<double>(std::sqrt(a.squares));
      break;
    case ReduceKind::LogSumExp:
      if (a.anyNaN)
        value = nan;
      else if (a.anyPositiveInf)
        value = inf;
      else if (a.largestFinite == -inf) // empty, or all -inf: log(0)
        value = -inf;
      else
        value = static_cast<double>(a.largestFinite + std::log(a.expSum));
      break;
    }
    result.set(g, value);
  }
  return result;
}

Tensor reduceInt(ReduceKind kind, const Tensor &x,
                 const std::vector<int64_t> &axes, const Shape &shape) {
  if (kind == ReduceKind::LogSumExp) {
    // The real log-sum-exp, truncated toward zero and saturated to the
    // dtype (a sum of none, -inf, becomes the dtype's minimum).
    Tensor real = reduceFloat(kind, toF64(x), axes, shape);
    Tensor result(x.dtype, shape);
    const bool unsignedType = isUnsigned(x.dtype);
    const double lowest =
        unsignedType ? 0.0 : static_cast<double>(intMin(x.dtype));
    const double highest = x.dtype == DType::U64
                               ? 18446744073709549568.0 // below 2^64
                               : static_cast<double>(intMax(x.dtype));
    for (int64_t i = 0; i < real.numElements(); ++i) {
      double v = std::trunc(real.at(i));
      if (std::isnan(v))
        v = 0; // as fusec's float-to-int cast (docs/semantics.md)
      v = std::min(std::max(v, lowest), highest);
      setInt(result, i,
             v >= 9223372036854775808.0
                 ? static_cast<int64_t>(static_cast<uint64_t>(v))
                 : static_cast<int64_t>(v));
    }
    return result;
  }
  IntAccumulator initial;
  initial.largest = intMin(x.dtype);
  initial.smallest = intMax(x.dtype);
  std::vector<IntAccumulator> acc(numElements(shape), initial);
  // u64 values from 2^63 read as negative int64: they order as unsigned.
  const bool unsignedOrder = isUnsigned(x.dtype);
  auto less = [&](int64_t p, int64_t q) {
    return unsignedOrder ? static_cast<uint64_t>(p) < static_cast<uint64_t>(q)
                         : p < q;
  };
  forEachElement(x.shape, axes, [&](int64_t out, int64_t in) {
    IntAccumulator &a = acc[out];
    int64_t v = intAt(x, in);
    a.count++;
    a.sum += static_cast<uint64_t>(v);
    a.product *= static_cast<uint64_t>(v);
    a.exactSum += v;
    a.squares += static_cast<long double>(v) * v;
    a.largest = less(a.largest, v) ? v : a.largest;
    a.smallest = less(v, a.smallest) ? v : a.smallest;
  });
  Tensor result(x.dtype, shape);
  for (size_t g = 0; g < acc.size(); ++g) {
    const IntAccumulator &a = acc[g];
    int64_t value = 0;
    switch (kind) {
    case ReduceKind::Sum:
      value = static_cast<int64_t>(a.sum);
      break;
    case ReduceKind::Prod:
      value = static_cast<int64_t>(a.product);
      break;
    case ReduceKind::Max:
      value = a.largest;
      break;
    case ReduceKind::Min:
      value = a.smallest;
      break;
    case ReduceKind::Mean:
      // Exact (the tests keep sums in range); C++ division truncates toward
      // zero like ONNX's astype of the float mean.
      value = a.count ? static_cast<int64_t>(a.exactSum / a.count) : 0;
      break;
    case ReduceKind::L2:
      value = static_cast<int64_t>(std::floor(std::sqrt(a.squares)));
      break;
    case ReduceKind::LogSumExp:
      break;
    }
    setInt(result, g, value);
  }
  return result;
}

} // namespace

Tensor reduce(ReduceKind kind, const Tensor &x,
              const std::optional<std::vector<int64_t>> &axes, bool keepdims,
              bool noopWithEmptyAxes) {
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> resolved = resolveAxes(axes, rank, noopWithEmptyAxes);
  bool floating = isFloatType(x.dtype);
  if (resolved.empty() && noopWithEmptyAxes && (!axes || axes->empty()))
    return floating ? toF64(x) : x; // ONNX: the input, unreduced
  Shape shape = reducedShape(x.shape, resolved, keepdims);
  return floating ? reduceFloat(kind, x, resolved, shape)
                  : reduceInt(kind, x, resolved, shape);
}

Tensor reductionScale(const Tensor &x,
                      const std::optional<std::vector<int64_t>> &axes,
                      bool keepdims, bool noopWithEmptyAxes) {
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> resolved = resolveAxes(axes, rank, noopWithEmptyAxes);
  if (resolved.empty() && noopWithEmptyAxes && (!axes || axes->empty())) {
    Tensor result = toF64(x);
    for (int64_t i = 0; i < result.numElements(); ++i)
      result.set(i, std::fabs(result.at(i)));
    return result;
  }
  Shape shape = reducedShape(x.shape, resolved, keepdims);
  std::vector<long double> squares(numElements(shape), 0);
  forEachElement(x.shape, resolved, [&](int64_t out, int64_t in) {
    long double v = x.at(in);
    if (std::isfinite(static_cast<double>(v)))
      squares[out] += v * v;
  });
  Tensor result(DType::F64, shape);
  for (size_t g = 0; g < squares.size(); ++g)
    result.set(g, static_cast<double>(std::sqrt(squares[g])));
  return result;
}

namespace {

Tensor softmaxImpl(const Tensor &x, int64_t axis, bool logarithm) {
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t a = normalizeAxis(axis, rank);
  int64_t outer = product(x.shape, 0, a), length = x.shape[a],
          inner = product(x.shape, a + 1, x.shape.size());
  Tensor result(DType::F64, x.shape);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      auto index = [&](int64_t k) { return (o * length + k) * inner + in; };
      double largest = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < length; ++k) {
        double v = x.at(index(k));
        if (std::isnan(v) || std::isnan(largest))
          largest = nan;
        else if (v > largest)
          largest = v;
      }
      long double sum = 0;
      for (int64_t k = 0; k < length; ++k)
        sum += std::exp(static_cast<long double>(x.at(index(k))) - largest);
      for (int64_t k = 0; k < length; ++k) {
        long double shifted =
            static_cast<long double>(x.at(index(k))) - largest;
        long double value =
            logarithm ? shifted - std::log(sum) : std::exp(shifted) / sum;
        result.set(index(k), static_cast<double>(value));
      }
    }
  }
  return result;
}

} // namespace

Tensor softmax(const Tensor &x, int64_t axis) {
  return softmaxImpl(x, axis, false);
}

Tensor logSoftmax(const Tensor &x, int64_t axis) {
  return softmaxImpl(x, axis, true);
}

Tensor layerNorm(const Tensor &x, const Tensor *weight, const Tensor *bias,
                 int64_t axis, double epsilon) {
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t a = normalizeAxis(axis, rank);
  Shape normalized(x.shape.begin() + a, x.shape.end());
  int64_t outer = product(x.shape, 0, a), n = numElements(normalized);
  std::optional<Broadcast> weightIndex, biasIndex;
  if (weight)
    weightIndex.emplace(weight->shape, normalized);
  if (bias)
    biasIndex.emplace(bias->shape, normalized);
  Tensor result(DType::F64, x.shape);
  for (int64_t o = 0; o < outer; ++o) {
    long double sum = 0;
    for (int64_t j = 0; j < n; ++j)
      sum += x.at(o * n + j);
    long double mean = sum / n;
    long double squares = 0;
    for (int64_t j = 0; j < n; ++j) {
      long double d = x.at(o * n + j) - mean;
      squares += d * d;
    }
    long double inverse = 1.0L / std::sqrt(squares / n + epsilon);
    for (int64_t j = 0; j < n; ++j) {
      long double y = (x.at(o * n + j) - mean) * inverse;
      if (weight)
        y *= weight->at((*weightIndex)(j));
      if (bias)
        y += bias->at((*biasIndex)(j));
      result.set(o * n + j, static_cast<double>(y));
    }
  }
  return result;
}

Tensor rmsNorm(const Tensor &x, const Tensor *weight, int64_t axis,
               double epsilon) {
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t a = normalizeAxis(axis, rank);
  Shape normalized(x.shape.begin() + a, x.shape.end());
  int64_t outer = product(x.shape, 0, a), n = numElements(normalized);
  std::optional<Broadcast> weightIndex;
  if (weight)
    weightIndex.emplace(weight->shape, normalized);
  Tensor result(DType::F64, x.shape);
  for (int64_t o = 0; o < outer; ++o) {
    long double squares = 0;
    for (int64_t j = 0; j < n; ++j) {
      long double v = x.at(o * n + j);
      squares += v * v;
    }
    long double inverse = 1.0L / std::sqrt(squares / n + epsilon);
    for (int64_t j = 0; j < n; ++j) {
      long double y = x.at(o * n + j) * inverse;
      if (weight)
        y *= weight->at((*weightIndex)(j));
      result.set(o * n + j, static_cast<double>(y));
    }
  }
  return result;
}

Tensor gelu(const Tensor &x, bool tanhApproximation) {
  Tensor result(DType::F64, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    long double v = x.at(i);
    long double phi;
    if (tanhApproximation)
      phi = 0.5L * (1 + std::tanh(std::sqrt(2.0L / M_PIl) *
                                  (v + 0.044715L * v * v * v)));
    else
      phi = 0.5L * std::erfc(-v / std::sqrt(2.0L)); // 0.5 (1 + erf(v/√2))
    result.set(i, static_cast<double>(v * phi));
  }
  return result;
}

Tensor silu(const Tensor &x) {
  Tensor result(DType::F64, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    long double v = x.at(i);
    result.set(i, static_cast<double>(v / (1 + std::exp(-v))));
  }
  return result;
}

namespace {

/// f applied to every element, read as a double, into an F64 tensor.
template <typename F> Tensor mapF64(const Tensor &x, F f) {
  Tensor result(DType::F64, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    result.set(i, f(x.at(i)));
  return result;
}

} // namespace

Tensor leakyRelu(const Tensor &x, double alpha) {
  return mapF64(x, [&](double v) { return v < 0 ? alpha * v : v; });
}

Tensor elu(const Tensor &x, double alpha) {
  return mapF64(x, [&](double v) { return v < 0 ? alpha * std::expm1(v) : v; });
}

Tensor selu(const Tensor &x, double alpha, double gamma) {
  return mapF64(x, [&](double v) {
    return gamma * (v > 0 ? v : alpha * std::exp(v) - alpha);
  });
}

Tensor celu(const Tensor &x, double alpha) {
  return mapF64(x, [&](double v) {
    if (std::isnan(v))
      return v;
    return std::max(0.0, v) + std::min(0.0, alpha * std::expm1(v / alpha));
  });
}

Tensor hardSigmoid(const Tensor &x, double alpha, double beta) {
  return mapF64(x, [&](double v) {
    if (std::isnan(v))
      return v;
    return std::max(0.0, std::min(1.0, alpha * v + beta));
  });
}

Tensor shrink(const Tensor &x, double bias, double lambd) {
  auto f = [&](double v) {
    return v < -lambd ? v + bias : v > lambd ? v - bias : 0.0;
  };
  if (isFloat(x.dtype))
    return mapF64(x, f);
  Tensor result(x.dtype, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    setInt(
        result, i,
        static_cast<int64_t>(std::trunc(f(static_cast<double>(intAt(x, i))))));
  return result;
}

Tensor isInf(const Tensor &x, bool positive, bool negative) {
  Tensor result(DType::I1, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double v = x.at(i);
    bool hit = std::isinf(v) && (v > 0 ? positive : negative);
    result.set(i, hit ? 1.0 : 0.0);
  }
  return result;
}

Tensor clip(const Tensor &x, const Tensor *low, const Tensor *high) {
  Tensor result(x.dtype, x.shape);
  std::optional<Broadcast> il, ih;
  if (low)
    il.emplace(low->shape, x.shape);
  if (high)
    ih.emplace(high->shape, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    if (!isFloat(x.dtype)) {
      int64_t v = intAt(x, i);
      if (low)
        v = std::max(v, intAt(*low, (*il)(i)));
      if (high)
        v = std::min(v, intAt(*high, (*ih)(i)));
      setInt(result, i, v);
      continue;
    }
    double v = x.at(i);
    double lo = low ? low->at((*il)(i)) : -INFINITY;
    double hi = high ? high->at((*ih)(i)) : INFINITY;
    if (std::isnan(v) || std::isnan(lo) || std::isnan(hi))
      v = NAN;
    else
      v = std::min(std::max(v, lo), hi);
    result.set(i, v);
  }
  return result;
}

Tensor map(const Tensor &a, double (*f)(double)) {
  Tensor result(DType::F64, a.shape);
  for (int64_t i = 0; i < a.numElements(); ++i)
    result.set(i, f(a.at(i)));
  return result;
}

Tensor zip(const Tensor &a, const Tensor &b, double (*f)(double, double)) {
  Shape shape = broadcastPair(a.shape, b.shape);
  Broadcast ia(a.shape, shape), ib(b.shape, shape);
  Tensor result(DType::F64, shape);
  for (int64_t i = 0; i < result.numElements(); ++i)
    result.set(i, f(a.at(ia(i)), b.at(ib(i))));
  return result;
}

Tensor toF64(const Tensor &t) {
  Tensor result(DType::F64, t.shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    result.set(i, t.at(i));
  return result;
}

Tensor castTo(const Tensor &t, DType dtype) {
  Tensor result(dtype, t.shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    result.set(i, t.at(i));
  return result;
}

} // namespace fusec::ref
