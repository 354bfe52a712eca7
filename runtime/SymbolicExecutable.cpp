//===- SymbolicExecutable.cpp - A symbolic Program, run at any size -------===//

#include "runtime/SymbolicExecutable.h"

#include "runtime/core/Error.h"
#include "runtime/core/Trace.h"

#include <algorithm>

namespace fusec {

SymbolicExecutable::SymbolicExecutable(
    Program program, std::function<std::shared_ptr<Executable>(Program)> make)
    : Executable(std::move(program)), make(std::move(make)) {}

Executable &SymbolicExecutable::instanceFor(const std::vector<int64_t> &sizes) {
  auto found = instances.find(sizes);
  if (found != instances.end()) {
    if (recency.front() != sizes) {
      recency.remove(sizes);
      recency.push_front(sizes);
    }
    return *found->second;
  }
  if (instances.size() >= kMaxInstances) {
    // Queued work of the evicted instance must finish before its buffers go.
    synchronize();
    instances.erase(recency.back());
    recency.pop_back();
  }
  trace::Scope scope("instantiate " + prog.name, "run");
  std::shared_ptr<Executable> instance =
      make(instantiateProgram(prog, sizes));
  recency.push_front(sizes);
  return *instances.emplace(sizes, std::move(instance)).first->second;
}

Executable &
SymbolicExecutable::instanceForShapes(const std::vector<Shape> &shapes) {
  try {
    return instanceFor(bindDimSizes(prog, shapes));
  } catch (const Error &error) {
    throw Error("fusec: '" + prog.name + "': " + error.what());
  }
}

static std::vector<Shape> shapesOf(const std::vector<Tensor> &tensors) {
  std::vector<Shape> shapes;
  for (const Tensor &tensor : tensors)
    shapes.push_back(tensor.shape);
  return shapes;
}

void SymbolicExecutable::run(const std::vector<Tensor> &inputs,
                             std::vector<Tensor> &outputs) {
  instanceForShapes(shapesOf(inputs)).run(inputs, outputs);
}

void SymbolicExecutable::runTimed(const std::vector<Tensor> &inputs,
                                  std::vector<Tensor> &outputs,
                                  std::vector<double> &stepMicros) {
  instanceForShapes(shapesOf(inputs)).runTimed(inputs, outputs, stepMicros);
}

void SymbolicExecutable::enqueueOnDevice(
    const std::vector<DeviceTensor> &inputs,
    const std::vector<DeviceTensor> &outputs, void *callerStream) {
  std::vector<Shape> shapes;
  for (const DeviceTensor &tensor : inputs)
    shapes.push_back(tensor.shape);
  Executable &instance = instanceForShapes(shapes);
  instance.enqueueOnDevice(inputs, outputs, callerStream);
  for (auto &[sizes, held] : instances)
    if (held.get() == &instance &&
        std::find(pending.begin(), pending.end(), held) == pending.end())
      pending.push_back(held);
}

void SymbolicExecutable::synchronize() {
  std::vector<std::shared_ptr<Executable>> queued;
  queued.swap(pending);
  for (const std::shared_ptr<Executable> &instance : queued)
    instance->synchronize();
}

ExecutableImage SymbolicExecutable::image() const {
  throw Error("fusec: '" + prog.name +
              "' has symbolic dims: a package holds a model compiled for "
              "fixed sizes (compile it with --input-shape)");
}

} // namespace fusec
