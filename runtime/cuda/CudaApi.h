//===- CudaApi.h - The CUDA driver and NVRTC, loaded on first use -*- C++
//-*-===//
//
// Nothing links libcuda or libnvrtc at build time: both are dlopen'ed the
// first time they are needed and their entry points resolved by name, so the
// same binary runs on machines without a GPU or without CUDA, and says why
// the CUDA target is unavailable there.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CUDA_CUDAAPI_H
#define FUSEC_RUNTIME_CUDA_CUDAAPI_H

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
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
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

/// CU_MEMHOSTALLOC_DEVICEMAP: page-locked host memory kernels can address.
constexpr unsigned kMemHostAllocDeviceMap = 0x02;
/// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: a capture only sees this thread.
constexpr int kStreamCaptureModeThreadLocal = 1;
/// CU_STREAM_NON_BLOCKING: fusec's stream does not wait for the legacy
/// default stream (nor it for fusec's); a launch on a blocking stream cost
/// 0.6 us more per synchronized run (H200). Runs on the caller's device
/// tensors are ordered with the caller's stream (by default the legacy
/// default stream) by events instead (orderAfterStream, orderStreamAfter).
constexpr unsigned kStreamNonBlocking = 0x1;
/// CU_STREAM_LEGACY: the legacy default stream, where callers that name no
/// stream (a cudaMemcpy, PyTorch's default) put their work.
inline CUstream legacyDefaultStream() {
  return reinterpret_cast<CUstream>(0x1);
}
/// CU_STREAM_WAIT_VALUE_GEQ: a stream wait ends once the word is >= value.
constexpr unsigned kStreamWaitValueGeq = 0x0;
/// CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, in bytes.
constexpr int kDeviceAttributeL2CacheSize = 38;
/// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, in bytes.
constexpr int kDeviceAttributeMaxSharedPerBlockOptin = 97;
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: a kernel may launch with
/// more than the default 48 KiB of dynamic shared memory only up to this.
constexpr int kFunctionAttributeMaxDynamicSharedBytes = 8;
/// Dynamic shared memory any kernel may launch with, without opting in.
constexpr unsigned kDefaultDynamicSharedBytes = 48 * 1024;
/// CU_EVENT_DISABLE_TIMING: an event for ordering only, cheaper to record.
constexpr unsigned kEventDisableTiming = 0x2;

/// CUlaunchAttribute, as the ABI lays it out: an id padded to 8 bytes and
/// a 64-byte union of values, of which fusec sets one int.
struct LaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union alignas(8) {
    char bytes[64];
    int flag;
  } value = {};
};
static_assert(sizeof(LaunchAttribute) == 72 && alignof(LaunchAttribute) == 8);
/// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the kernel waits
/// for its predecessor in the stream itself (griddepcontrol.wait), so it
/// may start while that kernel's last blocks still run.
constexpr int kLaunchAttributeProgrammaticStreamSerialization = 6;
/// CUlaunchConfig.
struct LaunchConfig {
  unsigned gridX = 1, gridY = 1, gridZ = 1;
  unsigned blockX = 1, blockY = 1, blockZ = 1;
  unsigned sharedBytes = 0;
  CUstream stream = nullptr;
  LaunchAttribute *attributes = nullptr;
  unsigned attributeCount = 0;
};
static_assert(offsetof(LaunchConfig, stream) == 32 &&
              offsetof(LaunchConfig, attributes) == 40 &&
              sizeof(LaunchConfig) == 56);

/// The driver entry points fusec uses: (name, return, parameters,
/// versioned). A versioned entry point is resolved as `name_v2` first.
#define FUSEC_CUDA_DRIVER_ENTRY_POINTS(X)                                      \
  X(cuInit, (unsigned), false)                                                 \
  X(cuDeviceGetCount, (int *), false)                                          \
  X(cuDeviceGet, (CUdevice *, int), false)                                     \
  X(cuDeviceGetAttribute, (int *, int, CUdevice), false)                       \
  X(cuDeviceGetName, (char *, int, CUdevice), false)                           \
  X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice), false)                  \
  X(cuCtxSetCurrent, (CUcontext), false)                                       \
  X(cuCtxGetCurrent, (CUcontext *), false)                                     \
  X(cuModuleLoadData, (CUmodule *, const void *), false)                       \
  X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *), false)        \
  X(cuFuncSetAttribute, (CUfunction, int, int), false)                         \
  X(cuLaunchKernelEx, (const LaunchConfig *, CUfunction, void **, void **),    \
    false)                                                                     \
  X(cuMemAlloc, (CUdeviceptr *, size_t), true)                                 \
  X(cuMemFree, (CUdeviceptr), true)                                            \
  X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream), false)    \
  X(cuMemcpyHtoDAsync, (CUdeviceptr, const void *, size_t, CUstream), true)    \
  X(cuMemcpyDtoHAsync, (void *, CUdeviceptr, size_t, CUstream), true)          \
  X(cuMemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream), true)     \
  X(cuStreamCreate, (CUstream *, unsigned), false)                             \
  X(cuStreamSynchronize, (CUstream), false)                                    \
  X(cuStreamWriteValue32, (CUstream, CUdeviceptr, unsigned, unsigned), true)   \
  X(cuStreamWaitValue32, (CUstream, CUdeviceptr, unsigned, unsigned), true)    \
  X(cuStreamWaitEvent, (CUstream, CUevent, unsigned), false)                   \
  X(cuEventCreate, (CUevent *, unsigned), false)                               \
  X(cuEventDestroy, (CUevent), true)                                           \
  X(cuEventRecord, (CUevent, CUstream), false)                                 \
  X(cuEventSynchronize, (CUevent), false)                                      \
  X(cuEventElapsedTime, (float *, CUevent, CUevent), true)                     \
  X(cuMemAllocHost, (void **, size_t), true)                                   \
  X(cuMemFreeHost, (void *), false)                                            \
  X(cuMemHostAlloc, (void **, size_t, unsigned), false)                        \
  X(cuMemHostGetDevicePointer, (CUdeviceptr *, void *, unsigned), true)        \
  X(cuStreamBeginCapture, (CUstream, int), true)                               \
  X(cuStreamEndCapture, (CUstream, CUgraph *), false)                          \
  X(cuGraphInstantiateWithFlags, (CUgraphExec *, CUgraph, unsigned long long), \
    false)                                                                     \
  X(cuGraphLaunch, (CUgraphExec, CUstream), false)                             \
  X(cuGraphExecDestroy, (CUgraphExec), false)                                  \
  X(cuGraphDestroy, (CUgraph), false)                                          \
  X(cuGetErrorName, (CUresult, const char **), false)

struct Driver {
#define FUSEC_DRIVER_FIELD(name, parameters, versioned)                        \
  CUresult(*name) parameters = nullptr;
  FUSEC_CUDA_DRIVER_ENTRY_POINTS(FUSEC_DRIVER_FIELD)
#undef FUSEC_DRIVER_FIELD
};

/// The loaded driver, or throws fusec::Error saying why there is none.
const Driver &driver();

/// Throws fusec::Error naming the failed call and what it was doing
/// ("cuMemAlloc for buffer 't3' (256 MiB): CUDA_ERROR_OUT_OF_MEMORY").
[[noreturn]] void fail(CUresult result, const char *call,
                       const std::string &context);
inline void check(CUresult result, const char *call,
                  const std::string &context) {
  if (result != 0)
    fail(result, call, context);
}
/// The same, describing the context only on failure: for the calls of
/// every run, where building the message each time would cost more than
/// the call.
template <typename Describe,
          typename = std::enable_if_t<std::is_invocable_v<Describe>>>
inline void check(CUresult result, const char *call, Describe &&describe) {
  if (result != 0)
    fail(result, call, describe());
}

/// The device fusec runs on (device 0), its context made current.
struct Device {
  CUdevice handle = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int multiprocessors = 0;
  int major = 0, minor = 0;
  /// Shared memory one block may use when its kernel opts in.
  int maxSharedBytesPerBlock = 0;
  std::string name;
  /// A word of mapped host memory that the stream writes when a wait is
  /// asked for (finishStream); null where it could not be allocated.
  volatile uint32_t *completionFlag = nullptr;
  CUdeviceptr completionFlagOnDevice = 0;
  /// Marks in the caller's stream and in fusec's stream, for ordering the
  /// two around a run on the caller's device tensors.
  CUevent callerStreamMark = nullptr, fusecStreamMark = nullptr;
  /// The NVRTC architecture for this device: sm_90a on Hopper, else sm_XY.
  std::string arch() const;
};

/// The device, initialized on first use; throws fusec::Error when there is
/// no usable GPU. Makes its (primary) context current on the calling
/// thread, so a model compiled on one thread runs on any other.
Device &device();

/// Held by whatever queues work on fusec's stream, captures it or waits
/// for it: a capture takes in every call on the stream from any thread
/// while it lasts, and waiting on a capturing stream is an error, so two
/// threads running models at the same time take turns. Recursive (a run
/// holds it around the waits it makes); taking it makes fusec's context
/// current on the calling thread (device()).
class StreamLock {
public:
  StreamLock();
  /// fusec's device and stream, usable while this lock is held.
  Device &lockedDevice() const { return device; }
  CUstream stream() const { return device.stream; }

private:
  std::lock_guard<std::recursive_mutex> lock;
  Device &device;
};

/// Waits until everything queued on fusec's stream has run and returns
/// what cuStreamSynchronize would. A short run ends sooner than with
/// cuStreamSynchronize alone: the stream writes a ticket into mapped host
/// memory, which this spins on for up to 50 us before it waits with
/// cuStreamSynchronize (which also reports the errors of a failed run).
/// Measured on an H200 with a one-kernel graph: 7.5 us per run against 8.2.
CUresult finishStream();

/// Work queued on fusec's stream from now on runs after what the caller
/// queued on `caller` so far (the device tensors it made there are ready).
void orderAfterStream(CUstream caller);
/// Work the caller queues on `caller` from now on runs after what fusec
/// queued so far (it may read the outputs there).
void orderStreamAfter(CUstream caller);

/// The device's NVRTC architecture (Device::arch), known once the driver
/// is initialized and before the context exists: kernels compile while the
/// context is created. Throws fusec::Error when there is no usable GPU.
std::string deviceArch();

/// `arch` without its arch-specific features ("sm_90a" -> "sm_90"): what
/// later GPUs' PTX is compiled for.
std::string plainArch(std::string arch);

/// Why the CUDA target cannot run here (no driver, no GPU), or "" when a
/// GPU is there; needs only the driver's first stage, not the context.
std::string unavailableReason();

/// Starts initializing the driver and the device's context, NVRTC (with a
/// trivial first compile) and cuBLASLt (its handle once the context
/// exists), each on a thread of its own (each takes 100-300 ms on a cold
/// start), so that a model's import and passes run beside them; whatever
/// needs one waits for it. Does nothing after the first call.
void startInitializingInBackground();
/// Waits until the background initializers have finished. A process must
/// not begin to exit while one runs: the libraries' own exit handlers
/// (registered as they load, so run before the initializers are joined)
/// would tear NVRTC down under its warm-up compile. Called where an error
/// leaves fusec's entry points (compile, compileFile, the CLI's main).
void waitForBackgroundInitialization();

/// Why NVRTC cannot be used here, or "" when it can.
std::string nvrtcUnavailableReason();

/// NVRTC's version as "13.0".
std::string nvrtcVersion();

/// The NVRTC options fusec compiles kernels with.
std::vector<std::string> nvrtcOptions(bool fastMath);
/// The one of them that decides how kernels round: --use_fast_math, or
/// --fmad=false (a multiply and an add round separately, as ONNX's ops do).
/// Kernel repros compile with it too.
const char *nvrtcArithmeticOption(bool fastMath);

/// Compiles CUDA C with NVRTC for `arch` (e.g. "sm_90a") into a cubin (or
/// PTX when `ptx` is true). Throws fusec::Error with the NVRTC log.
std::string compileCuda(const std::string &source, const std::string &arch,
                        const std::vector<std::string> &options, bool ptx);

} // namespace fusec::cuda

#endif
