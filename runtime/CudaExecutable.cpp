//===- CudaExecutable.cpp - Running a Program on the GPU -----------------===//

#include "runtime/CudaApi.h"
#include "runtime/Error.h"
#include "runtime/Executable.h"

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>

namespace fusec {

namespace {

using cuda::check;
using cuda::CUdeviceptr;

/// Device memory, cached by size: executables come and go (a benchmark or a
/// test builds many) without paying cuMemAlloc/cuMemFree each time.
class DeviceAllocator {
public:
  static DeviceAllocator &get() {
    static DeviceAllocator *allocator = new DeviceAllocator; // outlives exit
    return *allocator;
  }

  CUdeviceptr allocate(size_t bytes, const std::string &what) {
    bytes = roundUp(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = cached.find(bytes);
      if (it != cached.end()) {
        CUdeviceptr pointer = it->second;
        cached.erase(it);
        return pointer;
      }
    }
    CUdeviceptr pointer = 0;
    cuda::CUresult result = cuda::driver().cuMemAlloc(&pointer, bytes);
    if (result != 0) {
      // Give the cache back to the driver and try once more.
      releaseCached();
      result = cuda::driver().cuMemAlloc(&pointer, bytes);
    }
    check(result, "cuMemAlloc",
          what + " (" + std::to_string(bytes >> 20) + " MiB)");
    return pointer;
  }

  void release(CUdeviceptr pointer, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    cached.emplace(roundUp(bytes), pointer);
  }

private:
  static size_t roundUp(size_t bytes) {
    size_t granule = bytes >= (size_t(1) << 20) ? (size_t(1) << 20) : 512;
    return std::max<size_t>(granule, (bytes + granule - 1) / granule * granule);
  }
  void releaseCached() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[bytes, pointer] : cached)
      cuda::driver().cuMemFree(pointer);
    cached.clear();
  }

  std::mutex mutex;
  std::multimap<size_t, CUdeviceptr> cached;
};

} // namespace

CudaExecutable::CudaExecutable(Program program,
                               std::shared_ptr<KernelCache> cache,
                               const CudaOptions &options)
    : Executable(std::move(program)) {
  cuda::Device &device = cuda::device();
  const cuda::Driver &driver = cuda::driver();
  check(driver.cuCtxSetCurrent(device.context), "cuCtxSetCurrent", prog.name);

  deviceAddress.assign(prog.buffers.size(), 0);
  for (size_t id = 0; id < prog.buffers.size(); ++id) {
    const BufferDesc &buffer = prog.buffers[id];
    if (buffer.role == BufferRole::Alias)
      continue;
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

  if (prog.kernels.empty())
    return;
  std::shared_ptr<const std::string> cubin = cache->loadCubin(
      prog.source, options.arch.empty() ? device.arch() : options.arch,
      cuda::nvrtcOptions(options.fastMath));
  cuda::CUmodule module = nullptr;
  check(driver.cuModuleLoadData(&module, cubin->data()), "cuModuleLoadData",
        "the kernels of '" + prog.name + "'");
  for (const KernelDesc &kernel : prog.kernels) {
    Launch launch;
    check(driver.cuModuleGetFunction(&launch.function, module,
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
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role != BufferRole::Alias && deviceAddress[id])
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
  const cuda::Driver &driver = cuda::driver();
  cuda::CUstream stream = cuda::device().stream;
  for (size_t k = 0; k < launches.size(); ++k) {
    Launch &launch = launches[k];
    const LaunchGeometry &geometry = launch.geometry;
    check(driver.cuLaunchKernel(
              launch.function, static_cast<unsigned>(geometry.gridX),
              geometry.gridY, 1, geometry.blockX, geometry.blockY, 1,
              geometry.sharedBytes, stream, launch.parameters.data(), nullptr),
          "cuLaunchKernel", "kernel '" + prog.kernels[k].name + "'");
  }
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
        "cuStreamSynchronize", "the kernels of '" + prog.name + "'");
}

void CudaExecutable::run(const std::vector<Tensor> &inputs,
                         std::vector<Tensor> &outputs) {
  upload(inputs);
  launch();
  download(outputs);
  synchronize();
}

} // namespace fusec
