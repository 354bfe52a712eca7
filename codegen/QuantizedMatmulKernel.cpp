//===- QuantizedMatmulKernel.cpp - The int8-weight GEMV kernel -----------===//
//
// A GEMV with few rows is memory bound on its weights: reading them as int8
// moves half the bytes of bf16. Each weight is dequantized in registers
// exactly as DequantizeLinear defines it (f32 product, rounded to the
// scale's dtype), so the kernel matches dequantize_linear + matmul up to
// the order of the sums.
//
//===----------------------------------------------------------------------===//

#include "codegen/QuantizedMatmulKernel.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/RegionKind.h"
#include "ir/TypeUtils.h"

#include <ostream>
#include <sstream>

using namespace mlir;
using fusec::DType;

namespace fuse {

namespace {

/// Warps per CUDA block.
constexpr int64_t kWarpsPerBlock = 8;
/// Weights per lane and step: one 16-byte load.
constexpr int64_t kWeightsPerLoad = 16;
/// A channel's weights are split among up to kWarpsPerBlock warps while
/// each keeps at least this many (two steps of the whole warp: loads to
/// keep in flight, and a partial sum worth its shared-memory exchange).
constexpr int64_t kWeightsPerWarpChunk = 2 * 32 * kWeightsPerLoad;

struct GemvShape {
  int64_t rows, n, k;
  DType dtype; ///< of lhs, scale and result
};

/// The int8 expression `weight` as DequantizeLinear yields it (the
/// decomposition of dequantize_linear computes in f32, then rounds to the
/// scale's dtype), in the accumulation type; `scale` is in scope.
std::string dequantized(const GemvShape &shape, const std::string &weight) {
  std::string product = "(float)(" + weight + ") * (float)scale";
  if (shape.dtype == DType::F16 || shape.dtype == DType::BF16)
    return fromStorage(shape.dtype, toStorage(shape.dtype, product));
  if (shape.dtype == DType::F64)
    return "(double)(" + product + ")";
  return product;
}

/// Statements that add each row's product with the dequantized `weight`
/// to its accumulator, for lhs element `column` of the row.
std::string accumulate(const GemvShape &shape, const std::string &accType,
                       const std::string &weight, const std::string &lhs) {
  std::ostringstream os;
  os << "const " << accType << " w = " << dequantized(shape, weight) << ";\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "acc" << row << " += w * "
       << fromStorage(shape.dtype,
                      lhs + "[" + std::to_string(row * shape.k) + " + column]")
       << ";\n";
  return os.str();
}

/// Opens the loops over a step's 16 weights (4 words of 4 bytes, `q` in
/// scope) and dequantizes each word into `w[4]`, the accumulation type,
/// the plain way: a conversion per weight (f64, where precision rules).
void printDequantizeLoop(std::ostream &os, const GemvShape &shape,
                         const std::string &accType) {
  os << "      #pragma unroll\n";
  os << "      for (int word = 0; word < 4; ++word) {\n";
  os << "        " << accType << " w[4];\n";
  os << "        #pragma unroll\n";
  os << "        for (int b = 0; b < 4; ++b) w[b] = "
     << dequantized(shape, "q[word * 4 + b]") << ";\n";
  os << "        #pragma unroll\n";
  os << "        for (int b = 0; b < 4; ++b) {\n";
}

/// The same without the conversion unit, which runs at a quarter of the
/// ALU's rate and would bound the kernel: a weight byte, biased by 128,
/// becomes the low mantissa byte of 2^23 (a byte permute), and subtracting
/// 2^23 + 128 leaves it exactly as a float; times the scale, that is
/// DequantizeLinear's f32 product. f16/bf16 round it in pairs with one
/// packed conversion.
void printFastDequantizeLoop(std::ostream &os, const GemvShape &shape) {
  os << "      #pragma unroll\n";
  os << "      for (int word = 0; word < 4; ++word) {\n";
  os << "        const unsigned biased = ((const unsigned *)q)[word] ^ "
        "0x80808080u;\n";
  os << "        float w[4];\n";
  os << "        #pragma unroll\n";
  os << "        for (int b = 0; b < 4; ++b)\n";
  os << "          w[b] = (__uint_as_float(__byte_perm(biased, 0x4B000000u, "
        "0x7650u + b)) - 8388736.0f) * scale;\n";
  if (shape.dtype == DType::BF16 || shape.dtype == DType::F16) {
    bool bf16 = shape.dtype == DType::BF16;
    os << "        #pragma unroll\n";
    os << "        for (int b = 0; b < 4; b += 2) {\n";
    os << "          unsigned pair;\n";
    os << "          asm(\"cvt.rn." << (bf16 ? "bf16x2" : "f16x2")
       << ".f32 %0, %1, %2;\" : \"=r\"(pair) : \"f\"(w[b + 1]), "
          "\"f\"(w[b]));\n";
    if (bf16) {
      os << "          w[b] = __uint_as_float(pair << 16);\n";
      os << "          w[b + 1] = __uint_as_float(pair & 0xffff0000u);\n";
    } else {
      os << "          w[b] = fusec_f16_to_f32((uint16_t)(pair & 0xffffu));\n";
      os << "          w[b + 1] = fusec_f16_to_f32((uint16_t)(pair >> 16));\n";
    }
    os << "        }\n";
  }
  os << "        #pragma unroll\n";
  os << "        for (int b = 0; b < 4; ++b) {\n";
}

/// How the CUDA kernel splits the work: each channel's k weights are
/// split among `warpsPerChannel` warps (partial sums meet in shared
/// memory), so a decode-sized layer makes several waves of small blocks
/// rather than one ragged wave of long warps.
struct CudaGemvSplit {
  int64_t warpsPerChannel = 1;
  int64_t channelsPerBlock = kWarpsPerBlock;
  /// Weights each warp covers (a multiple of 16 on the vector path).
  int64_t chunk = 0;
  bool vectorized = false;
};

CudaGemvSplit cudaGemvSplit(const GemvShape &shape) {
  CudaGemvSplit split;
  // 16-byte loads need k % 16 == 0: rows (and the lhs's runs of 16
  // elements) then start 16-byte aligned.
  split.vectorized = shape.k % kWeightsPerLoad == 0;
  if (split.vectorized)
    while (split.warpsPerChannel < kWarpsPerBlock &&
           shape.k / (split.warpsPerChannel * 2) >= kWeightsPerWarpChunk)
      split.warpsPerChannel *= 2;
  split.channelsPerBlock = kWarpsPerBlock / split.warpsPerChannel;
  int64_t chunk = (shape.k + split.warpsPerChannel - 1) / split.warpsPerChannel;
  split.chunk =
      (chunk + kWeightsPerLoad - 1) / kWeightsPerLoad * kWeightsPerLoad;
  return split;
}

std::string printCuda(const GemvShape &shape, const std::string &name) {
  const char *element = storageType(shape.dtype);
  std::string accType = shape.dtype == DType::F64 ? "double" : "float";
  CudaGemvSplit split = cudaGemvSplit(shape);
  std::ostringstream os;
  os << "// y[" << shape.rows << "x" << shape.n << "] = x[" << shape.rows << "x"
     << shape.k << "] @ dequantize(int8 w[" << shape.n << "x" << shape.k
     << "])^T: " << split.warpsPerChannel << " warp(s) per output channel\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << kWarpsPerBlock * 32
     << ") " << name << "(const " << element
     << " *__restrict__ in0, const signed char *__restrict__ in1, const "
     << element << " *__restrict__ in2, " << element
     << " *__restrict__ out0) {\n";
  os << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  os << "  const int part = warp % " << split.warpsPerChannel << ";\n";
  os << "  const long long channel = (long long)blockIdx.x * "
     << split.channelsPerBlock << " + warp / " << split.warpsPerChannel
     << ";\n";
  // No early return: every warp reaches the block's barrier.
  os << "  const bool active = channel < " << shape.n << "LL;\n";
  os << "  const signed char *__restrict__ row = in1 + (active ? channel : 0) "
        "* "
     << shape.k << "LL;\n";
  os << "  const " << accType
     << " scale = " << fromStorage(shape.dtype, "in2[active ? channel : 0]")
     << ";\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "  " << accType << " acc" << row << " = 0;\n";
  os << "  const long long begin = part * " << split.chunk << "LL;\n";
  os << "  const long long end = begin + " << split.chunk << "LL < " << shape.k
     << "LL ? begin + " << split.chunk << "LL : " << shape.k << "LL;\n";
  os << "  if (active) {\n";
  if (split.vectorized) {
    // 16 weights per lane and step. The chunk's weight loads are issued
    // first, all in flight at once (the lhs is small and cached).
    int64_t lhsVectors = kWeightsPerLoad * fusec::dtypeBytes(shape.dtype) / 16;
    int64_t steps =
        (split.chunk + 32 * kWeightsPerLoad - 1) / (32 * kWeightsPerLoad);
    auto printBase = [&] {
      os << "      const long long base = begin + step * "
         << 32 * kWeightsPerLoad << "LL + lane * " << kWeightsPerLoad
         << "LL;\n";
    };
    os << "    int4 packed[" << steps << "];\n";
    os << "    #pragma unroll\n";
    os << "    for (int step = 0; step < " << steps << "; ++step) {\n";
    printBase();
    os << "      packed[step] = base < end ? __ldg((const int4 *)(row + base))"
          " : make_int4(0, 0, 0, 0);\n";
    os << "    }\n";
    os << "    #pragma unroll\n";
    os << "    for (int step = 0; step < " << steps << "; ++step) {\n";
    printBase();
    os << "      if (base >= end) break;\n";
    os << "      const signed char *q = (const signed char *)&packed[step];\n";
    for (int64_t row = 0; row < shape.rows; ++row) {
      os << "      int4 x" << row << "[" << lhsVectors << "];\n";
      for (int64_t v = 0; v < lhsVectors; ++v)
        os << "      x" << row << "[" << v << "] = __ldg((const int4 *)(in0 + "
           << row * shape.k << "LL + base) + " << v << ");\n";
    }
    if (shape.dtype == DType::F64)
      printDequantizeLoop(os, shape, accType);
    else
      printFastDequantizeLoop(os, shape);
    for (int64_t row = 0; row < shape.rows; ++row)
      os << "        acc" << row << " += w[b] * "
         << fromStorage(shape.dtype, "((const " + std::string(element) +
                                         " *)x" + std::to_string(row) +
                                         ")[word * 4 + b]")
         << ";\n";
    os << "        }\n";
    os << "      }\n";
    os << "    }\n";
  } else {
    os << "    for (long long column = begin + lane; column < end; column += "
          "32) {\n";
    std::istringstream lines(accumulate(shape, accType, "row[column]", "in0"));
    for (std::string line; std::getline(lines, line);)
      os << "      " << line << "\n";
    os << "    }\n";
  }
  os << "  }\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "  for (int offset = 16; offset > 0; offset >>= 1) acc" << row
       << " += __shfl_xor_sync(0xffffffffu, acc" << row << ", offset);\n";
  if (split.warpsPerChannel > 1) {
    int64_t rows = std::max<int64_t>(shape.rows, 1);
    os << "  __shared__ " << accType << " partial[" << kWarpsPerBlock << "]["
       << rows << "];\n";
    os << "  if (lane == 0) {\n";
    for (int64_t row = 0; row < shape.rows; ++row)
      os << "    partial[warp][" << row << "] = acc" << row << ";\n";
    os << "  }\n";
    os << "  __syncthreads();\n";
    os << "  if (lane != 0 || part != 0 || !active) return;\n";
    os << "  for (int other = 1; other < " << split.warpsPerChannel
       << "; ++other) {\n";
    for (int64_t row = 0; row < shape.rows; ++row)
      os << "    acc" << row << " += partial[warp + other][" << row << "];\n";
    os << "  }\n";
  } else {
    os << "  if (lane != 0 || !active) return;\n";
  }
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "  out0[" << row * shape.n << "LL + channel] = "
       << toStorage(shape.dtype, "acc" + std::to_string(row)) << ";\n";
  os << "}\n";
  return os.str();
}

std::string printCpp(const GemvShape &shape, const std::string &name) {
  const char *element = storageType(shape.dtype);
  std::string accType = shape.dtype == DType::F64 ? "double" : "float";
  std::ostringstream os;
  os << "// y[" << shape.rows << "x" << shape.n << "] = x[" << shape.rows << "x"
     << shape.k << "] @ dequantize(int8 w[" << shape.n << "x" << shape.k
     << "])^T\n";
  os << "extern \"C\" void " << name
     << "(const void *const *fusec_inputs, void *const *fusec_outputs) {\n";
  os << "  const " << element << " *in0 = (const " << element
     << " *)fusec_inputs[0];\n";
  os << "  const int8_t *in1 = (const int8_t *)fusec_inputs[1];\n";
  os << "  const " << element << " *in2 = (const " << element
     << " *)fusec_inputs[2];\n";
  os << "  " << element << " *out0 = (" << element << " *)fusec_outputs[0];\n";
  os << "  #pragma omp parallel for schedule(static) if ("
     << (shape.n * shape.k >= kCpuParallelThreshold ? "1" : "0") << ")\n";
  os << "  for (int64_t channel = 0; channel < " << shape.n
     << "; ++channel) {\n";
  os << "    const int8_t *row = in1 + channel * " << shape.k << ";\n";
  os << "    const " << accType
     << " scale = " << fromStorage(shape.dtype, "in2[channel]") << ";\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "    " << accType << " acc" << row << " = 0;\n";
  os << "    for (int64_t column = 0; column < " << shape.k
     << "; ++column) {\n";
  std::istringstream lines(accumulate(shape, accType, "row[column]", "in0"));
  for (std::string line; std::getline(lines, line);)
    os << "      " << line << "\n";
  os << "    }\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "    out0[" << row * shape.n << " + channel] = "
       << toStorage(shape.dtype, "acc" + std::to_string(row)) << ";\n";
  os << "  }\n}\n";
  return os.str();
}

} // namespace

FailureOr<fusec::KernelDesc> buildQuantizedMatmulKernel(FusionOp fusion,
                                                        unsigned index,
                                                        fusec::Target target) {
  QuantizedMatmulOp gemv;
  for (Operation &op : fusion.getBody().front().without_terminator()) {
    if (gemv || !isa<QuantizedMatmulOp>(op))
      return op.emitError() << "codegen: a quantized matmul region holds one "
                               "fuse.quantized_matmul and nothing else";
    gemv = cast<QuantizedMatmulOp>(op);
  }
  Block &body = fusion.getBody().front();
  ValueRange yielded = fusion.getYield().getValues();
  if (!gemv || yielded.size() != 1 || yielded[0] != gemv.getResult() ||
      gemv.getLhs() != body.getArgument(0) ||
      gemv.getWeight() != body.getArgument(1) ||
      gemv.getScale() != body.getArgument(2))
    return fusion.emitError("codegen: a quantized matmul region must take "
                            "(lhs, weight, scale) and yield its result");
  auto lhsType = gemv.getLhs().getType();
  GemvShape shape;
  shape.dtype = dtypeOf(lhsType);
  shape.k = lhsType.getShape().back();
  shape.n = gemv.getWeight().getType().getDimSize(0);
  // Rows of lhs (its batch dims stack into rows), read off the result
  // since k may be 0.
  shape.rows = 1;
  for (int64_t dim : lhsType.getShape().drop_back())
    shape.rows *= dim;

  fusec::KernelDesc desc;
  desc.ops = regionOpNames(fusion);
  desc.name = kernelName("gemv", desc.ops, index);
  desc.schedule = "quantized-gemv";
  desc.source = target == fusec::Target::Cuda ? printCuda(shape, desc.name)
                                              : printCpp(shape, desc.name);
  if (target == fusec::Target::Cuda) {
    CudaGemvSplit split = cudaGemvSplit(shape);
    desc.launch.gridX = std::max<int64_t>(
        1, (shape.n + split.channelsPerBlock - 1) / split.channelsPerBlock);
    desc.launch.blockX = kWarpsPerBlock * 32;
  }
  return desc;
}

} // namespace fuse
