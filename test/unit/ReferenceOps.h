//===- ReferenceOps.h - An independent f64 reference for reductions -*- C++
//-*-===//
//
// Plain coordinate loops over fusec::Tensor, sharing no code with the
// compiler: reductions over arbitrary axes (ONNX ReduceSum opset 13 and the
// other Reduce* ops of opset 18), softmax / log_softmax along an axis,
// LayerNormalization, RMSNormalization, GELU (erf and tanh forms), SiLU, and
// ONNX's activations with attributes (LeakyRelu, Elu, Selu, Celu,
// HardSigmoid, Shrink), IsInf and Clip.
//
// Float inputs are read as doubles and every result is computed in f64 and
// returned as an F64 tensor (the caller compares against it with a
// tolerance). Integer reductions are computed in 64-bit integers with the
// wraparound of the input dtype (sum and prod modulo 2^bits) and returned in
// the input dtype, to be compared exactly.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_REFERENCEOPS_H
#define FUSEC_TEST_REFERENCEOPS_H

#include "runtime/core/Tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusec::ref {

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L2, LogSumExp };

/// "reduce_sum" -> Sum, ...; throws std::invalid_argument for other names.
ReduceKind reduceKindFromOp(const std::string &op);
const char *reduceOpName(ReduceKind kind);

/// ONNX's axes resolution: nullopt or empty means every axis, unless
/// `noopWithEmptyAxes` (then none). Negative axes count from the end. The
/// result is sorted and unique. Throws std::invalid_argument when an axis is
/// out of range or repeated.
std::vector<int64_t>
resolveAxes(const std::optional<std::vector<int64_t>> &axes, int64_t rank,
            bool noopWithEmptyAxes = false);

/// The result shape of reducing `shape` over the resolved `axes`.
Shape reducedShape(const Shape &shape, const std::vector<int64_t> &axes,
                   bool keepdims);

/// For each element of the reduced result (keepdims or not: the linear
/// order is the same), the linear indices of the input elements it
/// combines, in row-major order.
std::vector<std::vector<int64_t>>
reductionGroups(const Shape &shape, const std::vector<int64_t> &axes);

/// ONNX Reduce* over `axes` (as given by the graph: nullopt when absent).
/// An empty reduced set gives: sum 0, prod 1, max -inf (ints: dtype min),
/// min +inf (ints: dtype max), mean NaN, l2 0, log_sum_exp -inf. Max and min
/// propagate NaN. log_sum_exp is log(sum(exp(x))) evaluated stably: +inf
/// when any element is +inf, -inf when all are -inf, NaN with any NaN.
/// Integer mean and l2 truncate toward zero (ONNX's astype).
Tensor reduce(ReduceKind kind, const Tensor &x,
              const std::optional<std::vector<int64_t>> &axes, bool keepdims,
              bool noopWithEmptyAxes = false);

/// Per element of the reduced result: sqrt(sum of x^2) over its group, the
/// magnitude that rounding errors of a sum scale with. F64.
Tensor reductionScale(const Tensor &x,
                      const std::optional<std::vector<int64_t>> &axes,
                      bool keepdims, bool noopWithEmptyAxes = false);

/// ONNX Softmax / LogSoftmax (opset 13): along the single dim `axis`
/// (negative counts from the end), exp(x - max) / sum(exp(x - max)).
/// As NumPy: a row of all -inf gives NaN, a NaN gives a NaN row.
Tensor softmax(const Tensor &x, int64_t axis);
Tensor logSoftmax(const Tensor &x, int64_t axis);

/// ONNX LayerNormalization over dims [axis, rank): (x - mean) /
/// sqrt(var + epsilon) * weight + bias, population variance. `weight` and
/// `bias` (optional: nullptr) broadcast to the normalized dims.
Tensor layerNorm(const Tensor &x, const Tensor *weight, const Tensor *bias,
                 int64_t axis, double epsilon);

/// x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * weight.
Tensor rmsNorm(const Tensor &x, const Tensor *weight, int64_t axis,
               double epsilon);

/// x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); the tanh form is
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor &x, bool tanhApproximation);
/// x * sigmoid(x).
Tensor silu(const Tensor &x);

/// ONNX's activations with float attributes, elementwise in f64 (F64
/// results), by their ONNX formulas:
///   leaky_relu  x < 0 ? alpha x : x
///   elu         x < 0 ? alpha (e^x - 1) : x
///   selu        gamma (x > 0 ? x : alpha e^x - alpha)
///   celu        max(0, x) + min(0, alpha (e^(x/alpha) - 1))
///   hard_sigmoid max(0, min(1, alpha x + beta)), NaN staying NaN
Tensor leakyRelu(const Tensor &x, double alpha);
Tensor elu(const Tensor &x, double alpha);
Tensor selu(const Tensor &x, double alpha, double gamma);
Tensor celu(const Tensor &x, double alpha);
Tensor hardSigmoid(const Tensor &x, double alpha, double beta);
/// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0 (NaN gives 0).
/// Float inputs give F64; integer inputs their own dtype, the f64 value
/// truncated toward zero (ONNX's astype).
Tensor shrink(const Tensor &x, double bias, double lambd);
/// IsInf with detect_positive / detect_negative: an I1 tensor.
Tensor isInf(const Tensor &x, bool positive, bool negative);
/// np.clip(x, low, high), either bound optional (nullptr), broadcast to x:
/// min(max(x, low), high) with NaN from any operand propagated. In x's
/// dtype (exact).
Tensor clip(const Tensor &x, const Tensor *low, const Tensor *high);

/// Elementwise f(a) and f(a, b) with NumPy broadcasting, in f64 (F64
/// results), for composing references of small graphs.
/// NumPy's broadcast of two shapes (right-aligned, 1 stretches); throws
/// std::invalid_argument when they do not broadcast. Written apart from
/// the compiler's own broadcastShapes, as every reference here is.
Shape broadcastPair(const Shape &a, const Shape &b);

Tensor map(const Tensor &a, double (*f)(double));
Tensor zip(const Tensor &a, const Tensor &b, double (*f)(double, double));

/// `t` read as doubles into a new F64 tensor.
Tensor toF64(const Tensor &t);
/// `t` rounded to `dtype` (float dtypes; ints wrap as Tensor::set does).
Tensor castTo(const Tensor &t, DType dtype);

/// Integer element i (ints and bools; exact for i64).
int64_t intAt(const Tensor &t, int64_t index);
/// Stores an integer, wrapping to the dtype's width.
void setInt(Tensor &t, int64_t index, int64_t value);
int64_t intMin(DType dtype);
int64_t intMax(DType dtype);

} // namespace fusec::ref

#endif
