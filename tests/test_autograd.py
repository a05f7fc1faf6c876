"""Autograd: gradients of convt's ops against finite differences and PyTorch.

- gradcheck (float64) for input, weight and bias over several geometries;
- gradgradcheck: the backward op is itself differentiable (csrc/autograd.cpp);
- gradients (and double-backward gradients) equal PyTorch's autograd in float64
  over the whole shared grid;
- the backward op's output_mask: unrequested entries are empty [0] tensors,
  requested ones are right; autograd asks only for the gradients it needs.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import convt_op
from cases import ALL_CASES, FEATURE_CASES, TOLERANCE, Case, relative_error

backward_op = torch.ops.convt.conv_transpose2d_backward
F64 = torch.float64


def _convt(case: Case):
    return lambda x, w, b=None: convt_op.conv_transpose2d(x, w, b, **case.kwargs())


def _torch(case: Case):
    return lambda x, w, b=None: F.conv_transpose2d(x, w, b, **case.kwargs())


def _leaves(case: Case, dtype=F64, seed=0, requires=(True, True, True)):
    x, w, b = case.make(dtype, seed=seed)
    tensors = [x, w, b]
    for i, flag in enumerate(requires):
        if tensors[i] is not None:
            tensors[i] = tensors[i].detach().requires_grad_(flag)
    return tensors


# Small geometries: gradcheck's cost grows with (input elements + output
# elements) x one op call each, so most cases keep their output under ~100 elements.
GRADCHECK_CASES = [
    Case(1, 2, 2, 2, 3, (2, 3), (2, 1), (1, 0), (1, 0), (1, 2)),  # stride with output_padding, dilation
    Case(1, 4, 4, 2, 2, (2, 2), (2, 3), (0, 1), (1, 2), (1, 1), groups=2),  # groups
    Case(1, 2, 2, 2, 2, (2, 2), (3, 2), (1, 1), (2, 1), (2, 3)),  # output_padding < dilation only
    Case(None, 3, 2, 2, 3, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),  # unbatched
    Case(1, 3, 3, 2, 2, (3, 3), (1, 2), (1, 0), (0, 1), (2, 1), groups=3),  # depthwise
    Case(2, 2, 2, 2, 2, (2, 2), (2, 2), (0, 0), (1, 1), (1, 1), layout="channels_last"),
    Case(1, 2, 3, 2, 3, (2, 2), (2, 1), (1, 0), (0, 0), (1, 2), bias=False),
    Case(1, 2, 3, 3, 3, (2, 2), bias=False),  # every argument at its default (all dropped by the dispatcher)
    # Larger: batch, groups with several channels each, dilation (~800 outputs; one thread keeps it fast).
    Case(2, 4, 6, 3, 4, (3, 3), (2, 2), (1, 1), (1, 1), (2, 1), groups=2),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in GRADCHECK_CASES])
@pytest.mark.usefixtures("one_thread")
def test_gradcheck(case):
    inputs = [t for t in _leaves(case) if t is not None]
    assert torch.autograd.gradcheck(_convt(case), inputs)


GRADGRADCHECK_CASES = [GRADCHECK_CASES[i] for i in (0, 1, 3, 4, 6, 8)]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in GRADGRADCHECK_CASES])
@pytest.mark.usefixtures("one_thread")
def test_gradgradcheck(case):
    inputs = [t for t in _leaves(case) if t is not None]
    assert torch.autograd.gradgradcheck(_convt(case), inputs)


@pytest.mark.usefixtures("one_thread")
def test_gradcheck_of_backward_op():
    """The backward op's own autograd (double backward), each output alone and all together."""
    case = GRADCHECK_CASES[1]
    x, w, _ = case.make(F64, seed=1)
    fwd = _torch(case)(x, w)
    go = torch.randn(fwd.shape, dtype=F64)
    args = (list(case.stride), list(case.padding), list(case.output_padding), case.groups, list(case.dilation))
    leaves = [t.detach().requires_grad_() for t in (go, x, w)]
    for mask in ([True, False, False], [False, True, False], [False, False, True], [True, True, True]):
        def fn(go, x, w, mask=mask):
            return tuple(t for t, m in zip(backward_op(go, x, w, *args, mask), mask) if m)

        assert torch.autograd.gradcheck(fn, leaves)


# ---------------------------------------------------------------------------
# Gradients equal PyTorch's autograd (float64) over the whole shared grid.


def _grads(fn, x, w, b, grad_output):
    out = fn(x, w, b)
    wanted = [t for t in (x, w, b) if t is not None and t.requires_grad]
    return out, torch.autograd.grad(out, wanted, grad_output)


def _check_grads_match(case: Case, dtype, seed=0):
    x, w, b = _leaves(case, dtype, seed)
    x64, w64, b64 = [None if t is None else t.detach().double().requires_grad_() for t in (x, w, b)]
    ref_out = _torch(case)(x64, w64, b64)
    grad_output = torch.randn(ref_out.shape, dtype=F64, generator=torch.Generator().manual_seed(seed + 100))
    ref_grads = torch.autograd.grad(ref_out, [t for t in (x64, w64, b64) if t is not None], grad_output)
    _, grads = _grads(_convt(case), x, w, b, grad_output.to(dtype))
    assert len(grads) == len(ref_grads)
    for g, r, leaf in zip(grads, ref_grads, [t for t in (x, w, b) if t is not None]):
        assert g.shape == leaf.shape and g.dtype == dtype
        assert relative_error(g, r) <= TOLERANCE[dtype], relative_error(g, r)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ALL_CASES])
def test_grads_match_pytorch_float64(case):
    _check_grads_match(case, F64)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in FEATURE_CASES])
def test_grads_match_pytorch_float32(case):
    _check_grads_match(case, torch.float32)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in GRADGRADCHECK_CASES + FEATURE_CASES[:4]])
def test_double_backward_matches_pytorch(case):
    """d/d(x, w, grad_output) of <grad(x, w, b), v> equals PyTorch's, in float64."""
    results = []
    for fn in (_convt(case), _torch(case)):
        x, w, b = _leaves(case, F64, seed=3)
        out = fn(x, w, b)
        go = torch.randn(out.shape, dtype=F64, generator=torch.Generator().manual_seed(4)).requires_grad_()
        leaves = [t for t in (x, w, b) if t is not None]
        grads = torch.autograd.grad(out, leaves, go, create_graph=True)
        gen = torch.Generator().manual_seed(5)
        loss = sum((g * torch.randn(g.shape, dtype=F64, generator=gen)).sum() for g in grads)
        results.append(torch.autograd.grad(loss, [x, w, go], allow_unused=True))
    for ours, ref in zip(*results):
        assert relative_error(ours, ref) <= TOLERANCE[F64]


# PyTorch's own third derivative rejects output_padding != 0 ("output_padding is not
# supported for non-transposed convolutions"), so the reference needs cases without it.
TRIPLE_CASES = [c for c in GRADGRADCHECK_CASES + FEATURE_CASES if tuple(c.output_padding) == (0, 0)][:4]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in TRIPLE_CASES])
def test_triple_backward_matches_pytorch(case):
    """A third derivative (the backward of the backward's backward) equals PyTorch's, in
    float64: each level's formula calls our ops through the dispatcher, so it composes."""
    results = []
    for fn in (_convt(case), _torch(case)):
        x, w, b = _leaves(case, F64, seed=6)
        out = fn(x, w, b)
        gen = torch.Generator().manual_seed(7)
        go = torch.randn(out.shape, dtype=F64, generator=gen).requires_grad_()
        gx, gw = torch.autograd.grad(out, [x, w], go, create_graph=True)
        loss2 = (gx * torch.randn(gx.shape, dtype=F64, generator=gen)).sum() + (
            gw * torch.randn(gw.shape, dtype=F64, generator=gen)).sum()
        hx, hgo = torch.autograd.grad(loss2, [x, go], create_graph=True)
        loss3 = (hx * torch.randn(hx.shape, dtype=F64, generator=gen)).sum() + (
            hgo * torch.randn(hgo.shape, dtype=F64, generator=gen)).sum()
        results.append(torch.autograd.grad(loss3, [x, w, go], allow_unused=True))
    assert any(t is not None for t in results[1])
    for ours, ref in zip(*results):
        assert (ours is None) == (ref is None)
        if ref is not None:
            assert relative_error(ours, ref) <= TOLERANCE[F64]


def test_autograd_nodes_are_cpp():
    """Training steps run no Python autograd code (csrc/autograd.cpp): both ops' graph nodes
    are C++ nodes. A Python formula cost small layers ~0.1 ms of host time per step."""
    x = torch.randn(1, 2, 3, 3, dtype=F64, requires_grad=True)
    w = torch.randn(2, 3, 2, 2, dtype=F64, requires_grad=True)
    out = convt_op.conv_transpose2d(x, w)
    assert out.grad_fn.name().startswith("torch::autograd::CppNode<"), out.grad_fn.name()
    (gx,) = torch.autograd.grad(out, [x], torch.ones_like(out), create_graph=True)
    assert gx.grad_fn.name().startswith("torch::autograd::CppNode<"), gx.grad_fn.name()


# ---------------------------------------------------------------------------
# The backward op's output_mask.

_MASK_CASES = [
    Case(2, 4, 6, 4, 5, (3, 2), (2, 2), (1, 0), (1, 1), (1, 2), groups=2),
    Case(None, 3, 2, 4, 3, (2, 3), (1, 2), (0, 1), (0, 1), (2, 1)),
    Case(2, 4, 4, 4, 5, (3, 3), (2, 2), (1, 1), (1, 0), (1, 1), layout="channels_last"),
]
_MASKS = [list(m) for m in itertools.product([False, True], repeat=3)]


def _reference_backward(case: Case, go, x, w):
    x64, w64 = x.detach().requires_grad_(), w.detach().requires_grad_()
    b64 = torch.zeros(case.Cout, dtype=F64, requires_grad=True)
    return torch.autograd.grad(F.conv_transpose2d(x64, w64, b64, **case.kwargs()), (x64, w64, b64), go)


@pytest.mark.parametrize("mask", _MASKS, ids=lambda m: "".join("1" if v else "0" for v in m))
@pytest.mark.parametrize("case", _MASK_CASES, ids=lambda c: c.id)
def test_backward_output_mask(case, mask):
    x, w, _ = case.make(F64, seed=6)
    go = torch.randn(F.conv_transpose2d(x, w, **case.kwargs()).shape, dtype=F64)
    args = (list(case.stride), list(case.padding), list(case.output_padding), case.groups, list(case.dilation))
    outputs = backward_op(go, x, w, *args, mask)
    reference = _reference_backward(case, go, x, w)
    for requested, got, ref in zip(mask, outputs, reference):
        if requested:
            assert got.shape == ref.shape and got.dtype == F64
            assert relative_error(got, ref) <= TOLERANCE[F64]
        else:
            assert got.shape == (0,) and got.dtype == F64
    if mask[0] and case.layout == "channels_last":
        assert outputs[0].is_contiguous(memory_format=torch.channels_last)


def test_backward_empty_batch():
    """N = 0: grad_input is empty, grad_weight and grad_bias are zeros of the right shape."""
    case = Case(0, 4, 6, 4, 5, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), groups=2)
    x, w, _ = case.make(F64)
    go = torch.randn(F.conv_transpose2d(x, w, **case.kwargs()).shape, dtype=F64)
    gi, gw, gb = backward_op(go, x, w, [2, 2], [1, 1], [1, 1], 2, [1, 1], [True, True, True])
    assert gi.shape == x.shape
    torch.testing.assert_close(gw, torch.zeros_like(w), rtol=0, atol=0)
    torch.testing.assert_close(gb, torch.zeros(6, dtype=F64), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# requires_grad on some inputs only: autograd asks the backward op for exactly
# those gradients, returns None for the others, and the values are right.


class _RecordBackwardMasks(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.masks = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is backward_op.default:
            self.masks.append(list(args[-1]))
        return func(*args, **(kwargs or {}))


_SUBSETS = [r for r in itertools.product([False, True], repeat=3) if any(r)]


@pytest.mark.parametrize("requires", _SUBSETS, ids=lambda r: "+".join(n for n, f in zip("xwb", r) if f))
def test_requires_grad_subsets(requires):
    case = Case(2, 4, 6, 4, 5, (3, 2), (2, 2), (1, 0), (1, 1), (1, 2), groups=2)
    x, w, b = _leaves(case, F64, seed=8, requires=requires)
    with _RecordBackwardMasks() as recorder:
        out = _convt(case)(x, w, b)
        go = torch.randn(out.shape, dtype=F64)
        out.backward(go)
    assert recorder.masks == [list(requires)]
    x64, w64, b64 = [t.detach().requires_grad_() for t in (x, w, b)]
    reference = torch.autograd.grad(_torch(case)(x64, w64, b64), (x64, w64, b64), go)
    for leaf, flag, ref in zip((x, w, b), requires, reference):
        if flag:
            assert relative_error(leaf.grad, ref) <= TOLERANCE[F64]
        else:
            assert leaf.grad is None


def test_no_bias_never_asks_for_grad_bias():
    case = Case(2, 4, 6, 4, 5, (3, 2), (2, 2), (1, 0), (1, 1), (1, 2), bias=False)
    x, w, _ = _leaves(case, F64, seed=9)
    with _RecordBackwardMasks() as recorder:
        _convt(case)(x, w, None).sum().backward()
    assert recorder.masks == [[True, True, False]]


def test_no_grad_needed_records_no_graph():
    case = GRADCHECK_CASES[0]
    x, w, b = _leaves(case, F64, requires=(False, False, False))
    assert not _convt(case)(x, w, b).requires_grad
    x, w, b = _leaves(case, F64)
    with torch.no_grad():
        assert not _convt(case)(x, w, b).requires_grad


def test_calls_that_record_nothing_skip_the_function():
    """With grad mode off (the ordinary backward's own call of the backward op, no_grad
    inference), both ops run below autograd without a Function node (csrc/autograd.cpp,
    records_nothing): no graph, and the same values as through the Function."""
    case = GRADCHECK_CASES[0]
    x, w, b = _leaves(case, F64)
    args = (case.stride, case.padding, case.output_padding, case.groups, case.dilation)
    with_graph = _convt(case)(x, w, b)
    go = torch.randn(with_graph.shape, dtype=F64, requires_grad=True)
    grads_graph = torch.ops.convt.conv_transpose2d_backward(go, x, w, *args, [True, True, True])
    assert all(g.requires_grad for g in grads_graph)
    with torch.no_grad():
        out = _convt(case)(x, w, b)
        grads = torch.ops.convt.conv_transpose2d_backward(go, x, w, *args, [True, True, True])
    assert out.grad_fn is None and not out.requires_grad
    assert torch.equal(out, with_graph.detach())
    for g, ref in zip(grads, grads_graph):
        assert g.grad_fn is None and not g.requires_grad
        assert torch.equal(g, ref.detach())


def test_backward_with_every_argument_at_its_default():
    """The plainest call, conv_transpose2d(x, w), must be differentiable (the
    dispatcher drops all six default arguments before autograd sees them)."""
    x = torch.randn(1, 2, 3, 3, dtype=F64, requires_grad=True)
    w = torch.randn(2, 3, 2, 2, dtype=F64, requires_grad=True)
    convt_op.conv_transpose2d(x, w).backward(torch.ones(1, 3, 4, 4, dtype=F64))
    x64, w64 = x.detach().requires_grad_(), w.detach().requires_grad_()
    F.conv_transpose2d(x64, w64).backward(torch.ones(1, 3, 4, 4, dtype=F64))
    assert relative_error(x.grad, x64.grad) <= TOLERANCE[F64]
    assert relative_error(w.grad, w64.grad) <= TOLERANCE[F64]


def test_backward_is_deterministic():
    """Run to run, the CPU backward gives bitwise the same gradients (fixed reduction order)."""
    case = Case(4, 8, 6, 7, 6, (3, 3), (2, 2), (1, 1), (1, 0), (1, 2), groups=2)
    x, w, _ = case.make(torch.float32, seed=10)
    go = torch.randn(F.conv_transpose2d(x, w, **case.kwargs()).shape)
    args = (list(case.stride), list(case.padding), list(case.output_padding), case.groups, list(case.dilation))
    first = backward_op(go, x, w, *args, [True, True, True])
    for _ in range(3):
        again = backward_op(go, x, w, *args, [True, True, True])
        for a, b in zip(first, again):
            assert torch.equal(a, b)
