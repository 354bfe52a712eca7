//===- CudaApi.h - The CUDA driver and NVRTC, loaded on first use -*- C++
//-*-===//
//
// Nothing links libcuda or libnvrtc at build time: both are dlopen'ed the
// first time they are needed and their entry points resolved by name, so the
// same binary runs on machines without a GPU or without CUDA, and says why
// the CUDA target is unavailable there.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CUDAAPI_H
#define FUSEC_RUNTIME_CUDAAPI_H

#include <cstddef>
#include <string>
#include <vector>

namespace fusec::cuda {

// The driver API's types, as the ABI defines them (no cuda.h needed).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char **);
};

/// The loaded driver, or throws fusec::Error saying why there is none.
const Driver &driver();

/// Throws fusec::Error naming the failed call and what it was doing
/// ("cuMemAlloc for buffer 't3' (256 MiB): CUDA_ERROR_OUT_OF_MEMORY").
void check(CUresult result, const char *call, const std::string &context);

/// The device fusec runs on (device 0), its context made current.
struct Device {
  CUdevice handle = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int multiprocessors = 0;
  int major = 0, minor = 0;
  std::string name;
  /// The NVRTC architecture for this device: sm_90a on Hopper, else sm_XY.
  std::string arch() const;
};

/// The device, initialized on first use; throws fusec::Error when there is
/// no usable GPU.
Device &device();

/// Why the CUDA target cannot run here, or "" when a GPU is usable.
std::string unavailableReason();

/// Why NVRTC cannot be used here, or "" when it can.
std::string nvrtcUnavailableReason();

/// NVRTC's version as "13.0".
std::string nvrtcVersion();

/// Compiles CUDA C with NVRTC for `arch` (e.g. "sm_90a") into a cubin (or
/// PTX when `ptx` is true). Throws fusec::Error with the NVRTC log.
std::string compileCuda(const std::string &source, const std::string &arch,
                        const std::vector<std::string> &options, bool ptx);

} // namespace fusec::cuda

#endif
