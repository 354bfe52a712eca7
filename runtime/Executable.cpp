#include "runtime/Executable.h"

#include "runtime/CompileProgress.h"
#include "runtime/Profile.h"
#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <thread>

namespace fusec {

Executable::Executable(Program program) : prog(std::move(program)) {
  auto internal = [&](const std::string &why) {
    return Error("fusec: internal error: the steps of '" + prog.name +
                 "': " + why);
  };
  std::vector<int> kernelRuns(prog.kernels.size()),
      matmulRuns(prog.matmuls.size());
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const Step &step = prog.steps[i];
    auto inRange = [&](size_t size, const char *what) {
      if (step.index < 0 || static_cast<size_t>(step.index) >= size)
        throw internal("step " + std::to_string(i) + " names " + what + " " +
                       std::to_string(step.index) + " of " +
                       std::to_string(size));
    };
    switch (step.kind) {
    case StepKind::Kernel:
      inRange(prog.kernels.size(), "kernel");
      ++kernelRuns[step.index];
      break;
    case StepKind::Matmul:
      inRange(prog.matmuls.size(), "matmul");
      ++matmulRuns[step.index];
      checkMatmulCall(prog.matmuls[step.index], prog.buffers, i);
      break;
    case StepKind::View:
      inRange(prog.buffers.size(), "buffer");
      if (prog.buffers[step.index].role != BufferRole::Alias)
        throw internal("step " + std::to_string(i) + " views '" +
                       prog.buffers[step.index].name + "', not an alias");
      break;
    }
  }
  for (size_t k = 0; k < kernelRuns.size(); ++k)
    if (kernelRuns[k] != 1)
      throw internal("kernel '" + prog.kernels[k].name + "' runs " +
                     std::to_string(kernelRuns[k]) + " times");
  for (size_t k = 0; k < matmulRuns.size(); ++k)
    if (matmulRuns[k] != 1)
      throw internal("matmul " + std::to_string(k) + " runs " +
                     std::to_string(matmulRuns[k]) + " times");
}

std::vector<size_t> Executable::matmulSteps() const {
  std::vector<size_t> steps(prog.matmuls.size());
  for (size_t i = 0; i < prog.steps.size(); ++i)
    if (prog.steps[i].kind == StepKind::Matmul)
      steps[prog.steps[i].index] = i;
  return steps;
}

void compileUnitsInParallel(const CompileUnits &units,
                            const std::string &threadName,
                            const std::string &what, size_t maxThreads,
                            const std::function<void(size_t)> &compileUnit) {
  size_t count = units.sources.size();
  if (count == 0)
    return;
  std::vector<std::exception_ptr> failures(count);
  {
    CompileProgress progress(what, count);
    std::atomic<size_t> next{0};
    auto compileUnits = [&](size_t thread) {
      trace::nameThisThread(threadName + " " + std::to_string(thread));
      for (size_t u; (u = next.fetch_add(1)) < count;) {
        try {
          const std::vector<std::string> &functions = units.functions[u];
          trace::Scope group(
              "kernels " + trace::shortList(functions), "compile",
              {{"group", double(u)},
               {"kernels", trace::shortList(functions, functions.size())}});
          compileUnit(u);
        } catch (...) {
          failures[u] = std::current_exception();
        }
        progress.groupDone();
      }
    };
    std::vector<std::thread> compilers;
    size_t threads = std::clamp<size_t>(maxThreads, 1, count);
    try {
      for (size_t t = 0; t < threads; ++t)
        compilers.emplace_back(compileUnits, t);
    } catch (...) {
      // No thread to spare: the started ones take the rest of the units.
      if (compilers.empty())
        compileUnits(0);
    }
    for (std::thread &compiler : compilers)
      compiler.join();
  }
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
}

HostExecutable::HostExecutable(Program program,
                               std::shared_ptr<KernelCache> cache)
    : Executable(std::move(program)) {
  if (!prog.kernels.empty()) {
    std::vector<std::string> names;
    for (const KernelDesc &kernel : prog.kernels)
      names.push_back(kernel.name);
    trace::Scope scope("kernels " + trace::shortList(names), "compile",
                       {{"kernels", trace::shortList(names, names.size())}});
    // One translation unit (and cache entry) per core, compiled by as many
    // host compilers at once.
    CompileUnits units = splitIntoCompileUnits(
        prog, std::max(1u, std::thread::hardware_concurrency()));
    libraries.resize(units.sources.size());
    compileUnitsInParallel(
        units, "host compile",
        std::to_string(prog.kernels.size()) + " kernels for the host",
        units.sources.size(), [&](size_t u) {
          libraries[u] = cache->loadHostLibrary(units.sources[u]);
        });
    for (size_t k = 0; k < prog.kernels.size(); ++k)
      kernelFns.push_back(
          libraries[units.unitOf[k]]->lookup(units.functionOf[k]));
  }
  std::vector<size_t> stepOf = matmulSteps();
  for (size_t i = 0; i < prog.matmuls.size(); ++i)
    matmulCalls.emplace_back(prog.matmuls[i], stepOf[i], matmulScratch);
  // A temporary that is a graph output (the first time it is named) is
  // written straight into the output tensor; others get storage here.
  outputSlot.assign(prog.buffers.size(), -1);
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    int id = prog.outputs[i];
    if (prog.buffers[id].role == BufferRole::Temporary && outputSlot[id] < 0)
      outputSlot[id] = static_cast<int>(i);
  }
  // The other temporaries share one arena by liveness.
  memoryPlan = planMemory(prog);
  arena.assign(memoryPlan.arenaBytes + kArenaAlignment, 0);
  auto raw = reinterpret_cast<uintptr_t>(arena.data());
  arenaBase = arena.data() +
              (kArenaAlignment - raw % kArenaAlignment) % kArenaAlignment;
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role == BufferRole::Temporary && outputSlot[id] < 0 &&
        memoryPlan.offset[id] < 0)
      throw Error("fusec: internal error: temporary '" + prog.buffers[id].name +
                  "' of '" + prog.name + "' has no storage (never written?)");
}

void Executable::runOnDevice(const std::vector<DeviceTensor> &inputs,
                             const std::vector<DeviceTensor> &outputs) {
  enqueueOnDevice(inputs, outputs);
  synchronize();
}

void Executable::enqueueOnDevice(const std::vector<DeviceTensor> &,
                                 const std::vector<DeviceTensor> &) {
  throw Error("fusec: '" + prog.name +
              "' runs on the cpu: only CUDA models run on device tensors");
}

void Executable::checkInputs(const std::vector<Tensor> &inputs) const {
  if (inputs.size() != prog.inputs.size())
    throw Error("fusec: '" + prog.name + "' takes " +
                std::to_string(prog.inputs.size()) + " inputs but got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BufferDesc &expected = prog.buffers[prog.inputs[i]];
    const Tensor &given = inputs[i];
    if (given.dtype != expected.dtype || given.shape != expected.shape)
      throw Error("fusec: input '" + expected.name + "' expects " +
                  dtypeName(expected.dtype) + "[" +
                  formatShape(expected.shape) + "] but got " +
                  given.typeString());
    if (static_cast<int64_t>(given.bytes.size()) != expected.byteSize())
      throw Error("fusec: input '" + expected.name + "' holds " +
                  std::to_string(given.bytes.size()) + " bytes, expected " +
                  std::to_string(expected.byteSize()));
  }
}

std::vector<Tensor> Executable::run(const std::vector<Tensor> &inputs) {
  std::vector<Tensor> outputs;
  run(inputs, outputs);
  return outputs;
}

void Executable::prepareOutputs(std::vector<Tensor> &outputs) const {
  outputs.resize(prog.outputs.size());
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    const BufferDesc &buffer = prog.buffers[prog.outputs[i]];
    if (outputs[i].dtype != buffer.dtype || outputs[i].shape != buffer.shape ||
        static_cast<int64_t>(outputs[i].bytes.size()) != buffer.byteSize())
      outputs[i] = Tensor(buffer.dtype, buffer.shape);
  }
}

std::shared_ptr<Executable> makeExecutable(Program program,
                                           std::shared_ptr<KernelCache> cache,
                                           const CudaOptions &cudaOptions) {
  if (program.target == Target::Cuda)
    return std::make_shared<CudaExecutable>(std::move(program),
                                            std::move(cache), cudaOptions);
  return std::make_shared<HostExecutable>(std::move(program), std::move(cache));
}

void HostExecutable::run(const std::vector<Tensor> &inputs,
                         std::vector<Tensor> &outputs) {
  if (trace::enabled()) {
    std::vector<double> stepMicros;
    runTimed(inputs, outputs, stepMicros); // each step on the device track
    return;
  }
  checkInputs(inputs);
  prepareOutputs(outputs);
  bindBuffers(inputs, outputs);
  for (const Step &step : prog.steps)
    runStep(step);
  copyOutputs(outputs);
}

void HostExecutable::runTimed(const std::vector<Tensor> &inputs,
                              std::vector<Tensor> &outputs,
                              std::vector<double> &stepMicros) {
  trace::Scope scope("run", "run");
  checkInputs(inputs);
  prepareOutputs(outputs);
  bindBuffers(inputs, outputs);
  stepMicros.assign(prog.steps.size(), 0.0);
  std::vector<double> traceStarts(trace::enabled() ? prog.steps.size() : 0);
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    auto start = std::chrono::steady_clock::now();
    runStep(prog.steps[i]);
    stepMicros[i] = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (!traceStarts.empty())
      traceStarts[i] = trace::toMicros(start);
  }
  copyOutputs(outputs);
  traceSteps(prog, traceStarts, stepMicros);
}

void HostExecutable::bindBuffers(const std::vector<Tensor> &inputs,
                                 std::vector<Tensor> &outputs) {
  // Where every buffer lives for this run (members: no allocation per run).
  address.assign(prog.buffers.size(), nullptr);
  for (size_t i = 0; i < prog.inputs.size(); ++i)
    address[prog.inputs[i]] = const_cast<void *>(inputs[i].data());
  for (size_t id = 0; id < prog.buffers.size(); ++id) {
    const BufferDesc &buffer = prog.buffers[id];
    if (buffer.role == BufferRole::Constant)
      address[id] = const_cast<uint8_t *>(buffer.data.data());
    else if (buffer.role == BufferRole::Temporary)
      address[id] = outputSlot[id] >= 0 ? outputs[outputSlot[id]].data()
                                        : arenaBase + memoryPlan.offset[id];
  }
  // Aliases refer to earlier buffers (codegen resolves chains to the root).
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role == BufferRole::Alias)
      address[id] = address[prog.buffers[id].aliasOf];
}

void HostExecutable::runStep(const Step &step) {
  if (step.kind == StepKind::Kernel) {
    const KernelDesc &kernel = prog.kernels[step.index];
    kernelInputs.clear();
    kernelOutputs.clear();
    for (int id : kernel.inputs)
      kernelInputs.push_back(address[id]);
    for (int id : kernel.outputs)
      kernelOutputs.push_back(address[id]);
    kernelFns[step.index](kernelInputs.data(), kernelOutputs.data());
  } else if (step.kind == StepKind::Matmul) {
    const MatmulCall &call = prog.matmuls[step.index];
    matmulCalls[step.index].run(address[call.a], address[call.b],
                                address[call.output], matmulScratch);
  } // a view is only another name for its root's storage
}

void HostExecutable::copyOutputs(std::vector<Tensor> &outputs) {
  // Outputs not written in place: inputs, constants, aliases, repeats.
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    int id = prog.outputs[i];
    // (An empty tensor has no storage: memcpy must not see its null.)
    if (outputSlot[id] != static_cast<int>(i) && !outputs[i].bytes.empty())
      std::memcpy(outputs[i].data(), address[id], outputs[i].bytes.size());
  }
}

} // namespace fusec
