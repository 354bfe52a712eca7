//===- Profile.h - Per-step timing against the device's limits -*- C++ -*-===//
//
// What `fusec --profile` measures: each step of a Program (kernel or library
// call) timed over several runs, the bytes it moves and the FLOPs it does,
// next to the device's limits: a copy ceiling measured once per device and
// cached on disk, and a peak FLOP rate per dtype from a small table (GPUs) or
// an estimate (CPUs).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_PROFILE_H
#define FUSEC_RUNTIME_PROFILE_H

#include "runtime/Executable.h"

#include <string>
#include <vector>

namespace fusec {

/// The limits a step is held to.
struct DeviceLimits {
  /// "NVIDIA H200 (sm_90)", or the CPU's model name and thread count.
  std::string device;
  /// Bytes read plus bytes written per second by a large copy: a
  /// device-to-device cuMemcpy (GPU) or a memcpy on every thread (CPU).
  double copyGBps = 0;
  /// Where `copyGBps` came from: "measured" or the cache file it was read
  /// from.
  std::string copySource;
  /// Peak TFLOP/s of the generated kernels (CUDA cores / SIMD units) and of
  /// library calls (tensor cores, with TF32 for f32 when `tf32`), per dtype;
  /// 0 when unknown.
  double kernelTflops(DType dtype) const;
  double matmulTflops(DType dtype) const;
  /// Where the peak rates come from: "table: H100 SXM / H200" or
  /// "estimate: 8 cores x 3.0 GHz x 32 f32 FLOP/cycle", or "unknown".
  std::string peakSource;

  // Peak TFLOP/s of the device; 0 when unknown.
  double f32 = 0, f64 = 0, half = 0;                    ///< CUDA cores / SIMD
  double tensorTf32 = 0, tensorHalf = 0, tensorF64 = 0; ///< dense
  bool tf32 = false; ///< f32 matmuls may use TF32
};

/// The limits of the device `target` runs on. The copy ceiling is measured
/// once per device and kept in `cacheDir`/limits/ (a kernel cache
/// directory); a later call reads it back.
DeviceLimits deviceLimits(Target target, const std::string &cacheDir,
                          bool tf32);

/// One step of a profile.
struct StepProfile {
  size_t step = 0; ///< index in Program::steps
  StepKind kind = StepKind::Kernel;
  std::string name;             ///< kernel name, or "matmul"
  std::vector<std::string> ops; ///< a kernel's fused ops
  /// A matmul's shape (matmulShape).
  std::string call;
  std::string schedule; ///< "pointwise", "row-reduction", ..., "library"
  DType dtype = DType::F32;
  double medianMicros = 0, minMicros = 0;
  int64_t bytes = 0; ///< each input read once, each output written once
  /// FLOPs: 2*M*N*K*batch for a matmul; for a kernel one per arithmetic op
  /// per element (an estimate); -1 when unknown (layout kernels: none).
  int64_t flops = -1;
  double peakTflops = 0; ///< of the step's dtype and unit; 0 when unknown
};

struct Profile {
  std::string model;
  Target target = Target::Cpu;
  int runs = 0;
  DeviceLimits limits;
  std::vector<StepProfile> steps; ///< kernels and library calls, in order
  /// Median of a whole run() (copies in and out included; on the GPU
  /// replayed as one CUDA graph unless disabled).
  double runMicros = 0;
};

/// Runs `executable` a few times to warm up, then `runs` times timing each
/// step (runTimed), and `runs` times as a whole (run).
Profile profileExecutable(Executable &executable,
                          const std::vector<Tensor> &inputs, int runs,
                          const DeviceLimits &limits);

/// Bytes and FLOPs of one step, as the profile counts them.
int64_t stepBytes(const Program &program, const Step &step);
int64_t stepFlops(const Program &program, const Step &step);
/// A matmul's dtype and shape: "f32 64x768x768 batch 12, bias, gelu_tanh".
std::string matmulShape(const MatmulCall &call);

/// Records the steps of one timed run on the trace's device track (when
/// tracing): step i began at `startMicros[i]` (runtime/core/Trace.h's clock)
/// and took `stepMicros[i]`. Views are left out.
void traceSteps(const Program &program, const std::vector<double> &startMicros,
                const std::vector<double> &stepMicros);

} // namespace fusec

#endif
