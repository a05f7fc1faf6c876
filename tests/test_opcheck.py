"""torch.library.opcheck on both ops: schema, autograd registration, fake
kernel (shapes and strides equal the real kernel's, also with symbolic sizes
under aot_dispatch_dynamic), over a representative set of calls in float32 and
float64, channels_last and unbatched included.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

from cases import ALL_CASES, FEATURE_CASES, GEOMETRY_CASES, Case
from convt_op import _fake

op = torch.ops.convt.conv_transpose2d
backward_op = torch.ops.convt.conv_transpose2d_backward

DTYPES = [pytest.param(torch.float32, id="float32"), pytest.param(torch.float64, id="float64")]

# Small; the last two leave trailing arguments at the schema's defaults, which
# the dispatcher drops before calling the (Python) fake and autograd kernels.
FORWARD_CASES = [
    Case(2, 4, 6, 5, 7, (3, 5), (3, 2), (1, 0), (2, 1), (1, 3)),
    Case(2, 8, 12, 6, 5, (3, 3), (2, 3), (1, 2), (0, 0), (2, 1), groups=4),
    Case(2, 4, 4, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), (2, 2), groups=2, layout="channels_last"),
    Case(None, 4, 6, 5, 6, (2, 3), (2, 2), (0, 1), (1, 1), (1, 2)),  # unbatched
    Case(None, 4, 6, 5, 6, (2, 3), (2, 2), (0, 1), (1, 1), (1, 2), layout="noncontiguous"),
    Case(2, 6, 6, 5, 6, (3, 3), (1, 2), (1, 1), (1, 0), (2, 1), groups=6),  # depthwise
    Case(2, 4, 6, 5, 6, (4, 4), (2, 2), (1, 1), (0, 0), (2, 2), bias=False, layout="noncontiguous"),
    Case(0, 4, 6, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), (1, 2)),  # empty batch
    Case(2, 4, 6, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),  # dilation at its default
    Case(2, 4, 6, 5, 6, (3, 3), bias=False, layout="channels_last"),  # every argument at its default
]


def _args(case: Case):
    return (list(case.stride), list(case.padding), list(case.output_padding), case.groups, list(case.dilation))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in FORWARD_CASES])
def test_opcheck_forward(case, dtype):
    x, w, b = case.make(dtype, seed=0)
    tensors = [t.requires_grad_() if t is not None else None for t in (x, w, b)]
    torch.library.opcheck(op, (*tensors, *_args(case)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck_forward_channels_last_weight(dtype):
    case = FORWARD_CASES[0]
    x, w, b = case.make(dtype, seed=1)
    w = w.contiguous(memory_format=torch.channels_last)
    torch.library.opcheck(op, (x.requires_grad_(), w.requires_grad_(), b, *_args(case)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck_forward_no_grad(dtype):
    """Without requires_grad, opcheck still compares the fake with the kernel."""
    case = FORWARD_CASES[1]
    torch.library.opcheck(op, (*case.make(dtype, seed=2), *_args(case)))


BACKWARD_CASES = [
    (FORWARD_CASES[0], [True, True, True]),
    (FORWARD_CASES[1], [True, False, True]),
    (FORWARD_CASES[2], [True, True, False]),  # channels_last
    (FORWARD_CASES[3], [False, True, True]),  # unbatched
    (FORWARD_CASES[5], [True, True, True]),  # depthwise
    (FORWARD_CASES[8], [False, True, False]),  # defaults (no defaults in the backward schema)
    (FORWARD_CASES[0], [False, False, True]),
    (FORWARD_CASES[3], [True, False, False]),
]

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "case,mask",
    [
        pytest.param(c, m, id=f"{c.id}-mask{''.join('1' if v else '0' for v in m)}")
        for c, m in BACKWARD_CASES
    ],
)
def test_opcheck_backward(case, mask, dtype):
    x, w, _ = case.make(dtype, seed=3)
    go = torch.randn(F.conv_transpose2d(x, w, **case.kwargs()).shape, dtype=dtype)
    if case.layout == "channels_last" and go.dim() == 4:
        go = go.contiguous(memory_format=torch.channels_last)
    # requires_grad everywhere: also checks the backward op's own autograd (double backward).
    torch.library.opcheck(backward_op, (go.requires_grad_(), x.requires_grad_(), w.requires_grad_(), *_args(case), mask))


# ---------------------------------------------------------------------------
# The fake kernels' layouts over the whole shared grid, without opcheck's cost:
# the Python fake functions are called directly on FakeTensors and must give
# the kernel's shape, dtype and strides exactly.


def _assert_same_meta(fake: torch.Tensor, real: torch.Tensor):
    assert (fake.shape, fake.dtype, fake.stride()) == (real.shape, real.dtype, real.stride())


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_fake_forward_layout_matches_kernel(case):
    x, w, b = case.make(torch.float32, seed=4)
    real = op(x, w, b, *_args(case))
    with FakeTensorMode() as mode:
        fx, fw, fb = (None if t is None else mode.from_tensor(t) for t in (x, w, b))
        fake = _fake._conv_transpose2d_fake(fx, fw, fb, *_args(case))
    _assert_same_meta(fake, real)


@pytest.mark.parametrize("case", FEATURE_CASES, ids=[c.id for c in FEATURE_CASES])
def test_fake_forward_layout_matches_kernel_channels_last_weight(case):
    x, w, b = case.make(torch.float32, seed=4)
    w = w.contiguous(memory_format=torch.channels_last)
    real = op(x, w, b, *_args(case))
    with FakeTensorMode() as mode:
        fx, fw, fb = (None if t is None else mode.from_tensor(t) for t in (x, w, b))
        fake = _fake._conv_transpose2d_fake(fx, fw, fb, *_args(case))
    _assert_same_meta(fake, real)


@pytest.mark.parametrize("weight_channels_last", [False, True], ids=["w_contiguous", "w_channels_last"])
@pytest.mark.parametrize("mask", [[True, True, True], [True, False, True], [False, True, False]], ids=["111", "101", "010"])
@pytest.mark.parametrize("case", FEATURE_CASES + GEOMETRY_CASES[::8], ids=[c.id for c in FEATURE_CASES + GEOMETRY_CASES[::8]])
def test_fake_backward_layout_matches_kernel(case, mask, weight_channels_last):
    x, w, _ = case.make(torch.float32, seed=5)
    if weight_channels_last:
        w = w.contiguous(memory_format=torch.channels_last)
    go = torch.randn(op(x, w, None, *_args(case)).shape)
    real = backward_op(go, x, w, *_args(case), mask)
    with FakeTensorMode() as mode:
        fake = _fake._conv_transpose2d_backward_fake(*(mode.from_tensor(t) for t in (go, x, w)), *_args(case), mask)
    for f, r in zip(fake, real):
        _assert_same_meta(f, r)


# ---------------------------------------------------------------------------
# Calls that leave arguments at their defaults: the dispatcher drops trailing
# defaults before calling the fake (fixed in cf36fd7; these keep it fixed).


def _default_args_call(mode_name: str):
    x = torch.randn(2, 4, 5, 6)
    w = torch.randn(4, 3, 3, 3)
    if mode_name == "meta":
        return op(x.to("meta"), w.to("meta")).shape
    with FakeTensorMode() as mode:
        return op(mode.from_tensor(x), mode.from_tensor(w)).shape


@pytest.mark.parametrize("mode_name", ["fake", "meta"])
def test_fake_accepts_default_arguments(mode_name):
    assert _default_args_call(mode_name) == (2, 3, 7, 8)


def test_compile_with_default_arguments():
    """The user-facing symptom: torch.compile of the plain functional call."""
    import convt_op

    x, w = torch.randn(1, 2, 4, 4), torch.randn(2, 3, 3, 3)
    compiled = torch.compile(lambda a, b: convt_op.conv_transpose2d(a, b), backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x, w), F.conv_transpose2d(x, w))


def test_fake_backward_unrequested_outputs_are_distinct():
    x, w = torch.randn(2, 4, 5, 6), torch.randn(4, 3, 3, 3)
    go = torch.randn(2, 3, 7, 8)
    args = ([1, 1], [0, 0], [0, 0], 1, [1, 1], [False, False, True])
    real = backward_op(go, x, w, *args)
    assert real[0] is not real[1]
    with FakeTensorMode() as mode:
        fake = backward_op(*(mode.from_tensor(t) for t in (go, x, w)), *args)
    assert fake[0] is not fake[1] and fake[0].untyped_storage()._cdata != fake[1].untyped_storage()._cdata
