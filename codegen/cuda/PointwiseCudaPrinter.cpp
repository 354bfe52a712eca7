//===- PointwiseCudaPrinter.cpp - Pointwise regions as CUDA C
//---------------===//
//
// The same per-element expressions as the C++ target (ScalarExpr.h),
// wrapped in a grid-stride loop over vectors: each step a thread loads 16
// bytes of every contiguous input, computes `width` elements and stores 16
// bytes of every output; a scalar loop covers the tail, when the vectors
// do not cover every element. Both loops stay rolled. Broadcast inputs are
// read through index arithmetic on compile-time constants (and, in
// symbolic programs, on the sizes the kernel takes).
//
//===----------------------------------------------------------------------===//

#include "codegen/PointwiseKernel.h"

#include "codegen/EmbeddedSources.h"
#include "codegen/schedule/PointwiseSchedule.h"

#include "mlir/Support/IndentedOstream.h"
#include <climits>

using fusec::DType;
using fusec::Shape;

namespace fuse {

namespace {

/// A broadcast input whose innermost dim is contiguous and a multiple of the
/// width: each thread's vector reads one contiguous, aligned run of it.
bool isVectorBroadcast(const KernelInput &input, int width) {
  return input.access == InputAccess::Broadcast &&
         input.symbolicStrides.back() == fusec::SymbolicSize::constant(1) &&
         input.innermostDivisor % width == 0;
}

} // namespace

std::string cudaVectorType(DType dtype, int64_t width) {
  return "FusecVector<" + std::string(storageType(dtype)) + ", " +
         std::to_string(width) + ">";
}

const MathFunctionMap &cudaFastMathFunctions() {
  static const MathFunctionMap functions = [] {
    MathFunctionMap map;
    map["sin"] = "__sinf";
    map["cos"] = "__cosf";
    map["tan"] = "__tanf";
    map["exp"] = "__expf";
    map["log"] = "__logf";
    map["pow"] = "__powf";
    map["tanh"] = "fusec_tanh_approx";
    return map;
  }();
  return functions;
}

/// NVRTC has no standard headers: device/CudaBasics.cuh gives the few types
/// and helpers kernels use.
std::string cudaPrelude() {
  return std::string(kCudaBasicsSource) + "\n" + kCombinersSource + "\n" +
         kScalarMathSource + "\n" + kNarrowTypesSource + "\n" +
         kReductionCudaSource;
}

/// The body of a CUDA kernel with elements: indices, the loop over whole
/// vectors and, unless they cover every element, the tail loop.
static void printCudaLoops(mlir::raw_indented_ostream &os,
                           const PointwiseKernel &kernel,
                           const PointwiseParams &params,
                           const MathFunctionMap *f32Functions) {
  const int width = params.vectorWidth;
  const int64_t count = kernel.numElements(); // the maximum, when symbolic
  const bool symbolic = kernel.readsDimSizes();
  const char *index = params.index64 ? "int64_t" : "int32_t";
  os << "const " << index << " count = " << kernel.countExpression() << ";\n";
  os << "const " << index << " stride = (" << index
     << ")gridDim.x * blockDim.x;\n";
  os << "const " << index << " first = (" << index
     << ")blockIdx.x * blockDim.x + threadIdx.x;\n";
  auto loadElement = [&](size_t i, const std::string &element) {
    const KernelInput &input = kernel.inputs[i];
    os << "const " << computeType(input.dtype) << " " << input.value << " = "
       << fromStorage(input.dtype, element) << ";\n";
  };
  auto loadBroadcastElement = [&](size_t i) {
    const KernelInput &input = kernel.inputs[i];
    std::string offset = input.access == InputAccess::Contiguous
                             ? "i"
                             : input.offsetAt("i", index);
    loadElement(i, "in" + std::to_string(i) + "[" + offset + "]");
  };
  for (size_t i = 0; i < kernel.inputs.size(); ++i)
    if (kernel.inputs[i].access == InputAccess::Scalar)
      loadElement(i, "in" + std::to_string(i) + "[0]");

  // CUDA kernels get f32 replacements only for --fast-math.
  ScalarExprPrinter printer(f32Functions, /*roundsEachOp=*/!f32Functions);
  auto vectorType = [&](DType dtype) { return cudaVectorType(dtype, width); };

  // Grid-stride loops stay rolled: the launch covers the elements unless a
  // tensor outgrows kGridStrideBlocksPerMultiprocessor blocks per SM, so a
  // loop mostly runs once, and NVVM's unrolling of it (4 copies of the
  // body and a remainder) was a quarter to a third of a model's NVRTC time.
  // Whole vectors.
  if (width > 1 && count >= width) {
    os << "#pragma unroll 1\n";
    os << "for (" << index << " vector = first; vector < count / " << width
       << "; vector += stride) {\n";
    auto vectorLoop = os.scope("", "}\n");
    os << "const " << index << " base = vector * " << width << ";\n";
    for (size_t i = 0; i < kernel.inputs.size(); ++i) {
      const KernelInput &input = kernel.inputs[i];
      std::string offset;
      if (input.access == InputAccess::Contiguous)
        offset = "base";
      else if (isVectorBroadcast(input, width))
        offset = input.offsetAt("base", index);
      else
        continue;
      os << "const " << vectorType(input.dtype) << " in" << i
         << "_vector = *reinterpret_cast<const " << vectorType(input.dtype)
         << " *>(in" << i << " + " << offset << ");\n";
    }
    for (size_t i = 0; i < kernel.outputs.size(); ++i)
      os << vectorType(kernel.outputs[i].dtype) << " out" << i << "_vector;\n";
    os << "#pragma unroll\n";
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    {
      auto laneLoop = os.scope("", "}\n");
      bool elementIndexNeeded =
          kernel.readsElementIndex ||
          llvm::any_of(kernel.inputs, [&](const KernelInput &input) {
            return input.access == InputAccess::Broadcast &&
                   !isVectorBroadcast(input, width);
          });
      if (elementIndexNeeded)
        os << "const " << index << " i = base + lane;\n";
      for (size_t i = 0; i < kernel.inputs.size(); ++i) {
        const KernelInput &input = kernel.inputs[i];
        if (input.access == InputAccess::Scalar)
          continue;
        if (input.access == InputAccess::Contiguous ||
            isVectorBroadcast(input, width))
          loadElement(i, "in" + std::to_string(i) + "_vector.v[lane]");
        else
          loadBroadcastElement(i);
      }
      printer.print(kernel.lets, os);
      for (size_t i = 0; i < kernel.outputs.size(); ++i)
        os << "out" << i << "_vector.v[lane] = "
           << toStorage(kernel.outputs[i].dtype, kernel.outputs[i].value)
           << ";\n";
    }
    for (size_t i = 0; i < kernel.outputs.size(); ++i)
      os << "*reinterpret_cast<" << vectorType(kernel.outputs[i].dtype)
         << " *>(out" << i << " + base) = out" << i << "_vector;\n";
  }

  // The tail (or everything, for a width of 1), one element per step, from
  // the warp after the vectors' (the params' tailFirstThread); none when the
  // vectors cover every element.
  int64_t vectorized = width > 1 ? count / width * width : 0;
  // A symbolic count that is a multiple of the width leaves no tail either.
  bool noTail = symbolic
                    ? width > 1 && kernel.symbolicElements->factor % width == 0
                    : vectorized == count;
  if (noTail)
    return;
  std::string start = "first";
  if (symbolic && vectorized > 0) {
    // The tail's first thread from the count at run time, as the schedule
    // computes it for a static count.
    os << "const " << index << " vectors = count / " << width << ";\n";
    os << "const " << index << " tail_thread = (vectors + " << kWarpSize - 1
       << ") / " << kWarpSize << " * " << kWarpSize << ";\n";
    os << "const " << index
       << " tail_first = (first + stride - tail_thread % stride) % stride;\n";
    start = "vectors * " + std::to_string(width) + " + tail_first";
  } else if (vectorized > 0) {
    os << "const " << index << " tail_first = (first + stride - "
       << params.tailFirstThread << " % stride) % stride;\n";
    start = std::to_string(vectorized) + " + tail_first";
  }
  os << "#pragma unroll 1\n";
  os << "for (" << index << " i = " << start << "; i < count; i += stride) {\n";
  {
    auto tailLoop = os.scope("", "}\n");
    for (size_t i = 0; i < kernel.inputs.size(); ++i)
      if (kernel.inputs[i].access != InputAccess::Scalar)
        loadBroadcastElement(i);
    printer.print(kernel.lets, os);
    for (size_t i = 0; i < kernel.outputs.size(); ++i)
      os << "out" << i << "[i] = "
         << toStorage(kernel.outputs[i].dtype, kernel.outputs[i].value)
         << ";\n";
  }
}

std::string printCudaKernel(const PointwiseKernel &kernel,
                            const PointwiseParams &params,
                            const MathFunctionMap *f32Functions) {
  const int width = params.vectorWidth;
  std::string source;
  llvm::raw_string_ostream raw(source);
  mlir::raw_indented_ostream os(raw);
  printKernelComment(os, kernel,
                     ", " + std::to_string(width) + " per thread and step");
  os << "extern \"C\" __global__ void __launch_bounds__("
     << kPointwiseThreadsPerBlock << ") " << kernel.name << "(";
  for (size_t i = 0; i < kernel.inputs.size(); ++i)
    os << (i ? ", " : "") << "const " << storageType(kernel.inputs[i].dtype)
       << (kernel.mayAlias(true, i) ? " *in" : " *__restrict__ in") << i;
  for (size_t i = 0; i < kernel.outputs.size(); ++i)
    os << (kernel.inputs.empty() && i == 0 ? "" : ", ")
       << storageType(kernel.outputs[i].dtype)
       << (kernel.mayAlias(false, i) ? " *out" : " *__restrict__ out") << i;
  if (kernel.readsDimSizes())
    os << cudaDimParameters(kernel.dimCount);
  os << ") {\n";
  {
    auto body = os.scope("", "}\n");
    if (kernel.readsDimSizes())
      os << cudaDimArray(kernel.dimCount);
    if (kernel.numElements() == 0)
      os << "// empty tensors: nothing to compute\n";
    else
      printCudaLoops(os, kernel, params, f32Functions);
  }
  return source;
}

} // namespace fuse
