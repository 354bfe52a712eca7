//===- CudaExecutable.cpp - Running a Program on the GPU -----------------===//

#include "runtime/cuda/CudaExecutable.h"

#include "runtime/Profile.h"
#include "runtime/core/Error.h"
#include "runtime/core/MemoryPlan.h"
#include "runtime/core/Trace.h"
#include "runtime/cuda/CudaApi.h"
#include "runtime/cuda/DeviceAllocator.h"

#include <algorithm>
#include <cctype>
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

/// Translation units the CUDA kernels of a program are split into, each
/// compiled by NVRTC (each unit repeats the prelude), on as many threads as
/// there are cores, up to one per unit. A fixed count: the units, and so
/// their cache entries, are the same on every machine. NVRTC's threads
/// scale poorly on an H200's 16-core host (1, 2, 4, 8 copies of one small
/// kernel at once: 47, 58, 90, 175 ms), but units still pay: with rolled
/// grid-stride loops and --minimal, the three models' kernels compiled
/// cold (CUDA_CACHE_DISABLE=1) as 1, 2, 4, 8 units took, gpt2_d256 /
/// llama_d256 / bert_d128 in ms: 339/383/193, 181/183/127, 172/155/112,
/// 163/136/116.
constexpr size_t kCudaCompileUnits = 8;

/// The program's kernels compiling in the background while the executable
/// creates the context, uploads the weights and prepares the library calls:
/// a cold start pays for the longest of these, not their sum.
class BackgroundCompile {
public:
  BackgroundCompile(const Program &program, KernelCache &cache,
                    const std::string &arch, bool fastMath)
      : units(splitIntoCompileUnits(program, kCudaCompileUnits)),
        cubins(units.sources.size()) {
    if (units.sources.empty())
      return;
    std::string what =
        std::to_string(program.kernels.size()) + " kernels for " + arch;
    compiler = std::thread([this, &cache, arch, fastMath, what] {
      try {
        std::vector<std::string> options = cuda::nvrtcOptions(fastMath);
        compileUnitsInParallel(
            units, "nvrtc", what, std::thread::hardware_concurrency(),
            [&](size_t u) {
              cubins[u] = cache.loadCubin(units.sources[u], arch, options);
            });
      } catch (...) {
        failure = std::current_exception();
      }
    });
  }
  ~BackgroundCompile() {
    if (compiler.joinable())
      compiler.join();
  }
  /// One cubin per unit, once compiled; rethrows a compile's failure.
  const std::vector<std::shared_ptr<const std::string>> &wait() {
    if (compiler.joinable())
      compiler.join();
    if (failure)
      std::rethrow_exception(failure);
    return cubins;
  }

  const CompileUnits units;

private:
  std::vector<std::shared_ptr<const std::string>> cubins;
  std::exception_ptr failure;
  std::thread compiler;
};

} // namespace

using cuda::check;
using cuda::DeviceAllocator;

CudaExecutable::CudaExecutable(Program program,
                               std::shared_ptr<KernelCache> cache,
                               const CudaOptions &options)
    : Executable(std::move(program)), cache(std::move(cache)),
      compiledWith(options) {
  if (compiledWith.arch.empty())
    compiledWith.arch = cuda::deviceArch();
  BackgroundCompile compile(prog, *this->cache, compiledWith.arch,
                            options.fastMath);
  // Held to the end, as every step below enqueues on or configures what
  // another thread's capture of the shared stream could see.
  cuda::StreamLock held;
  allocateAndUpload(options);
  const std::vector<std::shared_ptr<const std::string>> &cubins =
      compile.wait();
  std::vector<cuda::CUmodule> modules(cubins.size(), nullptr);
  for (size_t u = 0; u < cubins.size(); ++u)
    check(cuda::driver().cuModuleLoadData(&modules[u], cubins[u]->data()),
          "cuModuleLoadData", "the kernels of '" + prog.name + "'");
  prepareLaunches(modules, compile.units.unitOf, compile.units.functionOf,
                  options.kernelOverlap);
}

namespace {

/// "sm_90a" -> 90; -1 when `arch` is not sm_<digits>[letter].
int archNumber(const std::string &arch) {
  size_t digits = arch.find_first_not_of("0123456789", 3);
  if (arch.rfind("sm_", 0) != 0 || digits == 3)
    return -1;
  if (digits != std::string::npos && digits + 1 != arch.size())
    return -1;
  return std::stoi(arch.substr(3, digits - 3));
}

/// Whether a cubin for `cubinArch` runs on a `deviceArch` GPU: the same
/// architecture, or (no arch-specific `a`/`f` features) a later minor
/// version of the same major one.
bool cubinRunsOn(const std::string &cubinArch, const std::string &deviceArch) {
  if (cubinArch == deviceArch)
    return true;
  int cubin = archNumber(cubinArch), device = archNumber(deviceArch);
  bool plain =
      cubin >= 0 && std::isdigit(static_cast<unsigned char>(cubinArch.back()));
  return plain && device >= cubin && device / 10 == cubin / 10;
}

/// Whether the driver can compile PTX for `ptxArch` for a `deviceArch` GPU.
bool ptxRunsOn(const std::string &ptxArch, const std::string &deviceArch) {
  int ptx = archNumber(ptxArch), device = archNumber(deviceArch);
  return ptx >= 0 && device >= ptx &&
         std::isdigit(static_cast<unsigned char>(ptxArch.back()));
}

} // namespace

CudaExecutable::CudaExecutable(Program program,
                               std::shared_ptr<const ExecutableImage> image)
    : Executable(std::move(program)), packaged(image) {
  const std::string &origin = image->origin;
  if (image->unitOf.size() != prog.kernels.size() ||
      image->functionOf.size() != prog.kernels.size() ||
      image->ptx.size() != image->code.size())
    throw Error(origin + ": error: its kernel table does not match its "
                         "program");
  for (size_t unit : image->unitOf)
    if (unit >= image->code.size())
      throw Error(origin + ": error: a kernel names unit " +
                  std::to_string(unit) + " of " +
                  std::to_string(image->code.size()));
  std::string deviceArch = cuda::deviceArch();
  bool useCubins = cubinRunsOn(image->arch, deviceArch);
  if (!useCubins && !image->code.empty()) {
    bool allPtx = std::none_of(image->ptx.begin(), image->ptx.end(),
                               [](const std::string &p) { return p.empty(); });
    if (!allPtx || !ptxRunsOn(image->ptxArch, deviceArch))
      throw Error(origin + ": error: its kernels are compiled for " +
                  image->arch +
                  (allPtx ? " (PTX for " + image->ptxArch + ")"
                          : std::string(" (without PTX for every kernel)")) +
                  ", which cannot run on this GPU (" + deviceArch +
                  "): compile the model for " + deviceArch);
  }
  cuda::StreamLock held;
  CudaOptions options;
  options.arch = image->arch;
  options.tf32 = image->tf32;
  options.cudaGraph = image->cudaGraph;
  options.kernelOverlap = image->kernelOverlap;
  options.zeroCopyMaxBytes = image->zeroCopyMaxBytes;
  allocateAndUpload(options);
  std::vector<cuda::CUmodule> modules(image->code.size(), nullptr);
  for (size_t u = 0; u < modules.size(); ++u) {
    // PTX is text: std::string keeps the NUL the driver reads up to.
    const char *code =
        useCubins ? image->code[u]->data() : image->ptx[u].c_str();
    check(cuda::driver().cuModuleLoadData(&modules[u], code),
          "cuModuleLoadData",
          origin + ": the kernels" +
              (useCubins ? " (cubin for " + image->arch + ")"
                         : " (PTX for " + image->ptxArch + ")"));
  }
  prepareLaunches(modules, image->unitOf, image->functionOf,
                  options.kernelOverlap);
}

ExecutableImage CudaExecutable::image() const {
  if (packaged)
    return *packaged;
  // The cubins are memory hits in the cache this executable compiled with.
  return compileCudaImage(prog, *cache, compiledWith);
}

ExecutableImage compileCudaImage(const Program &program, KernelCache &cache,
                                 const CudaOptions &options) {
  CompileUnits units = splitIntoCompileUnits(program, kCudaCompileUnits);
  ExecutableImage image;
  image.arch = options.arch;
  // PTX without arch-specific features, which later GPUs compile; a unit
  // that needs them (sm_90a's wgmma) has none.
  image.ptxArch = cuda::plainArch(options.arch);
  image.code.resize(units.sources.size());
  image.ptx.resize(units.sources.size());
  std::vector<std::string> nvrtcOptions = cuda::nvrtcOptions(options.fastMath);
  compileUnitsInParallel(
      units, "nvrtc",
      std::to_string(program.kernels.size()) + " kernels for " + options.arch +
          " and PTX for " + image.ptxArch,
      std::thread::hardware_concurrency(), [&](size_t u) {
        image.code[u] =
            cache.loadCubin(units.sources[u], options.arch, nvrtcOptions);
        try {
          image.ptx[u] = cuda::compileCuda(units.sources[u], image.ptxArch,
                                           nvrtcOptions, /*ptx=*/true);
        } catch (const Error &) {
          image.ptx[u].clear();
        }
      });
  image.unitOf = std::move(units.unitOf);
  image.functionOf = std::move(units.functionOf);
  image.tf32 = options.tf32;
  image.cudaGraph = options.cudaGraph;
  image.kernelOverlap = options.kernelOverlap;
  image.zeroCopyMaxBytes = options.zeroCopyMaxBytes;
  return image;
}

void CudaExecutable::allocateAndUpload(const CudaOptions &options) {
  cuda::Device &device = cuda::device();
  const cuda::Driver &driver = cuda::driver();

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
}

void CudaExecutable::prepareLaunches(const std::vector<cuda::CUmodule> &modules,
                                     const std::vector<size_t> &unitOf,
                                     const std::vector<std::string> &functionOf,
                                     bool kernelOverlap) {
  cuda::Device &device = cuda::device();
  const cuda::Driver &driver = cuda::driver();
  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    const KernelDesc &kernel = prog.kernels[k];
    Launch launch;
    check(driver.cuModuleGetFunction(&launch.function, modules[unitOf[k]],
                                     functionOf[k].c_str()),
          "cuModuleGetFunction", "kernel '" + kernel.name + "'");
    int64_t blocks = std::max<int64_t>(kernel.launch.gridX, 1);
    if (kernel.launch.maxBlocksPerMultiprocessor > 0)
      blocks = std::min<int64_t>(blocks,
                                 int64_t(device.multiprocessors) *
                                     kernel.launch.maxBlocksPerMultiprocessor);
    if (blocks > INT32_MAX)
      throw Error("kernel '" + kernel.name + "' needs " +
                  std::to_string(blocks) +
                  " blocks, more than a CUDA grid holds");
    launch.config.gridX = static_cast<unsigned>(blocks);
    launch.config.gridY = kernel.launch.gridY;
    launch.config.blockX = kernel.launch.blockX;
    launch.config.blockY = kernel.launch.blockY;
    launch.config.sharedBytes = kernel.launch.sharedBytes;
    // Past 48 KiB a kernel must opt in to its dynamic shared memory.
    if (kernel.launch.sharedBytes > cuda::kDefaultDynamicSharedBytes) {
      if (kernel.launch.sharedBytes >
          static_cast<unsigned>(device.maxSharedBytesPerBlock))
        throw Error("kernel '" + kernel.name + "' needs " +
                    std::to_string(kernel.launch.sharedBytes) +
                    " bytes of shared memory per block; " + device.name +
                    " has " + std::to_string(device.maxSharedBytesPerBlock));
      check(driver.cuFuncSetAttribute(
                launch.function, cuda::kFunctionAttributeMaxDynamicSharedBytes,
                static_cast<int>(kernel.launch.sharedBytes)),
            "cuFuncSetAttribute", "kernel '" + kernel.name + "'");
    }
    // griddepcontrol is sm_90's; before it the kernel compiles without it.
    if (kernel.launch.waitsForPredecessor && kernelOverlap &&
        device.major >= 9) {
      launch.overlap.id = cuda::kLaunchAttributeProgrammaticStreamSerialization;
      launch.overlap.value.flag = 1;
      launch.config.attributeCount = 1;
    }
    for (int id : kernel.inputs)
      launch.arguments.push_back(deviceAddress[id]);
    for (int id : kernel.outputs)
      launch.arguments.push_back(deviceAddress[id]);
    if (kernel.scratch >= 0)
      launch.arguments.push_back(deviceAddress[kernel.scratch]);
    // The dims' sizes as int64 arguments, 8 bytes like the addresses.
    if (kernel.readsDimSizes)
      for (int64_t size : prog.dimSizes)
        launch.arguments.push_back(static_cast<cuda::CUdeviceptr>(size));
    launches.push_back(std::move(launch));
  }
  // Parameters point into `arguments`, and the config at `overlap`, which
  // no longer move.
  for (Launch &launch : launches) {
    for (cuda::CUdeviceptr &argument : launch.arguments)
      launch.parameters.push_back(&argument);
    if (launch.config.attributeCount > 0)
      launch.config.attributes = &launch.overlap;
  }
}

CudaExecutable::~CudaExecutable() {
  cuda::StreamLock held;
  const cuda::Driver &driver = cuda::driver();
  // Queued device runs use the memory released below.
  driver.cuStreamSynchronize(held.stream());
  for (cuda::CUevent event : stepEvents)
    driver.cuEventDestroy(event);
  destroy(hostRunGraph);
  for (auto &[binding, captured] : deviceRunGraphs)
    destroy(captured);
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
  cuda::StreamLock held;
  const cuda::Driver &driver = cuda::driver();
  for (size_t i = 0; i < inputs.size(); ++i)
    check(driver.cuMemcpyHtoDAsync(deviceAddress[prog.inputs[i]],
                                   inputs[i].data(), inputs[i].bytes.size(),
                                   held.stream()),
          "cuMemcpyHtoDAsync",
          "input '" + prog.buffers[prog.inputs[i]].name + "'");
}

void CudaExecutable::launch() {
  cuda::StreamLock held;
  for (const Step &step : prog.steps)
    launchStep(step, held.stream());
}

void CudaExecutable::launchStep(const Step &step, cuda::CUstream stream) {
  const cuda::Driver &driver = cuda::driver();
  if (step.kind == StepKind::Matmul) {
    matmulCalls[step.index]->enqueue(stream, matmulWorkspace);
    return;
  }
  if (step.kind != StepKind::Kernel)
    return; // a view is only another name for its root's storage
  Launch &launch = launches[step.index];
  launch.config.stream = stream;
  check(driver.cuLaunchKernelEx(&launch.config, launch.function,
                                launch.parameters.data(), nullptr),
        "cuLaunchKernelEx",
        [&] { return "kernel '" + prog.kernels[step.index].name + "'"; });
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

void CudaExecutable::enqueueOnDevice(const std::vector<DeviceTensor> &inputs,
                                     const std::vector<DeviceTensor> &outputs,
                                     void *callerStream) {
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
  cuda::StreamLock held;
  // fusec's stream does not wait for the caller's by itself.
  cuda::CUstream caller = callerStream
                              ? static_cast<cuda::CUstream>(callerStream)
                              : cuda::legacyDefaultStream();
  cuda::orderAfterStream(caller);
  enqueueBound(inputs, outputs);
  cuda::orderStreamAfter(caller);
}

void CudaExecutable::checkOverlaps(
    const std::vector<DeviceTensor> &inputs,
    const std::vector<DeviceTensor> &outputs) const {
  // An output may overlap an input only as the in-place update the
  // compiler found safe: the very same memory (BufferDesc::updatesInput).
  for (size_t o = 0; o < outputs.size(); ++o) {
    const BufferDesc &output = prog.buffers[prog.outputs[o]];
    const uint64_t outBegin = outputs[o].address,
                   outEnd = outBegin + output.byteSize();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const BufferDesc &input = prog.buffers[prog.inputs[i]];
      const uint64_t inBegin = inputs[i].address,
                     inEnd = inBegin + input.byteSize();
      if (outBegin >= inEnd || inBegin >= outEnd)
        continue;
      if (output.updatesInput == prog.inputs[i] && outBegin == inBegin)
        continue;
      throw Error("fusec: output '" + output.name + "' overlaps input '" +
                  input.name + "' in device memory" +
                  (output.updatesInput == prog.inputs[i]
                       ? std::string(": it may update that input in place, "
                                     "but only at the input's own address")
                       : std::string(": '" + prog.name +
                                     "' does not update that input in "
                                     "place (see updates_input in "
                                     "--emit=plan)")));
    }
  }
}

void CudaExecutable::enqueueBound(const std::vector<DeviceTensor> &inputs,
                                  const std::vector<DeviceTensor> &outputs) {
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  std::vector<cuda::CUdeviceptr> binding;
  binding.reserve(inputs.size() + outputs.size());
  for (const std::vector<DeviceTensor> *tensors : {&inputs, &outputs})
    for (const DeviceTensor &tensor : *tensors)
      binding.push_back(tensor.address);
  if (useGraph) {
    auto hit =
        std::find_if(deviceRunGraphs.begin(), deviceRunGraphs.end(),
                     [&](const auto &entry) { return entry.first == binding; });
    if (hit != deviceRunGraphs.end()) {
      std::rotate(hit, hit + 1, deviceRunGraphs.end());
      replay(deviceRunGraphs.back().second);
      return;
    }
  }
  // A binding replayed above was checked when it was captured.
  checkOverlaps(inputs, outputs);
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

  auto enqueue = [&] {
    bindAddresses(address);
    // The arguments go back to the executable's own addresses (those of
    // host runs) whatever happens.
    struct Restore {
      CudaExecutable &executable;
      ~Restore() { executable.bindAddresses(executable.deviceAddress); }
    } restore{*this};
    for (const Step &step : prog.steps)
      launchStep(step, stream);
    for (auto [root, output] : copies)
      if (prog.buffers[root].byteSize() > 0)
        check(driver.cuMemcpyDtoDAsync(outputs[output].address, address[root],
                                       prog.buffers[root].byteSize(), stream),
              "cuMemcpyDtoDAsync", [&] {
                return "output '" + prog.buffers[prog.outputs[output]].name +
                       "'";
              });
  };
  if (!useGraph) {
    enqueue();
    return;
  }
  CapturedGraph captured = capture(enqueue);
  if (deviceRunGraphs.size() == kMaxDeviceGraphs) {
    destroy(deviceRunGraphs.front().second);
    deviceRunGraphs.erase(deviceRunGraphs.begin());
  }
  deviceRunGraphs.emplace_back(std::move(binding), captured);
  replay(captured);
}

void CudaExecutable::replay(const CapturedGraph &captured) {
  check(cuda::driver().cuGraphLaunch(captured.exec, cuda::device().stream),
        "cuGraphLaunch",
        [&] { return "the CUDA graph of '" + prog.name + "'"; });
}

CudaExecutable::CapturedGraph
CudaExecutable::capture(const std::function<void()> &enqueue) {
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  std::string what = "the CUDA graph of '" + prog.name + "'";
  check(
      driver.cuStreamBeginCapture(stream, cuda::kStreamCaptureModeThreadLocal),
      "cuStreamBeginCapture", what);
  CapturedGraph captured;
  try {
    enqueue();
  } catch (...) {
    // End the capture, or the stream stays unusable.
    driver.cuStreamEndCapture(stream, &captured.graph);
    destroy(captured);
    throw;
  }
  check(driver.cuStreamEndCapture(stream, &captured.graph),
        "cuStreamEndCapture",
        what + " (run with --no-cuda-graph to launch step by step)");
  cuda::CUresult instantiated =
      driver.cuGraphInstantiateWithFlags(&captured.exec, captured.graph, 0);
  if (instantiated != 0)
    destroy(captured);
  check(instantiated, "cuGraphInstantiate", what);
  return captured;
}

void CudaExecutable::destroy(CapturedGraph &captured) {
  const cuda::Driver &driver = cuda::driver();
  if (captured.exec)
    driver.cuGraphExecDestroy(captured.exec);
  if (captured.graph)
    driver.cuGraphDestroy(captured.graph);
  captured = {};
}

void CudaExecutable::runTimed(const std::vector<Tensor> &inputs,
                              std::vector<Tensor> &outputs,
                              std::vector<double> &stepMicros) {
  trace::Scope scope("run", "run");
  cuda::StreamLock held;
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = held.stream();
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
    launchStep(prog.steps[i], stream);
    check(driver.cuEventRecord(stepEvents[i + 1], stream), "cuEventRecord",
          "profiling '" + prog.name + "'");
  }
  download(outputs);
  synchronize();
  // The wait may end on the stream's ticket before the driver has seen the
  // events complete; their times are read once it has.
  check(driver.cuEventSynchronize(stepEvents.back()), "cuEventSynchronize",
        "profiling '" + prog.name + "'");
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
  cuda::StreamLock held;
  const cuda::Driver &driver = cuda::driver();
  for (size_t i = 0; i < outputs.size(); ++i)
    check(driver.cuMemcpyDtoHAsync(outputs[i].data(),
                                   deviceAddress[prog.outputs[i]],
                                   outputs[i].bytes.size(), held.stream()),
          "cuMemcpyDtoHAsync", "output '" + prog.outputNames[i] + "'");
}

void CudaExecutable::synchronize() {
  // Errors of earlier asynchronous launches surface here.
  check(cuda::finishStream(), "cuStreamSynchronize",
        [&] { return "the steps of '" + prog.name + "'"; });
}

void CudaExecutable::enqueueCopiesIn() {
  const cuda::Driver &driver = cuda::driver();
  for (size_t i = 0; i < prog.inputs.size(); ++i) {
    const BufferDesc &buffer = prog.buffers[prog.inputs[i]];
    if (buffer.byteSize() > 0 && !mappedHost[prog.inputs[i]])
      check(driver.cuMemcpyHtoDAsync(deviceAddress[prog.inputs[i]],
                                     pinnedInputs[i], buffer.byteSize(),
                                     cuda::device().stream),
            "cuMemcpyHtoDAsync", [&] { return "input '" + buffer.name + "'"; });
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
            "cuMemcpyDtoHAsync",
            [&] { return "output '" + prog.outputNames[i] + "'"; });
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
  cuda::StreamLock held; // also the context current for every call below
  const cuda::Driver &driver = cuda::driver();
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
  if (useGraph && !hostRunGraph.exec) // the buffers and staging never move
    hostRunGraph = capture([&] {
      enqueueCopiesIn();
      launch();
      enqueueCopiesOut();
    });
  if (useGraph) {
    replay(hostRunGraph);
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
