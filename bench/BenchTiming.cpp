//===- BenchTiming.cpp - How the benchmarks time and feed models ---------===//

#include "BenchTiming.h"

#include "runtime/core/Compare.h"
#include "runtime/cuda/CudaApi.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <omp.h>

namespace fusec::bench {

double medianMicros(int reps, const std::function<void()> &body) {
  body(); // warm-up: page faults, thread team, caches
  body();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// A parallel copy of `bytes`: the practical bandwidth ceiling.
double copyGBps(int64_t bytes, int reps) {
  std::vector<char> source(bytes, 1), target(bytes, 0);
  double us = medianMicros(reps, [&] {
#pragma omp parallel
    {
      int64_t threads = omp_get_num_threads(), id = omp_get_thread_num();
      int64_t chunk = (bytes + threads - 1) / threads;
      int64_t begin = std::min(bytes, id * chunk);
      int64_t end = std::min(bytes, begin + chunk);
      std::memcpy(target.data() + begin, source.data() + begin, end - begin);
    }
  });
  return 2.0 * bytes / us / 1e3;
}

/// Bytes of every input, constant (a model's weights) and output once.
int64_t movedBytes(const Program &program) {
  int64_t bytes = 0;
  for (int id : program.inputs)
    bytes += program.buffers[id].byteSize();
  for (const BufferDesc &buffer : program.buffers)
    if (buffer.role == BufferRole::Constant)
      bytes += buffer.byteSize();
  for (int id : program.outputs)
    bytes += program.buffers[id].byteSize();
  return bytes;
}

/// Median kernel time of `launch` on the GPU, by CUDA events.
double medianGpuMicros(int reps, const std::function<void()> &launch) {
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  cuda::CUevent start, stop;
  cuda::check(driver.cuEventCreate(&start, 0), "cuEventCreate", "bench");
  cuda::check(driver.cuEventCreate(&stop, 0), "cuEventCreate", "bench");
  // Warm up for 20 ms at least: after a pause (an NVRTC compile) the SM
  // clocks need that long to ramp back up, which compute-heavy kernels feel.
  auto warmStart = std::chrono::steady_clock::now();
  for (int i = 0; i < 5 || std::chrono::steady_clock::now() - warmStart <
                               std::chrono::milliseconds(20);
       ++i) {
    launch();
    if (i % 16 == 15)
      driver.cuStreamSynchronize(stream);
  }
  driver.cuStreamSynchronize(stream);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    driver.cuEventRecord(start, stream);
    launch();
    driver.cuEventRecord(stop, stream);
    cuda::check(driver.cuEventSynchronize(stop), "cuEventSynchronize", "bench");
    float ms = 0;
    driver.cuEventElapsedTime(&ms, start, stop);
    times.push_back(ms * 1e3);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Median GPU time of a launch, the launches queued before the GPU reaches
/// them: per sample the stream first waits on a word of mapped host memory,
/// the start event, `batch` launches and the stop event are queued behind
/// that wait, and only then does the host release it; a sample is the
/// pair's time over `batch`. Per-launch event timing (medianGpuMicros) also
/// counts the host's launch call, which the GPU idles through: 3-6 us on
/// the H200 machines, 40% of a 45 MB GEMV's time. In a model the launches
/// are queued back to back (or captured in a graph) and that idle time is
/// not there. With `batch` 1 each sample still holds one launch's start and
/// drain; a larger batch times a stream of launches back to back, as a
/// decode step runs its layers. `launches` run in turn; give copies of one
/// model whose inputs together exceed the L2 several times over and every
/// launch reads its inputs from DRAM, as a layer's weights are in a decode
/// step (the previous run of the same copy is evicted).
double medianQueuedGpuMicros(int reps,
                             const std::vector<std::function<void()>> &launches,
                             int batch) {
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  void *host = nullptr;
  cuda::check(driver.cuMemHostAlloc(&host, sizeof(uint32_t),
                                    cuda::kMemHostAllocDeviceMap),
              "cuMemHostAlloc", "bench release word");
  volatile uint32_t *release = static_cast<volatile uint32_t *>(host);
  *release = 0;
  cuda::CUdeviceptr releaseOnDevice = 0;
  cuda::check(driver.cuMemHostGetDevicePointer(&releaseOnDevice, host, 0),
              "cuMemHostGetDevicePointer", "bench release word");
  cuda::CUevent start, stop;
  cuda::check(driver.cuEventCreate(&start, 0), "cuEventCreate", "bench");
  cuda::check(driver.cuEventCreate(&stop, 0), "cuEventCreate", "bench");
  auto warmStart = std::chrono::steady_clock::now();
  for (size_t i = 0;
       i < 5 * launches.size() || std::chrono::steady_clock::now() - warmStart <
                                      std::chrono::milliseconds(20);
       ++i) {
    launches[i % launches.size()]();
    if (i % 16 == 15)
      driver.cuStreamSynchronize(stream);
  }
  driver.cuStreamSynchronize(stream);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    uint32_t ticket = static_cast<uint32_t>(i + 1);
    cuda::check(driver.cuStreamWaitValue32(stream, releaseOnDevice, ticket,
                                           cuda::kStreamWaitValueGeq),
                "cuStreamWaitValue32", "bench");
    {
      // Released however the queuing ends: a launch that throws must not
      // leave the stream waiting.
      struct Release {
        volatile uint32_t *word;
        uint32_t ticket;
        ~Release() { *word = ticket; }
      } releaseAtEnd{release, ticket};
      driver.cuEventRecord(start, stream);
      for (int b = 0; b < batch; ++b)
        launches[(static_cast<size_t>(i) * batch + b) % launches.size()]();
      driver.cuEventRecord(stop, stream);
    }
    cuda::check(driver.cuEventSynchronize(stop), "cuEventSynchronize", "bench");
    float ms = 0;
    driver.cuEventElapsedTime(&ms, start, stop);
    times.push_back(ms * 1e3 / batch);
  }
  driver.cuEventDestroy(start);
  driver.cuEventDestroy(stop);
  driver.cuMemFreeHost(host);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Enough copies of a model whose launches move `bytes` for a launch of
/// each to find its inputs evicted from the L2 by the others (4 times the
/// L2 between two launches of one copy), at least 2.
int coldCopiesFor(int64_t bytes) {
  int l2 = 0;
  cuda::check(
      cuda::driver().cuDeviceGetAttribute(
          &l2, cuda::kDeviceAttributeL2CacheSize, cuda::device().handle),
      "cuDeviceGetAttribute", "L2 size");
  return static_cast<int>(std::clamp<int64_t>(4 * l2 / bytes + 1, 2, 64));
}

/// A device-to-device copy of `bytes`, timed per launch or (`queuedBatch`
/// launches per sample) by medianQueuedGpuMicros.
double cudaCopyGBps(int64_t bytes, int reps, int queuedBatch) {
  const cuda::Driver &driver = cuda::driver();
  cuda::CUdeviceptr source, target;
  cuda::check(driver.cuMemAlloc(&source, bytes), "cuMemAlloc", "copy source");
  cuda::check(driver.cuMemAlloc(&target, bytes), "cuMemAlloc", "copy target");
  auto copy = [&] {
    driver.cuMemcpyDtoDAsync(target, source, bytes, cuda::device().stream);
  };
  double us = queuedBatch ? medianQueuedGpuMicros(reps, {copy}, queuedBatch)
                          : medianGpuMicros(reps, copy);
  driver.cuMemFree(source);
  driver.cuMemFree(target);
  return 2.0 * bytes / us / 1e3;
}

bool outputsAgree(const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
  bool agree = a.size() == b.size();
  for (size_t i = 0; agree && i < a.size(); ++i)
    agree &= compareTensors(a[i], b[i]).ok();
  return agree;
}

std::vector<Tensor> randomInputs(const Program &program) {
  std::mt19937_64 rng(0);
  std::vector<Tensor> inputs;
  for (int id : program.inputs)
    inputs.push_back(randomTensor(program.buffers[id].dtype,
                                  program.buffers[id].shape, rng));
  return inputs;
}

} // namespace fusec::bench
