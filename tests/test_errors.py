"""Every argument error, raised by each implementation that checks it.

The checks exist twice: in C++ (csrc/frontend.cpp, reached by the CPU kernel)
and in Python (convt_op/_fake.py, reached under FakeTensorMode, on meta
tensors, and so by torch.compile / torch.export). Each error case runs through

    op    torch.ops.convt.conv_transpose2d on CPU tensors    -> C++ frontend
    api   convt_op.conv_transpose2d on CPU tensors           -> C++ frontend (via ops.py)
    fake  the op on FakeTensors                              -> _fake.py
    meta  the op on meta tensors (dispatches to the fake)    -> _fake.py

and must raise RuntimeError with a message naming the problem, so removing
either copy of a check fails a test here.

The base call sets every argument away from its default; the "*_defaults"
cases leave them at the defaults, which the dispatcher drops before calling
the Python fake (so the fake's own defaults are exercised too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import convt_op

op = torch.ops.convt.conv_transpose2d
backward_op = torch.ops.convt.conv_transpose2d_backward

F64 = torch.float64


def _randn(*shape, dtype=F64):
    return torch.randn(*shape, dtype=torch.float64).to(dtype)


@dataclass(frozen=True)
class Call:
    """One call of the forward op; tensors() makes fresh random tensors for it."""

    input: tuple = (2, 4, 5, 6)
    weight: tuple = (4, 3, 3, 3)
    bias: tuple | None = (3,)
    stride: list = field(default_factory=lambda: [2, 2])
    padding: list = field(default_factory=lambda: [1, 1])
    output_padding: list = field(default_factory=lambda: [1, 1])
    groups: int = 1
    dilation: list = field(default_factory=lambda: [1, 2])
    input_dtype: torch.dtype = F64
    weight_dtype: torch.dtype = F64
    bias_dtype: torch.dtype = F64
    sparse_input: bool = False

    def tensors(self):
        x = _randn(*self.input, dtype=self.input_dtype)
        if self.sparse_input:
            x = x.to_sparse()
        w = _randn(*self.weight, dtype=self.weight_dtype)
        b = None if self.bias is None else _randn(*self.bias, dtype=self.bias_dtype)
        return x, w, b

    def scalars(self):
        return (self.stride, self.padding, self.output_padding, self.groups, self.dilation)


@dataclass(frozen=True)
class ErrorCase:
    id: str
    call: Call
    match: str  # regular expression searched in the message
    modes: tuple = ("op", "api", "fake", "meta")


BASE = Call()
DEFAULTS = Call(stride=[1, 1], padding=[0, 0], output_padding=[0, 0], groups=1, dilation=[1, 1])

ERROR_CASES = [
    ErrorCase("input_2d", replace(BASE, input=(4, 5)), r"Expected 3D \(unbatched\) or 4D \(batched\) input.*\[4, 5\]"),
    ErrorCase("input_5d", replace(BASE, input=(1, 2, 4, 5, 6)), r"Expected 3D \(unbatched\) or 4D \(batched\) input"),
    ErrorCase("weight_3d", replace(BASE, weight=(4, 3, 3)), r"expected 4-D weight.*\[4, 3, 3\]"),
    ErrorCase("weight_5d", replace(BASE, weight=(4, 3, 3, 3, 1)), r"expected 4-D weight"),
    ErrorCase("channels_mismatch", replace(BASE, input=(2, 5, 5, 6)), r"to have 4 channels, but got 5 channels instead"),
    ErrorCase("channels_mismatch_unbatched", replace(BASE, input=(5, 5, 6)), r"to have 4 channels, but got 5 channels instead"),
    ErrorCase("groups_not_dividing", replace(BASE, groups=3), r"groups=3, expected weight to be divisible by 3 at dimension 0"),
    ErrorCase("groups_zero", replace(BASE, groups=0), r"non-positive groups is not supported"),
    ErrorCase("groups_negative", replace(BASE, groups=-2), r"non-positive groups is not supported"),
    # stride 2, dilation (1, 2): output_padding 2 is not smaller than either, on H and on W.
    ErrorCase("output_padding_h_too_big", replace(BASE, output_padding=[2, 1]), r"output padding must be smaller than either stride or dilation"),
    ErrorCase("output_padding_w_too_big", replace(BASE, output_padding=[1, 2]), r"output padding must be smaller than either stride or dilation"),
    ErrorCase(
        "output_padding_stride1_dilation1",
        replace(BASE, stride=[1, 1], dilation=[1, 3], output_padding=[1, 0]),
        r"output padding must be smaller than either stride or dilation",
    ),
    ErrorCase("output_padding_negative", replace(BASE, output_padding=[-1, 0]), r"negative output_padding is not supported"),
    ErrorCase("stride_zero", replace(BASE, stride=[0, 2]), r"non-positive stride is not supported"),
    ErrorCase("stride_negative", replace(BASE, stride=[2, -1]), r"non-positive stride is not supported"),
    ErrorCase("dilation_zero", replace(BASE, dilation=[1, 0], output_padding=[1, 0]), r"dilation should be greater than zero"),
    ErrorCase("dilation_negative", replace(BASE, dilation=[-1, 2]), r"dilation should be greater than zero"),
    ErrorCase("padding_negative", replace(BASE, padding=[1, -1]), r"negative padding is not supported"),
    # Hout = (5-1)*2 - 2*9 + 1*2 + 1 + 1 = -6
    ErrorCase("output_too_small", replace(BASE, padding=[9, 1]), r"Calculated output size per channel: \(-6 x \d+\)\. Output size is too small"),
    ErrorCase("kernel_size_zero", replace(BASE, weight=(4, 3, 0, 3)), r"non-empty 4D weight tensor expected, but got: \[4, 3, 0, 3\]"),
    ErrorCase("weight_no_output_channels", replace(BASE, weight=(4, 0, 3, 3), bias=None), r"non-empty 4D weight tensor expected"),
    ErrorCase(
        "weight_no_input_channels",
        replace(BASE, input=(2, 0, 5, 6), weight=(0, 3, 3, 3)),
        r"Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size \[0, 3, 3, 3\]",
    ),
    ErrorCase("input_spatial_zero", replace(BASE, input=(2, 4, 0, 6)), r"Only zero batch or zero channel inputs are supported, but got input shape: \[2, 4, 0, 6\]"),
    ErrorCase("dtype_input_weight", replace(BASE, weight_dtype=torch.float32), r"Input type \(Double\) and weight type \(Float\) should be the same"),
    ErrorCase("dtype_input_bias", replace(BASE, bias_dtype=torch.float32), r"Input type \(Double\) and bias type \(Float\) should be the same"),
    ErrorCase("bias_wrong_length", replace(BASE, bias=(4,)), r"expected bias to be 1-dimensional with 3 elements, but got bias of size \[4\]"),
    ErrorCase("bias_2d", replace(BASE, bias=(3, 1)), r"expected bias to be 1-dimensional with 3 elements"),
    ErrorCase(
        "dtype_int64",
        replace(BASE, input_dtype=torch.int64, weight_dtype=torch.int64, bias_dtype=torch.int64),
        r"unsupported dtype \w+ for input",
    ),
    ErrorCase(
        "dtype_complex",
        replace(BASE, input_dtype=torch.complex128, weight_dtype=torch.complex128, bias_dtype=torch.complex128),
        r"unsupported dtype \w+ for input",
    ),
    ErrorCase("dtype_int_weight", replace(BASE, input_dtype=torch.int32, weight_dtype=torch.int32, bias=None), r"unsupported dtype"),
    ErrorCase("stride_len3", replace(BASE, stride=[2, 2, 2]), r"stride to be a single integer value or a list of 2 values"),
    ErrorCase("padding_len3", replace(BASE, padding=[1, 1, 1]), r"padding to be a single integer value or a list of 2 values"),
    ErrorCase("output_padding_len3", replace(BASE, output_padding=[1, 1, 1]), r"output_padding to be a single integer value or a list of 2 values"),
    ErrorCase("dilation_len3", replace(BASE, dilation=[1, 2, 1]), r"dilation to be a single integer value or a list of 2 values"),
    # Every scalar argument at its schema default (dropped by the dispatcher before the fake).
    ErrorCase("channels_mismatch_defaults", replace(DEFAULTS, input=(2, 5, 5, 6)), r"to have 4 channels, but got 5 channels instead"),
    ErrorCase("bias_wrong_length_defaults", replace(DEFAULTS, bias=(4,)), r"expected bias to be 1-dimensional with 3 elements"),
    ErrorCase("input_spatial_zero_defaults", replace(DEFAULTS, weight=(4, 3, 1, 1), input=(2, 4, 0, 6)), r"Only zero batch or zero channel inputs are supported"),
    ErrorCase("dtype_input_weight_defaults", replace(DEFAULTS, weight_dtype=torch.float32, bias=None), r"Input type \(Double\) and weight type \(Float\)"),
    # Sparse tensors have no kernel: the dispatcher refuses them (NotImplementedError is a
    # RuntimeError) for op, api and meta ("SparseCPU"/"SparseMeta" backend); the fake says
    # "expected input to be a dense (strided) tensor, but got layout torch.sparse_coo".
    ErrorCase("sparse_input", replace(BASE, sparse_input=True), r"(?i)sparse"),
]


def _to_fake(mode: FakeTensorMode, t):
    return mode.from_tensor(t) if isinstance(t, torch.Tensor) else t


def _run(mode: str, fn, tensors, scalars, *, api=None):
    """Calls fn(*tensors, *scalars) through the implementation `mode` names."""
    if mode == "op":
        return fn(*tensors, *scalars)
    if mode == "api":
        return api(*tensors, *scalars)
    if mode == "meta":
        return fn(*(t.to("meta") if isinstance(t, torch.Tensor) else t for t in tensors), *scalars)
    if mode == "fake":
        with FakeTensorMode() as fake_mode:
            return fn(*(_to_fake(fake_mode, t) for t in tensors), *scalars)
    raise AssertionError(mode)


def _api(x, w, b, stride, padding, output_padding, groups, dilation):
    return convt_op.conv_transpose2d(
        x, w, b, stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation
    )


_PARAMS = [pytest.param(case, mode, id=f"{case.id}-{mode}") for case in ERROR_CASES for mode in case.modes]


@pytest.mark.parametrize("case,mode", _PARAMS)
def test_forward_error(case: ErrorCase, mode: str):
    with pytest.raises(RuntimeError, match=case.match):
        _run(mode, op, case.call.tensors(), case.call.scalars(), api=_api)


@pytest.mark.parametrize("mode", ["op", "api", "fake", "meta"])
def test_base_call_is_valid(mode):
    """The calls above differ from BASE in one thing only, and BASE itself is accepted."""
    out = _run(mode, op, BASE.tensors(), BASE.scalars(), api=_api)
    assert out.shape == (2, 3, 10, 14)


# PyTorch's CPU convolution accepts these calls; convt is stricter on purpose.
_PYTORCH_LENIENT = {
    "dtype_int64",  # the slow path computes integer convolutions
    "dtype_int_weight",
    "dtype_complex",
    "dtype_input_bias",  # the bias is added without a dtype check
}


@pytest.mark.parametrize("case", [c for c in ERROR_CASES if c.id not in _PYTORCH_LENIENT], ids=lambda c: c.id)
def test_pytorch_also_rejects(case):
    """Sanity of the table: each case is an error for F.conv_transpose2d too."""
    x, w, b = case.call.tensors()
    stride, padding, output_padding, groups, dilation = case.call.scalars()
    call = lambda: torch.nn.functional.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)  # noqa: E731
    with pytest.raises(RuntimeError):
        call()


# ---------------------------------------------------------------------------
# Device mismatch: without a GPU, only the meta device can differ from cpu.
# Meta tensors dispatch to the fake kernel, so this exercises _fake.py; the C++
# copy of the check runs on GPU machines (tests/ GPU suite).


@pytest.mark.parametrize(
    "which,match",
    [
        ("input", r"Expected input and weight to be on the same device, but got input on meta and weight on cpu"),
        ("weight", r"Expected input and weight to be on the same device, but got input on cpu and weight on meta"),
        ("bias", r"Expected input and bias to be on the same device, but got input on cpu and bias on meta"),
    ],
)
def test_device_mismatch_meta(which, match):
    x, w, b = BASE.tensors()
    x, w, b = [t.to("meta") if name == which else t for name, t in zip(("input", "weight", "bias"), (x, w, b))]
    with pytest.raises(RuntimeError, match=match):
        op(x, w, b, *BASE.scalars())


def test_device_mismatch_fake():
    x, w, b = BASE.tensors()
    x_meta = x.to("meta")
    with FakeTensorMode() as mode:
        fx, fw, fb = mode.from_tensor(x_meta), mode.from_tensor(w), mode.from_tensor(b)
        with pytest.raises(RuntimeError, match=r"same device, but got input on meta and weight on cpu"):
            op(fx, fw, fb, *BASE.scalars())


def test_meta_dispatches_to_the_fake(monkeypatch):
    """Meta tensors reach convt_op._fake (so the meta-mode cases above test the fake's checks)."""
    from convt_op import _fake

    calls = []
    original = _fake.check_forward_args

    def spy(*args, **kwargs):
        calls.append(args[0].device.type)
        return original(*args, **kwargs)

    monkeypatch.setattr(_fake, "check_forward_args", spy)
    x, w, b = BASE.tensors()
    op(x.to("meta"), w.to("meta"), b.to("meta"), *BASE.scalars())
    assert calls == ["meta"]


# ---------------------------------------------------------------------------
# Backward op: its own argument checks (grad_output) and the shared geometry checks.

_BACKWARD_GEOMETRY = ([2, 2], [1, 1], [1, 1], 1, [1, 2])  # BASE's: forward output [2, 3, 10, 14]


def _backward_tensors(grad_output_shape=(2, 3, 10, 14), grad_output_dtype=F64, input_shape=(2, 4, 5, 6)):
    return _randn(*grad_output_shape, dtype=grad_output_dtype), _randn(*input_shape), _randn(4, 3, 3, 3)


BACKWARD_ERROR_CASES = [
    ("grad_output_wrong_height", dict(grad_output_shape=(2, 3, 9, 14)), _BACKWARD_GEOMETRY,
     r"grad_output has size \[2, 3, 9, 14\] but the forward output has size \[2, 3, 10, 14\]"),
    ("grad_output_wrong_channels", dict(grad_output_shape=(2, 4, 10, 14)), _BACKWARD_GEOMETRY,
     r"grad_output has size \[2, 4, 10, 14\] but the forward output has size"),
    ("grad_output_wrong_batch", dict(grad_output_shape=(3, 3, 10, 14)), _BACKWARD_GEOMETRY,
     r"grad_output has size \[3, 3, 10, 14\]"),
    ("grad_output_wrong_ndim", dict(grad_output_shape=(3, 10, 14)), _BACKWARD_GEOMETRY,
     r"grad_output has 3 dimensions but input has 4"),
    ("grad_output_unbatched_wrong_size", dict(grad_output_shape=(3, 10, 13), input_shape=(4, 5, 6)), _BACKWARD_GEOMETRY,
     r"grad_output has size \[1, 3, 10, 13\] but the forward output has size \[1, 3, 10, 14\]"),
    ("grad_output_dtype", dict(grad_output_dtype=torch.float32), _BACKWARD_GEOMETRY,
     r"grad_output type \(Float\) and input type \(Double\) should be the same"),
    ("grad_output_int", dict(grad_output_dtype=torch.int64), _BACKWARD_GEOMETRY,
     r"unsupported dtype \w+ for grad_output"),
    ("input_2d", dict(input_shape=(4, 5), grad_output_shape=(3, 10)), _BACKWARD_GEOMETRY,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input"),
    ("channels_mismatch", dict(input_shape=(2, 5, 5, 6)), _BACKWARD_GEOMETRY, r"to have 4 channels, but got 5 channels instead"),
    ("groups_zero", {}, ([2, 2], [1, 1], [1, 1], 0, [1, 2]), r"non-positive groups is not supported"),
    ("output_padding_too_big", {}, ([2, 2], [1, 1], [2, 1], 1, [1, 2]), r"output padding must be smaller than either stride or dilation"),
    ("stride_zero", {}, ([0, 2], [1, 1], [1, 1], 1, [1, 2]), r"non-positive stride is not supported"),
]


@pytest.mark.parametrize("mode", ["op", "fake", "meta"])
@pytest.mark.parametrize(
    "kwargs,geometry,match", [pytest.param(*c[1:], id=c[0]) for c in BACKWARD_ERROR_CASES]
)
def test_backward_error(kwargs, geometry, match, mode):
    go, x, w = _backward_tensors(**kwargs)
    with pytest.raises(RuntimeError, match=match):
        _run(mode, backward_op, (go, x, w), (*geometry, [True, True, True]))


@pytest.mark.parametrize("mode", ["op", "fake", "meta"])
def test_backward_base_call_is_valid(mode):
    gi, gw, gb = _run(mode, backward_op, _backward_tensors(), (*_BACKWARD_GEOMETRY, [True, True, True]))
    assert (gi.shape, gw.shape, gb.shape) == ((2, 4, 5, 6), (4, 3, 3, 3), (3,))


# ---------------------------------------------------------------------------
# The fake's messages are the C++ frontend's messages, word for word.


_MESSAGE_CASES = [
    pytest.param(c, id=c.id)
    for c in ERROR_CASES
    if "fake" in c.modes and c.id != "sparse_input"  # the kernel never sees sparse tensors (dispatcher error)
]


@pytest.mark.parametrize("case", _MESSAGE_CASES)
def test_fake_message_equals_kernel_message(case):
    tensors, scalars = case.call.tensors(), case.call.scalars()
    messages = []
    for mode in ("op", "fake"):
        with pytest.raises(RuntimeError) as info:
            _run(mode, op, tensors, scalars)
        messages.append(_first_line(str(info.value)))
    assert messages[0] == messages[1]


def _first_line(message: str) -> str:
    # C++ errors append a traceback-ish "Exception raised from ..." tail.
    return re.split(r"\n", message.strip())[0]
