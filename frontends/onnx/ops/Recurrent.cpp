//===- Recurrent.cpp - ONNX recurrent ops ---------------------------------===//
//
// Recurrent layers: RNN, GRU, LSTM unrolled over the static sequence, and
// opset 27's CausalConvWithState and LinearAttention.
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

/// RNN, GRU and LSTM, unrolled over the (static) sequence as ONNX's
/// reference evaluator computes them: x · W^T for every step in one
/// library matmul, then per step H · R^T (a matmul each), the biases and
/// the gates (LSTM: i, o, f, c with peepholes; GRU: z, r, h, with
/// linear_before_reset; RNN: one), the default activations (sigmoid for
/// gates, tanh otherwise); reverse runs the steps backwards, bidirectional
/// both. Y is [S, D, B, H] ([B, S, D, H] with layout 1), Y_h and Y_c the
/// last states.
void recurrentLayer(OnnxConverter &converter, const onnx::NodeProto &proto,
                    GraphNode &node) {
  const std::string &opType = proto.op_type();
  const bool lstm = opType == "LSTM", gru = opType == "GRU";
  const int64_t gates = lstm ? 4 : gru ? 3 : 1;
  auto input = [&](size_t i) { return nameOrEmpty(node.inputs, i); };
  const std::string x = input(0), w = input(1), r = input(2), b = input(3),
                    sequenceLengths = input(4), initialH = input(5),
                    initialC = lstm ? input(6) : "",
                    peepholes = lstm ? input(7) : "";
  if (w.empty() || r.empty())
    throw Unsupported{opType + " takes X, W and R"};
  // Only the default activations (given or not) are computed.
  const std::vector<std::string> defaults =
      lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
            : std::vector<std::string>{"Tanh"};
  for (const onnx::AttributeProto &attr : proto.attribute()) {
    if (attr.name() == "activations") {
      for (int i = 0; i < attr.strings_size(); ++i)
        if (attr.strings(i) != defaults[i % defaults.size()])
          throw Unsupported{opType + "'s activation " + attr.strings(i) +
                            " is not supported (only the defaults)"};
    } else if (attr.name() == "activation_alpha" ||
               attr.name() == "activation_beta" || attr.name() == "clip") {
      throw Unsupported{opType + "'s " + attr.name() + " is not supported"};
    }
  }
  if (intAttr(node, "input_forget", 0) != 0)
    throw Unsupported{"LSTM's input_forget is not supported"};
  const bool linearBeforeReset = intAttr(node, "linear_before_reset", 0) != 0;
  const bool batchFirst = intAttr(node, "layout", 0) != 0;
  std::string direction = "forward";
  if (auto it = node.attrs.find("direction"); it != node.attrs.end())
    direction = std::get<std::string>(it->second);
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    throw Unsupported{opType +
                      "'s direction must be forward, reverse or "
                      "bidirectional, not " +
                      direction};
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const Shape xShape = converter.requireShape(x, opType),
              wShape = converter.requireShape(w, opType),
              rShape = converter.requireShape(r, opType);
  const DType dtype = converter.requireDType(x, opType);
  if (!isFloat(dtype))
    throw Unsupported{opType + " takes floats"};
  if (xShape.size() != 3 || wShape.size() != 3 || rShape.size() != 3)
    throw Unsupported{opType + "'s X, W and R must be 3-D"};
  const int64_t steps = batchFirst ? xShape[1] : xShape[0],
                batch = batchFirst ? xShape[0] : xShape[1],
                inputSize = xShape[2], hidden = rShape[2];
  if (wShape != Shape{directions, gates * hidden, inputSize} ||
      rShape != Shape{directions, gates * hidden, hidden})
    throw Unsupported{
        opType + "'s W must be [" + std::to_string(directions) + ", " +
        std::to_string(gates * hidden) + ", " + std::to_string(inputSize) +
        "] and R [" + std::to_string(directions) + ", " +
        std::to_string(gates * hidden) + ", " + std::to_string(hidden) + "]"};
  if (int64_t given = intAttr(node, "hidden_size", hidden); given != hidden)
    throw Unsupported{"hidden_size " + std::to_string(given) + " is not R's " +
                      std::to_string(hidden)};
  // sequence_lens: only every sequence at the full length (a constant).
  if (!sequenceLengths.empty()) {
    const Tensor *lengths = converter.constantOrNull(sequenceLengths);
    bool allFull = lengths != nullptr;
    for (int64_t i = 0; allFull && i < lengths->numElements(); ++i)
      allFull = lengths->at(i) == static_cast<double>(steps);
    if (!allFull)
      throw Unsupported{opType +
                        "'s sequence_lens must be a constant of the "
                        "full length " +
                        std::to_string(steps) +
                        " (sequences of different lengths are not supported)"};
  }
  if (steps * directions > 4096)
    throw Unsupported{opType + " of " + std::to_string(steps) +
                      " steps is unrolled; more than 4096 is not supported"};
  // Output names: the node's first requested output names the steps.
  std::vector<std::string> outputs = node.outputs;
  outputs.resize(3);
  std::string base;
  for (const std::string &output : outputs)
    if (base.empty())
      base = output;
  node.outputs = {outputs[0].empty() ? base + "_sequence" : outputs[0]};
  auto step = [&](const char *op, std::vector<std::string> inputs,
                  const std::string &suffix,
                  std::map<std::string, AttrValue> attrs = {}) {
    return converter.addStep(node, op, std::move(inputs), suffix,
                             std::move(attrs));
  };
  auto lastDims = [&](const std::string &value, int64_t start, int64_t end,
                      int64_t axis, const std::string &suffix) {
    return step("slice", {value}, suffix,
                {{"starts", std::vector<int64_t>{start}},
                 {"ends", std::vector<int64_t>{end}},
                 {"axes", std::vector<int64_t>{axis}},
                 {"steps", std::vector<int64_t>{1}}});
  };
  auto transposed = [&](const std::string &value, const std::string &suffix) {
    return step("transpose", {value}, suffix,
                {{"perm", std::vector<int64_t>{1, 0}}});
  };
  // X as [S, B, I].
  const std::string sequence =
      batchFirst ? step("transpose", {x}, "by_step",
                        {{"perm", std::vector<int64_t>{1, 0, 2}}})
                 : x;
  const std::string zeros = converter.addStepConstant(
      node, "zero_state", Tensor(dtype, {batch, hidden}));
  std::vector<std::string> sequences, lastH, lastC;
  for (int64_t d = 0; d < directions; ++d) {
    const std::string tag = "d" + std::to_string(d);
    // Direction d's part of a parameter (its dim 0; dim 1 for the states
    // with layout 1), as `rest`.
    auto ofDirection = [&](const std::string &value, const Shape &rest,
                           const std::string &suffix, int64_t axis = 0) {
      return viewStep(
          converter, node,
          directions == 1
              ? value
              : lastDims(value, d, d + 1, axis, tag + "_" + suffix + "_sliced"),
          rest, tag + "_" + suffix);
    };
    const int64_t stateAxis = batchFirst ? 1 : 0;
    const std::string wd = ofDirection(w, {gates * hidden, inputSize}, "w");
    const std::string rd = ofDirection(r, {gates * hidden, hidden}, "r");
    // x · W^T for every step: [S, B, G*H].
    const std::string inputs =
        step("matmul", {sequence, transposed(wd, tag + "_wt")},
             tag + "_input_gates");
    // Per gate k: the slice of x · W^T, R_k^T and the biases.
    std::string biasW, biasR;
    if (!b.empty()) {
      std::string bd = ofDirection(b, {2 * gates * hidden}, "b");
      biasW = lastDims(bd, 0, gates * hidden, 0, tag + "_wb");
      biasR = lastDims(bd, gates * hidden, 2 * gates * hidden, 0, tag + "_rb");
    }
    auto gateSlice = [&](const std::string &value, int64_t first, int64_t count,
                         int64_t axis, const std::string &suffix) {
      return lastDims(value, first * hidden, (first + count) * hidden, axis,
                      suffix);
    };
    std::string h = initialH.empty() ? zeros
                                     : ofDirection(initialH, {batch, hidden},
                                                   "h0", stateAxis);
    std::string c = !lstm              ? ""
                    : initialC.empty() ? zeros
                                       : ofDirection(initialC, {batch, hidden},
                                                     "c0", stateAxis);
    std::vector<std::string> peep(3);
    if (lstm && !peepholes.empty()) {
      std::string pd = ofDirection(peepholes, {3 * hidden}, "p");
      for (int k = 0; k < 3; ++k)
        peep[k] = gateSlice(pd, k, 1, 0, tag + "_p" + std::to_string(k));
    }
    // Gate bias sums, per group of gates as the reference adds them.
    const int64_t fused = gru ? 2 : gates; // GRU: z and r together
    std::string gateBias;
    if (!b.empty())
      gateBias = step("add",
                      {gateSlice(biasW, 0, fused, 0, tag + "_wb_gates"),
                       gateSlice(biasR, 0, fused, 0, tag + "_rb_gates")},
                      tag + "_gate_bias");
    const std::string rGates = transposed(
        gateSlice(rd, 0, fused, 0, tag + "_r_gates"), tag + "_r_gates_t");
    std::string rCandidate, wbCandidate, rbCandidate;
    if (gru) {
      rCandidate =
          transposed(gateSlice(rd, 2, 1, 0, tag + "_r_h"), tag + "_r_h_t");
      if (!b.empty()) {
        wbCandidate = gateSlice(biasW, 2, 1, 0, tag + "_wb_h");
        rbCandidate = gateSlice(biasR, 2, 1, 0, tag + "_rb_h");
      }
    }
    const std::string one =
        converter.addStepConstant(node, tag + "_one", scalarTensor(dtype, 1));
    std::vector<std::string> hs(steps);
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = d == 1 || direction == "reverse" ? steps - 1 - i : i;
      const std::string at = tag + "_t" + std::to_string(t);
      const std::string xw = viewStep(
          converter, node, lastDims(inputs, t, t + 1, 0, at + "_xw_step"),
          {batch, gates * hidden}, at + "_xw");
      std::string g = step("add",
                           {gateSlice(xw, 0, fused, 1, at + "_xw_gates"),
                            step("matmul", {h, rGates}, at + "_hr")},
                           at + "_gates_sum");
      if (!gateBias.empty())
        g = step("add", {g, gateBias}, at + "_gates");
      auto gate = [&](int64_t k, const std::string &suffix) {
        return gateSlice(g, k, 1, 1, at + "_" + suffix);
      };
      if (lstm) {
        auto withPeephole = [&](std::string value, int k,
                                const std::string &cell,
                                const std::string &suffix) {
          if (!peep[k].empty())
            value = step("add",
                         {value, step("mul", {peep[k], cell},
                                      at + "_" + suffix + "_peep")},
                         at + "_" + suffix + "_peeped");
          return step("sigmoid", {value}, at + "_" + suffix + "_act");
        };
        std::string inGate = withPeephole(gate(0, "i"), 0, c, "i");
        std::string forget = withPeephole(gate(2, "f"), 2, c, "f");
        std::string cell = step("tanh", {gate(3, "c")}, at + "_c_act");
        c = step("add",
                 {step("mul", {forget, c}, at + "_kept"),
                  step("mul", {inGate, cell}, at + "_added")},
                 at + "_cell");
        std::string out = withPeephole(gate(1, "o"), 1, c, "o");
        h = step("mul", {out, step("tanh", {c}, at + "_cell_tanh")}, at + "_h");
      } else if (gru) {
        std::string z = step("sigmoid", {gate(0, "z")}, at + "_z_act");
        std::string reset = step("sigmoid", {gate(1, "r")}, at + "_r_act");
        std::string xh = gateSlice(xw, 2, 1, 1, at + "_xw_h");
        std::string candidate;
        if (linearBeforeReset) {
          std::string hr = step("matmul", {h, rCandidate}, at + "_hr_h");
          if (!rbCandidate.empty())
            hr = step("add", {hr, rbCandidate}, at + "_hr_h_biased");
          candidate =
              step("add", {xh, step("mul", {reset, hr}, at + "_reset_hr")},
                   at + "_candidate_sum");
          if (!wbCandidate.empty())
            candidate =
                step("add", {candidate, wbCandidate}, at + "_candidate_biased");
        } else {
          candidate = step(
              "add",
              {xh, step("matmul",
                        {step("mul", {reset, h}, at + "_reset_h"), rCandidate},
                        at + "_rh_h")},
              at + "_candidate_sum");
          if (!wbCandidate.empty())
            candidate = step(
                "add",
                {step("add", {candidate, wbCandidate}, at + "_candidate_wb"),
                 rbCandidate},
                at + "_candidate_biased");
        }
        candidate = step("tanh", {candidate}, at + "_candidate");
        h = step(
            "add",
            {step("mul", {step("sub", {one, z}, at + "_keep_new"), candidate},
                  at + "_new"),
             step("mul", {z, h}, at + "_old")},
            at + "_h");
      } else {
        h = step("tanh", {g}, at + "_h");
      }
      hs[t] = viewStep(converter, node, h, {1, 1, batch, hidden}, at + "_y");
    }
    sequences.push_back(steps == 1 ? hs[0]
                                   : step("concat", hs, tag + "_sequence",
                                          {{"axis", int64_t(0)}}));
    lastH.push_back(
        viewStep(converter, node, h, {1, batch, hidden}, tag + "_last_h"));
    if (lstm)
      lastC.push_back(
          viewStep(converter, node, c, {1, batch, hidden}, tag + "_last_c"));
  }
  auto joined = [&](const std::vector<std::string> &parts, int64_t axis,
                    const std::string &suffix) {
    return parts.size() == 1 ? parts[0]
                             : step("concat", parts, suffix, {{"axis", axis}});
  };
  // The states: [D, B, H], or [B, D, H] with layout 1.
  auto emitState = [&](size_t index, const std::vector<std::string> &parts,
                       const std::string &suffix) {
    if (outputs[index].empty())
      return;
    std::string state = joined(parts, 0, suffix);
    if (batchFirst)
      state = step("transpose", {state}, suffix + "_by_batch",
                   {{"perm", std::vector<int64_t>{1, 0, 2}}});
    converter.addOutputStep(
        node, "reshape", {state}, outputs[index],
        {{"shape", batchFirst
                       ? std::vector<int64_t>{batch, directions, hidden}
                       : std::vector<int64_t>{directions, batch, hidden}},
         {"allowzero", int64_t(1)}});
    converter.recordValue(outputs[index],
                          batchFirst ? Shape{batch, directions, hidden}
                                     : Shape{directions, batch, hidden},
                          dtype);
  };
  emitState(1, lastH, "final_h");
  if (lstm)
    emitState(2, lastC, "final_c");
  std::string y = joined(sequences, 1, "all_directions");
  node.attrs.clear();
  if (batchFirst) {
    node.op = "transpose";
    node.inputs = {y};
    node.attrs = {{"perm", std::vector<int64_t>{2, 0, 1, 3}}};
  } else {
    becomeView(node, y, {steps, directions, batch, hidden});
  }
  converter.recordValue(node.outputs[0],
                        batchFirst ? Shape{batch, steps, directions, hidden}
                                   : Shape{steps, directions, batch, hidden},
                        dtype);
}

/// CausalConvWithState (opset 27), as ONNX's function defines it: the past
/// state (zeros where absent) before the input along the length, a
/// depthwise Conv over that (SiLU after it where activation asks), and the
/// last k - 1 positions of the padded sequence as the present state.
void convertCausalConvWithState(OnnxConverter &converter,
                                const onnx::NodeProto &node) {
  std::string activation = "none";
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() != "activation")
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    activation = attr.s();
  }
  if (activation != "none" && activation != "silu" && activation != "swish")
    throw Unsupported{"activation '" + activation +
                      "' is not one of silu, swish, none"};
  if (node.input_size() < 2 || node.input(0).empty() || node.input(1).empty())
    throw Unsupported{"CausalConvWithState takes input and weight"};
  auto optionalInput = [&](int index) {
    return node.input_size() > index ? converter.resolve(node.input(index))
                                     : std::string();
  };
  const std::string x = converter.resolve(node.input(0)),
                    weight = converter.resolve(node.input(1)),
                    bias = optionalInput(2), past = optionalInput(3);
  const Shape xShape = converter.requireShape(x, "CausalConvWithState"),
              wShape = converter.requireShape(weight, "CausalConvWithState");
  const DType dtype = converter.requireDType(x, "CausalConvWithState");
  if (xShape.size() != 3 || wShape.size() != 3 || wShape[0] != xShape[1] ||
      wShape[1] != 1 || wShape[2] < 1)
    throw Unsupported{"CausalConvWithState takes input [B, C, L] and weight "
                      "[C, 1, k], not [" +
                      formatShape(xShape) + "] and [" + formatShape(wShape) +
                      "]"};
  const int64_t channels = xShape[1], length = xShape[2],
                carried = wShape[2] - 1;
  const Shape stateShape = {xShape[0], channels, carried};
  std::string state = past;
  if (state.empty()) {
    state = converter.expandConstant(node, Tensor(dtype, stateShape));
  } else if (converter.requireShape(state, "CausalConvWithState") !=
             stateShape) {
    throw Unsupported{
        "past_state must be [" + formatShape(stateShape) + "], not [" +
        formatShape(converter.requireShape(state, "CausalConvWithState")) +
        "]"};
  }
  std::string padded =
      converter.expand(node, "Concat", {state, x}, {intAttribute("axis", 2)});
  std::vector<std::string> convInputs = {padded, weight};
  if (!bias.empty())
    convInputs.push_back(bias);
  bool activated = activation != "none";
  std::string convolved = converter.expand(node, "Conv", convInputs,
                                           {intAttribute("group", channels)},
                                           activated ? "" : node.output(0));
  if (activated)
    converter.expand(
        node, "Mul",
        {convolved, converter.expand(node, "Sigmoid", {convolved})}, {},
        node.output(0));
  if (node.output_size() > 1 && !node.output(1).empty()) {
    auto positions = [&](int64_t value) {
      Tensor tensor(DType::I64, {1});
      tensor.set(0, static_cast<double>(value));
      return converter.expandConstant(node, std::move(tensor));
    };
    converter.expand(
        node, "Slice",
        {padded, positions(length), positions(length + carried), positions(2)},
        {}, node.output(1));
  }
}

/// LinearAttention (opset 27), as ONNX's reference computes it: heads
/// unpacked and widened to f32, then the recurrence unrolled over the
/// sequence (fusec's shapes are static): per token the state decays by
/// exp(decay) (gated rules), the value is corrected by what the state
/// already holds for the key, times beta (delta rules), the state gains
/// key x value, and the output is scale * query . state, each KV head's
/// state read by its group of query heads. The output converts back to the
/// query's dtype, the state to past_state's (the query's without one).
void convertLinearAttention(OnnxConverter &converter,
                            const onnx::NodeProto &node) {
  std::string rule = "gated_delta";
  int64_t queryHeads = 0, kvHeads = 0;
  double scale = 0;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() == "update_rule")
      rule = attr.s();
    else if (attr.name() == "q_num_heads")
      queryHeads = attr.i();
    else if (attr.name() == "kv_num_heads")
      kvHeads = attr.i();
    else if (attr.name() == "scale")
      scale = attr.f();
    else if (attr.name() != "chunk_size") // a tuning hint
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
  }
  const bool gated = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (!gated && !delta && rule != "linear")
    throw Unsupported{"update_rule '" + rule +
                      "' is not one of linear, gated, delta, gated_delta"};
  if (queryHeads < 1 || kvHeads < 1 || queryHeads % kvHeads != 0)
    throw Unsupported{"q_num_heads (" + std::to_string(queryHeads) +
                      ") must be a positive multiple of kv_num_heads (" +
                      std::to_string(kvHeads) + ")"};
  auto input = [&](int index) {
    return node.input_size() > index ? converter.resolve(node.input(index))
                                     : std::string();
  };
  const std::string query = input(0), key = input(1), value = input(2),
                    past = input(3), decay = input(4), beta = input(5);
  if (query.empty() || key.empty() || value.empty())
    throw Unsupported{"LinearAttention takes query, key and value"};
  if (gated != !decay.empty() || delta != !beta.empty())
    throw Unsupported{"update_rule '" + rule + "' " +
                      (gated ? "needs" : "takes no") + " decay and " +
                      (delta ? "needs" : "takes no") + " beta"};
  const Shape qShape = converter.requireShape(query, "LinearAttention"),
              kShape = converter.requireShape(key, "LinearAttention"),
              vShape = converter.requireShape(value, "LinearAttention");
  if (qShape.size() != 3 || kShape.size() != 3 || vShape.size() != 3 ||
      kShape[0] != qShape[0] || vShape[0] != qShape[0] ||
      kShape[1] != qShape[1] || vShape[1] != qShape[1] ||
      qShape[2] % queryHeads != 0 || vShape[2] % kvHeads != 0 ||
      kShape[2] != qShape[2] / queryHeads * kvHeads)
    throw Unsupported{"query, key and value must be [B, T, heads * dim] with "
                      "the heads given, not [" +
                      formatShape(qShape) + "], [" + formatShape(kShape) +
                      "] and [" + formatShape(vShape) + "]"};
  const int64_t batch = qShape[0], length = qShape[1],
                keyDim = qShape[2] / queryHeads, valueDim = vShape[2] / kvHeads,
                group = queryHeads / kvHeads;
  if (length > kMaxLoopIterations)
    throw Unsupported{"LinearAttention over " + std::to_string(length) +
                      " tokens is more than the " +
                      std::to_string(kMaxLoopIterations) + " fusec unrolls"};
  const DType outputType = converter.requireDType(query, "LinearAttention");
  auto ints = [&](std::vector<int64_t> values) {
    Tensor tensor(DType::I64, {static_cast<int64_t>(values.size())});
    for (size_t i = 0; i < values.size(); ++i)
      tensor.set(i, static_cast<double>(values[i]));
    return converter.expandConstant(node, std::move(tensor));
  };
  auto toF32 = [&](const std::string &x) {
    return converter.expand(node, "Cast", {x},
                            {intAttribute("to", onnxTypeOf(DType::F32))});
  };
  auto permute = [&](const std::string &x, std::vector<int64_t> perm) {
    onnx::AttributeProto attr;
    attr.set_name("perm");
    attr.set_type(onnx::AttributeProto::INTS);
    for (int64_t axis : perm)
      attr.add_ints(axis);
    return converter.expand(node, "Transpose", {x}, {attr});
  };
  // [B, T, heads * dim] -> [B, heads, T, dim], in f32.
  auto unpack = [&](const std::string &x, int64_t heads, int64_t dim) {
    return toF32(
        permute(converter.expand(node, "Reshape",
                                 {x, ints({batch, length, heads, dim})}),
                {0, 2, 1, 3}));
  };
  const std::string q4 = unpack(query, queryHeads, keyDim),
                    k4 = unpack(key, kvHeads, keyDim),
                    v4 = unpack(value, kvHeads, valueDim);
  std::string decay4, beta4;
  if (gated) {
    Shape shape = converter.requireShape(decay, "LinearAttention");
    if (shape.size() != 3 || shape[0] != batch || shape[1] != length ||
        (shape[2] != kvHeads && shape[2] != kvHeads * keyDim))
      throw Unsupported{"decay must be [B, T, kv_num_heads] or [B, T, "
                        "kv_num_heads * d_k], not [" +
                        formatShape(shape) + "]"};
    decay4 = unpack(decay, kvHeads, shape[2] / kvHeads);
  }
  if (delta) {
    Shape shape = converter.requireShape(beta, "LinearAttention");
    if (shape.size() != 3 || shape[0] != batch || shape[1] != length ||
        (shape[2] != kvHeads && shape[2] != 1))
      throw Unsupported{"beta must be [B, T, kv_num_heads] or [B, T, 1], "
                        "not [" +
                        formatShape(shape) + "]"};
    beta4 = unpack(beta, shape[2], 1);
  }
  const Shape stateShape = {batch, kvHeads, keyDim, valueDim};
  DType stateType = outputType;
  std::string state;
  if (past.empty()) {
    state = converter.expandConstant(node, Tensor(DType::F32, stateShape));
  } else {
    if (converter.requireShape(past, "LinearAttention") != stateShape)
      throw Unsupported{
          "past_state must be [" + formatShape(stateShape) + "], not [" +
          formatShape(converter.requireShape(past, "LinearAttention")) + "]"};
    stateType = converter.requireDType(past, "LinearAttention");
    state = toF32(past);
  }
  const double scaleValue =
      scale == 0 ? 1.0 / std::sqrt(static_cast<double>(keyDim)) : scale;
  const std::string scaleConstant =
      converter.expandConstant(node, scalarTensor(DType::F32, scaleValue));
  const std::string lastAxis = ints({-1}), beforeLastAxis = ints({-2}),
                    keyAxis = ints({2});
  auto token = [&](const std::string &x, int64_t t) {
    return converter.expand(
        node, "Gather",
        {x, converter.expandConstant(node, scalarTensor(DType::I64, t))},
        {intAttribute("axis", 2)});
  };
  auto sumOverKeys = [&](const std::string &x) {
    return converter.expand(node, "ReduceSum", {x, keyAxis},
                            {intAttribute("keepdims", 0)});
  };
  std::vector<std::string> outputs;
  for (int64_t t = 0; t < length; ++t) {
    converter.chargeUnrolling(20); // the nodes of one token's update
    std::string k = token(k4, t), v = token(v4, t);
    if (gated)
      state = converter.expand(
          node, "Mul",
          {state,
           converter.expand(
               node, "Unsqueeze",
               {converter.expand(node, "Exp", {token(decay4, t)}), lastAxis})});
    std::string column = converter.expand(node, "Unsqueeze", {k, lastAxis});
    if (delta) {
      std::string held =
          sumOverKeys(converter.expand(node, "Mul", {state, column}));
      v = converter.expand(
          node, "Mul",
          {token(beta4, t), converter.expand(node, "Sub", {v, held})});
    }
    state = converter.expand(
        node, "Add",
        {state,
         converter.expand(node, "Mul",
                          {column, converter.expand(node, "Unsqueeze",
                                                    {v, beforeLastAxis})})});
    std::string read = state;
    if (group > 1)
      read = converter.expand(
          node, "Reshape",
          {converter.expand(
               node, "Expand",
               {converter.expand(node, "Unsqueeze", {state, keyAxis}),
                ints({batch, kvHeads, group, keyDim, valueDim})}),
           ints({batch, queryHeads, keyDim, valueDim})});
    std::string attended = sumOverKeys(converter.expand(
        node, "Mul",
        {converter.expand(node, "Unsqueeze", {token(q4, t), lastAxis}), read}));
    outputs.push_back(converter.expand(
        node, "Unsqueeze",
        {converter.expand(node, "Mul", {scaleConstant, attended}), keyAxis}));
  }
  std::string stacked = outputs.size() == 1
                            ? outputs[0]
                            : converter.expand(node, "Concat", outputs,
                                               {intAttribute("axis", 2)});
  converter.expand(
      node, "Cast",
      {converter.expand(node, "Reshape",
                        {permute(stacked, {0, 2, 1, 3}),
                         ints({batch, length, queryHeads * valueDim})})},
      {intAttribute("to", onnxTypeOf(outputType))}, node.output(0));
  if (node.output_size() > 1 && !node.output(1).empty())
    converter.expand(node, "Cast", {state},
                     {intAttribute("to", onnxTypeOf(stateType))},
                     node.output(1));
}

} // namespace

void registerRecurrentOps(OnnxRegistry &registry) {
  for (const char *recurrent : {"RNN", "GRU", "LSTM"})
    registry.on(recurrent, "reshape", 7)
        .attrs({"activation_alpha", "activation_beta", "activations", "clip",
                "direction", "hidden_size", "input_forget", "layout",
                "linear_before_reset"})
        .readsConstant(4) // sequence_lens must be constant (and full)
        .rewrite(recurrentLayer);
  registry.on("CausalConvWithState", convertCausalConvWithState);
  registry.on("LinearAttention", convertLinearAttention);
}

} // namespace fusec::onnx_import
