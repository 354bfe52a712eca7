"""Writes the ONNX import edge cases of test/cli/onnx-ops.test, each output
checked against ONNX's reference evaluator. Run by hand with the PyPI onnx
package (it has onnx.reference): `python3 make_import_models.py`; the
outputs are committed.

int_constant_folding.onnx: casts and arithmetic over integer initializers
with static output shapes, which ONNX's shape inference "data propagation"
also evaluates: its values pass through a Cast to float unchanged and lose
the upper bits of int64 initializers, so fusec must compute these nodes
itself.

float_attr_defaults.onnx: f64 activations with their float attributes left
out, whose defaults are floats (LeakyRelu's alpha is 0.01f, not 0.01).

softmax_opset11.onnx: Softmax and LogSoftmax before opset 13, which
normalize over every dim from `axis` (default 1) on; the expected outputs
are computed here from that definition (onnx.reference applies opset 13's
whatever the model's opset).

split_opset11.onnx: Split with its sizes as the attribute `split`, as
opsets before 13 give them.

mean_f16.onnx: Mean of f16 inputs is one op: its sum is not an f16 value
that could overflow (the mean of 100.5 and 65504 is 32800); expected outputs
computed here in f32 and rounded once."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

I64, I32, I8, F, F16 = (TensorProto.INT64, TensorProto.INT32,
                        TensorProto.INT8, TensorProto.FLOAT,
                        TensorProto.FLOAT16)
name = "int_constant_folding"
initializers = [
    numpy_helper.from_array(np.array([1, -1, 200, 2**31 - 1], np.int32),
                            "i32"),
    numpy_helper.from_array(
        np.array([2**32 - 1, 2**53 + 1, 2**24 + 1, 300], np.int64), "i64"),
    numpy_helper.from_array(
        np.array([2**62, 2**63 - 1, -2**63, 5], np.int64), "a"),
    numpy_helper.from_array(np.array([2, 2, -3, 2], np.int64), "b"),
]
nodes = [
    helper.make_node("Cast", ["i32"], ["i32_to_f32"], to=F),
    helper.make_node("Cast", ["i32"], ["i32_to_i8"], to=I8),
    helper.make_node("Cast", ["i32"], ["i32_to_f16"], to=F16),
    helper.make_node("Cast", ["i64"], ["f32_of_i64"], to=F),
    helper.make_node("Cast", ["f32_of_i64"], ["i64_via_f32"], to=I64),
    helper.make_node("Cast", ["i64"], ["i8_of_i64"], to=I8),
    helper.make_node("Cast", ["i8_of_i64"], ["i64_via_i8"], to=I64),
    helper.make_node("Sub", ["a", "b"], ["sub"]),
    helper.make_node("Add", ["a", "b"], ["add"]),
    helper.make_node("Mul", ["a", "b"], ["mul"]),
]
outputs = [
    helper.make_tensor_value_info("i32_to_f32", F, [4]),
    helper.make_tensor_value_info("i32_to_i8", I8, [4]),
    helper.make_tensor_value_info("i32_to_f16", F16, [4]),
    helper.make_tensor_value_info("i64_via_f32", I64, [4]),
    helper.make_tensor_value_info("i64_via_i8", I64, [4]),
    helper.make_tensor_value_info("sub", I64, [4]),
    helper.make_tensor_value_info("add", I64, [4]),
    helper.make_tensor_value_info("mul", I64, [4]),
]
graph = helper.make_graph(nodes, name, [], outputs, initializers)
model = helper.make_model(graph, producer_name="fusec",
                          opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8  # readable by Debian's libonnx 1.12
onnx.checker.check_model(model)
onnx.save(model, name + ".onnx")
with np.errstate(over="ignore"):  # the int64 sums wrap, as ONNX's do
    results = ReferenceEvaluator(name + ".onnx").run(None, {})
for index, array in enumerate(results):
    with open(f"{name}_output_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())

name = "float_attr_defaults"
D = TensorProto.DOUBLE
ops = ["LeakyRelu", "HardSigmoid", "Selu", "Elu", "Shrink"]
nodes = [helper.make_node(op, ["x"], [op.lower()]) for op in ops]
graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(
    "x", D, [6])], [helper.make_tensor_value_info(op.lower(), D, [6])
                    for op in ops])
model = helper.make_model(graph, producer_name="fusec",
                          opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, name + ".onnx")
x = np.array([-3.5, -1.0, -0.25, 0.0, 0.7, 4.0])
results = ReferenceEvaluator(name + ".onnx").run(None, {"x": x})
with open(f"{name}_input_0.pb", "wb") as f:
    f.write(numpy_helper.from_array(x).SerializeToString())
for index, array in enumerate(results):
    with open(f"{name}_output_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())

name = "softmax_opset11"
nodes = [
    helper.make_node("Softmax", ["x"], ["softmax_default"]),
    helper.make_node("LogSoftmax", ["x"], ["log_softmax_0"], axis=0),
    helper.make_node("Softmax", ["x"], ["softmax_last"], axis=-1),
    helper.make_node("Softmax", ["v"], ["softmax_vector"], axis=0),
]
graph = helper.make_graph(
    nodes, name,
    [helper.make_tensor_value_info("x", F, [2, 3, 4]),
     helper.make_tensor_value_info("v", F, [5])],
    [helper.make_tensor_value_info("softmax_default", F, [2, 3, 4]),
     helper.make_tensor_value_info("log_softmax_0", F, [2, 3, 4]),
     helper.make_tensor_value_info("softmax_last", F, [2, 3, 4]),
     helper.make_tensor_value_info("softmax_vector", F, [5])])
model = helper.make_model(graph, producer_name="fusec",
                          opset_imports=[helper.make_opsetid("", 11)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, name + ".onnx")
rng = np.random.default_rng(11)
x = rng.uniform(-4, 4, [2, 3, 4]).astype(np.float32)
v = np.array([1.0, -np.inf, 3.0, 0.5, -2.0], np.float32)


def coerced(values, axis, log=False):
    """Softmax-11: over the 2-D view [prod(dims[:axis]), prod(dims[axis:])],
    in f64, rounded to f32."""
    rows = values.astype(np.float64).reshape(
        int(np.prod(values.shape[:axis])), -1)
    shifted = rows - rows.max(axis=1, keepdims=True)
    total = np.exp(shifted).sum(axis=1, keepdims=True)
    result = shifted - np.log(total) if log else np.exp(shifted) / total
    return result.reshape(values.shape).astype(np.float32)


expected = [coerced(x, 1), coerced(x, 0, log=True), coerced(x, 2),
            coerced(v, 0)]
for index, array in enumerate([x, v]):
    with open(f"{name}_input_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())
for index, array in enumerate(expected):
    with open(f"{name}_output_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())

name = "split_opset11"
nodes = [helper.make_node("Split", ["x"], ["left", "right"], axis=1,
                          split=[1, 3])]
graph = helper.make_graph(
    nodes, name, [helper.make_tensor_value_info("x", F, [2, 4])],
    [helper.make_tensor_value_info("left", F, [2, 1]),
     helper.make_tensor_value_info("right", F, [2, 3])])
model = helper.make_model(graph, producer_name="fusec",
                          opset_imports=[helper.make_opsetid("", 11)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, name + ".onnx")
x = np.arange(8, dtype=np.float32).reshape(2, 4)
results = ReferenceEvaluator(name + ".onnx").run(None, {"x": x})
with open(f"{name}_input_0.pb", "wb") as f:
    f.write(numpy_helper.from_array(x).SerializeToString())
for index, array in enumerate(results):
    with open(f"{name}_output_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())

name = "mean_f16"
H = TensorProto.FLOAT16
nodes = [helper.make_node("Mean", ["a", "b"], ["mean2"]),
         helper.make_node("Mean", ["a", "b", "c"], ["mean3"])]
graph = helper.make_graph(
    nodes, name, [helper.make_tensor_value_info(v, H, [4]) for v in "abc"],
    [helper.make_tensor_value_info(v, H, [4]) for v in ("mean2", "mean3")])
model = helper.make_model(graph, producer_name="fusec",
                          opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, name + ".onnx")
a = np.array([100.5, 1, -65504, 0.25], np.float16)
b = np.array([65504, 2, -65504, 3e-5], np.float16)
c = np.array([65504, -1, 65504, 1], np.float16)
wide = [v.astype(np.float32) for v in (a, b, c)]
expected = [((wide[0] + wide[1]) / np.float32(2)).astype(np.float16),
            ((wide[0] + wide[1] + wide[2]) / np.float32(3)).astype(np.float16)]
for index, array in enumerate([a, b, c]):
    with open(f"{name}_input_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())
for index, array in enumerate(expected):
    with open(f"{name}_output_{index}.pb", "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())
