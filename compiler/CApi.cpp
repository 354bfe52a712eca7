//===- CApi.cpp - The C API over the C++ library -------------------------===//
//
// compiler/include/fusec/fusec.h, for libfusec.so. Every entry point runs
// its body through `guarded`, which turns each C++ exception into a status
// and the thread's last error: none crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#include "fusec/fusec.h"

#include "compiler/Driver.h"
#include "runtime/Profile.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/core/Compare.h"
#include "runtime/cuda/CudaApi.h"
#include "tools/lib/ProfileReport.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <iterator>
#include <new>
#include <random>

using namespace fusec;

namespace {

// The C enum spells DTypes.def's order.
#define FUSEC_DTYPE(Enum, ...)                                                 \
  static_assert(static_cast<int>(DType::Enum) == FUSEC_##Enum,                 \
                "fusec_dtype and DTypes.def disagree on " #Enum);
#define FUSEC_I1 FUSEC_BOOL
#define FUSEC_F4E2M1 FUSEC_F4E2M1FN
#define FUSEC_F8E8M0 FUSEC_F8E8M0FNU
#include "runtime/core/DTypes.def"
#undef FUSEC_I1
#undef FUSEC_F4E2M1
#undef FUSEC_F8E8M0
constexpr int kDTypeCount = FUSEC_U2 + 1;

/// A caller's mistake the C API itself finds (NULL, bad enum).
struct InvalidArgument {
  std::string message;
};

thread_local std::string lastError;

template <typename Body> fusec_status guarded(Body body) {
  try {
    body();
    return FUSEC_OK;
  } catch (const InvalidArgument &error) {
    lastError = error.message;
    return FUSEC_ERROR_INVALID_ARGUMENT;
  } catch (const Error &error) {
    lastError = error.what();
    return FUSEC_ERROR;
  } catch (const std::bad_alloc &) {
    lastError = "fusec: error: out of host memory";
    return FUSEC_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception &error) {
    lastError = std::string("fusec: internal error: ") + error.what();
    return FUSEC_ERROR_INTERNAL;
  } catch (...) {
    lastError = "fusec: internal error: unknown exception";
    return FUSEC_ERROR_INTERNAL;
  }
}

template <typename T> T &required(T *pointer, const char *what) {
  if (!pointer)
    throw InvalidArgument{std::string("fusec: ") + what + " is NULL"};
  return *pointer;
}

/// A string argument, which must not be NULL.
const char *nonNull(const char *text, const char *what) {
  if (!text)
    throw InvalidArgument{std::string("fusec: ") + what + " is NULL"};
  return text;
}

DType dtypeOf(fusec_dtype dtype) {
  if (dtype < 0 || dtype >= kDTypeCount)
    throw InvalidArgument{"fusec: dtype " + std::to_string(dtype) +
                          " is not a fusec_dtype"};
  return static_cast<DType>(dtype);
}

Shape shapeOf(int32_t ndim, const int64_t *dims, const std::string &what) {
  if (ndim < 0 || (ndim > 0 && !dims))
    throw InvalidArgument{"fusec: " + what + " has ndim " +
                          std::to_string(ndim) + " and shape " +
                          (dims ? "given" : "NULL")};
  return Shape(dims, dims + ndim);
}

std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// A caller's tensor: its dtype and shape, checked to be contiguous.
struct CheckedTensor {
  DType dtype;
  Shape shape;
};

CheckedTensor checkTensor(const fusec_tensor &tensor, const std::string &what) {
  CheckedTensor checked{dtypeOf(tensor.dtype),
                        shapeOf(tensor.ndim, tensor.shape, what)};
  // (An empty tensor's strides say nothing: it is read nowhere.)
  if (tensor.strides && numElements(checked.shape) > 0) {
    Shape contiguous = rowMajorStrides(checked.shape);
    for (size_t i = 0; i < checked.shape.size(); ++i)
      if (checked.shape[i] > 1 && tensor.strides[i] != contiguous[i])
        throw Error("fusec: error: " + what + " is not contiguous (strides " +
                    shapeText(Shape(tensor.strides,
                                    tensor.strides + checked.shape.size())) +
                    ", shape " + shapeText(checked.shape) +
                    "): pass a contiguous copy");
  }
  if (!tensor.data && numElements(checked.shape) > 0)
    throw InvalidArgument{"fusec: " + what + " has no data"};
  return checked;
}

} // namespace

struct fusec_options {
  CompileOptions compile;
  fusec_remark_callback remarkCallback = nullptr;
  void *remarkUserData = nullptr;

  /// The options of one compile, remarks going to the callback.
  static CompileOptions resolve(const fusec_options *options) {
    if (!options)
      return {};
    CompileOptions resolved = options->compile;
    if (fusec_remark_callback callback = options->remarkCallback) {
      void *userData = options->remarkUserData;
      resolved.onRemark = [callback, userData](const std::string &remark) {
        callback(remark.c_str(), userData);
      };
    }
    return resolved;
  }
};

struct fusec_graph {
  GraphBuilder builder;
  /// The value names handed out (a deque keeps them in place).
  std::deque<std::string> names;

  const char *hold(std::string name) {
    names.push_back(std::move(name));
    return names.back().c_str();
  }
};

struct fusec_model {
  struct Port {
    std::string name;
    fusec_dtype dtype;
    Shape shape;
    /// Outputs: the input it may update in place, or -1.
    int64_t updatesInput = -1;
  };
  struct Kernel {
    KernelInfo info;
    std::vector<const char *> ops; ///< into info.ops
  };

  fusec_model(CompiledModel compiled, CompileOptions options)
      : compiled(std::move(compiled)), options(std::move(options)) {
    const Program &program = this->compiled.program();
    // A symbolic dim is -1: each run's tensors give it.
    auto portShape = [](const BufferDesc &buffer) {
      Shape shape = buffer.shape;
      for (size_t d = 0; d < buffer.symbolicShape.size(); ++d)
        if (!buffer.symbolicShape[d].isStatic())
          shape[d] = -1;
      return shape;
    };
    for (int id : program.inputs)
      inputs.push_back({program.buffers[id].name,
                        static_cast<fusec_dtype>(program.buffers[id].dtype),
                        portShape(program.buffers[id])});
    for (size_t i = 0; i < program.outputs.size(); ++i) {
      const BufferDesc &buffer = program.buffers[program.outputs[i]];
      auto updated = std::find(program.inputs.begin(), program.inputs.end(),
                               buffer.updatesInput);
      outputs.push_back(
          {program.outputNames[i], static_cast<fusec_dtype>(buffer.dtype),
           portShape(buffer),
           updated != program.inputs.end() ? updated - program.inputs.begin()
                                           : -1});
    }
    symbolic = program.isSymbolic();
    for (KernelInfo &info : this->compiled.kernels()) {
      kernels.push_back({std::move(info), {}});
      for (const std::string &op : kernels.back().info.ops)
        kernels.back().ops.push_back(op.c_str());
    }
    hostInputs.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!symbolic)
        hostInputs[i] =
            Tensor(static_cast<DType>(inputs[i].dtype), inputs[i].shape);
  }

  void run(size_t inputCount, const fusec_tensor *given, size_t outputCount,
           const fusec_tensor *wanted, void *stream);
  /// Symbolic models: the output shapes inputs of `inputShapes` give.
  std::vector<Shape>
  outputShapesFor(const std::vector<Shape> &inputShapes) const {
    const Program &program = compiled.program();
    std::vector<int64_t> sizes;
    try {
      sizes = bindDimSizes(program, inputShapes);
    } catch (const Error &error) {
      throw Error("fusec: error: '" + program.name + "': " + error.what());
    }
    std::vector<Shape> shapes;
    for (int id : program.outputs) {
      const BufferDesc &buffer = program.buffers[id];
      shapes.push_back(buffer.symbolicShape.empty()
                           ? buffer.shape
                           : evaluateShape(buffer.symbolicShape, sizes));
    }
    return shapes;
  }

  CompiledModel compiled;
  /// Some dims are symbolic (-1 in the ports): each run's tensors give them.
  bool symbolic = false;
  /// What it was compiled with, remarks dropped (the profile's limits).
  CompileOptions options;
  std::vector<Port> inputs, outputs;
  std::vector<Kernel> kernels;
  std::string profile;
  /// Reused by every run: no allocation per run once shapes are known.
  std::vector<Tensor> hostInputs, hostOutputs;
  std::vector<DeviceTensor> deviceInputs, deviceOutputs;
};

namespace {

/// Whether `tensor` is exactly what `port` takes, contiguous, on `device`.
bool matches(const fusec_tensor &tensor, const fusec_model::Port &port,
             fusec_device device) {
  size_t rank = port.shape.size();
  if (tensor.dtype != port.dtype || tensor.device != device ||
      tensor.ndim != static_cast<int32_t>(rank) || (rank && !tensor.shape) ||
      (!tensor.data && numElements(port.shape) > 0))
    return false;
  int64_t contiguousStride = 1;
  for (size_t i = rank; i-- > 0;) {
    // A symbolic dim (-1) takes the tensor's size; the run checks it.
    int64_t size = port.shape[i] < 0 ? tensor.shape[i] : port.shape[i];
    if (tensor.shape[i] != size || size < 0 ||
        (tensor.strides && size > 1 && tensor.strides[i] != contiguousStride))
      return false;
    contiguousStride *= size;
  }
  return true;
}

} // namespace

void fusec_model::run(size_t inputCount, const fusec_tensor *given,
                      size_t outputCount, const fusec_tensor *wanted,
                      void *stream) {
  const std::string &name = compiled.program().name;
  if (inputCount != inputs.size() || outputCount != outputs.size())
    throw Error(
        "fusec: error: '" + name + "' takes " + std::to_string(inputs.size()) +
        " inputs and " + std::to_string(outputs.size()) + " outputs but got " +
        std::to_string(inputCount) + " and " + std::to_string(outputCount));
  if ((inputCount && !given) || (outputCount && !wanted))
    throw InvalidArgument{"fusec: the tensors of a run are NULL"};
  fusec_device device =
      inputCount ? given[0].device
                 : (outputCount ? wanted[0].device : FUSEC_DEVICE_CPU);
  if (device != FUSEC_DEVICE_CPU && device != FUSEC_DEVICE_CUDA)
    throw InvalidArgument{"fusec: device " + std::to_string(device) +
                          " is not a fusec_device"};
  // The thorough check, which throws the message, runs only for a tensor
  // that does not match: a run allocates nothing.
  auto check = [&](const fusec_tensor &tensor, const Port &port,
                   const char *what) {
    if (matches(tensor, port, device))
      return;
    std::string described = std::string(what) + " '" + port.name + "'";
    CheckedTensor checked = checkTensor(tensor, described);
    if (tensor.device != device)
      throw Error("fusec: error: " + described + " is on " +
                  (tensor.device == FUSEC_DEVICE_CUDA ? "cuda" : "cpu") +
                  " but the run's first tensor is on " +
                  (device == FUSEC_DEVICE_CUDA ? "cuda" : "cpu"));
    bool shapeFits = checked.shape.size() == port.shape.size();
    for (size_t d = 0; shapeFits && d < port.shape.size(); ++d)
      shapeFits = port.shape[d] < 0 || checked.shape[d] == port.shape[d];
    if (checked.dtype != static_cast<DType>(port.dtype) || !shapeFits)
      throw Error("fusec: error: " + described + " is " +
                  dtypeName(static_cast<DType>(port.dtype)) +
                  shapeText(port.shape) + " but the tensor given is " +
                  dtypeName(checked.dtype) + shapeText(checked.shape));
  };
  for (size_t i = 0; i < inputCount; ++i)
    check(given[i], inputs[i], "input");
  for (size_t i = 0; i < outputCount; ++i)
    check(wanted[i], outputs[i], "output");
  if (symbolic) {
    // The outputs must have the sizes this run's inputs bind.
    std::vector<Shape> inputShapes;
    for (size_t i = 0; i < inputCount; ++i)
      inputShapes.emplace_back(given[i].shape, given[i].shape + given[i].ndim);
    std::vector<Shape> expected = outputShapesFor(inputShapes);
    for (size_t i = 0; i < outputCount; ++i) {
      Shape shape(wanted[i].shape, wanted[i].shape + wanted[i].ndim);
      if (shape != expected[i])
        throw Error("fusec: error: output '" + outputs[i].name + "' is " +
                    shapeText(expected[i]) +
                    " for these inputs but the tensor given is " +
                    shapeText(shape));
    }
  }

  if (device == FUSEC_DEVICE_CUDA) {
    auto bind = [&](std::vector<DeviceTensor> &bound, const fusec_tensor *from,
                    const std::vector<Port> &ports) {
      bound.resize(ports.size());
      for (size_t i = 0; i < ports.size(); ++i) {
        bound[i].dtype = static_cast<DType>(ports[i].dtype);
        if (symbolic)
          bound[i].shape.assign(from[i].shape, from[i].shape + from[i].ndim);
        else
          bound[i].shape = ports[i].shape;
        bound[i].address = reinterpret_cast<uint64_t>(from[i].data);
      }
    };
    bind(deviceInputs, given, inputs);
    bind(deviceOutputs, wanted, outputs);
    if (stream) {
      compiled.enqueueOnDevice(deviceInputs, deviceOutputs, stream);
    } else {
      compiled.runOnDevice(deviceInputs, deviceOutputs);
    }
    return;
  }
  for (size_t i = 0; i < inputCount; ++i) {
    if (symbolic) {
      // Reallocated only when the size changes.
      Shape shape(given[i].shape, given[i].shape + given[i].ndim);
      if (hostInputs[i].shape != shape)
        hostInputs[i] = Tensor(static_cast<DType>(inputs[i].dtype), shape);
    }
    if (!hostInputs[i].bytes.empty())
      std::memcpy(hostInputs[i].data(), given[i].data,
                  hostInputs[i].bytes.size());
  }
  compiled.run(hostInputs, hostOutputs);
  for (size_t i = 0; i < outputCount; ++i)
    if (!hostOutputs[i].bytes.empty())
      std::memcpy(wanted[i].data, hostOutputs[i].data(),
                  hostOutputs[i].bytes.size());
}

// The functions below have C linkage by their declarations in fusec.h.

const char *fusec_version(void) {
#define FUSEC_STRINGIFY2(x) #x
#define FUSEC_STRINGIFY(x) FUSEC_STRINGIFY2(x)
  return FUSEC_STRINGIFY(FUSEC_VERSION_MAJOR) "." FUSEC_STRINGIFY(
      FUSEC_VERSION_MINOR) "." FUSEC_STRINGIFY(FUSEC_VERSION_PATCH);
}

const char *fusec_last_error(void) { return lastError.c_str(); }

const char *fusec_dtype_name(fusec_dtype dtype) {
  if (dtype < 0 || dtype >= kDTypeCount)
    return nullptr;
  return dtypeName(static_cast<DType>(dtype));
}

fusec_status fusec_dtype_from_name(const char *name, fusec_dtype *dtype) {
  return guarded([&] {
    std::optional<DType> parsed = parseDType(nonNull(name, "the dtype name"));
    if (!parsed)
      throw InvalidArgument{std::string("fusec: unknown dtype '") + name + "'"};
    required(dtype, "the dtype") = static_cast<fusec_dtype>(*parsed);
  });
}

size_t fusec_dtype_size(fusec_dtype dtype) {
  if (dtype < 0 || dtype >= kDTypeCount)
    return 0;
  return dtypeBytes(static_cast<DType>(dtype));
}

int fusec_cuda_available(void) {
  try {
    return cuda::unavailableReason().empty();
  } catch (...) {
    return 0;
  }
}

fusec_status fusec_options_create(fusec_options **options) {
  return guarded(
      [&] { required(options, "the options") = new fusec_options(); });
}

void fusec_options_destroy(fusec_options *options) { delete options; }

fusec_status fusec_options_set_target(fusec_options *options,
                                      fusec_target target) {
  return guarded([&] {
    fusec_options &set = required(options, "the options");
    switch (target) {
    case FUSEC_TARGET_AUTO:
      set.compile.target.reset();
      return;
    case FUSEC_TARGET_CPU:
      set.compile.target = Target::Cpu;
      return;
    case FUSEC_TARGET_CUDA:
      set.compile.target = Target::Cuda;
      return;
    }
    throw InvalidArgument{"fusec: target " + std::to_string(target) +
                          " is not a fusec_target"};
  });
}

fusec_status fusec_options_set_gpu_arch(fusec_options *options,
                                        const char *arch) {
  return guarded([&] {
    std::string value = arch ? arch : "";
    if (!value.empty() && value.rfind("sm_", 0) != 0)
      throw InvalidArgument{"fusec: the GPU architecture must be sm_XY "
                            "(e.g. sm_90a), got '" +
                            value + "'"};
    required(options, "the options").compile.gpuArch = value;
  });
}

fusec_status fusec_options_set_precision(fusec_options *options,
                                         fusec_dtype dtype) {
  return guarded([&] {
    DType precision = dtypeOf(dtype);
    if (precision != DType::BF16 && precision != DType::F16 &&
        precision != DType::F32)
      throw InvalidArgument{std::string("fusec: the precision must be bf16, "
                                        "f16 or f32 (off), got ") +
                            dtypeName(precision)};
    CompileOptions &set = required(options, "the options").compile;
    set.precision = precision == DType::F32 ? std::nullopt
                                            : std::optional<DType>(precision);
  });
}

fusec_status fusec_options_keep_f32(fusec_options *options, const char *node) {
  return guarded([&] {
    std::string name = nonNull(node, "the node name");
    required(options, "the options").compile.keepF32Nodes.push_back(name);
  });
}

fusec_status fusec_options_set_flag(fusec_options *options, fusec_flag flag,
                                    int enabled) {
  return guarded([&] {
    // Indexed by fusec_flag.
    static bool CompileOptions::*const kFields[] = {
        &CompileOptions::fastMath,  &CompileOptions::tf32,
        &CompileOptions::fuse,      &CompileOptions::attention,
        &CompileOptions::cudaGraph, &CompileOptions::kernelOverlap};
    CompileOptions &set = required(options, "the options").compile;
    if (flag < 0 || flag >= static_cast<int>(std::size(kFields)))
      throw InvalidArgument{"fusec: flag " + std::to_string(flag) +
                            " is not a fusec_flag"};
    set.*kFields[flag] = enabled != 0;
  });
}

fusec_status fusec_options_set_input_shape(fusec_options *options,
                                           const char *name, int32_t ndim,
                                           const int64_t *shape) {
  return guarded([&] {
    std::string input = nonNull(name, "the input name");
    Shape dims = shapeOf(ndim, shape, "input shape '" + input + "'");
    for (int64_t dim : dims)
      if (dim < 0)
        throw InvalidArgument{"fusec: input shape '" + input +
                              "' has a negative dim"};
    required(options, "the options").compile.inputShapes[input] = dims;
  });
}

fusec_status fusec_options_set_dim_range(fusec_options *options,
                                         const char *name, int64_t min,
                                         int64_t max) {
  return guarded([&] {
    std::string dim = nonNull(name, "the dim name");
    if (min < 0 || max < min || max < 1)
      throw InvalidArgument{"fusec: the range of dim '" + dim + "' (" +
                            std::to_string(min) + ".." + std::to_string(max) +
                            ") must hold sizes of at least 0, and one above"};
    required(options, "the options").compile.dimRanges[dim] = {dim, min, max};
  });
}

fusec_status fusec_options_set_dim_multiple(fusec_options *options,
                                            const char *name,
                                            int64_t multiple) {
  return guarded([&] {
    std::string dim = nonNull(name, "the dim name");
    auto &ranges = required(options, "the options").compile.dimRanges;
    auto range = ranges.find(dim);
    if (range == ranges.end())
      throw InvalidArgument{"fusec: dim '" + dim +
                            "' has no range (fusec_options_set_dim_range "
                            "first)"};
    if (multiple < 1 ||
        range->second.max / multiple * multiple < range->second.min)
      throw InvalidArgument{"fusec: no size of dim '" + dim + "' (" +
                            std::to_string(range->second.min) + ".." +
                            std::to_string(range->second.max) +
                            ") is a multiple of " + std::to_string(multiple)};
    range->second.multiple = multiple;
  });
}

fusec_status fusec_options_set_cache_dir(fusec_options *options,
                                         const char *dir) {
  return guarded([&] {
    required(options, "the options").compile.cacheDir = dir ? dir : "";
  });
}

fusec_status fusec_options_set_remark_callback(fusec_options *options,
                                               fusec_remark_callback callback,
                                               void *user_data) {
  return guarded([&] {
    fusec_options &set = required(options, "the options");
    set.remarkCallback = callback;
    set.remarkUserData = user_data;
  });
}

fusec_status fusec_graph_create(const char *name, fusec_graph **graph) {
  return guarded([&] {
    required(graph, "the graph") = nullptr;
    *graph = new fusec_graph{GraphBuilder(name ? name : "main"), {}};
  });
}

void fusec_graph_destroy(fusec_graph *graph) { delete graph; }

fusec_status fusec_graph_input(fusec_graph *graph, const char *name,
                               fusec_dtype dtype, int32_t ndim,
                               const int64_t *shape, const char **value) {
  return guarded([&] {
    fusec_graph &g = required(graph, "the graph");
    std::string input = nonNull(name, "the input name");
    std::string defined = g.builder.input(
        input, dtypeOf(dtype), shapeOf(ndim, shape, "input '" + input + "'"));
    const char *held = g.hold(std::move(defined));
    if (value)
      *value = held;
  });
}

fusec_status fusec_graph_constant(fusec_graph *graph, const char *name,
                                  const fusec_tensor *data,
                                  const char **value) {
  return guarded([&] {
    fusec_graph &g = required(graph, "the graph");
    std::string constant = nonNull(name, "the constant name");
    const fusec_tensor &given = required(data, "the constant's tensor");
    if (given.device != FUSEC_DEVICE_CPU)
      throw InvalidArgument{"fusec: constant '" + constant +
                            "' must be in host memory"};
    CheckedTensor checked = checkTensor(given, "constant '" + constant + "'");
    Tensor tensor(checked.dtype, checked.shape);
    if (!tensor.bytes.empty())
      std::memcpy(tensor.data(), given.data, tensor.bytes.size());
    const char *held = g.hold(g.builder.constant(constant, std::move(tensor)));
    if (value)
      *value = held;
  });
}

fusec_status fusec_graph_scalar(fusec_graph *graph, double number,
                                fusec_dtype dtype, const char **value) {
  return guarded([&] {
    fusec_graph &g = required(graph, "the graph");
    const char *held = g.hold(g.builder.scalar(number, dtypeOf(dtype)));
    if (value)
      *value = held;
  });
}

fusec_status fusec_graph_op(fusec_graph *graph, const char *op,
                            size_t input_count, const char *const *inputs,
                            size_t attr_count, const fusec_attr *attrs,
                            const char **value) {
  return guarded([&] {
    fusec_graph &g = required(graph, "the graph");
    std::string mnemonic = nonNull(op, "the op");
    if ((input_count && !inputs) || (attr_count && !attrs))
      throw InvalidArgument{"fusec: op '" + mnemonic +
                            "' has NULL inputs or attributes"};
    std::vector<std::string> operands;
    for (size_t i = 0; i < input_count; ++i)
      operands.push_back(nonNull(inputs[i], "an op input"));
    std::map<std::string, AttrValue> attributes;
    for (size_t i = 0; i < attr_count; ++i) {
      const fusec_attr &attr = attrs[i];
      std::string attrName = nonNull(attr.name, "an attribute name");
      switch (attr.kind) {
      case FUSEC_ATTR_INT:
        attributes[attrName] = attr.int_value;
        break;
      case FUSEC_ATTR_FLOAT:
        attributes[attrName] = attr.float_value;
        break;
      case FUSEC_ATTR_STRING:
        attributes[attrName] =
            std::string(nonNull(attr.string_value, "a string attribute"));
        break;
      case FUSEC_ATTR_INTS:
        if (attr.count && !attr.ints)
          throw InvalidArgument{"fusec: attribute '" + attrName +
                                "' has NULL ints"};
        attributes[attrName] =
            std::vector<int64_t>(attr.ints, attr.ints + attr.count);
        break;
      default:
        throw InvalidArgument{"fusec: attribute '" + attrName +
                              "' has no valid kind"};
      }
    }
    const char *held =
        g.hold(g.builder.op(mnemonic, operands, std::move(attributes)));
    if (value)
      *value = held;
  });
}

fusec_status fusec_graph_output(fusec_graph *graph, const char *value) {
  return guarded([&] {
    required(graph, "the graph")
        .builder.output(nonNull(value, "the output value"));
  });
}

namespace {

/// Compiles with `compileWith(options)` into `*model`.
template <typename Compile>
fusec_status compileInto(fusec_model **model, const fusec_options *options,
                         Compile compileWith) {
  return guarded([&] {
    required(model, "the model") = nullptr;
    CompileOptions resolved = fusec_options::resolve(options);
    CompiledModel compiled = compileWith(resolved);
    resolved.onRemark = nullptr;
    *model = new fusec_model(std::move(compiled), std::move(resolved));
  });
}

} // namespace

fusec_status fusec_compile_file(const char *path, const fusec_options *options,
                                fusec_model **model) {
  return compileInto(model, options, [&](const CompileOptions &resolved) {
    return compileFile(nonNull(path, "the path"), resolved);
  });
}

fusec_status fusec_compile_buffer(const void *data, size_t size,
                                  fusec_format format, const char *name,
                                  const fusec_options *options,
                                  fusec_model **model) {
  return compileInto(model, options, [&](const CompileOptions &resolved) {
    if (!data && size)
      throw InvalidArgument{"fusec: the model's bytes are NULL"};
    if (format < FUSEC_FORMAT_JSON || format > FUSEC_FORMAT_ONNX_TEXT)
      throw InvalidArgument{"fusec: format " + std::to_string(format) +
                            " is not a fusec_format"};
    static const ModelFormat kFormats[] = {ModelFormat::Json, ModelFormat::Mlir,
                                           ModelFormat::Onnx,
                                           ModelFormat::OnnxText};
    std::string contents(static_cast<const char *>(data), size);
    return compileBuffer(contents, kFormats[format], name ? name : "<memory>",
                         resolved);
  });
}

fusec_status fusec_compile_graph(const fusec_graph *graph,
                                 const fusec_options *options,
                                 fusec_model **model) {
  return compileInto(model, options, [&](const CompileOptions &resolved) {
    return compile(required(graph, "the graph").builder.graph(), resolved);
  });
}

void fusec_model_destroy(fusec_model *model) { delete model; }

fusec_status fusec_model_save(const fusec_model *model, const char *path) {
  return guarded([&] {
    required(model, "the model").compiled.save(nonNull(path, "the path"));
  });
}

fusec_status fusec_model_load(const char *path, fusec_model **model) {
  return guarded([&] {
    required(model, "the model") = nullptr;
    CompiledModel loaded = load(std::string(nonNull(path, "the path")));
    CompileOptions options;
    options.target = loaded.program().target;
    *model = new fusec_model(std::move(loaded), std::move(options));
  });
}

fusec_status fusec_model_target(const fusec_model *model,
                                fusec_target *target) {
  return guarded([&] {
    required(target, "the target") =
        required(model, "the model").compiled.program().target == Target::Cuda
            ? FUSEC_TARGET_CUDA
            : FUSEC_TARGET_CPU;
  });
}

fusec_status fusec_model_name(const fusec_model *model, const char **name) {
  return guarded([&] {
    required(name, "the name") =
        required(model, "the model").compiled.program().name.c_str();
  });
}

fusec_status fusec_model_input_count(const fusec_model *model, size_t *count) {
  return guarded([&] {
    required(count, "the count") = required(model, "the model").inputs.size();
  });
}

fusec_status fusec_model_output_count(const fusec_model *model, size_t *count) {
  return guarded([&] {
    required(count, "the count") = required(model, "the model").outputs.size();
  });
}

namespace {

/// Item `index` of one of the model's lists, or an error naming how many
/// there are ("the model has 2 inputs, not 3").
template <typename T>
const T &itemAt(const std::vector<T> &items, size_t index, const char *what) {
  if (index >= items.size())
    throw InvalidArgument{"fusec: the model has " +
                          std::to_string(items.size()) + " " + what + ", not " +
                          std::to_string(index + 1)};
  return items[index];
}

fusec_status describePort(const fusec_model *model, bool input, size_t index,
                          const char **name, fusec_dtype *dtype, int32_t *ndim,
                          const int64_t **shape) {
  return guarded([&] {
    const fusec_model::Port &port =
        itemAt(input ? required(model, "the model").inputs : model->outputs,
               index, input ? "inputs" : "outputs");
    if (name)
      *name = port.name.c_str();
    if (dtype)
      *dtype = port.dtype;
    if (ndim)
      *ndim = static_cast<int32_t>(port.shape.size());
    if (shape)
      *shape = port.shape.data();
  });
}

} // namespace

fusec_status fusec_model_input(const fusec_model *model, size_t index,
                               const char **name, fusec_dtype *dtype,
                               int32_t *ndim, const int64_t **shape) {
  return describePort(model, /*input=*/true, index, name, dtype, ndim, shape);
}

fusec_status fusec_model_output(const fusec_model *model, size_t index,
                                const char **name, fusec_dtype *dtype,
                                int32_t *ndim, const int64_t **shape) {
  return describePort(model, /*input=*/false, index, name, dtype, ndim, shape);
}

fusec_status fusec_model_output_updates_input(const fusec_model *model,
                                              size_t index, int64_t *input) {
  return guarded([&] {
    required(input, "the input index") =
        itemAt(required(model, "the model").outputs, index, "outputs")
            .updatesInput;
  });
}

fusec_status fusec_model_output_shape(const fusec_model *model,
                                      size_t input_count, const int32_t *ndims,
                                      const int64_t *const *shapes,
                                      size_t index, int32_t capacity,
                                      int32_t *ndim, int64_t *shape) {
  return guarded([&] {
    const fusec_model &m = required(model, "the model");
    if (input_count && (!ndims || !shapes))
      throw InvalidArgument{"fusec: the input shapes are NULL"};
    std::vector<Shape> inputShapes;
    for (size_t i = 0; i < input_count; ++i)
      inputShapes.push_back(
          shapeOf(ndims[i], shapes[i], "input shape " + std::to_string(i)));
    const fusec_model::Port &output = itemAt(m.outputs, index, "outputs");
    Shape result =
        m.symbolic ? m.outputShapesFor(inputShapes)[index] : output.shape;
    if (static_cast<int64_t>(result.size()) > capacity)
      throw InvalidArgument{"fusec: output " + std::to_string(index) + " has " +
                            std::to_string(result.size()) +
                            " dims, more than the " + std::to_string(capacity) +
                            " given room for"};
    required(ndim, "the rank") = static_cast<int32_t>(result.size());
    if (!result.empty() && !shape)
      throw InvalidArgument{"fusec: the shape is NULL"};
    std::copy(result.begin(), result.end(), shape);
  });
}

fusec_status fusec_model_run(fusec_model *model, size_t input_count,
                             const fusec_tensor *inputs, size_t output_count,
                             const fusec_tensor *outputs, void *stream) {
  return guarded([&] {
    required(model, "the model")
        .run(input_count, inputs, output_count, outputs, stream);
  });
}

fusec_status fusec_model_synchronize(fusec_model *model) {
  return guarded([&] { required(model, "the model").compiled.synchronize(); });
}

fusec_status fusec_model_kernel_count(const fusec_model *model, size_t *count) {
  return guarded([&] {
    required(count, "the count") = required(model, "the model").kernels.size();
  });
}

fusec_status fusec_model_kernel(const fusec_model *model, size_t index,
                                const char **name, size_t *op_count,
                                const char *const **ops, const char **source) {
  return guarded([&] {
    const fusec_model::Kernel &kernel =
        itemAt(required(model, "the model").kernels, index, "kernels");
    if (name)
      *name = kernel.info.name.c_str();
    if (op_count)
      *op_count = kernel.ops.size();
    if (ops)
      *ops = kernel.ops.data();
    if (source)
      *source = kernel.info.source.c_str();
  });
}

fusec_status fusec_model_profile(fusec_model *model, int32_t runs,
                                 fusec_profile_format format,
                                 const char **report) {
  return guarded([&] {
    fusec_model &m = required(model, "the model");
    required(report, "the report") = nullptr;
    if (runs < 1)
      throw InvalidArgument{"fusec: a profile needs at least one run, got " +
                            std::to_string(runs)};
    if (format != FUSEC_PROFILE_TEXT && format != FUSEC_PROFILE_JSON)
      throw InvalidArgument{"fusec: format " + std::to_string(format) +
                            " is not a fusec_profile_format"};
    const Program &program = m.compiled.program();
    DeviceLimits limits =
        deviceLimits(program.target,
                     KernelCache::forDirectory(m.options.cacheDir)->directory(),
                     m.options.tf32);
    // The inputs `fusec --run --profile` uses (seed 0).
    std::mt19937_64 rng(0);
    std::vector<Tensor> inputs;
    for (int id : program.inputs)
      inputs.push_back(randomTensor(program.buffers[id].dtype,
                                    program.buffers[id].shape, rng));
    Profile profile =
        profileExecutable(executableOf(m.compiled), inputs, runs, limits);
    m.profile = format == FUSEC_PROFILE_JSON ? profileJson(profile)
                                             : formatProfileTable(profile);
    *report = m.profile.c_str();
  });
}

fusec_status fusec_cache_directory(const char *dir, char *buffer, size_t size,
                                   size_t *length) {
  return guarded([&] {
    std::string directory = KernelCache(dir ? dir : "").directory();
    if (length)
      *length = directory.size();
    if (buffer && size) {
      size_t copied = std::min(size - 1, directory.size());
      std::memcpy(buffer, directory.data(), copied);
      buffer[copied] = '\0';
    }
  });
}

fusec_status fusec_cache_clear(const char *dir) {
  return guarded([&] { KernelCache(dir ? dir : "").clear(); });
}
