//===- Reduction.cpp - ONNX reduction ops ---------------------------------===//
//
// Reductions: ReduceX, ArgMax/ArgMin, Softmax, Hardmax, CumSum/CumProd,
// TopK and the likelihood losses.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxConverter.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>

namespace fusec::onnx_import {

namespace {

/// ReduceSumSquare and ReduceL1: a reduce_sum of x * x or |x|.
void sumOfSquares(OnnxConverter &converter, const onnx::NodeProto &,
                  GraphNode &node) {
  const std::string x = node.inputs.at(0);
  node.inputs[0] = converter.addStep(node, "mul", {x, x}, "squared");
}

void sumOfMagnitudes(OnnxConverter &converter, const onnx::NodeProto &,
                     GraphNode &node) {
  node.inputs.at(0) =
      converter.addStep(node, "abs", {node.inputs.at(0)}, "magnitude");
}

/// ReduceLogSum: log of the reduce_sum. Integers sum in f64 (exact up to
/// 2^53, no wrapping) and the log truncates back, as for ReduceL2.
void logOfSum(OnnxConverter &converter, const onnx::NodeProto &,
              GraphNode &node) {
  DType dtype = converter.requireDType(node.inputs.at(0), "ReduceLogSum");
  bool integer = !isFloat(dtype);
  std::vector<std::string> inputs = node.inputs;
  if (integer)
    inputs[0] = converter.addStep(node, "cast", {inputs[0]}, "real",
                                  {{"dtype", std::string("f64")}});
  std::string sum =
      converter.addStep(node, "reduce_sum", inputs, "sum", node.attrs);
  if (!integer) {
    node.op = "log";
    node.inputs = {sum};
    node.attrs.clear();
    return;
  }
  std::string log = converter.addStep(node, "log", {sum}, "log");
  node.op = "cast";
  node.inputs = {log};
  node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
}

/// Hardmax: 1 where the element is the first maximum along `axis`, else 0
/// (NaN counts as the maximum, as NumPy's argmax). Before opset 13 the
/// input is coerced to 2-D around `axis` (default 1) and the result viewed
/// back.
void hardmaxOneHot(OnnxConverter &converter, const onnx::NodeProto &,
                   GraphNode &node) {
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, "Hardmax");
  DType dtype = converter.requireDType(x, "Hardmax");
  int64_t rank = shape.size();
  auto it = node.attrs.find("axis");
  int64_t axis = it != node.attrs.end() ? std::get<int64_t>(it->second)
                 : converter.opset < 13 ? 1
                                        : -1;
  axis = resolvedAxis(axis, rank);
  if (numElements(shape) == 0) { // no element to mark
    becomeView(node, x, shape);
    return;
  }
  std::string operand = x;
  Shape operandShape = shape;
  bool coerced = converter.opset < 13 && axis != rank - 1;
  if (coerced) {
    operandShape = viewAs2D(shape, axis);
    operand = viewStep(converter, node, x, operandShape, "coerced");
    axis = 1;
  }
  int64_t operandRank = operandShape.size();
  std::string index =
      converter.addStep(node, "argmax", {operand}, "argmax",
                        {{"axis", axis}, {"keepdims", int64_t(1)}});
  std::string positions = converter.addStepConstant(
      node, "positions", indicesAlong(operandRank, axis, operandShape[axis]));
  std::string hot = converter.addStep(node, "eq", {positions, index}, "hot");
  node.op = "cast";
  node.inputs = {hot};
  node.attrs = {{"dtype", std::string(dtypeName(dtype))}};
  if (coerced)
    becomeView(node,
               converter.addStep(node, "cast", {hot}, "one_hot", node.attrs),
               shape);
}

/// CumSum: y[i] = sum of x[j] for j <= i along `axis` (j < i when
/// `exclusive`; j >= i, j > i when `reverse`). A sum over a [L, L] mask of
/// which j each i takes, whose select fuses into the reduction (L * L
/// terms per row). Only the order of the float additions differs from
/// ONNX's running sum. CumProd (opset 26): the same as a product.
void cumulativeSum(OnnxConverter &converter, const onnx::NodeProto &proto,
                   GraphNode &node) {
  const std::string &opType = proto.op_type();
  const bool product = opType == "CumProd";
  const std::string x = node.inputs.at(0);
  Shape shape = converter.requireShape(x, opType);
  DType dtype = converter.requireDType(x, opType);
  int64_t rank = shape.size();
  auto axisAttr = node.attrs.find("axis");
  if (axisAttr == node.attrs.end())
    throw Unsupported{opType + " needs its axis input"};
  int64_t axis = singleInteger(axisAttr->second, opType + "'s axis");
  axis = resolvedAxis(axis, rank);
  auto flag = [&](const char *name) {
    auto it = node.attrs.find(name);
    int64_t value = it == node.attrs.end() ? 0 : std::get<int64_t>(it->second);
    if (value != 0 && value != 1)
      throw Unsupported{opType + "'s " + name + " must be 0 or 1"};
    return value == 1;
  };
  bool exclusive = flag("exclusive"), reverse = flag("reverse");
  int64_t length = shape[axis];
  // A symbolic axis (a mask's running count over `seq`): its positions are
  // an iota of the run's length.
  std::optional<SymbolicShape> symbolic = converter.symbolicShapeOf(x);
  std::string symbolicLength;
  if (length < 0 && symbolic && !(*symbolic)[axis].isStatic())
    symbolicLength = converter.sizeText((*symbolic)[axis]);
  // Positions along `at` of a tensor of rank + 1 (dims of 1 elsewhere).
  auto positions = [&](int64_t at, const char *name) {
    if (symbolicLength.empty())
      return converter.addStepConstant(node, name,
                                       indicesAlong(rank + 1, at, length));
    SymbolicShape along(rank + 1, SymbolicSize::constant(1));
    along[at] = (*symbolic)[axis];
    std::string iota =
        converter.addStep(node, "iota", {}, std::string(name) + "_iota",
                          {{"size", symbolicLength}});
    return converter.addStep(node, "reshape", {iota}, name,
                             {{"dims", converter.dimsText(along)}});
  };
  // x viewed with a dim of 1 for i before its own (now j) dim.
  std::string terms;
  if (symbolic && !isStaticShape(*symbolic)) {
    SymbolicShape spread = *symbolic;
    spread.insert(spread.begin() + axis, SymbolicSize::constant(1));
    terms = converter.addStep(node, "reshape", {x}, "spread",
                              {{"dims", converter.dimsText(spread)}});
  } else {
    Shape spread = shape;
    spread.insert(spread.begin() + axis, 1);
    terms = viewStep(converter, node, x, spread, "spread");
  }
  std::string target = positions(axis, "target");
  std::string source = positions(axis + 1, "source");
  const char *compare =
      reverse ? (exclusive ? "gt" : "ge") : (exclusive ? "lt" : "le");
  std::string taken =
      converter.addStep(node, compare, {source, target}, "taken");
  // Terms left out are -0.0, the float sum's identity, so that a sum of
  // -0.0 stays -0.0 as in ONNX's running sum; but the empty sum that starts
  // an exclusive one is ONNX's +0. A product leaves out 1s.
  const double leftOutValue = product ? 1.0 : isFloat(dtype) ? -0.0 : 0.0;
  std::string identity;
  if (symbolicLength.empty()) {
    Shape alongTarget(rank + 1, 1);
    alongTarget[axis] = length;
    Tensor leftOut(dtype, alongTarget);
    for (int64_t i = 0; i < length; ++i)
      leftOut.set(i, leftOutValue);
    if (exclusive && length > 0 && !product)
      leftOut.set(reverse ? length - 1 : 0, 0.0);
    identity = converter.addStepConstant(node, "left_out", std::move(leftOut));
  } else {
    identity = converter.addStepConstant(node, "identity",
                                         scalarTensor(dtype, leftOutValue));
    if (exclusive && !product && isFloat(dtype)) {
      // +0 at the first position the sum starts from (the last, reversed).
      std::string first =
          reverse ? converter.addStep(
                        node, "add",
                        {converter.addStep(node, "dim_size", {}, "length",
                                           {{"size", symbolicLength}}),
                         converter.addStepConstant(
                             node, "minus_one", scalarTensor(DType::I64, -1))},
                        "last")
                  : converter.addStepConstant(node, "zero_index",
                                              scalarTensor(DType::I64, 0));
      identity = converter.addStep(
          node, "select",
          {converter.addStep(node, "eq", {target, first}, "starts"),
           converter.addStepConstant(node, "plus_zero",
                                     scalarTensor(dtype, 0.0)),
           identity},
          "left_out");
    }
  }
  std::string masked =
      converter.addStep(node, "select", {taken, terms, identity}, "terms");
  node.op = product ? "reduce_prod" : "reduce_sum";
  node.inputs = {masked};
  node.attrs = {{"axes", std::vector<int64_t>{axis + 1}},
                {"keepdims", int64_t(0)}};
}

/// NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss (the same on
/// log_softmax over dim 1, optionally also an output), as ONNX's reference
/// computes them: loss = -input[n, target, d...] * weight[target] (0 where
/// the target is ignore_index), then none, sum, or mean = sum(loss) /
/// sum(weights) (a weight of 1 each without `weight`).
void likelihoodLoss(OnnxConverter &converter, const onnx::NodeProto &proto,
                    GraphNode &node) {
  const bool softmax = proto.op_type() == "SoftmaxCrossEntropyLoss";
  if (node.inputs.size() < 2 || node.inputs[0].empty() ||
      node.inputs[1].empty())
    throw Unsupported{proto.op_type() + " takes an input and a target"};
  std::string input = node.inputs[0];
  const std::string target = node.inputs[1];
  const std::string weight = node.inputs.size() > 2 ? node.inputs[2] : "";
  Shape shape = converter.requireShape(input, proto.op_type());
  Shape targetShape = converter.requireShape(target, proto.op_type());
  DType dtype = converter.requireDType(input, proto.op_type());
  int64_t rank = shape.size();
  if (rank < 2 || static_cast<int64_t>(targetShape.size()) != rank - 1)
    throw Unsupported{"the input must be [N, C, d1, ...] and the target "
                      "[N, d1, ...]"};
  std::string reduction = "mean";
  if (auto it = node.attrs.find("reduction"); it != node.attrs.end())
    reduction = std::get<std::string>(it->second);
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    throw Unsupported{"reduction must be mean, sum or none, not " + reduction};
  std::optional<int64_t> ignoreIndex;
  if (auto it = node.attrs.find("ignore_index"); it != node.attrs.end())
    ignoreIndex = std::get<int64_t>(it->second);
  std::vector<std::string> outputs = node.outputs;
  node.outputs.resize(1);
  if (softmax) {
    std::string logProb = converter.addStep(node, "log_softmax", {input},
                                            "log_prob", {{"axis", int64_t(1)}});
    if (outputs.size() > 1 && !outputs[1].empty())
      converter.addOutputStep(
          node, "reshape", {logProb}, outputs[1],
          {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
           {"allowzero", int64_t(1)}});
    input = logProb;
  } else if (outputs.size() > 1) {
    throw Unsupported{"NegativeLogLikelihoodLoss has one output"};
  }
  DType targetType = converter.requireDType(target, "the target");
  auto constant = [&](const std::string &suffix, DType type, double value) {
    return converter.addStepConstant(node, suffix, scalarTensor(type, value));
  };
  std::string ignored, safeTarget = target;
  if (ignoreIndex) {
    ignored =
        converter.addStep(node, "eq",
                          {target, constant("ignore_index", targetType,
                                            static_cast<double>(*ignoreIndex))},
                          "ignored");
    safeTarget = converter.addStep(
        node, "select", {ignored, constant("first", targetType, 0), target},
        "safe_target");
  }
  Shape column = targetShape;
  column.insert(column.begin() + 1, 1);
  FlatGather operands = flatGatherOperands(
      converter, node, input,
      viewStep(converter, node, safeTarget, column, "target_column"),
      targetType, shape, column, 1);
  std::string picked =
      viewStep(converter, node,
               converter.addStep(node, "gather",
                                 {operands.flatData, operands.linearIndices},
                                 "picked", {{"axis", int64_t(0)}}),
               targetShape, "picked_view");
  std::string loss = converter.addStep(node, "neg", {picked}, "negated");
  std::string zero = constant("no_loss", dtype, 0);
  if (ignoreIndex)
    loss = converter.addStep(node, "select", {ignored, zero, loss}, "kept");
  std::string weights;
  if (!weight.empty()) {
    // Clipped into range, as the reference's np.take(mode="clip").
    std::string clipped = converter.addStep(
        node, "clip",
        {safeTarget, constant("low", targetType, 0),
         constant("high", targetType, static_cast<double>(shape[1] - 1))},
        "weight_index");
    weights = converter.addStep(node, "gather", {weight, clipped}, "weights",
                                {{"axis", int64_t(0)}});
    if (ignoreIndex)
      weights = converter.addStep(node, "select", {ignored, zero, weights},
                                  "kept_weights");
    loss = converter.addStep(node, "mul", {weights, loss}, "weighted");
  } else if (ignoreIndex) {
    weights = converter.addStep(
        node, "select", {ignored, zero, constant("one", dtype, 1)}, "counted");
  }
  std::vector<int64_t> every(rank - 1);
  for (int64_t d = 0; d < rank - 1; ++d)
    every[d] = d;
  std::map<std::string, AttrValue> all = {{"axes", every},
                                          {"keepdims", int64_t(0)}};
  if (reduction == "none") {
    becomeView(node, loss, targetShape);
  } else if (reduction == "sum" || weights.empty()) {
    node.op = reduction == "sum" ? "reduce_sum" : "reduce_mean";
    node.inputs = {loss};
    node.attrs = all;
  } else {
    node.op = "div";
    node.inputs = {
        converter.addStep(node, "reduce_sum", {loss}, "total", all),
        converter.addStep(node, "reduce_sum", {weights}, "total_weight", all)};
    node.attrs.clear();
  }
}

/// TopK: each element's rank along `axis` is the number of elements that
/// come before it (larger, or for largest = 0 smaller, with NaN above
/// every number as NumPy sorts it; equal ones by lower index), and output
/// position r takes the element of rank r: the order of ONNX's reference,
/// whose sort is stable. Work: the axis' length squared per row (as the
/// scatters).
void topK(OnnxConverter &converter, const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const Shape shape = converter.requireShape(x, "TopK");
  const DType dtype = converter.requireDType(x, "TopK");
  const int64_t rank = shape.size();
  if (rank == 0)
    throw Unsupported{"TopK's input must have a rank of 1 or more"};
  const int64_t axis = resolvedAxis(intAttr(node, "axis", -1), rank);
  int64_t k;
  if (converter.opset < 10) {
    k = intAttr(node, "k", -1);
  } else {
    if (node.inputs.size() < 2 || node.inputs[1].empty())
      throw Unsupported{"TopK needs its K input"};
    std::vector<int64_t> ks = integersOf(
        converter.constantValue(node.inputs[1], "TopK's K"), "TopK's K");
    if (ks.size() != 1)
      throw Unsupported{"TopK's K must be one integer"};
    k = ks[0];
  }
  const int64_t length = shape[axis];
  if (k < 0 || k > length)
    throw Unsupported{"TopK's K (" + std::to_string(k) + ") must be in [0, " +
                      std::to_string(length) + "]"};
  const bool largest = intAttr(node, "largest", 1) != 0;
  if (!isFloat(dtype) && !isInteger(dtype))
    throw Unsupported{std::string("TopK of ") + dtypeName(dtype) +
                      " is not supported"};
  checkConstantElements(length * std::max<int64_t>(length, k),
                        "TopK's comparisons per row");
  // Element i along `axis`, element j along a new dim after it.
  Shape alongI = shape, alongJ = shape;
  alongI.insert(alongI.begin() + axis + 1, 1);
  alongJ.insert(alongJ.begin() + axis, 1);
  const std::string xi = viewStep(converter, node, x, alongI, "as_i");
  const std::string xj = viewStep(converter, node, x, alongJ, "as_j");
  const std::string indexI = converter.addStepConstant(
      node, "index_i", indicesAlong(rank + 1, axis, length));
  const std::string indexJ = converter.addStepConstant(
      node, "index_j", indicesAlong(rank + 1, axis + 1, length));
  // j before i: j's value beyond i's (NaN beyond numbers), or equal and j
  // earlier.
  std::string beyond =
      converter.addStep(node, largest ? "gt" : "lt", {xj, xi}, "value_beyond");
  std::string same = converter.addStep(node, "eq", {xj, xi}, "value_same");
  if (isFloat(dtype)) {
    std::string nanI = converter.addStep(node, "isnan", {xi}, "nan_i");
    std::string nanJ = converter.addStep(node, "isnan", {xj}, "nan_j");
    // largest: a NaN j comes before a number i; smallest: a number j comes
    // before a NaN i.
    std::string nanOrder =
        largest
            ? converter.addStep(
                  node, "and",
                  {nanJ, converter.addStep(node, "not", {nanI}, "number_i")},
                  "nan_before_number")
            : converter.addStep(
                  node, "and",
                  {nanI, converter.addStep(node, "not", {nanJ}, "number_j")},
                  "number_before_nan");
    beyond = converter.addStep(node, "or", {beyond, nanOrder}, "order_beyond");
    same = converter.addStep(
        node, "or",
        {same, converter.addStep(node, "and", {nanI, nanJ}, "both_nan")},
        "order_same");
  }
  std::string before = converter.addStep(
      node, "or",
      {beyond,
       converter.addStep(node, "and",
                         {same, converter.addStep(node, "lt", {indexJ, indexI},
                                                  "index_earlier")},
                         "tie_earlier")},
      "comes_before");
  const std::string one =
      converter.addStepConstant(node, "one", scalarTensor(DType::I64, 1));
  const std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(DType::I64, 0));
  std::string ranks = converter.addStep(
      node, "reduce_sum",
      {converter.addStep(node, "select", {before, one, zero}, "counted")},
      "ranks",
      {{"axes", std::vector<int64_t>{axis + 1}}, {"keepdims", int64_t(0)}});
  // Output position r (along a new dim after `axis`) takes rank r.
  std::string match = converter.addStep(
      node, "eq",
      {viewStep(converter, node, ranks, alongI, "ranks_as_i"),
       converter.addStepConstant(node, "positions",
                                 indicesAlong(rank + 1, axis + 1, k))},
      "at_position");
  std::map<std::string, AttrValue> overI = {
      {"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t(0)}};
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) {
    std::string picked = converter.addStep(
        node, "select", {match, indexI, zero}, "index_picked");
    converter.addOutputStep(node, "reduce_sum", {picked}, node.outputs[1],
                            overI);
    Shape result = shape;
    result[axis] = k;
    converter.recordValue(node.outputs[1], result, DType::I64);
  }
  node.outputs.resize(1);
  node.op = "reduce_sum";
  node.inputs = {
      converter.addStep(node, "select",
                        {match, xi,
                         converter.addStepConstant(
                             node, "nothing", scatterIdentity(dtype, "none"))},
                        "value_picked")};
  node.attrs = overI;
}

/// ReduceMax and ReduceMin of booleans (opset 20): of their u8 values.
void booleanExtremes(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  if (converter.requireDType(node.inputs.at(0), proto.op_type()) != DType::I1)
    return;
  std::string bytes = converter.addStep(node, "cast", {node.inputs[0]}, "bytes",
                                        {{"dtype", std::string("u8")}});
  std::vector<std::string> inputs = node.inputs;
  inputs[0] = bytes;
  std::string reduced =
      converter.addStep(node, node.op, inputs, "reduced", node.attrs);
  node.op = "cast";
  node.inputs = {reduced};
  node.attrs = {{"dtype", std::string("i1")}};
}

} // namespace

void registerReductionOps(OnnxRegistry &registry) {
  registry.on("Softmax", "softmax")
      .attr("axis")
      .rewrite(coerceTo2DBeforeOpset13);
  registry.on("LogSoftmax", "log_softmax")
      .attr("axis")
      .rewrite(coerceTo2DBeforeOpset13);
  registry.on("Hardmax", "cast").attr("axis").rewrite(hardmaxOneHot);
  registry.on("ArgMax", "argmax")
      .attrs({"axis", "keepdims", "select_last_index"});
  registry.on("ArgMin", "argmin")
      .attrs({"axis", "keepdims", "select_last_index"});
  // ReduceSum's axes became an input in opset 13, the others' in 18.
  registry.on("ReduceSum", "reduce_sum")
      .attr("axes", kOldestOpset, 12)
      .attr("keepdims")
      .attr("noop_with_empty_axes", 13)
      .constantInput(1, "axes", 13);
  auto reduction = [&](const char *name, const char *graphOp,
                       RewriteNode rewrite) {
    registry.on(name, graphOp)
        .attr("axes", kOldestOpset, 17)
        .attr("keepdims")
        .attr("noop_with_empty_axes", 18)
        .constantInput(1, "axes", 18)
        .rewrite(rewrite);
  };
  reduction("ReduceMean", "reduce_mean", nullptr);
  reduction("ReduceMax", "reduce_max", booleanExtremes);
  reduction("ReduceMin", "reduce_min", booleanExtremes);
  reduction("ReduceProd", "reduce_prod", nullptr);
  reduction("ReduceL2", "reduce_l2", nullptr);
  reduction("ReduceLogSumExp", "reduce_log_sum_exp", nullptr);
  // Reductions ONNX defines by others.
  reduction("ReduceSumSquare", "reduce_sum", sumOfSquares);
  reduction("ReduceL1", "reduce_sum", sumOfMagnitudes);
  reduction("ReduceLogSum", "reduce_sum", logOfSum);
  registry.on("CumSum", "reduce_sum", 11)
      .attrs({"exclusive", "reverse"})
      .constantInput(1, "axis")
      .rewrite(cumulativeSum);
  registry.on("CumProd", "reduce_prod", 26)
      .attrs({"exclusive", "reverse"})
      .constantInput(1, "axis")
      .rewrite(cumulativeSum);
  registry.on("TopK", "reduce_sum")
      .attr("axis")
      .attr("k", kOldestOpset, 9)
      .attr("largest", 11)
      .attr("sorted", 11)
      .readsConstant(1)
      .rewrite(topK);
  for (const char *loss :
       {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
    registry.on(loss, "div", 13)
        .attrs({"reduction", "ignore_index"})
        .rewrite(likelihoodLoss);
}

} // namespace fusec::onnx_import
