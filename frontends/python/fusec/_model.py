"""fusec.compile and the compiled model (fusec_compile_*, fusec_model_*).

A call moves no data it need not: NumPy inputs are passed by address when
C-contiguous (else one contiguous copy is made), and torch CUDA tensors are
passed by address too, ordered with torch's current stream, with outputs
allocated by torch on the same device. The ctypes argument arrays are built
once per model; a call only fills in the addresses.
"""

import ctypes
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

from . import _capi, _dlpack, _dtypes
from ._graph import Graph


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its name, fusec dtype name and shape."""
    name: str
    dtype: str
    shape: tuple


@dataclass(frozen=True)
class Kernel:
    """A generated kernel: its name, the ops fused into it, its source."""
    name: str
    ops: tuple
    source: str


_TARGETS = {None: _capi.TARGET_AUTO, "auto": _capi.TARGET_AUTO,
            "cpu": _capi.TARGET_CPU, "cuda": _capi.TARGET_CUDA}
_FORMATS = {".json": _capi.FORMAT_JSON, ".mlir": _capi.FORMAT_MLIR,
            ".onnx": _capi.FORMAT_ONNX, ".onnxtxt": _capi.FORMAT_ONNX_TEXT}


class _Options:
    """A fusec_options handle for one compile, and the remark callback it
    holds (kept alive while the handle is)."""

    def __init__(self, target, options):
        handle = ctypes.c_void_p()
        _capi.check(_capi.lib.fusec_options_create(ctypes.byref(handle)))
        self.handle = handle
        self.callback = None
        if target not in _TARGETS:
            raise _capi.Error("fusec: error: unknown target %r (expected "
                              "'cpu', 'cuda' or None)" % (target,))
        _capi.check(_capi.lib.fusec_options_set_target(handle,
                                                       _TARGETS[target]))
        for key, value in options.items():
            if key in _capi.FLAGS:
                _capi.check(_capi.lib.fusec_options_set_flag(
                    handle, _capi.FLAGS[key], bool(value)))
            elif key == "gpu_arch":
                _capi.check(_capi.lib.fusec_options_set_gpu_arch(
                    handle, _capi.encode(value)))
            elif key == "cache_dir":
                _capi.check(_capi.lib.fusec_options_set_cache_dir(
                    handle, _capi.encode(os.fspath(value))))
            elif key == "input_shapes":
                for name, shape in value.items():
                    _capi.check(_capi.lib.fusec_options_set_input_shape(
                        handle, _capi.encode(name), len(shape),
                        _capi.int64_array(shape)))
            elif key == "dims":
                # {name: (min, max)} keeps a named dim symbolic, (min, max,
                # multiple) declares its sizes multiples; {name: size} fixes
                # it.
                for name, bounds in value.items():
                    bounds = ((bounds, bounds) if isinstance(bounds, int)
                              else tuple(bounds))
                    _capi.check(_capi.lib.fusec_options_set_dim_range(
                        handle, _capi.encode(name), bounds[0], bounds[1]))
                    if len(bounds) > 2:
                        _capi.check(_capi.lib.fusec_options_set_dim_multiple(
                            handle, _capi.encode(name), bounds[2]))
            elif key == "precision":
                _capi.check(_capi.lib.fusec_options_set_precision(
                    handle, _dtypes.code_of(value or "f32")))
            elif key == "keep_f32":
                for node in value:
                    _capi.check(_capi.lib.fusec_options_keep_f32(
                        handle, _capi.encode(node)))
            elif key == "on_remark":
                self.callback = _capi.RemarkCallback(
                    lambda text, _: value(_capi.decode(text)))
                _capi.check(_capi.lib.fusec_options_set_remark_callback(
                    handle, self.callback, None))
            else:
                raise TypeError(
                    "fusec.compile() got an unknown option %r (options: "
                    "%s)" % (key, ", ".join(sorted(
                        list(_capi.FLAGS) + ["gpu_arch", "cache_dir",
                                               "input_shapes", "dims",
                                               "precision", "keep_f32",
                                               "on_remark"]))))

    def __del__(self, _destroy=_capi.lib.fusec_options_destroy):
        _destroy(self.handle)


def compile(model, target=None, **options):
    """Compiles `model`: a path (.onnx, .onnxtxt, .json, .mlir), an
    onnx.ModelProto (serialized in memory), or a fusec.Graph.

    target: "cpu", "cuda" or None (cuda when a GPU is usable, else cpu).
    options: fast_math, tf32, fuse, attention, cuda_graphs, kernel_overlap
    (bools), gpu_arch ("sm_90a"), cache_dir, input_shapes ({input name:
    shape} for ONNX inputs with symbolic dims), dims ({dim name: (min, max)
    or (min, max, multiple)}
    keeps an ONNX dim_param or JSON named dim symbolic: one compile runs at
    every size in the range; {dim name: size} fixes it), precision ("bf16", "f16",
    torch.bfloat16, ...: the model's f32 tensors run in that dtype) with
    keep_f32 (node names that stay f32), on_remark (called with each
    fusion remark). Raises fusec.Error with fusec's message.
    """
    settings = _Options(target, options)
    handle = ctypes.c_void_p()
    if isinstance(model, Graph):
        status = _capi.lib.fusec_compile_graph(model._handle, settings.handle,
                                               ctypes.byref(handle))
    elif isinstance(model, (str, os.PathLike)):
        status = _capi.lib.fusec_compile_file(
            os.fsencode(model), settings.handle, ctypes.byref(handle))
    elif hasattr(model, "SerializeToString"):  # onnx.ModelProto
        data = model.SerializeToString()
        name = (model.graph.name or "model") + ".onnx"
        status = _capi.lib.fusec_compile_buffer(
            data, len(data), _capi.FORMAT_ONNX, _capi.encode(name),
            settings.handle, ctypes.byref(handle))
    else:
        raise TypeError("fusec.compile() takes a path, an onnx.ModelProto "
                        "or a fusec.Graph, not %s" % type(model).__name__)
    _capi.check(status)
    return Model(handle)


def compile_text(text, format, name=None, target=None, **options):
    """Compiles a model held in memory: `format` is "json", "mlir", "onnx"
    (bytes of a ModelProto) or "onnxtxt"; `name` stands for its file in
    messages. Options as for compile()."""
    settings = _Options(target, options)
    extension = "." + format
    if extension not in _FORMATS:
        raise _capi.Error("fusec: error: unknown model format %r (expected "
                          "json, mlir, onnx or onnxtxt)" % (format,))
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    handle = ctypes.c_void_p()
    _capi.check(_capi.lib.fusec_compile_buffer(
        data, len(data), _FORMATS[extension],
        _capi.encode(name or "<memory>" + extension), settings.handle,
        ctypes.byref(handle)))
    return Model(handle)


def load(path):
    """A package that Model.save (or `fusec MODEL --emit=package -o PATH`)
    wrote, loaded with no compiler (docs/packages.md). Raises fusec.Error
    naming the file for a corrupt or foreign package."""
    handle = ctypes.c_void_p()
    _capi.check(_capi.lib.fusec_model_load(os.fsencode(path),
                                           ctypes.byref(handle)))
    return Model(handle)


def _ports(handle, count_function, describe_function):
    count = ctypes.c_size_t()
    _capi.check(count_function(handle, ctypes.byref(count)))
    ports = []
    for index in range(count.value):
        name, dtype = ctypes.c_char_p(), ctypes.c_int()
        ndim, shape = ctypes.c_int32(), ctypes.POINTER(ctypes.c_int64)()
        _capi.check(describe_function(handle, index, ctypes.byref(name),
                                      ctypes.byref(dtype), ctypes.byref(ndim),
                                      ctypes.byref(shape)))
        ports.append((TensorSpec(_capi.decode(name.value),
                                 _dtypes.name_of_code(dtype.value),
                                 tuple(shape[i] for i in range(ndim.value))),
                      dtype.value, shape))
    return ports


class _Binding:
    """The fusec_tensor array of a model's inputs or outputs, built once:
    dtype, rank and shape point at the model's own; a call sets the data
    pointers and device."""

    def __init__(self, ports):
        self.array = (_capi.Tensor * max(len(ports), 1))()
        self.address = ctypes.addressof(self.array)
        # Views of the array's elements (indexing makes a new one each time).
        self.slots = [self.array[i] for i in range(len(ports))]
        self.shapes = [spec.shape for spec, _, _ in ports]
        for slot, (spec, code, shape) in zip(self.slots, ports):
            slot.dtype, slot.ndim, slot.shape = code, len(spec.shape), shape
        self.count = len(ports)
        self.device = _capi.DEVICE_CPU

    def set_device(self, device):
        if device != self.device:
            for slot in self.slots:
                slot.device = device
            self.device = device


class Model:
    """A compiled model. Call it on arrays (NumPy or torch, one per input,
    in order) for a list with one array of the same kind per output."""

    def __init__(self, handle):
        self._handle = handle
        self._address = handle.value  # what calls pass: an int converts fast
        lib = _capi.lib
        inputs = _ports(handle, lib.fusec_model_input_count,
                        lib.fusec_model_input)
        outputs = _ports(handle, lib.fusec_model_output_count,
                         lib.fusec_model_output)
        self.inputs = [spec for spec, _, _ in inputs]
        self.outputs = [spec for spec, _, _ in outputs]
        self._in = _Binding(inputs)
        self._out = _Binding(outputs)
        self._numpy_out = [(spec.shape, _dtypes.numpy_dtype(spec.dtype))
                           for spec in self.outputs]
        self._torch_out = None  # (shape, torch dtype), on first torch call
        self._run = lib.fusec_model_run
        target = ctypes.c_int()
        _capi.check(lib.fusec_model_target(handle, ctypes.byref(target)))
        self.target = _capi.TARGET_NAMES[target.value]
        name = ctypes.c_char_p()
        _capi.check(lib.fusec_model_name(handle, ctypes.byref(name)))
        self.name = _capi.decode(name.value)
        self._kernels = None
        # Output name -> the input name whose memory it may take: it updates
        # that input in place (a KV cache), so a call may pass one tensor
        # for both on the GPU; any other overlap is an error.
        self.updates_input = {}
        for index, spec in enumerate(self.outputs):
            updated = ctypes.c_int64()
            _capi.check(lib.fusec_model_output_updates_input(
                handle, index, ctypes.byref(updated)))
            if updated.value >= 0:
                self.updates_input[spec.name] = self.inputs[updated.value].name
        # Symbolic dims (-1 in a port's shape): every call binds their sizes.
        self._symbolic = any(dim < 0 for spec in self.inputs + self.outputs
                             for dim in spec.shape)

    # The destroy function bound early: module globals may be gone when a
    # model is collected at interpreter exit.
    def __del__(self, _destroy=_capi.lib.fusec_model_destroy):
        if getattr(self, "_handle", None):
            _destroy(self._handle)
            self._handle = None

    def __repr__(self):
        return "<fusec.Model %r on %s: %d inputs, %d outputs>" % (
            self.name, self.target, len(self.inputs), len(self.outputs))

    def __call__(self, *arrays, out=None):
        """Runs on `arrays`, one per input in order; returns a list with one
        array per output, new ones of the inputs' kind, or `out`'s (arrays
        of the outputs' dtypes and shapes, written in place)."""
        if len(arrays) != self._in.count:
            raise _capi.Error("fusec: error: '%s' takes %d inputs but got %d"
                              % (self.name, self._in.count, len(arrays)))
        if out is not None and len(out) != self._out.count:
            raise _capi.Error("fusec: error: '%s' has %d outputs but got %d "
                              "out arrays" % (self.name, self._out.count,
                                              len(out)))
        first = arrays[0] if arrays else None
        torch = sys.modules.get("torch")
        if self._symbolic:
            return self._call_symbolic(torch, arrays, out)
        if torch is not None and isinstance(first, torch.Tensor):
            return self._call_torch(torch, arrays, out)
        if (type(first) is not np.ndarray
                and hasattr(first, "__dlpack_device__")):
            return self._call_dlpack(arrays, out)
        return self._call_numpy(arrays, out)

    def output_shapes(self, input_shapes):
        """The outputs' shapes for inputs of `input_shapes` (one per input),
        the model's symbolic dims bound from them."""
        count = len(input_shapes)
        ndims = (ctypes.c_int32 * max(count, 1))(
            *[len(shape) for shape in input_shapes])
        arrays = [_capi.int64_array(shape) for shape in input_shapes]
        pointers = (_capi._PI64 * max(count, 1))(*arrays)
        shapes = []
        for index, spec in enumerate(self.outputs):
            ndim = ctypes.c_int32()
            shape = (ctypes.c_int64 * max(len(spec.shape), 1))()
            _capi.check(_capi.lib.fusec_model_output_shape(
                self._handle, count, ndims, pointers, index, len(spec.shape),
                ctypes.byref(ndim), shape))
            shapes.append(tuple(shape[i] for i in range(ndim.value)))
        return shapes

    def _call_symbolic(self, torch, arrays, out):
        """A call of a model with symbolic dims: each tensor bound with its
        own shape, the outputs sized for the inputs' (checked by the C API:
        sizes outside a range are errors naming the dim)."""
        is_torch = torch is not None and isinstance(arrays[0], torch.Tensor)
        if is_torch:
            arrays = [a if a.is_contiguous() or a.device.type == "cuda"
                      else a.contiguous() for a in arrays]
            shapes = [tuple(a.shape) for a in arrays]
        else:
            arrays = [np.ascontiguousarray(a) for a in arrays]
            shapes = [a.shape for a in arrays]
        results = out
        if results is None:
            output_shapes = self.output_shapes(shapes)
            if is_torch:
                results = [torch.empty(shape,
                                       dtype=_dtypes.torch_dtype(spec.dtype),
                                       device=arrays[0].device)
                           for shape, spec in zip(output_shapes, self.outputs)]
            else:
                results = [np.empty(shape, _dtypes.numpy_dtype(spec.dtype))
                           for shape, spec in zip(output_shapes, self.outputs)]
        device = (_capi.DEVICE_CUDA if is_torch and arrays[0].is_cuda
                  else _capi.DEVICE_CPU)
        keep = []

        def bind(tensors):
            bound = (_capi.Tensor * max(len(tensors), 1))()
            for slot, tensor in zip(bound, tensors):
                if is_torch:
                    shape, code = tuple(tensor.shape), _dtypes.code_of(
                        tensor.dtype)
                    strides = tensor.stride()
                    data = tensor.data_ptr()
                else:
                    shape, code = tensor.shape, _dtypes.code_of(tensor.dtype)
                    strides = [s // tensor.itemsize for s in tensor.strides]
                    data = tensor.ctypes.data
                shape_array = _capi.int64_array(shape)
                stride_array = _capi.int64_array(strides)
                keep.extend([shape_array, stride_array])
                slot.dtype, slot.ndim, slot.shape = code, len(shape), \
                    shape_array
                slot.strides, slot.data, slot.device = stride_array, data, \
                    device
            return bound

        inputs, outputs = bind(arrays), bind(results)
        stream = None
        if device == _capi.DEVICE_CUDA:
            stream = torch.cuda.current_stream().cuda_stream
        _capi.check(self._run(self._address, len(arrays),
                              ctypes.addressof(inputs), len(results),
                              ctypes.addressof(outputs), stream))
        return results

    def run(self, inputs):
        """Runs on {input name: array}; returns {output name: array}."""
        missing = [spec.name for spec in self.inputs if spec.name not in inputs]
        unknown = set(inputs) - {spec.name for spec in self.inputs}
        if missing or unknown:
            raise _capi.Error(
                "fusec: error: '%s' takes inputs %s; missing %s, unknown %s"
                % (self.name, [spec.name for spec in self.inputs], missing,
                   sorted(unknown)))
        results = self(*[inputs[spec.name] for spec in self.inputs])
        return {spec.name: value for spec, value in zip(self.outputs, results)}

    def _reject(self, binding, index, data, dtype_code, shape, strides=None):
        """Lets the C API reject tensor `index` of `binding` (self._in or
        self._out), at address `data`, of this dtype, shape and strides,
        with its message. The slots bound before it point at their tensors;
        those after it may be unbound (NULL), which the C API names only
        after this one's mismatch."""
        copies = {}
        for which in (self._in, self._out):
            copies[id(which)] = (_capi.Tensor * max(which.count, 1))(
                *which.array[:which.count])
        shape_array = _capi.int64_array(shape)
        stride_array = None if strides is None else _capi.int64_array(strides)
        slot = copies[id(binding)][index]  # a view into the copy
        slot.data = data
        slot.dtype, slot.ndim, slot.shape = dtype_code, len(shape), shape_array
        slot.strides = stride_array
        _capi.check(self._run(self._address, self._in.count,
                              ctypes.addressof(copies[id(self._in)]),
                              self._out.count,
                              ctypes.addressof(copies[id(self._out)]), None))
        raise AssertionError("fusec accepted a mismatched tensor")

    def _bind_numpy(self, binding, index, array, spec):
        """Points slot `index` of `binding` at NumPy `array`; returns the
        array it points at (a contiguous copy of an input that is not)."""
        if type(array) is not np.ndarray:
            array = np.asarray(array)
        if (not _dtypes.accepts_numpy(spec.dtype, array.dtype)
                or array.shape != spec.shape):
            self._reject(binding, index, array.ctypes.data,
                         _dtypes.code_of(array.dtype), array.shape)
        if not array.flags.c_contiguous:
            if binding is self._out:
                self._reject(binding, index, array.ctypes.data,
                             binding.array[index].dtype,
                             array.shape, [s // array.itemsize
                                           for s in array.strides])
            array = np.ascontiguousarray(array)
        binding.slots[index].data = array.ctypes.data
        return array

    def _call_numpy(self, arrays, out):
        keep = [self._bind_numpy(self._in, index, array, spec)
                for index, (array, spec) in enumerate(zip(arrays,
                                                          self.inputs))]
        if out is None:
            results = [np.empty(shape, dtype)
                       for shape, dtype in self._numpy_out]
        else:
            results = list(out)
        for index, (result, spec) in enumerate(zip(results, self.outputs)):
            self._bind_numpy(self._out, index, result, spec)
        self._in.set_device(_capi.DEVICE_CPU)
        self._out.set_device(_capi.DEVICE_CPU)
        _capi.check(self._run(self._address, self._in.count, self._in.address,
                              self._out.count, self._out.address, None))
        del keep
        return results

    def _bind_torch(self, binding, index, tensor, spec, dtype, device):
        """Points slot `index` of `binding` at torch `tensor` on `device`;
        returns the tensor it points at (a contiguous copy of a CPU input
        that is not)."""
        if tensor.dtype != dtype or tensor.shape != spec.shape:
            self._reject(binding, index, tensor.data_ptr(),
                         _dtypes.code_of(tensor.dtype), tuple(tensor.shape))
        if tensor.device != device:
            raise _capi.Error("fusec: error: %s '%s' is on %s but the first "
                              "input is on %s" % (
                                  "input" if binding is self._in else
                                  "output", spec.name, tensor.device, device))
        if not tensor.is_contiguous():
            # No copies on the device, nor into an output.
            if device.type == "cuda" or binding is self._out:
                self._reject(binding, index, tensor.data_ptr(),
                             binding.array[index].dtype,
                             tuple(tensor.shape), tensor.stride())
            tensor = tensor.contiguous()
        binding.slots[index].data = tensor.data_ptr()
        return tensor

    def _prepare_torch(self, torch):
        """What torch calls need, once: the ports' torch dtypes, and the
        current stream's raw handle (torch's private fast accessor where
        it has one)."""
        self._torch_in = [_dtypes.torch_dtype(spec.dtype)
                          for spec in self.inputs]
        self._torch_out = [(spec.shape, _dtypes.torch_dtype(spec.dtype))
                           for spec in self.outputs]
        self._raw_stream = getattr(
            torch._C, "_cuda_getCurrentRawStream",
            lambda index: torch.cuda.current_stream(index).cuda_stream)

    def _call_torch(self, torch, tensors, out):
        if self._torch_out is None:
            self._prepare_torch(torch)
        index = tensors[0].get_device()  # -1 on the CPU
        if index > 0:
            raise _capi.Error("fusec: error: fusec runs on cuda:0, the "
                              "tensors are on cuda:%d" % index)
        results = out
        if results is None:
            device = tensors[0].device
            results = [torch.empty(shape, dtype=dtype, device=device)
                       for shape, dtype in self._torch_out]
        # The fast path: every tensor as the model wants it.
        for tensor, slot, dtype, shape in zip(tensors, self._in.slots,
                                              self._torch_in,
                                              self._in.shapes):
            if (tensor.dtype != dtype or tensor.shape != shape
                    or tensor.get_device() != index
                    or not tensor.is_contiguous()):
                return self._call_torch_checked(torch, tensors, results)
            slot.data = tensor.data_ptr()
        for tensor, slot, (shape, dtype) in zip(results, self._out.slots,
                                                self._torch_out):
            if (tensor.dtype != dtype or tensor.shape != shape
                    or tensor.get_device() != index
                    or not tensor.is_contiguous()):
                return self._call_torch_checked(torch, tensors, results)
            slot.data = tensor.data_ptr()
        self._launch_torch(index)
        return results

    def _call_torch_checked(self, torch, tensors, results):
        """The same call with each tensor checked on its own: raises the
        C API's message for the first one the model cannot take, or runs
        on a contiguous copy of a non-contiguous CPU input."""
        device = tensors[0].device
        keep = [self._bind_torch(self._in, index, tensor, spec, dtype, device)
                for index, (tensor, spec, dtype) in enumerate(
                    zip(tensors, self.inputs, self._torch_in))]
        for index, (result, spec, (_, dtype)) in enumerate(
                zip(results, self.outputs, self._torch_out)):
            self._bind_torch(self._out, index, result, spec, dtype, device)
        self._launch_torch(tensors[0].get_device())
        del keep
        return results

    def _launch_torch(self, index):
        """Runs on the bound addresses of tensors on cuda:`index` (-1: the
        CPU)."""
        if index < 0:
            if self._in.device != _capi.DEVICE_CPU:
                self._in.set_device(_capi.DEVICE_CPU)
                self._out.set_device(_capi.DEVICE_CPU)
            stream = None
        else:
            if self._in.device != _capi.DEVICE_CUDA:
                self._in.set_device(_capi.DEVICE_CUDA)
                self._out.set_device(_capi.DEVICE_CUDA)
            # torch's current stream orders the run, which is queued there
            # without waiting; torch's handle 0 is the legacy default stream,
            # CU_STREAM_LEGACY to the driver (NULL would wait for the run).
            stream = self._raw_stream(index) or _capi.CU_STREAM_LEGACY
        status = self._run(self._address, self._in.count, self._in.address,
                           self._out.count, self._out.address, stream)
        if status:
            _capi.check(status)

    def _call_dlpack(self, objects, out):
        """Objects of another library, through DLPack: host ones as NumPy
        views, device ones by address (outputs from the library's own
        `empty`, as CuPy has, unless `out` gives them)."""
        device, device_id = objects[0].__dlpack_device__()
        if device == _dlpack.CPU:
            return self._call_numpy([np.from_dlpack(obj) for obj in objects],
                                    out)
        if device != _dlpack.CUDA or device_id != 0:
            raise _capi.Error("fusec: error: fusec runs on the CPU and on "
                              "cuda:0, the tensors are on DLPack device "
                              "(%d, %d)" % (device, device_id))
        if out is None:
            library = sys.modules[type(objects[0]).__module__.split(".")[0]]
            if not hasattr(library, "empty"):
                raise _capi.Error("fusec: error: %s has no empty() to allocate "
                                  "the outputs: pass out=[...]"
                                  % library.__name__)
            out = [library.empty(spec.shape,
                                 dtype=_dtypes.numpy_dtype(spec.dtype))
                   for spec in self.outputs]
        views = []
        for binding, group, specs in ((self._in, objects, self.inputs),
                                      (self._out, out, self.outputs)):
            for index, (obj, spec) in enumerate(zip(group, specs)):
                # Work the producer queued is ordered before the legacy
                # default stream, which the run waits for.
                view = _dlpack.View(obj, _dlpack.LEGACY_DEFAULT_STREAM)
                views.append(view)
                if view.dtype != spec.dtype or view.shape != spec.shape:
                    self._reject(binding, index, view.data,
                                 _dtypes.code_of(view.dtype), view.shape)
                if view.device != _dlpack.CUDA:
                    raise _capi.Error("fusec: error: %s is not on cuda"
                                      % spec.name)
                if not _dlpack.contiguous(view.shape, view.strides):
                    self._reject(binding, index, view.data,
                                 binding.array[index].dtype,
                                 view.shape, view.strides)
                binding.slots[index].data = view.data
        self._in.set_device(_capi.DEVICE_CUDA)
        self._out.set_device(_capi.DEVICE_CUDA)
        # NULL: ordered with the legacy default stream, returning once the
        # outputs are written (another library's streams are unknown here).
        _capi.check(self._run(self._address, self._in.count, self._in.address,
                              self._out.count, self._out.address, None))
        del views
        return list(out)

    def save(self, path):
        """Writes the compiled model to `path` as one package file: its
        program, compiled kernels and weights; fusec.load(path) runs it with
        no compiler."""
        _capi.check(_capi.lib.fusec_model_save(self._handle,
                                               os.fsencode(path)))

    def synchronize(self):
        """Waits for the device runs queued on torch's streams; raises the
        errors of queued work."""
        _capi.check(_capi.lib.fusec_model_synchronize(self._handle))

    @property
    def kernels(self):
        """The generated kernels in run order (library calls excluded)."""
        if self._kernels is None:
            lib = _capi.lib
            count = ctypes.c_size_t()
            _capi.check(lib.fusec_model_kernel_count(self._handle,
                                                     ctypes.byref(count)))
            kernels = []
            for index in range(count.value):
                name, source = ctypes.c_char_p(), ctypes.c_char_p()
                op_count = ctypes.c_size_t()
                ops = ctypes.POINTER(ctypes.c_char_p)()
                _capi.check(lib.fusec_model_kernel(
                    self._handle, index, ctypes.byref(name),
                    ctypes.byref(op_count), ctypes.byref(ops),
                    ctypes.byref(source)))
                kernels.append(Kernel(
                    _capi.decode(name.value),
                    tuple(_capi.decode(ops[i]) for i in range(op_count.value)),
                    _capi.decode(source.value)))
            self._kernels = kernels
        return list(self._kernels)

    def profile(self, runs=20, format="text"):
        """Times each kernel and library call over `runs` runs on seeded
        random inputs, as `fusec --run --profile` does: the table as text,
        or (format="json") the --profile-json document as a dict."""
        if format not in ("text", "json"):
            raise _capi.Error("fusec: error: unknown profile format %r "
                              "(expected 'text' or 'json')" % (format,))
        report = ctypes.c_char_p()
        _capi.check(_capi.lib.fusec_model_profile(
            self._handle, runs,
            _capi.PROFILE_JSON if format == "json" else _capi.PROFILE_TEXT,
            ctypes.byref(report)))
        text = _capi.decode(report.value)
        return json.loads(text) if format == "json" else text
