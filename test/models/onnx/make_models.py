"""Writes the small ONNX models of test/e2e/onnx-models.test (run by hand with the
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
    [helper.make_node("Unique", ["x"], ["c"], name="unique"),
     helper.make_node("NonZero", ["c"], ["t"], name="mask"),
     helper.make_node("Transpose", ["t"], ["u"], name="odd", perm=[1, 0],
                      foo=3),
     helper.make_node("Relu", ["u"], ["y"], name="relu")],
    "unsupported",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
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

# ONNX's pointwise ops beyond the basics (issue 9), each output checked
# against onnx.reference on inputs with NaN, infinities, -0 and ties.
# Mish and Bitwise* are opset 18 ops (fusec reads 11-17): the JSON tests
# cover them.
def concat_outputs(prefix, values, out):
    """Unsqueezes each value to [1, ...] and concatenates them on axis 0."""
    nodes, parts = [], []
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64),
                                   prefix + "_axes")
    for i, value in enumerate(values):
        part = f"{prefix}_part{i}"
        nodes.append(helper.make_node("Unsqueeze", [value, prefix + "_axes"],
                                      [part], name=part))
        parts.append(part)
    nodes.append(helper.make_node("Concat", parts, [out], name=out, axis=0))
    return nodes, axes


pw = []
node = lambda op, ins, out, **attrs: pw.append(  # noqa: E731
    helper.make_node(op, ins, [out], name=out, **attrs)) or out
floats = [node(op, ["x"], op.lower()) for op in [
    "Tan", "Atan", "Sinh", "Cosh", "Asinh", "Round", "Sign", "Softplus",
    "Softsign", "HardSwish", "Elu", "Selu", "Celu", "HardSigmoid",
    "LeakyRelu"]]
floats += [
    node("LeakyRelu", ["x"], "leaky_alpha", alpha=0.25),
    node("Elu", ["x"], "elu_alpha", alpha=0.5),
    node("Selu", ["x"], "selu_attrs", alpha=2.0, gamma=0.75),
    node("Celu", ["x"], "celu_alpha", alpha=2.0),
    node("HardSigmoid", ["x"], "hard_sigmoid_attrs", alpha=0.5, beta=0.25),
    node("Shrink", ["x"], "shrink", bias=0.5, lambd=1.0),
    node("Clip", ["x", "lo", "hi"], "clip"),
    node("Clip", ["x", "", "hi"], "clip_max"),
    node("Mod", ["x", "y"], "fmod", fmod=1),
    node("Asin", [node("Tanh", ["x"], "t")], "asin"),
    node("Acos", ["t"], "acos"),
    node("Atanh", ["t"], "atanh"),
    node("Acosh", [node("Add", [node("Abs", ["x"], "abs"), "one"], "above")],
         "acosh"),
    node("Pow", ["x", "ki"], "pow_by_int"),
]
bools = [node("IsNaN", ["x"], "isnan"), node("IsInf", ["x"], "isinf"),
         node("IsInf", ["x"], "isinf_positive", detect_negative=0),
         node("IsInf", ["x"], "isinf_negative", detect_positive=0),
         node("Xor", [node("Less", ["x", "y"], "less"),
                      node("Greater", ["x", "lo"], "greater")], "xor")]
ints = [node("Mod", ["i", "j"], "mod_int"),
        node("Mod", ["i", "j"], "fmod_int", fmod=1),
        node("Sign", ["i"], "sign_int"),
        node("Pow", ["i", "k"], "pow_int"),
        node("Clip", ["i", "ilo", "ihi"], "clip_int"),
        node("Shrink", ["i"], "shrink_int", bias=1.5, lambd=2.0)]
extra_nodes, extra_init = [], []
for prefix, values, out in [("f", floats, "y_float"), ("b", bools, "y_bool"),
                            ("n", ints, "y_int")]:
    nodes, axes = concat_outputs(prefix, values, out)
    extra_nodes += nodes
    extra_init.append(axes)
constants = [
    numpy_helper.from_array(np.array(-1.5, dtype=np.float32), "lo"),
    numpy_helper.from_array(np.array(2.0, dtype=np.float32), "hi"),
    numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
    numpy_helper.from_array(np.array(3, dtype=np.int32), "ki"),
    numpy_helper.from_array(np.array(-4, dtype=np.int32), "ilo"),
    numpy_helper.from_array(np.array(9, dtype=np.int32), "ihi"),
]
shape = [4, 6]
save(helper.make_graph(
    pw + extra_nodes, "pointwise_ops",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, shape),
     helper.make_tensor_value_info("i", TensorProto.INT32, shape),
     helper.make_tensor_value_info("j", TensorProto.INT32, shape),
     helper.make_tensor_value_info("k", TensorProto.INT32, shape)],
    [helper.make_tensor_value_info("y_float", TensorProto.FLOAT,
                                   [len(floats)] + shape),
     helper.make_tensor_value_info("y_bool", TensorProto.BOOL,
                                   [len(bools)] + shape),
     helper.make_tensor_value_info("y_int", TensorProto.INT32,
                                   [len(ints)] + shape)],
    extra_init + constants), "pointwise_ops.onnx")

x = rng.uniform(-4, 4, shape).astype(np.float32)
x.flat[:10] = [np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5, 2.5, -2.5, 1.5, 0.0]
y = rng.uniform(-3, 3, shape).astype(np.float32)
y.flat[:3] = [2.0, -2.0, np.inf]
i = rng.integers(-20, 20, shape).astype(np.int32)
i.flat[:4] = [np.iinfo(np.int32).min, 7, -7, 0]
j = rng.integers(-6, 6, shape).astype(np.int32)
j[j == 0] = 5  # ONNX's reference of integer Mod warns on 0 (fusec gives 0)
j.flat[:4] = [-1, -3, 3, 4]
k = rng.integers(0, 6, shape).astype(np.int32)
feeds = {"x": x, "y": y, "i": i, "j": j, "k": k}
outputs = ReferenceEvaluator("pointwise_ops.onnx").run(None, feeds)
for index, name in enumerate(feeds):
    with open(f"pointwise_ops_input_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(feeds[name]).SerializeToString())
for index, array in enumerate(outputs):
    with open(f"pointwise_ops_output_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())


# A newer IR version than Debian's libonnx 1.12 knows (its checker refuses
# it), with a Shape -> Reshape subgraph that must still fold.
w = numpy_helper.from_array(rng.uniform(-1, 1, (8, 8)).astype(np.float32), "w")
model = helper.make_model(helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["m"]),
     helper.make_node("Shape", ["m"], ["s"]),
     helper.make_node("Reshape", ["m", "s"], ["y"])],
    "newer_ir",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w]),
    opset_imports=OPSET, producer_name="fusec")
model.ir_version = 10
onnx.save(model, "newer_ir.onnx")

# BitShift with a bad and a missing direction: each an error naming its node.
shift = helper.make_graph(
    [helper.make_node("BitShift", ["x", "y"], ["a"], name="sideways",
                      direction="UP"),
     helper.make_node("BitShift", ["a", "y"], ["b"], name="undirected")],
    "bitshift_errors",
    [helper.make_tensor_value_info("x", TensorProto.UINT8, [4]),
     helper.make_tensor_value_info("y", TensorProto.UINT8, [4])],
    [helper.make_tensor_value_info("b", TensorProto.UINT8, [4])])
onnx.save(helper.make_model(shift, opset_imports=[helper.make_opsetid("", 13)]),
          "bitshift_errors.onnx")

# HardSwish is defined from opset 14: an opset-13 model using it is an error.
hard_swish = helper.make_graph(
    [helper.make_node("HardSwish", ["x"], ["y"], name="early_hard_swish")],
    "hardswish_opset13",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(hard_swish,
                            opset_imports=[helper.make_opsetid("", 13)]),
          "hardswish_opset13.onnx")

# A shape computed from a symbolic input's Shape and a constant stored as
# external data beside the model: ONNX's inference must read that constant
# from the model's folder, not the working directory, for the Reshape's
# shape to be followed ([batch, seq, 8] to [batch, seq, 4, 2]).
split = numpy_helper.from_array(np.array([4, 2], dtype=np.int64), "split")
external_shape = helper.make_model(helper.make_graph(
    [helper.make_node("Shape", ["x"], ["leading"], start=0, end=2),
     helper.make_node("Concat", ["leading", "split"], ["dims"], axis=0),
     helper.make_node("Reshape", ["x", "dims"], ["y"], name="regroup")],
    "external_shape",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                   ["batch", "seq", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                   ["batch", "seq", 4, 2])], [split]),
    opset_imports=[helper.make_opsetid("", 17)])
onnx.save(external_shape, "external_shape.onnx", save_as_external_data=True,
          all_tensors_to_one_file=True, location="external_shape.onnx.data",
          size_threshold=0)

# A graph output declared with a dtype but no shape (onnxruntime takes it,
# ONNX's checker does not): y = x[:, :, -seq:] with seq read by Shape, so
# the Slice needs ONNX's inference of the symbolic shapes.
untyped = helper.make_model(helper.make_graph(
    [helper.make_node("Shape", ["x"], ["shape"]),
     helper.make_node("Gather", ["shape", "two"], ["length"], axis=0),
     helper.make_node("Neg", ["length"], ["back"]),
     helper.make_node("Unsqueeze", ["back", "zero"], ["starts"]),
     helper.make_node("Slice", ["x", "starts", "last", "axes"], ["y"],
                      name="tail")],
    "untyped_output",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                   ["batch", 4, "seq", 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [numpy_helper.from_array(np.array(2, dtype=np.int64), "two"),
     numpy_helper.from_array(np.array([0], dtype=np.int64), "zero"),
     numpy_helper.from_array(np.array([2**63 - 1], dtype=np.int64), "last"),
     numpy_helper.from_array(np.array([2], dtype=np.int64), "axes")]),
    opset_imports=[helper.make_opsetid("", 17)])
onnx.save(untyped, "untyped_output.onnx")
