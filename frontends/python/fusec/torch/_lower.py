"""ATen ops (after AOTAutograd's decompositions) lowered to fusec graph ops.

Each rule lowers one FX node to values of a fusec.Graph; its `check` says
why a node cannot be lowered (None: it can). Semantics follow eager
PyTorch: operands are cast to the dtype torch computes in (the node's
result dtype, or the promoted dtype for comparisons), Python scalars become
rank-0 constants of that dtype, and shapes come from the nodes' fake
tensors (node.meta["val"]), which are static here (see _backend.py).
"""
import math
import operator

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

aten = torch.ops.aten

FUSEC_DTYPES = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
    torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "bool",
}
FLOATS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
INT64_MAX = 2**63 - 1


class Rule:
    """`lower(ctx, node, args)` -> the node's value(s); `check(node)` -> why
    it cannot be lowered, or None; `reads(node)` -> the nodes whose values
    `lower` reads (default: all its inputs), so that nothing else is
    lowered: fusec sees no dead ops."""

    def __init__(self, lower, check, reads=None):
        self.lower, self.check = lower, check
        self.reads = reads or (lambda node: node.all_input_nodes)


RULES = {}


def rule(*targets, check=None, reads=None):
    """Registers a Rule for the ATen overloads named (those missing from
    this torch are skipped)."""

    def register(lower):
        for name in targets:
            packet, _, overload = name.rpartition(".")
            op = getattr(getattr(aten, packet, None), overload, None)
            if op is not None:
                RULES[op] = Rule(lower, check, reads)
        return lower

    return register


def arguments(node):
    """The node's arguments by schema name, defaults filled in."""
    schema = node.target._schema
    bound = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args) and not arg.kwarg_only:
            bound[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
        else:
            bound[arg.name] = None
    return bound


def val(node):
    return node.meta["val"]


def used_outputs(node):
    """The indices of a tuple-valued node's results that are read."""
    return {user.args[1] for user in node.users}


class PendingReshape:
    """A reshape emitted only where it is read: a reshape of a reshape
    reads the first one's operand, and one back to that operand's shape is
    the operand itself, so no dead or chained reshapes reach fusec (its
    patterns, such as attention's scores, look through neither)."""

    def __init__(self, value, from_shape, to_shape):
        self.value, self.from_shape = value, list(from_shape)
        self.to_shape = list(to_shape)


class Lowering:
    """One partition's FX nodes as a fusec.Graph under construction."""

    def __init__(self, graph):
        self.graph = graph
        self.values = {}  # FX node -> value name, or list of them
        self.constants = 0
        self.emitted = {}  # PendingReshape -> its value

    def op(self, name, inputs, **attrs):
        return self.graph.op(name, [self.emit(i) for i in inputs], **attrs)

    def emit(self, value):
        """A value's name, emitting the reshape it is if pending."""
        if not isinstance(value, PendingReshape):
            return value
        if value not in self.emitted:
            self.emitted[value] = self.graph.op("reshape", [value.value],
                                                shape=value.to_shape)
        return self.emitted[value]

    def scalar(self, value, dtype):
        if dtype == torch.bool:
            value = int(bool(value))
        elif dtype not in FLOATS:
            value = int(value)
            if abs(value) > 2**53:  # Graph.scalar takes a double
                return self.constant(lambda: torch.tensor(value, dtype=dtype))
        return self.graph.scalar(value, FUSEC_DTYPES[dtype])

    def cast(self, value, from_dtype, to_dtype):
        if from_dtype == to_dtype:
            return value
        return self.op("cast", [value], dtype=FUSEC_DTYPES[to_dtype])

    def reshape(self, value, from_shape, to_shape):
        """`value` (of `from_shape`) as `to_shape` (see PendingReshape)."""
        if isinstance(value, PendingReshape):
            value, from_shape = value.value, value.from_shape
        if list(from_shape) == list(to_shape):
            return value
        return PendingReshape(value, from_shape, to_shape)

    def constant(self, make):
        """The tensor `make()` builds at compile time, as a constant of the
        graph. Lowering runs inside AOTAutograd's fake tensor mode, where
        torch would build a fake one."""
        self.constants += 1
        name = f"constant{self.constants}"
        with unset_fake_temporarily():
            tensor = make()
            if tensor.dtype == torch.bfloat16:  # NumPy has no bf16
                value = self.graph.constant(name, tensor.float().numpy())
                return self.cast(value, torch.float32, torch.bfloat16)
            return self.graph.constant(name, tensor.numpy())

    def tensor(self, arg, dtype):
        """An FX node's value or a Python scalar, as `dtype`."""
        if isinstance(arg, torch.fx.Node):
            return self.cast(self.values[arg], val(arg).dtype, dtype)
        return self.scalar(arg, dtype)

    def boolean(self, arg):
        """An operand as i1, as torch's logical ops read it (x != 0)."""
        return self.tensor(arg, torch.bool)


def dtype_of(arg):
    return val(arg).dtype if isinstance(arg, torch.fx.Node) else None


def promoted(a, b):
    """torch's dtype for comparing a and b (a tensor, b a tensor or a
    scalar): rank-0 tensors and scalars promote less than tensors do."""

    def probe(arg):
        if isinstance(arg, torch.fx.Node):
            return torch.empty(val(arg).shape, dtype=val(arg).dtype,
                               device="meta")
        return arg

    return torch.result_type(probe(a), probe(b))


def float_result(node):
    result = val(node)
    dtype = (result[0] if isinstance(result, (tuple, list)) else result).dtype
    if dtype not in FLOATS:
        return f"{dtype} result (fusec computes this op on floats)"
    return None


# --- elementwise ---------------------------------------------------------

# Named alike in ATen and fusec.
UNARY_FLOAT = ("exp", "log", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt",
               "rsqrt", "reciprocal", "erf", "asin", "acos", "atan", "sinh",
               "cosh", "asinh", "acosh", "atanh", "silu", "floor", "ceil",
               "round")


def _unary(fusec_op):
    def lower(ctx, node, args):
        dtype = val(node).dtype
        return ctx.op(fusec_op, [ctx.tensor(args["self"], dtype)])

    return lower


for _name in UNARY_FLOAT:
    rule(f"{_name}.default", check=float_result)(_unary(_name))
for _name in ("neg", "abs", "relu"):
    rule(f"{_name}.default")(_unary(_name))


@rule("logical_not.default")
def _logical_not(ctx, node, args):
    result = ctx.op("not", [ctx.boolean(args["self"])])
    return ctx.cast(result, torch.bool, val(node).dtype)


@rule("bitwise_not.default")
def _bitwise_not(ctx, node, args):
    dtype = val(node).dtype
    name = "not" if dtype == torch.bool else "bitwise_not"
    return ctx.op(name, [ctx.tensor(args["self"], dtype)])


@rule("isnan.default")
def _isnan(ctx, node, args):
    if dtype_of(args["self"]) not in FLOATS:
        return ctx.op("ne", [ctx.values[args["self"]]] * 2)
    return ctx.op("isnan", [ctx.values[args["self"]]])


@rule("gelu.default", check=float_result)
def _gelu(ctx, node, args):
    return ctx.op("gelu", [ctx.tensor(args["self"], val(node).dtype)],
                  approximate=args["approximate"])


@rule("leaky_relu.default", check=float_result)
def _leaky_relu(ctx, node, args):
    return ctx.op("leaky_relu", [ctx.tensor(args["self"], val(node).dtype)],
                  alpha=float(args["negative_slope"]))


def _clamp(ctx, node, source, lower, upper):
    dtype = val(node).dtype
    x = ctx.tensor(source, dtype)
    if lower is not None and upper is not None:
        return ctx.op("clip", [x, ctx.tensor(lower, dtype),
                               ctx.tensor(upper, dtype)])
    if lower is not None:
        return ctx.op("max", [x, ctx.tensor(lower, dtype)])
    if upper is not None:
        return ctx.op("min", [x, ctx.tensor(upper, dtype)])
    return x


@rule("clamp.default", "clamp.Tensor")
def _clamp_rule(ctx, node, args):
    return _clamp(ctx, node, args["self"], args["min"], args["max"])


@rule("hardtanh.default", check=float_result)
def _hardtanh(ctx, node, args):
    return _clamp(ctx, node, args["self"], args["min_val"], args["max_val"])


HALVES = (torch.float16, torch.bfloat16)


def _binary(fusec_op, alpha=False, operands=("self", "other")):
    def lower(ctx, node, args):
        dtype = val(node).dtype
        # torch applies a Python scalar to f16/bf16 tensors in f32 (its
        # "opmath" type) without rounding the scalar to the tensor's dtype.
        scalars = not all(isinstance(args[n], torch.fx.Node)
                          for n in operands)
        compute = torch.float32 if dtype in HALVES and scalars else dtype
        a, b = (ctx.tensor(args[n], compute) for n in operands)
        if alpha and args.get("alpha", 1) != 1:
            b = ctx.op("mul", [b, ctx.scalar(args["alpha"], compute)])
        return ctx.cast(ctx.op(fusec_op, [a, b]), compute, dtype)

    return lower


for _overload in ("Tensor", "Scalar"):
    rule(f"add.{_overload}")(_binary("add", alpha=True))
    rule(f"sub.{_overload}")(_binary("sub", alpha=True))
    rule(f"mul.{_overload}")(_binary("mul"))
    rule(f"div.{_overload}")(_binary("div"))
    rule(f"fmod.{_overload}")(_binary("fmod"))
    rule(f"remainder.{_overload}")(_binary("mod"))
rule("maximum.default")(_binary("max"))
rule("minimum.default")(_binary("min"))


def _pow_check(node):
    if val(node).dtype not in FLOATS:
        return "integer pow (torch raises on negative exponents)"
    return None


@rule("pow.Tensor_Tensor", "pow.Tensor_Scalar", check=_pow_check)
def _pow(ctx, node, args):
    if args["exponent"] == 2:  # exact, and what x.pow(2) in norms means
        x = ctx.tensor(args["self"], val(node).dtype)
        return ctx.op("mul", [x, x])
    return _binary("pow", operands=("self", "exponent"))(ctx, node, args)


def _div_mode_check(node):
    mode = arguments(node)["rounding_mode"]
    dtype = val(node).dtype
    if mode is None or (mode == "trunc" and dtype not in FLOATS) or (
            mode == "floor" and dtype in FLOATS):
        return None
    return f"div rounding_mode={mode!r} on {dtype}"


@rule("div.Tensor_mode", "div.Scalar_mode", check=_div_mode_check)
def _div_mode(ctx, node, args):
    quotient = _binary("div")(ctx, node, args)
    if args["rounding_mode"] == "floor":
        return ctx.op("floor", [quotient])
    return quotient


def _bitwise(logical, integer):
    def lower(ctx, node, args):
        dtype = val(node).dtype
        name = logical if dtype == torch.bool else integer
        return ctx.op(name, [ctx.tensor(args["self"], dtype),
                             ctx.tensor(args["other"], dtype)])

    return lower


def _integer_or_bool(node):
    if val(node).dtype in FLOATS:
        return "bitwise op on floats"
    return None


for _name, _logical in (("and", "and"), ("or", "or"), ("xor", "xor")):
    for _overload in ("Tensor", "Scalar"):
        rule(f"bitwise_{_name}.{_overload}", check=_integer_or_bool)(
            _bitwise(_logical, f"bitwise_{_name}"))

    def _logical_op(ctx, node, args, name=_logical):
        result = ctx.op(name, [ctx.boolean(args["self"]),
                               ctx.boolean(args["other"])])
        return ctx.cast(result, torch.bool, val(node).dtype)

    rule(f"logical_{_name}.default")(_logical_op)


def _compare(fusec_op):
    def lower(ctx, node, args):
        dtype = promoted(args["self"], args["other"])
        return ctx.op(fusec_op, [ctx.tensor(args["self"], dtype),
                                 ctx.tensor(args["other"], dtype)])

    return lower


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    for _overload in ("Tensor", "Scalar"):
        rule(f"{_name}.{_overload}")(_compare(_name))


@rule("where.self")
def _where(ctx, node, args):
    dtype = val(node).dtype
    return ctx.op("select", [ctx.boolean(args["condition"]),
                             ctx.tensor(args["self"], dtype),
                             ctx.tensor(args["other"], dtype)])


@rule("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(ctx, node, args):
    dtype = val(node).dtype
    return ctx.op("select", [ctx.boolean(args["mask"]),
                             ctx.tensor(args["value"], dtype),
                             ctx.tensor(args["self"], dtype)])


def _same_device(node):
    source, result = val(node.args[0]).device, val(node).device
    if source != result:
        return f"a copy from {source} to {result}"
    return None


@rule("_to_copy.default", check=_same_device)
def _to_copy(ctx, node, args):
    return ctx.tensor(args["self"], val(node).dtype)


@rule("clone.default", "alias.default", "detach.default",
      "lift_fresh_copy.default")
def _identity(ctx, node, args):
    return ctx.values[args["self"]]


# --- layout --------------------------------------------------------------


@rule("view.default", "_unsafe_view.default", "reshape.default",
      "unsqueeze.default", "squeeze.default", "squeeze.dim", "squeeze.dims",
      "flatten.using_ints")
def _reshape(ctx, node, args):
    return ctx.reshape(ctx.values[args["self"]], val(args["self"]).shape,
                       val(node).shape)


@rule("permute.default")
def _permute(ctx, node, args):
    rank = len(val(node).shape)
    return ctx.op("transpose", [ctx.values[args["self"]]],
                  perm=[d % rank for d in args["dims"]])


@rule("transpose.int", "t.default")
def _transpose(ctx, node, args):
    rank = len(val(node).shape)
    if rank < 2:
        return ctx.values[args["self"]]
    perm = list(range(rank))
    first, second = (args.get("dim0", 0) % rank, args.get("dim1", 1) % rank)
    perm[first], perm[second] = perm[second], perm[first]
    return ctx.op("transpose", [ctx.values[args["self"]]], perm=perm)


@rule("expand.default")
def _expand(ctx, node, args):
    return ctx.op("expand", [ctx.values[args["self"]]],
                  shape=list(val(node).shape))


def _slice(ctx, value, dim, start, end, step):
    return ctx.op("slice", [value], starts=[start], ends=[end], axes=[dim],
                  steps=[step])


@rule("slice.Tensor")
def _slice_rule(ctx, node, args):
    start = 0 if args["start"] is None else args["start"]
    end = INT64_MAX if args["end"] is None else min(args["end"], INT64_MAX)
    return _slice(ctx, ctx.values[args["self"]], args["dim"], start, end,
                  args["step"])


@rule("select.int")
def _select(ctx, node, args):
    source = val(args["self"])
    dim = args["dim"] % source.dim()
    index = args["index"] % source.shape[dim]
    part = _slice(ctx, ctx.values[args["self"]], dim, index, index + 1, 1)
    part_shape = list(source.shape)
    part_shape[dim] = 1
    return ctx.reshape(part, part_shape, val(node).shape)


def _cat_check(node):
    rank = len(val(node).shape)
    for tensor in arguments(node)["tensors"]:
        if len(val(tensor).shape) != rank:
            return "cat of a 1-D empty tensor (torch's legacy skip)"
    return None


@rule("cat.default", check=_cat_check)
def _cat(ctx, node, args):
    dtype = val(node).dtype
    return ctx.op("concat", [ctx.tensor(t, dtype) for t in args["tensors"]],
                  axis=args["dim"])


def _split(ctx, node, source, sizes, dim):
    dim %= val(source).dim()
    used, parts, start = used_outputs(node), [], 0
    for i, size in enumerate(sizes):
        parts.append(_slice(ctx, ctx.values[source], dim, start,
                            start + size, 1) if i in used else None)
        start += size
    return parts


@rule("split_with_sizes.default")
def _split_with_sizes(ctx, node, args):
    return _split(ctx, node, args["self"], args["split_sizes"], args["dim"])


@rule("split.Tensor")
def _split_tensor(ctx, node, args):
    return _split(ctx, node, args["self"],
                  [v.shape[args["dim"]] for v in val(node)], args["dim"])


@rule("embedding.default")
def _embedding(ctx, node, args):
    return ctx.op("gather", [ctx.values[args["weight"]],
                             ctx.values[args["indices"]]], axis=0)


@rule("index_select.default")
def _index_select(ctx, node, args):
    return ctx.op("gather", [ctx.values[args["self"]],
                             ctx.values[args["index"]]], axis=args["dim"])


def _one_index(node):
    indices = arguments(node)["indices"]
    given = [i for i in indices if i is not None]
    integer = (torch.int64, torch.int32)
    if len(given) != 1 or val(given[0]).dtype not in integer:
        return "advanced indexing other than one integer index tensor"
    return None


@rule("index.Tensor", check=_one_index)
def _index(ctx, node, args):
    indices = args["indices"]
    axis = next(i for i, index in enumerate(indices) if index is not None)
    return ctx.op("gather", [ctx.values[args["self"]],
                             ctx.values[indices[axis]]], axis=axis)


# --- constants -----------------------------------------------------------


@rule("full.default", "full_like.default", "scalar_tensor.default",
      "zeros.default", "ones.default", "zeros_like.default",
      "ones_like.default", "new_full.default", "new_zeros.default",
      "new_ones.default")
def _full(ctx, node, args):
    name = node.target._schema.name
    fill = args.get("fill_value", args.get("s"))
    if fill is None:
        fill = 1 if "ones" in name else 0
    value = ctx.scalar(fill, val(node).dtype)
    if not val(node).shape:
        return value
    return ctx.op("expand", [value], shape=list(val(node).shape))


@rule("arange.default", "arange.start", "arange.start_step")
def _arange(ctx, node, args):
    return ctx.constant(lambda: torch.arange(
        args.get("start", 0), args["end"], args.get("step", 1),
        dtype=val(node).dtype))


# --- reductions ----------------------------------------------------------


def _axes(node, dims):
    rank = val(node.args[0]).dim()
    if not dims:
        return list(range(rank))
    return sorted(d % max(rank, 1) for d in dims)


def _reduce(fusec_op, dims_arg):
    def lower(ctx, node, args):
        dtype = val(node).dtype
        x = ctx.tensor(args["self"], dtype)
        dims = args.get(dims_arg) if dims_arg else None
        if isinstance(dims, int):
            dims = [dims]
        return ctx.op(fusec_op, [x], axes=_axes(node, dims),
                      keepdims=int(bool(args.get("keepdim", False))))

    return lower


rule("sum.dim_IntList")(_reduce("reduce_sum", "dim"))
rule("sum.default")(_reduce("reduce_sum", None))
rule("mean.dim")(_reduce("reduce_mean", "dim"))
rule("mean.default")(_reduce("reduce_mean", None))
rule("amax.default")(_reduce("reduce_max", "dim"))
rule("amin.default")(_reduce("reduce_min", "dim"))
rule("prod.dim_int")(_reduce("reduce_prod", "dim"))
rule("prod.default")(_reduce("reduce_prod", None))


def _extreme(value_op, index_op):
    def lower(ctx, node, args):
        x = ctx.values[args["self"]]
        keep = int(bool(args["keepdim"]))
        dim = args["dim"] % max(val(args["self"]).dim(), 1)
        used = used_outputs(node)
        return [
            ctx.op(value_op, [x], axes=[dim], keepdims=keep)
            if 0 in used else None,
            ctx.op(index_op, [x], axis=dim, keepdims=keep)
            if 1 in used else None,
        ]

    return lower


rule("max.dim")(_extreme("reduce_max", "argmax"))
rule("min.dim")(_extreme("reduce_min", "argmin"))


def _arg_extreme(index_op):
    def lower(ctx, node, args):
        x = ctx.values[args["self"]]
        if args["dim"] is None:
            flat = ctx.op("reshape", [x], shape=[val(args["self"]).numel()])
            index = ctx.op(index_op, [flat], axis=0, keepdims=0)
            return ctx.op("reshape", [index], shape=list(val(node).shape))
        dim = args["dim"] % max(val(args["self"]).dim(), 1)
        return ctx.op(index_op, [x], axis=dim,
                      keepdims=int(bool(args["keepdim"])))

    return lower


rule("argmax.default")(_arg_extreme("argmax"))
rule("argmin.default")(_arg_extreme("argmin"))


@rule("var.correction", check=float_result)
def _var(ctx, node, args):
    dtype = val(node).dtype
    inner = torch.float32 if dtype in HALVES else dtype  # torch's opmath
    x = ctx.tensor(args["self"], inner)
    axes = _axes(node, args["dim"])
    shape = val(args["self"]).shape
    count = math.prod(shape[a] for a in axes)
    correction = 1 if args["correction"] is None else args["correction"]
    mean = ctx.op("reduce_mean", [x], axes=axes, keepdims=1)
    centered = ctx.op("sub", [x, mean])
    squares = ctx.op("mul", [centered, centered])
    total = ctx.op("reduce_sum", [squares], axes=axes,
                   keepdims=int(bool(args["keepdim"])))
    divisor = ctx.scalar(max(count - correction, 0), inner)
    return ctx.cast(ctx.op("div", [total, divisor]), inner, dtype)


# --- normalization and softmax -------------------------------------------


def _softmax(fusec_op):
    def lower(ctx, node, args):
        return ctx.op(fusec_op, [ctx.tensor(args["self"], val(node).dtype)],
                      axis=args["dim"])

    return lower


rule("_softmax.default", check=float_result)(_softmax("softmax"))
rule("_log_softmax.default", check=float_result)(_softmax("log_softmax"))


@rule("_safe_softmax.default", check=float_result)
def _safe_softmax(ctx, node, args):
    """Softmax whose rows of only -inf give 0 (SDPA's math path)."""
    dtype = val(node).dtype
    x = ctx.tensor(args["self"], dtype)
    dim = args["dim"]
    peak = ctx.op("reduce_max", [x], axes=[dim], keepdims=1)
    hidden = ctx.op("eq", [peak, ctx.scalar(-math.inf, dtype)])
    return ctx.op("select", [hidden, ctx.scalar(0, dtype),
                             ctx.op("softmax", [x], axis=dim)])


@rule("native_layer_norm.default", check=float_result)
def _native_layer_norm(ctx, node, args):
    x = ctx.values[args["input"]]
    out = val(node)
    dtype = out[0].dtype
    rank = val(args["input"]).dim()
    axis = rank - len(args["normalized_shape"])
    eps = float(args["eps"])
    weight, bias = args["weight"], args["bias"]
    used = used_outputs(node)
    results = [None, None, None]
    if 0 in used:
        # layer_norm's optional operands are positional: a bias without a
        # weight is added after it.
        operands = [x]
        if weight is not None:
            operands.append(ctx.tensor(weight, dtype))
            if bias is not None:
                operands.append(ctx.tensor(bias, dtype))
        y = ctx.op("layer_norm", operands, axis=axis, epsilon=eps)
        if bias is not None and weight is None:
            y = ctx.op("add", [y, ctx.tensor(bias, dtype)])
        results[0] = y
    if used & {1, 2}:
        stats = out[1].dtype
        x_stats = ctx.tensor(args["input"], stats)
        axes = list(range(axis, rank))
        mean = ctx.op("reduce_mean", [x_stats], axes=axes, keepdims=1)
        centered = ctx.op("sub", [x_stats, mean])
        variance = ctx.op("reduce_mean", [ctx.op("mul", [centered, centered])],
                          axes=axes, keepdims=1)
        rstd = ctx.op("rsqrt", [ctx.op("add", [variance,
                                               ctx.scalar(eps, stats)])])
        kept = list(val(args["input"]).shape[:axis]) + [1] * (rank - axis)
        results[1] = ctx.reshape(mean, kept, out[1].shape)
        results[2] = ctx.reshape(rstd, kept, out[2].shape)
    return results


# --- matmul and attention ------------------------------------------------


BATCH_VIEWS = (aten.view.default, aten._unsafe_view.default,
               aten.reshape.default)


def _unbatched(operand):
    """The N-D tensor a bmm operand flattens (view(clone(expand(x))) with
    x's batch dims folded into one, as the decomposition of a 4-D matmul
    writes it), or None."""
    if not (isinstance(operand, torch.fx.Node)
            and operand.target in BATCH_VIEWS):
        return None
    source = operand.args[0]
    while source.target in (aten.clone.default, aten.expand.default):
        source = source.args[0]
    shape, flat = val(source).shape, val(operand).shape
    if len(shape) < 4 or tuple(shape[-2:]) != tuple(flat[-2:]):
        return None
    return source


def _bmm_sources(node):
    """The N-D operands of a bmm that flattens both with the same batch
    dims (which the expands did not broadcast), else the bmm's own
    operands."""
    a, b = (_unbatched(operand) for operand in node.args[:2])
    if a is not None and b is not None and \
            val(a).shape[:-2] == val(b).shape[:-2] and \
            math.prod(val(a).shape[:-2]) == val(node).shape[0]:
        return [a, b]
    return list(node.args[:2])


@rule("bmm.default", check=float_result, reads=_bmm_sources)
def _bmm(ctx, node, args):
    """A bmm of flattened N-D operands is their N-D matmul, reshaped:
    fusec's attention forming sees the 4-D q @ k^T and p @ v it needs."""
    a, b = _bmm_sources(node)
    product = ctx.op("matmul", [ctx.values[a], ctx.values[b]])
    shape = list(val(a).shape[:-1]) + [val(b).shape[-1]]
    return ctx.reshape(product, shape, val(node).shape)


def _rows_source(operand):
    """The N-D tensor (rank >= 3) whose leading dims a 2-D matmul operand
    flattens (a linear layer's view(x, [-1, C])), or None."""
    if not (isinstance(operand, torch.fx.Node)
            and operand.target in BATCH_VIEWS):
        return None
    source = operand.args[0]
    shape = val(source).shape
    if len(shape) < 3 or shape[-1] != val(operand).shape[-1]:
        return None
    return source


def _mm_sources(node):
    """mm's operands, the left one unflattened where it can be."""
    lhs, rhs = node.args[:2]
    return [_rows_source(lhs) or lhs, rhs]


def _addmm_sources(node):
    bias, lhs, rhs = node.args[:3]
    if isinstance(bias, torch.fx.Node) and val(bias).dim() == 2 and \
            val(bias).shape[0] != 1:
        return [bias, lhs, rhs]  # a bias per row: rows stay flat
    return [bias, _rows_source(lhs) or lhs, rhs]


def _product(ctx, lhs, rhs):
    """lhs @ rhs, and its shape: where lhs is an unflattened N-D tensor
    the product keeps its leading dims (a pending reshape flattens them),
    so that the view back to them that follows vanishes and fusec sees the
    [B, T, C] projections its attention forming reads in place."""
    product = ctx.op("matmul", [ctx.values[lhs], ctx.values[rhs]])
    return product, list(val(lhs).shape[:-1]) + [val(rhs).shape[-1]]


@rule("mm.default", check=float_result, reads=_mm_sources)
def _mm(ctx, node, args):
    product, shape = _product(ctx, *_mm_sources(node))
    return ctx.reshape(product, shape, val(node).shape)


@rule("matmul.default", check=float_result)
def _matmul(ctx, node, args):
    return ctx.op("matmul", [ctx.values[args["self"]],
                             ctx.values[args["other"]]])


@rule("addmm.default", check=float_result, reads=_addmm_sources)
def _addmm(ctx, node, args):
    dtype = val(node).dtype
    bias, lhs, rhs = _addmm_sources(node)
    product, shape = _product(ctx, lhs, rhs)
    if args["alpha"] != 1:
        product = ctx.op("mul", [product, ctx.scalar(args["alpha"], dtype)])
    if args["beta"] != 0:  # beta 0 ignores the bias, NaN included
        bias = ctx.tensor(bias, dtype)
        if args["beta"] != 1:
            bias = ctx.op("mul", [bias, ctx.scalar(args["beta"], dtype)])
        product = ctx.op("add", [product, bias])
    return ctx.reshape(product, shape, val(node).shape)


SDPA = ("_scaled_dot_product_flash_attention_for_cpu.default",
        "_scaled_dot_product_flash_attention.default",
        "_scaled_dot_product_efficient_attention.default",
        "_scaled_dot_product_cudnn_attention.default")


def _attention_check(node):
    args = arguments(node)
    q, k, v = (val(args[n]) for n in ("query", "key", "value"))
    if args["dropout_p"] != 0:
        return "attention with dropout"
    if q.dtype not in FLOATS or q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return "attention operands other than float [B, H, T, D]"
    if q.shape[1] % k.shape[1] or k.shape[1] != v.shape[1]:
        return "attention heads that do not group"
    if used_outputs(node) - {0}:
        return "attention statistics read (training)"
    return None


def _written_out_attention(ctx, q, k, v, shapes, scale, causal):
    """softmax(scale · q @ kᵀ [causal mask]) @ v as fusec's graph ops:
    fusec's attention forming makes it one attention kernel that also reads
    the head split and merge around it in place (an attention op given
    whole is taken as it is)."""
    dtype = shapes[0].dtype
    q_len, k_len = shapes[0].shape[2], shapes[1].shape[2]
    keys = ctx.op("transpose", [k], perm=[0, 1, 3, 2])
    scores = ctx.op("mul", [ctx.op("matmul", [q, keys]),
                            ctx.scalar(scale, dtype)])
    if causal:
        visible = ctx.constant(
            lambda: torch.ones(q_len, k_len, dtype=torch.bool).tril())
        scores = ctx.op("select", [visible, scores,
                                   ctx.scalar(-math.inf, dtype)])
    return ctx.op("matmul", [ctx.op("softmax", [scores], axis=-1), v])


@rule(*SDPA, check=_attention_check)
def _attention(ctx, node, args):
    shapes = [val(args[n]) for n in ("query", "key", "value")]
    q, k, v = shapes
    operands = [ctx.values[args[n]] for n in ("query", "key", "value")]
    mask = args.get("attn_mask", args.get("attn_bias"))
    scale = args["scale"]
    scale = float(1 / math.sqrt(q.shape[3]) if scale is None else scale)
    outputs = [None] * (len(val(node)) - 1)
    if mask is None and scale > 0 and q.shape[1] == k.shape[1]:
        return [_written_out_attention(ctx, *operands, shapes, scale,
                                       args["is_causal"])] + outputs
    # Masks whose rows may hide every key (torch gives such rows 0, the
    # written-out softmax NaN) and grouped heads: the op itself.
    if mask is not None:
        bool_mask = val(mask).dtype == torch.bool
        operands.append(ctx.values[mask] if bool_mask else
                        ctx.tensor(mask, q.dtype))
    result = ctx.op(
        "attention", operands, num_heads=q.shape[1], kv_num_heads=k.shape[1],
        head_dim=q.shape[3], value_head_dim=v.shape[3], scale=scale,
        causal=int(bool(args["is_causal"])), zero_masked_rows=1)
    return [result] + outputs


def _getitem(ctx, node, args):
    return ctx.values[node.args[0]][node.args[1]]


# getitem picks a result of a tuple-valued op: it has no schema, so the
# lowering driver passes it no arguments.
RULES[operator.getitem] = Rule(_getitem, None)
