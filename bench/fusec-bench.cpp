//===- fusec-bench.cpp - Fused vs unfused vs the copy ceiling ------------===//
//
// Prints one JSON object per case: the fused model's time and effective
// bandwidth (bytes of every input read once + every output written once,
// over time), the unfused baseline (one kernel per op, same codegen) and a
// parallel memory copy measured in the same run as the ceiling.
//
//   fusec-bench [--reps=N] [--case=NAME]...
//   fusec-bench --package=MODEL...   (compile vs. load of a package)
//
//===----------------------------------------------------------------------===//

#include "AttentionBench.h"
#include "BenchTiming.h"

#include "compiler/Driver.h"
#include "runtime/SymbolicExecutable.h"
#include "runtime/core/Compare.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaApi.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <omp.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

using namespace fusec;
using namespace fusec::bench;

namespace {

struct BenchCase {
  std::string name;
  std::function<Graph()> build;
};

using Attrs = std::map<std::string, AttrValue>;

std::string gelu(GraphBuilder &b, const std::string &x, DType dtype) {
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
  std::string cube = b.op("mul", {b.op("mul", {x, x}), x});
  std::string inner =
      b.op("add", {x, b.op("mul", {b.scalar(0.044715, dtype), cube})});
  std::string t =
      b.op("tanh", {b.op("mul", {b.scalar(0.7978845608028654, dtype), inner})});
  return b.op("mul", {b.op("mul", {b.scalar(0.5, dtype), x}),
                      b.op("add", {b.scalar(1.0, dtype), t})});
}

Graph sin4(Shape shape) {
  GraphBuilder b("sin4");
  std::string v = b.input("x", DType::F32, shape);
  for (int i = 0; i < 4; ++i)
    v = b.op("sin", {v});
  b.output(v);
  return b.build();
}

Graph muladd(Shape shape) {
  GraphBuilder b("muladd");
  std::string x = b.input("x", DType::F32, shape);
  std::string y = b.input("y", DType::F32, shape);
  b.output(b.op("add", {b.op("mul", {x, y}), x}));
  return b.build();
}

Graph relu(Shape shape) {
  GraphBuilder b("relu");
  b.output(b.op("relu", {b.input("x", DType::F32, shape)}));
  return b.build();
}

Graph geluGraph(Shape shape, DType dtype) {
  GraphBuilder b("gelu");
  b.output(gelu(b, b.input("x", dtype, shape), dtype));
  return b.build();
}

Graph biasGelu(int64_t rows, int64_t columns) {
  GraphBuilder b("bias_gelu");
  std::string x = b.input("x", DType::F32, {rows, columns});
  std::string bias = b.input("bias", DType::F32, {columns});
  b.output(gelu(b, b.op("add", {x, bias}), DType::F32));
  return b.build();
}

Graph softmaxGraph(int64_t rows, int64_t columns, DType dtype) {
  GraphBuilder b("softmax");
  b.output(b.op("softmax", {b.input("x", dtype, {rows, columns})}));
  return b.build();
}

Graph layerNormGraph(int64_t rows, int64_t columns, DType dtype) {
  GraphBuilder b("layernorm");
  std::string x = b.input("x", dtype, {rows, columns});
  std::string w = b.input("w", dtype, {columns});
  std::string bias = b.input("b", dtype, {columns});
  b.output(b.op("layer_norm", {x, w, bias}, {{"epsilon", 1e-5}}));
  return b.build();
}

/// x + r, then layer_norm with weight and bias; both the normalized tensor
/// and the sum (the residual stream) are outputs.
Graph addLayerNormGraph(int64_t rows, int64_t columns, DType dtype) {
  GraphBuilder b("add_layernorm");
  std::string x = b.input("x", dtype, {rows, columns});
  std::string r = b.input("r", dtype, {rows, columns});
  std::string w = b.input("w", dtype, {columns});
  std::string bias = b.input("b", dtype, {columns});
  std::string sum = b.op("add", {x, r});
  b.output(b.op("layer_norm", {sum, w, bias}, {{"epsilon", 1e-5}}));
  b.output(sum);
  return b.build();
}

Graph rmsNormGraph(int64_t rows, int64_t columns, DType dtype) {
  GraphBuilder b("rmsnorm");
  std::string x = b.input("x", dtype, {rows, columns});
  std::string w = b.input("w", dtype, {columns});
  b.output(b.op("rms_norm", {x, w}, {{"epsilon", 1e-6}}));
  return b.build();
}

/// Column sums: reduce_sum over axis 0.
Graph columnSumGraph(int64_t rows, int64_t columns, DType dtype) {
  GraphBuilder b("reduce_sum_axis0");
  b.output(b.op("reduce_sum", {b.input("x", dtype, {rows, columns})},
                {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(0)}}));
  return b.build();
}

/// The normalization and reduction cases at rows x columns, named as in
/// ../shared/BENCHMARKS.md (softmax_f32_16384x4096, ...).
std::vector<BenchCase> reductionCases(int64_t rows, int64_t columns) {
  std::string shape = std::to_string(rows) + "x" + std::to_string(columns);
  return {{"softmax_f32_" + shape,
           [=] { return softmaxGraph(rows, columns, DType::F32); }},
          {"softmax_bf16_" + shape,
           [=] { return softmaxGraph(rows, columns, DType::BF16); }},
          {"layernorm_f32_" + shape,
           [=] { return layerNormGraph(rows, columns, DType::F32); }},
          {"add_layernorm_bf16_" + shape,
           [=] { return addLayerNormGraph(rows, columns, DType::BF16); }},
          {"rmsnorm_bf16_" + shape,
           [=] { return rmsNormGraph(rows, columns, DType::BF16); }},
          {"reduce_sum_axis0_f32_" + shape,
           [=] { return columnSumGraph(rows, columns, DType::F32); }}};
}

/// A DAG of `nodes` graph nodes: blocks of pointwise ops around a row
/// reduction, a softmax or a layer_norm, each block adding a skip
/// connection from three blocks back.
Graph regionFormationGraph(size_t nodes) {
  GraphBuilder b("region_formation");
  std::string x = b.input("x", DType::F32, {64, 256});
  std::string y = b.input("y", DType::F32, {64, 256});
  std::string w = b.input("w", DType::F32, {256});
  std::vector<std::string> blocks = {x};
  std::string v = x;
  const Attrs rowKeep = {{"axes", std::vector<int64_t>{-1}},
                         {"keepdims", int64_t(1)}};
  for (size_t block = 0; b.graph().nodes.size() + 5 <= nodes; ++block) {
    v = b.op("mul", {v, y});
    switch (block % 4) {
    case 0:
      v = b.op("sub", {v, b.op("reduce_max", {v}, rowKeep)});
      break;
    case 1:
      v = b.op("softmax", {b.op("tanh", {v})});
      break;
    case 2:
      v = b.op("layer_norm", {b.op("exp", {v}), w});
      break;
    default:
      v = b.op("div", {v, b.op("reduce_sum", {b.op("abs", {v})}, rowKeep)});
      break;
    }
    v = b.op("add", {v, blocks[blocks.size() >= 3 ? blocks.size() - 3 : 0]});
    blocks.push_back(v);
  }
  while (b.graph().nodes.size() < nodes)
    v = b.op("neg", {v});
  b.output(v);
  return b.build();
}

constexpr int64_t k16M = 16 * 1024 * 1024, k64M = 64 * 1024 * 1024;

/// The CPU cases (16M elements: a 2-core machine's scale).
std::vector<BenchCase> cpuCases() {
  std::vector<BenchCase> cases = {
      {"sin4_f32_16M", [] { return sin4({k16M}); }},
      {"muladd_f32_16M", [] { return muladd({k16M}); }},
      {"relu_f32_16M", [] { return relu({k16M}); }},
      {"gelu_f32_16M", [] { return geluGraph({k16M}, DType::F32); }},
      {"bias_gelu_f32_4096x4096", [] { return biasGelu(4096, 4096); }}};
  for (BenchCase &bench : reductionCases(4096, 4096))
    cases.push_back(std::move(bench));
  return cases;
}

/// The GPU cases, named as in ../shared/BENCHMARKS.md.
std::vector<BenchCase> cudaCases() {
  std::vector<BenchCase> cases = {
      {"sin4_f32_64M", [] { return sin4({k64M}); }},
      {"muladd_f32_64M", [] { return muladd({k64M}); }},
      {"relu_f32_64M", [] { return relu({k64M}); }},
      {"gelu_f32_64M", [] { return geluGraph({k64M}, DType::F32); }},
      {"gelu_bf16_64M", [] { return geluGraph({k64M}, DType::BF16); }},
      {"bias_gelu_f32_16384x4096", [] { return biasGelu(16384, 4096); }},
      {"sin4_f32_2x3",
       [] {
         return sin4({2, 3});
       }},
      {"gelu_f32_4096", [] { return geluGraph({4096}, DType::F32); }},
      // Rows too long for registers (a vocabulary's logits): online softmax
      // reads each row twice, not three times.
      {"softmax_f32_512x131072",
       [] { return softmaxGraph(512, 131072, DType::F32); }}};
  for (BenchCase &bench : reductionCases(16384, 4096))
    cases.push_back(std::move(bench));
  return cases;
}

double hostMicros(const std::function<void()> &body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// Medians of one and the same kernel differ run to run by up to about 1%
/// (reduce_sum_axis0, a single op: fused 68.51 us, "unfused" 68.32 us on an
/// H200): a fused case is slower than unfused past this margin, not within.
constexpr double kTimingNoise = 0.02;

/// Per run on device copies of `inputs`, writing device buffers shaped
/// like `outputs`: the median of CompiledModel::runOnDevice (each run
/// waits for its results), and the median over batches of 100 runs queued
/// back to back by enqueueOnDevice with one synchronize (a stream of runs).
struct DeviceResidentTimes {
  double runUs, queuedUs;
};
DeviceResidentTimes deviceResidentMicros(CompiledModel &model,
                                         const std::vector<Tensor> &inputs,
                                         const std::vector<Tensor> &outputs,
                                         int reps) {
  const cuda::Driver &driver = cuda::driver();
  std::vector<cuda::CUdeviceptr> buffers;
  auto deviceCopy = [&](const Tensor &tensor, bool upload) {
    cuda::CUdeviceptr address = 0;
    cuda::check(
        driver.cuMemAlloc(&address, std::max<size_t>(tensor.bytes.size(), 1)),
        "cuMemAlloc", "device-resident benchmark");
    if (upload && !tensor.bytes.empty())
      cuda::check(driver.cuMemcpyHtoDAsync(address, tensor.data(),
                                           tensor.bytes.size(),
                                           cuda::device().stream),
                  "cuMemcpyHtoDAsync", "device-resident benchmark");
    buffers.push_back(address);
    return DeviceTensor{tensor.dtype, tensor.shape, address};
  };
  std::vector<DeviceTensor> in, out;
  for (const Tensor &input : inputs)
    in.push_back(deviceCopy(input, true));
  for (const Tensor &output : outputs)
    out.push_back(deviceCopy(output, false));
  DeviceResidentTimes times;
  times.runUs = medianMicros(reps, [&] { model.runOnDevice(in, out); });
  constexpr int kQueued = 100;
  times.queuedUs = medianMicros(std::max(reps / 10, 5),
                                [&] {
                                  for (int i = 0; i < kQueued; ++i)
                                    model.enqueueOnDevice(in, out);
                                  model.synchronize();
                                }) /
                   kQueued;
  for (cuda::CUdeviceptr address : buffers)
    driver.cuMemFree(address);
  return times;
}

void printCase(const std::string &name, const char *target, double us,
               double gbps, double ceiling, double unfusedUs, size_t kernels,
               size_t unfusedKernels, bool agree, const std::string &extra) {
  const bool slower = us > unfusedUs * (1 + kTimingNoise);
  std::printf("{\"case\": \"%s\", \"target\": \"%s\", \"us\": %.2f, "
              "\"GBps\": %.1f, \"pct_of_copy\": %.1f, \"unfused_us\": %.2f, "
              "\"speedup_vs_unfused\": %.2f, \"copy_GBps\": %.1f, "
              "\"kernels\": %zu, \"unfused_kernels\": %zu, "
              "\"outputs_agree\": %s, \"slower_than_unfused\": %s%s}\n",
              name.c_str(), target, us, gbps, 100.0 * gbps / ceiling, unfusedUs,
              unfusedUs / us, ceiling, kernels, unfusedKernels,
              agree ? "true" : "false", slower ? "true" : "false",
              extra.c_str());
  std::fflush(stdout);
  // A fused kernel must never lose to its unfused chain: say so loudly.
  if (slower)
    std::fprintf(stderr,
                 "fusec-bench: warning: %s on %s: fused (%.2f us) is slower "
                 "than unfused (%.2f us)\n",
                 name.c_str(), target, us, unfusedUs);
}

void runCpu(const std::vector<BenchCase> &cases, int reps) {
  double ceiling = copyGBps(64ll << 20, reps);
  for (const BenchCase &bench : cases) {
    Graph graph = bench.build();
    CompileOptions fusedOptions, unfusedOptions;
    fusedOptions.target = unfusedOptions.target = Target::Cpu;
    unfusedOptions.fuse = false;
    CompiledModel fused = compile(graph, fusedOptions);
    CompiledModel unfused = compile(graph, unfusedOptions);
    std::vector<Tensor> inputs = randomInputs(fused.program());
    std::vector<Tensor> fusedOut, unfusedOut;
    double fusedUs = medianMicros(reps, [&] { fused.run(inputs, fusedOut); });
    double unfusedUs =
        medianMicros(reps, [&] { unfused.run(inputs, unfusedOut); });
    double gbps = movedBytes(fused.program()) / fusedUs / 1e3;
    printCase(bench.name, "cpu", fusedUs, gbps, ceiling, unfusedUs,
              fused.kernels().size(), unfused.kernels().size(),
              outputsAgree(fusedOut, unfusedOut),
              ", \"threads\": " + std::to_string(omp_get_max_threads()));
  }
}

void runCuda(const std::vector<BenchCase> &cases, int reps, bool fastMath) {
  cuda::device(); // initializes the driver and makes the context current
  double ceiling = cudaCopyGBps(k64M * 4, reps);
  std::printf("{\"device\": \"%s\", \"arch\": \"%s\", \"sms\": %d, "
              "\"nvrtc\": \"%s\"}\n",
              cuda::device().name.c_str(), cuda::device().arch().c_str(),
              cuda::device().multiprocessors, cuda::nvrtcVersion().c_str());
  for (const BenchCase &bench : cases) {
    for (bool fast : {false, true}) {
      if (fast && !(fastMath && bench.name == "sin4_f32_64M"))
        continue;
      Graph graph = bench.build();
      CompileOptions fusedOptions, unfusedOptions;
      fusedOptions.target = unfusedOptions.target = Target::Cuda;
      fusedOptions.fastMath = unfusedOptions.fastMath = fast;
      unfusedOptions.fuse = false;
      CompiledModel fused = compile(graph, fusedOptions);
      CompiledModel unfused = compile(graph, unfusedOptions);
      auto &fusedGpu = dynamic_cast<CudaExecutable &>(executableOf(fused));
      auto &unfusedGpu = dynamic_cast<CudaExecutable &>(executableOf(unfused));
      std::vector<Tensor> inputs = randomInputs(fused.program());
      fusedGpu.upload(inputs);
      unfusedGpu.upload(inputs);
      double fusedUs = medianGpuMicros(reps, [&] { fusedGpu.launch(); });
      double unfusedUs = medianGpuMicros(reps, [&] { unfusedGpu.launch(); });
      std::vector<Tensor> fusedOut, unfusedOut;
      fusedGpu.download(fusedOut);
      unfusedGpu.download(unfusedOut);
      fusedGpu.synchronize();
      unfusedGpu.synchronize();
      double gbps = movedBytes(fused.program()) / fusedUs / 1e3;
      std::string extra;
      if (fused.program().buffers[fused.program().inputs[0]].byteSize() <
          (1 << 20)) {
        // Tiny graphs: what a caller pays per CompiledModel::run from the
        // host (copies in, launch, copies out, synchronize).
        std::vector<Tensor> outputs;
        double hostUs = medianMicros(std::max(reps, 200),
                                     [&] { fused.run(inputs, outputs); });
        // The same without the captured CUDA graph: each copy and step
        // launched on its own.
        CompileOptions stepwise = fusedOptions;
        stepwise.cudaGraph = false;
        CompiledModel stepwiseModel = compile(graph, stepwise);
        double stepwiseUs = medianMicros(
            std::max(reps, 200), [&] { stepwiseModel.run(inputs, outputs); });
        // And with the inputs and outputs copied (no zero-copy I/O).
        CompileOptions copying = fusedOptions;
        copying.zeroCopyMaxBytes = 0;
        CompiledModel copyingModel = compile(graph, copying);
        double copyingUs = medianMicros(
            std::max(reps, 200), [&] { copyingModel.run(inputs, outputs); });
        // And on tensors already in device memory (runOnDevice).
        DeviceResidentTimes device =
            deviceResidentMicros(fused, inputs, outputs, std::max(reps, 200));
        char text[256];
        std::snprintf(text, sizeof text,
                      ", \"host_run_us\": %.1f, \"host_run_us_no_graph\": %.1f"
                      ", \"host_run_us_copied_io\": %.1f"
                      ", \"device_resident_run_us\": %.1f"
                      ", \"device_resident_queued_run_us\": %.1f",
                      hostUs, stepwiseUs, copyingUs, device.runUs,
                      device.queuedUs);
        extra = text;
      }
      printCase(bench.name + (fast ? "_fastmath" : ""), "cuda", fusedUs, gbps,
                ceiling, unfusedUs, fused.kernels().size(),
                unfused.kernels().size(), outputsAgree(fusedOut, unfusedOut),
                extra);
    }
  }

  // Compile times. Cold: one fused kernel (sin4) through NVRTC into a new,
  // empty cache directory, three times (median and max). Warm: sin4 +
  // muladd from the disk cache in a fresh cache object, as a new process
  // would see it.
  auto freshCacheDir = [] {
    char pattern[] = "/tmp/fusec-bench-cache-XXXXXX";
    if (!mkdtemp(pattern))
      throw Error("fusec-bench: cannot create a temp cache directory");
    return std::string(pattern);
  };
  CompileOptions options;
  options.target = Target::Cuda;
  Program sin4Program = lowerGraph(sin4({1 << 20}), options).program;
  std::vector<double> coldMs;
  std::vector<std::string> dirs;
  for (int i = 0; i < 3; ++i) {
    dirs.push_back(freshCacheDir());
    coldMs.push_back(hostMicros([&] {
                       auto cache = std::make_shared<KernelCache>(dirs.back());
                       CudaExecutable executable(sin4Program, cache, {});
                     }) /
                     1e3);
  }
  std::sort(coldMs.begin(), coldMs.end());

  GraphBuilder b("sin4_muladd");
  std::string x = b.input("x", DType::F32, {1 << 20});
  std::string y = b.input("y", DType::F32, {1 << 20});
  std::string s = x;
  for (int i = 0; i < 4; ++i)
    s = b.op("sin", {s});
  b.output(s);
  b.output(b.op("add", {b.op("mul", {x, y}), x}));
  Graph graph = b.build();
  dirs.push_back(freshCacheDir());
  options.cacheDir = dirs.back();
  Program program;
  double lowerUs =
      hostMicros([&] { program = lowerGraph(graph, options).program; });
  {
    auto cache = std::make_shared<KernelCache>(options.cacheDir);
    CudaExecutable populate(program, cache, {});
  }
  double warmUs = hostMicros([&] {
    Program again = lowerGraph(graph, options).program;
    auto cache = std::make_shared<KernelCache>(options.cacheDir);
    CudaExecutable executable(std::move(again), cache, {});
  });
  std::printf("{\"case\": \"compile\", \"cold_one_kernel_ms_median\": %.1f, "
              "\"cold_one_kernel_ms_max\": %.1f, "
              "\"sin4_muladd_lower_ms\": %.2f, "
              "\"sin4_muladd_warm_start_from_disk_ms\": %.2f}\n",
              coldMs[1], coldMs[2], lowerUs / 1e3, warmUs / 1e3);
  for (const std::string &dir : dirs)
    std::system(("rm -rf '" + dir + "'").c_str());
}

/// The graph with every input whose dim 0 is `rows` given a symbolic dim 0,
/// `rows` from 1 to `rows`.
Graph withSymbolicRows(Graph graph, int64_t rows) {
  graph.symbols.push_back({"rows", 1, rows});
  for (GraphInput &input : graph.inputs)
    if (input.shape.size() >= 2 && input.shape[0] == rows) {
      input.dimNames.assign(input.shape.size(), "");
      input.dimNames[0] = "rows";
      input.shape[0] = -1;
    }
  return graph;
}

/// The graph with every input whose last dim is `length` given a symbolic
/// last dim, `length` from 1 to `length`: rows whose length varies.
Graph withSymbolicLength(Graph graph, int64_t length) {
  graph.symbols.push_back({"length", 1, length});
  for (GraphInput &input : graph.inputs)
    if (input.shape.size() >= 2 && input.shape.back() == length) {
      input.dimNames.assign(input.shape.size(), "");
      input.dimNames.back() = "length";
      input.shape.back() = -1;
    }
  return graph;
}

/// Dynamic shapes (--symbolic): each memory-bound case compiled once with
/// its rows symbolic (1..16384) against its static compile for each size,
/// in one run: device time per launch, % of the copy ceiling, and whether
/// the outputs agree. The symbolic model's kernels compile once; each size
/// runs its own instance (buffers, CUDA graph) of them.
/// A BERT-base-sized encoder block, bf16, on [batch, 128, 768]: q, k and v
/// projections, 12 heads of 64 (reshapes and transposes), attention, the
/// output projection, a residual and a layer norm, then the MLP (gelu).
Graph encoderBlock(int64_t batch) {
  std::mt19937_64 rng(11);
  const DType dtype = DType::BF16;
  GraphBuilder b("encoder_block");
  std::string x = b.input("x", dtype, {batch, 128, 768});
  auto weight = [&](int64_t rows, int64_t columns) {
    return b.constant("w" + std::to_string(b.graph().constants.size()),
                      randomTensor(dtype, {rows, columns}, rng, -0.03, 0.03));
  };
  auto heads = [&](const std::string &value, std::vector<int64_t> perm) {
    std::string split = b.op("reshape", {value},
                             {{"shape", std::vector<int64_t>{0, 128, 12, 64}}});
    return b.op("transpose", {split}, {{"perm", perm}});
  };
  std::string q = heads(b.op("matmul", {x, weight(768, 768)}), {0, 2, 1, 3});
  std::string k = heads(b.op("matmul", {x, weight(768, 768)}), {0, 2, 3, 1});
  std::string v = heads(b.op("matmul", {x, weight(768, 768)}), {0, 2, 1, 3});
  std::string scores =
      b.op("mul", {b.op("matmul", {q, k}), b.scalar(0.125, dtype)});
  std::string o = b.op("matmul", {b.op("softmax", {scores}), v});
  std::string merged = b.op(
      "reshape",
      {b.op("transpose", {o}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})},
      {{"shape", std::vector<int64_t>{0, 128, 768}}});
  std::string h =
      b.op("layer_norm",
           {b.op("add", {x, b.op("matmul", {merged, weight(768, 768)})})});
  std::string up = b.op("gelu", {b.op("matmul", {h, weight(768, 3072)})});
  b.output(b.op("layer_norm",
                {b.op("add", {h, b.op("matmul", {up, weight(3072, 768)})})}));
  return b.build();
}

/// Device (CUDA) or host time per run of a static compile and of the
/// symbolic model's `instance` at the same size, interleaved so that
/// clocks and neighbours affect both alike; their outputs, for comparison.
std::pair<double, double>
timeStaticAndSymbolic(CompiledModel &fixed, CompiledModel &symbolic,
                      Executable &instance, const std::vector<Tensor> &inputs,
                      int reps, std::vector<Tensor> &fixedOut,
                      std::vector<Tensor> &symbolicOut) {
  if (fixed.program().target != Target::Cuda) {
    double fixedUs = medianMicros(reps, [&] { fixed.run(inputs, fixedOut); });
    double symbolicUs =
        medianMicros(reps, [&] { symbolic.run(inputs, symbolicOut); });
    return {fixedUs, symbolicUs};
  }
  auto &fixedGpu = dynamic_cast<CudaExecutable &>(executableOf(fixed));
  auto &symbolicGpu = dynamic_cast<CudaExecutable &>(instance);
  fixedGpu.upload(inputs);
  symbolicGpu.upload(inputs);
  double fixedUs = medianGpuMicros(reps, [&] { fixedGpu.launch(); });
  double symbolicUs = medianGpuMicros(reps, [&] { symbolicGpu.launch(); });
  fixedUs =
      std::min(fixedUs, medianGpuMicros(reps, [&] { fixedGpu.launch(); }));
  symbolicUs = std::min(symbolicUs,
                        medianGpuMicros(reps, [&] { symbolicGpu.launch(); }));
  fixedGpu.download(fixedOut);
  symbolicGpu.download(symbolicOut);
  fixedGpu.synchronize();
  symbolicGpu.synchronize();
  return {fixedUs, symbolicUs};
}

/// A GPT-2-small-sized prefill: x[1, T, 768] through 12 pre-norm blocks
/// (one qkv projection read by a causal attention through its columns, the
/// output projection, the gelu MLP, residuals) and the final layer norm.
/// `seq` 0: T symbolic (1..1024); else T fixed at `seq`. The weights are
/// drawn from one seed, so the two forms compute the same function.
Graph gpt2Prefill(DType dtype, int64_t seq) {
  constexpr int64_t width = 768, layers = 12, maxSeq = 1024;
  std::mt19937_64 rng(17);
  GraphBuilder b("gpt2_prefill");
  std::string x;
  if (seq == 0) {
    b.symbol("seq", 1, maxSeq);
    x = b.input("x", dtype, {1, -1, width}, {"", "seq", ""});
  } else {
    x = b.input("x", dtype, {1, seq, width});
  }
  auto tensor = [&](Shape shape, double low, double high) {
    return b.constant("w" + std::to_string(b.graph().constants.size()),
                      randomTensor(dtype, shape, rng, low, high));
  };
  auto linear = [&](const std::string &in, int64_t from, int64_t to) {
    std::string y = b.op("matmul", {in, tensor({from, to}, -0.03, 0.03)});
    return b.op("add", {y, tensor({to}, -0.02, 0.02)});
  };
  auto norm = [&](const std::string &in) {
    return b.op("layer_norm",
                {in, tensor({width}, 0.8, 1.2), tensor({width}, -0.1, 0.1)});
  };
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::string qkv = linear(norm(x), width, 3 * width);
    std::string attended = b.op("attention", {qkv, qkv, qkv},
                                {{"num_heads", int64_t(12)},
                                 {"head_dim", int64_t(64)},
                                 {"scale", 0.125},
                                 {"causal", int64_t(1)},
                                 {"query_column", int64_t(0)},
                                 {"key_column", width},
                                 {"value_column", 2 * width}});
    x = b.op("add", {x, linear(attended, width, width)});
    std::string up = b.op("gelu", {linear(norm(x), width, 4 * width)},
                          {{"approximate", std::string("tanh")}});
    x = b.op("add", {x, linear(up, 4 * width, width)});
  }
  b.output(norm(x));
  return b.build();
}

/// --symbolic, case gpt2_prefill_{f32,bf16}: the prefill compiled once for
/// T = 1..1024, against a static compile for each T: compile times, device
/// time per run, and whether the outputs agree.
void runSymbolicSequence(Target target, int reps, DType dtype) {
  CompileOptions options;
  options.target = target;
  auto timed = [](auto &&make) {
    auto start = std::chrono::steady_clock::now();
    auto value = make();
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    return std::make_pair(std::move(value), ms);
  };
  Graph symbolicGraph = gpt2Prefill(dtype, 0);
  auto [symbolic, symbolicCompileMs] =
      timed([&] { return compile(symbolicGraph, options); });
  auto &instances = dynamic_cast<SymbolicExecutable &>(executableOf(symbolic));
  const std::string name = std::string("gpt2_prefill_") + dtypeName(dtype);
  for (int64_t seq : {1024, 512, 128, 33, 1}) {
    Graph fixedGraph = gpt2Prefill(dtype, seq); // (drawing weights: untimed)
    auto [fixed, staticCompileMs] =
        timed([&] { return compile(fixedGraph, options); });
    std::vector<Tensor> inputs = randomInputs(fixed.program());
    Executable &instance = instances.instanceFor({seq});
    std::vector<Tensor> fixedOut, symbolicOut;
    auto [fixedUs, symbolicUs] = timeStaticAndSymbolic(
        fixed, symbolic, instance, inputs, reps, fixedOut, symbolicOut);
    std::printf("{\"case\": \"symbolic_%s\", \"target\": \"%s\", "
                "\"seq\": %lld, \"seq_range\": \"1..1024\", "
                "\"static_us\": %.1f, \"symbolic_us\": %.1f, "
                "\"symbolic_over_static\": %.3f, "
                "\"symbolic_compile_ms\": %.0f, "
                "\"static_compile_ms\": %.0f, \"outputs_agree\": %s}\n",
                name.c_str(), targetName(target), (long long)seq, fixedUs,
                symbolicUs, symbolicUs / fixedUs, symbolicCompileMs,
                staticCompileMs,
                outputsAgree(symbolicOut, fixedOut) ? "true" : "false");
    std::fflush(stdout);
  }
}

void runSymbolic(Target target, int reps,
                 const std::vector<std::string> &only) {
  constexpr int64_t columns = 4096, maxRows = 16384;
  struct SymbolicCase {
    BenchCase bench;
    /// The symbolic dim's maximum, and the sizes run.
    int64_t maxRows;
    std::vector<int64_t> sizes;
    /// The rows' length is symbolic (the last dim), not their count.
    bool length = false;
  };
  std::vector<int64_t> rowSizes = {maxRows, 4096, 1000};
  std::vector<SymbolicCase> cases;
  for (BenchCase &bench : std::vector<BenchCase>{
           {"sin4_f32",
            [] {
              return sin4({maxRows, columns});
            }},
           {"bias_gelu_f32", [] { return biasGelu(maxRows, columns); }},
           {"softmax_f32",
            [] { return softmaxGraph(maxRows, columns, DType::F32); }},
           {"softmax_bf16",
            [] { return softmaxGraph(maxRows, columns, DType::BF16); }},
           {"layernorm_f32",
            [] { return layerNormGraph(maxRows, columns, DType::F32); }},
           {"layernorm_bf16",
            [] { return layerNormGraph(maxRows, columns, DType::BF16); }}})
    cases.push_back({std::move(bench), maxRows, rowSizes});
  cases.push_back({{"encoder_block_bf16", [] { return encoderBlock(16); }},
                   16,
                   {16, 4, 1}});
  // Softmax over 4096 rows whose length is symbolic (an attention's scores
  // left unfused): scheduled for the longest row, guarded per step.
  for (DType dtype : {DType::F32, DType::BF16})
    cases.push_back({{std::string("softmax_length_") + dtypeName(dtype),
                      [dtype] { return softmaxGraph(4096, maxRows, dtype); }},
                     maxRows,
                     rowSizes,
                     /*length=*/true});
  bool cuda = target == Target::Cuda;
  for (DType dtype : {DType::F32, DType::BF16}) {
    std::string name = std::string("gpt2_prefill_") + dtypeName(dtype);
    if (std::find(only.begin(), only.end(), name) != only.end())
      runSymbolicSequence(target, reps, dtype);
  }
  bool sequenceOnly =
      !only.empty() &&
      std::all_of(only.begin(), only.end(), [](const std::string &name) {
        return name.rfind("gpt2_prefill_", 0) == 0;
      });
  if (sequenceOnly)
    return;
  double ceiling = cuda ? (cuda::device(), cudaCopyGBps(k64M * 4, reps))
                        : copyGBps(64ll << 20, reps);
  for (const SymbolicCase &symbolicCase : cases) {
    const BenchCase &bench = symbolicCase.bench;
    const int64_t maxRows = symbolicCase.maxRows;
    if (!only.empty() &&
        std::find(only.begin(), only.end(), bench.name) == only.end())
      continue;
    Graph graph = bench.build();
    CompileOptions options;
    options.target = target;
    auto compileStart = std::chrono::steady_clock::now();
    CompiledModel symbolic =
        compile(symbolicCase.length ? withSymbolicLength(graph, maxRows)
                                    : withSymbolicRows(graph, maxRows),
                options);
    double symbolicCompileMs =
        std::chrono::duration<double, std::milli>(
            std::chrono::steady_clock::now() - compileStart)
            .count();
    auto &instances =
        dynamic_cast<SymbolicExecutable &>(executableOf(symbolic));
    for (int64_t rows : symbolicCase.sizes) {
      Graph sized = graph;
      for (GraphInput &input : sized.inputs) {
        if (input.shape.size() < 2)
          continue;
        int64_t &dim =
            symbolicCase.length ? input.shape.back() : input.shape[0];
        if (dim == maxRows)
          dim = rows;
      }
      CompiledModel fixed = compile(sized, options);
      std::vector<Tensor> inputs = randomInputs(fixed.program());
      Executable &instance = instances.instanceFor({rows});
      std::vector<Tensor> fixedOut, symbolicOut;
      auto [fixedUs, symbolicUs] = timeStaticAndSymbolic(
          fixed, symbolic, instance, inputs, reps, fixedOut, symbolicOut);
      double gbps = movedBytes(fixed.program()) / symbolicUs / 1e3;
      std::printf(
          "{\"case\": \"symbolic_%s_%s\", \"target\": \"%s\", "
          "\"static_us\": %.2f, \"symbolic_us\": %.2f, "
          "\"symbolic_over_static\": %.3f, \"symbolic_pct_of_copy\": %.1f, "
          "\"copy_GBps\": %.1f, \"%s_range\": \"1..%lld\", "
          "\"symbolic_compile_ms\": %.0f, \"outputs_agree\": %s}\n",
          bench.name.c_str(),
          formatShape(fixed.program().buffers[fixed.program().inputs[0]].shape)
              .c_str(),
          targetName(target), fixedUs, symbolicUs, symbolicUs / fixedUs,
          100.0 * gbps / ceiling, ceiling,
          symbolicCase.length ? "length" : "rows", (long long)maxRows,
          symbolicCompileMs,
          outputsAgree(symbolicOut, fixedOut) ? "true" : "false");
      std::fflush(stdout);
    }
  }
}

/// A matmul case: [m, k] @ [k, n], optionally + bias then gelu.
struct MatmulBench {
  std::string name;
  int64_t m, n, k;
  DType dtype;
  /// "" (bare), "tanh" or "none": + bias, then gelu with that approximation.
  std::string gelu;
};

Graph matmulGraph(const MatmulBench &bench, bool withEpilogue) {
  GraphBuilder b(bench.name);
  std::string x = b.input("x", bench.dtype, {bench.m, bench.k});
  std::string w = b.input("w", bench.dtype, {bench.k, bench.n});
  std::string y = b.op("matmul", {x, w});
  if (withEpilogue && !bench.gelu.empty()) {
    std::string bias = b.input("bias", bench.dtype, {bench.n});
    y = b.op("gelu", {b.op("add", {y, bias})}, {{"approximate", bench.gelu}});
  }
  b.output(y);
  return b.build();
}

std::vector<MatmulBench> matmulCases(Target target) {
  if (target == Target::Cpu)
    return {{"matmul_f32_2048x2048x2048", 2048, 2048, 2048, DType::F32, ""},
            {"matmul_bias_gelu_f32_2048x2048x2048", 2048, 2048, 2048,
             DType::F32, "tanh"}};
  return {{"matmul_f32_4096x4096x4096", 4096, 4096, 4096, DType::F32, ""},
          {"matmul_bf16_8192x4096x4096", 8192, 4096, 4096, DType::BF16, ""},
          {"matmul_bias_gelu_bf16_8192x4096x4096", 8192, 4096, 4096,
           DType::BF16, "tanh"},
          {"matmul_bias_gelu_erf_bf16_8192x4096x4096", 8192, 4096, 4096,
           DType::BF16, "none"}};
}

/// Matmuls in TFLOP/s: the case fused (epilogue folded or one kernel
/// after the call), unfused (bias and gelu as separate kernels) and the
/// bare matmul of the same shapes, all in this run.
void runMatmuls(Target target, const std::vector<std::string> &only, int reps) {
  for (const MatmulBench &bench : matmulCases(target)) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), bench.name) == only.end())
      continue;
    CompileOptions fusedOptions, unfusedOptions;
    fusedOptions.target = unfusedOptions.target = target;
    unfusedOptions.fuse = false;
    CompiledModel fused = compile(matmulGraph(bench, true), fusedOptions);
    CompiledModel unfused = compile(matmulGraph(bench, true), unfusedOptions);
    CompiledModel bare = compile(matmulGraph(bench, false), fusedOptions);
    std::vector<Tensor> inputs = randomInputs(fused.program());
    std::vector<Tensor> bareInputs(inputs.begin(), inputs.begin() + 2);
    std::vector<Tensor> fusedOut, unfusedOut;
    auto timeOf = [&](CompiledModel &model, const std::vector<Tensor> &in,
                      std::vector<Tensor> &out) {
      if (target == Target::Cpu)
        return medianMicros(reps, [&] { model.run(in, out); });
      auto &gpu = dynamic_cast<CudaExecutable &>(executableOf(model));
      gpu.upload(in);
      double us = medianGpuMicros(reps, [&] { gpu.launch(); });
      gpu.download(out);
      gpu.synchronize();
      return us;
    };
    std::vector<Tensor> bareOut;
    double fusedUs = timeOf(fused, inputs, fusedOut);
    double unfusedUs = timeOf(unfused, inputs, unfusedOut);
    double bareUs = timeOf(bare, bareInputs, bareOut);
    double flops = 2.0 * bench.m * bench.n * bench.k;
    // A bf16 epilogue rounds once where the unfused chain rounds at every
    // op: compare with bf16's tolerance scaled by a few roundings.
    Tolerance tolerance = toleranceFor(bench.dtype);
    tolerance.atol *= 4;
    tolerance.rtol *= 4;
    bool agree = compareTensors(fusedOut[0], unfusedOut[0], tolerance).ok();
    std::printf(
        "{\"case\": \"%s\", \"target\": \"%s\", \"us\": %.1f, "
        "\"TFLOPs\": %.3f, \"bare_matmul_us\": %.1f, "
        "\"bare_matmul_TFLOPs\": %.3f, \"pct_of_bare_matmul\": %.1f, "
        "\"unfused_us\": %.1f, \"unfused_TFLOPs\": %.3f, "
        "\"library_calls\": %zu, \"kernels\": %zu, \"unfused_kernels\": %zu, "
        "\"outputs_agree\": %s}\n",
        bench.name.c_str(), targetName(target), fusedUs, flops / fusedUs / 1e6,
        bareUs, flops / bareUs / 1e6, 100.0 * bareUs / fusedUs, unfusedUs,
        flops / unfusedUs / 1e6, fused.program().matmuls.size(),
        fused.kernels().size(), unfused.kernels().size(),
        agree ? "true" : "false");
    std::fflush(stdout);
  }
}

/// y = x @ w^T for one row: int8 weights with a per-channel scale (the
/// quantized GEMV kernel) or bf16 weights (the library call). The weights
/// are constants, as a model's initializers are (the same values in every
/// copy).
Graph gemvGraph(int64_t k, int64_t n, bool int8Weights) {
  GraphBuilder b(int8Weights ? "gemv_int8w" : "gemv_bf16");
  std::mt19937_64 rng(1);
  std::string x = b.input("x", DType::BF16, {1, k});
  std::string w;
  if (int8Weights) {
    std::string scale =
        b.constant("scale", randomTensor(DType::BF16, {n}, rng, 1e-3, 2e-2));
    w = b.op("dequantize_linear",
             {b.constant("w", randomTensor(DType::I8, {n, k}, rng, -127, 127)),
              scale},
             {{"axis", int64_t(0)}});
  } else {
    w = b.constant("w", randomTensor(DType::BF16, {n, k}, rng));
  }
  std::string wt =
      b.op("transpose", {w}, {{"perm", std::vector<int64_t>{1, 0}}});
  b.output(b.op("matmul", {x, wt}));
  return b.build();
}

/// Launches per sample of the streamed timings: a stream of GEMVs back to
/// back, as a decode step runs its layers, each from DRAM (the launches
/// rotate among cold copies), against the device's copy rate streamed the
/// same way (256 MB copies back to back: the ceiling, as elsewhere, is a
/// large copy's; a 45 MB GEMV also pays its ramp and drain).
constexpr int kStreamedBatch = 20;

/// Copies of a unit of models (one GEMV, or a layer's GEMVs in order),
/// enough of the whole unit for every launch to read its weights from DRAM
/// (coldCopiesFor), each with its random inputs uploaded; `launches` runs
/// every model of every copy in turn.
struct ColdCopies {
  std::vector<CompiledModel> models;
  std::vector<std::function<void()>> launches;
  int64_t unitBytes = 0; ///< moved by one run of the unit
};
ColdCopies coldCopiesOf(const std::vector<const Graph *> &unit,
                        const CompileOptions &options) {
  ColdCopies cold;
  for (const Graph *graph : unit) {
    cold.models.push_back(compile(*graph, options));
    cold.unitBytes += movedBytes(cold.models.back().program());
  }
  for (int c = coldCopiesFor(cold.unitBytes) - 1; c > 0; --c)
    for (const Graph *graph : unit)
      cold.models.push_back(compile(*graph, options));
  // Each executable lives on the heap: the references outlive moves of
  // `models`.
  for (CompiledModel &model : cold.models) {
    auto &executable = dynamic_cast<CudaExecutable &>(executableOf(model));
    executable.upload(randomInputs(model.program()));
    cold.launches.push_back([&executable] { executable.launch(); });
  }
  return cold;
}

/// A Llama-7B decoder layer's GEMVs as a decode step runs them, back to
/// back and each from DRAM: the attention's q, k, v and o (4096 x 4096),
/// the MLP's gate and up (4096 x 11008) and down (11008 x 4096), rotating
/// among cold copies of the layer; GB/s of the layer's bytes against the
/// copy streamed the same way, and (int8) with the kernels' overlap off.
void runGemvLayers(const std::vector<std::string> &only, int reps,
                   double streamedCeiling) {
  const std::pair<int64_t, int64_t> layer[] = {
      {4096, 4096},  {4096, 4096},  {4096, 4096}, {4096, 4096},
      {4096, 11008}, {4096, 11008}, {11008, 4096}};
  for (bool int8Weights : {true, false}) {
    std::string name = int8Weights ? "gemv_layer_int8w_bf16_llama7b"
                                   : "gemv_layer_bf16_llama7b";
    if (!only.empty() &&
        std::find(only.begin(), only.end(), name) == only.end())
      continue;
    std::map<std::pair<int64_t, int64_t>, Graph> graphs;
    std::vector<const Graph *> unit;
    for (auto shape : layer) {
      if (!graphs.count(shape))
        graphs.emplace(shape,
                       gemvGraph(shape.first, shape.second, int8Weights));
      unit.push_back(&graphs.at(shape));
    }
    auto timeLayer = [&](bool overlap, int64_t &bytes) {
      CompileOptions options;
      options.target = Target::Cuda;
      options.zeroCopyMaxBytes = 0;
      options.kernelOverlap = overlap;
      ColdCopies cold = coldCopiesOf(unit, options);
      bytes = cold.unitBytes;
      int batch = static_cast<int>(cold.launches.size()) * 2;
      return medianQueuedGpuMicros(reps, cold.launches, batch) *
             static_cast<double>(unit.size());
    };
    int64_t bytes = 0;
    double us = timeLayer(true, bytes);
    double gbps = bytes / us / 1e3;
    std::printf("{\"case\": \"%s\", \"target\": \"cuda\", "
                "\"streamed_cold_us\": %.2f, \"streamed_cold_GBps\": %.1f, "
                "\"streamed_cold_pct_of_copy\": %.1f, "
                "\"streamed_copy_GBps\": %.1f, ",
                name.c_str(), us, gbps, 100.0 * gbps / streamedCeiling,
                streamedCeiling);
    if (int8Weights)
      std::printf("\"streamed_cold_no_overlap_us\": %.2f, ",
                  timeLayer(false, bytes));
    std::printf("\"bytes\": %lld, \"gemvs\": %zu}\n",
                static_cast<long long>(bytes), std::size(layer));
    std::fflush(stdout);
  }
}

/// The GEMVs of a decode step in GB/s (bytes of every input, constant and
/// output once) next to the copy ceiling: int8 weights vs bf16 weights, for a
/// Llama-7B layer's shapes (k x n): the MLP's up and gate projections
/// (4096 x 11008, the case), its down projection (11008 x 4096)
/// and the attention's projections (4096 x 4096).
void runGemvs(Target target, const std::vector<std::string> &only, int reps) {
  if (target == Target::Cuda)
    cuda::device(); // the context the copy ceiling's allocations need
  double ceiling = target == Target::Cuda ? cudaCopyGBps(k64M * 4, reps)
                                          : copyGBps(64ll << 20, reps);
  double queuedCeiling =
      target == Target::Cuda ? cudaCopyGBps(k64M * 4, reps, 1) : 0;
  double streamedCeiling =
      target == Target::Cuda ? cudaCopyGBps(k64M * 4, reps, kStreamedBatch) : 0;
  const std::pair<int64_t, int64_t> shapes[] = {
      {4096, 11008}, {11008, 4096}, {4096, 4096}};
  for (auto [k, n] : shapes)
    for (bool int8Weights : {true, false}) {
      const std::string shape =
          "1x" + std::to_string(k) + "x" + std::to_string(n);
      std::string name =
          (int8Weights ? "gemv_int8w_bf16_" : "gemv_bf16_") + shape;
      if (!only.empty() &&
          std::find(only.begin(), only.end(), name) == only.end())
        continue;
      CompileOptions options;
      options.target = target;
      // x lives in device memory, as a decode step's activations do.
      options.zeroCopyMaxBytes = 0;
      const Graph graph = gemvGraph(k, n, int8Weights);
      CompiledModel model = compile(graph, options);
      std::vector<Tensor> inputs = randomInputs(model.program());
      std::vector<Tensor> outputs;
      int64_t bytes = movedBytes(model.program());
      double us, coldUs = 0, streamedUs = 0, serialStreamedUs = 0;
      if (target == Target::Cpu) {
        us = medianMicros(reps, [&] { model.run(inputs, outputs); });
      } else {
        auto &gpu = dynamic_cast<CudaExecutable &>(executableOf(model));
        gpu.upload(inputs);
        us = medianGpuMicros(reps, [&] { gpu.launch(); });
        // From DRAM with the launch queued: copies of the model (the
        // kernels are compiled once, the buffers are each copy's own).
        // The int8 GEMV's streamed timing also runs with the overlap of
        // its launches off.
        {
          ColdCopies cold = coldCopiesOf({&graph}, options);
          coldUs = medianQueuedGpuMicros(reps, cold.launches);
          streamedUs =
              medianQueuedGpuMicros(reps, cold.launches, kStreamedBatch);
        }
        if (int8Weights) {
          CompileOptions serial = options;
          serial.kernelOverlap = false;
          serialStreamedUs = medianQueuedGpuMicros(
              reps, coldCopiesOf({&graph}, serial).launches, kStreamedBatch);
        }
      }
      double gbps = bytes / us / 1e3;
      std::printf(
          "{\"case\": \"%s\", \"target\": \"%s\", \"us\": %.2f, "
          "\"GBps\": %.1f, \"pct_of_copy\": %.1f, \"copy_GBps\": %.1f, ",
          name.c_str(), targetName(target), us, gbps, 100.0 * gbps / ceiling,
          ceiling);
      if (target == Target::Cuda) {
        double coldGbps = bytes / coldUs / 1e3;
        std::printf("\"queued_cold_us\": %.2f, \"queued_cold_GBps\": %.1f, "
                    "\"queued_cold_pct_of_copy\": %.1f, "
                    "\"queued_copy_GBps\": %.1f, ",
                    coldUs, coldGbps, 100.0 * coldGbps / queuedCeiling,
                    queuedCeiling);
        double streamedGbps = bytes / streamedUs / 1e3;
        std::printf("\"streamed_cold_us\": %.2f, \"streamed_cold_GBps\": "
                    "%.1f, \"streamed_cold_pct_of_copy\": %.1f, "
                    "\"streamed_copy_GBps\": %.1f, ",
                    streamedUs, streamedGbps,
                    100.0 * streamedGbps / streamedCeiling, streamedCeiling);
        if (int8Weights)
          std::printf("\"streamed_cold_no_overlap_us\": %.2f, ",
                      serialStreamedUs);
      }
      std::printf(
          "\"bytes\": %lld, \"kernels\": %zu, \"library_calls\": %zu}\n",
          static_cast<long long>(bytes), model.kernels().size(),
          model.program().matmuls.size());
      std::fflush(stdout);
    }
  if (target == Target::Cuda)
    runGemvLayers(only, reps, streamedCeiling);
}

/// Region formation on a 10,000-node graph: the whole lowering (import,
/// decomposition, canonicalization, fusion-region formation, codegen of the
/// kernels' source; no compiler runs), fused and, for scale, unfused.
void regionFormation(Target target) {
  const size_t nodes = 10000;
  Graph graph = regionFormationGraph(nodes);
  CompileOptions fusedOptions, unfusedOptions;
  fusedOptions.target = unfusedOptions.target = target;
  unfusedOptions.fuse = false;
  size_t kernels = 0, unfusedKernels = 0;
  std::vector<double> fusedMs, unfusedMs, formationMs;
  for (int i = 0; i < 3; ++i) {
    fusedMs.push_back(hostMicros([&] {
                        Lowering lowering = lowerGraph(graph, fusedOptions);
                        kernels = lowering.program.kernels.size();
                        for (const auto &[pass, ms] : lowering.passMillis)
                          if (pass == "fuse-form-fusion-regions")
                            formationMs.push_back(ms);
                      }) /
                      1e3);
    unfusedMs.push_back(
        hostMicros([&] {
          unfusedKernels =
              lowerGraph(graph, unfusedOptions).program.kernels.size();
        }) /
        1e3);
  }
  std::sort(fusedMs.begin(), fusedMs.end());
  std::sort(unfusedMs.begin(), unfusedMs.end());
  std::sort(formationMs.begin(), formationMs.end());
  double formation = formationMs.empty() ? -1 : formationMs[1];
  std::printf("{\"case\": \"region_formation_10000_ops\", \"target\": \"%s\", "
              "\"nodes\": %zu, \"form_regions_ms\": %.1f, \"lower_ms\": %.1f, "
              "\"unfused_lower_ms\": %.1f, \"kernels\": %zu, "
              "\"unfused_kernels\": %zu}\n",
              targetName(target), graph.nodes.size(), formation, fusedMs[1],
              unfusedMs[1], kernels, unfusedKernels);
  std::fflush(stdout);
}

/// A whole model (a .onnx or .json file): per-run latency of
/// CompiledModel::run on host tensors with the CUDA graph, without it, and
/// unfused; the device time of its steps; the cold compile time.
void runModel(const std::string &path, Target target, int reps,
              std::optional<DType> precision) {
  auto freshCache = [] {
    char pattern[] = "/tmp/fusec-bench-model-XXXXXX";
    if (!mkdtemp(pattern))
      throw Error("fusec-bench: cannot create a temp cache directory");
    return std::string(pattern);
  };
  CompileOptions options;
  options.target = target;
  options.precision = precision;
  options.cacheDir = freshCache();
  auto compileStart = std::chrono::steady_clock::now();
  CompiledModel fused = compileFile(path, options);
  double compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - compileStart)
                         .count();
  CompileOptions stepwiseOptions = options, unfusedOptions = options,
                 chainOptions = options;
  stepwiseOptions.cudaGraph = false;
  unfusedOptions.fuse = false;
  unfusedOptions.cudaGraph = false;
  chainOptions.attention = false;
  CompiledModel stepwise = compileFile(path, stepwiseOptions);
  CompiledModel unfused = compileFile(path, unfusedOptions);
  CompiledModel chain = compileFile(path, chainOptions);
  std::vector<Tensor> inputs = randomInputs(fused.program());
  std::vector<Tensor> outputs;
  double runUs = medianMicros(reps, [&] { fused.run(inputs, outputs); });
  double stepwiseUs =
      medianMicros(reps, [&] { stepwise.run(inputs, outputs); });
  double unfusedUs = medianMicros(reps, [&] { unfused.run(inputs, outputs); });
  // Device time of the fused model, and of it with attention left as its
  // matmul / softmax / matmul chain (the baseline of the fused kernel).
  double deviceUs = -1, chainDeviceUs = -1;
  if (target == Target::Cuda) {
    for (auto [model, us] :
         {std::pair(&fused, &deviceUs), std::pair(&chain, &chainDeviceUs)}) {
      auto &gpu = dynamic_cast<CudaExecutable &>(executableOf(*model));
      gpu.upload(inputs);
      *us = medianGpuMicros(reps, [&] { gpu.launch(); });
      gpu.synchronize();
    }
  }
  std::string name = path.substr(path.find_last_of('/') + 1);
  std::printf(
      "{\"case\": \"model:%s\", \"target\": \"%s\", "
      "\"precision\": \"%s\", \"run_us\": %.1f, \"run_us_no_graph\": %.1f, "
      "\"unfused_run_us\": %.1f, \"device_us\": %.1f, "
      "\"device_us_attention_unfused\": %.1f, "
      "\"kernels\": %zu, \"library_calls\": %zu, "
      "\"unfused_kernels\": %zu, \"cold_compile_ms\": %.0f}\n",
      name.c_str(), targetName(target),
      precision ? dtypeName(*precision) : "as exported", runUs, stepwiseUs,
      unfusedUs, deviceUs, chainDeviceUs, fused.kernels().size(),
      fused.program().matmuls.size(), unfused.kernels().size(), compileMs);
  std::fflush(stdout);
  std::system(("rm -rf '" + options.cacheDir + "'").c_str());
}

/// --package=MODEL: the model compiled (kernel cache cold, then warm),
/// saved as a package and loaded back `reps` times with the runtime alone
/// (fusec::load: no MLIR, NVRTC or host compiler), against issue #33's
/// target of 100 ms plus the time to read the weights.
void runPackage(const std::string &path, Target target, int reps) {
  char pattern[] = "/tmp/fusec-bench-package-XXXXXX";
  if (!mkdtemp(pattern))
    throw Error("fusec-bench: cannot create a temp directory");
  std::string dir = pattern;
  CompileOptions options;
  options.target = target;
  options.cacheDir = dir + "/cache";
  auto millis = [](auto body) {
    auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  std::optional<CompiledModel> compiled;
  double coldCompileMs = millis([&] { compiled = compileFile(path, options); });
  double warmCompileMs = millis([&] { compiled = compileFile(path, options); });
  std::string package = dir + "/model.fusec";
  double saveMs = millis([&] { compiled->save(package); });
  std::vector<double> loadMs;
  std::optional<CompiledModel> loaded;
  for (int i = 0; i < reps; ++i)
    loadMs.push_back(millis([&] { loaded = load(package); }));
  std::sort(loadMs.begin(), loadMs.end());
  std::vector<Tensor> inputs = randomInputs(compiled->program());
  std::vector<Tensor> expected = compiled->run(inputs), actual;
  double firstRunMs = millis([&] { actual = loaded->run(inputs); });
  bool identical = actual.size() == expected.size();
  for (size_t i = 0; identical && i < actual.size(); ++i)
    identical = actual[i].bytes == expected[i].bytes;
  int64_t weightBytes = 0;
  for (const BufferDesc &buffer : compiled->program().buffers)
    if (buffer.role == BufferRole::Constant)
      weightBytes += buffer.byteSize();
  struct stat info;
  stat(package.c_str(), &info);
  std::string name = path.substr(path.find_last_of('/') + 1);
  std::printf("{\"case\": \"package:%s\", \"target\": \"%s\", "
              "\"cold_compile_ms\": %.1f, \"warm_compile_ms\": %.1f, "
              "\"save_ms\": %.1f, \"load_ms\": %.2f, \"load_ms_min\": %.2f, "
              "\"first_run_ms\": %.2f, \"package_bytes\": %lld, "
              "\"weight_bytes\": %lld, \"outputs_identical\": %s}\n",
              name.c_str(), targetName(target), coldCompileMs, warmCompileMs,
              saveMs, loadMs[loadMs.size() / 2], loadMs.front(), firstRunMs,
              static_cast<long long>(info.st_size),
              static_cast<long long>(weightBytes),
              identical ? "true" : "false");
  std::fflush(stdout);
  std::system(("rm -rf '" + dir + "'").c_str());
}

} // namespace

int main(int argc, char **argv) {
  int reps = 0;
  std::string target = "cpu";
  bool fastMath = true;
  std::vector<std::string> only, models, packages;
  std::optional<DType> precision;
  bool symbolic = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--reps=", 0) == 0)
      reps = std::max(1, std::atoi(arg.c_str() + 7));
    else if (arg.rfind("--model=", 0) == 0)
      models.push_back(arg.substr(8));
    else if (arg.rfind("--package=", 0) == 0)
      packages.push_back(arg.substr(10));
    else if (arg.rfind("--case=", 0) == 0)
      only.push_back(arg.substr(7));
    else if (arg == "--symbolic")
      symbolic = true;
    else if (arg == "--target=cpu" || arg == "--target=cuda")
      target = arg.substr(9);
    else if (arg == "--precision=bf16" || arg == "--precision=f16")
      precision = arg == "--precision=bf16" ? DType::BF16 : DType::F16;
    else {
      std::fprintf(stderr,
                   "usage: fusec-bench [--target=cpu|cuda] [--reps=N] "
                   "[--case=NAME]... [--model=FILE]... [--package=FILE]... "
                   "[--precision=bf16|f16] [--symbolic]\n");
      return 2;
    }
  }
  if (target == "cuda")
    // Cold compiles are cold: the CUDA driver's compute cache
    // (~/.nv/ComputeCache), which NVRTC also consults, would otherwise
    // answer every compile after a process's first (llama_d256 on an H200
    // host: 815 ms without it, 40 ms from it).
    setenv("CUDA_CACHE_DISABLE", "1", /*overwrite=*/1);
  if (symbolic) {
    try {
      runSymbolic(target == "cuda" ? Target::Cuda : Target::Cpu,
                  reps ? reps : 20, only);
    } catch (const Error &error) {
      std::fprintf(stderr, "%s\n", error.what());
      return 1;
    }
    return 0;
  }
  if (!packages.empty()) {
    try {
      for (const std::string &model : packages)
        runPackage(model, target == "cuda" ? Target::Cuda : Target::Cpu,
                   reps ? reps : 20);
    } catch (const Error &error) {
      std::fprintf(stderr, "%s\n", error.what());
      return 1;
    }
    return 0;
  }
  if (!models.empty()) {
    // Whole models only.
    try {
      if (target == "cuda") {
        // The peers' compile times are taken with CUDA and cuBLAS already
        // initialized (by their eager runs): so are fusec's. Loading NVRTC
        // stays in the first model's.
        auto start = std::chrono::steady_clock::now();
        cuda::device();
        auto deviceReady = std::chrono::steady_clock::now();
        cuda::prepareCublasLt();
        auto ms = [](auto from, auto to) {
          return std::chrono::duration<double, std::milli>(to - from).count();
        };
        std::printf("{\"case\": \"cuda_init\", \"device_ms\": %.0f, "
                    "\"cublaslt_ms\": %.0f}\n",
                    ms(start, deviceReady),
                    ms(deviceReady, std::chrono::steady_clock::now()));
      }
      for (const std::string &model : models)
        runModel(model, target == "cuda" ? Target::Cuda : Target::Cpu,
                 reps ? reps : 100, precision);
    } catch (const Error &error) {
      std::fprintf(stderr, "%s\n", error.what());
      return 1;
    }
    return 0;
  }
  std::vector<BenchCase> cases = target == "cuda" ? cudaCases() : cpuCases();
  if (!only.empty())
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [&](const BenchCase &bench) {
                                 return std::find(only.begin(), only.end(),
                                                  bench.name) == only.end();
                               }),
                cases.end());
  bool timeRegionFormation =
      only.empty() || std::find(only.begin(), only.end(),
                                "region_formation_10000_ops") != only.end();
  try {
    if (!cases.empty() && target == "cuda")
      runCuda(cases, reps ? reps : 50, fastMath);
    else if (!cases.empty())
      runCpu(cases, reps ? reps : 10);
    Target benchTarget = target == "cuda" ? Target::Cuda : Target::Cpu;
    bool timeMatmuls = only.empty();
    for (const MatmulBench &bench : matmulCases(benchTarget))
      timeMatmuls |=
          std::find(only.begin(), only.end(), bench.name) != only.end();
    if (timeMatmuls)
      runMatmuls(benchTarget, only, reps ? reps : (target == "cuda" ? 20 : 5));
    bool timeAttention = only.empty();
    for (const std::string &name : only)
      timeAttention |= isAttentionCase(name);
    if (timeAttention)
      runAttention(benchTarget, only,
                   reps ? reps : (target == "cuda" ? 20 : 5));
    bool timeGemvs = only.empty();
    for (const std::string &name : only)
      timeGemvs |= name.rfind("gemv_", 0) == 0;
    if (timeGemvs)
      runGemvs(benchTarget, only, reps ? reps : (target == "cuda" ? 100 : 10));
    if (timeRegionFormation)
      regionFormation(target == "cuda" ? Target::Cuda : Target::Cpu);
  } catch (const Error &error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
