#include "runtime/Executable.h"

#include "runtime/Error.h"

#include <cstring>

namespace fusec {

HostExecutable::HostExecutable(Program program,
                               std::shared_ptr<KernelCache> cache)
    : Executable(std::move(program)) {
  if (!prog.kernels.empty()) {
    library = cache->loadHostLibrary(prog.source);
    for (const KernelDesc &kernel : prog.kernels)
      kernelFns.push_back(library->lookup(kernel.name));
  }
  // A temporary that is a graph output (the first time it is named) is
  // written straight into the output tensor; others get storage here.
  outputSlot.assign(prog.buffers.size(), -1);
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    int id = prog.outputs[i];
    if (prog.buffers[id].role == BufferRole::Temporary && outputSlot[id] < 0)
      outputSlot[id] = static_cast<int>(i);
  }
  temporaryStorage.resize(prog.buffers.size());
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role == BufferRole::Temporary && outputSlot[id] < 0)
      temporaryStorage[id].resize(prog.buffers[id].byteSize());
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

void HostExecutable::run(const std::vector<Tensor> &inputs,
                         std::vector<Tensor> &outputs) {
  checkInputs(inputs);
  prepareOutputs(outputs);

  // Where every buffer lives for this run (members: no allocation per run).
  address.assign(prog.buffers.size(), nullptr);
  for (size_t i = 0; i < prog.inputs.size(); ++i)
    address[prog.inputs[i]] = const_cast<void *>(inputs[i].data());
  for (size_t id = 0; id < prog.buffers.size(); ++id) {
    const BufferDesc &buffer = prog.buffers[id];
    if (buffer.role == BufferRole::Constant)
      address[id] = const_cast<uint8_t *>(buffer.data.data());
    else if (buffer.role == BufferRole::Temporary)
      address[id] = outputSlot[id] >= 0 ? outputs[outputSlot[id]].data()
                                        : temporaryStorage[id].data();
  }
  // Aliases refer to earlier buffers (codegen resolves chains to the root).
  for (size_t id = 0; id < prog.buffers.size(); ++id)
    if (prog.buffers[id].role == BufferRole::Alias)
      address[id] = address[prog.buffers[id].aliasOf];

  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    const KernelDesc &kernel = prog.kernels[k];
    kernelInputs.clear();
    kernelOutputs.clear();
    for (int id : kernel.inputs)
      kernelInputs.push_back(address[id]);
    for (int id : kernel.outputs)
      kernelOutputs.push_back(address[id]);
    kernelFns[k](kernelInputs.data(), kernelOutputs.data());
  }

  // Outputs not written in place: inputs, constants, aliases, repeats.
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    int id = prog.outputs[i];
    if (outputSlot[id] != static_cast<int>(i))
      std::memcpy(outputs[i].data(), address[id], outputs[i].bytes.size());
  }
}

} // namespace fusec
