"""Prints the part of an ONNX graph whose shapes or shape values depend on a
symbolic input dim (default "past"): a debugging aid for the KV-cache models
of export_hf_cache_models.py.

    python3 print_shape_chain.py MODEL.onnx [DIM] > chain.txt

How: onnx.shape_inference.infer_shapes(model, data_prop=True) gives each
value's symbolic shape ("inferred"). Then onnxruntime runs the model (no
graph optimisation, every intermediate value made an output) at eight points
of the input dims (batch, past, seq) in POINTS, with random inputs; each
value's dims, and the elements of each small integer tensor, are fitted
exactly with integer coefficients over 1, batch, past, seq, batch*seq,
batch*past ("measured": e.g. [batch, 4, past+seq, 16]; values past+seq;
"?" when no such fit). A value depends on DIM when a measured dim or
element involves it, or (any tensor computed from shapes alone, not from an
input's values) when its elements change with DIM alone (POINTS[0] and
POINTS[1] differ in past only). Printed, in graph order: every node with
such an input or output, its inputs (constants inline) and outputs with both
shapes and the measured values; then a one-line-per-node digest of them;
then a digest of the shape-derived subgraph that feeds them (mask,
positions, shape operands), whether or not it involves DIM. The printer
assumes the input dims are named batch, past and seq.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

DIMS = ("batch", "past", "seq")
POINTS = [(2, 5, 3), (2, 9, 3), (3, 5, 3), (2, 5, 4), (3, 12, 7), (4, 7, 2),
          (5, 3, 6), (3, 8, 5)]
SMALL = 16  # integer tensors up to this many elements get their values fitted


BASIS = (("", lambda b, p, s: 1), ("batch", lambda b, p, s: b),
         ("past", lambda b, p, s: p), ("seq", lambda b, p, s: s),
         ("batch*seq", lambda b, p, s: b * s),
         ("batch*past", lambda b, p, s: b * p))


def fit(values):
    """values: one number per point -> 'a*batch+b*past+c*seq+...' (integer
    coefficients over BASIS, exact at every point) or None."""
    matrix = np.array([[f(*pt) for _, f in BASIS] for pt in POINTS], float)
    coef, *_ = np.linalg.lstsq(matrix, np.array(values, float), rcond=None)
    coef = np.round(coef).astype(np.int64)
    if not np.array_equal(matrix.astype(np.int64) @ coef,
                          np.array(values, np.int64)):
        return None
    terms = []
    for (name, _), c in zip(BASIS[1:], coef[1:]):
        if c:
            terms.append(name if c == 1 else f"-{name}" if c == -1
                         else f"{c}*{name}")
    if coef[0] or not terms:
        terms.append(str(int(coef[0])))
    return "+".join(terms).replace("+-", "-")


def fmt_inferred(vi):
    if vi is None or not vi.type.HasField("tensor_type"):
        return "?"
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return "?"
    return "[" + ", ".join(d.dim_param or (str(d.dim_value) if d.HasField(
        "dim_value") else "?") for d in t.shape.dim) + "]"


def main(path, dim="past"):
    import onnxruntime as ort

    model = onnx.load(path)
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    infos = {vi.name: vi for vi in list(inferred.graph.value_info) +
             list(inferred.graph.input) + list(inferred.graph.output)}
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    consts[node.output[0]] = numpy_helper.to_array(a.t)

    # Every intermediate value as an output.
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    have = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        if node.op_type == "Constant":
            continue
        for name in node.output:
            vi = infos.get(name)
            if name and name not in have and vi is not None and \
                    vi.type.tensor_type.elem_type:
                probe.graph.output.append(helper.make_tensor_value_info(
                    name, vi.type.tensor_type.elem_type, None))
                have.add(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(probe.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    runs = []
    rng = np.random.default_rng(0)
    for point in POINTS:
        env = dict(zip(DIMS, point))
        feeds = {}
        for inp in model.graph.input:
            t = inp.type.tensor_type
            shape = [env.get(d.dim_param, d.dim_value) for d in t.shape.dim]
            if t.elem_type == onnx.TensorProto.INT64:
                feeds[inp.name] = rng.integers(0, 50, shape).astype(np.int64)
            else:
                feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
        values = dict(zip(names, session.run(names, feeds)))
        values.update(feeds)
        runs.append(values)

    graph_inputs = {i.name for i in model.graph.input}
    # "data": computed from an input's values (not through Shape alone).
    data = set(graph_inputs)
    for node in model.graph.node:
        if node.op_type != "Shape" and any(i in data for i in node.input):
            data.update(node.output)
    measured = {}  # name -> (shape expr list, value expr or note, depends)
    for name in runs[0]:
        arrays = [r[name] for r in runs]
        ranks = {a.ndim for a in arrays}
        if len(ranks) != 1:
            measured[name] = ("rank varies", None, True)
            continue
        shape = []
        for axis in range(arrays[0].ndim):
            e = fit([a.shape[axis] for a in arrays])
            shape.append(e if e is not None else "?")
        shape_s = "[" + ", ".join(shape) + "]"
        depends = any(dim in s or s == "?" for s in shape)
        value = None
        a0 = arrays[0]
        if name not in data:
            same = all(a.shape == a0.shape for a in arrays)
            if same and a0.size <= SMALL and a0.dtype.kind in "iub":
                elems = []
                for i in range(a0.size):
                    e = fit([int(a.reshape(-1)[i]) for a in arrays])
                    elems.append(e if e is not None else "?")
                value = "[" + ", ".join(elems) + "]" if a0.ndim else elems[0]
                depends |= any(dim in e or e == "?" for e in elems)
            elif arrays[0].shape == arrays[1].shape:
                # POINTS[0] and [1] differ in past alone.
                if not np.array_equal(arrays[0], arrays[1]):
                    depends = True
                    flat = [(np.round(a.reshape(-1)[:6], 4)
                             if a.dtype.kind == "f" else a.reshape(-1)[:6])
                            .tolist() for a in arrays[:2]]
                    value = f"depends on past: at p=5 {flat[0]}, at p=9 {flat[1]}"
                elif a0.size <= 64:
                    value = f"at p=5: {a0.reshape(-1).tolist()}"
        measured[name] = (shape_s, value, depends)

    def describe(name, is_input):
        if not name:
            return "      (none)"
        if name in consts and name not in measured:
            c = consts[name]
            text = np.array2string(c.reshape(-1)[:6], separator=",") + \
                ("..." if c.size > 6 else "")
            return f"      {name}: const {c.dtype} {list(c.shape)} = {text}"
        shape_s, value, dep = measured.get(name, ("?", None, False))
        line = f"      {name}: inferred {fmt_inferred(infos.get(name))}" \
               f"  measured {shape_s}"
        if value is not None:
            line += f"  values {value}"
        if dep:
            line += "   <-- " + dim
        return line

    def attributes(node):
        out = []
        for a in node.attribute:
            if a.type != onnx.AttributeProto.TENSOR:
                out.append(f"{a.name}={helper.get_attribute_value(a)}")
            elif node.op_type != "Constant" and np.prod(a.t.dims) <= 4:
                value = numpy_helper.to_array(a.t).reshape(-1).tolist()
                out.append(f"{a.name}={value}")
        return ", ".join(out)

    chain = []
    for node in model.graph.node:
        if node.op_type == "Constant":
            continue
        touched = [n for n in list(node.input) + list(node.output)
                   if n in measured and measured[n][2]]
        if touched:
            chain.append(node)
    print(f"# {path}: {len(chain)} of {len(model.graph.node)} nodes touch a "
          f"value whose shape or (integer) value depends on '{dim}'\n")
    for node in chain:
        attrs = attributes(node)
        print(f"{node.op_type} {node.name}" + (f" ({attrs})" if attrs else ""))
        print("   in:")
        for n in node.input:
            print(describe(n, True))
        print("   out:")
        for n in node.output:
            print(describe(n, False))

    def short(n):
        if n in consts and n not in measured:
            c = consts[n]
            return f"const{c.reshape(-1)[:4].tolist()}" if c.size <= 4 \
                else f"const{list(c.shape)}"
        s, v, _ = measured.get(n, ("?", None, False))
        return s + (f"{{{v}}}" if v is not None and len(str(v)) < 60
                    else "")

    def digest(nodes):
        for node in nodes:
            attrs = attributes(node)
            print(f"{node.op_type:16} {node.name:36} "
                  + (f"({attrs}) " if attrs else "") +
                  f"{', '.join(short(n) for n in node.input)} -> "
                  f"{', '.join(short(n) for n in node.output)}")

    print("\n# digest: op name: inputs -> outputs (measured shape, {values})")
    digest(chain)

    # The shape-derived subgraph feeding the chain: values computed from
    # shapes (Shape outputs, constants and what is computed from them alone)
    # and not from any input's data, walked back from the chain's inputs.
    producer = {o: n for n in model.graph.node for o in n.output}
    feeding, todo = set(), [i for n in chain for i in n.input]
    while todo:
        name = todo.pop()
        node = producer.get(name)
        if node is None or name in data or node.op_type == "Constant" or \
                id(node) in feeding:
            continue
        feeding.add(id(node))
        todo.extend(node.input)
    print("\n# shape-derived subgraph feeding those nodes (masks, positions, "
          "shape operands), whether or not it involves " + dim)
    digest([n for n in model.graph.node if id(n) in feeding])


if __name__ == "__main__":
    main(*sys.argv[1:])
