//===- BitcastTest.cpp - ONNX BitCast between every pair of dtypes --------===//
//
// The reference is the stored bytes themselves: a bitcast's output element
// holds its input element's bits, read as the other dtype (a byte narrower
// than 8 bits keeps its low bits, sign-extended for a signed target; read
// as i1, any nonzero byte is true). Every code of the 2- to 16-bit dtypes
// and a sample of the 32- and 64-bit ones (NaN payloads, signed zeros,
// subnormals) goes through each bitcast of its width, and back.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

using namespace fusec;

namespace {

/// The dtypes of one width, every pair of which a bitcast connects.
const std::vector<std::vector<DType>> kWidths = {
    {DType::F64, DType::I64, DType::U64},
    {DType::F32, DType::I32, DType::U32},
    {DType::F16, DType::BF16, DType::I16, DType::U16},
    {DType::I8, DType::U8, DType::I1, DType::F8E4M3FN, DType::F8E4M3FNUZ,
     DType::F8E5M2, DType::F8E5M2FNUZ, DType::F8E8M0},
    {DType::I4, DType::U4, DType::F4E2M1},
    {DType::I2, DType::U2},
};

/// The stored bits of element `i` (a byte's low `bits` bits narrower than
/// 8, which is how a signed narrow integer's byte reads here).
uint64_t storedBits(const Tensor &tensor, int64_t i) {
  size_t bytes = dtypeBytes(tensor.dtype);
  uint64_t raw = 0;
  std::memcpy(&raw, tensor.bytes.data() + i * bytes, bytes);
  int bits = dtypeInfo(tensor.dtype).bits;
  return bits < 64 ? raw & ((uint64_t(1) << bits) - 1) : raw;
}

/// Element `i` of a tensor of `dtype` storing `bits` as a bitcast reads
/// them.
void storeBits(Tensor &tensor, int64_t i, uint64_t bits) {
  const int width = dtypeInfo(tensor.dtype).bits;
  uint64_t raw = bits;
  if (tensor.dtype == DType::I1)
    raw = bits != 0;
  else if (width < 8 && isInteger(tensor.dtype) && !isUnsigned(tensor.dtype) &&
           (bits >> (width - 1)) & 1)
    raw = bits | (~uint64_t(0) << width); // sign-extended into its byte
  std::memcpy(tensor.bytes.data() + i * dtypeBytes(tensor.dtype), &raw,
              dtypeBytes(tensor.dtype));
}

/// Every code of a dtype up to 16 bits (i1: false and true), and for wider
/// ones the specials of both float formats and random patterns.
Tensor allPatterns(DType dtype) {
  const int bits = dtypeInfo(dtype).bits;
  std::vector<uint64_t> patterns;
  if (dtype == DType::I1) {
    patterns = {0, 1};
  } else if (bits <= 16) {
    for (uint64_t code = 0; code < (uint64_t(1) << bits); ++code)
      patterns.push_back(code);
  } else {
    const bool wide = bits == 64;
    // +-0, +-inf, quiet and signaling NaNs with payloads, subnormals, 1.
    patterns = wide ? std::vector<uint64_t>{0,
                                            0x8000000000000000,
                                            0x7ff0000000000000,
                                            0xfff0000000000000,
                                            0x7ff8000000000000,
                                            0x7ff0000000000001,
                                            0xfff4000000000123,
                                            0x0000000000000001,
                                            0x800fffffffffffff,
                                            0x3ff0000000000000,
                                            0xffffffffffffffff}
                    : std::vector<uint64_t>{0,          0x80000000, 0x7f800000,
                                            0xff800000, 0x7fc00000, 0x7f800001,
                                            0xffa00123, 0x00000001, 0x807fffff,
                                            0x3f800000, 0xffffffff};
    std::mt19937_64 random(bits);
    for (int i = 0; i < 2000; ++i)
      patterns.push_back(wide ? random() : random() & 0xffffffff);
  }
  Tensor tensor(dtype, {static_cast<int64_t>(patterns.size())});
  for (size_t i = 0; i < patterns.size(); ++i)
    storeBits(tensor, i, patterns[i]);
  return tensor;
}

/// Whether `bits` read as `dtype` are an f16 or bf16 NaN.
bool isHalfNaN(DType dtype, uint64_t bits) {
  return (dtype == DType::F16 && (bits & 0x7fff) > 0x7c00) ||
         (dtype == DType::BF16 && (bits & 0x7fff) > 0x7f80);
}

/// Each dtype bitcast to every other of its width, on `target`, and each
/// result bitcast back. On the GPU an f16 or bf16 NaN is loaded and stored
/// by the hardware's conversions, which keep no payload: there it need only
/// stay a NaN of its format (docs/semantics.md).
void checkBitcasts(Target target) {
  for (const std::vector<DType> &width : kWidths)
    for (DType from : width) {
      Tensor input = allPatterns(from);
      const int64_t n = input.numElements();
      GraphBuilder b("bitcasts");
      std::string x = b.input("x", from, {n});
      std::vector<DType> targets;
      for (DType to : width) {
        if (to == from)
          continue;
        targets.push_back(to);
        std::string there =
            b.op("bitcast", {x}, {{"dtype", std::string(dtypeName(to))}});
        b.output(there);
        b.output(b.op("bitcast", {there},
                      {{"dtype", std::string(dtypeName(from))}}));
      }
      if (target == Target::Cpu)
        test::compileForGpus(b.build());
      std::vector<Tensor> out =
          compile(b.build(), test::testOptions(true, target)).run({input});
      for (size_t t = 0; t < targets.size(); ++t) {
        const Tensor &there = out[2 * t], &back = out[2 * t + 1];
        INFO(dtypeName(from) << " to " << dtypeName(targets[t]));
        int64_t wrong = 0, wrongBack = 0;
        for (int64_t i = 0; i < n; ++i) {
          uint64_t bits = storedBits(input, i);
          if (target == Target::Cuda &&
              (isHalfNaN(from, bits) || isHalfNaN(targets[t], bits))) {
            wrong += !isHalfNaN(from, storedBits(there, i)) &&
                     !isHalfNaN(targets[t], storedBits(there, i));
            wrongBack += !isHalfNaN(from, storedBits(back, i)) &&
                         !isHalfNaN(targets[t], storedBits(back, i));
            continue;
          }
          Tensor expected(targets[t], {1});
          storeBits(expected, 0, bits);
          wrong +=
              std::memcmp(there.bytes.data() + i * dtypeBytes(there.dtype),
                          expected.bytes.data(), dtypeBytes(there.dtype)) != 0;
          // Back: i1 keeps only whether any bit was set.
          Tensor returned(from, {1});
          storeBits(returned, 0,
                    targets[t] == DType::I1 ? uint64_t(bits != 0) : bits);
          wrongBack +=
              std::memcmp(back.bytes.data() + i * dtypeBytes(back.dtype),
                          returned.bytes.data(), dtypeBytes(back.dtype)) != 0;
          if (wrong + wrongBack == 1 && (wrong || wrongBack))
            UNSCOPED_INFO("first mismatch at bits 0x" << std::hex << bits);
        }
        CHECK(wrong == 0);
        CHECK(wrongBack == 0);
      }
    }
}

} // namespace

TEST_CASE("BitCast keeps every bit between dtypes of one width", "[ops]") {
  checkBitcasts(Target::Cpu);
}

TEST_CASE("BitCast keeps every bit between dtypes of one width on the GPU",
          "[ops][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkBitcasts(Target::Cuda);
}

TEST_CASE("bitcast refuses dtypes of different widths", "[ops]") {
  GraphBuilder b("bad_bitcast");
  b.output(b.op("bitcast", {b.input("x", DType::F32, {4})},
                {{"dtype", std::string("i16")}}));
  CHECK_THROWS_WITH(
      compile(b.build(), test::testOptions()),
      Catch::Contains("reinterprets 32-bit elements as 16-bit ones (f32 to "
                      "i16): the widths must be equal"));
}
