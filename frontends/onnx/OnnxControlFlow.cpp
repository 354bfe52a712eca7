//===- OnnxControlFlow.cpp - If, Loop and Scan, unrolled ------------------===//

#include "frontends/onnx/OnnxConverter.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>

namespace fusec::onnx_import {

/// The names a subgraph defines: its inputs, initializers and node outputs.
std::set<std::string> namesDefinedIn(const onnx::GraphProto &graph) {
  std::set<std::string> names;
  for (const onnx::ValueInfoProto &input : graph.input())
    names.insert(input.name());
  for (const onnx::TensorProto &initializer : graph.initializer())
    names.insert(initializer.name());
  for (const onnx::NodeProto &node : graph.node())
    names.insert(node.output().begin(), node.output().end());
  names.erase("");
  return names;
}

/// Prefixes every name of `scoped` in `graph`: its definitions (where
/// `definitions`) and every reference to them, in nested subgraphs too (a
/// name a nested subgraph defines itself is its own there).
void renameScoped(onnx::GraphProto &graph, std::set<std::string> scoped,
                  const std::string &prefix, bool definitions) {
  if (!definitions)
    for (const std::string &own : namesDefinedIn(graph))
      scoped.erase(own);
  auto rename = [&](std::string *name) {
    if (scoped.count(*name))
      *name = prefix + *name;
  };
  if (definitions) {
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      rename(input.mutable_name());
    for (onnx::TensorProto &initializer : *graph.mutable_initializer())
      rename(initializer.mutable_name());
  }
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    for (std::string &input : *node.mutable_input())
      rename(&input);
    if (definitions)
      for (std::string &output : *node.mutable_output())
        rename(&output);
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_g())
        renameScoped(*attr.mutable_g(), scoped, prefix, false);
      for (onnx::GraphProto &nested : *attr.mutable_graphs())
        renameScoped(nested, scoped, prefix, false);
    }
  }
  for (onnx::ValueInfoProto &output : *graph.mutable_output())
    rename(output.mutable_name());
}

/// The subgraph attribute `name` of a control-flow node; any attribute not
/// in `known` is refused.
const onnx::GraphProto &subgraphAttr(const onnx::NodeProto &node,
                                     const std::string &name,
                                     const std::set<std::string> &known) {
  const onnx::GraphProto *found = nullptr;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (!known.count(attr.name()))
      throw Unsupported{"attribute '" + attr.name() + "' is not supported"};
    if (attr.name() == name && attr.type() == onnx::AttributeProto::GRAPH)
      found = &attr.g();
  }
  if (!found)
    throw Unsupported{node.op_type() + " needs the graph attribute '" + name +
                      "'"};
  return *found;
}

/// The index'th slice of `value` along `axis`, the axis dropped.
std::string sliceAt(OnnxConverter &converter, const GraphNode &owner,
                    const std::string &value, const Shape &shape, int64_t axis,
                    int64_t index, const std::string &suffix) {
  Shape element = shape;
  element.erase(element.begin() + axis);
  std::string slice =
      converter.addStep(owner, "slice", {value}, suffix + "_slice",
                        {{"starts", std::vector<int64_t>{index}},
                         {"ends", std::vector<int64_t>{index + 1}},
                         {"axes", std::vector<int64_t>{axis}}});
  return viewStep(converter, owner, slice, element, suffix);
}

/// `values` (of one shape) stacked along a new dim `axis`, as `output`.
void stackAlong(OnnxConverter &converter, const GraphNode &owner,
                const std::vector<std::string> &values, int64_t axis,
                const std::string &output) {
  Shape element = converter.requireShape(values.at(0), owner.name);
  Shape unit = element;
  unit.insert(unit.begin() + axis, 1);
  std::vector<std::string> units;
  for (size_t i = 0; i < values.size(); ++i) {
    if (converter.requireShape(values[i], owner.name) != element)
      throw Unsupported{"the values stacked into output '" + output +
                        "' change shape between iterations"};
    units.push_back(viewStep(converter, owner, values[i], unit,
                             output + "_" + std::to_string(i)));
  }
  converter.addOutputStep(owner, "concat", units, output, {{"axis", axis}});
}

void OnnxConverter::chargeUnrolling(size_t units) {
  unrolled += units;
  if (unrolled > kMaxUnrolledNodes)
    throw Unsupported{"its control flow unrolls to more than " +
                      std::to_string(kMaxUnrolledNodes) +
                      " nodes, past what fusec unrolls"};
}

std::vector<std::string> OnnxConverter::convertSubgraph(
    const onnx::GraphProto &body, const std::string &scope,
    const std::vector<std::string> &inputs, const std::string &what) {
  if (body.input_size() != static_cast<int>(inputs.size()))
    throw Unsupported{what + " declares " + std::to_string(body.input_size()) +
                      " inputs but is given " + std::to_string(inputs.size())};
  // Copying the body costs its size, nested subgraphs included, whether or
  // not their nodes are converted.
  std::function<size_t(const onnx::GraphProto &)> size =
      [&](const onnx::GraphProto &graph) {
        size_t total = 1 + graph.node_size() + graph.initializer_size();
        for (const onnx::NodeProto &node : graph.node())
          for (const onnx::AttributeProto &attr : node.attribute()) {
            if (attr.has_g())
              total += size(attr.g());
            for (const onnx::GraphProto &nested : attr.graphs())
              total += size(nested);
          }
        return total;
      };
  chargeUnrolling(size(body));
  onnx::GraphProto scoped = body;
  renameScoped(scoped, namesDefinedIn(body), scope + "/", true);
  for (int i = 0; i < scoped.input_size(); ++i)
    if (!scoped.input(i).name().empty())
      aliases[scoped.input(i).name()] = resolve(inputs[i]);
  for (int i = 0; i < body.initializer_size(); ++i) {
    Tensor value = tensorFromProto(body.initializer(i), modelDir);
    chargeUnrolling(value.bytes.size() / 65536);
    std::vector<std::string> &made =
        subgraphConstants[body.initializer(i).name()];
    auto same = std::find_if(made.begin(), made.end(), [&](const auto &name) {
      const Tensor &other = constants.at(name);
      return other.dtype == value.dtype && other.shape == value.shape &&
             other.bytes == value.bytes;
    });
    if (same != made.end()) {
      aliases[scoped.initializer(i).name()] = *same;
      continue;
    }
    made.push_back(scoped.initializer(i).name());
    addConstant(made.back(), std::move(value));
  }
  for (int index = 0; index < scoped.node_size(); ++index) {
    const onnx::NodeProto &node = scoped.node(index);
    try {
      convertOrFold(node);
    } catch (const Unsupported &inner) {
      throw Unsupported{what + ", " + describeOnnxNode(node, index, -1) + ": " +
                        inner.reason};
    }
  }
  std::vector<std::string> outputs;
  for (const onnx::ValueInfoProto &output : scoped.output())
    outputs.push_back(resolve(output.name()));
  return outputs;
}

/// If: a condition known here (a constant, or folded from static shapes)
/// converts the taken branch alone; one computed at run time converts both
/// and selects each output, which then must have one type in both.
void OnnxConverter::convertIf(const onnx::NodeProto &node) {
  const std::set<std::string> known = {"then_branch", "else_branch"};
  const onnx::GraphProto &thenBranch = subgraphAttr(node, "then_branch", known);
  const onnx::GraphProto &elseBranch = subgraphAttr(node, "else_branch", known);
  if (node.input_size() != 1 || node.input(0).empty())
    throw Unsupported{"If takes one input, cond"};
  for (const onnx::GraphProto *branch : {&thenBranch, &elseBranch})
    if (branch->output_size() != node.output_size())
      throw Unsupported{"If has " + std::to_string(node.output_size()) +
                        " outputs but a branch gives " +
                        std::to_string(branch->output_size())};
  const std::string scope = newScope(node);
  const std::string cond = resolve(node.input(0));
  if (const Tensor *value = constantOrNull(cond)) {
    if (value->numElements() != 1)
      throw Unsupported{"If's cond must have one element, not " +
                        std::to_string(value->numElements())};
    bool taken = value->at(0) != 0;
    std::vector<std::string> outputs = convertSubgraph(
        taken ? thenBranch : elseBranch, scope + (taken ? "/then" : "/else"),
        {}, taken ? "then_branch" : "else_branch");
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty()) // "" names an absent optional input
        aliases[node.output(i)] = outputs[i];
    return;
  }
  Shape condShape = requireShape(cond, "If");
  if (requireDType(cond, "If") != DType::I1 || numElements(condShape) != 1)
    throw Unsupported{"If's cond must be one bool"};
  std::vector<std::string> thenValues =
      convertSubgraph(thenBranch, scope + "/then", {}, "then_branch");
  std::vector<std::string> elseValues =
      convertSubgraph(elseBranch, scope + "/else", {}, "else_branch");
  GraphNode owner;
  owner.name = scope;
  owner.outputs = {node.output(0)};
  std::string flag =
      condShape.empty() ? cond : viewStep(*this, owner, cond, {}, "cond");
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    Shape thenShape = requireShape(thenValues[i], "If"),
          elseShape = requireShape(elseValues[i], "If");
    DType thenType = requireDType(thenValues[i], "If"),
          elseType = requireDType(elseValues[i], "If");
    if (thenShape != elseShape || thenType != elseType)
      throw Unsupported{
          "its cond is computed at run time and output " + std::to_string(i) +
          " is " + dtypeName(thenType) + "[" + formatShape(thenShape) +
          "] in then_branch but " + dtypeName(elseType) + "[" +
          formatShape(elseShape) +
          "] in else_branch: fusec's shapes are static, so both branches "
          "must give one type"};
    if (thenValues[i] == elseValues[i]) {
      aliases[node.output(i)] = thenValues[i];
      continue;
    }
    addOutputStep(owner, "select", {flag, thenValues[i], elseValues[i]},
                  node.output(i));
  }
}

/// Loop, unrolled: its trip count M and its condition must be known here
/// before each iteration (constants, or folded from them), since they fix
/// how many iterations there are and so its scan outputs' shapes.
void OnnxConverter::convertLoop(const onnx::NodeProto &node) {
  const onnx::GraphProto &body = subgraphAttr(node, "body", {"body"});
  if (node.input_size() < 2)
    throw Unsupported{"Loop takes M, cond and the loop-carried values"};
  const size_t carriedCount = node.input_size() - 2;
  if (body.input_size() != static_cast<int>(carriedCount) + 2 ||
      body.output_size() < static_cast<int>(carriedCount) + 1)
    throw Unsupported{"Loop's body must take the iteration number, the "
                      "condition and the " +
                      std::to_string(carriedCount) +
                      " loop-carried values, and give the condition and "
                      "them back"};
  const size_t scanCount = body.output_size() - 1 - carriedCount;
  if (static_cast<size_t>(node.output_size()) > carriedCount + scanCount)
    throw Unsupported{"Loop has more outputs than its body gives"};
  std::optional<int64_t> tripCount;
  if (!node.input(0).empty()) {
    const Tensor &m =
        constantValue(resolve(node.input(0)), "Loop's trip count M");
    std::vector<int64_t> values = integersOf(m, "Loop's trip count M");
    if (values.size() != 1)
      throw Unsupported{"Loop's trip count M must be one integer"};
    tripCount = values[0];
  }
  const bool checksCond = !node.input(1).empty();
  if (!tripCount && !checksCond)
    throw Unsupported{"a Loop with neither a trip count nor a condition "
                      "never ends"};
  const std::string scope = newScope(node);
  GraphNode owner;
  owner.name = scope;
  owner.outputs = {scope};
  auto condNow = [&](const std::string &value) {
    const Tensor *known = constantOrNull(value);
    if (!known || known->numElements() != 1)
      throw Unsupported{"Loop's condition is computed at run time: its trip "
                        "count, and so its outputs' shapes, are not known "
                        "here (fusec's shapes are static)"};
    return known->at(0) != 0;
  };
  std::string cond =
      checksCond ? resolve(node.input(1))
                 : addStepConstant(owner, "true", scalarTensor(DType::I1, 1));
  std::vector<std::string> carried;
  for (size_t i = 0; i < carriedCount; ++i)
    carried.push_back(resolve(node.input(2 + i)));
  std::vector<std::vector<std::string>> scans(scanCount);
  int64_t iteration = 0;
  for (; !tripCount || iteration < *tripCount; ++iteration) {
    if (checksCond && !condNow(cond))
      break;
    if (iteration >= kMaxLoopIterations)
      throw Unsupported{"Loop runs more than " +
                        std::to_string(kMaxLoopIterations) +
                        " iterations, past what fusec unrolls"};
    chargeUnrolling(1 + carriedCount + scanCount);
    const std::string at = std::to_string(iteration);
    std::vector<std::string> inputs = {
        addStepConstant(owner, at + "_iteration_num",
                        scalarTensor(DType::I64, iteration)),
        cond};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    std::vector<std::string> outputs = convertSubgraph(
        body, scope + "/" + at, inputs, "Loop's body (iteration " + at + ")");
    if (checksCond)
      cond = outputs[0];
    std::copy(outputs.begin() + 1, outputs.begin() + 1 + carriedCount,
              carried.begin());
    for (size_t k = 0; k < scanCount; ++k)
      scans[k].push_back(outputs[1 + carriedCount + k]);
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    if (static_cast<size_t>(i) < carriedCount) {
      aliases[node.output(i)] = carried[i];
      continue;
    }
    const std::vector<std::string> &values = scans[i - carriedCount];
    if (values.empty())
      throw Unsupported{"Loop runs no iteration, so its scan output '" +
                        node.output(i) + "' has no known shape"};
    stackAlong(*this, owner, values, 0, node.output(i));
  }
}

/// Scan, unrolled over its scan inputs' static length: each iteration's
/// body reads the state and one slice of every scan input (along its axis,
/// from the end where its direction is 1); the scan outputs stack each
/// iteration's values along their axes (last first where reversed). Scan-8
/// has a batch dim first on every input and output, each batch element
/// scanned on its own, and sequence_lens (which must be the full length).
void OnnxConverter::convertScan(const onnx::NodeProto &node) {
  const bool batched = opset < 9;
  const std::set<std::string> known =
      batched ? std::set<std::string>{"body", "num_scan_inputs", "directions"}
              : std::set<std::string>{"body",
                                      "num_scan_inputs",
                                      "scan_input_axes",
                                      "scan_input_directions",
                                      "scan_output_axes",
                                      "scan_output_directions"};
  const onnx::GraphProto &body = subgraphAttr(node, "body", known);
  int64_t scanInputCount = -1;
  std::vector<int64_t> inputAxes, inputDirections, outputAxes, outputDirections;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    std::vector<int64_t> ints(attr.ints().begin(), attr.ints().end());
    if (attr.name() == "num_scan_inputs")
      scanInputCount = attr.i();
    else if (attr.name() == "scan_input_axes")
      inputAxes = ints;
    else if (attr.name() == "scan_input_directions" ||
             attr.name() == "directions")
      inputDirections = ints;
    else if (attr.name() == "scan_output_axes")
      outputAxes = ints;
    else if (attr.name() == "scan_output_directions")
      outputDirections = ints;
  }
  const int first = batched ? 1 : 0; // Scan-8's sequence_lens
  const int64_t inputCount = node.input_size() - first;
  if (scanInputCount < 1 || scanInputCount > inputCount)
    throw Unsupported{"Scan's num_scan_inputs must be 1 to the number of its "
                      "inputs"};
  const int64_t stateCount = inputCount - scanInputCount;
  const int64_t scanOutputCount = body.output_size() - stateCount;
  if (body.input_size() != static_cast<int>(inputCount))
    throw Unsupported{"Scan's body takes " + std::to_string(body.input_size()) +
                      " inputs but is given " + std::to_string(inputCount) +
                      " (" + std::to_string(stateCount) + " states, " +
                      std::to_string(scanInputCount) + " scan slices)"};
  if (scanOutputCount < 0 || node.output_size() > body.output_size())
    throw Unsupported{
        "Scan's body gives " + std::to_string(body.output_size()) +
        " outputs, fewer than its " + std::to_string(stateCount) +
        " states or Scan's " + std::to_string(node.output_size()) + " outputs"};
  auto listOf = [](std::vector<int64_t> given, int64_t count,
                   const char *name) {
    if (given.empty())
      given.assign(count, 0);
    if (static_cast<int64_t>(given.size()) != count)
      throw Unsupported{std::string("Scan's ") + name + " has " +
                        std::to_string(given.size()) + " entries for " +
                        std::to_string(count) + " values"};
    return given;
  };
  inputAxes = listOf(inputAxes, scanInputCount, "scan_input_axes");
  inputDirections =
      listOf(inputDirections, scanInputCount, "scan_input_directions");
  outputAxes = listOf(outputAxes, scanOutputCount, "scan_output_axes");
  outputDirections =
      listOf(outputDirections, scanOutputCount, "scan_output_directions");
  const std::string scope = newScope(node);
  GraphNode owner;
  owner.name = scope;
  owner.outputs = {scope};
  std::vector<std::string> inputs;
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < inputCount; ++i) {
    if (node.input(first + i).empty())
      throw Unsupported{"Scan's input " + std::to_string(first + i) +
                        " is missing"};
    inputs.push_back(resolve(node.input(first + i)));
    shapes.push_back(requireShape(inputs.back(), "Scan"));
    if (batched && shapes.back().empty())
      throw Unsupported{"Scan-8's inputs have a batch dim first"};
  }
  const int64_t batch = batched ? shapes[0][0] : 1;
  for (const Shape &shape : shapes)
    if (batched && shape[0] != batch)
      throw Unsupported{"Scan-8's inputs have different batch sizes (" +
                        std::to_string(batch) + " and " +
                        std::to_string(shape[0]) + ")"};
  if (batch == 0)
    throw Unsupported{"Scan-8's batch is empty"};
  // The scan axis of each scan input, within a batch element.
  int64_t length = -1;
  for (int64_t j = 0; j < scanInputCount; ++j) {
    const Shape &shape = shapes[stateCount + j];
    int64_t rank = static_cast<int64_t>(shape.size()) - (batched ? 1 : 0);
    int64_t axis = inputAxes[j] < 0 ? inputAxes[j] + rank : inputAxes[j];
    if (axis < 0 || axis >= rank)
      throw Unsupported{"Scan's scan input " + std::to_string(j) +
                        " has no axis " + std::to_string(inputAxes[j])};
    inputAxes[j] = axis;
    int64_t dim = shape[axis + (batched ? 1 : 0)];
    if (length >= 0 && dim != length)
      throw Unsupported{"Scan's scan inputs have different lengths (" +
                        std::to_string(length) + " and " + std::to_string(dim) +
                        ")"};
    length = dim;
  }
  if (batched && node.input_size() > 0 && !node.input(0).empty()) {
    const Tensor &lengths =
        constantValue(resolve(node.input(0)), "Scan's sequence_lens");
    for (int64_t value : integersOf(lengths, "Scan's sequence_lens"))
      if (value != length)
        throw Unsupported{"Scan's sequence_lens must all be the full length " +
                          std::to_string(length)};
  }
  if (length > 0 && batch > kMaxLoopIterations / length)
    throw Unsupported{"Scan runs " + std::to_string(batch) + " x " +
                      std::to_string(length) + " steps, more than the " +
                      std::to_string(kMaxLoopIterations) + " fusec unrolls"};
  if (length == 0 && scanOutputCount > 0)
    throw Unsupported{"Scan's scan inputs are empty, so its scan outputs "
                      "have no known shape"};
  // Per batch element: the final states and each scan output's values.
  std::vector<std::vector<std::string>> finalStates(stateCount),
      scanned(scanOutputCount);
  for (int64_t b = 0; b < batch; ++b) {
    const std::string batchTag = batched ? "b" + std::to_string(b) + "_" : "";
    std::vector<std::string> states;
    for (int64_t i = 0; i < stateCount; ++i)
      states.push_back(batched
                           ? sliceAt(*this, owner, inputs[i], shapes[i], 0, b,
                                     batchTag + "state" + std::to_string(i))
                           : inputs[i]);
    std::vector<std::string> sequences;
    std::vector<Shape> sequenceShapes;
    for (int64_t j = 0; j < scanInputCount; ++j) {
      const Shape &shape = shapes[stateCount + j];
      sequences.push_back(
          batched ? sliceAt(*this, owner, inputs[stateCount + j], shape, 0, b,
                            batchTag + "scan" + std::to_string(j))
                  : inputs[stateCount + j]);
      sequenceShapes.push_back(batched ? Shape(shape.begin() + 1, shape.end())
                                       : shape);
    }
    std::vector<std::vector<std::string>> steps(scanOutputCount);
    for (int64_t t = 0; t < length; ++t) {
      chargeUnrolling(1 + scanInputCount + scanOutputCount);
      const std::string at = batchTag + std::to_string(t);
      std::vector<std::string> bodyInputs = states;
      for (int64_t j = 0; j < scanInputCount; ++j) {
        int64_t index = inputDirections[j] ? length - 1 - t : t;
        bodyInputs.push_back(sliceAt(*this, owner, sequences[j],
                                     sequenceShapes[j], inputAxes[j], index,
                                     at + "_in" + std::to_string(j)));
      }
      std::vector<std::string> outputs = convertSubgraph(
          body, scope + "/" + at, bodyInputs, "Scan's body (step " + at + ")");
      std::copy(outputs.begin(), outputs.begin() + stateCount, states.begin());
      for (int64_t k = 0; k < scanOutputCount; ++k)
        steps[k].push_back(outputs[stateCount + k]);
    }
    for (int64_t i = 0; i < stateCount; ++i)
      finalStates[i].push_back(states[i]);
    for (int64_t k = 0; k < scanOutputCount; ++k) {
      if (outputDirections[k])
        std::reverse(steps[k].begin(), steps[k].end());
      int64_t rank =
          static_cast<int64_t>(requireShape(steps[k][0], "Scan").size()) + 1;
      int64_t axis = outputAxes[k] < 0 ? outputAxes[k] + rank : outputAxes[k];
      if (axis < 0 || axis >= rank)
        throw Unsupported{"Scan's scan output " + std::to_string(k) +
                          " has no axis " + std::to_string(outputAxes[k])};
      if (stateCount + k >= node.output_size() ||
          node.output(stateCount + k).empty())
        continue; // an output left out
      std::string stacked =
          batched ? scope + "_" + batchTag + "out" + std::to_string(k)
                  : node.output(stateCount + k);
      stackAlong(*this, owner, steps[k], axis, stacked);
      scanned[k].push_back(stacked);
    }
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    bool isState = i < stateCount;
    const std::vector<std::string> &values =
        isState ? finalStates[i] : scanned[i - stateCount];
    if (!batched) {
      if (isState)
        aliases[node.output(i)] = values[0];
      continue;
    }
    stackAlong(*this, owner, values, 0, node.output(i));
  }
}

} // namespace fusec::onnx_import
