"""libfusec.so through ctypes: the C API of compiler/include/fusec/fusec.h.

ctypes rather than a compiled extension, so that one package loads on every
Python 3 (3.11 here, 3.12 on the GPU machines): docs/python.md.
"""

import ctypes
import os

# fusec_status
OK = 0
# fusec_device
DEVICE_CPU, DEVICE_CUDA = 0, 1
# The CUstream handle of the legacy default stream.
CU_STREAM_LEGACY = 0x1
# fusec_target
TARGET_AUTO, TARGET_CPU, TARGET_CUDA = 0, 1, 2
TARGET_NAMES = {TARGET_CPU: "cpu", TARGET_CUDA: "cuda"}
# fusec_flag, by compile()'s option names
FLAGS = {"fast_math": 0, "tf32": 1, "fuse": 2, "attention": 3,
         "cuda_graphs": 4, "kernel_overlap": 5}
# fusec_attr_kind
ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS = 0, 1, 2, 3
# fusec_format
FORMAT_JSON, FORMAT_MLIR, FORMAT_ONNX, FORMAT_ONNX_TEXT = 0, 1, 2, 3
# fusec_profile_format
PROFILE_TEXT, PROFILE_JSON = 0, 1


class Error(Exception):
    """A failure reported by fusec; the message names the file and node
    where there is one ("model.json: node 'n3': error: ...")."""


class Tensor(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("data", ctypes.c_void_p),
        ("device", ctypes.c_int),
    ]


class Attr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("int_value", ctypes.c_int64),
        ("float_value", ctypes.c_double),
        ("string_value", ctypes.c_char_p),
        ("ints", ctypes.POINTER(ctypes.c_int64)),
        ("count", ctypes.c_size_t),
    ]


RemarkCallback = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)

_P = ctypes.c_void_p
_STR = ctypes.c_char_p
_SIZE = ctypes.c_size_t
_I32 = ctypes.c_int32
_INT = ctypes.c_int
_PSTR = ctypes.POINTER(ctypes.c_char_p)
_PSIZE = ctypes.POINTER(ctypes.c_size_t)
_PI32 = ctypes.POINTER(ctypes.c_int32)
_PINT = ctypes.POINTER(ctypes.c_int)
_PI64 = ctypes.POINTER(ctypes.c_int64)
_PPI64 = ctypes.POINTER(_PI64)
_PTENSOR = ctypes.POINTER(Tensor)

# name: (argument types, result type); a result of None is a fusec_status.
_SIGNATURES = {
    "fusec_version": ([], _STR),
    "fusec_last_error": ([], _STR),
    "fusec_dtype_name": ([_INT], _STR),
    "fusec_dtype_from_name": ([_STR, _PINT], None),
    "fusec_dtype_size": ([_INT], _SIZE),
    "fusec_cuda_available": ([], _INT),
    "fusec_options_create": ([ctypes.POINTER(_P)], None),
    "fusec_options_destroy": ([_P], "void"),
    "fusec_options_set_target": ([_P, _INT], None),
    "fusec_options_set_gpu_arch": ([_P, _STR], None),
    "fusec_options_set_flag": ([_P, _INT, _INT], None),
    "fusec_options_set_input_shape": ([_P, _STR, _I32, _PI64], None),
    "fusec_options_set_cache_dir": ([_P, _STR], None),
    "fusec_options_set_dim_range": ([_P, _STR, ctypes.c_int64,
                                     ctypes.c_int64], None),
    "fusec_options_set_dim_multiple": ([_P, _STR, ctypes.c_int64], None),
    "fusec_options_set_remark_callback": ([_P, RemarkCallback, _P], None),
    "fusec_options_set_precision": ([_P, _INT], None),
    "fusec_options_keep_f32": ([_P, _STR], None),
    "fusec_graph_create": ([_STR, ctypes.POINTER(_P)], None),
    "fusec_graph_destroy": ([_P], "void"),
    "fusec_graph_input": ([_P, _STR, _INT, _I32, _PI64, _PSTR], None),
    "fusec_graph_constant": ([_P, _STR, _PTENSOR, _PSTR], None),
    "fusec_graph_scalar": ([_P, ctypes.c_double, _INT, _PSTR], None),
    "fusec_graph_op": ([_P, _STR, _SIZE, _PSTR, _SIZE, ctypes.POINTER(Attr),
                        _PSTR], None),
    "fusec_graph_output": ([_P, _STR], None),
    "fusec_compile_file": ([_STR, _P, ctypes.POINTER(_P)], None),
    "fusec_compile_buffer": ([ctypes.c_char_p, _SIZE, _INT, _STR, _P,
                              ctypes.POINTER(_P)], None),
    "fusec_compile_graph": ([_P, _P, ctypes.POINTER(_P)], None),
    "fusec_model_destroy": ([_P], "void"),
    "fusec_model_save": ([_P, _STR], None),
    "fusec_model_load": ([_STR, ctypes.POINTER(_P)], None),
    "fusec_model_target": ([_P, _PINT], None),
    "fusec_model_name": ([_P, _PSTR], None),
    "fusec_model_input_count": ([_P, _PSIZE], None),
    "fusec_model_output_count": ([_P, _PSIZE], None),
    "fusec_model_input": ([_P, _SIZE, _PSTR, _PINT, _PI32, _PPI64], None),
    "fusec_model_output": ([_P, _SIZE, _PSTR, _PINT, _PI32, _PPI64], None),
    "fusec_model_output_updates_input": ([_P, _SIZE, _PI64], None),
    "fusec_model_output_shape": ([_P, _SIZE, _PI32, ctypes.POINTER(_PI64),
                                  _SIZE, _I32, _PI32, _PI64], None),
    # The tensor arrays by address: ints convert faster than ctypes arrays.
    "fusec_model_run": ([_P, _SIZE, _P, _SIZE, _P, _P], None),
    "fusec_model_synchronize": ([_P], None),
    "fusec_model_kernel_count": ([_P, _PSIZE], None),
    "fusec_model_kernel": ([_P, _SIZE, _PSTR, _PSIZE,
                            ctypes.POINTER(_PSTR), _PSTR], None),
    "fusec_model_profile": ([_P, _I32, _INT, _PSTR], None),
    "fusec_cache_directory": ([_STR, ctypes.c_char_p, _SIZE, _PSIZE], None),
    "fusec_cache_clear": ([_STR], None),
}


def _library_path():
    """$FUSEC_LIBRARY, else libfusec.so next to this package (installed,
    and in the build tree's build/python/fusec/)."""
    explicit = os.environ.get("FUSEC_LIBRARY")
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "libfusec.so")
    if os.path.exists(here):
        return here
    raise ImportError(
        "fusec: libfusec.so is not next to the package (%s); build fusec "
        "(it copies the package with the library into build/python/) or "
        "set FUSEC_LIBRARY to the library's path" % here)


def _load():
    library = ctypes.CDLL(_library_path())
    for name, (arguments, result) in _SIGNATURES.items():
        function = getattr(library, name)
        function.argtypes = arguments
        function.restype = (None if result == "void" else
                            ctypes.c_int if result is None else result)
    return library


lib = _load()


def check(status):
    """Raises the thread's last error unless `status` is FUSEC_OK."""
    if status != OK:
        raise Error(lib.fusec_last_error().decode("utf-8", "replace"))


def encode(text):
    return None if text is None else os.fsencode(text) if isinstance(
        text, os.PathLike) else text.encode("utf-8")


def decode(raw):
    return raw.decode("utf-8", "replace")


def int64_array(values):
    values = [int(v) for v in values]
    return (ctypes.c_int64 * max(len(values), 1))(*values)
