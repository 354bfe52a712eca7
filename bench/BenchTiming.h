//===- BenchTiming.h - How the benchmarks time and feed models -*- C++ -*-===//
#ifndef FUSEC_BENCH_BENCHTIMING_H
#define FUSEC_BENCH_BENCHTIMING_H

#include "compiler/Driver.h"

#include <functional>
#include <vector>

namespace fusec::bench {

/// Median wall time of `body` (after two warm-up calls), in microseconds.
double medianMicros(int reps, const std::function<void()> &body);
/// A parallel host copy of `bytes`: the CPU's bandwidth ceiling, GB/s
/// counting read and write.
double copyGBps(int64_t bytes, int reps);
/// Bytes of every input, constant (a model's weights) and output once.
int64_t movedBytes(const Program &program);
/// Median kernel time of `launch` on the GPU, by CUDA events.
double medianGpuMicros(int reps, const std::function<void()> &launch);
/// Median GPU time of a launch queued before the GPU reaches it (see the
/// definition), over `batch` launches per sample.
double medianQueuedGpuMicros(int reps,
                             const std::vector<std::function<void()>> &launches,
                             int batch = 1);
/// Copies of a model moving `bytes` per launch that evict each other's
/// inputs from the L2.
int coldCopiesFor(int64_t bytes);
/// A device-to-device copy of `bytes`: the GPU's bandwidth ceiling, GB/s.
double cudaCopyGBps(int64_t bytes, int reps, int queuedBatch = 0);
/// Whether two runs' outputs agree within their dtypes' tolerances.
bool outputsAgree(const std::vector<Tensor> &a, const std::vector<Tensor> &b);
/// Seeded uniform inputs for every input of `program`.
std::vector<Tensor> randomInputs(const Program &program);

} // namespace fusec::bench

#endif
