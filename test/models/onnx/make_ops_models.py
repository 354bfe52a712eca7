"""Writes the ONNX models of test/e2e/onnx-ops.test: Trilu, ReduceSumSquare,
ReduceL1, ReduceLogSum, CastLike, Mean, Dropout, PRelu, Tile, Hardmax, Pad
edge/reflect and a shape subgraph (Shape with start/end, Size, Neg,
ConstantOfShape, Concat) that must fold. Each output is checked against
ONNX's reference evaluator. Run by hand with the PyPI onnx package (it has
onnx.reference): `python3 make_ops_models.py`; the outputs are committed."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(8)


def save(nodes, name, inputs, outputs, initializers, opset):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, producer_name="fusec",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8  # readable by Debian's libonnx 1.12
    onnx.checker.check_model(model)
    onnx.save(model, name + ".onnx")


def write_reference(name, feeds, replace=None):
    """input_N.pb and output_N.pb: the feeds and onnx.reference's outputs
    (`replace`: index -> array where onnx.reference does not follow the
    model's opset)."""
    outputs = ReferenceEvaluator(name + ".onnx").run(None, feeds)
    for index, array in (replace or {}).items():
        outputs[index] = array
    for index, array in enumerate(feeds.values()):
        with open(f"{name}_input_{index}.pb", "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())
    for index, array in enumerate(outputs):
        with open(f"{name}_output_{index}.pb", "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())


def tensor(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64

# Opset 17: every new op, on inputs with NaN, infinities and -0.
nodes = [
    helper.make_node("Trilu", ["x"], ["triu"]),
    helper.make_node("Trilu", ["x", "k"], ["tril_k"], upper=0),
    helper.make_node("Trilu", ["x", "two"], ["triu_2"]),
    helper.make_node("Less", ["x", "y"], ["less"]),
    helper.make_node("Trilu", ["less", "minus_one"], ["tril_bool"], upper=0),
    helper.make_node("ReduceSumSquare", ["x"], ["sum_square"], axes=[1],
                     keepdims=0),
    helper.make_node("ReduceL1", ["x"], ["l1"], axes=[-1]),
    helper.make_node("Abs", ["y"], ["abs_y"]),
    helper.make_node("ReduceLogSum", ["abs_y"], ["log_sum"]),
    helper.make_node("CastLike", ["y", "like_f64"], ["cast_like"]),
    helper.make_node("Mean", ["x", "y", "abs_y"], ["mean"]),
    helper.make_node("Dropout", ["x", "ratio", "not_training"],
                     ["dropout", "dropout_mask"]),
    helper.make_node("PRelu", ["x", "slope"], ["prelu"]),
    helper.make_node("Tile", ["y", "repeats"], ["tile"]),
    helper.make_node("Hardmax", ["x"], ["hardmax"], axis=1),
    helper.make_node("Pad", ["y", "pads"], ["pad_edge"], mode="edge"),
    helper.make_node("Pad", ["y", "pads"], ["pad_reflect"], mode="reflect"),
    # The shape of sum(x, axes=[1, 2]) kept as [2, 1, 1]: Shape(end=1),
    # Size, Sub, Neg, ConstantOfShape and Concat fold to constants.
    helper.make_node("Shape", ["x"], ["x_shape"]),
    helper.make_node("Shape", ["x"], ["x_prefix"], end=1),
    helper.make_node("Size", ["x_shape"], ["x_rank"]),
    helper.make_node("Sub", ["one_1d", "x_rank"], ["minus_reduced"]),
    helper.make_node("Neg", ["minus_reduced"], ["reduced"]),
    helper.make_node("ConstantOfShape", ["reduced"], ["ones"],
                     value=numpy_helper.from_array(np.array([1], np.int64))),
    helper.make_node("Concat", ["x_prefix", "ones"], ["kept_shape"], axis=0),
    helper.make_node("ReduceSum", ["x", "axes_12"], ["sum_12"], keepdims=0),
    helper.make_node("Reshape", ["sum_12", "kept_shape"], ["sum_kept"]),
]
outputs = [
    tensor("triu", F, [2, 3, 4]), tensor("tril_k", F, [2, 3, 4]),
    tensor("triu_2", F, [2, 3, 4]), tensor("tril_bool", B, [2, 3, 4]),
    tensor("sum_square", F, [2, 4]), tensor("l1", F, [2, 3, 1]),
    tensor("log_sum", F, [1, 1, 1]),
    tensor("cast_like", TensorProto.DOUBLE, [2, 3, 4]),
    tensor("mean", F, [2, 3, 4]), tensor("dropout", F, [2, 3, 4]),
    tensor("dropout_mask", B, [2, 3, 4]), tensor("prelu", F, [2, 3, 4]),
    tensor("tile", F, [2, 6, 12]), tensor("hardmax", F, [2, 3, 4]),
    tensor("pad_edge", F, [3, 10, 4]), tensor("pad_reflect", F, [3, 10, 4]),
    tensor("sum_kept", F, [2, 1, 1]),
]
initializers = [
    const("two", np.array(2, np.int64)),
    const("minus_one", np.array(-1, np.int64)),
    const("like_f64", np.zeros([1], np.float64)),
    const("ratio", np.array(0.5, np.float32)),
    const("not_training", np.array(False)),
    const("slope", np.array([0.25, -1.0, 2.0, 0.0], np.float32)),
    const("repeats", np.array([1, 2, 3], np.int64)),
    const("pads", np.array([0, 5, 0, 1, 2, 0], np.int64)),
    const("one_1d", np.array([1], np.int64)),
    const("axes_12", np.array([1, 2], np.int64)),
]
save(nodes, "new_ops",
     [tensor("x", F, [2, 3, 4]), tensor("y", F, [2, 3, 4]),
      tensor("k", I64, [])], outputs, initializers, 17)
x = rng.uniform(-3, 3, [2, 3, 4]).astype(np.float32)
x.flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5]
x[1, :, 2] = 7.0  # ties for Hardmax: the first maximum wins
y = rng.uniform(-3, 3, [2, 3, 4]).astype(np.float32)
write_reference("new_ops", {"x": x, "y": y, "k": np.array(-1, np.int64)})

# Opset 11: Hardmax coerces its input to 2-D around axis (default 1), and
# Dropout (its opset 10 form) has a ratio attribute.
nodes = [
    helper.make_node("Hardmax", ["x"], ["hardmax_2d"]),
    helper.make_node("Hardmax", ["x"], ["hardmax_last"], axis=-1),
    helper.make_node("Dropout", ["x"], ["dropout", "mask"], ratio=0.25),
    helper.make_node("Add", ["dropout", "x"], ["twice"]),
]
save(nodes, "new_ops_opset11", [tensor("x", F, [2, 3, 4])],
     [tensor("hardmax_2d", F, [2, 3, 4]), tensor("hardmax_last", F, [2, 3, 4]),
      tensor("twice", F, [2, 3, 4]), tensor("mask", B, [2, 3, 4])], [], 11)
x = rng.uniform(-3, 3, [2, 3, 4]).astype(np.float32)
x.flat[5] = np.nan
# onnx.reference's Hardmax is opset 13's whatever the model's opset: the
# coerced result is computed here as Hardmax-11 defines it (NumPy's argmax
# takes the first NaN as the maximum).
rows = x.reshape(2, 12)
coerced = np.zeros_like(rows)
coerced[np.arange(2), np.argmax(rows, axis=1)] = 1
write_reference("new_ops_opset11", {"x": x}, {0: coerced.reshape(x.shape)})

# What fusec refuses, every node at once: Trilu before its opset, Dropout
# in training mode, Pad's wrap mode and Tile with repeats of another rank.
nodes = [
    helper.make_node("Trilu", ["x"], ["t"], name="mask"),
    helper.make_node("Dropout", ["x", "ratio", "training"], ["d"],
                     name="drop"),
    helper.make_node("Pad", ["x", "pads"], ["p"], name="wrap", mode="wrap"),
    helper.make_node("Tile", ["x", "repeats"], ["r"], name="tile"),
]
graph = helper.make_graph(
    nodes, "new_ops_errors", [tensor("x", F, [3, 4])],
    [tensor("t", F, [3, 4]), tensor("d", F, [3, 4]), tensor("p", F, None),
     tensor("r", F, None)],
    [const("ratio", np.array(0.5, np.float32)),
     const("training", np.array(True)),
     const("pads", np.array([1, 1, 1, 1], np.int64)),
     const("repeats", np.array([2], np.int64))])
model = helper.make_model(graph, producer_name="fusec",
                          opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.save(model, "new_ops_errors.onnx")  # not checked: Trilu is opset 14
