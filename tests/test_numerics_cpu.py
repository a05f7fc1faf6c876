"""Forward numerics of the CPU kernel against PyTorch computed in float64.

The grid is tests/cases.py (shared with the GPU suite): every parameter and
their combinations, groups, depthwise, bias, unbatched, non-contiguous,
channels_last and batch 0. For each case we check values (relative Frobenius
error against F.conv_transpose2d in float64), shape, dtype, and the memory
format: the output is channels_last exactly when PyTorch's own output (same
inputs, same dtype) is, with identical strides where strides are unambiguous.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import convt_op
from cases import ALL_CASES, FEATURE_CASES, GEOMETRY_CASES, TOLERANCE, Case, reference, relative_error

op = torch.ops.convt.conv_transpose2d


def _ids(cases):
    return [c.id for c in cases]


def _is_channels_last(t: torch.Tensor) -> bool:
    return t.is_contiguous(memory_format=torch.channels_last)


def _strides_unambiguous(t: torch.Tensor) -> bool:
    # A size-1 (or empty) dimension's stride carries no meaning and differs
    # between equally valid allocations; compare strides only without them.
    return t.numel() > 0 and all(s > 1 for s in t.shape)


def assert_same_layout(out: torch.Tensor, expected: torch.Tensor) -> None:
    """out has expected's shape, dtype, device and memory format."""
    assert out.shape == expected.shape
    assert out.dtype == expected.dtype
    assert out.device == expected.device
    assert out.is_contiguous() == expected.is_contiguous(), (out.stride(), expected.stride())
    assert _is_channels_last(out) == _is_channels_last(expected), (out.stride(), expected.stride())
    if _strides_unambiguous(expected):
        assert out.stride() == expected.stride()


def _check_case(case: Case, dtype: torch.dtype, seed: int = 0) -> None:
    x, w, b = case.make(dtype, seed=seed)
    out = op(x, w, b, list(case.stride), list(case.padding), list(case.output_padding), case.groups, list(case.dilation))
    ref64 = reference(x, w, b, case)
    assert_same_layout(out, F.conv_transpose2d(x, w, b, **case.kwargs()))
    assert out.dtype == dtype
    assert relative_error(out, ref64) <= TOLERANCE[dtype], relative_error(out, ref64)
    if case.output_is_channels_last():
        assert _is_channels_last(out)
    elif case.N is not None and case.N > 0:
        assert out.is_contiguous()


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_forward_float64(case):
    _check_case(case, torch.float64)


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_forward_float32(case):
    _check_case(case, torch.float32)


# Half precision on the CPU computes in fp32 and rounds once: a representative
# subset (all feature cases and every fourth geometry) in both 16-bit types.
_HALF_CASES = FEATURE_CASES + GEOMETRY_CASES[::4]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("case", _HALF_CASES, ids=_ids(_HALF_CASES))
def test_forward_half(case, dtype):
    _check_case(case, dtype)


def test_grid_covers_every_parameter():
    """The grid really exercises each parameter away from its default (guards against a shrunk grid)."""
    seen = lambda f: {f(c) for c in ALL_CASES}  # noqa: E731
    assert len(seen(lambda c: c.kernel)) >= 4 and any(c.kernel[0] != c.kernel[1] for c in ALL_CASES)
    assert any(c.stride[0] != c.stride[1] for c in ALL_CASES) and max(max(c.stride) for c in ALL_CASES) >= 3
    assert any(c.padding[0] != c.padding[1] for c in ALL_CASES)
    assert any(c.output_padding[0] != c.output_padding[1] for c in ALL_CASES)
    assert any(c.output_padding != (0, 0) and c.dilation != (1, 1) for c in ALL_CASES)
    assert any(c.dilation[0] != c.dilation[1] for c in ALL_CASES)
    assert any(c.groups > 1 and c.groups < c.Cin for c in ALL_CASES)
    assert any(c.groups == c.Cin for c in ALL_CASES)  # depthwise
    assert {c.bias for c in ALL_CASES} == {True, False}
    assert any(c.N is None for c in ALL_CASES) and any(c.N == 0 for c in ALL_CASES)
    assert {c.layout for c in ALL_CASES} == {"contiguous", "channels_last", "noncontiguous"}


# ---------------------------------------------------------------------------
# Layouts beyond the shared grid: channels_last / non-contiguous weight and bias.

_LAYOUT_CASE = Case(2, 6, 4, 5, 7, (3, 2), (2, 1), (1, 0), (1, 0), (1, 2), groups=2)


def _weight_variants(w: torch.Tensor):
    yield "contiguous", w
    yield "channels_last", w.contiguous(memory_format=torch.channels_last)
    # Every other element of a wider tensor along kW: strided, neither format.
    wide = torch.empty((*w.shape[:-1], 2 * w.shape[-1]), dtype=w.dtype)
    wide[..., ::2] = w
    yield "noncontiguous", wide[..., ::2]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("input_layout", ["contiguous", "channels_last", "unbatched"])
@pytest.mark.parametrize("weight_layout", ["contiguous", "channels_last", "noncontiguous"])
def test_weight_layouts(weight_layout, input_layout, dtype):
    x, w, b = _LAYOUT_CASE.make(dtype, seed=1)
    w = dict(_weight_variants(w))[weight_layout]
    if input_layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    elif input_layout == "unbatched":
        x = x[1]
    out = convt_op.conv_transpose2d(x, w, b, **_LAYOUT_CASE.kwargs())
    expected = F.conv_transpose2d(x, w, b, **_LAYOUT_CASE.kwargs())
    assert_same_layout(out, expected)
    if input_layout != "unbatched" and "channels_last" in (weight_layout, input_layout):
        assert _is_channels_last(out) and not out.is_contiguous()
    ref = F.conv_transpose2d(x.double(), w.double(), b.double(), **_LAYOUT_CASE.kwargs())
    assert relative_error(out, ref) <= TOLERANCE[dtype]


def test_noncontiguous_bias_and_expanded_input():
    """A strided bias and a stride-0 (expanded) batch are read by value, not by assumed strides."""
    case = Case(3, 4, 6, 5, 4, (3, 3), (2, 2), (1, 1), (1, 0), (1, 1), groups=2)
    x, w, b = case.make(torch.float64, seed=2)
    b_strided = torch.stack([b, -b], dim=1)[:, 0]
    assert not b_strided.is_contiguous()
    x_expanded = x[:1].expand(3, -1, -1, -1)
    assert x_expanded.stride(0) == 0
    out = convt_op.conv_transpose2d(x_expanded, w, b_strided, **case.kwargs())
    ref = F.conv_transpose2d(x_expanded.contiguous(), w, b_strided.contiguous(), **case.kwargs())
    assert relative_error(out, ref) <= TOLERANCE[torch.float64]
    # The three samples are the same input, so the three outputs are identical.
    torch.testing.assert_close(out[0], out[2], rtol=0, atol=0)


def test_transposed_weight_view():
    """A weight that is a permuted view (strides not in either standard format)."""
    case = Case(2, 4, 4, 6, 6, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    x, w, b = case.make(torch.float64, seed=3)
    w_view = w.permute(1, 0, 3, 2).contiguous().permute(1, 0, 3, 2)  # same values, odd strides
    assert torch.equal(w_view, w) and not w_view.is_contiguous()
    out = convt_op.conv_transpose2d(x, w_view, b, **case.kwargs())
    ref = F.conv_transpose2d(x, w, b, **case.kwargs())
    assert relative_error(out, ref) <= TOLERANCE[torch.float64]
    assert_same_layout(out, F.conv_transpose2d(x, w_view, b, **case.kwargs()))


# ---------------------------------------------------------------------------
# Empty tensors. Batch 0 is in the grid. Zero channels: PyTorch's CPU conv
# rejects an empty weight; convt accepts it (frontend.cpp: the output is the
# bias alone, or zeros), so the expected values are written out here.


# ---------------------------------------------------------------------------
# Properties of the CPU kernel itself.


def test_deterministic_and_input_untouched():
    case = FEATURE_CASES[0]
    x, w, b = case.make(torch.float32, seed=4)
    copies = [t.clone() for t in (x, w, b)]
    first = convt_op.conv_transpose2d(x, w, b, **case.kwargs())
    second = convt_op.conv_transpose2d(x, w, b, **case.kwargs())
    assert torch.equal(first, second)
    for original, copy in zip((x, w, b), copies):
        assert torch.equal(original, copy)


def test_larger_problem_float32():
    """Big enough that the CPU kernel splits work across threads and BLAS blocks."""
    case = Case(4, 32, 24, 17, 19, (4, 4), (2, 2), (1, 1), (0, 1), (1, 1), groups=2)
    for seed in (5, 6):
        x, w, b = case.make(torch.float32, seed=seed)
        out = convt_op.conv_transpose2d(x, w, b, **case.kwargs())
        assert relative_error(out, reference(x, w, b, case)) <= TOLERANCE[torch.float32]


def test_int_and_pair_arguments_are_equivalent():
    case = Case(2, 4, 6, 5, 5, (3, 3), (2, 2), (1, 1), (1, 1), (2, 2))
    x, w, b = case.make(torch.float64, seed=7)
    as_pairs = convt_op.conv_transpose2d(x, w, b, (2, 2), (1, 1), (1, 1), 1, (2, 2))
    as_ints = convt_op.conv_transpose2d(x, w, b, 2, 1, 1, 1, 2)
    as_lists = convt_op.conv_transpose2d(x, w, b, stride=[2], padding=[1], output_padding=[1], dilation=[2])
    assert torch.equal(as_pairs, as_ints) and torch.equal(as_pairs, as_lists)
    assert relative_error(as_pairs, reference(x, w, b, case)) <= TOLERANCE[torch.float64]
