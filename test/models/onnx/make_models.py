"""Writes the small ONNX models of test/cli/onnx.test (run by hand with the
PyPI onnx package, `python3 make_models.py`; the outputs are committed)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]
rng = np.random.default_rng(0)


def save(graph, name):
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="fusec")
    model.ir_version = 8  # readable by Debian's libonnx 1.12
    onnx.save(model, name)


# x @ w + b -> relu -> softmax: one library call and one kernel on the CPU.
w = numpy_helper.from_array(rng.uniform(-1, 1, (8, 16)).astype(np.float32), "w")
b = numpy_helper.from_array(rng.uniform(-1, 1, (16,)).astype(np.float32), "b")
save(helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
     helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
     helper.make_node("Relu", ["a"], ["r"], name="relu"),
     helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1)],
    "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [w, b]),
    "mlp.onnx")

# A shape given by a Constant node and a symbolic batch dim.
shape = numpy_helper.from_array(np.array([-1, 4], dtype=np.int64), "shape")
save(helper.make_graph(
    [helper.make_node("Constant", [], ["s"], name="shape", value=shape),
     helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
     helper.make_node("Tanh", ["r"], ["y"], name="tanh")],
    "symbolic",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])]),
    "symbolic.onnx")

# Two unsupported nodes and an unsupported attribute: all reported at once.
save(helper.make_graph(
    [helper.make_node("Conv", ["x", "k"], ["c"], name="conv"),
     helper.make_node("Trilu", ["c"], ["t"], name="mask"),
     helper.make_node("Transpose", ["t"], ["u"], name="odd", perm=[1, 0],
                      foo=3),
     helper.make_node("Relu", ["u"], ["y"], name="relu")],
    "unsupported",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
     helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 1, 3, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])]),
    "unsupported.onnx")

# An initializer whose external data points out of the model's folder.
escape = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2])
escape.data_location = TensorProto.EXTERNAL
for key, value in [("location", "../secret.bin"), ("offset", "0"),
                   ("length", "8")]:
    entry = escape.external_data.add()
    entry.key, entry.value = key, value
save(helper.make_graph(
    [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "escape",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [escape]),
    "external_escape.onnx")

# An input for mlp.onnx and its output by ONNX's own reference evaluator:
# fusec's result is checked against an independent implementation.
from onnx.reference import ReferenceEvaluator  # noqa: E402

x = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
(y,) = ReferenceEvaluator("mlp.onnx").run(None, {"x": x})
for array, name in [(x, "mlp_input_0.pb"), (y, "mlp_output_0.pb")]:
    with open(name, "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())
