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
  std::shared_ptr<Executable> instance = make(instantiateProgram(prog, sizes));
  recency.push_front(sizes);
  return *instances.emplace(sizes, std::move(instance)).first->second;
}

void SymbolicExecutable::addSpecialization(
    int symbol, int64_t size, std::shared_ptr<Executable> executable) {
  specializations.push_back({symbol, size, std::move(executable)});
}

Executable &
SymbolicExecutable::instanceForShapes(const std::vector<Shape> &shapes) {
  std::vector<int64_t> sizes;
  try {
    sizes = bindDimSizes(prog, shapes);
  } catch (const Error &error) {
    throw Error("fusec: '" + prog.name + "': " + error.what());
  }
  for (const Specialization &special : specializations)
    if (sizes[special.symbol] == special.size)
      return *special.executable;
  return instanceFor(sizes);
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
  auto remember = [&](const std::shared_ptr<Executable> &held) {
    if (held.get() == &instance &&
        std::find(pending.begin(), pending.end(), held) == pending.end())
      pending.push_back(held);
  };
  for (auto &[sizes, held] : instances)
    remember(held);
  for (const Specialization &special : specializations)
    remember(special.executable);
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
