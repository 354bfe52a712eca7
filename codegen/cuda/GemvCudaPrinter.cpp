//===- GemvCudaPrinter.cpp - The int8-weight GEMV as CUDA ----------------===//
//
// The tensor-core kernel (f16/bf16: mma.m16n8k16 on dequantized weight
// pairs, a pipeline of weight loads) and the SIMT kernel (a few warps per
// output channel, 16 bytes per lane and step). The schedule
// (schedule/GemvSchedule.h) made every choice.
//
//===----------------------------------------------------------------------===//

#include "codegen/GemvEmitter.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/ScalarExprPrinter.h"

#include <algorithm>
#include <functional>
#include <ostream>
#include <sstream>

using fusec::DType;

namespace fuse {

using namespace gemv;

namespace {

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

/// Byte `index` of `biasedWord` (int8 weights xor 0x80808080u) as an exact
/// f32, without the conversion unit, which runs at a quarter of the ALU's
/// rate: the biased byte becomes the low mantissa byte of 2^23 (a byte
/// permute), and subtracting 2^23 + 128 leaves the weight.
std::string exactWeightAsFloat(const std::string &biasedWord,
                               const std::string &index) {
  return "(__uint_as_float(__byte_perm(" + biasedWord +
         ", 0x4B000000u, 0x7650u + " + index + ")) - 8388736.0f)";
}

/// The same without the conversion unit (exactWeightAsFloat); times the
/// scale, that is DequantizeLinear's f32 product. f16/bf16 round it in
/// pairs with one packed conversion.
void printFastDequantizeLoop(std::ostream &os, const GemvShape &shape) {
  os << "      #pragma unroll\n";
  os << "      for (int word = 0; word < 4; ++word) {\n";
  os << "        const unsigned biased = ((const unsigned *)q)[word] ^ "
        "0x80808080u;\n";
  os << "        float w[4];\n";
  os << "        #pragma unroll\n";
  os << "        for (int b = 0; b < 4; ++b)\n";
  os << "          w[b] = " << exactWeightAsFloat("biased", "b")
     << " * scale;\n";
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

std::string printCuda(const GemvShape &shape, const GemvParams &split,
                      const std::string &name) {
  const char *element = storageType(shape.dtype);
  std::string accType = shape.dtype == DType::F64 ? "double" : "float";
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
      os << "        "
         << multiplyAdd(
                true, "acc" + std::to_string(row), "w[b]",
                fromStorage(shape.dtype, "((const " + std::string(element) +
                                             " *)x" + std::to_string(row) +
                                             ")[word * 4 + b]"));
    os << "        }\n";
    os << "      }\n";
    os << "    }\n";
  } else {
    os << "    for (long long column = begin + lane; column < end; column += "
          "32) {\n";
    std::istringstream lines(
        accumulate(shape, accType, "row[column]", "in0", true));
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

void printFusedMultiplyAdd2(std::ostream &os, const std::string &name,
                            const char *type) {
  os << "static __device__ __forceinline__ unsigned " << name
     << "_fma2(unsigned a, unsigned b, unsigned c) {\n";
  os << "  unsigned d;\n";
  os << "  asm(\"fma.rn." << type
     << " %0, %1, %2, %3;\" : \"=r\"(d) : \"r\"(a), \"r\"(b), \"r\"(c));\n";
  os << "  return d;\n";
  os << "}\n";
}

/// f16: `<name>_dequantize(word, scale2, low, high)`, a word of 4 int8
/// weights as two f16x2 pairs (bytes 0-1 into `low`, 2-3 into `high`), each
/// weight times the scale (`scale2`: the scale's bits in both halves)
/// rounded once, which is DequantizeLinear's f32 product rounded to f16:
/// that product is exact in f32 (8 by 11 significant bits), so one rounding
/// of the exact product is the same number. The weight is made exact
/// without the conversion unit: the byte, biased by 128, under the exponent
/// byte 0x64 is 1024 + byte, and subtracting 1152 leaves the weight.
void printF16Dequantize(std::ostream &os, const std::string &name) {
  printFusedMultiplyAdd2(os, name, "f16x2");
  os << "static __device__ __forceinline__ void " << name
     << "_dequantize(unsigned word, unsigned scale2, unsigned &low, unsigned "
        "&high) {\n";
  os << "  const unsigned biased = word ^ 0x80808080u;\n";
  // q * scale + (-0): the product rounded once; -0 keeps a -0 product's sign.
  // 0x3C00 is 1.0 and 0xE480 is -1152 in f16.
  for (const char *half : {"low", "high"})
    os << "  " << half << " = " << name << "_fma2(" << name
       << "_fma2(__byte_perm(biased, 0x64646464u, "
       << (half[0] == 'l' ? "0x4140u" : "0x4342u")
       << "), 0x3C003C00u, 0xE480E480u), scale2, 0x80008000u);\n";
  os << "}\n";
}

/// bf16, whose 8 significant bits cannot hold 1024 + byte: the weights of
/// a word come in the pairs (bytes 0 and 2) and (1 and 3), which
/// `<name>_dequantize(word, scale2, addend2, low, high)` makes with two
/// 3-input logic ops and one bf16x2 fma each (the integer pipe, which byte
/// permutes share, runs at half the rate of the fma pipe and bounds this
/// kernel: 5 integer ops per word, where converting each byte to an exact
/// f32 takes 7). For a byte c = l + 128 t (l its low 7 bits, t its sign
/// bit, so q = l - 128 t):
/// - m = 128 + l is an exact bf16: l under the exponent of 128;
/// - q s = m s - 128 s (t = 0) or m s - 256 s (t = 1), and -256 s is -128 s
///   with the exponent's lowest bit set, where that bit of -128 s is clear:
///   the addend is -128 s's bits or'ed with t.
/// So fma(m, s, addend) rounds the exact q s once: DequantizeLinear's f32
/// product (exact, 8 by 8 significant bits) rounded to bf16 (a weight 0
/// comes out +0 for a negative scale too, which no sum can tell, as they
/// start at +0). Where 128 s has an odd exponent, the channel's weights are
/// halved (their exponents one less, so every rounding is the same) and its
/// f32 sum is doubled at the end (`unscale`), which cannot overflow where
/// the result does not. `<name>_prepare` takes scales in [2^-100, 2^101),
/// where every weight stays normal; others, inf, NaN, 0 and subnormals send
/// the block's warps to `<name>_dequantize_exact`: each byte as an
/// exact f32 (exactWeightAsFloat), whose upper half is the exact bf16
/// weight.
void printBF16Dequantize(std::ostream &os, const std::string &name) {
  printFusedMultiplyAdd2(os, name, "bf16x2");
  os << "static __device__ __forceinline__ bool " << name
     << "_prepare(unsigned bits, unsigned &scale2, unsigned &addend2, float "
        "&unscale) {\n";
  os << "  const unsigned exponent = (bits >> 7) & 0xFFu;\n";
  os << "  const unsigned halved = (exponent & 1u) ? 0u : 0x80u;\n";
  os << "  const unsigned scaled = bits - halved;\n";
  os << "  scale2 = scaled * 0x10001u;\n";
  // -128 s': the exponent 7 more, the sign flipped.
  os << "  addend2 = (((scaled + 0x380u) ^ 0x8000u) & 0xFFFFu) * 0x10001u;\n";
  os << "  unscale = halved ? 2.0f : 1.0f;\n";
  os << "  return exponent >= 27u && exponent <= 227u;\n";
  os << "}\n";
  os << "static __device__ __forceinline__ unsigned " << name
     << "_pair(unsigned bytes, unsigned scale2, unsigned addend2) {\n";
  os << "  unsigned m, addend;\n";
  // 0xEA: (a & b) | c.
  os << "  asm(\"lop3.b32 %0, %1, 0x007F007F, 0x43004300, 0xEA;\" : "
        "\"=r\"(m) : \"r\"(bytes));\n";
  os << "  asm(\"lop3.b32 %0, %1, 0x00800080, %2, 0xEA;\" : \"=r\"(addend) : "
        "\"r\"(bytes), \"r\"(addend2));\n";
  os << "  return " << name << "_fma2(m, scale2, addend);\n";
  os << "}\n";
  os << "static __device__ __forceinline__ void " << name
     << "_dequantize(unsigned word, unsigned scale2, unsigned addend2, "
        "unsigned &low, unsigned &high) {\n";
  os << "  low = " << name << "_pair(word, scale2, addend2);\n";
  os << "  high = " << name << "_pair(word >> 8, scale2, addend2);\n";
  os << "}\n";
  os << "static __device__ __forceinline__ void " << name
     << "_dequantize_exact(unsigned word, unsigned scale2, unsigned &low, "
        "unsigned &high) {\n";
  os << "  const unsigned biased = word ^ 0x80808080u;\n";
  os << "  unsigned q[4];\n";
  os << "  #pragma unroll\n";
  os << "  for (int b = 0; b < 4; ++b)\n";
  os << "    q[b] = __float_as_uint(" << exactWeightAsFloat("biased", "b")
     << ");\n";
  // q * scale + (-0): the product rounded once; -0 keeps a -0 product's sign.
  os << "  low = " << name
     << "_fma2(__byte_perm(q[0], q[2], 0x7632u), scale2, 0x80008000u);\n";
  os << "  high = " << name
     << "_fma2(__byte_perm(q[1], q[3], 0x7632u), scale2, 0x80008000u);\n";
  os << "}\n";
}

/// The tensor-core kernel. A block owns 16 channels; its warps split k
/// and add their partial sums in shared memory. In mma.m16n8k16 (A: 16
/// channels x 16 k, B: 16 k x 8 rows), lane (group g, quad t) holds A's
/// channels g and g + 8 and B's row g at k slots 2t, 2t + 1, 2t + 8 and
/// 2t + 9. A dot product may visit k in any order, so slot 2t + i of step
/// j means k = base + 16t + 4j + p(i) and slot 2t + 8 + i means 4j + p(2 +
/// i), where p pairs the weights as their dequantization does: f16 (0 1)(2
/// 3), bf16 (0 2)(1 3). Each lane then reads 16 consecutive weights of each
/// of its channels and 16 consecutive lhs elements of its row, with
/// 16-byte loads; f16 lhs words are B's registers as they are, bf16 ones
/// are reordered once into shared memory (or at each step, for a large
/// lhs).
std::string printCudaTensorCore(const GemvShape &shape,
                                const GemvParams &schedule,
                                const std::string &name) {
  bool bf16 = shape.dtype == DType::BF16;
  const char *type = bf16 ? "bf16" : "f16";
  const int64_t warps = kTensorCoreWarps;
  const int64_t chunk = schedule.chunk, steps = schedule.steps,
                ahead = schedule.ahead, stages = schedule.sharedStages;
  const bool staged = schedule.stagedLhs,
             constantWeights = schedule.constantWeights;
  std::ostringstream os;
  os << "// y[" << shape.rows << "x" << shape.n << "] = x[" << shape.rows << "x"
     << shape.k << "] @ dequantize(int8 w[" << shape.n << "x" << shape.k
     << "])^T on tensor cores: 16 channels per block, k split among its "
     << warps << " warps, " << (stages ? stages - 1 : ahead)
     << " steps of loads in flight per warp"
     << (stages ? " (a ring in shared memory)" : "") << "\n";
  if (bf16)
    printBF16Dequantize(os, name);
  else
    printF16Dequantize(os, name);
  // A warp's loads of a row take 64 of a 128-byte line, the next step the
  // other 64: fetching whole lines into the L2 halves the requests that
  // reach DRAM, whose weights no earlier launch left in the L2.
  os << "static __device__ __forceinline__ int4 " << name
     << "_load_weights(const signed char *p) {\n";
  os << "  int4 v;\n";
  os << "  asm volatile(\"ld.global.nc.L2::128B.v4.s32 {%0, %1, %2, %3}, "
        "[%4];\" : \"=r\"(v.x), \"=r\"(v.y), \"=r\"(v.z), \"=r\"(v.w) : "
        "\"l\"(p));\n";
  os << "  return v;\n";
  os << "}\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << warps * 32 << ", "
     << schedule.blocksPerMultiprocessor << ") " << name
     << "(const uint16_t *__restrict__ in0, const signed char *__restrict__ "
        "in1, const uint16_t *__restrict__ in2, uint16_t *__restrict__ out0) "
        "{\n";
  os << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  os << "  const int group = lane >> 2, quad = lane & 3;\n";
  // The next kernel in the stream may launch (TensorCoreSchedule).
  const std::string launchDependents =
      "#if __CUDA_ARCH__ >= 900\n"
      "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: "
      "\"memory\");\n"
      "#endif\n";
  if (schedule.earlyDependents)
    os << launchDependents;
  // Weights and scales computed by earlier steps are read after the wait,
  // like the lhs; constant ones (no kernel writes them) before it. The
  // pointers read after it pass through the wait's asm, so that no load
  // through them can move above it (as one through a `const __restrict__`
  // parameter could, and into the read-only cache, whose data must not
  // change while the kernel runs) and every store stays below it.
  const std::string waitForPredecessor =
      std::string("#if __CUDA_ARCH__ >= 900\n"
                  "  asm volatile(\"griddepcontrol.wait;\" : \"+l\"(in0), "
                  "\"+l\"(out0)") +
      (constantWeights ? "" : ", \"+l\"(in1), \"+l\"(in2)") +
      " :: \"memory\");\n"
      "#endif\n";
  if (!constantWeights)
    os << waitForPredecessor;
  os << "  const long long channel0 = (long long)blockIdx.x * "
     << kTensorCoreChannels << " + group, channel1 = channel0 + 8;\n";
  os << "  const bool has0 = channel0 < " << shape.n << "LL, has1 = channel1 < "
     << shape.n << "LL;\n";
  os << "  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n";
  os << "#if __CUDA_ARCH__ >= 800\n";
  if (bf16) {
    // An absent channel takes the scale 1 (its sums are never stored), so
    // that its warp keeps the fast dequantization.
    os << "  const unsigned bits0 = has0 ? in2[channel0] : 0x3F80u, bits1 = "
          "has1 ? in2[channel1] : 0x3F80u;\n";
    os << "  unsigned scale0, addend0, scale1, addend1;\n";
    os << "  float unscale0, unscale1;\n";
    os << "  const bool fast0 = " << name
       << "_prepare(bits0, scale0, addend0, unscale0);\n";
    os << "  const bool fast1 = " << name
       << "_prepare(bits1, scale1, addend1, unscale1);\n";
  } else {
    // An absent channel's scale is 0 and its sums are never stored.
    os << "  const unsigned scale0 = has0 ? (unsigned)in2[channel0] * "
          "0x10001u : 0u;\n";
    os << "  const unsigned scale1 = has1 ? (unsigned)in2[channel1] * "
          "0x10001u : 0u;\n";
  }
  // Odd j accumulate apart: two independent mma chains.
  os << "  float e[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n";
  // An absent channel reads row 0: its loads need no guard of their own.
  for (const char *row : {"0", "1"})
    os << "  const signed char *__restrict__ row" << row << " = in1 + (has"
       << row << " ? channel" << row << " : 0) * " << shape.k << "LL + warp * "
       << chunk << "LL + quad * 16;\n";
  // The last warp's chunk may run past k; k and chunk are multiples of a
  // step.
  if (chunk * warps == shape.k)
    os << "  const int stepCount = " << steps << ";\n";
  else
    os << "  const int stepCount = max(0, min(" << steps << ", (int)(("
       << shape.k << "LL - warp * " << chunk << "LL) / " << kTensorCoreStep
       << ")));\n";
  auto printLoad = [&](const std::string &indent, const std::string &slot,
                       const std::string &step) {
    for (const char *row : {"0", "1"})
      os << indent << "ring" << row << "[" << slot << "] = " << name
         << "_load_weights(row" << row << " + (" << step << ") * "
         << kTensorCoreStep << ");\n";
  };
  // A copy of step `step`'s weights into ring slot `slot` of shared
  // memory, bypassing the registers (cp.async); each lane later reads back
  // only what it copied, so its own waits order the two.
  auto printCopy = [&](const std::string &indent, const std::string &slot,
                       const std::string &step) {
    for (const char *row : {"0", "1"})
      os << indent
         << "asm volatile(\"cp.async.cg.shared.global.L2::128B [%0], [%1], "
            "16;\" :: "
            "\"r\"((unsigned)__cvta_generic_to_shared(&weightRing[warp]["
         << slot << "][" << row << "][lane])), \"l\"(row" << row << " + ("
         << step << ") * " << kTensorCoreStep << ") : \"memory\");\n";
  };
  const char *commit =
      "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");";
  if (stages) {
    // weightRing[warp][i] holds the step congruent to i mod `stages`; the
    // first copies go out before anything else, one group per step.
    os << "  __shared__ __align__(16) int4 weightRing[" << warps << "]["
       << stages << "][2][32];\n";
    os << "  #pragma unroll\n";
    os << "  for (int i = 0; i < " << stages - 1 << "; ++i) {\n";
    os << "    if (i < stepCount) {\n";
    printCopy("      ", "i", "i");
    os << "    }\n";
    os << "    " << commit << "\n";
    os << "  }\n";
  } else {
    // ring*[i] holds the weights of the step congruent to i mod `ahead`;
    // the first loads go out before anything else.
    os << "  int4 ring0[" << ahead << "], ring1[" << ahead << "];\n";
    os << "  #pragma unroll\n";
    os << "  for (int i = 0; i < " << ahead << "; ++i)\n";
    os << "    if (i < stepCount) {\n";
    printLoad("      ", "i", "i");
    os << "    }\n";
  }
  if (constantWeights)
    os << waitForPredecessor;
  // Lanes past the lhs's rows read row 0 (see printStep). Loads through
  // the pointers the wait returned: read-only from here on, they may go
  // through the read-only cache (__ldg), which also lets the compiler keep
  // several in flight past the staging's shared stores (a generic load may
  // alias them: staging 22 KB that way cost 2.8 us at 1x11008x4096).
  os << "  const int lhsRow = group < " << shape.rows << " ? group : 0;\n";
  os << "  const uint16_t *lhs = in0 + lhsRow * " << shape.k << "LL + warp * "
     << chunk << "LL + quad * 16;\n";
  if (staged) {
    // Each 4 lhs elements (x0 x1 x2 x3) as the words (x0 x2)(x1 x3).
    int64_t words = chunk / 2;
    os << "  __shared__ __align__(16) unsigned lhsStaged[" << warps << "]["
       << shape.rows << "][" << words << "];\n";
    os << "  for (int r = 0; r < " << shape.rows << "; ++r)\n";
    os << "    for (int i = lane; i < stepCount * " << kTensorCoreStep / 8
       << "; i += 32) {\n";
    os << "      const int4 v = __ldg((const int4 *)(in0 + r * " << shape.k
       << "LL + warp * " << chunk << "LL) + i);\n";
    os << "      ((int4 *)lhsStaged[warp][r])[i] = make_int4("
          "__byte_perm(v.x, v.y, 0x5410u), __byte_perm(v.x, v.y, 0x7632u), "
          "__byte_perm(v.z, v.w, 0x5410u), __byte_perm(v.z, v.w, 0x7632u));\n";
    os << "    }\n";
    os << "  __syncwarp();\n";
    os << "  const unsigned *staged = lhsStaged[warp][lhsRow] + quad * 8;\n";
  }
  // One step: the weights of its 64 k in `weights0`, `weights1`; the lhs
  // of step `step` (every lane loads it: a lane past the rows reads row 0
  // into a column of the mma that is never stored); `dequantize(word,
  // channel, low, high)` the call that makes a word's two pairs.
  using Dequantize = std::function<std::string(const std::string &, char,
                                               const char *, const char *)>;
  auto printStep = [&](const std::string &indent, const std::string &step,
                       const Dequantize &dequantize) {
    os << indent << "{\n";
    if (staged) {
      os << indent << "  const int4 *x = (const int4 *)(staged + (" << step
         << ") * " << kTensorCoreStep / 2 << ");\n";
      os << indent << "  const int4 x0 = x[0], x1 = x[1];\n";
    } else {
      os << indent << "  const int4 *x = (const int4 *)(lhs + (" << step
         << ") * " << kTensorCoreStep << ");\n";
      os << indent << "  const int4 x0 = __ldg(x), x1 = __ldg(x + 1);\n";
    }
    os << indent
       << "  unsigned xw[8] = {(unsigned)x0.x, (unsigned)x0.y, "
          "(unsigned)x0.z, (unsigned)x0.w, (unsigned)x1.x, (unsigned)x1.y, "
          "(unsigned)x1.z, (unsigned)x1.w};\n";
    if (bf16 && !staged) {
      // (x0 x1)(x2 x3) -> (x0 x2)(x1 x3), as the staging does.
      os << indent << "  #pragma unroll\n";
      os << indent << "  for (int j = 0; j < 4; ++j) {\n";
      os << indent
         << "    const unsigned low = xw[2 * j], high = xw[2 * j + 1];\n";
      os << indent << "    xw[2 * j] = __byte_perm(low, high, 0x5410u);\n";
      os << indent << "    xw[2 * j + 1] = __byte_perm(low, high, 0x7632u);\n";
      os << indent << "  }\n";
    }
    os << indent
       << "  const unsigned *w0 = (const unsigned *)&weights0, *w1 = "
          "(const unsigned *)&weights1;\n";
    os << indent << "  #pragma unroll\n";
    os << indent << "  for (int j = 0; j < 4; ++j) {\n";
    os << indent << "    unsigned a0, a1, a2, a3;\n";
    os << indent << "    " << dequantize("w0[j]", '0', "a0", "a2") << ";\n";
    os << indent << "    " << dequantize("w1[j]", '1', "a1", "a3") << ";\n";
    for (const char *acc : {"d", "e"}) {
      os << indent << "    " << (acc[0] == 'd' ? "if ((j & 1) == 0)" : "else")
         << " asm(\"mma.sync.aligned.m16n8k16.row.col.f32." << type << "."
         << type
         << ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, "
            "%2, %3};\" : \"+f\"("
         << acc << "[0]), \"+f\"(" << acc << "[1]), \"+f\"(" << acc
         << "[2]), \"+f\"(" << acc
         << "[3]) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(xw[2 * "
            "j]), \"r\"(xw[2 * j + 1]));\n";
    }
    os << indent << "  }\n";
    os << indent << "}\n";
  };
  Dequantize fast = [&](const std::string &word, char channel, const char *low,
                        const char *high) {
    std::string c(1, channel);
    return name + "_dequantize(" + word + ", scale" + c +
           (bf16 ? ", addend" + c : std::string()) + ", " + low + ", " + high +
           ")";
  };
  Dequantize exact = [&](const std::string &word, char channel, const char *low,
                         const char *high) {
    return name + "_dequantize_exact(" + word + ", scale" +
           std::string(1, channel) + ", " + low + ", " + high + ")";
  };
  std::string indent = "  ";
  if (bf16) {
    os << "  if (__all_sync(0xffffffffu, fast0 && fast1)) {\n";
    indent = "    ";
  }
  if (stages) {
    // The slot is named statically when the loop is unrolled, and costs a
    // modulo per step of a long row otherwise.
    os << indent
       << (schedule.unrolled ? "#pragma unroll\n" : "#pragma unroll 1\n");
    os << indent << "for (int step = 0; step < " << steps << "; ++step) {\n";
    os << indent << "  if (step >= stepCount) break;\n";
    os << indent << "  if (step + " << stages - 1 << " < stepCount) {\n";
    printCopy(indent + "    ",
              "(step + " + std::to_string(stages - 1) + ") % " +
                  std::to_string(stages),
              "step + " + std::to_string(stages - 1));
    os << indent << "  }\n";
    os << indent << "  " << commit << "\n";
    os << indent << "  asm volatile(\"cp.async.wait_group " << stages - 1
       << ";\" ::: \"memory\");\n";
    os << indent << "  const int4 weights0 = weightRing[warp][step % " << stages
       << "][0][lane], weights1 = weightRing[warp][step % " << stages
       << "][1][lane];\n";
    printStep(indent + "  ", "step", fast);
    os << indent << "}\n";
  } else if (schedule.unrolled) {
    os << indent << "#pragma unroll\n";
    os << indent << "for (int step = 0; step < " << steps << "; ++step) {\n";
    os << indent << "  if (step >= stepCount) break;\n";
    os << indent << "  const int4 weights0 = ring0[step % " << ahead
       << "], weights1 = ring1[step % " << ahead << "];\n";
    os << indent << "  if (step + " << ahead << " < stepCount) {\n";
    printLoad(indent + "    ", "step % " + std::to_string(ahead),
              "step + " + std::to_string(ahead));
    os << indent << "  }\n";
    printStep(indent + "  ", "step", fast);
    os << indent << "}\n";
  } else {
    // Long rows: rounds of `ahead` steps; the pointers advance by a round,
    // so every load's offset is a constant.
    os << indent << "#pragma unroll 1\n";
    os << indent << "for (int first = 0; first < stepCount; first += " << ahead
       << ", row0 += " << ahead * kTensorCoreStep
       << ", row1 += " << ahead * kTensorCoreStep
       << ", lhs += " << ahead * kTensorCoreStep << ") {\n";
    os << indent << "  #pragma unroll\n";
    os << indent << "  for (int i = 0; i < " << ahead << "; ++i) {\n";
    os << indent << "    if (first + i >= stepCount) break;\n";
    os << indent
       << "    const int4 weights0 = ring0[i], weights1 = ring1[i];\n";
    os << indent << "    if (first + i + " << ahead << " < stepCount) {\n";
    printLoad(indent + "      ", "i", "i + " + std::to_string(ahead));
    os << indent << "    }\n";
    printStep(indent + "    ", "i", fast);
    os << indent << "  }\n";
    os << indent << "}\n";
  }
  os << indent << "#pragma unroll\n";
  os << indent << "for (int i = 0; i < 4; ++i) d[i] += e[i];\n";
  if (bf16) {
    // d[0], d[1] belong to channel0, d[2], d[3] to channel1.
    os << "    d[0] *= unscale0; d[1] *= unscale0;\n";
    os << "    d[2] *= unscale1; d[3] *= unscale1;\n";
    os << "  } else {\n";
    // A channel of this block has a scale outside [2^-100, 2^101), inf,
    // NaN, 0 or a subnormal one: the exact dequantization, one step at a
    // time.
    os << "    scale0 = bits0 * 0x10001u;\n";
    os << "    scale1 = bits1 * 0x10001u;\n";
    if (stages) // the ring's first copies land before the block can end
      os << "    asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n";
    os << "    #pragma unroll 1\n";
    os << "    for (int step = 0; step < stepCount; ++step) {\n";
    os << "      const int4 weights0 = " << name
       << "_load_weights(row0 + step * " << kTensorCoreStep
       << "), weights1 = " << name << "_load_weights(row1 + step * "
       << kTensorCoreStep << ");\n";
    printStep("      ", "step", exact);
    os << "    }\n";
    os << "    #pragma unroll\n";
    os << "    for (int i = 0; i < 4; ++i) d[i] += e[i];\n";
    os << "  }\n";
  }
  os << "#else\n";
  // Before sm_80 there is no f16/bf16 mma: each lane sums its own four
  // (channel, row) entries over the warp's chunk of k, one at a time.
  for (const char *row : {"0", "1"})
    os << "  const float scale" << row << " = has" << row << " ? "
       << fromStorage(shape.dtype, std::string("in2[channel") + row + "]")
       << " : 0.0f;\n";
  os << "  for (long long k = warp * " << chunk << "LL; k < " << shape.k
     << "LL && k < (warp + 1) * " << chunk << "LL; ++k) {\n";
  os << "    for (int i = 0; i < 4; ++i) {\n";
  os << "      const long long channel = i < 2 ? channel0 : channel1;\n";
  os << "      const float scale = i < 2 ? scale0 : scale1;\n";
  os << "      const int row = quad * 2 + (i & 1);\n";
  os << "      if (!(i < 2 ? has0 : has1) || row >= " << shape.rows
     << ") continue;\n";
  os << "      const float w = "
     << dequantized(shape,
                    "in1[channel * " + std::to_string(shape.k) + "LL + k]")
     << ";\n";
  os << "      d[i] += w * "
     << fromStorage(shape.dtype,
                    "in0[row * " + std::to_string(shape.k) + "LL + k]")
     << ";\n";
  os << "    }\n";
  os << "  }\n";
  os << "#endif\n";
  if (!schedule.earlyDependents)
    os << launchDependents;
  // d[0], d[1]: channel0, rows 2 quad and 2 quad + 1; d[2], d[3]: channel1.
  os << "  __shared__ float partial[" << warps << "][32][4];\n";
  os << "  #pragma unroll\n";
  os << "  for (int i = 0; i < 4; ++i) partial[warp][lane][i] = d[i];\n";
  os << "  __syncthreads();\n";
  os << "  if (warp != 0) return;\n";
  os << "  for (int other = 1; other < " << warps << "; ++other)\n";
  os << "    for (int i = 0; i < 4; ++i) d[i] += partial[other][lane][i];\n";
  os << "  #pragma unroll\n";
  os << "  for (int i = 0; i < 4; ++i) {\n";
  os << "    const long long channel = i < 2 ? channel0 : channel1;\n";
  os << "    const int row = quad * 2 + (i & 1);\n";
  os << "    if ((i < 2 ? has0 : has1) && row < " << shape.rows << ")\n";
  os << "      out0[row * " << shape.n
     << "LL + channel] = " << toStorage(shape.dtype, "d[i]") << ";\n";
  os << "  }\n";
  os << "}\n";
  return os.str();
}

} // namespace

std::string printCudaGemv(const GemvShape &shape, const GemvParams &params,
                          const std::string &name) {
  return params.tensorCores ? printCudaTensorCore(shape, params, name)
                            : printCuda(shape, params, name);
}

} // namespace fuse
