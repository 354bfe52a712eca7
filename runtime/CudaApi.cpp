#include "runtime/CudaApi.h"

#include "runtime/Error.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace fusec::cuda {

namespace {

constexpr int kAttributeMultiprocessors = 16;
constexpr int kAttributeMajor = 75;
constexpr int kAttributeMinor = 76;

void *openFirst(const std::vector<std::string> &names, std::string &tried) {
  for (const std::string &name : names) {
    if (void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    tried += "\n  " + name + ": " + dlerror();
  }
  return nullptr;
}

/// Resolves `name`, preferring its versioned `name_v2` form.
template <typename Fn>
bool resolve(void *library, Fn &slot, const char *name, bool versioned,
             std::string &missing) {
  void *symbol = nullptr;
  if (versioned)
    symbol = dlsym(library, (std::string(name) + "_v2").c_str());
  if (!symbol)
    symbol = dlsym(library, name);
  if (!symbol)
    missing += std::string(missing.empty() ? "" : ", ") + name;
  slot = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

struct LoadedDriver {
  Driver api{};
  std::string error;
};

LoadedDriver loadDriver() {
  LoadedDriver loaded;
  std::string tried;
  void *library = openFirst({"libcuda.so.1", "libcuda.so"}, tried);
  if (!library) {
    loaded.error = "the CUDA driver (libcuda.so.1) is not installed" + tried;
    return loaded;
  }
  std::string missing;
  Driver &d = loaded.api;
  resolve(library, d.cuInit, "cuInit", false, missing);
  resolve(library, d.cuDeviceGetCount, "cuDeviceGetCount", false, missing);
  resolve(library, d.cuDeviceGet, "cuDeviceGet", false, missing);
  resolve(library, d.cuDeviceGetAttribute, "cuDeviceGetAttribute", false,
          missing);
  resolve(library, d.cuDeviceGetName, "cuDeviceGetName", false, missing);
  resolve(library, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",
          false, missing);
  resolve(library, d.cuCtxSetCurrent, "cuCtxSetCurrent", false, missing);
  resolve(library, d.cuModuleLoadData, "cuModuleLoadData", false, missing);
  resolve(library, d.cuModuleGetFunction, "cuModuleGetFunction", false,
          missing);
  resolve(library, d.cuLaunchKernel, "cuLaunchKernel", false, missing);
  resolve(library, d.cuMemAlloc, "cuMemAlloc", true, missing);
  resolve(library, d.cuMemFree, "cuMemFree", true, missing);
  resolve(library, d.cuMemGetInfo, "cuMemGetInfo", true, missing);
  resolve(library, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", true, missing);
  resolve(library, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", true, missing);
  resolve(library, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", true, missing);
  resolve(library, d.cuStreamCreate, "cuStreamCreate", false, missing);
  resolve(library, d.cuStreamSynchronize, "cuStreamSynchronize", false,
          missing);
  resolve(library, d.cuEventCreate, "cuEventCreate", false, missing);
  resolve(library, d.cuEventRecord, "cuEventRecord", false, missing);
  resolve(library, d.cuEventSynchronize, "cuEventSynchronize", false, missing);
  resolve(library, d.cuEventElapsedTime, "cuEventElapsedTime", true, missing);
  resolve(library, d.cuGetErrorName, "cuGetErrorName", false, missing);
  if (!missing.empty())
    loaded.error = "the CUDA driver lacks entry points: " + missing;
  return loaded;
}

const LoadedDriver &loadedDriver() {
  static const LoadedDriver loaded = loadDriver();
  return loaded;
}

struct LoadedDevice {
  Device device;
  std::string error;
};

LoadedDevice initDevice() {
  LoadedDevice loaded;
  const LoadedDriver &driver = loadedDriver();
  if (!driver.error.empty()) {
    loaded.error = driver.error;
    return loaded;
  }
  const Driver &d = driver.api;
  auto failed = [&](CUresult result, const char *call) {
    if (result == 0)
      return false;
    const char *name = "unknown";
    d.cuGetErrorName(result, &name);
    loaded.error = std::string(call) + " failed: " + name;
    return true;
  };
  int count = 0;
  if (failed(d.cuInit(0), "cuInit") ||
      failed(d.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return loaded;
  if (count == 0) {
    loaded.error = "the CUDA driver reports no GPU";
    return loaded;
  }
  Device &device = loaded.device;
  char name[256] = {};
  if (failed(d.cuDeviceGet(&device.handle, 0), "cuDeviceGet") ||
      failed(d.cuDeviceGetName(name, sizeof name, device.handle),
             "cuDeviceGetName") ||
      failed(d.cuDeviceGetAttribute(&device.multiprocessors,
                                    kAttributeMultiprocessors, device.handle),
             "cuDeviceGetAttribute") ||
      failed(
          d.cuDeviceGetAttribute(&device.major, kAttributeMajor, device.handle),
          "cuDeviceGetAttribute") ||
      failed(
          d.cuDeviceGetAttribute(&device.minor, kAttributeMinor, device.handle),
          "cuDeviceGetAttribute") ||
      failed(d.cuDevicePrimaryCtxRetain(&device.context, device.handle),
             "cuDevicePrimaryCtxRetain") ||
      failed(d.cuCtxSetCurrent(device.context), "cuCtxSetCurrent") ||
      failed(d.cuStreamCreate(&device.stream, 0), "cuStreamCreate"))
    return loaded;
  device.name = name;
  return loaded;
}

const LoadedDevice &loadedDevice() {
  static const LoadedDevice loaded = initDevice();
  return loaded;
}

//===----------------------------------------------------------------------===//
// NVRTC
//===----------------------------------------------------------------------===//

using nvrtcProgram = struct _nvrtcProgram *;
struct Nvrtc {
  int (*nvrtcVersion)(int *, int *);
  int (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int,
                            const char *const *, const char *const *);
  int (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
  int (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
  int (*nvrtcGetProgramLog)(nvrtcProgram, char *);
  int (*nvrtcGetCUBINSize)(nvrtcProgram, size_t *);
  int (*nvrtcGetCUBIN)(nvrtcProgram, char *);
  int (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
  int (*nvrtcGetPTX)(nvrtcProgram, char *);
  int (*nvrtcDestroyProgram)(nvrtcProgram *);
  const char *(*nvrtcGetErrorString)(int);
};

struct LoadedNvrtc {
  Nvrtc api{};
  std::string error;
};

LoadedNvrtc loadNvrtc() {
  LoadedNvrtc loaded;
  std::vector<std::string> names;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(variable); root && *root)
      names.push_back(std::string(root) + "/lib64/libnvrtc.so");
  for (const char *name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                           "/usr/local/cuda/lib64/libnvrtc.so.13",
                           "/usr/local/cuda/lib64/libnvrtc.so.12",
                           "/usr/local/cuda/lib64/libnvrtc.so"})
    names.push_back(name);
  std::string tried;
  void *library = openFirst(names, tried);
  if (!library) {
    loaded.error =
        "NVRTC (libnvrtc.so) is not installed; set CUDA_HOME" + tried;
    return loaded;
  }
  std::string missing;
  Nvrtc &n = loaded.api;
  resolve(library, n.nvrtcVersion, "nvrtcVersion", false, missing);
  resolve(library, n.nvrtcCreateProgram, "nvrtcCreateProgram", false, missing);
  resolve(library, n.nvrtcCompileProgram, "nvrtcCompileProgram", false,
          missing);
  resolve(library, n.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", false,
          missing);
  resolve(library, n.nvrtcGetProgramLog, "nvrtcGetProgramLog", false, missing);
  resolve(library, n.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", false, missing);
  resolve(library, n.nvrtcGetCUBIN, "nvrtcGetCUBIN", false, missing);
  resolve(library, n.nvrtcGetPTXSize, "nvrtcGetPTXSize", false, missing);
  resolve(library, n.nvrtcGetPTX, "nvrtcGetPTX", false, missing);
  resolve(library, n.nvrtcDestroyProgram, "nvrtcDestroyProgram", false,
          missing);
  resolve(library, n.nvrtcGetErrorString, "nvrtcGetErrorString", false,
          missing);
  if (!missing.empty())
    loaded.error = "NVRTC lacks entry points: " + missing;
  return loaded;
}

const LoadedNvrtc &loadedNvrtc() {
  static const LoadedNvrtc loaded = loadNvrtc();
  return loaded;
}

const Nvrtc &nvrtc() {
  const LoadedNvrtc &loaded = loadedNvrtc();
  if (!loaded.error.empty())
    throw Error("fusec: cannot compile CUDA: " + loaded.error);
  return loaded.api;
}

} // namespace

const Driver &driver() {
  const LoadedDriver &loaded = loadedDriver();
  if (!loaded.error.empty())
    throw Error("fusec: the CUDA target is unavailable: " + loaded.error);
  return loaded.api;
}

void check(CUresult result, const char *call, const std::string &context) {
  if (result == 0)
    return;
  const char *name = "unknown CUDA error";
  driver().cuGetErrorName(result, &name);
  throw Error("fusec: CUDA error in " + std::string(call) + " for " + context +
              ": " + name);
}

std::string Device::arch() const {
  // Hopper's own instructions (wgmma, setmaxnreg) need the `a` variant.
  return "sm_" + std::to_string(major) + std::to_string(minor) +
         (major == 9 && minor == 0 ? "a" : "");
}

Device &device() {
  const LoadedDevice &loaded = loadedDevice();
  if (!loaded.error.empty())
    throw Error("fusec: the CUDA target is unavailable: " + loaded.error);
  return const_cast<Device &>(loaded.device);
}

std::string unavailableReason() { return loadedDevice().error; }

std::string nvrtcUnavailableReason() { return loadedNvrtc().error; }

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  nvrtc().nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string compileCuda(const std::string &source, const std::string &arch,
                        const std::vector<std::string> &options, bool ptx) {
  const Nvrtc &n = nvrtc();
  nvrtcProgram program = nullptr;
  int status = n.nvrtcCreateProgram(&program, source.c_str(),
                                    "fusec_kernels.cu", 0, nullptr, nullptr);
  if (status != 0)
    throw Error(std::string("fusec: nvrtcCreateProgram failed: ") +
                n.nvrtcGetErrorString(status));
  std::vector<std::string> arguments = {
      (ptx ? "--gpu-architecture=compute_" : "--gpu-architecture=sm_") +
          arch.substr(3),
      "--std=c++17"};
  arguments.insert(arguments.end(), options.begin(), options.end());
  std::vector<const char *> argv;
  for (const std::string &argument : arguments)
    argv.push_back(argument.c_str());
  status = n.nvrtcCompileProgram(program, static_cast<int>(argv.size()),
                                 argv.data());
  size_t logSize = 0;
  n.nvrtcGetProgramLogSize(program, &logSize);
  std::string log(logSize, '\0');
  if (logSize)
    n.nvrtcGetProgramLog(program, log.data());
  std::string result;
  if (status == 0) {
    size_t size = 0;
    (ptx ? n.nvrtcGetPTXSize : n.nvrtcGetCUBINSize)(program, &size);
    result.resize(size);
    (ptx ? n.nvrtcGetPTX : n.nvrtcGetCUBIN)(program, result.data());
    if (ptx && !result.empty() && result.back() == '\0')
      result.pop_back(); // PTX comes NUL-terminated
  }
  n.nvrtcDestroyProgram(&program);
  if (status != 0)
    throw Error(std::string("fusec: NVRTC failed (") +
                n.nvrtcGetErrorString(status) + ") for " + arch + ":\n" + log);
  return result;
}

} // namespace fusec::cuda
