//===- PointwiseCppPrinter.cpp - A scheduled pointwise kernel as C++ -----===//
//
// An OpenMP simd loop over the elements, a loop over rows around a simd
// loop over columns for broadcast inputs, or vector math calls in stages
// over tiles, as the params (schedule/PointwiseSchedule.h) say.
//
//===----------------------------------------------------------------------===//

#include "codegen/PointwiseKernel.h"

#include "codegen/ScalarExprPrinter.h"
#include "codegen/schedule/PointwiseSchedule.h"

#include "mlir/Support/IndentedOstream.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

using namespace mlir;
using fusec::Shape;

namespace fuse {

/// The offset of row `row` (all dims but the last) in a broadcast input
/// read in the iteration shape.
static std::string rowOffsetExpression(const KernelInput &input) {
  const fusec::SymbolicShape &shape = input.symbolicAccessShape,
                             &strides = input.symbolicStrides;
  return broadcastOffsetExpression(
      "row", fusec::SymbolicShape(shape.begin(), shape.end() - 1),
      fusec::SymbolicShape(strides.begin(), strides.end() - 1), "int64_t");
}
/// `const T aN = <element>;`: an input's element in its compute type.
/// A symbolic kernel's OpenMP team starts only for counts that pay for it
/// (kCpuParallelThreshold), as the schedule decides for a static count.
static std::string parallelIf(const PointwiseKernel &kernel) {
  if (!kernel.readsDimSizes())
    return "";
  return " if(" + kernel.countExpression() +
         " >= " + std::to_string(kCpuParallelThreshold) + ")";
}

static void printInputElement(raw_ostream &os, const KernelInput &input,
                              const std::string &element) {
  os << "const " << computeType(input.dtype) << " " << input.value << " = "
     << fromStorage(input.dtype, element) << ";\n";
}

/// `outN[i] = <value>;` for each output, in its storage type.
/// `element` is "[i]" (the output itself) or "_tile[j]" (a tile that is
/// streamed out afterwards).
static void printOutputStores(raw_ostream &os, const PointwiseKernel &kernel,
                              StringRef element = "[i]") {
  for (size_t i = 0; i < kernel.outputs.size(); ++i)
    os << "out" << i << element << " = "
       << toStorage(kernel.outputs[i].dtype, kernel.outputs[i].value) << ";\n";
}

/// The variables an expression reads.
static void collectVariables(const ScalarExpr &expr,
                             llvm::StringSet<> &variables) {
  if (expr.kind == ScalarExpr::Kind::Variable)
    variables.insert(expr.name);
  for (const ScalarExpr *operand : expr.operands)
    collectVariables(*operand, variables);
}

/// A flat kernel's loop as stages over tiles of `stageTile` elements:
/// values a later stage reads pass through arrays of one tile.
static void
printCppStagedLoops(raw_indented_ostream &os, const PointwiseKernel &kernel,
                    const std::vector<std::vector<const ScalarLet *>> &stages,
                    bool parallel, bool streaming, int64_t stageTile) {
  // Where each let is defined, and which variables each stage reads.
  llvm::StringMap<size_t> definedIn;
  for (size_t s = 0; s < stages.size(); ++s)
    for (const ScalarLet *let : stages[s])
      definedIn[let->variable->name] = s;
  std::vector<llvm::StringSet<>> reads(stages.size());
  for (size_t s = 0; s < stages.size(); ++s)
    for (const ScalarLet *let : stages[s])
      collectVariables(*let->value, reads[s]);
  for (const KernelOutput &output : kernel.outputs)
    reads.back().insert(output.value);
  // Lets read by a later stage than their own get a tile array.
  llvm::StringSet<> carried;
  for (size_t s = 0; s < stages.size(); ++s)
    for (const auto &entry : reads[s]) {
      auto it = definedIn.find(entry.getKey());
      if (it != definedIn.end() && it->second < s)
        carried.insert(entry.getKey());
    }

  const std::string elements = kernel.countExpression();
  // Streaming stores are weakly ordered: each thread fences its own after
  // its last tile, before the team's barrier.
  std::optional<raw_indented_ostream::DelimitedScope> team;
  if (parallel && streaming) {
    os << "#pragma omp parallel" << parallelIf(kernel) << "\n{\n";
    team.emplace(os, "", "}\n");
    os << "#pragma omp for schedule(static) nowait\n";
  } else if (parallel) {
    os << "#pragma omp parallel for schedule(static)" << parallelIf(kernel)
       << "\n";
  }
  std::optional<raw_indented_ostream::DelimitedScope> tileLoop;
  os << "for (int64_t tile = 0; tile < " << elements
     << "; tile += " << stageTile << ") {\n";
  tileLoop.emplace(os, "", "}\n");
  // Whole tiles loop a constant count (no remainder code in every stage).
  std::string count = std::to_string(stageTile);
  if (kernel.readsDimSizes() || kernel.numElements() % stageTile != 0) {
    count = "count";
    os << "const int64_t count = " << elements << " - tile < " << stageTile
       << " ? " << elements << " - tile : " << stageTile << ";\n";
  }
  for (const ScalarLet &let : kernel.lets)
    if (carried.contains(let.variable->name))
      os << computeType(let.variable->dtype) << " " << let.variable->name
         << "_tile[" << stageTile << "];\n";
  if (streaming)
    for (size_t i = 0; i < kernel.outputs.size(); ++i)
      os << storageType(kernel.outputs[i].dtype) << " out" << i << "_tile["
         << stageTile << "] __attribute__((aligned(64)));\n";
  for (size_t s = 0; s < stages.size(); ++s) {
    os << "#pragma omp simd\n";
    os << "for (int64_t j = 0; j < " << count << "; ++j) {\n";
    auto stageLoop = os.scope("", "}\n");
    bool indexes = s + 1 == stages.size() ||
                   llvm::any_of(kernel.inputs, [&](const KernelInput &input) {
                     return input.access != InputAccess::Scalar &&
                            reads[s].contains(input.value);
                   });
    if (indexes)
      os << "const int64_t i = tile + j;\n";
    for (size_t i = 0; i < kernel.inputs.size(); ++i) {
      const KernelInput &input = kernel.inputs[i];
      if (input.access == InputAccess::Scalar ||
          !reads[s].contains(input.value))
        continue;
      std::string pointer = "in" + std::to_string(i);
      std::string index = input.access == InputAccess::Broadcast
                              ? input.offsetAt("i", "int64_t")
                              : "i";
      printInputElement(os, input, pointer + "[" + index + "]");
    }
    for (const ScalarLet &let : kernel.lets) {
      const std::string &name = let.variable->name;
      if (reads[s].contains(name) && definedIn.lookup(name) < s)
        os << "const " << computeType(let.variable->dtype) << " " << name
           << " = " << name << "_tile[j];\n";
    }
    std::vector<ScalarLet> stageLets;
    for (const ScalarLet *let : stages[s])
      stageLets.push_back(*let);
    ScalarExprPrinter(&cpuMathFunctions()).print(stageLets, os);
    for (const ScalarLet *let : stages[s])
      if (carried.contains(let->variable->name))
        os << let->variable->name << "_tile[j] = " << let->variable->name
           << ";\n";
    if (s + 1 == stages.size())
      printOutputStores(os, kernel, streaming ? "_tile[j]" : "[i]");
  }
  if (streaming)
    for (size_t i = 0; i < kernel.outputs.size(); ++i)
      os << "fusec_stream_store(out" << i << " + tile, out" << i << "_tile, "
         << count << " * sizeof(*out" << i << "));\n";
  tileLoop.reset();
  if (streaming)
    os << "fusec_stream_fence();\n";
}

/// The body of a C++ kernel with elements: pointers, loops, statements.
static void printCppLoops(raw_indented_ostream &os,
                          const PointwiseKernel &kernel,
                          const ScheduledPointwise &schedule) {
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    const char *type = storageType(kernel.inputs[i].dtype);
    os << "const " << type
       << (kernel.mayAlias(true, i) ? " *in" : " *__restrict in") << i
       << " = (const " << type << " *)fusec_inputs[" << i << "];\n";
  }
  for (size_t i = 0; i < kernel.outputs.size(); ++i) {
    const char *type = storageType(kernel.outputs[i].dtype);
    os << type << (kernel.mayAlias(false, i) ? " *out" : " *__restrict out")
       << i << " = (" << type << " *)fusec_outputs[" << i << "];\n";
  }
  // Scalars are loaded once, outside the loops.
  for (size_t i = 0; i < kernel.inputs.size(); ++i)
    if (kernel.inputs[i].access == InputAccess::Scalar)
      printInputElement(os, kernel.inputs[i], "in" + std::to_string(i) + "[0]");

  const PointwiseParams &params = schedule.params;
  const bool parallel = params.parallel, nested = params.rowLoop;
  if (params.stages > 0) {
    printCppStagedLoops(os, kernel, schedule.stages, parallel,
                        params.streamingStores, params.stageTile);
    return;
  }
  std::optional<raw_indented_ostream::DelimitedScope> rowLoop;
  if (nested) {
    int64_t columns = kernel.iterationShape.back();
    std::string rows =
        kernel.readsDimSizes()
            ? kernel.countExpression() + " / " + std::to_string(columns)
            : std::to_string(kernel.numElements() / columns);
    if (parallel)
      os << "#pragma omp parallel for schedule(static)" << parallelIf(kernel)
         << "\n";
    os << "for (int64_t row = 0; row < " << rows << "; ++row) {\n";
    rowLoop.emplace(os, "", "}\n");
    for (size_t i = 0; i < kernel.inputs.size(); ++i)
      if (kernel.inputs[i].access == InputAccess::Broadcast)
        os << "const int64_t in" << i
           << "_row = " << rowOffsetExpression(kernel.inputs[i]) << ";\n";
    os << "#pragma omp simd\n";
    os << "for (int64_t col = 0; col < " << columns << "; ++col) {\n";
  } else {
    os << (parallel ? "#pragma omp parallel for simd schedule(static)" +
                          parallelIf(kernel) + "\n"
                    : std::string("#pragma omp simd\n"));
    os << "for (int64_t i = 0; i < " << kernel.countExpression()
       << "; ++i) {\n";
  }
  {
    auto elementLoop = os.scope("", "}\n");
    if (nested)
      os << "const int64_t i = row * " << kernel.iterationShape.back()
         << " + col;\n";
    for (size_t i = 0; i < kernel.inputs.size(); ++i) {
      const KernelInput &input = kernel.inputs[i];
      if (input.access == InputAccess::Scalar)
        continue;
      std::string pointer = "in" + std::to_string(i);
      std::string index = "i";
      if (input.access == InputAccess::Broadcast)
        index = nested ? pointer + "_row" +
                             (input.symbolicStrides.back() !=
                                      fusec::SymbolicSize::constant(0)
                                  ? std::string(" + col")
                                  : "")
                       : input.offsetAt("i", "int64_t");
      printInputElement(os, input, pointer + "[" + index + "]");
    }
    ScalarExprPrinter(&cpuMathFunctions()).print(kernel.lets, os);
    printOutputStores(os, kernel);
  }
}

std::string printCppKernel(const PointwiseKernel &kernel,
                           const ScheduledPointwise &schedule) {
  std::string source;
  llvm::raw_string_ostream raw(source);
  raw_indented_ostream os(raw);
  printKernelComment(os, kernel, "");
  os << cppKernelSignature(kernel.name, kernel.readsDimSizes()) << " {\n";
  {
    auto body = os.scope();
    if (kernel.numElements() == 0) {
      os << "(void)fusec_inputs;\n(void)fusec_outputs; // empty tensors\n";
    } else {
      printCppLoops(os, kernel, schedule);
    }
  }
  os << "}\n";
  return source;
}

} // namespace fuse
