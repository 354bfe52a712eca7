//===- Matmul.cpp - ONNX matmul ops ---------------------------------------===//
//
// MatMul, Gemm and Einsum (a product of broadcast operands and a sum).
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

/// Einsum: each operand's labels laid along one label order (the output's,
/// then the summed ones), its repeated labels first reduced to their
/// diagonal (a gather), its missing ones as dims of 1; the operands are
/// multiplied (broadcast) and the summed labels reduced: one fused
/// reduction kernel, never the library's matmul. "..." stands for the
/// broadcast dims, right-aligned; without "->" the output is the ellipsis
/// dims, then the labels used once, alphabetically.
void einsumByProducts(OnnxConverter &converter, const onnx::NodeProto &proto,
                      GraphNode &node) {
  auto equationIt = node.attrs.find("equation");
  if (equationIt == node.attrs.end())
    throw Unsupported{"Einsum needs its equation"};
  std::string equation;
  for (char c : std::get<std::string>(equationIt->second))
    if (c != ' ')
      equation += c;
  std::string lhs = equation, output;
  const size_t arrow = equation.find("->");
  const bool explicitOutput = arrow != std::string::npos;
  if (explicitOutput) {
    lhs = equation.substr(0, arrow);
    output = equation.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != node.inputs.size())
    throw Unsupported{"the equation has " + std::to_string(terms.size()) +
                      " operands but Einsum has " +
                      std::to_string(node.inputs.size()) + " inputs"};
  // Labels as ints: letters as themselves, ellipsis dims as 256 + k (k
  // counting from the last ellipsis dim).
  auto labelsOf = [&](const std::string &term, int64_t rank,
                      const std::string &what) {
    std::vector<int> labels;
    size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos)
      letters.erase(dots, 3);
    for (char c : letters)
      if (!std::isalpha(static_cast<unsigned char>(c)))
        throw Unsupported{"the equation's " + what + " has '" +
                          std::string(1, c) + "', not a letter"};
    int64_t ellipsis = rank - static_cast<int64_t>(letters.size());
    if (dots == std::string::npos ? ellipsis != 0 : ellipsis < 0)
      throw Unsupported{"the equation's " + what + " '" + term +
                        "' does not fit rank " + std::to_string(rank)};
    for (size_t i = 0; i < term.size();) {
      if (term.compare(i, 3, "...") == 0) {
        for (int64_t k = ellipsis; k-- > 0;)
          labels.push_back(256 + static_cast<int>(k));
        i += 3;
      } else {
        labels.push_back(static_cast<unsigned char>(term[i++]));
      }
    }
    return labels;
  };
  std::vector<std::vector<int>> operandLabels;
  std::vector<Shape> shapes;
  std::map<int, int64_t> sizes, uses;
  int64_t ellipsisDims = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    Shape shape = converter.requireShape(node.inputs[t], "Einsum");
    std::vector<int> labels =
        labelsOf(terms[t], shape.size(), "operand " + std::to_string(t));
    for (size_t d = 0; d < labels.size(); ++d) {
      int label = labels[d];
      if (label >= 256)
        ellipsisDims = std::max<int64_t>(ellipsisDims, label - 255);
      auto [it, fresh] = sizes.emplace(label, shape[d]);
      if (!fresh && it->second != shape[d]) {
        if (label >= 256 && (it->second == 1 || shape[d] == 1))
          it->second = std::max(it->second, shape[d]); // broadcast
        else
          throw Unsupported{"label dims disagree (" +
                            std::to_string(it->second) + " and " +
                            std::to_string(shape[d]) + ")"};
      }
      ++uses[label];
    }
    operandLabels.push_back(labels);
    shapes.push_back(shape);
  }
  std::vector<int> outputLabels;
  if (explicitOutput) {
    outputLabels =
        labelsOf(output,
                 ellipsisDims + static_cast<int64_t>(output.size()) -
                     (output.find("...") != std::string::npos ? 3 : 0),
                 "output");
    std::set<int> seen;
    for (int label : outputLabels)
      if (!sizes.count(label) || !seen.insert(label).second)
        throw Unsupported{"the output's labels must each appear once, in "
                          "an operand"};
  } else {
    for (int64_t k = ellipsisDims; k-- > 0;)
      outputLabels.push_back(256 + static_cast<int>(k));
    for (auto [label, count] : uses)
      if (label < 256 && count == 1)
        outputLabels.push_back(label);
  }
  std::vector<int> order = outputLabels;
  for (auto [label, size] : sizes)
    if (std::find(order.begin(), order.end(), label) == order.end())
      order.push_back(label);
  std::string product;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::string value = node.inputs[t];
    std::vector<int> labels = operandLabels[t];
    Shape shape = shapes[t];
    const std::string tag = std::to_string(t);
    // A label repeated within the operand: its diagonal, by a gather of
    // the two dims side by side, flattened.
    for (size_t p = 0; p < labels.size(); ++p)
      for (size_t q = p + 1; q < labels.size(); ++q) {
        if (labels[p] != labels[q])
          continue;
        std::vector<int64_t> perm;
        for (size_t d = 0; d < labels.size(); ++d)
          if (d != q)
            perm.push_back(d);
        perm.insert(perm.begin() + p + 1, static_cast<int64_t>(q));
        Shape moved, flat;
        for (int64_t d : perm)
          moved.push_back(shape[d]);
        const int64_t n = shape[p];
        for (size_t d = 0; d < moved.size(); ++d)
          if (d == p + 1)
            flat.back() *= moved[d];
          else
            flat.push_back(moved[d]);
        checkConstantElements(n, "Einsum's diagonal");
        Tensor diagonal(DType::I64, {n});
        for (int64_t i = 0; i < n; ++i)
          diagonal.set(i, static_cast<double>(i * (n + 1)));
        std::string suffix = tag + "_" + std::to_string(p);
        value = converter.addStep(
            node, "gather",
            {viewStep(converter, node,
                      converter.addStep(node, "transpose", {value},
                                        "paired_" + suffix, {{"perm", perm}}),
                      flat, "pair_flat_" + suffix),
             converter.addStepConstant(node, "diagonal_index_" + suffix,
                                       diagonal)},
            "diagonal_" + suffix, {{"axis", static_cast<int64_t>(p)}});
        labels.erase(labels.begin() + q);
        shape.erase(shape.begin() + q);
        --q;
      }
    // Laid along `order`: a transpose into it, then dims of 1 where the
    // operand lacks a label.
    std::vector<int64_t> perm;
    Shape laid;
    for (int label : order) {
      auto at = std::find(labels.begin(), labels.end(), label);
      if (at != labels.end()) {
        perm.push_back(at - labels.begin());
        laid.push_back(shape[at - labels.begin()]);
      } else {
        laid.push_back(1);
      }
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity &= perm[i] == static_cast<int64_t>(i);
    if (!identity)
      value = converter.addStep(node, "transpose", {value}, "ordered_" + tag,
                                {{"perm", perm}});
    if (laid.size() != shape.size())
      value = viewStep(converter, node, value, laid, "laid_" + tag);
    product = product.empty() ? value
                              : converter.addStep(node, "mul", {product, value},
                                                  "product_" + tag);
  }
  Shape result;
  for (int label : outputLabels)
    result.push_back(sizes[label]);
  std::vector<int64_t> summed;
  for (size_t i = outputLabels.size(); i < order.size(); ++i)
    summed.push_back(static_cast<int64_t>(i));
  if (summed.empty()) {
    // Broadcasting may still widen a dim of 1: expand to the result.
    node.op = "expand";
    node.inputs = {product};
    node.attrs = {
        {"shape", std::vector<int64_t>(result.begin(), result.end())}};
    return;
  }
  node.op = "reduce_sum";
  node.inputs = {product};
  node.attrs = {{"axes", summed}, {"keepdims", int64_t(0)}};
}

} // namespace

void registerMatmulOps(OnnxRegistry &registry) {
  registry.on("MatMul", "matmul");
  registry.on("Gemm", "gemm").attrs({"alpha", "beta", "transA", "transB"});
  registry.on("Einsum", "reduce_sum", 12)
      .attr("equation")
      .rewrite(einsumByProducts);
}

} // namespace fusec::onnx_import
