"""fusec.compile and the compiled model (fusec_compile_*, fusec_model_*).

A call moves no data it need not: NumPy inputs are read in place when
C-contiguous (else one contiguous copy is made), and torch CUDA tensors are
passed by address, ordered with torch's current stream, with outputs
allocated by torch on the same device. The ctypes argument arrays are built
once per model; a call only fills in the addresses.
"""

import ctypes
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

from . import _capi, _dtypes
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


_BOOL_OPTIONS = {
    "fast_math": _capi.lib.fusec_options_set_fast_math,
    "tf32": _capi.lib.fusec_options_set_tf32,
    "fuse": _capi.lib.fusec_options_set_fuse,
    "attention": _capi.lib.fusec_options_set_attention,
    "cuda_graphs": _capi.lib.fusec_options_set_cuda_graphs,
    "kernel_overlap": _capi.lib.fusec_options_set_kernel_overlap,
}
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
            if key in _BOOL_OPTIONS:
                _capi.check(_BOOL_OPTIONS[key](handle, bool(value)))
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
            elif key == "on_remark":
                self.callback = _capi.RemarkCallback(
                    lambda text, _: value(_capi.decode(text)))
                _capi.check(_capi.lib.fusec_options_set_remark_callback(
                    handle, self.callback, None))
            else:
                raise TypeError(
                    "fusec.compile() got an unknown option %r (options: "
                    "%s)" % (key, ", ".join(sorted(
                        list(_BOOL_OPTIONS) + ["gpu_arch", "cache_dir",
                                               "input_shapes", "on_remark"]))))

    def __del__(self):
        _capi.lib.fusec_options_destroy(self.handle)


def compile(model, target=None, **options):
    """Compiles `model`: a path (.onnx, .onnxtxt, .json, .mlir), an
    onnx.ModelProto (serialized in memory), or a fusec.Graph.

    target: "cpu", "cuda" or None (cuda when a GPU is usable, else cpu).
    options: fast_math, tf32, fuse, attention, cuda_graphs, kernel_overlap
    (bools), gpu_arch ("sm_90a"), cache_dir, input_shapes ({input name:
    shape} for ONNX inputs with symbolic dims), on_remark (called with each
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
        for slot, (spec, code, shape) in zip(self.array, ports):
            slot.dtype, slot.ndim, slot.shape = code, len(spec.shape), shape
        self.count = len(ports)


class Model:
    """A compiled model. Call it on arrays (NumPy or torch, one per input,
    in order) for a list with one array of the same kind per output."""

    def __init__(self, handle):
        self._handle = handle
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

    def __del__(self):
        if getattr(self, "_handle", None):
            _capi.lib.fusec_model_destroy(self._handle)
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
        torch = sys.modules.get("torch")
        if torch is not None and arrays and isinstance(arrays[0],
                                                        torch.Tensor):
            return self._call_torch(torch, arrays, out)
        return self._call_numpy(arrays, out)

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

    def _reject(self, binding, index, dtype_code, shape, strides=None):
        """Lets the C API reject tensor `index` of `binding` (self._in or
        self._out), of this dtype, shape and strides, with its message."""
        copies = {}
        for which in (self._in, self._out):
            copies[id(which)] = (_capi.Tensor * max(which.count, 1))(
                *which.array[:which.count])
        shape_array = _capi.int64_array(shape)
        stride_array = None if strides is None else _capi.int64_array(strides)
        slot = copies[id(binding)][index]  # a view into the copy
        slot.dtype, slot.ndim, slot.shape = dtype_code, len(shape), shape_array
        slot.strides = stride_array
        _capi.check(self._run(self._handle, self._in.count,
                              copies[id(self._in)], self._out.count,
                              copies[id(self._out)], None))
        raise AssertionError("fusec accepted a mismatched tensor")

    def _bind_numpy(self, binding, index, array, spec):
        """Points slot `index` of `binding` at NumPy `array`; returns the
        array it points at (a contiguous copy of an input that is not)."""
        if type(array) is not np.ndarray:
            array = np.asarray(array)
        if (not _dtypes.accepts_numpy(spec.dtype, array.dtype)
                or array.shape != spec.shape):
            self._reject(binding, index, _dtypes.code_of(array.dtype),
                         array.shape)
        if not array.flags.c_contiguous:
            if binding is self._out:
                self._reject(binding, index, binding.array[index].dtype,
                             array.shape, [s // array.itemsize
                                           for s in array.strides])
            array = np.ascontiguousarray(array)
        slot = binding.array[index]
        slot.data = array.ctypes.data
        slot.device = _capi.DEVICE_CPU
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
        _capi.check(self._run(self._handle, self._in.count, self._in.array,
                              self._out.count, self._out.array, None))
        del keep
        return results

    def _bind_torch(self, binding, index, tensor, spec, dtype, device):
        """Points slot `index` of `binding` at torch `tensor` on `device`;
        returns the tensor it points at (a contiguous copy of a CPU input
        that is not)."""
        if tensor.dtype != dtype or tensor.shape != spec.shape:
            self._reject(binding, index, _dtypes.code_of(tensor.dtype),
                         tuple(tensor.shape))
        if tensor.device != device:
            raise _capi.Error("fusec: error: %s '%s' is on %s but the first "
                              "input is on %s" % (
                                  "input" if binding is self._in else
                                  "output", spec.name, tensor.device, device))
        if not tensor.is_contiguous():
            # No copies on the device, nor into an output.
            if device.type == "cuda" or binding is self._out:
                self._reject(binding, index, binding.array[index].dtype,
                             tuple(tensor.shape), tensor.stride())
            tensor = tensor.contiguous()
        slot = binding.array[index]
        slot.data = tensor.data_ptr()
        slot.device = (_capi.DEVICE_CUDA if device.type == "cuda"
                       else _capi.DEVICE_CPU)
        return tensor

    def _call_torch(self, torch, tensors, out):
        device = tensors[0].device
        cuda = device.type == "cuda"
        if self._torch_out is None:
            self._torch_out = [(spec.shape, _dtypes.torch_dtype(spec.dtype))
                               for spec in self.outputs]
            self._torch_in = [_dtypes.torch_dtype(spec.dtype)
                              for spec in self.inputs]
        if cuda and device.index not in (0, None):
            raise _capi.Error("fusec: error: fusec runs on cuda:0, the "
                              "tensors are on %s" % device)
        keep = [self._bind_torch(self._in, index, tensor, spec, dtype, device)
                for index, (tensor, spec, dtype) in enumerate(
                    zip(tensors, self.inputs, self._torch_in))]
        if out is None:
            results = [torch.empty(shape, dtype=dtype, device=device)
                       for shape, dtype in self._torch_out]
        else:
            results = list(out)
        for index, (result, spec, (_, dtype)) in enumerate(
                zip(results, self.outputs, self._torch_out)):
            self._bind_torch(self._out, index, result, spec, dtype, device)
        # torch's current stream orders the run, which is queued there
        # without waiting; torch's handle 0 is the legacy default stream,
        # CU_STREAM_LEGACY (1) to the driver (NULL would wait for the run).
        stream = ((torch.cuda.current_stream(device).cuda_stream or
                   _capi.CU_STREAM_LEGACY) if cuda else None)
        _capi.check(self._run(self._handle, self._in.count, self._in.array,
                              self._out.count, self._out.array, stream))
        del keep
        return results

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
