#include "runtime/cuda/CudaApi.h"

#include "runtime/core/DynamicLibrary.h"
#include "runtime/core/Error.h"
#include "runtime/cuda/CublasLt.h"

#include "runtime/core/Trace.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

namespace fusec::cuda {

namespace {

constexpr int kAttributeMultiprocessors = 16;
constexpr int kAttributeMajor = 75;
constexpr int kAttributeMinor = 76;

using dynlib::LoadedLibrary;
using dynlib::loadLibrary;
using dynlib::resolve;

const LoadedLibrary<Driver> &loadedDriver() {
  static const LoadedLibrary<Driver> &loaded =
      *new LoadedLibrary<Driver>(loadLibrary<Driver>(
          {"libcuda.so.1", "libcuda.so"}, "the CUDA driver (libcuda.so.1)", "",
          [](void *library, Driver &api, std::string &missing) {
#define FUSEC_RESOLVE_DRIVER(name, parameters, versioned)                      \
  resolve(library, api.name, #name, versioned, missing);
            FUSEC_CUDA_DRIVER_ENTRY_POINTS(FUSEC_RESOLVE_DRIVER)
#undef FUSEC_RESOLVE_DRIVER
          }));
  return loaded;
}

struct LoadedDevice {
  Device device;
  std::string error;
};

/// Reports a failed call into `error`; true when it failed.
bool failedCall(const Driver &d, CUresult result, const char *call,
                std::string &error) {
  if (result == 0)
    return false;
  const char *name = "unknown";
  d.cuGetErrorName(result, &name);
  error = std::string(call) + " failed: " + name;
  return true;
}

/// The first stage: the driver and what the device is (its architecture),
/// which the kernels' compile needs; no context yet.
LoadedDevice identifyDevice() {
  LoadedDevice loaded;
  const LoadedLibrary<Driver> &driver = loadedDriver();
  if (!driver.error.empty()) {
    loaded.error = driver.error;
    return loaded;
  }
  const Driver &d = driver.api;
  auto failed = [&](CUresult result, const char *call) {
    return failedCall(d, result, call, loaded.error);
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
      failed(d.cuDeviceGetAttribute(&device.maxSharedBytesPerBlock,
                                    kDeviceAttributeMaxSharedPerBlockOptin,
                                    device.handle),
             "cuDeviceGetAttribute"))
    return loaded;
  device.name = name;
  return loaded;
}

const LoadedDevice &identifiedDevice() {
  static const LoadedDevice &identified = *new LoadedDevice(identifyDevice());
  return identified;
}

/// The second stage: the device's primary context and fusec's stream.
LoadedDevice initDevice() {
  LoadedDevice loaded = identifiedDevice();
  if (!loaded.error.empty())
    return loaded;
  const Driver &d = loadedDriver().api;
  Device &device = loaded.device;
  auto failed = [&](CUresult result, const char *call) {
    return failedCall(d, result, call, loaded.error);
  };
  if (failed(d.cuDevicePrimaryCtxRetain(&device.context, device.handle),
             "cuDevicePrimaryCtxRetain") ||
      failed(d.cuCtxSetCurrent(device.context), "cuCtxSetCurrent") ||
      failed(d.cuStreamCreate(&device.stream, kStreamNonBlocking),
             "cuStreamCreate") ||
      failed(d.cuEventCreate(&device.callerStreamMark, kEventDisableTiming),
             "cuEventCreate") ||
      failed(d.cuEventCreate(&device.fusecStreamMark, kEventDisableTiming),
             "cuEventCreate"))
    return loaded;
  // Without the flag, finishStream waits with cuStreamSynchronize alone.
  void *flag = nullptr;
  if (d.cuMemHostAlloc(&flag, sizeof(uint32_t), kMemHostAllocDeviceMap) == 0) {
    if (d.cuMemHostGetDevicePointer(&device.completionFlagOnDevice, flag, 0) ==
        0) {
      device.completionFlag = static_cast<volatile uint32_t *>(flag);
      *device.completionFlag = 0;
    } else {
      d.cuMemFreeHost(flag);
    }
  }
  return loaded;
}

const LoadedDevice &loadedDevice() {
  static const LoadedDevice &loaded = *new LoadedDevice(initDevice());
  return loaded;
}

//===----------------------------------------------------------------------===//
// NVRTC
//===----------------------------------------------------------------------===//

using nvrtcProgram = struct _nvrtcProgram *;
/// The NVRTC entry points fusec uses: (name, return, parameters).
#define FUSEC_NVRTC_ENTRY_POINTS(X)                                            \
  X(nvrtcVersion, int, (int *, int *))                                         \
  X(nvrtcCreateProgram, int,                                                   \
    (nvrtcProgram *, const char *, const char *, int, const char *const *,     \
     const char *const *))                                                     \
  X(nvrtcCompileProgram, int, (nvrtcProgram, int, const char *const *))        \
  X(nvrtcGetProgramLogSize, int, (nvrtcProgram, size_t *))                     \
  X(nvrtcGetProgramLog, int, (nvrtcProgram, char *))                           \
  X(nvrtcGetCUBINSize, int, (nvrtcProgram, size_t *))                          \
  X(nvrtcGetCUBIN, int, (nvrtcProgram, char *))                                \
  X(nvrtcGetPTXSize, int, (nvrtcProgram, size_t *))                            \
  X(nvrtcGetPTX, int, (nvrtcProgram, char *))                                  \
  X(nvrtcDestroyProgram, int, (nvrtcProgram *))                                \
  X(nvrtcGetErrorString, const char *, (int))

struct Nvrtc {
#define FUSEC_NVRTC_FIELD(name, result, parameters)                            \
  result(*name) parameters = nullptr;
  FUSEC_NVRTC_ENTRY_POINTS(FUSEC_NVRTC_FIELD)
#undef FUSEC_NVRTC_FIELD
};

std::vector<std::string> nvrtcCandidates() {
  std::vector<std::string> names;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(variable); root && *root)
      names.push_back(std::string(root) + "/lib64/libnvrtc.so");
  for (const char *name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                           "/usr/local/cuda/lib64/libnvrtc.so.13",
                           "/usr/local/cuda/lib64/libnvrtc.so.12",
                           "/usr/local/cuda/lib64/libnvrtc.so"})
    names.push_back(name);
  return names;
}

const LoadedLibrary<Nvrtc> &loadedNvrtc() {
  static const LoadedLibrary<Nvrtc> &loaded =
      *new LoadedLibrary<Nvrtc>(loadLibrary<Nvrtc>(
          nvrtcCandidates(), "NVRTC (libnvrtc.so)", "; set CUDA_HOME",
          [](void *library, Nvrtc &api, std::string &missing) {
#define FUSEC_RESOLVE_NVRTC(name, result, parameters)                          \
  resolve(library, api.name, #name, false, missing);
            FUSEC_NVRTC_ENTRY_POINTS(FUSEC_RESOLVE_NVRTC)
#undef FUSEC_RESOLVE_NVRTC
          }));
  return loaded;
}

const Nvrtc &nvrtc() {
  return loadedNvrtc().get("fusec: cannot compile CUDA: ");
}

} // namespace

const Driver &driver() {
  return loadedDriver().get("fusec: the CUDA target is unavailable: ");
}

void fail(CUresult result, const char *call, const std::string &context) {
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

namespace {
/// Spins for up to 50 us until the device has written at least `value`
/// (in wrapping order) to `flag`, a word of mapped host memory; false when
/// it has not by then.
bool spinUntilWritten(volatile uint32_t *flag, uint32_t value) {
  auto start = std::chrono::steady_clock::now();
  for (uint32_t spins = 1;; ++spins) {
    // Acquire: what the device wrote before the flag is read after it.
    uint32_t seen =
        __atomic_load_n(const_cast<const uint32_t *>(flag), __ATOMIC_ACQUIRE);
    if (int32_t(seen - value) >= 0)
      return true;
    if (spins % 256 == 0 && std::chrono::steady_clock::now() - start >
                                std::chrono::microseconds(50))
      return false;
  }
}
} // namespace

namespace {
std::recursive_mutex &streamMutex() {
  static std::recursive_mutex mutex;
  return mutex;
}
} // namespace

StreamLock::StreamLock() : lock(streamMutex()), device(cuda::device()) {}

CUresult finishStream() {
  StreamLock held;
  Device &d = held.lockedDevice();
  const Driver &api = driver();
  // Tickets are handed out after the caller's work was queued, so a ticket
  // at least ours means that work ran, whichever thread wrote it.
  static std::atomic<uint32_t> lastTicket{0};
  static std::atomic<bool> flagWrites{true};
  if (d.completionFlag && flagWrites.load(std::memory_order_relaxed)) {
    uint32_t ticket = lastTicket.fetch_add(1) + 1;
    if (api.cuStreamWriteValue32(d.stream, d.completionFlagOnDevice, ticket,
                                 0) != 0) {
      // Not supported here, or the stream failed: cuStreamSynchronize says
      // which; in the first case, later waits skip the flag.
      CUresult result = api.cuStreamSynchronize(d.stream);
      if (result == 0)
        flagWrites = false;
      return result;
    }
    if (spinUntilWritten(d.completionFlag, ticket))
      return 0;
  }
  return api.cuStreamSynchronize(d.stream);
}

void orderAfterStream(CUstream caller) {
  Device &d = device();
  const Driver &api = driver();
  check(api.cuEventRecord(d.callerStreamMark, caller), "cuEventRecord",
        "the caller's stream");
  check(api.cuStreamWaitEvent(d.stream, d.callerStreamMark, 0),
        "cuStreamWaitEvent", "fusec's stream after the caller's stream");
}

void orderStreamAfter(CUstream caller) {
  Device &d = device();
  const Driver &api = driver();
  check(api.cuEventRecord(d.fusecStreamMark, d.stream), "cuEventRecord",
        "fusec's stream");
  check(api.cuStreamWaitEvent(caller, d.fusecStreamMark, 0),
        "cuStreamWaitEvent", "the caller's stream after fusec's stream");
}

std::string deviceArch() {
  const LoadedDevice &identified = identifiedDevice();
  if (!identified.error.empty())
    throw Error("fusec: the CUDA target is unavailable: " + identified.error);
  return identified.device.arch();
}

std::string plainArch(std::string arch) {
  while (!arch.empty() &&
         !std::isdigit(static_cast<unsigned char>(arch.back())))
    arch.pop_back();
  return arch;
}

Device &device() {
  const LoadedDevice &loaded = loadedDevice();
  if (!loaded.error.empty())
    throw Error("fusec: the CUDA target is unavailable: " + loaded.error);
  Device &d = const_cast<Device &>(loaded.device);
  // A context is current per thread: the one that initialized the device
  // has it, a caller's worker thread does not (or has another).
  const Driver &api = driver();
  CUcontext current = nullptr;
  if (api.cuCtxGetCurrent(&current) != 0 || current != d.context)
    check(api.cuCtxSetCurrent(d.context), "cuCtxSetCurrent",
          "fusec's CUDA context on this thread");
  return d;
}

std::string unavailableReason() {
  // Identifying the device is enough to choose the target; a context that
  // then cannot be created is an error of its own (device()).
  return identifiedDevice().error;
}

namespace {

/// The background initializers still running.
std::mutex backgroundMutex;
std::condition_variable backgroundDone;
int backgroundRunning = 0;

/// Marks one background initializer done, whatever way it ends.
struct BackgroundInitializerDone {
  ~BackgroundInitializerDone() {
    std::lock_guard<std::mutex> lock(backgroundMutex);
    --backgroundRunning;
    backgroundDone.notify_all();
  }
};

} // namespace

void waitForBackgroundInitialization() {
  std::unique_lock<std::mutex> lock(backgroundMutex);
  backgroundDone.wait(lock, [] { return backgroundRunning == 0; });
}

void startInitializingInBackground() {
  // Three threads, as none waits for another. Joined at exit: the process
  // never ends inside a library's initialization. What they build is never
  // destroyed (the loaded libraries and the device are allocated once and
  // kept), as statics whose construction a thread completes after this
  // one are destroyed before it joins.
  struct Initializer {
    /// Counted before the threads start (members start in this order).
    bool counted = [] {
      std::lock_guard<std::mutex> lock(backgroundMutex);
      backgroundRunning += 3;
      return true;
    }();
    std::thread device{[] {
      BackgroundInitializerDone done;
      trace::nameThisThread("cuda init");
      {
        trace::Scope scope("initialize the CUDA driver", "load");
        identifiedDevice();
      }
      trace::Scope scope("create the device's context", "load");
      loadedDevice();
    }};
    std::thread compiler{[] {
      BackgroundInitializerDone done;
      trace::nameThisThread("nvrtc init");
      trace::Scope scope("load and warm up NVRTC", "load");
      // NVRTC's first compile in a process pays for its own start-up
      // (its builtins): a trivial one takes that off the model's.
      if (loadedNvrtc().error.empty()) {
        try {
          compileCuda("extern \"C\" __global__ void fusec_warm_up() {}",
                      "sm_80", nvrtcOptions(/*fastMath=*/false),
                      /*ptx=*/true);
        } catch (const Error &) {
          // The model's own compile reports what is wrong.
        }
      }
    }};
    std::thread library{[] {
      BackgroundInitializerDone done;
      trace::nameThisThread("cublaslt init");
      trace::Scope scope("load cuBLASLt, create its handle", "load");
      try {
        prepareCublasLt();
      } catch (const Error &) {
        // The model's first matmul reports what is wrong.
      }
    }};
    ~Initializer() {
      device.join();
      compiler.join();
      library.join();
    }
  };
  static Initializer initializer;
}

std::string nvrtcUnavailableReason() { return loadedNvrtc().error; }

/// NVRTC's major and minor version, asked once.
static std::pair<int, int> nvrtcVersionNumbers() {
  static const std::pair<int, int> version = [] {
    std::pair<int, int> numbers{0, 0};
    nvrtc().nvrtcVersion(&numbers.first, &numbers.second);
    return numbers;
  }();
  return version;
}

std::string nvrtcVersion() {
  // Part of every cubin cache key.
  auto [major, minor] = nvrtcVersionNumbers();
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtcOptions(bool fastMath) {
  std::vector<std::string> options;
  // Generated kernels use no textures, device-side launches or runtime
  // types: --minimal (NVRTC 12.4 on) leaves their headers out, 5-15 ms per
  // NVRTC program.
  if (loadedNvrtc().error.empty() &&
      nvrtcVersionNumbers() >= std::make_pair(12, 4))
    options.push_back("--minimal");
  options.push_back(nvrtcArithmeticOption(fastMath));
  return options;
}

const char *nvrtcArithmeticOption(bool fastMath) {
  // Kernels already call intrinsics under --fast-math (codegen); the flag
  // adds flush-to-zero, approximate division and square root, and lets a
  // multiply and an add contract into one fma. Without it each op rounds
  // its own result, as ONNX's Mul and Add (and the C++ target) do.
  return fastMath ? "--use_fast_math" : "--fmad=false";
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
