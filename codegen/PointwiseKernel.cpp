//===- PointwiseKernel.cpp - Pointwise regions: analysis, C++ prelude
//-------===//

#include "codegen/PointwiseKernel.h"

#include "codegen/EmbeddedSources.h"
#include "codegen/RegionKind.h"
#include "codegen/ScalarExprPrinter.h"
#include "codegen/schedule/PointwiseSchedule.h"
#include "ir/ElementwiseOps.h"
#include "ir/TypeUtils.h"

#include "mlir/Support/IndentedOstream.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse {

bool PointwiseKernel::broadcastsInIterationShape() const {
  return llvm::all_of(inputs, [&](const KernelInput &input) {
    return input.access != InputAccess::Broadcast ||
           input.symbolicAccessShape == symbolicIterationShape;
  });
}

/// The value whose shape a region input is read in: the op broadcasting
/// it (explicitly or as an implicitly broadcast operand), else the input.
static FailureOr<Value> accessValueOf(BlockArgument arg, int64_t count) {
  Shape own = toShape(cast<RankedTensorType>(arg.getType()));
  if (fusec::numElements(own) == count)
    return Value(arg);
  std::optional<Value> access;
  for (Operation *user : arg.getUsers()) {
    Value result = user->getResult(0);
    if (access && access->getType() != result.getType())
      return failure();
    access = result;
  }
  return access ? *access : Value(arg);
}

bool PointwiseKernel::hasBroadcastInput() const {
  return llvm::any_of(inputs, [](const KernelInput &input) {
    return input.access == InputAccess::Broadcast;
  });
}

static int64_t numElementsOf(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

FailureOr<PointwiseKernel>
analyzePointwiseRegion(FusionOp fusion, unsigned index,
                       const SymbolicDims *symbolic) {
  PointwiseKernel kernel;
  Block &body = fusion.getBody().front();
  YieldOp yield = fusion.getYield();
  if (yield.getValues().empty())
    return fusion.emitError("codegen: a fusion region must yield a value");

  kernel.iterationShape =
      toShape(cast<RankedTensorType>(yield.getValues()[0].getType()));
  kernel.symbolicIterationShape = dimsOf(symbolic, yield.getValues()[0]);
  // Every computed value is one element per iteration (views keep element
  // order); only inputs and constants may be smaller (and are then read
  // through broadcasting).
  for (Operation &op : body.without_terminator()) {
    if (isa<ConstantOp>(op)) // one element, read by every one
      continue;
    if (isa<DimSizeOp>(op)) { // the same: a size the kernel takes
      kernel.ops.push_back(op.getName().stripDialect().str());
      continue;
    }
    if (numElementsOf(op.getResult(0)) != kernel.numElements())
      return op.emitError() << "codegen: " << describeOp(&op)
                            << " computes a different number of elements "
                               "than its region ("
                            << fusec::formatShape(kernel.iterationShape)
                            << "); only region inputs may be broadcast";
    if (!isa<BroadcastToOp, CastOp, BitcastOp, SelectOp, ReshapeOp, IotaOp,
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
    FailureOr<Value> access = accessValueOf(arg, kernel.numElements());
    if (failed(access) ||
        !fusec::broadcastsTo(
            input.shape, toShape(cast<RankedTensorType>(access->getType()))))
      return fusion.emitError()
             << "codegen: region input #" << arg.getArgNumber() << " of shape "
             << fusec::formatShape(input.shape)
             << " is not broadcast to one shape of the region's "
             << fusec::formatShape(kernel.iterationShape) << " elements";
    input.symbolicAccessShape = dimsOf(symbolic, *access);
    input.symbolicStrides = fusec::broadcastStrides(dimsOf(symbolic, arg),
                                                    input.symbolicAccessShape);
    if (!input.symbolicAccessShape.empty())
      input.innermostDivisor =
          symbolic ? input.symbolicAccessShape.back().knownDivisor(
                         symbolic->symbols())
                   : input.symbolicAccessShape.back().factor;
    if (elements == kernel.numElements())
      input.access = InputAccess::Contiguous;
    else if (elements == 1)
      input.access = InputAccess::Scalar;
    else
      input.access = InputAccess::Broadcast;
    input.value = "a" + std::to_string(arg.getArgNumber());
    builder->bind(arg, input.value);
    kernel.inputs.push_back(input);
  }
  // A symbolic size is an expression of the sizes the kernel takes; an
  // iota's element is its index (views keep the element order).
  for (Operation &op : body.without_terminator()) {
    if (!isa<DimSizeOp, IotaOp>(op))
      continue;
    if (!symbolic)
      return op.emitError()
             << "codegen: " << describeOp(&op) << " outside a symbolic program";
    if (auto size = dyn_cast<DimSizeOp>(op)) {
      std::optional<fusec::SymbolicSize> value =
          symbolic->sizeNamed(size.getSymbols(), size.getFactor());
      if (!value)
        return op.emitError() << "codegen: " << describeOp(&op)
                              << " names a symbol the program lacks";
      builder->bind(size.getResult(),
                    "(" + value->cExpression("fusec_dims") + ")");
    } else {
      builder->bind(op.getResult(0), "((int64_t)i)");
      kernel.readsElementIndex = true;
    }
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

const MathFunctionMap &cpuMathFunctions() {
  static const MathFunctionMap functions = [] {
    MathFunctionMap map;
    map["exp"] = "fusec_expf";
    return map;
  }();
  return functions;
}

std::string cppKernelSignature(const std::string &name, bool readsDimSizes) {
  return "extern \"C\" void " + name +
         "(const void *const *fusec_inputs, void *const *fusec_outputs" +
         (readsDimSizes ? ", const int64_t *fusec_dims" : "") + ")";
}

std::string cudaDimParameters(size_t dimCount) {
  std::string parameters;
  for (size_t d = 0; d < dimCount; ++d)
    parameters += ", const long long fusec_dim" + std::to_string(d);
  return parameters;
}

std::string cudaDimArray(size_t dimCount) {
  std::string values;
  for (size_t d = 0; d < dimCount; ++d)
    values += (d ? ", " : "") + std::string("fusec_dim") + std::to_string(d);
  return "const int64_t fusec_dims[" + std::to_string(dimCount) + "] = {" +
         values + "};\n";
}

std::string PointwiseKernel::countExpression() const {
  return symbolicElements ? symbolicElements->cExpression("fusec_dims")
                          : std::to_string(numElements());
}

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
  // Streaming stores of large outputs (device/StreamStore.h; x86-64 has
  // SSE2's everywhere), of whole 64-byte lines only: a line written in part is
  // flushed in part, and that made a 16-thread host's streaming 4x slower than
  // plain stores, where whole lines are 1.2-1.5x faster.
  prelude += std::string(kStreamStoreSource) + "\n";
  // fusec_expf (device/CpuExp.h): exp(x) = 2^n e^r with n = rint(x / ln 2), |r|
  // <= ln(2) / 2, e^r by its Taylor polynomial of degree 7, 2^n in two factors
  // so that results down into the subnormals round once. Every float input
  // checked against exp in long double rounded to float: at most 1 ulp off,
  // NaN,
  // +-inf and the range's ends exact. Straight-line code, so a simd loop
  // vectorizes it whole, where libmvec's expf falls back to one scalar call per
  // lane for any vector holding a lane past +-87 (a causal mask's -inf made a
  // softmax 4x slower). Inputs below -104 (exp rounds to 0 from -103.97)
  // compute on 0 and are replaced by 0: an underflowing product would
  // cost the CPU a microcode assist per vector.
  prelude += std::string(kCpuExpSource) + "\n";
  prelude += kCombinersSource;
  prelude += kScalarMathSource;
  if (withHalfTypes)
    prelude += std::string("\n") + kHalfFloatSource + "\n" + kNarrowTypesSource;
  return prelude;
}

std::string sizeExpression(const fusec::SymbolicSize &size,
                           const std::string &indexType) {
  if (size.isStatic())
    return std::to_string(size.factor);
  return "((" + indexType + ")" + size.cExpression("fusec_dims") + ")";
}

std::string KernelInput::offsetAt(const std::string &index,
                                  const std::string &indexType) const {
  return broadcastOffsetExpression(index, symbolicAccessShape, symbolicStrides,
                                   indexType);
}

std::string broadcastOffsetExpression(const std::string &index,
                                      const Shape &iterationShape,
                                      const Shape &iterationStrides) {
  return broadcastOffsetExpression(
      index, fusec::symbolicShapeOf(iterationShape),
      fusec::symbolicShapeOf(iterationStrides), "int64_t");
}

std::string
broadcastOffsetExpression(const std::string &index,
                          const fusec::SymbolicShape &iterationShape,
                          const fusec::SymbolicShape &iterationStrides,
                          const std::string &indexType) {
  // Adjacent dims whose strides continue each other are read as one dim:
  // fewer divisions, and the outermost coordinate never wraps, so that its
  // size does not appear.
  using fusec::SymbolicSize;
  fusec::SymbolicShape shape, strides;
  for (size_t d = 0; d < iterationShape.size(); ++d) {
    if (!shape.empty() &&
        strides.back() == iterationStrides[d] * iterationShape[d]) {
      shape.back() = shape.back() * iterationShape[d];
      strides.back() = iterationStrides[d];
      continue;
    }
    shape.push_back(iterationShape[d]);
    strides.push_back(iterationStrides[d]);
  }
  const SymbolicSize zero = SymbolicSize::constant(0),
                     one = SymbolicSize::constant(1);
  std::vector<std::string> terms;
  SymbolicSize inner = one; // product of the dims after d
  for (size_t d = shape.size(); d-- > 0;) {
    if (strides[d] != zero) {
      std::string coord = inner == one ? index
                                       : "(" + index + ") / " +
                                             sizeExpression(inner, indexType);
      if (d != 0) // the outermost coordinate needs no wrap-around
        coord = "(" + coord + ") % " + sizeExpression(shape[d], indexType);
      terms.push_back(strides[d] == one
                          ? coord
                          : "(" + coord + ") * " +
                                sizeExpression(strides[d], indexType));
    }
    inner = inner * shape[d];
  }
  std::string expression;
  for (auto term = terms.rbegin(); term != terms.rend(); ++term)
    expression += (expression.empty() ? "" : " + ") + *term;
  return expression.empty() ? "0" : expression;
}

void printKernelComment(llvm::raw_ostream &os, const PointwiseKernel &kernel,
                        const std::string &suffix) {
  os << "// " << kernel.name << ": ";
  for (size_t i = 0; i < kernel.ops.size(); ++i)
    os << (i ? " -> " : "") << kernel.ops[i];
  os << " over " << fusec::formatShape(kernel.iterationShape) << " elements"
     << suffix << "\n";
}

} // namespace fuse
