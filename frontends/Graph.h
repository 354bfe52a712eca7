//===- Graph.h - Models as plain data, and a builder -----------*- C++ -*-===//
//
// The graph every non-MLIR frontend produces: the JSON reader and the C++
// GraphBuilder both yield a Graph, and one importer turns it into fuse IR.
// Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTENDS_GRAPH_H
#define FUSEC_FRONTENDS_GRAPH_H

#include "runtime/core/SymbolicShape.h"
#include "runtime/core/Tensor.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace fusec {

struct GraphInput {
  std::string name;
  DType dtype;
  /// -1 where `dimNames` names a symbolic dim.
  Shape shape;
  /// Empty, or per dim: the symbol (Graph::symbols) the dim's size is, or ""
  /// for a fixed dim.
  std::vector<std::string> dimNames;
};

struct GraphConstant {
  std::string name;
  Tensor value;
};

/// Op parameters, with ONNX's attribute names: "dtype" (a dtype name) for
/// cast, "shape" for reshape, "axes"/"keepdims" for reductions, "axis" for
/// softmax, ... Integers stay exact (int64_t); JSON numbers with a fraction
/// or exponent are doubles.
using AttrValue =
    std::variant<std::string, std::vector<int64_t>, int64_t, double>;

struct GraphNode {
  std::string name;
  std::string op; ///< a fuse dialect mnemonic: "sin", "add", "cast", ...
  std::vector<std::string> inputs, outputs;
  std::map<std::string, AttrValue> attrs;
};

struct Graph {
  std::string name = "main";
  /// The file it came from, for error messages ("" for built graphs).
  std::string sourcePath;
  std::vector<GraphInput> inputs;
  std::vector<GraphConstant> constants;
  std::vector<GraphNode> nodes;
  std::vector<std::string> outputs;
  /// The names the outputs go by, where one differs from its value's: an
  /// ONNX output that only renames another value (Identity, Dropout at
  /// inference) keeps its own. Empty: the values' names.
  std::vector<std::string> outputNames;
  /// The dims whose size varies between runs, named by inputs' dimNames.
  std::vector<DimSymbol> symbols;

  /// The name output `index` goes by.
  const std::string &outputName(size_t index) const {
    return outputNames.empty() ? outputs[index] : outputNames[index];
  }
};

/// The shapes given for inputs with named dims, by input name
/// (`--input-shape`, CompileOptions::inputShapes).
using InputShapes = std::map<std::string, Shape>;
/// Ranges of named dims left symbolic (`--dim NAME=MIN..MAX`), by name; a
/// range of one size fixes the dim (`--dim NAME=SIZE`).
using DimRanges = std::map<std::string, DimSymbol>;

/// Reads a JSON model (docs/json-format.md). Throws fusec::Error as
/// "FILE: node 'NAME': error: REASON" (or naming the constant/input). An
/// input's named dims ("shape": ["batch", 128]) take their sizes from
/// `inputShapes`, or from an input read before that binds the same name;
/// one left unbound with a range in `dimRanges` stays symbolic.
Graph readJsonGraph(const std::string &path,
                    const InputShapes &inputShapes = {},
                    const DimRanges &dimRanges = {});
/// The same for a JSON model held in memory; `name` stands for the file in
/// messages.
Graph parseJsonGraph(const std::string &text, const std::string &name,
                     const InputShapes &inputShapes = {},
                     const DimRanges &dimRanges = {});
/// A JSON model's inputs as declared: named dims are -1 (for binding them
/// from given tensors before compiling).
std::vector<GraphInput> readJsonInputs(const std::string &path);

/// Builds graphs in C++:
///   GraphBuilder b("seed");
///   auto x = b.input("x", DType::F32, {2, 3});
///   auto s = b.op("sin", {b.op("sin", {b.op("sin", {b.op("sin", {x})})})});
///   b.output(b.op("add", {b.op("mul", {s, b.input("y", DType::F32, {2, 3})}),
///   s})); Graph g = b.build();
class GraphBuilder {
public:
  explicit GraphBuilder(std::string name = "main");
  /// Each returns the name of the value it defines.
  std::string input(const std::string &name, DType dtype, Shape shape);
  /// An input with symbolic dims: `dimNames[d]` names dim d's symbol
  /// (declared with symbol()), "" keeps `shape[d]`.
  std::string input(const std::string &name, DType dtype, Shape shape,
                    std::vector<std::string> dimNames);
  /// Declares a symbolic dim, its range and (optionally) that every size is
  /// a multiple of `multiple`.
  void symbol(const std::string &name, int64_t min, int64_t max,
              int64_t multiple = 1);
  std::string constant(const std::string &name, Tensor value);
  /// A rank-0 constant, broadcast wherever it is used.
  std::string scalar(double value, DType dtype);
  std::string op(const std::string &op, const std::vector<std::string> &inputs,
                 std::map<std::string, AttrValue> attrs = {});
  /// Marks a value as a graph output, optionally renaming it.
  void output(const std::string &value);
  const Graph &graph() const { return built; }
  Graph build() const { return built; }

private:
  std::string freshName(const char *prefix);
  Graph built;
  unsigned counter = 0;
};

} // namespace fusec

#endif
