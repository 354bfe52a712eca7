//===- CudaExecutable.cpp - Running a Program on the GPU -----------------===//

#include "runtime/CompileProgress.h"
#include "runtime/CudaApi.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Error.h"
#include "runtime/Executable.h"
#include "runtime/MemoryPlan.h"
#include "runtime/Profile.h"
#include "runtime/Trace.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>

namespace fusec {

namespace {

/// A library call's operands where `address` (one per buffer) puts them.
cuda::CublasLtMatmul::Operands
operandsAt(const MatmulCall &call,
           const std::vector<cuda::CUdeviceptr> &address) {
  cuda::CublasLtMatmul::Operands operands;
  operands.a = address[call.a];
  operands.b = address[call.b];
  operands.output = address[call.output];
  if (call.bias >= 0)
    operands.bias = address[call.bias];
  return operands;
}

} // namespace

using cuda::check;
using cuda::DeviceAllocator;

CudaExecutable::CudaExecutable(Program program,
                               std::shared_ptr<KernelCache> cache,
                               const CudaOptions &options)
    : Executable(std::move(program)) {
  cuda::Device &device = cuda::device();
  const cuda::Driver &driver = cuda::driver();
  check(driver.cuCtxSetCurrent(device.context), "cuCtxSetCurrent", prog.name);

  useGraph = options.cudaGraph;
  // Temporaries that are not outputs share one arena by liveness.
  memoryPlan = planMemory(prog);
  if (memoryPlan.arenaBytes > 0)
    arena = DeviceAllocator::get().allocate(
        memoryPlan.arenaBytes, "the temporaries of '" + prog.name + "'");
  deviceAddress.assign(prog.buffers.size(), 0);
  // Small graph inputs and outputs: mapped host memory, no copies.
  // Library calls keep device memory: cuBLASLt's kernels may address their
  // operands in ways that need it (TMA).
  mappedHost.assign(prog.buffers.size(), nullptr);
  std::vector<bool> libraryOperand(prog.buffers.size(), false);
  auto rootOf = [&](int id) {
    while (prog.buffers[id].role == BufferRole::Alias)
      id = prog.buffers[id].aliasOf;
    return id;
  };
  for (const MatmulCall &call : prog.matmuls)
    for (int id : {call.a, call.b, call.bias, call.output})
      if (id >= 0)
        libraryOperand[rootOf(id)] = true;
  // Only in a small program (every buffer but the constants small): a
  // large kernel may read a small input many times (a norm's weight, once
  // per row), and each read would cross PCIe.
  bool smallProgram = std::all_of(
      prog.buffers.begin(), prog.buffers.end(), [&](const BufferDesc &b) {
        return b.role == BufferRole::Constant ||
               b.byteSize() <= options.zeroCopyMaxBytes;
      });
  auto mapSmall = [&](const std::vector<int> &ids) {
    for (int id : ids) {
      // Graph inputs, and outputs a kernel writes (not constants, views).
      BufferRole role = prog.buffers[id].role;
      if (!smallProgram ||
          (role != BufferRole::Input && role != BufferRole::Temporary) ||
          prog.buffers[id].byteSize() == 0 || mappedHost[id] ||
          libraryOperand[id])
        continue;
      int64_t bytes = prog.buffers[id].byteSize();
      check(driver.cuMemHostAlloc(&mappedHost[id], bytes,
                                  cuda::kMemHostAllocDeviceMap),
            "cuMemHostAlloc", "buffer '" + prog.buffers[id].name + "'");
      check(driver.cuMemHostGetDevicePointer(&deviceAddress[id], mappedHost[id],
                                             0),
            "cuMemHostGetDevicePointer",
            "buffer '" + prog.buffers[id].name + "'");
    }
  };
  mapSmall(prog.inputs);
  mapSmall(prog.outputs);
  trace::Scope upload("allocate buffers, upload weights", "upload");
  for (size_t id = 0; id < prog.buffers.size(); ++id) {
    const BufferDesc &buffer = prog.buffers[id];
    if (buffer.role == BufferRole::Alias || mappedHost[id])
      continue;
    if (memoryPlan.offset[id] >= 0) {
      deviceAddress[id] = arena + memoryPlan.offset[id];
      continue;
    }
    deviceAddress[id] = DeviceAllocator::get().allocate(
        buffer.byteSize(), "buffer '" + buffer.name + "'");
    if (buffer.role == BufferRole::Constant)
      check(driver.cuMemcpyHtoDAsync(deviceAddress[id], buffer.data.data(),
                                     buffer.data.size(), device.stream),
            "cuMemcpyHtoDAsync", "constant '" + buffer.name + "'");
    // Kernels leave their scratch as they found it (zero counters), but
    // cached device memory holds whatever its last owner left.
    if (buffer.role == BufferRole::Scratch)
      check(driver.cuMemsetD8Async(deviceAddress[id], 0, buffer.byteSize(),
                                   device.stream),
            "cuMemsetD8Async", "scratch '" + buffer.name + "'");
  }
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role == BufferRole::Alias)
      deviceAddress[id] = deviceAddress[prog.buffers[id].aliasOf];
  if (trace::enabled()) // the slice ends when the copies have
    check(driver.cuStreamSynchronize(device.stream), "cuStreamSynchronize",
          "the weights of '" + prog.name + "'");
  upload.end();

  trace::Scope prepare("prepare library calls", "load",
                       {{"matmuls", double(prog.matmuls.size())}});
  std::vector<size_t> stepOf = matmulSteps();
  for (size_t i = 0; i < prog.matmuls.size(); ++i) {
    matmulCalls.push_back(std::make_unique<cuda::CublasLtMatmul>(
        prog.matmuls[i], stepOf[i], operandsAt(prog.matmuls[i], deviceAddress),
        options.tf32));
    matmulWorkspaceBytes =
        std::max(matmulWorkspaceBytes, matmulCalls.back()->workspaceBytes());
  }
  if (matmulWorkspaceBytes > 0)
    matmulWorkspace = DeviceAllocator::get().allocate(
        matmulWorkspaceBytes, "the cuBLASLt workspace of '" + prog.name + "'");
  prepare.end();

  if (prog.kernels.empty())
    return;
  // NVRTC compiles one translation unit on one thread: the kernels are
  // dealt round-robin into groups, one program each (cached on its own),
  // compiled on as many threads as the machine has.
  size_t groups = std::min<size_t>(
      prog.kernels.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> groupSource(groups, prog.prelude);
  for (size_t k = 0; k < prog.kernels.size(); ++k)
    groupSource[k % groups] += "\n" + prog.kernels[k].source;
  std::string arch = options.arch.empty() ? device.arch() : options.arch;
  std::vector<std::string> nvrtcOptions = cuda::nvrtcOptions(options.fastMath);
  std::vector<std::shared_ptr<const std::string>> cubins(groups);
  std::vector<std::exception_ptr> failures(groups);
  std::vector<std::thread> compilers;
  std::vector<std::vector<std::string>> groupKernels(groups);
  for (size_t k = 0; k < prog.kernels.size(); ++k)
    groupKernels[k % groups].push_back(prog.kernels[k].name);
  std::optional<CompileProgress> progress;
  progress.emplace(std::to_string(prog.kernels.size()) + " kernels for " + arch,
                   groups);
  for (size_t g = 0; g < groups; ++g)
    compilers.emplace_back([&, g] {
      try {
        trace::nameThisThread("nvrtc " + std::to_string(g));
        const std::vector<std::string> &names = groupKernels[g];
        trace::Scope scope(
            "kernels " + trace::shortList(names), "compile",
            {{"group", double(g)},
             {"kernels", trace::shortList(names, names.size())}});
        cubins[g] = cache->loadCubin(groupSource[g], arch, nvrtcOptions);
      } catch (...) {
        failures[g] = std::current_exception();
      }
      progress->groupDone();
    });
  for (std::thread &compiler : compilers)
    compiler.join();
  progress.reset();
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
  std::vector<cuda::CUmodule> modules(groups, nullptr);
  for (size_t g = 0; g < groups; ++g)
    check(driver.cuModuleLoadData(&modules[g], cubins[g]->data()),
          "cuModuleLoadData", "the kernels of '" + prog.name + "'");
  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    const KernelDesc &kernel = prog.kernels[k];
    Launch launch;
    check(driver.cuModuleGetFunction(&launch.function, modules[k % groups],
                                     kernel.name.c_str()),
          "cuModuleGetFunction", "kernel '" + kernel.name + "'");
    launch.geometry = kernel.launch;
    int64_t blocks = std::max<int64_t>(kernel.launch.gridX, 1);
    if (kernel.launch.maxBlocksPerMultiprocessor > 0)
      blocks = std::min<int64_t>(blocks,
                                 int64_t(device.multiprocessors) *
                                     kernel.launch.maxBlocksPerMultiprocessor);
    if (blocks > INT32_MAX)
      throw Error("kernel '" + kernel.name + "' needs " +
                  std::to_string(blocks) +
                  " blocks, more than a CUDA grid holds");
    launch.geometry.gridX = blocks;
    for (int id : kernel.inputs)
      launch.arguments.push_back(deviceAddress[id]);
    for (int id : kernel.outputs)
      launch.arguments.push_back(deviceAddress[id]);
    if (kernel.scratch >= 0)
      launch.arguments.push_back(deviceAddress[kernel.scratch]);
    launches.push_back(std::move(launch));
  }
  // Parameters point into `arguments`, which no longer moves.
  for (Launch &launch : launches)
    for (cuda::CUdeviceptr &argument : launch.arguments)
      launch.parameters.push_back(&argument);
}

CudaExecutable::~CudaExecutable() {
  const cuda::Driver &driver = cuda::driver();
  for (cuda::CUevent event : stepEvents)
    driver.cuEventDestroy(event);
  if (graphExec)
    driver.cuGraphExecDestroy(graphExec);
  if (graph)
    driver.cuGraphDestroy(graph);
  // Staging of a zero-copy buffer is its mapped memory, freed once below.
  for (size_t i = 0; i < pinnedInputs.size(); ++i)
    if (pinnedInputs[i] && !mappedHost[prog.inputs[i]])
      driver.cuMemFreeHost(pinnedInputs[i]);
  for (size_t i = 0; i < pinnedOutputs.size(); ++i)
    if (pinnedOutputs[i] && !mappedHost[prog.outputs[i]])
      driver.cuMemFreeHost(pinnedOutputs[i]);
  for (void *mapped : mappedHost)
    if (mapped)
      driver.cuMemFreeHost(mapped);
  if (matmulWorkspace)
    DeviceAllocator::get().release(matmulWorkspace, matmulWorkspaceBytes);
  if (arena)
    DeviceAllocator::get().release(arena, memoryPlan.arenaBytes);
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role != BufferRole::Alias && deviceAddress[id] &&
        memoryPlan.offset[id] < 0 && !mappedHost[id])
      DeviceAllocator::get().release(deviceAddress[id],
                                     prog.buffers[id].byteSize());
}

void CudaExecutable::upload(const std::vector<Tensor> &inputs) {
  checkInputs(inputs);
  const cuda::Driver &driver = cuda::driver();
  for (size_t i = 0; i < inputs.size(); ++i)
    check(driver.cuMemcpyHtoDAsync(deviceAddress[prog.inputs[i]],
                                   inputs[i].data(), inputs[i].bytes.size(),
                                   cuda::device().stream),
          "cuMemcpyHtoDAsync",
          "input '" + prog.buffers[prog.inputs[i]].name + "'");
}

void CudaExecutable::launch() {
  for (const Step &step : prog.steps)
    launchStep(step);
}

void CudaExecutable::launchStep(const Step &step) {
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  if (step.kind == StepKind::Matmul) {
    matmulCalls[step.index]->enqueue(stream, matmulWorkspace);
    return;
  }
  if (step.kind != StepKind::Kernel)
    return; // a view is only another name for its root's storage
  Launch &launch = launches[step.index];
  const LaunchGeometry &geometry = launch.geometry;
  check(driver.cuLaunchKernel(
            launch.function, static_cast<unsigned>(geometry.gridX),
            geometry.gridY, 1, geometry.blockX, geometry.blockY, 1,
            geometry.sharedBytes, stream, launch.parameters.data(), nullptr),
        "cuLaunchKernel", "kernel '" + prog.kernels[step.index].name + "'");
}

void CudaExecutable::bindAddresses(
    const std::vector<cuda::CUdeviceptr> &address) {
  for (size_t k = 0; k < launches.size(); ++k) {
    const KernelDesc &kernel = prog.kernels[k];
    size_t slot = 0;
    for (int id : kernel.inputs)
      launches[k].arguments[slot++] = address[id];
    for (int id : kernel.outputs)
      launches[k].arguments[slot++] = address[id];
  }
  for (size_t i = 0; i < matmulCalls.size(); ++i)
    matmulCalls[i]->rebind(operandsAt(prog.matmuls[i], address));
}

void CudaExecutable::runOnDevice(const std::vector<DeviceTensor> &inputs,
                                 const std::vector<DeviceTensor> &outputs) {
  auto checkTensors = [&](const std::vector<DeviceTensor> &given,
                          const std::vector<int> &ids, const char *what) {
    if (given.size() != ids.size())
      throw Error("fusec: '" + prog.name + "' has " +
                  std::to_string(ids.size()) + " " + what + "s but got " +
                  std::to_string(given.size()) + " device tensors");
    for (size_t i = 0; i < given.size(); ++i) {
      const BufferDesc &expected = prog.buffers[ids[i]];
      if (given[i].dtype != expected.dtype || given[i].shape != expected.shape)
        throw Error("fusec: " + std::string(what) + " '" + expected.name +
                    "' is " + dtypeName(expected.dtype) + "[" +
                    formatShape(expected.shape) +
                    "] but the device tensor is " + dtypeName(given[i].dtype) +
                    "[" + formatShape(given[i].shape) + "]");
      if (given[i].address == 0 && expected.byteSize() > 0)
        throw Error("fusec: " + std::string(what) + " '" + expected.name +
                    "' has no device address");
    }
  };
  checkTensors(inputs, prog.inputs, "input");
  checkTensors(outputs, prog.outputs, "output");
  auto rootOf = [&](int id) {
    while (prog.buffers[id].role == BufferRole::Alias)
      id = prog.buffers[id].aliasOf;
    return id;
  };
  // This run's storage: the executable's own, with the graph inputs at the
  // caller's addresses and each output a step writes at its destination.
  std::vector<cuda::CUdeviceptr> address = deviceAddress;
  for (size_t i = 0; i < inputs.size(); ++i)
    address[prog.inputs[i]] = inputs[i].address;
  std::vector<bool> placed(prog.buffers.size(), false);
  std::vector<std::pair<int, size_t>> copies; // (root buffer, output)
  for (size_t i = 0; i < outputs.size(); ++i) {
    int root = rootOf(prog.outputs[i]);
    if (prog.buffers[root].role == BufferRole::Temporary && !placed[root]) {
      address[root] = outputs[i].address;
      placed[root] = true;
    } else {
      copies.push_back({root, i}); // a view of an input, a constant, twice
    }
  }
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role == BufferRole::Alias)
      address[id] = address[rootOf(static_cast<int>(id))];

  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  bindAddresses(address);
  // Launched one by one: the captured graph holds the executable's own
  // addresses. The arguments go back to them whatever happens.
  struct Restore {
    CudaExecutable &executable;
    ~Restore() { executable.bindAddresses(executable.deviceAddress); }
  } restore{*this};
  for (const Step &step : prog.steps)
    launchStep(step);
  for (auto [root, output] : copies)
    if (prog.buffers[root].byteSize() > 0)
      check(driver.cuMemcpyDtoDAsync(outputs[output].address, address[root],
                                     prog.buffers[root].byteSize(), stream),
            "cuMemcpyDtoDAsync",
            "output '" + prog.buffers[prog.outputs[output]].name + "'");
  check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize",
        "running '" + prog.name + "' on device tensors");
}

void CudaExecutable::runTimed(const std::vector<Tensor> &inputs,
                              std::vector<Tensor> &outputs,
                              std::vector<double> &stepMicros) {
  trace::Scope scope("run", "run");
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  while (stepEvents.size() < prog.steps.size() + 1) {
    cuda::CUevent event = nullptr;
    check(driver.cuEventCreate(&event, 0), "cuEventCreate",
          "profiling '" + prog.name + "'");
    stepEvents.push_back(event);
  }
  // Step by step, no CUDA graph: event i before step i, event i+1 after.
  upload(inputs);
  // The device reaches event 0 no earlier than now: steps placed this far
  // after it on the trace lie inside this run's slice.
  double traceOrigin = trace::nowMicros();
  check(driver.cuEventRecord(stepEvents[0], stream), "cuEventRecord",
        "profiling '" + prog.name + "'");
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    launchStep(prog.steps[i]);
    check(driver.cuEventRecord(stepEvents[i + 1], stream), "cuEventRecord",
          "profiling '" + prog.name + "'");
  }
  download(outputs);
  synchronize();
  stepMicros.assign(prog.steps.size(), 0.0);
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    float millis = 0;
    check(driver.cuEventElapsedTime(&millis, stepEvents[i], stepEvents[i + 1]),
          "cuEventElapsedTime", "profiling '" + prog.name + "'");
    stepMicros[i] = prog.steps[i].kind == StepKind::View ? 0.0 : millis * 1e3;
  }
  if (!trace::enabled())
    return;
  std::vector<double> traceStarts(prog.steps.size());
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    float millis = 0;
    check(driver.cuEventElapsedTime(&millis, stepEvents[0], stepEvents[i]),
          "cuEventElapsedTime", "tracing '" + prog.name + "'");
    traceStarts[i] = traceOrigin + millis * 1e3;
  }
  traceSteps(prog, traceStarts, stepMicros);
}

void CudaExecutable::download(std::vector<Tensor> &outputs) {
  prepareOutputs(outputs);
  const cuda::Driver &driver = cuda::driver();
  for (size_t i = 0; i < outputs.size(); ++i)
    check(driver.cuMemcpyDtoHAsync(
              outputs[i].data(), deviceAddress[prog.outputs[i]],
              outputs[i].bytes.size(), cuda::device().stream),
          "cuMemcpyDtoHAsync", "output '" + prog.outputNames[i] + "'");
}

void CudaExecutable::synchronize() {
  // Errors of earlier asynchronous launches surface here.
  check(cuda::driver().cuStreamSynchronize(cuda::device().stream),
        "cuStreamSynchronize", "the steps of '" + prog.name + "'");
}

void CudaExecutable::enqueueCopiesIn() {
  const cuda::Driver &driver = cuda::driver();
  for (size_t i = 0; i < prog.inputs.size(); ++i) {
    const BufferDesc &buffer = prog.buffers[prog.inputs[i]];
    if (buffer.byteSize() > 0 && !mappedHost[prog.inputs[i]])
      check(driver.cuMemcpyHtoDAsync(deviceAddress[prog.inputs[i]],
                                     pinnedInputs[i], buffer.byteSize(),
                                     cuda::device().stream),
            "cuMemcpyHtoDAsync", "input '" + buffer.name + "'");
  }
}

void CudaExecutable::enqueueCopiesOut() {
  const cuda::Driver &driver = cuda::driver();
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    const BufferDesc &buffer = prog.buffers[prog.outputs[i]];
    if (buffer.byteSize() > 0 && !mappedHost[prog.outputs[i]])
      check(driver.cuMemcpyDtoHAsync(pinnedOutputs[i],
                                     deviceAddress[prog.outputs[i]],
                                     buffer.byteSize(), cuda::device().stream),
            "cuMemcpyDtoHAsync", "output '" + prog.outputNames[i] + "'");
  }
}

void CudaExecutable::run(const std::vector<Tensor> &inputs,
                         std::vector<Tensor> &outputs) {
  if (trace::enabled()) {
    // Step by step with CUDA events, to put each step on the device track.
    std::vector<double> stepMicros;
    runTimed(inputs, outputs, stepMicros);
    return;
  }
  checkInputs(inputs);
  prepareOutputs(outputs);
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  if (pinnedInputs.empty() && pinnedOutputs.empty()) {
    auto allocate = [&](std::vector<void *> &pinned,
                        const std::vector<int> &ids) {
      pinned.assign(ids.size(), nullptr);
      for (size_t i = 0; i < ids.size(); ++i)
        if (mappedHost[ids[i]])
          pinned[i] = mappedHost[ids[i]];
        else if (int64_t bytes = prog.buffers[ids[i]].byteSize())
          check(driver.cuMemAllocHost(&pinned[i], bytes), "cuMemAllocHost",
                "staging for '" + prog.buffers[ids[i]].name + "'");
    };
    allocate(pinnedInputs, prog.inputs);
    allocate(pinnedOutputs, prog.outputs);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].bytes.empty())
      std::memcpy(pinnedInputs[i], inputs[i].data(), inputs[i].bytes.size());
  if (useGraph && !graphExec) {
    // Capture once: the buffers, staging and launch arguments never move.
    check(driver.cuStreamBeginCapture(stream,
                                      cuda::kStreamCaptureModeThreadLocal),
          "cuStreamBeginCapture", "the CUDA graph of '" + prog.name + "'");
    enqueueCopiesIn();
    launch();
    enqueueCopiesOut();
    check(driver.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture",
          "the CUDA graph of '" + prog.name +
              "' (run with --no-cuda-graph "
              "to launch step by step)");
    check(driver.cuGraphInstantiateWithFlags(&graphExec, graph, 0),
          "cuGraphInstantiate", "the CUDA graph of '" + prog.name + "'");
  }
  if (useGraph) {
    check(driver.cuGraphLaunch(graphExec, stream), "cuGraphLaunch",
          "the CUDA graph of '" + prog.name + "'");
  } else {
    enqueueCopiesIn();
    launch();
    enqueueCopiesOut();
  }
  synchronize();
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].bytes.empty())
      std::memcpy(outputs[i].data(), pinnedOutputs[i], outputs[i].bytes.size());
}

} // namespace fusec
