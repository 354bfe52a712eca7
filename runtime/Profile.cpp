//===- Profile.cpp - Per-step timing against the device's limits ---------===//

#include "runtime/Profile.h"

#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"
#include "runtime/cuda/CudaApi.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fusec {

namespace {

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// Bytes of the copies the ceiling is measured with: far beyond any cache.
constexpr int64_t kCopyBytes = int64_t(256) << 20;
constexpr int kCopyReps = 15;

/// A memcpy of kCopyBytes split over every hardware thread: bytes read plus
/// bytes written per second.
double measureHostCopyGBps() {
  std::vector<char> source(kCopyBytes, 1), target(kCopyBytes, 0);
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  auto copyOnce = [&] {
    std::vector<std::thread> workers;
    int64_t chunk = (kCopyBytes + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        int64_t begin = std::min<int64_t>(kCopyBytes, t * chunk);
        int64_t end = std::min<int64_t>(kCopyBytes, begin + chunk);
        std::memcpy(target.data() + begin, source.data() + begin, end - begin);
      });
    for (std::thread &worker : workers)
      worker.join();
  };
  copyOnce(); // touch every page
  std::vector<double> micros;
  for (int i = 0; i < kCopyReps; ++i) {
    auto start = std::chrono::steady_clock::now();
    copyOnce();
    micros.push_back(std::chrono::duration<double, std::micro>(
                         std::chrono::steady_clock::now() - start)
                         .count());
  }
  return 2.0 * kCopyBytes / median(micros) / 1e3;
}

/// A device-to-device copy of kCopyBytes timed with CUDA events.
double measureCudaCopyGBps() {
  cuda::StreamLock held;
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = held.stream();
  cuda::CUdeviceptr source = 0, target = 0;
  cuda::check(driver.cuMemAlloc(&source, kCopyBytes), "cuMemAlloc",
              "the copy ceiling's source");
  cuda::check(driver.cuMemAlloc(&target, kCopyBytes), "cuMemAlloc",
              "the copy ceiling's target");
  cuda::CUevent start = nullptr, stop = nullptr;
  cuda::check(driver.cuEventCreate(&start, 0), "cuEventCreate", "copy ceiling");
  cuda::check(driver.cuEventCreate(&stop, 0), "cuEventCreate", "copy ceiling");
  std::vector<double> micros;
  for (int i = 0; i < kCopyReps + 3; ++i) {
    driver.cuEventRecord(start, stream);
    driver.cuMemcpyDtoDAsync(target, source, kCopyBytes, stream);
    driver.cuEventRecord(stop, stream);
    cuda::check(driver.cuEventSynchronize(stop), "cuEventSynchronize",
                "copy ceiling");
    float millis = 0;
    driver.cuEventElapsedTime(&millis, start, stop);
    if (i >= 3) // the first copies warm the clocks up
      micros.push_back(millis * 1e3);
  }
  driver.cuMemFree(source);
  driver.cuMemFree(target);
  return 2.0 * kCopyBytes / median(micros) / 1e3;
}

/// The first "key : value" line of /proc/cpuinfo with this key.
std::string cpuInfoField(const std::string &key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0)
      continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return "";
}

/// The CPU's peak f32 rate: physical cores x maximum clock x FLOPs per cycle
/// of its widest SIMD (two FMA units assumed). Sets `source`; 0 when the
/// clock cannot be read.
double estimateCpuF32Tflops(std::string &source) {
  std::set<std::pair<std::string, std::string>> cores;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string physical;
    for (std::string line; std::getline(in, line);) {
      auto value = [&] { return line.substr(line.find(':') + 1); };
      if (line.rfind("physical id", 0) == 0)
        physical = value();
      else if (line.rfind("core id", 0) == 0)
        cores.insert({physical, value()});
    }
  }
  // Only the cores this process may run on: the machine may have more.
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  size_t physicalCores = cores.empty() ? threads : cores.size();
  physicalCores = std::min<size_t>(physicalCores, threads);
  double ghz = 0;
  std::ifstream maxFreq(
      "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (double khz = 0; maxFreq >> khz)
    ghz = khz / 1e6;
  if (ghz <= 0)
    ghz = std::atof(cpuInfoField("cpu MHz").c_str()) / 1e3;
  std::string flags = " " + cpuInfoField("flags") + " ";
  auto has = [&](const char *flag) {
    return flags.find(std::string(" ") + flag + " ") != std::string::npos;
  };
  int perCycle = 8; // SSE: 4 lanes, an add and a multiply
  const char *simd = "SSE";
  if (has("avx512f")) {
    perCycle = 64, simd = "AVX-512";
  } else if (has("avx2") && has("fma")) {
    perCycle = 32, simd = "AVX2+FMA";
  } else if (has("asimd")) {
    perCycle = 16, simd = "NEON";
  }
  if (ghz <= 0) {
    source = "unknown (no CPU clock found)";
    return 0;
  }
  char text[160];
  std::snprintf(text, sizeof text,
                "estimate: %zu cores x %.2f GHz x %d f32 FLOP/cycle (%s, "
                "2 FMA units assumed)",
                physicalCores, ghz, perCycle, simd);
  source = text;
  return physicalCores * ghz * perCycle / 1e3;
}

/// Known GPUs' peak TFLOP/s from the vendor's datasheets (dense; tensor
/// figures without 2:4 sparsity).
struct GpuPeaks {
  const char *match; ///< a substring of the device name
  const char *label;
  double f32, f64, half, tensorTf32, tensorHalf, tensorF64;
};
const GpuPeaks kGpuPeaks[] = {
    {"H100 PCIe", "H100 PCIe", 51.2, 25.6, 102.4, 378, 756, 51.2},
    {"H100", "H100 SXM", 66.9, 33.5, 133.8, 494.7, 989.4, 66.9},
    {"H200", "H200", 66.9, 33.5, 133.8, 494.7, 989.4, 66.9},
    {"GH200", "GH200", 66.9, 33.5, 133.8, 494.7, 989.4, 66.9},
    {"A100", "A100", 19.5, 9.7, 78, 156, 312, 19.5},
};

/// A file name for a device: letters, digits, '-' and '_' only.
std::string fileKey(const std::string &device) {
  std::string key;
  for (char c : device)
    key += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return key;
}

void makeDirectories(const std::string &path) {
  std::string partial;
  std::istringstream parts(path);
  if (!path.empty() && path[0] == '/')
    partial = "/";
  for (std::string part; std::getline(parts, part, '/');) {
    if (part.empty())
      continue;
    partial += part + "/";
    mkdir(partial.c_str(), 0755);
  }
}

} // namespace

double DeviceLimits::kernelTflops(DType dtype) const {
  if (dtype == DType::F64)
    return f64;
  if (dtype == DType::F16 || dtype == DType::BF16)
    return half > 0 ? half : f32;
  return f32;
}

double DeviceLimits::matmulTflops(DType dtype) const {
  if (dtype == DType::F64)
    return tensorF64 > 0 ? tensorF64 : f64;
  if (dtype == DType::F16 || dtype == DType::BF16)
    return tensorHalf > 0 ? tensorHalf : kernelTflops(dtype);
  return tf32 && tensorTf32 > 0 ? tensorTf32 : f32;
}

DeviceLimits deviceLimits(Target target, const std::string &cacheDir,
                          bool tf32) {
  DeviceLimits limits;
  limits.tf32 = tf32;
  if (target == Target::Cuda) {
    const cuda::Device &device = cuda::device();
    limits.device = device.name + " (sm_" + std::to_string(device.major) +
                    std::to_string(device.minor) + ")";
    limits.peakSource = "unknown (no table entry for this GPU)";
    for (const GpuPeaks &peaks : kGpuPeaks)
      if (device.name.find(peaks.match) != std::string::npos) {
        limits.f32 = peaks.f32, limits.f64 = peaks.f64,
        limits.half = peaks.half;
        limits.tensorTf32 = peaks.tensorTf32;
        limits.tensorHalf = peaks.tensorHalf;
        limits.tensorF64 = peaks.tensorF64;
        limits.peakSource =
            std::string("table: ") + peaks.label + " datasheet, dense";
        break;
      }
  } else {
    std::string model = cpuInfoField("model name");
    limits.device = (model.empty() ? std::string("cpu") : model) + " (" +
                    std::to_string(std::thread::hardware_concurrency()) +
                    " threads)";
    // The generated kernels and OpenBLAS compute f16/bf16 in f32.
    limits.f32 = estimateCpuF32Tflops(limits.peakSource);
    limits.f64 = limits.f32 / 2;
    limits.half = limits.f32;
  }

  // The copy ceiling: measured once per device, kept next to the kernels.
  std::string dir = cacheDir.empty() ? "" : cacheDir + "/limits";
  std::string path = dir + "/" + fileKey(limits.device) + ".copy-GBps";
  if (!dir.empty()) {
    std::ifstream in(path);
    if (double gbps = 0; in >> gbps && gbps > 0) {
      limits.copyGBps = gbps;
      limits.copySource = path;
      return limits;
    }
  }
  trace::Scope scope("measure the copy ceiling", "profile");
  limits.copyGBps =
      target == Target::Cuda ? measureCudaCopyGBps() : measureHostCopyGBps();
  limits.copySource = "measured";
  if (!dir.empty()) {
    // Written whole under a private name, then renamed: readers never see
    // half a number. A failure to write only costs a measurement next time.
    makeDirectories(dir);
    std::string temporary = path + "." + std::to_string(getpid());
    {
      std::ofstream out(temporary);
      out.precision(6);
      out << limits.copyGBps << "\n";
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
      std::remove(temporary.c_str());
  }
  return limits;
}

int64_t stepBytes(const Program &program, const Step &step) {
  auto bytesOf = [&](int id) { return program.buffers[id].byteSize(); };
  if (step.kind == StepKind::Kernel) {
    const KernelDesc &kernel = program.kernels[step.index];
    int64_t bytes = 0;
    // A buffer read twice (x * x) is read once.
    std::set<int> inputs(kernel.inputs.begin(), kernel.inputs.end());
    for (int id : inputs)
      bytes += bytesOf(id);
    for (int id : kernel.outputs)
      bytes += bytesOf(id);
    return bytes;
  }
  if (step.kind == StepKind::Matmul) {
    const MatmulCall &call = program.matmuls[step.index];
    int64_t element = dtypeBytes(call.dtype);
    int64_t bytes = (matmulExtentA(call) + matmulExtentB(call)) * element;
    if (call.bias >= 0)
      bytes += bytesOf(call.bias);
    return bytes + bytesOf(call.output);
  }
  return 0;
}

int64_t stepFlops(const Program &program, const Step &step) {
  if (step.kind == StepKind::Matmul) {
    const MatmulCall &call = program.matmuls[step.index];
    return 2 * call.m * call.n * call.k * call.batch;
  }
  if (step.kind != StepKind::Kernel)
    return -1;
  const KernelDesc &kernel = program.kernels[step.index];
  if (kernel.flops > 0)
    return static_cast<int64_t>(kernel.flops);
  // Layout kernels only move elements.
  if (kernel.schedule == "layout")
    return -1;
  // One FLOP per arithmetic op per element of the kernel's largest buffer
  // (a reduction's input, a pointwise kernel's output). An estimate: a sin
  // counts as one.
  static const std::set<std::string> kFree = {"broadcast_to", "reshape", "cast",
                                              "constant"};
  int64_t ops = 0;
  for (const std::string &op : kernel.ops)
    ops += kFree.count(op) ? 0 : 1;
  int64_t elements = 0;
  for (const std::vector<int> *ids : {&kernel.inputs, &kernel.outputs})
    for (int id : *ids)
      elements = std::max(elements, numElements(program.buffers[id].shape));
  return ops * elements;
}

std::string matmulShape(const MatmulCall &call) {
  std::string shape = std::string(dtypeName(call.dtype)) + " " +
                      std::to_string(call.m) + "x" + std::to_string(call.n) +
                      "x" + std::to_string(call.k);
  if (call.batch != 1)
    shape += " batch " + std::to_string(call.batch);
  if (call.bias >= 0)
    shape += ", bias";
  if (call.epilogue != Epilogue::None)
    shape += std::string(", ") + epilogueName(call.epilogue);
  return shape;
}

void traceSteps(const Program &program, const std::vector<double> &startMicros,
                const std::vector<double> &stepMicros) {
  if (!trace::enabled() || startMicros.size() != program.steps.size())
    return;
  trace::nameDeviceTrack(program.target == Target::Cuda
                             ? cuda::device().name + " (stream)"
                             : "cpu (host kernels)");
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step &step = program.steps[i];
    trace::Args args = {
        {"step", static_cast<double>(i)},
        {"bytes", static_cast<double>(stepBytes(program, step))}};
    if (int64_t flops = stepFlops(program, step); flops >= 0)
      args.push_back({"flops", static_cast<double>(flops)});
    if (step.kind == StepKind::Kernel) {
      const KernelDesc &kernel = program.kernels[step.index];
      args.push_back({"schedule", kernel.schedule});
      trace::deviceSlice(kernel.name, "kernel", startMicros[i], stepMicros[i],
                         std::move(args));
    } else if (step.kind == StepKind::Matmul) {
      args.push_back({"call", matmulShape(program.matmuls[step.index])});
      trace::deviceSlice("matmul", "library", startMicros[i], stepMicros[i],
                         std::move(args));
    }
  }
}

Profile profileExecutable(Executable &executable,
                          const std::vector<Tensor> &inputs, int runs,
                          const DeviceLimits &limits) {
  const Program &program = executable.program();
  Profile profile;
  profile.model = program.name;
  profile.target = program.target;
  profile.runs = runs;
  profile.limits = limits;
  std::vector<Tensor> outputs;
  std::vector<double> stepMicros;
  trace::Scope scope("profile", "profile", {{"runs", double(runs)}});
  // Warm up: caches, page faults, OpenMP threads and GPU clocks. The trace
  // shows the warm-up as one slice, not thousands of runs.
  {
    trace::Scope warmUp("profile warm-up", "profile");
    trace::Pause pause;
    auto warmStart = std::chrono::steady_clock::now();
    for (int i = 0; i < 3 || std::chrono::steady_clock::now() - warmStart <
                                 std::chrono::milliseconds(20);
         ++i)
      executable.runTimed(inputs, outputs, stepMicros);
  }
  std::vector<std::vector<double>> samples(program.steps.size());
  for (int run = 0; run < runs; ++run) {
    executable.runTimed(inputs, outputs, stepMicros);
    for (size_t i = 0; i < stepMicros.size(); ++i)
      samples[i].push_back(stepMicros[i]);
  }
  // Whole runs, untraced: a traced run goes step by step (runTimed), and
  // these must time the real thing (on the GPU a CUDA graph replay).
  {
    trace::Scope wholeRuns("profile whole runs", "profile");
    trace::Pause pause;
    std::vector<double> whole;
    executable.run(inputs, outputs);
    for (int run = 0; run < runs; ++run) {
      auto start = std::chrono::steady_clock::now();
      executable.run(inputs, outputs);
      whole.push_back(std::chrono::duration<double, std::micro>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
    profile.runMicros = median(whole);
  }

  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step &step = program.steps[i];
    if (step.kind == StepKind::View)
      continue;
    StepProfile row;
    row.step = i;
    row.kind = step.kind;
    row.medianMicros = median(samples[i]);
    row.minMicros = *std::min_element(samples[i].begin(), samples[i].end());
    row.bytes = stepBytes(program, step);
    row.flops = stepFlops(program, step);
    if (step.kind == StepKind::Kernel) {
      const KernelDesc &kernel = program.kernels[step.index];
      row.name = kernel.name;
      row.ops = kernel.ops;
      row.schedule = kernel.schedule;
      row.dtype = kernel.outputs.empty()
                      ? DType::F32
                      : program.buffers[kernel.outputs.front()].dtype;
      // Attention multiplies on the tensor cores, as the library does.
      row.peakTflops = kernel.schedule == "attention"
                           ? limits.matmulTflops(row.dtype)
                           : limits.kernelTflops(row.dtype);
    } else {
      const MatmulCall &call = program.matmuls[step.index];
      row.name = "matmul";
      row.call = matmulShape(call);
      row.schedule = "library";
      row.dtype = call.dtype;
      row.peakTflops = limits.matmulTflops(row.dtype);
    }
    profile.steps.push_back(std::move(row));
  }
  return profile;
}

} // namespace fusec
