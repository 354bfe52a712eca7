//===- fusec-bench.cpp - Fused vs unfused vs the copy ceiling ------------===//
//
// Prints one JSON object per case: the fused model's time and effective
// bandwidth (bytes of every input read once + every output written once,
// over time), the unfused baseline (one kernel per op, same codegen) and a
// parallel memory copy measured in the same run as the ceiling.
//
//   fusec-bench [--reps=N] [--case=NAME]...
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "runtime/Compare.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <omp.h>

using namespace fusec;

namespace {

struct BenchCase {
  std::string name;
  std::function<Graph()> build;
};

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

constexpr int64_t k16M = 16 * 1024 * 1024;

std::vector<BenchCase> benchCases() {
  return {
      {"sin4_f32_16M",
       [] {
         GraphBuilder b("sin4");
         std::string v = b.input("x", DType::F32, {k16M});
         for (int i = 0; i < 4; ++i)
           v = b.op("sin", {v});
         b.output(v);
         return b.build();
       }},
      {"muladd_f32_16M",
       [] {
         GraphBuilder b("muladd");
         std::string x = b.input("x", DType::F32, {k16M});
         std::string y = b.input("y", DType::F32, {k16M});
         b.output(b.op("add", {b.op("mul", {x, y}), x}));
         return b.build();
       }},
      {"relu_f32_16M",
       [] {
         GraphBuilder b("relu");
         b.output(b.op("relu", {b.input("x", DType::F32, {k16M})}));
         return b.build();
       }},
      {"gelu_f32_16M",
       [] {
         GraphBuilder b("gelu");
         b.output(gelu(b, b.input("x", DType::F32, {k16M}), DType::F32));
         return b.build();
       }},
      {"bias_gelu_f32_4096x4096",
       [] {
         GraphBuilder b("bias_gelu");
         std::string x = b.input("x", DType::F32, {4096, 4096});
         std::string bias = b.input("bias", DType::F32, {4096});
         b.output(gelu(b, b.op("add", {x, bias}), DType::F32));
         return b.build();
       }},
  };
}

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

int64_t movedBytes(const Program &program) {
  int64_t bytes = 0;
  for (int id : program.inputs)
    bytes += program.buffers[id].byteSize();
  for (int id : program.outputs)
    bytes += program.buffers[id].byteSize();
  return bytes;
}

} // namespace

int main(int argc, char **argv) {
  int reps = 20;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--reps=", 0) == 0)
      reps = std::max(1, std::atoi(arg.c_str() + 7));
    else if (arg.rfind("--case=", 0) == 0)
      only.push_back(arg.substr(7));
    else {
      std::fprintf(stderr, "usage: fusec-bench [--reps=N] [--case=NAME]...\n");
      return 2;
    }
  }
  try {
    double ceiling = copyGBps(64ll << 20, reps);
    for (const BenchCase &bench : benchCases()) {
      if (!only.empty() &&
          std::find(only.begin(), only.end(), bench.name) == only.end())
        continue;
      Graph graph = bench.build();
      CompileOptions fusedOptions, unfusedOptions;
      unfusedOptions.fuse = false;
      CompiledModel fused = compile(graph, fusedOptions);
      CompiledModel unfused = compile(graph, unfusedOptions);
      std::mt19937_64 rng(0);
      std::vector<Tensor> inputs;
      for (int id : fused.program().inputs)
        inputs.push_back(randomTensor(fused.program().buffers[id].dtype,
                                      fused.program().buffers[id].shape, rng));
      std::vector<Tensor> fusedOut, unfusedOut;
      double fusedUs = medianMicros(reps, [&] { fused.run(inputs, fusedOut); });
      double unfusedUs =
          medianMicros(reps, [&] { unfused.run(inputs, unfusedOut); });
      bool agree = true;
      for (size_t i = 0; i < fusedOut.size(); ++i)
        agree &= compareTensors(fusedOut[i], unfusedOut[i]).ok();
      double gbps = movedBytes(fused.program()) / fusedUs / 1e3;
      std::printf("{\"case\": \"%s\", \"target\": \"cpu\", \"threads\": %d, "
                  "\"us\": %.1f, \"GBps\": %.2f, \"pct_of_copy\": %.1f, "
                  "\"unfused_us\": %.1f, \"speedup_vs_unfused\": %.2f, "
                  "\"copy_GBps\": %.2f, \"kernels\": %zu, "
                  "\"unfused_kernels\": %zu, \"outputs_agree\": %s}\n",
                  bench.name.c_str(), omp_get_max_threads(), fusedUs, gbps,
                  100.0 * gbps / ceiling, unfusedUs, unfusedUs / fusedUs,
                  ceiling, fused.kernels().size(), unfused.kernels().size(),
                  agree ? "true" : "false");
      std::fflush(stdout);
    }
  } catch (const Error &error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
