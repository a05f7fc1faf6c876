"""FX rewrite: PyTorch's 2-D transposed-convolution nodes -> convt's operators.

``rewrite(gm)`` turns, in place, every node of an FX graph that computes a 2-D
transposed convolution into the equivalent ``torch.ops.convt`` node:

    aten.convolution.default(x, w, b, stride, padding, dilation, True, output_padding, groups)
        -> convt.conv_transpose2d.default(x, w, b, stride, padding, output_padding, groups, dilation)
    aten.conv_transpose2d.input(x, w, b, stride, padding, output_padding, groups, dilation)
        -> convt.conv_transpose2d.default(same arguments)
    aten.convolution_backward.default(go, x, w, bias_sizes, stride, padding, dilation, True,
                                      output_padding, groups, output_mask)
        -> convt.conv_transpose2d_backward.default(go, x, w, stride, padding, output_padding,
                                                   groups, dilation, output_mask)

It serves both torch.compile (compile.py runs it on Inductor's post-grad
graphs, forward and backward, with fake tensors and symbolic shapes) and
torch.export (run it on ``ExportedProgram.graph_module``).

Why in place: the node keeps its name, its users and its place in the graph,
so graph signatures (export's input/output specs) stay valid; inserting a new
node and erasing the old one broke export's signature on save.

A node is rewritten only when its tensor metadata (``node.meta["val"]``) shows
a 4-D weight (2-D convolution), a 3-D or 4-D input, one supported dtype for all
tensors, a strided layout, and a device type that is both enabled by the caller
and served by a registered convt kernel. Everything else is left alone and the
reason is logged (logger ``convt_op.rewrite``: DEBUG per node; rewrite() and
the compile pass log an INFO summary with the reasons).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Iterable, Sequence

import torch
import torch.fx

log = logging.getLogger(__name__)

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)

#: Devices rewritten unless the caller says otherwise. CPU is opt-in: the convt
#: CPU kernels are a correct reference, not faster than PyTorch's oneDNN path.
DEFAULT_DEVICE_TYPES = ("cuda",)

_aten = torch.ops.aten


def has_kernel(device_type: str) -> bool:
    """True when the loaded convt library has kernels for this device type (e.g. "cuda")."""
    key = {"cpu": "CPU", "cuda": "CUDA"}.get(device_type)
    if key is None:
        return False
    return all(
        torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
        for name in ("convt::conv_transpose2d", "convt::conv_transpose2d_backward")
    )


class _LeaveAlone(Exception):
    """Raised by the checks below with the reason a candidate node is not rewritten."""


def _bind(node: torch.fx.Node) -> dict:
    """The node's arguments by schema name, with the schema's defaults filled in."""
    schema = node.target._schema
    bound = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            bound[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
        else:
            raise _LeaveAlone(f"argument {arg.name!r} missing")
    return bound


def _pair(value, name: str) -> list:
    """An int/SymInt (or a node holding one) or a 1- or 2-element list, as a list of 2.

    aten.convolution accepts 1-element lists and expands them; the convt
    schemas want exactly two entries.
    """
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return [value[0], value[0]]
        if len(value) == 2:
            return list(value)
        raise _LeaveAlone(f"{name} has {len(value)} entries, expected 1 or 2")
    return [value, value]


def _val(node, name: str):
    """The tensor metadata (FakeTensor or real tensor) of an argument node."""
    if not isinstance(node, torch.fx.Node):
        raise _LeaveAlone(f"{name} is not a graph node")
    val = node.meta.get("val", node.meta.get("example_value"))
    if not isinstance(val, torch.Tensor):
        raise _LeaveAlone(f"no tensor metadata (meta['val']) for {name}")
    return val


def _check_tensors(tensors: dict, device_types: Sequence[str]) -> None:
    """Raises _LeaveAlone unless the tensors form a 2-D transposed conv we can run.

    tensors: argument name -> node; must hold "input" and "weight"; a None bias is skipped.
    """
    vals = {name: _val(node, name) for name, node in tensors.items() if not (name == "bias" and node is None)}
    weight = vals["weight"]
    if weight.dim() != 4:
        kind = {3: "1-D", 5: "3-D"}.get(weight.dim(), f"{weight.dim() - 2}-D")
        raise _LeaveAlone(f"{kind} transposed convolution (weight has {weight.dim()} dims)")
    if vals["input"].dim() not in (3, 4):
        raise _LeaveAlone(f"input has {vals['input'].dim()} dims, expected 3 or 4")
    dtypes = {v.dtype for v in vals.values()}
    if len(dtypes) != 1:
        raise _LeaveAlone(f"mixed dtypes {sorted(str(d) for d in dtypes)}")
    dtype = dtypes.pop()
    if dtype not in SUPPORTED_DTYPES:
        raise _LeaveAlone(f"dtype {dtype} not supported")
    for name, v in vals.items():
        if v.layout != torch.strided:
            raise _LeaveAlone(f"{name} has layout {v.layout}")
    devices = {v.device for v in vals.values()}
    if len(devices) != 1:
        raise _LeaveAlone(f"tensors on several devices {sorted(str(d) for d in devices)}")
    device_type = devices.pop().type
    if device_type not in device_types:
        raise _LeaveAlone(f"device type {device_type!r} not enabled (enabled: {list(device_types)})")
    if not has_kernel(device_type):
        raise _LeaveAlone(f"the convt library has no {device_type} kernel in this build")


def _fake_run(op, args: tuple):
    """Runs op's fake kernel on the argument nodes' metadata: the new node's meta['val']."""
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode

    vals = torch.fx.node.map_arg(args, lambda n: n.meta.get("val", n.meta.get("example_value")))
    flat = [v for v in torch.utils._pytree.tree_leaves(vals) if isinstance(v, torch.Tensor)]
    fake_mode = detect_fake_mode(flat)
    if fake_mode is None:  # real tensors as metadata (hand-made graphs): fake them
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        vals = torch.utils._pytree.tree_map_only(torch.Tensor, fake_mode.from_tensor, vals)
    with fake_mode:
        return op(*vals)


def _set_meta(node: torch.fx.Node, val) -> None:
    node.meta["val"] = val
    if "tensor_meta" in node.meta:
        from torch.fx.passes.shape_prop import _extract_tensor_metadata

        if isinstance(val, torch.Tensor):
            node.meta["tensor_meta"] = _extract_tensor_metadata(val)
        else:
            node.meta["tensor_meta"] = tuple(_extract_tensor_metadata(v) for v in val)


def _rewrite_forward(node: torch.fx.Node, device_types: Sequence[str]) -> None:
    a = _bind(node)
    if node.target is _aten.convolution.default and a["transposed"] is not True:
        raise _LeaveAlone("not transposed")
    _check_tensors({"input": a["input"], "weight": a["weight"], "bias": a["bias"]}, device_types)
    groups = a["groups"]
    new_args = (
        a["input"],
        a["weight"],
        a["bias"],
        _pair(a["stride"], "stride"),
        _pair(a["padding"], "padding"),
        _pair(a["output_padding"], "output_padding"),
        groups,
        _pair(a["dilation"], "dilation"),
    )
    op = torch.ops.convt.conv_transpose2d.default
    try:
        val = _fake_run(op, new_args)
    except Exception as e:  # our fake kernel rejects it: the real one would too
        raise _LeaveAlone(f"convt fake kernel rejected the arguments: {e}") from e
    node.target = op
    node.args = new_args
    node.kwargs = {}
    _set_meta(node, val)


def _rewrite_backward(node: torch.fx.Node, device_types: Sequence[str]) -> None:
    a = _bind(node)
    if a["transposed"] is not True:
        raise _LeaveAlone("not transposed")
    _check_tensors(
        {"grad_output": a["grad_output"], "input": a["input"], "weight": a["weight"]}, device_types
    )
    mask = a["output_mask"]
    if not (isinstance(mask, (list, tuple)) and len(mask) == 3 and all(isinstance(m, bool) for m in mask)):
        raise _LeaveAlone(f"output_mask {mask!r} is not three constant bools")
    # aten returns None for an output not asked for; convt returns an empty [0]
    # tensor. Only getitem users of requested outputs are safe to keep as is.
    for user in node.users:
        if user.op != "call_function" or user.target is not operator.getitem:
            raise _LeaveAlone(f"its result tuple is used whole by {user.format_node()}")
        index = user.args[1]
        if not (isinstance(index, int) and 0 <= index < 3 and mask[index]):
            raise _LeaveAlone(f"user {user.name} reads output {index}, which output_mask does not request")
    # grad_bias: aten sums grad_output into bias_sizes; ours sums into [Cout],
    # which is the only bias size a 2-D transposed convolution accepts.
    new_args = (
        a["grad_output"],
        a["input"],
        a["weight"],
        _pair(a["stride"], "stride"),
        _pair(a["padding"], "padding"),
        _pair(a["output_padding"], "output_padding"),
        a["groups"],
        _pair(a["dilation"], "dilation"),
        list(mask),
    )
    op = torch.ops.convt.conv_transpose2d_backward.default
    try:
        val = _fake_run(op, new_args)
    except Exception as e:
        raise _LeaveAlone(f"convt fake kernel rejected the arguments: {e}") from e
    node.target = op
    node.args = new_args
    node.kwargs = {}
    _set_meta(node, tuple(val))
    for user in node.users:  # keep getitem metadata in step (same tensors, new objects)
        if "val" in user.meta:
            _set_meta(user, val[user.args[1]])


def _candidate_rewriter(node: torch.fx.Node):
    if node.op != "call_function":
        return None
    target = node.target
    if target is _aten.convolution.default or target is _aten.conv_transpose2d.input:
        return _rewrite_forward
    if target is _aten.convolution_backward.default:
        return _rewrite_backward
    return None


def _is_transposed_candidate(node: torch.fx.Node) -> bool:
    """Ordinary (non-transposed) convolutions are not candidates: no log noise for them."""
    if node.target is _aten.conv_transpose2d.input:
        return True
    try:
        return _bind(node)["transposed"] is not False
    except _LeaveAlone:
        return True


def rewrite_graph(
    graph: torch.fx.Graph, device_types: Iterable[str] = DEFAULT_DEVICE_TYPES
) -> tuple[int, list[tuple[str, str]]]:
    """Rewrites ``graph`` in place; returns (count rewritten, [(node name, reason left alone)])."""
    device_types = as_device_types(device_types)
    count = 0
    left_alone: list[tuple[str, str]] = []
    for node in list(graph.nodes):
        rewriter = _candidate_rewriter(node)
        if rewriter is None or not _is_transposed_candidate(node):
            continue
        try:
            rewriter(node, device_types)
            count += 1
            log.debug("rewrote %s (%s)", node.name, node.target)
        except _LeaveAlone as why:
            left_alone.append((node.name, str(why)))
            log.debug("left %s (%s) alone: %s", node.name, node.target, why)
    return count, left_alone


def summary(count: int, left_alone: list[tuple[str, str]]) -> str:
    """One log message: how many nodes were rewritten, and why each other candidate was not."""
    reasons = "".join(f"\n  {name}: {why}" for name, why in left_alone)
    return f"rewrote {count} transposed-convolution node(s), left {len(left_alone)} alone{reasons}"


def as_device_types(device_types: Iterable[str]) -> tuple[str, ...]:
    return (device_types,) if isinstance(device_types, str) else tuple(device_types)


def rewrite(gm, device_types: Iterable[str] = DEFAULT_DEVICE_TYPES) -> int:
    """Rewrites 2-D transposed convolutions of an FX graph into convt ops, in place.

    gm: a ``torch.fx.GraphModule`` (e.g. ``ExportedProgram.graph_module``), a
    ``torch.fx.Graph``, or a ``torch.export.ExportedProgram``.
    device_types: the device types to rewrite for; default ``("cuda",)``, pass
    ``("cpu", "cuda")`` to rewrite CPU graphs too.
    Returns the number of nodes rewritten. Nodes need ``meta["val"]`` (as in
    torch.compile, torch.export and make_fx graphs) to be considered.
    """
    if isinstance(gm, torch.export.ExportedProgram):
        gm = gm.graph_module
    graph = gm if isinstance(gm, torch.fx.Graph) else gm.graph
    count, left_alone = rewrite_graph(graph, device_types)
    if count or left_alone:
        log.info("convt_op.rewrite: %s", summary(count, left_alone))
    if count and isinstance(gm, torch.fx.GraphModule):
        gm.recompile()
    return count
