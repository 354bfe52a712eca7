//===- HostExecutable.cpp - Running a Program on the CPU -----------------===//

#include "runtime/cpu/HostExecutable.h"

#include "runtime/Profile.h"
#include "runtime/cache/HostCompiler.h"
#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

namespace fusec {

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
    unitOf = std::move(units.unitOf);
    functionOf = std::move(units.functionOf);
  }
  prepare();
}

HostExecutable::HostExecutable(Program program,
                               std::shared_ptr<const ExecutableImage> image)
    : Executable(std::move(program)) {
  if (image->unitOf.size() != prog.kernels.size() ||
      image->functionOf.size() != prog.kernels.size())
    throw Error(image->origin + ": error: its kernel table does not match "
                                "its program");
  for (size_t u = 0; u < image->code.size(); ++u)
    libraries.push_back(
        loadLibraryFromMemory(image->code[u], image->origin + " (kernels " +
                                                  std::to_string(u) + ")"));
  for (size_t unit : image->unitOf)
    if (unit >= libraries.size())
      throw Error(image->origin + ": error: a kernel names unit " +
                  std::to_string(unit) + " of " +
                  std::to_string(libraries.size()));
  unitOf = image->unitOf;
  functionOf = image->functionOf;
  packaged = std::move(image);
  prepare();
}

ExecutableImage HostExecutable::image() const {
  if (packaged)
    return *packaged;
  ExecutableImage image;
  image.unitOf = unitOf;
  image.functionOf = functionOf;
  for (const std::shared_ptr<KernelLibrary> &library : libraries)
    image.code.push_back(library->code());
  image.cpuFlags = cache::cpuFlags();
  return image;
}

void HostExecutable::prepare() {
  for (size_t k = 0; k < prog.kernels.size(); ++k)
    kernelFns.push_back(libraries[unitOf[k]]->lookup(functionOf[k]));
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
    if (kernel.readsDimSizes)
      // (Through void(*)(), the generic function pointer type.)
      reinterpret_cast<KernelLibrary::SizedKernelFn>(
          reinterpret_cast<void (*)()>(kernelFns[step.index]))(
          kernelInputs.data(), kernelOutputs.data(), prog.dimSizes.data());
    else
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
