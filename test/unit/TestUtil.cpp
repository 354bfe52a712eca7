#include "TestUtil.h"

#include "ReferenceOps.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace fusec::test {

/// The build tree's cache, unless FUSEC_TEST_CACHE_DIR names another (the
/// staged binaries run on a machine without this build tree).
static std::string testCacheDir() {
  const char *dir = std::getenv("FUSEC_TEST_CACHE_DIR");
  return dir && *dir ? dir : FUSEC_TEST_CACHE_DIR;
}

CompileOptions testOptions(bool fuse, Target target) {
  CompileOptions options;
  options.fuse = fuse;
  options.target = target;
  options.cacheDir = testCacheDir();
  return options;
}

DeviceCopy::DeviceCopy(const Tensor &tensor)
    : dtype(tensor.dtype), shape(tensor.shape) {
  cuda::CUdeviceptr device = 0;
  cuda::check(cuda::driver().cuMemAlloc(
                  &device, std::max<size_t>(tensor.bytes.size(), 1)),
              "cuMemAlloc", "test");
  address = device;
  upload(tensor);
}

DeviceCopy::~DeviceCopy() { cuda::driver().cuMemFree(address); }

void DeviceCopy::upload(const Tensor &tensor) {
  if (!tensor.bytes.empty())
    cuda::check(cuda::driver().cuMemcpyHtoDAsync(address, tensor.data(),
                                                 tensor.bytes.size(),
                                                 cuda::device().stream),
                "cuMemcpyHtoDAsync", "test");
  cuda::check(cuda::driver().cuStreamSynchronize(cuda::device().stream),
              "cuStreamSynchronize", "test");
}

Tensor DeviceCopy::download() const {
  Tensor host(dtype, shape);
  if (!host.bytes.empty())
    cuda::check(cuda::driver().cuMemcpyDtoHAsync(host.data(), address,
                                                 host.bytes.size(),
                                                 cuda::device().stream),
                "cuMemcpyDtoHAsync", "test");
  cuda::check(cuda::driver().cuStreamSynchronize(cuda::device().stream),
              "cuStreamSynchronize", "test");
  return host;
}

void skip(const std::string &reason) {
  if (std::getenv("FUSEC_TEST_SKIP_EXIT")) {
    std::printf("skipped: %s\n", reason.c_str());
    std::fflush(stdout);
    std::_Exit(77);
  }
  WARN("skipped: " << reason);
}

void compileForGpus(const Graph &graph, bool everyVariant) {
  if (!cuda::nvrtcUnavailableReason().empty())
    return;
  std::shared_ptr<KernelCache> cache =
      KernelCache::forDirectory(testCacheDir());
  for (bool fuse : {true, false}) {
    if (!fuse && !everyVariant)
      continue;
    for (const char *arch : {"sm_90a", "sm_80"}) {
      if (!everyVariant && std::string(arch) != "sm_90a")
        continue;
      INFO("NVRTC for " << arch << (fuse ? ", fused" : ", unfused"));
      // Scheduled for the arch (sm_90a's kernels use its own instructions).
      CompileOptions options = testOptions(fuse, Target::Cuda);
      options.gpuArch = arch;
      Program program = lowerGraph(graph, options).program;
      CHECK_NOTHROW(cache->loadCubin(program.source, arch, {}));
    }
  }
}

void appendRenamedGraph(Graph &merged, const Graph &graph,
                        const std::string &prefix) {
  auto rename = [&](std::string &name) {
    if (!name.empty()) // "" marks an absent optional input
      name = prefix + name;
  };
  for (GraphInput input : graph.inputs) {
    rename(input.name);
    merged.inputs.push_back(std::move(input));
  }
  for (GraphConstant constant : graph.constants) {
    rename(constant.name);
    merged.constants.push_back(std::move(constant));
  }
  for (GraphNode node : graph.nodes) {
    rename(node.name);
    for (std::string &input : node.inputs)
      rename(input);
    for (std::string &output : node.outputs)
      rename(output);
    merged.nodes.push_back(std::move(node));
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    std::string output = graph.outputs[i], name = graph.outputName(i);
    rename(output);
    rename(name);
    merged.outputs.push_back(std::move(output));
    merged.outputNames.push_back(std::move(name));
  }
}

std::string freshTempDir(const std::string &stem) {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/fusec-" + stem + "-XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw Error("cannot create a temp dir from " + pattern);
  return pattern;
}

std::string describeMismatch(const Tensor &actual, const Tensor &expected,
                             const Comparison &comparison) {
  std::ostringstream os;
  os.precision(9);
  os << comparison.mismatches << " mismatches, max abs error "
     << comparison.maxAbsError << ", max rel error " << comparison.maxRelError;
  if (comparison.firstMismatch >= 0)
    os << "; first at element " << comparison.firstMismatch << ": got "
       << actual.at(comparison.firstMismatch) << ", expected "
       << expected.at(comparison.firstMismatch);
  return os.str();
}

std::vector<int64_t> specialInts(DType dtype) {
  int64_t low = ref::intMin(dtype), high = ref::intMax(dtype);
  return {0, 1, -1, 2, -2, 3, -3, 7, -7, 64, low, low + 1, high, high - 1};
}

} // namespace fusec::test
