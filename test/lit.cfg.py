import os
import lit.formats

config.name = "fusec"
# bash: tests check exit codes with $?.
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["unit", "Inputs", "models", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.fusec_tools_dir), "test")

config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
config.environment["FUSEC_CACHE_DIR"] = config.fusec_test_cache_dir
for name in ("HOME", "CXX", "PATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
# The threads and OpenBLAS kernel a run uses: the suite must pass under any
# of them (e.g. OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=3), so a run under
# them tests what they change rather than lit's defaults.
for name in ("OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.environment["PATH"] = os.pathsep.join(
    [config.fusec_tools_dir,
     # fusec-generate, the KV-cache generation example
     os.path.join(os.path.dirname(config.fusec_tools_dir), "examples"),
     config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%examples", os.path.join(config.fusec_source_dir, "examples")))
config.substitutions.append(("%models", os.path.join(config.fusec_source_dir, "test", "models")))

# NVRTC compiles CUDA without a GPU; tests of --emit=ptx need it.
for nvrtc in ("/usr/local/cuda/lib64/libnvrtc.so",):
    if os.path.exists(nvrtc):
        config.available_features.add("nvrtc")

# A usable GPU (the CUDA driver finds a device): tests that run CUDA code
# need it, and tests of what happens without one exclude it.
def _has_cuda_device():
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return (driver.cuInit(0) == 0 and
            driver.cuDeviceGetCount(ctypes.byref(count)) == 0 and
            count.value > 0)

if _has_cuda_device():
    config.available_features.add("cuda-device")
