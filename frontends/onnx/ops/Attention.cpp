//===- Attention.cpp - ONNX attention ops ---------------------------------===//
//
// Attention (opset 23) and RotaryEmbedding.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxConverter.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <variant>

namespace fusec::onnx_import {

namespace {

/// The Attention nodes one fuse.attention computes (the graph op
/// "attention"): no qk_matmul_output, softcap or key padding
/// (nonpad_kv_seqlen), softmax in f32 (or the operands' dtype when that is
/// f32 or f64: the kernel's own precision), a sliding window only on a
/// causal mask, a mask that covers every key, and a past key and value
/// (4-D inputs) concatenated before the new ones, the causal diagonal
/// offset by the past's length. Returns false, having changed nothing, for
/// any other (which attention() decomposes).
bool fusedAttention(OnnxConverter &converter, GraphNode &node, DType dtype,
                    const Shape &qShape, const Shape &kShape,
                    const Shape &vShape) {
  auto input = [&](size_t i) { return nameOrEmpty(node.inputs, i); };
  auto output = [&](size_t i) { return nameOrEmpty(node.outputs, i); };
  const std::string pastKey = input(4), pastValue = input(5);
  if (pastKey.empty() != pastValue.empty() || !input(6).empty() ||
      !output(3).empty() || floatAttr(node, "softcap", 0.0f) != 0 ||
      (!pastKey.empty() && qShape.size() != 4))
    return false;
  if (node.attrs.count("softmax_precision")) {
    std::optional<DType> precision = dtypeOfOnnx(
        static_cast<int32_t>(intAttr(node, "softmax_precision", 0)));
    DType kernelPrecision = dtype == DType::F64 ? DType::F64 : DType::F32;
    if (precision != kernelPrecision)
      return false;
  }
  const bool causal = intAttr(node, "is_causal", 0) != 0;
  const int64_t left = intAttr(node, "left_window_size", -1),
                right = intAttr(node, "right_window_size", -1);
  if (right != -1 || left < -1 || (left >= 0 && !causal))
    return false;
  const bool heads3d = qShape.size() == 3;
  const int64_t qHeads = heads3d ? intAttr(node, "q_num_heads", 0) : qShape[1];
  const int64_t kvHeads =
      heads3d ? intAttr(node, "kv_num_heads", 0) : kShape[1];
  if (qHeads < 1 || kvHeads < 1 || qHeads % kvHeads != 0)
    return false;
  const int64_t headSize = heads3d ? qShape[2] / qHeads : qShape[3];
  const int64_t valueHeadSize = heads3d ? vShape[2] / kvHeads : vShape[3];
  const int64_t queries = qShape[heads3d ? 1 : 2],
                keys = kShape[heads3d ? 1 : 2];
  if ((heads3d && (qShape[2] % qHeads != 0 || kShape[2] != kvHeads * headSize ||
                   vShape[2] % kvHeads != 0)) ||
      (!heads3d && (kShape[1] != kvHeads || kShape[3] != headSize ||
                    vShape[1] != kvHeads)) ||
      kShape[0] != qShape[0] || vShape[0] != qShape[0] ||
      vShape[heads3d ? 1 : 2] != keys || headSize > 256 || valueHeadSize > 256)
    return false; // attention() reports what is wrong, if anything
  int64_t pastLength = 0;
  if (!pastKey.empty()) {
    Shape pastKeyShape = converter.requireShape(pastKey, "past_key"),
          pastValueShape = converter.requireShape(pastValue, "past_value");
    if (pastKeyShape.size() != 4 || pastValueShape.size() != 4 ||
        pastKeyShape != Shape{qShape[0], kvHeads, pastKeyShape[2], headSize} ||
        pastValueShape !=
            Shape{qShape[0], kvHeads, pastKeyShape[2], valueHeadSize})
      return false;
    pastLength = pastKeyShape[2];
  }
  const int64_t allKeys = pastLength + keys;
  const std::string mask = input(3);
  if (!mask.empty()) {
    Shape maskShape = converter.requireShape(mask, "Attention's attn_mask");
    DType maskType = converter.requireDType(mask, "Attention's attn_mask");
    std::optional<Shape> scores =
        broadcastShapes(maskShape, Shape{qShape[0], qHeads, queries, allKeys});
    // A mask shorter than the keys hides the rest (attention() pads it).
    if ((maskType != DType::I1 && maskType != dtype) || maskShape.size() > 4 ||
        maskShape.empty() || maskShape.back() != allKeys || !scores ||
        *scores != Shape{qShape[0], qHeads, queries, allKeys})
      return false;
  }
  // The cache: past then new keys and values (present_key, present_value).
  std::string key = input(1), value = input(2);
  if (!pastKey.empty()) {
    key = converter.addStep(node, "concat", {pastKey, key}, "present_key",
                            {{"axis", int64_t(2)}});
    value = converter.addStep(node, "concat", {pastValue, value},
                              "present_value", {{"axis", int64_t(2)}});
  }
  for (auto [index, present, dim] :
       {std::tuple(size_t(1), key, headSize),
        std::tuple(size_t(2), value, valueHeadSize)}) {
    if (output(index).empty())
      continue;
    Shape shape = heads3d ? Shape{qShape[0], allKeys, kvHeads * dim}
                          : Shape{qShape[0], kvHeads, allKeys, dim};
    converter.recordValue(output(index), shape, dtype);
    converter.addOutputStep(
        node, "reshape", {present}, output(index),
        {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
         {"allowzero", int64_t(1)}});
  }
  const double scale = node.attrs.count("scale")
                           ? floatAttr(node, "scale", 1.0f)
                           : 1.0 / std::sqrt(static_cast<double>(headSize));
  node.op = "attention";
  node.inputs = {input(0), key, value};
  if (!mask.empty())
    node.inputs.push_back(mask);
  node.outputs.resize(1);
  node.attrs = {{"num_heads", qHeads},
                {"kv_num_heads", kvHeads},
                {"head_dim", headSize},
                {"value_head_dim", valueHeadSize},
                {"scale", scale},
                {"causal", int64_t(causal)},
                {"causal_offset", pastLength},
                {"window_left", left},
                {"zero_masked_rows", int64_t(1)}};
  converter.recordValue(node.outputs[0],
                        heads3d
                            ? Shape{qShape[0], queries, qHeads * valueHeadSize}
                            : Shape{qShape[0], qHeads, queries, valueHeadSize},
                        dtype);
  return true;
}

/// Attention (opsets 23-25): scaled dot-product attention as ONNX's
/// reference evaluator computes it, in graph ops. 3-D inputs are split into
/// heads; the past key and value are concatenated before the new ones
/// (present_key, present_value); K and V heads are repeated for grouped
/// queries; Q and K are each scaled by sqrt(scale); the bias is the mask
/// (a boolean one as 0 / -inf, padded to the keys with -inf), the causal
/// and sliding-window frontiers (offset by the past's length, or per batch
/// by nonpad_kv_seqlen - queries) and the padding of nonpad_kv_seqlen; a
/// query row whose bias masks every key gives zeros, not NaN.
void attention(OnnxConverter &converter, const onnx::NodeProto &proto,
               GraphNode &node) {
  auto input = [&](size_t i) { return nameOrEmpty(node.inputs, i); };
  std::string q = input(0), k = input(1), v = input(2);
  const std::string mask = input(3), pastKey = input(4), pastValue = input(5),
                    nonpad = input(6);
  if (k.empty() || v.empty())
    throw Unsupported{"Attention takes Q, K and V"};
  if (pastKey.empty() != pastValue.empty())
    throw Unsupported{"past_key and past_value come together"};
  if (!nonpad.empty() && converter.opset < 24)
    throw Unsupported{"nonpad_kv_seqlen is an input from opset 24 on"};
  if (!nonpad.empty() && !pastKey.empty())
    throw Unsupported{"nonpad_kv_seqlen cannot be combined with past_key"};
  const DType dtype = converter.requireDType(q, "Attention");
  if (!isFloat(dtype))
    throw Unsupported{std::string("Attention of ") + dtypeName(dtype) +
                      " is not supported (floats)"};
  for (const std::string &other : {k, v})
    if (converter.requireDType(other, "Attention") != dtype)
      throw Unsupported{"Q, K and V must have one dtype"};
  Shape qShape = converter.requireShape(q, "Attention"),
        kShape = converter.requireShape(k, "Attention"),
        vShape = converter.requireShape(v, "Attention");
  const size_t rank = qShape.size();
  if ((rank != 3 && rank != 4) || kShape.size() != rank ||
      vShape.size() != rank)
    throw Unsupported{"Q, K and V must all be 3-D or all 4-D"};
  const bool heads3d = rank == 3;
  const bool qHeadsGiven = node.attrs.count("q_num_heads") > 0,
             kvHeadsGiven = node.attrs.count("kv_num_heads") > 0;
  if (!heads3d && converter.opset >= 25 && (qHeadsGiven || kvHeadsGiven))
    throw Unsupported{"q_num_heads and kv_num_heads are for 3-D inputs only"};
  if (heads3d && (!qHeadsGiven || !kvHeadsGiven))
    throw Unsupported{"3-D inputs need q_num_heads and kv_num_heads"};
  if (fusedAttention(converter, node, dtype, qShape, kShape, vShape))
    return;
  // 3-D [B, S, heads * size] becomes [B, heads, S, size].
  auto splitHeads = [&](std::string &value, Shape &shape, int64_t heads,
                        const std::string &suffix) {
    if (heads < 1 || shape[2] % heads != 0)
      throw Unsupported{"a hidden size of " + std::to_string(shape[2]) +
                        " does not split into " + std::to_string(heads) +
                        " heads"};
    Shape split = {shape[0], shape[1], heads, shape[2] / heads};
    value = converter.addStep(
        node, "transpose",
        {viewStep(converter, node, value, split, suffix + "_split")},
        suffix + "_heads", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    shape = {split[0], split[2], split[1], split[3]};
  };
  if (heads3d) {
    int64_t qHeads = intAttr(node, "q_num_heads", 0),
            kvHeads = intAttr(node, "kv_num_heads", 0);
    splitHeads(q, qShape, qHeads, "q");
    splitHeads(k, kShape, kvHeads, "k");
    splitHeads(v, vShape, kvHeads, "v");
  }
  const int64_t batch = qShape[0], qHeads = qShape[1], queries = qShape[2],
                headSize = qShape[3], kvHeads = kShape[1];
  if (kShape[0] != batch || vShape[0] != batch)
    throw Unsupported{"Q, K and V must have one batch size"};
  if (kShape[3] != headSize)
    throw Unsupported{"K's head size " + std::to_string(kShape[3]) +
                      " is not Q's " + std::to_string(headSize)};
  if (vShape[1] != kvHeads || vShape[2] != kShape[2])
    throw Unsupported{"V must have K's heads and sequence length"};
  if (kvHeads < 1 || qHeads % kvHeads != 0)
    throw Unsupported{std::to_string(qHeads) +
                      " query heads do not group "
                      "over " +
                      std::to_string(kvHeads) + " key heads"};
  // The keys: the past ones, then the new ones.
  int64_t pastLength = 0;
  auto withPast = [&](std::string &value, Shape &shape, const std::string &past,
                      const std::string &suffix) {
    if (past.empty())
      return;
    Shape pastShape = converter.requireShape(past, "Attention");
    if (pastShape.size() != 4 || pastShape[0] != shape[0] ||
        pastShape[1] != shape[1] || pastShape[3] != shape[3])
      throw Unsupported{"past_key and past_value must be [" +
                        std::to_string(shape[0]) + ", " +
                        std::to_string(shape[1]) + ", past, " +
                        std::to_string(shape[3]) + "]"};
    pastLength = pastShape[2];
    value = converter.addStep(node, "concat", {past, value}, suffix,
                              {{"axis", int64_t(2)}});
    shape[2] += pastShape[2];
  };
  withPast(k, kShape, pastKey, "present_key");
  withPast(v, vShape, pastValue, "present_value");
  const int64_t keys = kShape[2];
  auto outputOf = [&](size_t i) { return nameOrEmpty(node.outputs, i); };
  auto emitOutput = [&](size_t i, const std::string &value,
                        const Shape &shape) {
    if (outputOf(i).empty())
      return;
    converter.recordValue(outputOf(i), shape, dtype);
    converter.addOutputStep(
        node, "reshape", {value}, outputOf(i),
        {{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
         {"allowzero", int64_t(1)}});
  };
  emitOutput(1, k, kShape);
  emitOutput(2, v, vShape);
  // Grouped queries: each key head repeated for its group of query heads.
  auto repeatHeads = [&](const std::string &value, const Shape &shape,
                         const std::string &suffix) {
    if (qHeads == kvHeads)
      return value;
    int64_t group = qHeads / kvHeads;
    std::string grouped = converter.addStep(
        node, "expand",
        {viewStep(converter, node, value,
                  {shape[0], kvHeads, 1, shape[2], shape[3]},
                  suffix + "_grouped")},
        suffix + "_repeated",
        {{"shape",
          std::vector<int64_t>{shape[0], kvHeads, group, shape[2], shape[3]}}});
    return viewStep(converter, node, grouped,
                    {shape[0], qHeads, shape[2], shape[3]},
                    suffix + "_per_query_head");
  };
  const std::string keysRepeated = repeatHeads(k, kShape, "k");
  const std::string valuesRepeated = repeatHeads(v, vShape, "v");

  // Q and K each scaled by sqrt(scale) (1 / sqrt(head size) by default),
  // rounded to the dtype as the reference does.
  double scale = node.attrs.count("scale")
                     ? floatAttr(node, "scale", 1.0f)
                     : 1.0 / std::sqrt(static_cast<double>(headSize));
  std::string rootScale = converter.addStepConstant(
      node, "root_scale", scalarTensor(dtype, std::sqrt(scale)));
  std::string scaledQ =
      converter.addStep(node, "mul", {q, rootScale}, "q_scaled");
  std::string scaledKT = converter.addStep(
      node, "transpose",
      {converter.addStep(node, "mul", {keysRepeated, rootScale}, "k_scaled")},
      "k_transposed", {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  std::string scores =
      converter.addStep(node, "matmul", {scaledQ, scaledKT}, "scores");
  const Shape scoreShape = {batch, qHeads, queries, keys};
  const double softcap = floatAttr(node, "softcap", 0.0f);
  if (softcap > 0) {
    std::string cap = converter.addStepConstant(node, "softcap",
                                                scalarTensor(dtype, softcap));
    scores = converter.addStep(
        node, "mul",
        {converter.addStep(
             node, "tanh",
             {converter.addStep(node, "div", {scores, cap}, "capped_scaled")},
             "capped_tanh"),
         cap},
        "capped");
  }

  // The bias: 0 where a key is attended, -inf where not, plus a float mask.
  const std::string zero =
      converter.addStepConstant(node, "zero", scalarTensor(dtype, 0.0));
  const std::string minusInfinity = converter.addStepConstant(
      node, "minus_infinity",
      scalarTensor(dtype, -std::numeric_limits<double>::infinity()));
  std::string bias;
  auto addBias = [&](const std::string &term, const std::string &suffix) {
    bias = bias.empty() ? term
                        : converter.addStep(node, "add", {bias, term}, suffix);
  };
  auto allowedBias = [&](const std::string &allowed,
                         const std::string &suffix) {
    return converter.addStep(node, "select", {allowed, zero, minusInfinity},
                             suffix);
  };
  if (!mask.empty()) {
    Shape maskShape = converter.requireShape(mask, "Attention's attn_mask");
    DType maskType = converter.requireDType(mask, "Attention's attn_mask");
    if (maskType != DType::I1 && maskType != dtype)
      throw Unsupported{"attn_mask must be bool or Q's dtype"};
    if (maskShape.empty() || maskShape.size() > 4 || maskShape.back() > keys)
      throw Unsupported{"attn_mask must broadcast to [" +
                        formatShape(scoreShape) + "] (its last dim at most " +
                        std::to_string(keys) + ")"};
    std::string padded = mask;
    if (maskShape.back() < keys) {
      // A mask shorter than the keys leaves the rest masked.
      std::vector<int64_t> pads(2 * maskShape.size(), 0);
      pads.back() = keys - maskShape.back();
      padded = converter.addStep(
          node, "pad", {mask}, "mask_padded",
          {{"pads", pads},
           {"constant_value", maskType == DType::I1
                                  ? 0.0
                                  : -std::numeric_limits<double>::infinity()}});
    }
    addBias(maskType == DType::I1 ? allowedBias(padded, "mask_bias") : padded,
            "mask_bias");
  }
  // Each query's absolute position: its index plus the past's length, or
  // per batch nonpad_kv_seqlen - queries (then [B, 1, S, 1]).
  std::string position;
  auto queryPositions = [&] {
    if (!position.empty())
      return position;
    if (nonpad.empty()) {
      Tensor positions(DType::I64, {queries, 1});
      for (int64_t i = 0; i < queries; ++i)
        positions.set(i, static_cast<double>(i + pastLength));
      return position =
                 converter.addStepConstant(node, "query_positions", positions);
    }
    std::string offset = converter.addStep(
        node, "sub",
        {viewStep(converter, node, nonpad, {batch, 1, 1, 1}, "nonpad_column"),
         converter.addStepConstant(node, "queries",
                                   scalarTensor(DType::I64, queries))},
        "query_offset");
    return position = converter.addStep(
               node, "add",
               {offset, converter.addStepConstant(node, "query_indices",
                                                  indicesAlong(4, 2, queries))},
               "query_positions");
  };
  const std::string keyIndices =
      converter.addStepConstant(node, "key_indices", indicesAlong(2, 1, keys));
  if (!nonpad.empty() &&
      converter.requireDType(nonpad, "nonpad_kv_seqlen") != DType::I64)
    throw Unsupported{"nonpad_kv_seqlen must be int64"};
  if (intAttr(node, "is_causal", 0) != 0)
    addBias(allowedBias(converter.addStep(node, "le",
                                          {keyIndices, queryPositions()},
                                          "causal_allowed"),
                        "causal_bias"),
            "causal_bias_added");
  const int64_t left = intAttr(node, "left_window_size", -1),
                right = intAttr(node, "right_window_size", -1);
  if (left < -1 || right < -1)
    throw Unsupported{"window sizes must be -1 or nonnegative"};
  if (left >= 0 || right >= 0) {
    std::string distance = converter.addStep(
        node, "sub", {queryPositions(), keyIndices}, "key_distance");
    std::string allowed;
    auto allow = [&](const std::string &test) {
      allowed = allowed.empty()
                    ? test
                    : converter.addStep(node, "and", {allowed, test},
                                        "window_allowed");
    };
    if (left >= 0)
      allow(converter.addStep(
          node, "le",
          {distance,
           converter.addStepConstant(node, "left_window",
                                     scalarTensor(DType::I64, double(left)))},
          "left_allowed"));
    if (right >= 0)
      allow(converter.addStep(
          node, "ge",
          {distance,
           converter.addStepConstant(node, "right_window",
                                     scalarTensor(DType::I64, -double(right)))},
          "right_allowed"));
    addBias(allowedBias(allowed, "window_bias"), "window_bias_added");
  }
  if (!nonpad.empty())
    addBias(allowedBias(
                converter.addStep(node, "lt",
                                  {viewStep(converter, node, keyIndices,
                                            {1, 1, 1, keys}, "key_row"),
                                   viewStep(converter, node, nonpad,
                                            {batch, 1, 1, 1}, "valid_keys")},
                                  "key_valid"),
                "padding_bias"),
            "padding_bias_added");
  std::string biased =
      bias.empty()
          ? scores
          : converter.addStep(node, "add", {scores, bias}, "biased_scores");

  // Softmax over the keys, in softmax_precision if given; rows the bias
  // masks entirely are zeros.
  std::string logits = biased;
  DType softmaxType = dtype;
  if (node.attrs.count("softmax_precision")) {
    int64_t precision = intAttr(node, "softmax_precision", 0);
    std::optional<DType> type = dtypeOfOnnx(static_cast<int32_t>(precision));
    if (!type || !isFloat(*type))
      throw Unsupported{"softmax_precision must be a float type, not " +
                        std::to_string(precision)};
    softmaxType = *type;
    if (softmaxType != dtype)
      logits = converter.addStep(node, "cast", {biased}, "softmax_input",
                                 {{"dtype", std::string(dtypeName(*type))}});
  }
  std::string probabilities = converter.addStep(
      node, "softmax", {logits}, "probabilities", {{"axis", int64_t(-1)}});
  if (!bias.empty()) {
    std::string rowMasked = converter.addStep(
        node, "eq",
        {converter.addStep(
             node, "reduce_max", {bias}, "bias_row_max",
             {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(1)}}),
         minusInfinity},
        "row_masked");
    probabilities = converter.addStep(
        node, "select",
        {rowMasked,
         converter.addStepConstant(node, "softmax_zero",
                                   scalarTensor(softmaxType, 0.0)),
         probabilities},
        "probabilities_guarded");
  }
  if (softmaxType != dtype)
    probabilities =
        converter.addStep(node, "cast", {probabilities}, "probabilities_cast",
                          {{"dtype", std::string(dtypeName(dtype))}});
  switch (intAttr(node, "qk_matmul_output_mode", 0)) {
  case 0:
  case 1:
    emitOutput(3, scores, scoreShape);
    break;
  case 2:
    emitOutput(3, biased, scoreShape);
    break;
  case 3:
    emitOutput(3, probabilities, scoreShape);
    break;
  default:
    throw Unsupported{"qk_matmul_output_mode must be 0 to 3"};
  }
  node.outputs.resize(1);
  node.attrs.clear();
  // ONNX 1.12 infers nothing of an op newer than it.
  converter.recordValue(node.outputs[0],
                        heads3d ? Shape{batch, queries, qHeads * vShape[3]}
                                : Shape{batch, qHeads, queries, vShape[3]},
                        dtype);
  if (!heads3d) {
    node.op = "matmul";
    node.inputs = {probabilities, valuesRepeated};
    return;
  }
  std::string attended = converter.addStep(
      node, "matmul", {probabilities, valuesRepeated}, "attended");
  std::string merged =
      converter.addStep(node, "transpose", {attended}, "attended_by_query",
                        {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  becomeView(node, merged, {batch, queries, qHeads * vShape[3]});
}

/// RotaryEmbedding (opset 23): the first rotary_embedding_dim values of
/// each head rotated in pairs (halves, or neighbours when interleaved) by
/// the cos and sin caches at each token's position, the rest as they are;
/// op by op in the input's dtype as ONNX's reference computes it.
void rotaryEmbedding(OnnxConverter &converter, const onnx::NodeProto &proto,
                     GraphNode &node) {
  if (node.inputs.size() < 3 || node.inputs[1].empty() ||
      node.inputs[2].empty())
    throw Unsupported{"RotaryEmbedding takes X, cos_cache and sin_cache"};
  const std::string x = node.inputs[0];
  std::string cosCache = node.inputs[1], sinCache = node.inputs[2];
  const std::string positions = node.inputs.size() > 3 ? node.inputs[3] : "";
  const std::string &opType = proto.op_type();
  const Shape shape = converter.requireShape(x, opType);
  const DType dtype = converter.requireDType(x, opType);
  if (!isFloat(dtype))
    throw Unsupported{opType + " takes floats"};
  // The input as [B, S, heads, head size].
  std::string tokens;
  Shape laid;
  if (shape.size() == 4) {
    tokens = converter.addStep(node, "transpose", {x}, "by_token",
                               {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    laid = {shape[0], shape[2], shape[1], shape[3]};
  } else if (shape.size() == 3) {
    int64_t heads = intAttr(node, "num_heads", 0);
    if (heads < 1 || shape[2] % heads != 0)
      throw Unsupported{"a 3-D input needs num_heads dividing its hidden "
                        "size " +
                        std::to_string(shape[2])};
    laid = {shape[0], shape[1], heads, shape[2] / heads};
    tokens = viewStep(converter, node, x, laid, "by_head");
  } else {
    throw Unsupported{opType + "'s input must be 3-D or 4-D"};
  }
  const int64_t headSize = laid[3];
  int64_t rotated = intAttr(node, "rotary_embedding_dim", 0);
  if (rotated == 0)
    rotated = headSize;
  if (rotated < 2 || rotated > headSize || rotated % 2 != 0)
    throw Unsupported{"rotary_embedding_dim must be even and at most the head "
                      "size " +
                      std::to_string(headSize)};
  const int64_t half = rotated / 2;
  const bool interleaved = intAttr(node, "interleaved", 0) != 0;
  // The caches at each token: [B, S, 1, half].
  auto atTokens = [&](std::string &cache, const std::string &suffix) {
    if (converter.requireDType(cache, opType) != dtype)
      throw Unsupported{"the caches must have the input's dtype"};
    if (!positions.empty())
      cache =
          converter.addStep(node, "gather", {cache, positions},
                            suffix + "_at_positions", {{"axis", int64_t(0)}});
    Shape cacheShape = positions.empty() ? converter.requireShape(cache, opType)
                                         : Shape{laid[0], laid[1], half};
    if (!positions.empty() &&
        converter.requireShape(positions, opType) != Shape{laid[0], laid[1]})
      throw Unsupported{"position_ids must be [batch, sequence]"};
    if (cacheShape != Shape{laid[0], laid[1], half})
      throw Unsupported{"the caches must give [" + std::to_string(laid[0]) +
                        ", " + std::to_string(laid[1]) + ", " +
                        std::to_string(half) + "] values"};
    cache = viewStep(converter, node, cache, {laid[0], laid[1], 1, half},
                     suffix + "_per_head");
  };
  atTokens(cosCache, "cos");
  atTokens(sinCache, "sin");
  auto lastDimSlice = [&](const std::string &value, int64_t start, int64_t end,
                          int64_t step, const std::string &suffix) {
    return converter.addStep(node, "slice", {value}, suffix,
                             {{"starts", std::vector<int64_t>{start}},
                              {"ends", std::vector<int64_t>{end}},
                              {"axes", std::vector<int64_t>{3}},
                              {"steps", std::vector<int64_t>{step}}});
  };
  std::string first = interleaved ? lastDimSlice(tokens, 0, rotated, 2, "first")
                                  : lastDimSlice(tokens, 0, half, 1, "first");
  std::string second = interleaved
                           ? lastDimSlice(tokens, 1, rotated, 2, "second")
                           : lastDimSlice(tokens, half, rotated, 1, "second");
  auto product = [&](const std::string &a, const std::string &b,
                     const std::string &suffix) {
    return converter.addStep(node, "mul", {a, b}, suffix);
  };
  std::string real =
      converter.addStep(node, "sub",
                        {product(cosCache, first, "cos_first"),
                         product(sinCache, second, "sin_second")},
                        "real");
  std::string imaginary =
      converter.addStep(node, "add",
                        {product(sinCache, first, "sin_first"),
                         product(cosCache, second, "cos_second")},
                        "imaginary");
  std::string result;
  if (interleaved) {
    Shape pairs = {laid[0], laid[1], laid[2], half, 1};
    std::string joined = converter.addStep(
        node, "concat",
        {viewStep(converter, node, real, pairs, "real_pairs"),
         viewStep(converter, node, imaginary, pairs, "imaginary_pairs")},
        "pairs", {{"axis", int64_t(4)}});
    result = viewStep(converter, node, joined,
                      {laid[0], laid[1], laid[2], rotated}, "rotated");
  } else {
    result = converter.addStep(node, "concat", {real, imaginary}, "rotated",
                               {{"axis", int64_t(3)}});
  }
  if (rotated < headSize)
    result = converter.addStep(
        node, "concat",
        {result, lastDimSlice(tokens, rotated, headSize, 1, "kept")},
        "embedded", {{"axis", int64_t(3)}});
  node.attrs.clear();
  if (shape.size() == 3) {
    becomeView(node, result, shape);
    return;
  }
  node.op = "transpose";
  node.inputs = {result};
  node.attrs = {{"perm", std::vector<int64_t>{0, 2, 1, 3}}};
}

} // namespace

void registerAttentionOps(OnnxRegistry &registry) {
  registry.on("Attention", "matmul", 23)
      .attrs({"is_causal", "kv_num_heads", "q_num_heads",
              "qk_matmul_output_mode", "scale", "softcap", "softmax_precision"})
      .attr("left_window_size", 25)
      .attr("right_window_size", 25)
      .rewrite(attention);
  registry.on("RotaryEmbedding", "transpose", 23)
      .attrs({"interleaved", "num_heads", "rotary_embedding_dim"})
      .rewrite(rotaryEmbedding);
}

} // namespace fusec::onnx_import
