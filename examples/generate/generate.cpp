//===- generate.cpp - Greedy text generation with a KV cache ---*- C++ -*-===//
//
// Runs the decoder step export_decoder.py writes, token by token, through
// fusec's C++ API:
//
//   fusec-generate DIR [--tokens N] [--target cpu|cuda] [--check-only]
//
// DIR holds decoder.onnx, prompt.npy, tokens.npy and logits.npy. The step is
// compiled twice, before the first token: with `seq` at the prompt's length
// (prefill) and at 1 (decode). Nothing compiles after that.
//
// 1. Check: the prompt, then PyTorch's own greedy tokens one by one (so a
//    near tie cannot make the two runs diverge); every step's last-position
//    logits against PyTorch's (relative L2 error), exit status 1 past 1e-4.
// 2. Generate: the prompt, then N greedy tokens. On the GPU every tensor
//    stays in device memory: a step's next_id and next_len outputs are the
//    next step's ids and past_len inputs (two sets of buffers, used in
//    turn), and a decode step's present caches are its past caches,
//    updated in place (the compiler marks the outputs that may do so, see
//    docs/dynamic-shapes.md). The host only queues steps; it reads the
//    tokens once, at the end.
//
// Prints the tokens and one JSON line with the timings.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "runtime/core/Compare.h"
#include "runtime/core/Npy.h"
#include "runtime/cuda/CudaApi.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace fusec;

namespace {

double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// The decoder's inputs and outputs by position, as export_decoder.py
/// writes them: ids, past_len, then per layer past key and value; next_id,
/// next_len, logits, then per layer present key and value.
struct StepLayout {
  size_t caches = 0; ///< key and value caches, 2 per layer
  Shape cacheShape;

  explicit StepLayout(const Program &program) {
    auto name = [&](const std::vector<int> &ids, size_t i) {
      return program.buffers[ids[i]].name;
    };
    if (program.inputs.size() < 4 || name(program.inputs, 0) != "ids" ||
        name(program.inputs, 1) != "past_len" ||
        program.outputs.size() != program.inputs.size() + 1 ||
        name(program.outputs, 0) != "next_id" ||
        name(program.outputs, 1) != "next_len" ||
        name(program.outputs, 2) != "logits")
      throw Error("fusec-generate: the model is not export_decoder.py's "
                  "decoder step (inputs ids, past_len, caches; outputs "
                  "next_id, next_len, logits, caches)");
    caches = program.inputs.size() - 2;
    cacheShape = program.buffers[program.inputs[2]].shape;
  }
};

Tensor scalarI64(Shape shape, int64_t value) {
  Tensor t(DType::I64, std::move(shape));
  t.as<int64_t>()[0] = value;
  return t;
}

/// Step 1: the prompt, then the reference tokens; returns the largest
/// relative L2 error of the logits.
double checkAgainstReference(CompiledModel &prefill, CompiledModel &decode,
                             const StepLayout &layout, const Tensor &prompt,
                             const Tensor &tokens, const Tensor &logits) {
  std::vector<Tensor> inputs = {prompt, scalarI64({1}, 0)};
  for (size_t i = 0; i < layout.caches; ++i)
    inputs.push_back(Tensor(DType::F32, layout.cacheShape)); // zeros
  std::vector<Tensor> outputs;
  const int64_t vocab = logits.shape[1];
  double worst = 0;
  int agree = 0;
  for (int64_t step = 0; step <= tokens.numElements(); ++step) {
    (step == 0 ? prefill : decode).run(inputs, outputs);
    Tensor expected(DType::F32, {1, vocab});
    std::copy_n(logits.as<float>() + step * vocab, vocab, expected.as<float>());
    double error = relativeL2Error(outputs[2], expected);
    worst = std::max(worst, error);
    if (step < tokens.numElements()) {
      agree += outputs[0].as<int64_t>()[0] == tokens.as<int64_t>()[step];
      inputs[0] = scalarI64({1, 1}, tokens.as<int64_t>()[step]);
    }
    inputs[1] = outputs[1];
    for (size_t i = 0; i < layout.caches; ++i)
      std::swap(inputs[2 + i], outputs[3 + i]);
    std::cout << "step " << step << ": logits' relative L2 error vs PyTorch "
              << error << "\n";
  }
  std::cout << "greedy tokens equal to PyTorch's: " << agree << " of "
            << tokens.numElements() << "\n";
  return worst;
}

struct Generated {
  std::vector<int64_t> tokens;
  double prefillMillis = 0, decodeMillis = 0;
};

/// Step 2 on the CPU: host tensors, the caches passed from present to past.
Generated generateOnHost(CompiledModel &prefill, CompiledModel &decode,
                         const StepLayout &layout, const Tensor &prompt,
                         int64_t count) {
  std::vector<Tensor> inputs = {prompt, scalarI64({1}, 0)};
  for (size_t i = 0; i < layout.caches; ++i)
    inputs.push_back(Tensor(DType::F32, layout.cacheShape));
  std::vector<Tensor> outputs;
  Generated result;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < count; ++step) {
    if (step == 1) {
      result.prefillMillis = millisSince(start);
      start = std::chrono::steady_clock::now();
    }
    (step == 0 ? prefill : decode).run(inputs, outputs);
    result.tokens.push_back(outputs[0].as<int64_t>()[0]);
    std::swap(inputs[0], outputs[0]);
    std::swap(inputs[1], outputs[1]);
    for (size_t i = 0; i < layout.caches; ++i)
      std::swap(inputs[2 + i], outputs[3 + i]);
  }
  (count == 1 ? result.prefillMillis : result.decodeMillis) =
      millisSince(start);
  return result;
}

/// Device memory, freed at scope exit.
struct DeviceBuffer {
  DeviceBuffer(DType dtype, Shape shape) : dtype(dtype), shape(shape) {
    size_t bytes = std::max<int64_t>(numElements(shape) * dtypeBytes(dtype), 1);
    cuda::check(cuda::driver().cuMemAlloc(&address, bytes), "cuMemAlloc",
                "fusec-generate");
    cuda::check(cuda::driver().cuMemsetD8Async(address, 0, bytes,
                                               cuda::legacyDefaultStream()),
                "cuMemsetD8Async", "fusec-generate");
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { cuda::driver().cuMemFree(address); }
  DeviceTensor tensor() const { return {dtype, shape, address}; }
  DType dtype;
  Shape shape;
  cuda::CUdeviceptr address = 0;
};

/// Step 2 on the GPU: device tensors only; the host reads the tokens once.
Generated generateOnDevice(CompiledModel &prefill, CompiledModel &decode,
                           const StepLayout &layout, const Tensor &prompt,
                           int64_t count) {
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::legacyDefaultStream();
  DeviceBuffer promptIds(DType::I64, prompt.shape);
  cuda::check(driver.cuMemcpyHtoDAsync(promptIds.address, prompt.data(),
                                       prompt.bytes.size(), stream),
              "cuMemcpyHtoDAsync", "the prompt");
  // Two sets of ids and lengths: a step reads one and writes the other.
  DeviceBuffer ids[2] = {{DType::I64, {1, 1}}, {DType::I64, {1, 1}}};
  DeviceBuffer lengths[2] = {{DType::I64, {1}}, {DType::I64, {1}}};
  DeviceBuffer logits(
      DType::F32,
      prefill.program().buffers[prefill.program().outputs[2]].shape);
  DeviceBuffer history(DType::I64, {count});
  // A step whose present caches update its past ones in place (the
  // compiler marks them: BufferDesc::updatesInput; the decode step's
  // TensorScatter is pointwise) writes them where it reads them; another
  // (the prefill's, a reduction over the prompt's positions) writes the
  // spare set, which then becomes the cache.
  std::vector<std::unique_ptr<DeviceBuffer>> caches, spare;
  for (size_t i = 0; i < layout.caches; ++i) {
    caches.push_back(
        std::make_unique<DeviceBuffer>(DType::F32, layout.cacheShape));
    spare.push_back(
        std::make_unique<DeviceBuffer>(DType::F32, layout.cacheShape));
  }
  auto updatesInPlace = [&](const Program &program, size_t i) {
    return program.buffers[program.outputs[3 + i]].updatesInput ==
           program.inputs[2 + i];
  };

  Generated result;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < count; ++step) {
    const DeviceBuffer &readIds = ids[step % 2], &writeIds = ids[1 - step % 2];
    const DeviceBuffer &readLength = lengths[step % 2],
                       &writeLength = lengths[1 - step % 2];
    std::vector<DeviceTensor> in = {
        step == 0 ? promptIds.tensor() : readIds.tensor(), readLength.tensor()};
    std::vector<DeviceTensor> out = {writeIds.tensor(), writeLength.tensor(),
                                     logits.tensor()};
    CompiledModel &model = step == 0 ? prefill : decode;
    for (size_t i = 0; i < layout.caches; ++i) {
      in.push_back(caches[i]->tensor());
      out.push_back(updatesInPlace(model.program(), i) ? caches[i]->tensor()
                                                       : spare[i]->tensor());
    }
    model.enqueueOnDevice(in, out);
    for (size_t i = 0; i < layout.caches; ++i)
      if (!updatesInPlace(model.program(), i))
        std::swap(caches[i], spare[i]);
    cuda::check(driver.cuMemcpyDtoDAsync(history.address + 8 * step,
                                         writeIds.address, 8, stream),
                "cuMemcpyDtoDAsync", "a token");
    if (step == 0) {
      cuda::check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize",
                  "the prefill");
      result.prefillMillis = millisSince(start);
      start = std::chrono::steady_clock::now();
    }
  }
  result.tokens.resize(count);
  cuda::check(driver.cuMemcpyDtoHAsync(result.tokens.data(), history.address,
                                       8 * count, stream),
              "cuMemcpyDtoHAsync", "the tokens");
  cuda::check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize",
              "the generation");
  result.decodeMillis = millisSince(start);
  return result;
}

int usage(const std::string &message) {
  std::cerr << "fusec-generate: " << message
            << "\nusage: fusec-generate DIR [--tokens N] [--target cpu|cuda] "
               "[--symbolic] [--check-only]\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string dir;
  int64_t count = 32;
  bool checkOnly = false, symbolic = false;
  CompileOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--tokens" || arg == "--target") && i + 1 == argc)
      return usage(arg + " needs a value");
    if (arg == "--tokens") {
      std::istringstream in(argv[++i]);
      if (!(in >> count) || !in.eof() || count < 1)
        return usage("--tokens takes a positive count");
    } else if (arg == "--target") {
      std::string target = argv[++i];
      if (target != "cpu" && target != "cuda")
        return usage("--target is cpu or cuda, not '" + target + "'");
      options.target = target == "cpu" ? Target::Cpu : Target::Cuda;
    } else if (arg == "--check-only") {
      checkOnly = true;
    } else if (arg == "--symbolic") {
      symbolic = true;
    } else if (dir.empty() && arg.rfind("-", 0) != 0) {
      dir = arg;
    } else {
      return usage("unknown argument '" + arg + "'");
    }
  }
  if (dir.empty())
    return usage("no model folder given");
  try {
    const std::string model = dir + "/decoder.onnx";
    Tensor prompt = readNpy(dir + "/prompt.npy", DType::I64);
    Tensor tokens = readNpy(dir + "/tokens.npy", DType::I64);
    Tensor logits = readNpy(dir + "/logits.npy", DType::F32);
    if (prompt.shape.size() != 2 || prompt.shape[0] != 1 ||
        logits.shape.size() != 2 || logits.shape[0] != tokens.numElements() + 1)
      throw Error(dir + ": prompt.npy must be [1, P] and logits.npy one row "
                        "more than tokens.npy");

    auto compileAt = [&](int64_t seq, double &millis) {
      CompileOptions at = options;
      at.inputShapes["ids"] = {1, seq};
      auto start = std::chrono::steady_clock::now();
      CompiledModel compiled = compileFile(model, at);
      millis = millisSince(start);
      return compiled;
    };
    double prefillCompile = 0, decodeCompile = 0;
    CompiledModel decode = compileAt(1, decodeCompile);
    StepLayout layout(decode.program());
    const int64_t maxCache = layout.cacheShape[2];
    // --symbolic: one prefill compile for every prompt length the cache
    // holds (`seq` symbolic, 1..max_cache), as a server would compile it.
    CompiledModel prefill = [&] {
      if (!symbolic)
        return compileAt(prompt.shape[1], prefillCompile);
      CompileOptions ranged = options;
      ranged.dimRanges["seq"] = {"seq", 1, maxCache};
      auto start = std::chrono::steady_clock::now();
      CompiledModel compiled = compileFile(model, ranged);
      prefillCompile = millisSince(start);
      return compiled;
    }();
    const bool onGpu = decode.program().target == Target::Cuda;
    std::cout << model << ": compiled for "
              << (symbolic ? "1.." + std::to_string(maxCache)
                           : std::to_string(prompt.shape[1]))
              << " tokens (prefill) and 1 (decode), " << decode.kernels().size()
              << " kernels per decode step, on " << (onGpu ? "cuda" : "cpu")
              << "\n";

    double error =
        checkAgainstReference(prefill, decode, layout, prompt, tokens, logits);
    // f32 throughout, TF32 off: what differs from PyTorch is summation
    // order (BLAS, the attention kernel's tiles) and libm's tanh.
    const double tolerance = 1e-4;
    if (!(error <= tolerance)) {
      std::cerr << "fusec-generate: logits differ from PyTorch's by " << error
                << " (relative L2), more than " << tolerance << "\n";
      return 1;
    }
    if (checkOnly)
      return 0;
    if (prompt.shape[1] + count > maxCache)
      throw Error("fusec-generate: " + std::to_string(prompt.shape[1]) +
                  " prompt tokens and " + std::to_string(count) +
                  " new ones do not fit the model's cache of " +
                  std::to_string(maxCache) + " positions (--max-cache)");
    Generated run =
        onGpu ? generateOnDevice(prefill, decode, layout, prompt, count)
              : generateOnHost(prefill, decode, layout, prompt, count);
    std::cout << "tokens:";
    for (int64_t token : run.tokens)
      std::cout << " " << token;
    std::cout << "\n";
    const double perToken =
        count > 1 ? 1e3 * run.decodeMillis / double(count - 1) : 0;
    std::printf(
        "{\"case\": \"generate\", \"target\": \"%s\", \"prompt\": %lld, "
        "\"tokens\": %lld, \"max_cache\": %lld, \"compile_ms\": %.1f, "
        "\"prefill_compile_ms\": %.1f, \"prefill_lengths\": \"%s\", "
        "\"compiles\": 2, \"prefill_ms\": %.3f, \"us_per_token\": %.1f, "
        "\"tokens_per_s\": %.1f, \"max_rel_l2_vs_torch\": %.3g}\n",
        onGpu ? "cuda" : "cpu", static_cast<long long>(prompt.shape[1]),
        static_cast<long long>(count), static_cast<long long>(maxCache),
        prefillCompile + decodeCompile, prefillCompile,
        (symbolic ? "1.." + std::to_string(maxCache)
                  : std::to_string(prompt.shape[1]))
            .c_str(),
        run.prefillMillis, perToken, perToken > 0 ? 1e6 / perToken : 0.0,
        error);
    return 0;
  } catch (const Error &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
