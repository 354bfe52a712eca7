//===- AttentionBench.cpp - Fused attention cases -------------------------===//

#include "AttentionBench.h"

#include "BenchTiming.h"

#include "runtime/core/Compare.h"
#include "runtime/cuda/CudaApi.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace fusec::bench {

namespace {

struct AttentionBench {
  std::string name;
  DType dtype;
  int64_t batch, heads, kvHeads, queries, keys, headDim;
  bool causal;
  /// Decode cases report the cache's bytes read per second.
  bool decode = false;

  double flops() const {
    double pairs = double(batch) * heads * queries * keys;
    return 4.0 * headDim * (causal && !decode ? pairs / 2 : pairs);
  }
  double cacheBytes() const {
    return 2.0 * batch * kvHeads * keys * headDim * dtypeBytes(dtype);
  }
};

std::vector<AttentionBench> attentionCases(Target target) {
  std::vector<AttentionBench> cases;
  if (target == Target::Cpu) {
    for (int64_t t : {512, 2048})
      for (bool causal : {false, true})
        cases.push_back({"attention_cpu_f32_d64_T" + std::to_string(t) +
                             (causal ? "_causal" : ""),
                         DType::F32, 1, 12, 12, t, t, 64, causal});
    return cases;
  }
  for (DType dtype : {DType::BF16, DType::F16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (int64_t t : {512, 1024, 2048, 4096, 8192, 16384})
          cases.push_back(
              {"attention_prefill_" + std::string(dtypeName(dtype)) + "_d" +
                   std::to_string(d) + "_T" + std::to_string(t) +
                   (causal ? "_causal" : ""),
               dtype, 16384 / t, 2048 / d, 2048 / d, t, t, d, causal});
  // f32 prefill has no tensor-core kernel: where the CUDA-core one stops
  // paying (fuse-form-attention's max-f32-query-rows on CUDA).
  for (int64_t t : {32, 64, 128, 256, 512, 1024})
    cases.push_back(
        {"attention_prefill_f32_d64_T" + std::to_string(t) + "_causal",
         DType::F32, std::max<int64_t>(1, 4096 / t), 12, 12, t, t, 64, true});
  for (int64_t kvHeads : {32, 8})
    for (int64_t batch : {1, 8})
      for (int64_t keys : {1024, 4096, 16384, 32768})
        cases.push_back(
            {"attention_decode_bf16_h32_kv" + std::to_string(kvHeads) + "_b" +
                 std::to_string(batch) + "_L" + std::to_string(keys),
             DType::BF16, batch, 32, kvHeads, 1, keys, 128, false,
             /*decode=*/true});
  return cases;
}

double scaleOf(const AttentionBench &bench) {
  return 1.0 / std::sqrt(static_cast<double>(bench.headDim));
}

/// The graph op `attention` on [B, H, T, D] inputs.
Graph fusedGraph(const AttentionBench &bench) {
  GraphBuilder b(bench.name);
  std::string q =
      b.input("q", bench.dtype,
              {bench.batch, bench.heads, bench.queries, bench.headDim});
  std::string k =
      b.input("k", bench.dtype,
              {bench.batch, bench.kvHeads, bench.keys, bench.headDim});
  std::string v =
      b.input("v", bench.dtype,
              {bench.batch, bench.kvHeads, bench.keys, bench.headDim});
  b.output(b.op("attention", {q, k, v},
                {{"num_heads", bench.heads},
                 {"kv_num_heads", bench.kvHeads},
                 {"head_dim", bench.headDim},
                 {"scale", scaleOf(bench)},
                 {"causal", int64_t(bench.causal)},
                 {"causal_offset", bench.keys - bench.queries}}));
  return b.build();
}

/// The same as models write it: matmul, scale, a constant causal mask,
/// softmax, matmul (compiled without attention formation: the baseline).
Graph chainGraph(const AttentionBench &bench) {
  GraphBuilder b(bench.name + "_chain");
  Shape shape = {bench.batch, bench.heads, bench.queries, bench.headDim};
  std::string q = b.input("q", bench.dtype, shape);
  std::string k = b.input("k", bench.dtype, shape);
  std::string v = b.input("v", bench.dtype, shape);
  std::string kT =
      b.op("transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  std::string scores = b.op(
      "mul", {b.op("matmul", {q, kT}), b.scalar(scaleOf(bench), bench.dtype)});
  if (bench.causal) {
    Tensor hidden(DType::I1, {bench.queries, bench.keys});
    for (int64_t i = 0; i < bench.queries; ++i)
      for (int64_t j = 0; j < bench.keys; ++j)
        hidden.set(i * bench.keys + j, j > i);
    scores =
        b.op("select",
             {b.constant("hidden", hidden),
              b.scalar(-std::numeric_limits<double>::infinity(), bench.dtype),
              scores});
  }
  b.output(b.op("matmul", {b.op("softmax", {scores}), v}));
  return b.build();
}

/// Median time of one run of `model` on `inputs` (device time on CUDA);
/// leaves its outputs in `outputs`.
double timeModel(CompiledModel &model, Target target,
                 const std::vector<Tensor> &inputs,
                 std::vector<Tensor> &outputs, int reps) {
  if (target == Target::Cpu)
    return medianMicros(reps, [&] { model.run(inputs, outputs); });
  auto &gpu = dynamic_cast<CudaExecutable &>(executableOf(model));
  gpu.upload(inputs);
  double us = medianGpuMicros(reps, [&] { gpu.launch(); });
  gpu.download(outputs);
  gpu.synchronize();
  return us;
}

} // namespace

bool isAttentionCase(const std::string &name) {
  return name.rfind("attention_", 0) == 0;
}

/// Whether `name` is among `only`, where "PREFIX*" names every case that
/// starts with PREFIX.
static bool selected(const std::string &name,
                     const std::vector<std::string> &only) {
  if (only.empty())
    return true;
  return std::any_of(only.begin(), only.end(), [&](const std::string &want) {
    if (!want.empty() && want.back() == '*')
      return name.rfind(want.substr(0, want.size() - 1), 0) == 0;
    return name == want;
  });
}

void runAttention(Target target, const std::vector<std::string> &only,
                  int reps) {
  std::optional<double> copyCeiling;
  for (const AttentionBench &bench : attentionCases(target)) {
    if (!selected(bench.name, only))
      continue;
    CompileOptions options;
    options.target = target;
    CompiledModel fused = compile(fusedGraph(bench), options);
    // The schedule's decisions, as `fusec --emit=schedule` prints them.
    std::string schedule =
        lowerGraph(fusedGraph(bench), options, /*captureIR=*/true).schedules;
    schedule = schedule.substr(0, schedule.find('\n'));
    std::vector<Tensor> inputs = randomInputs(fused.program());
    std::vector<Tensor> fusedOut, chainOut;
    double us = timeModel(fused, target, inputs, fusedOut, reps);
    const char *targetText = targetName(target);
    std::printf("{\"case\": \"%s\", \"target\": \"%s\", \"us\": %.1f, "
                "\"schedule\": \"%s\"",
                bench.name.c_str(), targetText, us, schedule.c_str());
    if (bench.decode) {
      if (!copyCeiling)
        copyCeiling = cudaCopyGBps(int64_t(1) << 30, reps);
      double gbps = bench.cacheBytes() / us / 1e3;
      std::printf(", \"cache_GBps\": %.0f, \"copy_GBps\": %.0f, "
                  "\"pct_of_copy\": %.1f",
                  gbps, *copyCeiling, 100.0 * gbps / *copyCeiling);
    } else {
      std::printf(", \"TFLOPs\": %.3f", bench.flops() / us / 1e6);
    }
    // Where the wgmma kernel runs (sm_90a), the same case compiled for the
    // plain arch (sm_90: mma.sync) on the same inputs, for comparison.
    if (schedule.find("kernel=wgmma") != std::string::npos) {
      CompileOptions portable = options;
      portable.gpuArch = cuda::plainArch(resolveGpuArch(options));
      CompiledModel mma = compile(fusedGraph(bench), portable);
      std::vector<Tensor> mmaOut;
      double mmaUs = timeModel(mma, target, inputs, mmaOut, reps);
      std::printf(", \"sm90_mma_sync_us\": %.1f, \"sm90_mma_sync_TFLOPs\": "
                  "%.3f",
                  mmaUs, bench.flops() / mmaUs / 1e6);
    }
    // The unfused chain writes Tq x Tk scores twice: up to 4k.
    if (!bench.decode && bench.queries <= 4096) {
      CompileOptions chainOptions = options;
      chainOptions.attention = false;
      CompiledModel chain = compile(chainGraph(bench), chainOptions);
      double chainUs = timeModel(chain, target, inputs, chainOut, reps);
      // bf16 and f16 probabilities round once in the fused kernel and at
      // every op of the chain: a few roundings of the dtype apart.
      Tolerance tolerance = toleranceFor(bench.dtype);
      tolerance.atol = std::max(tolerance.atol, 4 * tolerance.rtol);
      tolerance.rtol *= 4;
      bool agree = compareTensors(fusedOut[0], chainOut[0], tolerance).ok();
      std::printf(", \"unfused_us\": %.1f, \"unfused_TFLOPs\": %.3f, "
                  "\"speedup\": %.2f, \"outputs_agree\": %s",
                  chainUs, bench.flops() / chainUs / 1e6, chainUs / us,
                  agree ? "true" : "false");
    }
    std::printf("}\n");
    std::fflush(stdout);
  }
}

} // namespace fusec::bench
