"""fusec.Graph: the C++ GraphBuilder in Python (fusec_graph_* of the C API).

    g = fusec.Graph("seed")
    x = g.input("x", "f32", (2, 3))
    g.output(g.op("sin", [g.op("sin", [x])]))
    model = fusec.compile(g)

Ops are fuse mnemonics with ONNX attribute names (docs/json-format.md);
values are their names (str).
"""

import ctypes

import numpy as np

from . import _capi, _dtypes


class Graph:
    def __init__(self, name="main"):
        handle = ctypes.c_void_p()
        _capi.check(_capi.lib.fusec_graph_create(_capi.encode(name),
                                                 ctypes.byref(handle)))
        self._handle = handle
        self.name = name

    # Bound early: module globals may be gone at interpreter exit.
    def __del__(self, _destroy=_capi.lib.fusec_graph_destroy):
        if getattr(self, "_handle", None):
            _destroy(self._handle)
            self._handle = None

    def input(self, name, dtype, shape):
        """A graph input of static `shape`; returns its value's name."""
        value = ctypes.c_char_p()
        _capi.check(_capi.lib.fusec_graph_input(
            self._handle, _capi.encode(name), _dtypes.code_of(dtype),
            len(shape), _capi.int64_array(shape), ctypes.byref(value)))
        return _capi.decode(value.value)

    def constant(self, name, array):
        """A constant holding a copy of `array` (NumPy, or anything
        np.asarray takes: a CPU torch tensor's .numpy())."""
        array = np.ascontiguousarray(array)
        tensor = _capi.Tensor(
            _dtypes.code_of(array.dtype), array.ndim,
            _capi.int64_array(array.shape), None,
            array.ctypes.data if array.size else None, _capi.DEVICE_CPU)
        value = ctypes.c_char_p()
        _capi.check(_capi.lib.fusec_graph_constant(
            self._handle, _capi.encode(name), ctypes.byref(tensor),
            ctypes.byref(value)))
        return _capi.decode(value.value)

    def scalar(self, value, dtype):
        """A rank-0 constant, broadcast wherever it is used."""
        defined = ctypes.c_char_p()
        _capi.check(_capi.lib.fusec_graph_scalar(
            self._handle, float(value), _dtypes.code_of(dtype),
            ctypes.byref(defined)))
        return _capi.decode(defined.value)

    def op(self, opname, inputs, **attrs):
        """Op `opname` of `inputs` (value names); attributes are ints,
        floats, strings, dtypes (passed by fusec's name) or lists of ints.
        Returns the result's value name."""
        names = (ctypes.c_char_p * max(len(inputs), 1))(
            *[_capi.encode(value) for value in inputs])
        attributes = (_capi.Attr * max(len(attrs), 1))()
        keep = []  # the buffers the attributes point at, alive for the call
        for slot, (key, value) in zip(attributes, attrs.items()):
            slot.name = _capi.encode(key)
            keep.append(slot.name)
            if isinstance(value, (bool, int, np.integer)):
                slot.kind, slot.int_value = _capi.ATTR_INT, int(value)
            elif isinstance(value, (float, np.floating)):
                slot.kind, slot.float_value = _capi.ATTR_FLOAT, float(value)
            elif isinstance(value, str):
                slot.kind, slot.string_value = (_capi.ATTR_STRING,
                                                _capi.encode(value))
            elif isinstance(value, (list, tuple, np.ndarray)):
                ints = _capi.int64_array(value)
                keep.append(ints)
                slot.kind, slot.ints, slot.count = (_capi.ATTR_INTS, ints,
                                                    len(value))
            else:  # a dtype given as a NumPy or torch dtype
                slot.kind = _capi.ATTR_STRING
                slot.string_value = _capi.encode(_dtypes.name_of(value))
        value = ctypes.c_char_p()
        _capi.check(_capi.lib.fusec_graph_op(
            self._handle, _capi.encode(opname), len(inputs), names,
            len(attrs), attributes, ctypes.byref(value)))
        return _capi.decode(value.value)

    def output(self, value):
        """Marks `value` as the next graph output."""
        _capi.check(_capi.lib.fusec_graph_output(self._handle,
                                                 _capi.encode(value)))
