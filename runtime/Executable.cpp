//===- Executable.cpp - Running a Program ---------------------------------===//

#include "runtime/Executable.h"

#include "runtime/CompileProgress.h"
#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"
#include "runtime/cpu/HostExecutable.h"
#include "runtime/cuda/CudaExecutable.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace fusec {

Executable::Executable(Program program) : prog(std::move(program)) {
  auto internal = [&](const std::string &why) {
    return Error("fusec: internal error: the steps of '" + prog.name +
                 "': " + why);
  };
  std::vector<int> kernelRuns(prog.kernels.size()),
      matmulRuns(prog.matmuls.size());
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const Step &step = prog.steps[i];
    auto inRange = [&](size_t size, const char *what) {
      if (step.index < 0 || static_cast<size_t>(step.index) >= size)
        throw internal("step " + std::to_string(i) + " names " + what + " " +
                       std::to_string(step.index) + " of " +
                       std::to_string(size));
    };
    switch (step.kind) {
    case StepKind::Kernel:
      inRange(prog.kernels.size(), "kernel");
      ++kernelRuns[step.index];
      break;
    case StepKind::Matmul:
      inRange(prog.matmuls.size(), "matmul");
      ++matmulRuns[step.index];
      checkMatmulCall(prog.matmuls[step.index], prog.buffers, i);
      break;
    case StepKind::View:
      inRange(prog.buffers.size(), "buffer");
      if (prog.buffers[step.index].role != BufferRole::Alias)
        throw internal("step " + std::to_string(i) + " views '" +
                       prog.buffers[step.index].name + "', not an alias");
      break;
    }
  }
  for (size_t k = 0; k < kernelRuns.size(); ++k)
    if (kernelRuns[k] != 1)
      throw internal("kernel '" + prog.kernels[k].name + "' runs " +
                     std::to_string(kernelRuns[k]) + " times");
  for (size_t k = 0; k < matmulRuns.size(); ++k)
    if (matmulRuns[k] != 1)
      throw internal("matmul " + std::to_string(k) + " runs " +
                     std::to_string(matmulRuns[k]) + " times");
}

std::vector<size_t> Executable::matmulSteps() const {
  std::vector<size_t> steps(prog.matmuls.size());
  for (size_t i = 0; i < prog.steps.size(); ++i)
    if (prog.steps[i].kind == StepKind::Matmul)
      steps[prog.steps[i].index] = i;
  return steps;
}

void compileUnitsInParallel(const CompileUnits &units,
                            const std::string &threadName,
                            const std::string &what, size_t maxThreads,
                            const std::function<void(size_t)> &compileUnit) {
  size_t count = units.sources.size();
  if (count == 0)
    return;
  std::vector<std::exception_ptr> failures(count);
  {
    CompileProgress progress(what, count);
    std::atomic<size_t> next{0};
    auto compileUnits = [&](size_t thread) {
      trace::nameThisThread(threadName + " " + std::to_string(thread));
      for (size_t u; (u = next.fetch_add(1)) < count;) {
        try {
          const std::vector<std::string> &functions = units.functions[u];
          trace::Scope group(
              "kernels " + trace::shortList(functions), "compile",
              {{"group", double(u)},
               {"kernels", trace::shortList(functions, functions.size())}});
          compileUnit(u);
        } catch (...) {
          failures[u] = std::current_exception();
        }
        progress.groupDone();
      }
    };
    std::vector<std::thread> compilers;
    size_t threads = std::clamp<size_t>(maxThreads, 1, count);
    try {
      for (size_t t = 0; t < threads; ++t)
        compilers.emplace_back(compileUnits, t);
    } catch (...) {
      // No thread to spare: the started ones take the rest of the units.
      if (compilers.empty())
        compileUnits(0);
    }
    for (std::thread &compiler : compilers)
      compiler.join();
  }
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
}

void Executable::runOnDevice(const std::vector<DeviceTensor> &inputs,
                             const std::vector<DeviceTensor> &outputs) {
  enqueueOnDevice(inputs, outputs);
  synchronize();
}

void Executable::enqueueOnDevice(const std::vector<DeviceTensor> &,
                                 const std::vector<DeviceTensor> &, void *) {
  throw Error("fusec: '" + prog.name +
              "' runs on the cpu: only CUDA models run on device tensors");
}

void Executable::checkInputs(const std::vector<Tensor> &inputs) const {
  if (inputs.size() != prog.inputs.size())
    throw Error("fusec: '" + prog.name + "' takes " +
                std::to_string(prog.inputs.size()) + " inputs but got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BufferDesc &expected = prog.buffers[prog.inputs[i]];
    const Tensor &given = inputs[i];
    if (given.dtype != expected.dtype || given.shape != expected.shape)
      throw Error("fusec: input '" + expected.name + "' expects " +
                  dtypeName(expected.dtype) + "[" +
                  formatShape(expected.shape) + "] but got " +
                  given.typeString());
    if (static_cast<int64_t>(given.bytes.size()) != expected.byteSize())
      throw Error("fusec: input '" + expected.name + "' holds " +
                  std::to_string(given.bytes.size()) + " bytes, expected " +
                  std::to_string(expected.byteSize()));
  }
}

std::vector<Tensor> Executable::run(const std::vector<Tensor> &inputs) {
  std::vector<Tensor> outputs;
  run(inputs, outputs);
  return outputs;
}

void Executable::prepareOutputs(std::vector<Tensor> &outputs) const {
  outputs.resize(prog.outputs.size());
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    const BufferDesc &buffer = prog.buffers[prog.outputs[i]];
    if (outputs[i].dtype != buffer.dtype || outputs[i].shape != buffer.shape ||
        static_cast<int64_t>(outputs[i].bytes.size()) != buffer.byteSize())
      outputs[i] = Tensor(buffer.dtype, buffer.shape);
  }
}

std::shared_ptr<Executable> makeExecutable(Program program,
                                           std::shared_ptr<KernelCache> cache,
                                           const CudaOptions &cudaOptions) {
  if (program.target == Target::Cuda)
    return std::make_shared<CudaExecutable>(std::move(program),
                                            std::move(cache), cudaOptions);
  return std::make_shared<HostExecutable>(std::move(program), std::move(cache));
}

std::shared_ptr<Executable>
makeExecutable(Program program, std::shared_ptr<const ExecutableImage> image) {
  if (program.target == Target::Cuda)
    return std::make_shared<CudaExecutable>(std::move(program),
                                            std::move(image));
  return std::make_shared<HostExecutable>(std::move(program), std::move(image));
}

} // namespace fusec
