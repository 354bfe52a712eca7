//===- GemvEmitter.h - What the int8-weight GEMV printers share -*- C++ -*-===//
//
// The C++ (cpu/GemvCppPrinter.cpp) and CUDA (cuda/GemvCudaPrinter.cpp)
// printers of the quantized GEMV: they print the kernel as its GemvParams
// (schedule/GemvSchedule.h) say and decide nothing. Each weight is
// dequantized in registers exactly as DequantizeLinear defines it (f32
// product, rounded to the scale's dtype), so the kernel matches
// dequantize_linear + matmul up to the order of the sums.
//
//===----------------------------------------------------------------------===//
#ifndef FUSE_CODEGEN_GEMVEMITTER_H
#define FUSE_CODEGEN_GEMVEMITTER_H

#include "codegen/schedule/GemvSchedule.h"

#include <string>

namespace fuse {

/// The kernel as C++ with OpenMP: `extern "C" void NAME(const void *const *,
/// void *const *)`, one loop over the channels.
std::string printCppGemv(const GemvShape &shape, const GemvParams &params,
                         const std::string &name);
/// The kernel as CUDA C: `extern "C" __global__ void NAME(in0, in1, in2,
/// out0)`, the tensor-core kernel or the SIMT one as the params say.
std::string printCudaGemv(const GemvShape &shape, const GemvParams &params,
                          const std::string &name);

namespace gemv {

/// The int8 expression `weight` as DequantizeLinear yields it (the
/// decomposition of dequantize_linear computes in f32, then rounds to the
/// scale's dtype), in the accumulation type; `scale` is in scope.
std::string dequantized(const GemvShape &shape, const std::string &weight);
/// `acc += w * x` for an accumulator. CUDA kernels compile without fma
/// contraction (each ONNX op rounds its own result), but a matmul's sum of
/// products has no such order or rounding to keep: on CUDA it is one fma
/// per product, as cuBLAS computes it. (The C++ target keeps the plain
/// form, whose fma would be a libm call on a CPU without the instruction.)
std::string multiplyAdd(bool fusedMultiplyAdd, const std::string &acc,
                        const std::string &w, const std::string &x);
/// Statements that add each row's product with the dequantized `weight`
/// to its accumulator, for lhs element `column` of the row.
std::string accumulate(const GemvShape &shape, const std::string &accType,
                       const std::string &weight, const std::string &lhs,
                       bool fusedMultiplyAdd);

} // namespace gemv

} // namespace fuse

#endif
