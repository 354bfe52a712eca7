//===- PointwiseKernel.cpp - Region analysis and the C++ printer ---------===//

#include "codegen/PointwiseKernel.h"

#include "codegen/EmbeddedSources.h"
#include "codegen/RegionKind.h"
#include "codegen/ScalarExprPrinter.h"
#include "ir/ElementwiseOps.h"
#include "ir/TypeUtils.h"

#include "mlir/Support/IndentedOstream.h"

#include <optional>

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse {

bool PointwiseKernel::broadcastsInIterationShape() const {
  return llvm::all_of(inputs, [&](const KernelInput &input) {
    return input.access != InputAccess::Broadcast ||
           input.accessShape == iterationShape;
  });
}

/// The shape a region input is read in: that of the op broadcasting it
/// (explicitly or as an implicitly broadcast operand), else its own.
static FailureOr<Shape> accessShapeOf(BlockArgument arg, int64_t count) {
  Shape own = toShape(cast<RankedTensorType>(arg.getType()));
  if (fusec::numElements(own) == count)
    return own;
  std::optional<Shape> access;
  for (Operation *user : arg.getUsers()) {
    Shape shape = toShape(cast<RankedTensorType>(user->getResult(0).getType()));
    if (access && *access != shape)
      return failure();
    access = shape;
  }
  return access ? *access : own;
}

bool PointwiseKernel::hasBroadcastInput() const {
  return llvm::any_of(inputs, [](const KernelInput &input) {
    return input.access == InputAccess::Broadcast;
  });
}

static int64_t numElementsOf(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

FailureOr<PointwiseKernel> analyzePointwiseRegion(FusionOp fusion,
                                                  unsigned index) {
  PointwiseKernel kernel;
  Block &body = fusion.getBody().front();
  YieldOp yield = fusion.getYield();
  if (yield.getValues().empty())
    return fusion.emitError("codegen: a fusion region must yield a value");

  kernel.iterationShape =
      toShape(cast<RankedTensorType>(yield.getValues()[0].getType()));
  // Every computed value is one element per iteration (views keep element
  // order); only inputs and constants may be smaller (and are then read
  // through broadcasting).
  for (Operation &op : body.without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (numElementsOf(op.getResult(0)) != kernel.numElements())
      return op.emitError() << "codegen: " << describeOp(&op)
                            << " computes a different number of elements "
                               "than its region ("
                            << fusec::formatShape(kernel.iterationShape)
                            << "); only region inputs may be broadcast";
    if (!isa<BroadcastToOp, CastOp, SelectOp, ReshapeOp,
             ElementwiseOpInterface>(op))
      return op.emitError() << "codegen: " << describeOp(&op)
                            << " cannot be part of a pointwise kernel";
    kernel.ops.push_back(op.getName().stripDialect().str());
  }

  auto builder = std::make_shared<ScalarExprBuilder>();
  for (BlockArgument arg : body.getArguments()) {
    KernelInput input;
    input.dtype = dtypeOf(arg.getType());
    input.shape = toShape(cast<RankedTensorType>(arg.getType()));
    int64_t elements = fusec::numElements(input.shape);
    FailureOr<Shape> access = accessShapeOf(arg, kernel.numElements());
    if (failed(access) || !fusec::broadcastsTo(input.shape, *access))
      return fusion.emitError()
             << "codegen: region input #" << arg.getArgNumber() << " of shape "
             << fusec::formatShape(input.shape)
             << " is not broadcast to one shape of the region's "
             << fusec::formatShape(kernel.iterationShape) << " elements";
    input.accessShape = *access;
    if (elements == kernel.numElements())
      input.access = InputAccess::Contiguous;
    else if (elements == 1)
      input.access = InputAccess::Scalar;
    else
      input.access = InputAccess::Broadcast;
    input.strides = fusec::broadcastStrides(input.shape, input.accessShape);
    input.value = "a" + std::to_string(arg.getArgNumber());
    builder->bind(arg, input.value);
    kernel.inputs.push_back(input);
  }
  if (failed(builder->build(body, kernel.lets)))
    return failure();
  for (Value value : yield.getValues())
    kernel.outputs.push_back(
        {dtypeOf(value.getType()), builder->variableOf(value)});
  kernel.expressions = std::move(builder);

  kernel.usesHalfTypes = regionUsesHalfTypes(fusion);
  // Broadcasts and views compute nothing: the name lists the ops that do.
  std::vector<std::string> computing;
  for (const std::string &op : kernel.ops)
    if (op != "broadcast_to" && op != "reshape")
      computing.push_back(op);
  kernel.name =
      kernelName("fused", computing.empty() ? kernel.ops : computing, index);
  return kernel;
}

//===----------------------------------------------------------------------===//
// C++ with OpenMP
//===----------------------------------------------------------------------===//

/// libm functions with vector variants in glibc's libmvec. Declaring them
/// `simd` lets `#pragma omp simd` loops call the 4/8/16-lane versions
/// instead of one scalar call per element (the runtime links -lmvec).
static const char *const kLibmvecFunctions[][2] = {
    {"sin", "1"},  {"cos", "1"},   {"tan", "1"},   {"asin", "1"},
    {"acos", "1"}, {"atan", "1"},  {"sinh", "1"},  {"cosh", "1"},
    {"tanh", "1"}, {"asinh", "1"}, {"acosh", "1"}, {"atanh", "1"},
    {"exp", "1"},  {"log", "1"},   {"log1p", "1"}, {"erf", "1"},
    {"pow", "2"}};

std::string cppPrelude(bool withHalfTypes) {
  std::string prelude = "#include <math.h>\n#include <stdint.h>\n\n"
                        "extern \"C\" {\n";
  for (const auto &[name, arity] : kLibmvecFunctions)
    for (const char *type : {"float", "double"}) {
      std::string suffix = std::string(type) == "float" ? "f" : "";
      std::string params =
          arity[0] == '2' ? std::string(type) + ", " + type : std::string(type);
      prelude += std::string(type) + " " + name + suffix + "(" + params +
                 ") __attribute__((simd(\"notinbranch\")));\n";
    }
  prelude += "}\n\n";
  prelude += kCombinersSource;
  prelude += kScalarMathSource;
  if (withHalfTypes)
    prelude += std::string("\n") + kHalfFloatSource;
  return prelude;
}

std::string fromStorage(DType dtype, const std::string &element) {
  if (dtype == DType::F16)
    return "fusec_f16_to_f32(" + element + ")";
  if (dtype == DType::BF16)
    return "fusec_bf16_to_f32(" + element + ")";
  return element;
}

std::string toStorage(DType dtype, const std::string &value) {
  if (dtype == DType::F16)
    return "fusec_f32_to_f16(" + value + ")";
  if (dtype == DType::BF16)
    return "fusec_f32_to_bf16(" + value + ")";
  return value;
}

std::string broadcastOffsetExpression(const std::string &index,
                                      const Shape &shape,
                                      const Shape &strides) {
  std::vector<std::string> terms;
  int64_t inner = 1; // product of the dims after d
  for (size_t d = shape.size(); d-- > 0;) {
    if (strides[d] != 0) {
      std::string coord =
          inner == 1 ? index : "(" + index + ") / " + std::to_string(inner);
      if (d != 0) // the outermost coordinate needs no wrap-around
        coord = "(" + coord + ") % " + std::to_string(shape[d]);
      terms.push_back(strides[d] == 1
                          ? coord
                          : "(" + coord + ") * " + std::to_string(strides[d]));
    }
    inner *= shape[d];
  }
  std::string expression;
  for (auto term = terms.rbegin(); term != terms.rend(); ++term)
    expression += (expression.empty() ? "" : " + ") + *term;
  return expression.empty() ? "0" : expression;
}

/// The offset of row `row` (all dims but the last) in a broadcast input.
static std::string rowOffsetExpression(const Shape &iteration,
                                       const Shape &strides) {
  return broadcastOffsetExpression(
      "row", Shape(iteration.begin(), iteration.end() - 1),
      Shape(strides.begin(), strides.end() - 1));
}

void printKernelComment(llvm::raw_ostream &os, const PointwiseKernel &kernel,
                        const std::string &suffix) {
  os << "// " << kernel.name << ": ";
  for (size_t i = 0; i < kernel.ops.size(); ++i)
    os << (i ? " -> " : "") << kernel.ops[i];
  os << " over " << fusec::formatShape(kernel.iterationShape) << " elements"
     << suffix << "\n";
}

/// `const T aN = <element>;`: an input's element in its compute type.
static void printInputElement(raw_ostream &os, const KernelInput &input,
                              const std::string &element) {
  os << "const " << computeType(input.dtype) << " " << input.value << " = "
     << fromStorage(input.dtype, element) << ";\n";
}

/// The body of a C++ kernel with elements: pointers, loops, statements.
static void printCppLoops(raw_indented_ostream &os,
                          const PointwiseKernel &kernel) {
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    const char *type = storageType(kernel.inputs[i].dtype);
    os << "const " << type << " *__restrict in" << i << " = (const " << type
       << " *)fusec_inputs[" << i << "];\n";
  }
  for (size_t i = 0; i < kernel.outputs.size(); ++i) {
    const char *type = storageType(kernel.outputs[i].dtype);
    os << type << " *__restrict out" << i << " = (" << type
       << " *)fusec_outputs[" << i << "];\n";
  }
  // Scalars are loaded once, outside the loops.
  for (size_t i = 0; i < kernel.inputs.size(); ++i)
    if (kernel.inputs[i].access == InputAccess::Scalar)
      printInputElement(os, kernel.inputs[i], "in" + std::to_string(i) + "[0]");

  bool parallel = kernel.numElements() >= kCpuParallelThreshold;
  // Broadcast inputs read in the iteration shape: a loop over rows computes
  // each input's row offset once, and the inner loop is contiguous.
  bool nested =
      kernel.hasBroadcastInput() && kernel.broadcastsInIterationShape();
  std::optional<raw_indented_ostream::DelimitedScope> rowLoop;
  if (nested) {
    int64_t columns = kernel.iterationShape.back();
    int64_t rows = kernel.numElements() / columns;
    if (parallel)
      os << "#pragma omp parallel for schedule(static)\n";
    os << "for (int64_t row = 0; row < " << rows << "; ++row) {\n";
    rowLoop.emplace(os, "", "}\n");
    for (size_t i = 0; i < kernel.inputs.size(); ++i)
      if (kernel.inputs[i].access == InputAccess::Broadcast)
        os << "const int64_t in" << i << "_row = "
           << rowOffsetExpression(kernel.iterationShape,
                                  kernel.inputs[i].strides)
           << ";\n";
    os << "#pragma omp simd\n";
    os << "for (int64_t col = 0; col < " << columns << "; ++col) {\n";
  } else {
    os << (parallel ? "#pragma omp parallel for simd schedule(static)\n"
                    : "#pragma omp simd\n");
    os << "for (int64_t i = 0; i < " << kernel.numElements() << "; ++i) {\n";
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
                             (input.strides.back() != 0 ? std::string(" + col")
                                                        : "")
                       : broadcastOffsetExpression("i", input.accessShape,
                                                   input.strides);
      printInputElement(os, input, pointer + "[" + index + "]");
    }
    ScalarExprPrinter().print(kernel.lets, os);
    for (size_t i = 0; i < kernel.outputs.size(); ++i)
      os << "out" << i << "[i] = "
         << toStorage(kernel.outputs[i].dtype, kernel.outputs[i].value)
         << ";\n";
  }
}

std::string printCppKernel(const PointwiseKernel &kernel) {
  std::string source;
  llvm::raw_string_ostream raw(source);
  raw_indented_ostream os(raw);
  printKernelComment(os, kernel, "");
  os << "extern \"C\" void " << kernel.name
     << "(const void *const *fusec_inputs, void *const *fusec_outputs) {\n";
  {
    auto body = os.scope();
    if (kernel.numElements() == 0) {
      os << "(void)fusec_inputs;\n(void)fusec_outputs; // empty tensors\n";
    } else {
      printCppLoops(os, kernel);
    }
  }
  os << "}\n";
  return source;
}

} // namespace fuse
