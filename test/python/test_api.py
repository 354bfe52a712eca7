"""The fusec Python package on the CPU: compiling each kind of model, runs on
NumPy arrays of each dtype against NumPy references, the model's queries,
and errors. Run by ctest's `python` test (PYTHONPATH=build/python)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fusec

SOURCE_DIR = os.environ.get(
    "FUSEC_TEST_SOURCE_DIR",
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
SEED = os.path.join(SOURCE_DIR, "examples", "seed.json")
SEED_MLIR = os.path.join(SOURCE_DIR, "test", "fuzz", "corpus", "mlir",
                         "model-seed.mlir")

# Per dtype: (absolute, relative) tolerance against the NumPy reference.
TOLERANCE = {"f64": (1e-12, 1e-12), "f32": (1e-6, 1e-5), "f16": (1e-3, 1e-3),
             "bf16": (1e-2, 1e-2)}


def seed_reference(x, y):
    s = np.sin(np.sin(np.sin(np.sin(x.astype(np.float64)))))
    return s * y + s


def seed_inputs():
    x = np.linspace(-1.5, 1.5, 6, dtype=np.float32).reshape(2, 3)
    y = np.linspace(2.0, -1.0, 6, dtype=np.float32).reshape(2, 3)
    return x, y


def check_seed(model):
    x, y = seed_inputs()
    (z,) = model(x, y)
    assert isinstance(z, np.ndarray) and z.dtype == np.float32
    np.testing.assert_allclose(z, seed_reference(x, y), rtol=1e-5, atol=1e-6)


def seed_graph():
    g = fusec.Graph("seed")
    x = g.input("x", "f32", (2, 3))
    y = g.input("y", np.float32, [2, 3])
    s = x
    for _ in range(4):
        s = g.op("sin", [s])
    g.output(g.op("add", [g.op("mul", [s, y]), s]))
    return g


@pytest.fixture(scope="module")
def seed_model():
    return fusec.compile(SEED, target="cpu")


def test_import_leaves_torch_alone():
    code = "import fusec, sys; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_version():
    assert fusec.version() == fusec.__version__
    assert fusec.__version__.count(".") == 2


def test_compile_path(seed_model):
    check_seed(seed_model)
    assert seed_model.target == "cpu"


def test_save_and_load_package(seed_model, tmp_path):
    path = tmp_path / "seed.fusec"
    seed_model.save(path)
    loaded = fusec.load(path)
    check_seed(loaded)
    assert loaded.target == "cpu"
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    (packaged,) = loaded(x, x)
    (compiled,) = seed_model(x, x)
    np.testing.assert_array_equal(packaged, compiled)
    with pytest.raises(fusec.Error, match="not a fusec package"):
        fusec.load(SEED)
    with pytest.raises(fusec.Error, match="cannot open the package"):
        fusec.load(tmp_path / "missing.fusec")


def test_compile_mlir_path_and_text():
    check_seed(fusec.compile(SEED_MLIR, target="cpu"))
    with open(SEED_MLIR) as f:
        check_seed(fusec.compile_text(f.read(), "mlir", target="cpu"))


def test_compile_json_text():
    with open(SEED) as f:
        check_seed(fusec.compile_text(f.read(), "json", "seed.json",
                                      target="cpu"))


def test_compile_graph():
    check_seed(fusec.compile(seed_graph(), target="cpu"))


def test_compile_onnx_model_proto():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Sin", ["x"], ["s"], name="sin"),
         helper.make_node("Mul", ["s", "y"], ["z"], name="mul")],
        "proto",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = fusec.compile(proto, target="cpu", input_shapes={"x": (2, 3)})
    assert [spec.name for spec in model.inputs] == ["x", "y"]
    x, y = seed_inputs()
    (z,) = model(x, y)
    np.testing.assert_allclose(z, np.sin(x) * y, rtol=1e-6)
    # The path of the same model.
    assert onnx is not None


def binary_case(dtype_name, op, a, b, expected, tolerance=None):
    g = fusec.Graph(op)
    x = g.input("a", dtype_name, a.shape)
    y = g.input("b", dtype_name, b.shape)
    g.output(g.op(op, [x, y]))
    model = fusec.compile(g, target="cpu")
    (result,) = model(a, b)
    assert result.shape == expected.shape
    if tolerance is None:
        np.testing.assert_array_equal(result, expected)
    else:
        np.testing.assert_allclose(result.astype(np.float64),
                                   expected.astype(np.float64),
                                   atol=tolerance[0], rtol=tolerance[1])
    return result


@pytest.mark.parametrize("dtype", ["f32", "f16", "f64"])
def test_float_dtypes(dtype):
    numpy_dtype = {"f32": np.float32, "f16": np.float16, "f64": np.float64}
    a = np.linspace(-3, 3, 12).reshape(3, 4).astype(numpy_dtype[dtype])
    b = np.linspace(0.5, 2, 4).astype(numpy_dtype[dtype])
    result = binary_case(dtype, "mul", a, np.broadcast_to(b, a.shape).copy(),
                         (a * b), TOLERANCE[dtype])
    assert result.dtype == numpy_dtype[dtype]


@pytest.mark.parametrize("dtype,numpy_dtype", [("i64", np.int64),
                                               ("i32", np.int32),
                                               ("i8", np.int8),
                                               ("u8", np.uint8)])
def test_integer_dtypes(dtype, numpy_dtype):
    info = np.iinfo(numpy_dtype)
    a = np.array([[info.max, 1, -3 if info.min < 0 else 3],
                  [7, info.min, 100]], dtype=numpy_dtype)
    b = np.array([[1, 2, 3], [4, 5, 6]], dtype=numpy_dtype)
    with np.errstate(over="ignore"):
        expected = (a + b).astype(numpy_dtype)  # wraps, as fusec does
    result = binary_case(dtype, "add", a, b, expected)
    assert result.dtype == numpy_dtype


def test_bool_dtype():
    a = np.array([[True, False, True], [False, False, True]])
    b = np.array([[True, True, False], [False, True, True]])
    result = binary_case("i1", "and", a, b, a & b)
    assert result.dtype == np.bool_
    binary_case(np.bool_, "xor", a, b, a ^ b)


def to_bf16_bits(values):
    """float32 -> bf16 bit patterns, rounded to nearest even."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def test_bf16_as_uint16_bits():
    a = to_bf16_bits(np.linspace(-2, 2, 6).reshape(2, 3))
    b = to_bf16_bits(np.linspace(1, 3, 6).reshape(2, 3))
    g = fusec.Graph("bf16_add")
    g.output(g.op("add", [g.input("a", "bf16", (2, 3)),
                          g.input("b", "bf16", (2, 3))]))
    model = fusec.compile(g, target="cpu")
    assert model.inputs[0].dtype == "bf16"
    (result,) = model(a, b)
    assert result.dtype == np.uint16  # the raw bits
    expected = from_bf16_bits(a) + from_bf16_bits(b)
    np.testing.assert_allclose(from_bf16_bits(result), expected,
                               *reversed(TOLERANCE["bf16"]))


def test_constant_scalar_and_attributes():
    weights = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    g = fusec.Graph("attrs")
    x = g.input("x", "f32", (2, 3))
    w = g.constant("w", weights)
    weights[...] = 99  # the graph holds a copy
    y = g.op("leaky_relu", [g.op("mul", [x, w])], alpha=0.25)
    y = g.op("mul", [y, g.scalar(2, "f32")])
    total = g.op("reduce_sum", [y], axes=[1], keepdims=0)
    g.output(y)
    g.output(g.op("cast", [total], dtype=np.int32))
    g.output(g.op("cast", [total], dtype="f16"))
    model = fusec.compile(g, target="cpu")
    assert [spec.dtype for spec in model.outputs] == ["f32", "i32", "f16"]
    x_value = np.linspace(-1, 4, 6, dtype=np.float32).reshape(2, 3)
    y_value, as_int, as_half = model(x_value)
    product = x_value * (np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    expected = np.where(product < 0, 0.25 * product, product) * 2
    np.testing.assert_allclose(y_value, expected, rtol=1e-6)
    np.testing.assert_array_equal(as_int, expected.sum(1).astype(np.int32))
    np.testing.assert_allclose(as_half, expected.sum(1), rtol=1e-3)


def test_run_dict_and_queries(seed_model):
    assert seed_model.inputs == [fusec.TensorSpec("x", "f32", (2, 3)),
                                 fusec.TensorSpec("y", "f32", (2, 3))]
    assert seed_model.outputs == [fusec.TensorSpec("z", "f32", (2, 3))]
    x, y = seed_inputs()
    results = seed_model.run({"y": y, "x": x})
    assert list(results) == ["z"]
    np.testing.assert_allclose(results["z"], seed_reference(x, y), rtol=1e-5)
    with pytest.raises(fusec.Error, match="missing \\['y'\\]"):
        seed_model.run({"x": x})


def test_kernels(seed_model):
    kernels = seed_model.kernels
    assert len(kernels) == 1
    assert kernels[0].ops == ("sin", "sin", "sin", "sin", "mul", "add")
    assert kernels[0].name in kernels[0].source


def test_profile(seed_model):
    table = seed_model.profile(runs=3)
    assert seed_model.kernels[0].name in table
    report = seed_model.profile(runs=3, format="json")
    assert isinstance(report, dict) and report["steps"]
    with pytest.raises(fusec.Error, match="unknown profile format"):
        seed_model.profile(format="xml")


def test_inputs_read_in_place_or_copied_once(seed_model):
    x, y = seed_inputs()
    wide = np.zeros((2, 6), np.float32)
    wide[:, ::2] = x  # a strided view: copied to a contiguous array
    transposed = np.ascontiguousarray(y.T).T  # Fortran order
    (z,) = seed_model(wide[:, ::2], transposed)
    np.testing.assert_allclose(z, seed_reference(x, y), rtol=1e-5)
    with pytest.raises(fusec.Error, match="input 'x' is f32\\[2, 3\\] but "
                       "the tensor given is f64\\[2, 3\\]"):
        seed_model(x.tolist(), y)  # np.asarray's f64: never converted


def test_out_arrays(seed_model):
    x, y = seed_inputs()
    out = np.empty((2, 3), np.float32)
    (z,) = seed_model(x, y, out=[out])
    assert z is out
    np.testing.assert_allclose(out, seed_reference(x, y), rtol=1e-5)


def test_first_call_errors():
    """A model's first call with a mismatched tensor names the mismatch,
    not an input slot the call has not bound yet."""
    x, y = seed_inputs()
    with pytest.raises(fusec.Error, match="input 'y' is f32\\[2, 3\\] but "
                       "the tensor given is f64\\[2, 3\\]"):
        fusec.compile(SEED, target="cpu")(x, y.astype(np.float64))


def test_run_errors(seed_model):
    x, y = seed_inputs()
    with pytest.raises(fusec.Error, match="input 'y' is f32\\[2, 3\\] but "
                       "the tensor given is f64\\[2, 3\\]"):
        seed_model(x, y.astype(np.float64))
    with pytest.raises(fusec.Error, match="input 'x' is f32\\[2, 3\\] but "
                       "the tensor given is f32\\[3, 2\\]"):
        seed_model(x.reshape(3, 2), y)
    with pytest.raises(fusec.Error, match="takes 2 inputs but got 1"):
        seed_model(x)
    with pytest.raises(fusec.Error, match="output 'z' is f32\\[2, 3\\]"):
        seed_model(x, y, out=[np.empty((2, 3), np.float16)])
    with pytest.raises(fusec.Error, match="unknown dtype"):
        seed_model(x, y.astype(np.complex64))


def test_compile_errors(tmp_path):
    with pytest.raises(fusec.Error, match="/nonexistent/m.json: error: "
                       "cannot open"):
        fusec.compile("/nonexistent/m.json", target="cpu")
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"fusec_graph": 1, "inputs": [{"name": "x", "dtype": "f32", '
        '"shape": [2]}], "nodes": [{"name": "n7", "op": "frobnicate", '
        '"inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]}')
    with pytest.raises(fusec.Error, match="bad.json: node 'n7': error:"):
        fusec.compile(bad, target="cpu")  # a PathLike
    g = fusec.Graph("broken")
    g.output(g.op("matmul", [g.input("x", "f32", (2, 3))]))
    with pytest.raises(fusec.Error, match="node 'matmul_"):
        fusec.compile(g, target="cpu")
    with pytest.raises(fusec.Error, match="unknown target"):
        fusec.compile(SEED, target="tpu")
    with pytest.raises(TypeError, match="unknown option 'fastmath'"):
        fusec.compile(SEED, target="cpu", fastmath=True)
    with pytest.raises(TypeError, match="takes a path"):
        fusec.compile(42)
    with pytest.raises(fusec.Error, match="unknown dtype"):
        fusec.Graph().input("x", "f17", (1,))


def test_options_and_remarks(tmp_path):
    remarks = []
    model = fusec.compile(SEED, target="cpu", fuse=False, fast_math=True,
                          tf32=False, attention=True, cuda_graphs=False,
                          kernel_overlap=False, gpu_arch="sm_90a",
                          cache_dir=tmp_path / "cache", on_remark=remarks.append)
    assert len(model.kernels) == 6  # one kernel per op
    check_seed(model)
    assert all("remark" in remark for remark in remarks)


def test_precision():
    rng = np.random.default_rng(3)
    g = fusec.Graph("block")
    x = g.input("x", "f32", (16, 256))
    w = g.constant("w", rng.uniform(-0.1, 0.1, (256, 64)).astype(np.float32))
    g.output(g.op("softmax", [g.op("matmul", [x, w])]))
    data = rng.uniform(-1, 1, (16, 256)).astype(np.float32)
    (expected,) = fusec.compile(g, target="cpu")(data)
    for precision, bound in (("bf16", 2e-2), ("f16", 5e-3)):
        (actual,) = fusec.compile(g, target="cpu", precision=precision)(data)
        assert actual.dtype == np.float32  # outputs keep their dtype
        error = np.linalg.norm(actual - expected) / np.linalg.norm(expected)
        assert 0 < error <= bound, (precision, error)
    with pytest.raises(fusec.Error, match="no node named 'nope'"):
        fusec.compile(g, target="cpu", precision="bf16", keep_f32=["nope"])
    with pytest.raises(fusec.Error, match="precision must be bf16, f16 or "
                                          "f32 \\(off\\), got i8"):
        fusec.compile(g, target="cpu", precision="i8")


ROWS_MODEL = """{"fusec_graph": 1, "name": "rows",
 "inputs": [{"name": "x", "dtype": "f32", "shape": ["rows", 32]},
            {"name": "b", "dtype": "f32", "shape": [32]}],
 "nodes": [{"name": "a", "op": "add", "inputs": ["x", "b"], "outputs": ["y"]},
           {"name": "s", "op": "softmax", "inputs": ["y"], "outputs": ["z"]}],
 "outputs": ["z"]}"""


def test_symbolic_dims():
    """dims={name: (min, max)}: one compile runs at every size in the range,
    each run against the model compiled for that size (dims={name: size})."""
    model = fusec.compile_text(ROWS_MODEL, "json", "rows.json", target="cpu",
                               dims={"rows": (1, 64)})
    assert model.inputs[0].shape == (-1, 32)
    assert model.output_shapes([(5, 32), (32,)]) == [(5, 32)]
    rng = np.random.default_rng(5)
    b = rng.uniform(-1, 1, 32).astype(np.float32)
    for rows in (1, 5, 64, 5):
        x = rng.uniform(-3, 3, (rows, 32)).astype(np.float32)
        fixed = fusec.compile_text(ROWS_MODEL, "json", "rows.json",
                                   target="cpu", fuse=False,
                                   dims={"rows": rows})
        assert fixed.inputs[0].shape == (rows, 32)
        (expected,) = fixed(x, b)
        (actual,) = model(x, b)
        assert actual.shape == (rows, 32)
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
        out = [np.empty((rows, 32), np.float32)]
        model(x, b, out=out)
        np.testing.assert_allclose(out[0], expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(fusec.Error, match="input 'x' dim 0 \\('rows'\\) is "
                                          "65, outside its range 1..64"):
        model(np.zeros((65, 32), np.float32), b)
    with pytest.raises(fusec.Error, match="output 'z' is \\[3, 32\\] for "
                                          "these inputs"):
        model(np.zeros((3, 32), np.float32), b,
              out=[np.empty((4, 32), np.float32)])


def test_symbolic_dims_multiple():
    """dims={name: (min, max, multiple)}: sizes that are multiples run (as
    the model compiled for that size does), others are errors naming the
    dim; a multiple no size in the range has is refused at compile."""
    model = fusec.compile_text(ROWS_MODEL, "json", "rows.json", target="cpu",
                               dims={"rows": (4, 64, 4)})
    rng = np.random.default_rng(7)
    b = rng.uniform(-1, 1, 32).astype(np.float32)
    x = rng.uniform(-3, 3, (12, 32)).astype(np.float32)
    fixed = fusec.compile_text(ROWS_MODEL, "json", "rows.json", target="cpu",
                               fuse=False, dims={"rows": 12})
    np.testing.assert_allclose(model(x, b)[0], fixed(x, b)[0], rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(fusec.Error, match="input 'x' dim 0 \\('rows'\\) is "
                                          "10, not a multiple of 4"):
        model(np.zeros((10, 32), np.float32), b)
    with pytest.raises(fusec.Error, match="no size of dim 'rows' \\(1..7\\) "
                                          "is a multiple of 8"):
        fusec.compile_text(ROWS_MODEL, "json", "rows.json", target="cpu",
                           dims={"rows": (1, 7, 8)})


def test_cache_controls(tmp_path):
    directory = tmp_path / "kernels"
    assert fusec.cache_dir(str(directory)) == str(directory)
    assert fusec.cache_dir()  # the default
    fusec.compile(SEED, target="cpu", cache_dir=directory)
    assert list(directory.glob("host/*.so"))  # the kernels' library
    fusec.clear_cache(str(directory))
    assert not list(directory.glob("host/*.so"))


class DLPackOnly:
    """An array of another library: only the DLPack protocol."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        assert stream is None or stream == 1  # the legacy default stream
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_host_objects(seed_model):
    x, y = seed_inputs()
    (z,) = seed_model(DLPackOnly(x), DLPackOnly(y))
    np.testing.assert_allclose(z, seed_reference(x, y), rtol=1e-5)
    with pytest.raises(fusec.Error, match="input 'x' is f32\\[2, 3\\] but "
                       "the tensor given is f64\\[2, 3\\]"):
        seed_model(DLPackOnly(x.astype(np.float64)), DLPackOnly(y))


def test_dlpack_capsules_read_in_place():
    """The capsule reader the CUDA path uses, on NumPy's capsules."""
    from fusec import _dlpack

    base = np.arange(24, dtype=np.float16).reshape(4, 6)
    view = _dlpack.View(base[1:, ::2], None)
    assert view.device == _dlpack.CPU
    assert (view.dtype, view.shape) == ("f16", (3, 3))
    assert view.data == base[1:, ::2].ctypes.data  # no copy
    assert view.strides == (6, 2) and not _dlpack.contiguous(view.shape,
                                                             view.strides)
    assert _dlpack.contiguous((3, 1, 2), (2, 7, 1))
    assert _dlpack.View(np.zeros(3, np.bool_), None).dtype == "i1"


DECODER = os.path.join(SOURCE_DIR, "test", "models", "generate", "decoder.onnx")


def test_updates_input():
    """A decode step's present caches may update its past ones in place
    (the one-position TensorScatter is pointwise); the prefill's may not."""
    decode = fusec.compile(DECODER, target="cpu", input_shapes={"ids": (1, 1)})
    assert decode.updates_input == {
        "present_%s_%d" % (what, layer): "past_%s_%d" % (what, layer)
        for layer in range(2) for what in ("key", "value")}
    prefill = fusec.compile(DECODER, target="cpu",
                            input_shapes={"ids": (1, 8)})
    assert prefill.updates_input == {}
