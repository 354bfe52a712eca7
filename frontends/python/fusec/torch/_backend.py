"""The torch.compile backend: dynamo's graph through AOTAutograd (core ATen
decompositions), split by what fusec can lower, each supported partition
compiled by fusec and the rest left to eager PyTorch (docs/torch-backend.md).
"""
import collections
import functools
import itertools
import logging
import operator

import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.utils._pytree import tree_leaves

import fusec

from ._log import log
from ._lower import FUSEC_DTYPES, RULES, Lowering, arguments, used_outputs, val

aten = torch.ops.aten

# Ops fusec has as one op of its own, kept whole rather than decomposed:
# silu is one composite, and SDPA's CPU form becomes fusec's fused
# attention (its CUDA forms are not in the core table to begin with).
KEPT_WHOLE = (aten.silu.default,
              aten._scaled_dot_product_flash_attention_for_cpu.default)


def decompositions():
    # A plain dict: the table torch returns is a lazily filled dict subclass
    # whose contents only its own methods see.
    table = dict(core_aten_decompositions().items())
    for op in KEPT_WHOLE:
        table.pop(op, None)
    return table


# Ops that only view or name their operand: a partition of nothing else is
# left to eager PyTorch, where they cost nothing.
VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default,
         aten.permute.default, aten.transpose.int, aten.t.default,
         aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim,
         aten.squeeze.dims, aten.squeeze.default, aten.slice.Tensor,
         aten.select.int, aten.alias.default, aten.detach.default,
         aten.clone.default, operator.getitem}


def unsupported_reason(node):
    """Why `node` cannot run in fusec, or None."""
    if node.target is operator.getitem:
        return unsupported_reason(node.args[0])
    rule = RULES.get(node.target)
    if rule is None:
        return "no fusec lowering"
    result = node.meta.get("val")
    if isinstance(result, (tuple, list)):
        # Only the results read count: SDPA's CUDA forms also return RNG
        # state (uint64, possibly on the CPU) that inference never reads.
        result = [result[i] for i in sorted(used_outputs(node))]
    devices = set()
    for leaf in tree_leaves((node.args, node.kwargs, result)):
        tensor = val(leaf) if isinstance(leaf, torch.fx.Node) else leaf
        if isinstance(tensor, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return "a symbolic size"
        if not isinstance(tensor, torch.Tensor):
            continue
        if tensor.dtype not in FUSEC_DTYPES:
            return f"dtype {tensor.dtype}"
        if not all(isinstance(d, int) for d in tensor.shape):
            return "a symbolic shape"
        devices.add(tensor.device)
    if len(devices) > 1:
        return "tensors on " + " and ".join(sorted(map(str, devices)))
    if devices and next(iter(devices)).type not in ("cpu", "cuda"):
        return f"device {next(iter(devices))}"
    return rule.check(node) if rule.check else None


class _Support(OperatorSupportBase):
    def __init__(self):
        super().__init__()
        self.reasons = {}

    def is_node_supported(self, submodules, node):
        if node.op != "call_function":
            return False
        reason = unsupported_reason(node)
        if reason is not None:
            self.reasons[node] = reason
        return reason is None


class _Partition(torch.nn.Module):
    """A compiled partition in the split graph, called like the submodule it
    replaces. Its inputs are the tensors torch holds (parameters included),
    passed in place; `results` says where each output comes from: fusec's
    output i, or a clone of input j (a partition that only renames one)."""

    def __init__(self, model, results, single):
        super().__init__()
        self.model, self.results, self.single = model, results, single

    def forward(self, *tensors):
        outputs = self.model(*(t.contiguous() for t in tensors))
        values = [outputs[i] if kind == "output" else tensors[i].clone()
                  for kind, i in self.results]
        return values[0] if self.single else tuple(values)


def _lower_partition(submodule, name):
    graph = fusec.Graph(name)
    lowering = Lowering(graph)
    inputs, device = {}, None
    needed = set()
    for node in reversed(submodule.graph.nodes):
        if node.op == "output":
            needed.update(node.all_input_nodes)
        elif node in needed and node.op == "call_function":
            needed.update(RULES[node.target].reads(node))
    for node in submodule.graph.nodes:
        if node.op == "call_function" and node not in needed:
            continue
        if node.op == "placeholder":
            tensor = val(node)
            device = tensor.device
            value = graph.input(node.name, FUSEC_DTYPES[tensor.dtype],
                                list(tensor.shape))
            inputs[value] = len(inputs)
            lowering.values[node] = value
        elif node.op == "call_function":
            args = None if node.target is operator.getitem else arguments(node)
            lowering.values[node] = RULES[node.target].lower(
                lowering, node, args)
            log.debug("%s: %s -> %s", name, node.format_node(),
                      lowering.values[node])
        elif node.op == "output":
            returned = node.args[0]
    single = not isinstance(returned, (tuple, list))
    results, outputs = [], 0
    for node in [returned] if single else returned:
        value = lowering.emit(lowering.values[node])
        if value in inputs:
            results.append(("input", inputs[value]))
        else:
            graph.output(value)
            results.append(("output", outputs))
            outputs += 1
    return graph, results, single, device


_graph_ids = itertools.count()


def _log_fallbacks(graph_id, gm, reasons):
    if not reasons:
        return
    counts = collections.Counter(
        (str(node.target), reason) for node, reason in reasons.items())
    total = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    log.warning(
        "graph %d: %d of %d ops run in eager PyTorch: %s", graph_id,
        len(reasons), total,
        "; ".join(f"{target} x{count} ({reason})"
                  for (target, reason), count in sorted(counts.items())))


def compile_graph(gm, example_inputs, options):
    """AOTAutograd's forward, backward or inference graph -> a boxed
    callable running its supported partitions in fusec (the shapes come
    from the graph's fake tensors, not from `example_inputs`)."""
    graph_id = next(_graph_ids)
    support = _Support()
    partitioner = CapabilityBasedPartitioner(
        gm, support, allows_single_node_partition=True)
    partitions = [
        p for p in partitioner.propose_partitions()
        if any(n.target not in VIEWS for n in p.nodes)
        and any(a.op == "placeholder" or a not in p.nodes
                for n in p.nodes for a in n.all_input_nodes)
    ]
    _log_fallbacks(graph_id, gm, support.reasons)
    if not partitions:
        return make_boxed_func(gm.forward)
    split = partitioner.fuse_partitions(partitions,
                                        prefix=f"fusec_{graph_id}_")
    for node in split.graph.nodes:
        if node.op != "call_module":
            continue
        submodule = getattr(split, node.target)
        try:
            graph, results, single, device = _lower_partition(submodule,
                                                              node.target)
        except Exception as error:  # a lowering bug: eager stays right
            log.warning("%s stays in eager PyTorch: lowering failed: %r",
                        node.target, error, exc_info=log.isEnabledFor(
                            logging.DEBUG))
            continue
        target = "cuda" if device.type == "cuda" else "cpu"
        try:
            model = fusec.compile(graph, target=target, **options)
        except fusec.Error as error:
            log.warning("%s stays in eager PyTorch: fusec: %s", node.target,
                        error)
            continue
        log.info("%s: %d ops compiled by fusec for %s", node.target,
                 sum(1 for n in submodule.graph.nodes
                     if n.op == "call_function"), target)
        setattr(split, node.target, _Partition(model, results, single))
    return make_boxed_func(split)


def _symbolic(example_inputs):
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            return True
        if isinstance(x, torch.Tensor) and not all(
                isinstance(d, int) for d in x.shape):
            return True
    return False


def _aot(options):
    compile_fn = functools.partial(compile_graph, options=options)
    return aot_autograd(fw_compiler=compile_fn, bw_compiler=compile_fn,
                        decompositions=decompositions())


class _ShapeSpecialized:
    """A graph dynamo traced with symbolic sizes (dynamic=True, or a second
    shape under automatic dynamic shapes). fusec compiles static shapes
    only, so each call's concrete sizes are traced and compiled once (the
    kernels then come from fusec's cache where they match earlier ones)."""

    def __init__(self, gm, options):
        self.gm, self.options, self.compiled = gm, options, {}

    def __call__(self, *args):
        key = (torch.is_grad_enabled(),) + tuple(
            (tuple(a.shape), a.dtype, a.device, a.requires_grad)
            if isinstance(a, torch.Tensor) else a for a in args)
        compiled = self.compiled.get(key)
        if compiled is None:
            log.info("specializing a dynamic-shape graph for %s",
                     [tuple(a.shape) for a in args
                      if isinstance(a, torch.Tensor)])
            compiled = _aot(self.options)(self.gm, list(args))
            self.compiled[key] = compiled
        return compiled(*args)


def backend(gm, example_inputs, options=None):
    """torch.compile(model, backend="fusec", options={...}): options are
    fusec.compile's (e.g. {"fast_math": True})."""
    options = dict(options or {})
    if _symbolic(example_inputs):
        log.info("dynamic shapes: fusec compiles each call's concrete shapes")
        return _ShapeSpecialized(gm, options)
    return _aot(options)(gm, example_inputs)
