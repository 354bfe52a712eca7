
#include <algorithm>
#include <string>

#include <cuda.h>
#include <nvrtc.h>

namespace repro {

inline void checkCuda(CUresult status, const char *call) {
  if (status == CUDA_SUCCESS)
    return;
  const char *message = nullptr;
  cuGetErrorString(status, &message);
  std::fprintf(stderr, "%s failed: %s\n", call, message ? message : "?");
  std::exit(3);
}
#define REPRO_CU(call) repro::checkCuda((call), #call)

inline void checkNvrtc(nvrtcResult status, const char *call) {
  if (status == NVRTC_SUCCESS)
    return;
  std::fprintf(stderr, "%s failed: %s\n", call, nvrtcGetErrorString(status));
  std::exit(3);
}
#define REPRO_NVRTC(call) repro::checkNvrtc((call), #call)

inline std::string readFile(const char *path) {
  FILE *file = std::fopen(path, "rb");
  if (!file) {
    std::fprintf(stderr, "cannot read %s\n", path);
    std::exit(2);
  }
  std::string text;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, file)) > 0;)
    text.append(chunk, n);
  std::fclose(file);
  return text;
}

// Compiles the kernels' source with NVRTC for this GPU, as the runtime does
// (sm_XY, sm_90a on Hopper, C++17), and loads the cubin.
inline CUmodule loadKernels(const std::string &source, CUdevice device,
                            const char *arithmeticOption) {
  int major = 0, minor = 0;
  REPRO_CU(cuDeviceGetAttribute(
      &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  REPRO_CU(cuDeviceGetAttribute(
      &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  std::string arch = "--gpu-architecture=sm_" + std::to_string(major) +
                     std::to_string(minor) +
                     (major == 9 && minor == 0 ? "a" : "");
  std::vector<const char *> options = {arch.c_str(), "--std=c++17"};
  options.push_back(arithmeticOption);
  nvrtcProgram program = nullptr;
  REPRO_NVRTC(nvrtcCreateProgram(&program, source.c_str(), "fusec_kernels.cu",
                                 0, nullptr, nullptr));
  nvrtcResult compiled =
      nvrtcCompileProgram(program, (int)options.size(), options.data());
  size_t logSize = 0;
  nvrtcGetProgramLogSize(program, &logSize);
  if (compiled != NVRTC_SUCCESS && logSize > 1) {
    std::string log(logSize, '\0');
    nvrtcGetProgramLog(program, &log[0]);
    std::fprintf(stderr, "%s\n", log.c_str());
  }
  REPRO_NVRTC(compiled);
  size_t cubinSize = 0;
  REPRO_NVRTC(nvrtcGetCUBINSize(program, &cubinSize));
  std::string cubin(cubinSize, '\0');
  REPRO_NVRTC(nvrtcGetCUBIN(program, &cubin[0]));
  nvrtcDestroyProgram(&program);
  CUmodule module = nullptr;
  REPRO_CU(cuModuleLoadData(&module, cubin.data()));
  return module;
}

// Device memory holding a copy of a host buffer, or filled.
struct DeviceBuffer {
  CUdeviceptr address = 0;
  int64_t bytes = 0;
  DeviceBuffer(int64_t bytes, const void *host) : bytes(bytes) {
    REPRO_CU(cuMemAlloc(&address, (size_t)std::max<int64_t>(bytes, 1)));
    if (bytes > 0)
      REPRO_CU(cuMemcpyHtoD(address, host, (size_t)bytes));
  }
  // Filled with `byte` (0xff: outputs, 0: scratch).
  DeviceBuffer(int64_t bytes, unsigned char byte) : bytes(bytes) {
    REPRO_CU(cuMemAlloc(&address, (size_t)std::max<int64_t>(bytes, 1)));
    REPRO_CU(cuMemsetD8(address, byte, (size_t)std::max<int64_t>(bytes, 1)));
  }
  ~DeviceBuffer() { cuMemFree(address); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void copyTo(HostBuffer &host) const {
    if (bytes > 0)
      REPRO_CU(cuMemcpyDtoH(host.data, address, (size_t)bytes));
  }
};

} // namespace repro
