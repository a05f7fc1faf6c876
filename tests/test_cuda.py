"""GPU tests of the CUDA kernels: numerics, gradients, registration, streams, graphs, big tensors.

The whole module is skipped (not failed) where it cannot run: no CUDA device,
or a convt_op library built without CUDA kernels. Any other error fails.

Every numerics check compares with PyTorch computed in float64 (tests/cases.py)
on random inputs, and runs the op on a poisoned output buffer
(``run_poisoned``) so that an element the kernel never writes reads NaN.

Kept to a few minutes on an H100: small grid problems, one big-tensor case.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from contextlib import contextmanager
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import convt_op  # noqa: E402  (builds the library, with CUDA kernels where nvcc exists)
from fresh_process import WS_TILE_KIND, forward_check, run_pytest, run_python  # noqa: E402
from cases import ALL_CASES, DEPTHWISE_CASES, FEATURE_CASES, GEOMETRY_CASES, TOLERANCE, Case, reference, relative_error  # noqa: E402

if not torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d", "CUDA"):
    pytest.skip("convt_op was built without CUDA kernels (no nvcc, or CONVT_OP_NO_CUDA=1)", allow_module_level=True)

op = torch.ops.convt.conv_transpose2d
backward_op = torch.ops.convt.conv_transpose2d_backward
pytestmark = pytest.mark.gpu

DEVICE = torch.device("cuda")

# The tests of the sm_90a (wgmma) kernels.
SM90_ONLY = pytest.mark.skipif(torch.cuda.get_device_capability() != (9, 0), reason="the wgmma kernels need sm_90")


def this_file(test: str) -> str:
    """The node id of a test of this module, for run_pytest (a fresh process)."""
    return f"{os.path.abspath(__file__)}::{test}"


def skip_under_knobs(*names: str) -> None:
    """Skips a fresh-process knob test where the environment already sets one of the knobs it sets or
    relies on (gpu_check.sh runs the suite under some of them)."""
    set_ = [name for name in names if os.environ.get(name)]
    if set_:
        pytest.skip(f"the environment sets {', '.join(set_)}, which this test sets or relies on")

# A documented difference (docs/api.md): PyTorch's CUDA output format depends on the
# backend it picks (float64, and some dilated or grouped shapes, leave cuDNN and come
# back contiguous for channels_last input), while convt keeps channels_last for every
# dtype and shape (csrc/frontend.cpp output_memory_format). The tests hold convt to
# its own rule, and to PyTorch's format wherever PyTorch keeps channels_last.

# (name, dtype, allow_tf32, tolerance): float32 runs with TF32 allowed (PyTorch's
# default for convolutions) and with it off, where the result must be fp32-accurate.
DTYPE_CONFIGS = [
    ("fp32_tf32", torch.float32, True, TOLERANCE["tf32"]),
    ("fp32", torch.float32, False, TOLERANCE[torch.float32]),
    ("fp64", torch.float64, False, TOLERANCE[torch.float64]),
    ("bf16", torch.bfloat16, False, TOLERANCE[torch.bfloat16]),
    ("fp16", torch.float16, False, TOLERANCE[torch.float16]),
]
DTYPE_IDS = [c[0] for c in DTYPE_CONFIGS]


# --------------------------------------------------------------------------- helpers


@contextmanager
def conv_tf32(enabled: bool):
    """torch.backends.cudnn.allow_tf32 for the block: convt's kernels read the same flag
    (at::globalContext().allowTF32CuDNN). Set directly rather than with
    torch.backends.cudnn.flags(), whose defaults would also switch cuDNN off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cudnn.allow_tf32 = old


def op_args(case: Case) -> tuple:
    """The schema's trailing arguments: stride, padding, output_padding, groups, dilation."""
    return (list(case.stride), list(case.padding), list(case.output_padding), case.groups, list(case.dilation))


def run_poisoned(run):
    """Runs ``run() -> tuple of tensors`` on output memory pre-filled with NaN.

    The op allocates its own outputs, so we cannot hand it a poisoned buffer.
    Instead: run once, fill every result with NaN, free them, and run again. The
    second run makes the same allocations in the same order on the same stream,
    and PyTorch's caching allocator hands back the same (best-fit, just freed)
    blocks, so the outputs start out as NaN and any element the kernel leaves
    unwritten shows up as NaN in the error check. We verify this by comparing
    data pointers and retry up to twice; if the blocks still differ, the
    check runs unpoisoned with a warning, and test_poisoning_takes_effect fails
    so that the harness gets fixed.

    Chosen over PYTORCH_NO_CUDA_MEMORY_CACHING (must be set before CUDA starts,
    and fresh cudaMalloc memory is often zeros, not NaN) and over filling a big
    block before the run (the allocator may split it differently).
    """
    for _ in range(3):
        poisoned = _poison_and_free(run())  # keeps no reference: the blocks go back to the pool
        results = run()
        if {t.data_ptr() for t in results if t is not None and t.numel() > 0} == poisoned:
            return results, True
        del results  # free before retrying, so the next attempt starts from the same pool state
    warnings.warn("run_poisoned: outputs did not reuse the poisoned blocks; check ran unpoisoned")
    return run(), False


def _poison_and_free(results) -> set[int]:
    """Fills each result with NaN; returns their data pointers. The caller keeps no
    reference, so the tensors are freed when this returns."""
    ptrs = set()
    for t in results:
        if t is not None and t.numel() > 0:
            t.detach().fill_(float("nan"))
            ptrs.add(t.data_ptr())
    return ptrs


def assert_close_to(out: torch.Tensor, ref: torch.Tensor, tol: float, what: str = "output") -> None:
    ref = ref.detach().to("cpu", torch.float64)
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    err = relative_error(out, ref)
    n_nan = torch.isnan(out).sum().item()
    assert n_nan == 0, f"{what}: {n_nan} NaN elements (unwritten output?), rel error {err:.2e}"
    assert err <= tol, f"{what}: relative error {err:.2e} > {tol:.0e}"


def assert_memory_format_by_rule(out: torch.Tensor, case: Case) -> None:
    """convt's documented rule: channels_last out iff the input (or weight) suggests it."""
    if case.output_is_channels_last():
        assert out.is_contiguous(memory_format=torch.channels_last), out.stride()
    else:
        assert out.is_contiguous(), out.stride()


def assert_memory_format_like(out: torch.Tensor, expected: torch.Tensor) -> None:
    """Same memory format as PyTorch's own CUDA result (strides of size-1 dims are moot)."""
    assert out.is_contiguous() == expected.is_contiguous(), (out.stride(), expected.stride())
    assert out.is_contiguous(memory_format=torch.channels_last) == expected.is_contiguous(
        memory_format=torch.channels_last
    ), (out.stride(), expected.stride())


def reference_grads(x, w, b, grad_out, case: Case):
    """float64 CPU autograd of F.conv_transpose2d: (grad_input, grad_weight, grad_bias or None)."""
    leaf = lambda t: None if t is None else t.detach().to("cpu", torch.float64).requires_grad_()  # noqa: E731
    x64, w64, b64 = leaf(x), leaf(w), leaf(b)
    out = F.conv_transpose2d(x64, w64, b64, **case.kwargs())
    out.backward(grad_out.detach().to("cpu", torch.float64))
    return x64.grad, w64.grad, None if b64 is None else b64.grad


def random_like_output(case: Case, out_shape, dtype, seed: int, channels_last: bool):
    gen = torch.Generator().manual_seed(seed)
    go = torch.randn(out_shape, generator=gen, dtype=torch.float64).to(DEVICE, dtype)
    return go.contiguous(memory_format=torch.channels_last) if channels_last and go.dim() == 4 else go


# --------------------------------------------------------------------------- forward numerics


FORWARD_CASES = ALL_CASES + DEPTHWISE_CASES


@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", FORWARD_CASES, ids=[c.id for c in FORWARD_CASES])
def test_forward_matches_float64(case: Case, config, request):
    """The whole grid in every dtype: values, shape, dtype, device and memory format."""
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=1)
    ref = reference(x, w, b, case)
    with conv_tf32(tf32):
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        expected = F.conv_transpose2d(x, w, b, **case.kwargs())
    assert out.dtype == dtype and out.device == x.device
    assert_close_to(out, ref, tol)
    assert_memory_format_by_rule(out, case)
    if expected.is_contiguous(memory_format=torch.channels_last) and not expected.is_contiguous():
        assert_memory_format_like(out, expected)  # where PyTorch keeps channels_last, so does convt


def test_poisoning_takes_effect():
    """The harness itself: run_poisoned really lands outputs on NaN-filled blocks."""
    for case in FEATURE_CASES[:6] + GEOMETRY_CASES[:10:3]:
        x, w, b = case.make(torch.float32, DEVICE)
        if case.N == 0:
            continue
        _, poisoned = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        assert poisoned, f"forward outputs not poisoned for {case.id}"
        go = random_like_output(case, reference(x, w, b, case).shape, torch.float32, 0, False)
        _, poisoned = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [True, True, case.bias]))
        assert poisoned, f"backward outputs not poisoned for {case.id}"


# --------------------------------------------------------------------------- gradients

GRAD_CASES = GEOMETRY_CASES[::6] + FEATURE_CASES


@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_backward_matches_float64(case: Case, config, request):
    """grad_input, grad_weight, grad_bias: the backward op on poisoned outputs, then the
    same through autograd (.backward), both against float64 CPU autograd."""
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=2)
    out_shape = reference(x, w, b, case).shape
    go = random_like_output(case, out_shape, dtype, seed=3, channels_last=case.output_is_channels_last())
    ref_gi, ref_gw, ref_gb = reference_grads(x, w, b, go, case)
    with conv_tf32(tf32):
        (gi, gw, gb), _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [True, True, case.bias]))
    assert_close_to(gi, ref_gi, tol, "grad_input")
    assert_close_to(gw, ref_gw, tol, "grad_weight")
    if case.bias:
        assert_close_to(gb, ref_gb, tol, "grad_bias")
    else:
        assert gb.shape == (0,)
    # Memory formats as the frontend promises: grad_input like the input's output rule,
    # grad_weight like the weight, grad_bias contiguous.
    assert gi.shape == x.shape and gw.shape == w.shape
    if case.output_is_channels_last():
        assert gi.is_contiguous(memory_format=torch.channels_last)

    leaves = [t.detach().requires_grad_() for t in (x, w, b) if t is not None]
    with conv_tf32(tf32):
        out = convt_op.conv_transpose2d(*leaves, *([None] if b is None else []), **case.kwargs())
        out.backward(go)
    for leaf, ref, name in zip(leaves, (ref_gi, ref_gw, ref_gb), ("input", "weight", "bias")):
        assert_close_to(leaf.grad, ref, tol, f"autograd grad_{name}")


# Long reductions in strict fp32 (allow_tf32=False): the 3xTF32 tensor-core paths must stay
# fp32-accurate however long K gets. Chaining the accumulator through the tensor core (whose
# fp32 accumulation truncates) measured 1.3e-5 at K = 2048, over the 1e-5 tolerance.
LONG_K_CASES = [
    Case(2, 1024, 32, 4, 4, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False),  # forward K = 4096
    Case(2, 1024, 64, 4, 4, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False),  # the same, 3xTF32 wgmma on sm_90a
    Case(2, 32, 1024, 4, 4, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False),  # grad_input K = 4096
    Case(64, 16, 16, 32, 32, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), bias=False),  # grad_weight K = 65536
]


@pytest.mark.parametrize("case", LONG_K_CASES, ids=[c.id for c in LONG_K_CASES])
def test_strict_fp32_long_reductions(case: Case):
    x, w, b = case.make(torch.float32, DEVICE, seed=31)
    ref = reference(x, w, b, case)
    go = random_like_output(case, ref.shape, torch.float32, seed=32, channels_last=False)
    ref_gi, ref_gw, _ = reference_grads(x, w, b, go, case)
    with conv_tf32(False):
        out = op(x, w, b, *op_args(case))
        gi, gw, _ = backward_op(go, x, w, *op_args(case), [True, True, False])
    tol = TOLERANCE[torch.float32]
    assert_close_to(out, ref, tol)
    assert_close_to(gi, ref_gi, tol, "grad_input")
    assert_close_to(gw, ref_gw, tol, "grad_weight")


# Strict fp32 on sm_90a: 3xTF32 on the wgmma forward (forward_wgmma.cu's kSplit) where a group has
# >= 64 output channels and the phases >= 3 taps on average (forward.cu, wgmma_3xtf32_suitable):
# NCHW rows 16-byte aligned and not (4-byte copies), phases of a stride with output padding and
# bias, tall tiles of small images, channels_last input (copied to NCHW), a partial second channel
# tile, groups, dilation with phases along W. The profiler checks that the split kernel ran;
# LONG_K_CASES above hold it to 1e-5 over K = 4096.
SPLIT_CASES = [
    Case(2, 32, 64, 12, 16, (3, 3), (1, 1), (1, 1)),
    Case(2, 24, 64, 7, 22, (3, 5), (1, 1), (1, 2), (0, 0), (1, 1), bias=False),
    Case(2, 32, 64, 10, 12, (4, 4), (2, 2), (1, 1), (1, 1)),
    Case(16, 32, 64, 4, 4, (4, 4), (2, 2), (1, 1)),
    Case(2, 32, 64, 10, 12, (4, 4), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(1, 40, 96, 9, 8, (3, 3)),
    Case(2, 64, 128, 8, 8, (3, 3), (1, 1), (1, 1), groups=2),
    Case(1, 16, 64, 6, 24, (3, 3), (1, 2), (1, 1), (0, 1), (2, 1)),
]


def _split_kernels(names: str) -> list[str]:
    """The wgmma forward kernels that ran 3xTF32 (template argument kSplit)."""
    return _wgmma_flag_kernels(names, 9)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("case", SPLIT_CASES, ids=[c.id for c in SPLIT_CASES])
def test_strict_fp32_wgmma_3xtf32(case: Case):
    config = ("fp32", torch.float32, False, TOLERANCE[torch.float32])
    _check_wgmma_variant(case, config, "CONVT_FWD_3XTF32", 61, _split_kernels)


_SPLIT_OFF_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
torch.backends.cudnn.allow_tf32 = False
err, names, same = forward_check(Case(2, 32, 64, 12, 16, (3, 3), (1, 1), (1, 1)), torch.float32, 62, "")
print(err, same, names)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_strict_fp32_3xtf32_knob_off():
    """CONVT_FWD_3XTF32=0: strict fp32 runs the mma.sync kernel (forward_igemm.cu) instead."""
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    out = run_python(_SPLIT_OFF_SCRIPT, tests_dir, env_extra={"CONVT_FWD_3XTF32": "0"}).split()
    err, same, names = float(out[0]), out[1], out[2] if len(out) > 2 else ""
    assert err <= TOLERANCE[torch.float32], err
    assert same == "1"
    assert "wgmma_fwd_kernel" not in names and "igemm" in names, names


MASK_CASES = [FEATURE_CASES[0], FEATURE_CASES[8], GEOMETRY_CASES[37]]


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False], [False, False, True], [True, True, False]],
                         ids=["gi", "gw", "gb", "gi_gw"])
@pytest.mark.parametrize("case", MASK_CASES, ids=[c.id for c in MASK_CASES])
def test_backward_output_mask(case: Case, mask):
    """Only the requested gradients are computed; the others come back as empty [0]."""
    x, w, b = case.make(torch.float64, DEVICE, seed=4)
    go = random_like_output(case, reference(x, w, b, case).shape, torch.float64, 5, case.output_is_channels_last())
    refs = reference_grads(x, w, b, go, case)
    got, _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), mask))
    for wanted, t, ref, name in zip(mask, got, refs, ("grad_input", "grad_weight", "grad_bias")):
        if wanted and ref is not None:
            assert_close_to(t, ref, TOLERANCE[torch.float64], name)
        elif not wanted:
            assert t.shape == (0,), f"{name} not requested but has shape {tuple(t.shape)}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_backward_of_sum_loss(dtype):
    """out.sum().backward() hands the kernel an expanded grad_output (all strides 0)."""
    case = Case(3, 8, 6, 7, 9, (3, 4), (2, 2), (1, 1), (1, 0), (1, 2), groups=2)
    x, w, b = case.make(dtype, DEVICE, seed=6)
    leaves = [t.detach().requires_grad_() for t in (x, w, b)]
    with conv_tf32(False):
        convt_op.conv_transpose2d(*leaves, **case.kwargs()).sum().backward()
    go = torch.ones(reference(x, w, b, case).shape, dtype=dtype, device=DEVICE)
    for leaf, ref, name in zip(leaves, reference_grads(x, w, b, go, case), ("input", "weight", "bias")):
        assert_close_to(leaf.grad, ref, TOLERANCE[dtype], f"grad_{name}")


# --------------------------------------------------------------------------- registration checks

OPCHECK_CASES = [
    FEATURE_CASES[1],  # groups 4, stride (2, 3), dilation (2, 1)
    FEATURE_CASES[0],  # groups 2, stride 2, output_padding 1
    FEATURE_CASES[8],  # channels_last
    FEATURE_CASES[9],  # channels_last, groups, no bias
    FEATURE_CASES[5],  # unbatched
    FEATURE_CASES[10],  # non-contiguous
    replace(FEATURE_CASES[2], dilation=(2, 2), output_padding=(1, 1)),  # depthwise, dilation 2
]


@pytest.mark.parametrize("case", OPCHECK_CASES, ids=[c.id for c in OPCHECK_CASES])
def test_opcheck_forward(case: Case, request):
    """Schema, fake kernel (shapes and strides vs the CUDA kernel), autograd registration, AOT dispatch."""
    x, w, b = case.make(torch.float32, DEVICE, seed=7)
    args = (x.requires_grad_(), w.requires_grad_(), None if b is None else b.requires_grad_())
    with conv_tf32(False):
        torch.library.opcheck(op, (*args, *op_args(case)))


@pytest.mark.parametrize("case", OPCHECK_CASES[:4], ids=[c.id for c in OPCHECK_CASES[:4]])
def test_opcheck_backward(case: Case, request):
    # Double backward (AOT dispatch) calls the forward op, whose fake kernel has the defaults bug.
    x, w, b = case.make(torch.float32, DEVICE, seed=8)
    go = random_like_output(case, reference(x, w, b, case).shape, torch.float32, 9, case.output_is_channels_last())
    args = [t.requires_grad_() for t in (go, x, w)]
    with conv_tf32(False):
        torch.library.opcheck(backward_op, (*args, *op_args(case), [True, True, case.bias]))


GRADCHECK_CASES = [
    Case(2, 4, 6, 3, 4, (3, 3), (2, 2), (1, 1), (1, 0), (1, 1), groups=2),
    Case(1, 3, 2, 3, 3, (2, 3), (1, 2), (0, 1), (0, 1), (2, 1)),
    Case(2, 2, 4, 3, 3, (3, 2), (3, 2), (1, 0), (2, 1), (1, 2), layout="channels_last"),
    Case(None, 2, 3, 2, 3, (2, 2), (2, 1), (0, 0), (1, 0), (1, 1), bias=False),
]


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=[c.id for c in GRADCHECK_CASES])
def test_gradcheck_and_gradgradcheck(case: Case):
    """First and second derivatives in float64 on CUDA against finite differences."""
    x, w, b = case.make(torch.float64, DEVICE, seed=10)
    inputs = tuple(t.requires_grad_() for t in (x, w, b) if t is not None)

    def fn(*ts):
        bias = ts[2] if len(ts) == 3 else None
        return op(ts[0], ts[1], bias, *op_args(case))

    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7)
    assert torch.autograd.gradgradcheck(fn, inputs, eps=1e-6, atol=1e-7, fast_mode=True)


# --------------------------------------------------------------------------- determinism

DETERMINISM_CASES = [
    Case(4, 64, 48, 24, 20, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),  # several K blocks
    Case(16, 16, 16, 64, 64, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),  # long grad_weight reduction
    Case(4, 32, 32, 40, 40, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), groups=32, layout="channels_last"),
    Case(8, 128, 64, 8, 8, (2, 2), (2, 2)),  # cuBLAS + gather forward
    Case(4, 128, 32, 6, 6, (4, 4), (2, 2), (1, 1), layout="channels_last"),  # the same, channels_last
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("case", DETERMINISM_CASES, ids=[c.id for c in DETERMINISM_CASES])
def test_deterministic(case: Case, dtype):
    """Same inputs twice: bit-identical forward and (where built) gradients."""
    x, w, b = case.make(dtype, DEVICE, seed=11)

    def run():
        outs = [op(x, w, b, *op_args(case))]
        go = random_like_output(case, outs[0].shape, dtype, 12, case.output_is_channels_last())
        outs += backward_op(go, x, w, *op_args(case), [True, True, True])
        return outs

    with conv_tf32(True):
        first, second = run(), run()
    for a, c, name in zip(first, second, ("output", "grad_input", "grad_weight", "grad_bias")):
        assert torch.equal(a, c), f"{name} differs between two identical runs"


# --------------------------------------------------------------------------- streams, graphs, devices

STREAM_CASE = Case(2, 8, 12, 16, 16, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))


def test_non_default_stream():
    """Kernels run on the current stream: inputs made late on a side stream are waited for.

    The input is NaN on the default stream; on the side stream we sleep ~30 ms and only
    then copy in the real values. A kernel launched on any other stream than the
    current one would not wait for the copy and read NaN (PyTorch's streams are
    non-blocking with respect to the legacy default stream)."""
    case = STREAM_CASE
    x, w, b = case.make(torch.float32, DEVICE, seed=13)
    go = random_like_output(case, reference(x, w, b, case).shape, torch.float32, 14, False)
    ref = reference(x, w, b, case)
    ref_grads = reference_grads(x, w, b, go, case)
    late_x = torch.full_like(x, float("nan"))
    late_go = torch.full_like(go, float("nan"))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with conv_tf32(False), torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        late_x.copy_(x)
        late_go.copy_(go)
        out = op(late_x, w, b, *op_args(case))
        grads = backward_op(late_go, late_x, w, *op_args(case), [True, True, True])
    torch.cuda.current_stream().wait_stream(side)
    assert_close_to(out, ref, TOLERANCE[torch.float32])
    for g, r, name in zip(grads, ref_grads, ("grad_input", "grad_weight", "grad_bias")):
        assert_close_to(g, r, TOLERANCE[torch.float32], name)


def test_cuda_graph_forward_backward():
    """Capture forward + backward in a CUDA graph, replay on new inputs: same results as eager."""
    case = Case(2, 8, 12, 9, 11, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    x, w, b = (t.requires_grad_() for t in case.make(torch.float32, DEVICE, seed=15))
    out_shape = reference(x, w, b, case).shape
    go = random_like_output(case, out_shape, torch.float32, 16, False)

    def step():
        out = op(x, w, b, *op_args(case))
        return (out, *torch.autograd.grad(out, (x, w, b), go))

    with conv_tf32(False):
        side = torch.cuda.Stream()  # warm-up on a side stream, as torch.cuda.graphs requires
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = step()

        new_x, new_w, new_b = case.make(torch.float32, DEVICE, seed=17)
        new_go = random_like_output(case, out_shape, torch.float32, 18, False)
        with torch.no_grad():
            for dst, src in ((x, new_x), (w, new_w), (b, new_b), (go, new_go)):
                dst.copy_(src)
            for t in static:
                t.fill_(float("nan"))  # replay must rewrite every output element
        graph.replay()
        torch.cuda.synchronize()
        eager = step()
    refs = (reference(new_x, new_w, new_b, case), *reference_grads(new_x, new_w, new_b, new_go, case))
    for s, e, r, name in zip(static, eager, refs, ("output", "grad_input", "grad_weight", "grad_bias")):
        assert_close_to(s, r, TOLERANCE[torch.float32], f"replayed {name}")
        torch.testing.assert_close(s, e, rtol=1e-6, atol=1e-6, msg=f"replayed {name} differs from eager")


# One case per kernel family the dispatcher picks on an H100 (forward.cu): the mma.sync
# implicit GEMM (strict fp32), the wgmma kernel (TF32, >= 32 output channels) and the
# cuBLAS + gather path (>= 128 input channels, kernel == stride; its cuBLAS handle is
# per device).
SECOND_GPU_CASES = [
    ("igemm_fp32", STREAM_CASE, torch.float32, False, TOLERANCE[torch.float32]),
    ("wgmma_tf32", Case(2, 16, 64, 16, 16, (3, 3)), torch.float32, True, TOLERANCE["tf32"]),
    ("gemm_bf16", Case(2, 128, 16, 6, 6, (2, 2), (2, 2)), torch.bfloat16, False, TOLERANCE[torch.bfloat16]),
]


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
@pytest.mark.parametrize("name,case,dtype,tf32,tol", SECOND_GPU_CASES, ids=[c[0] for c in SECOND_GPU_CASES])
def test_tensor_on_second_gpu(name, case, dtype, tf32, tol):
    """Inputs on cuda:1 while cuda:0 is current: allocation and launch follow the input."""
    x, w, b = case.make(dtype, "cuda:1", seed=19)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, 20, False).to("cuda:1")
    with torch.cuda.device(0), conv_tf32(tf32):
        out = op(x, w, b, *op_args(case))
        grads = backward_op(go, x, w, *op_args(case), [True, True, True])
    assert out.device == torch.device("cuda:1")
    assert_close_to(out, reference(x, w, b, case), tol)
    for g, r, what in zip(grads, reference_grads(x, w, b, go, case), ("grad_input", "grad_weight", "grad_bias")):
        assert g.device == torch.device("cuda:1")
        assert_close_to(g, r, tol, what)


# --------------------------------------------------------------------------- 64-bit indexing

# fp16 output of 9 x 16385 x 16385 = 2.42e9 elements (> 2^31; the whole last channel
# starts past 2^31), from a 0.5 GB input: k=3, stride 2 gives phases with 2 and 1 taps.
BIG = dict(N=1, Cin=4, Cout=9, H=8192, W=8192, k=3, s=2, d=1)
BIG_DTYPE = torch.float16
BIG_FREE_BYTES = 16 << 30


def _rows_reference(x, w, b, o0: int, o1: int) -> torch.Tensor:
    """Output rows [o0, o1) of F.conv_transpose2d (padding 0) in float64, from the
    input rows that reach them: output row r receives input row i through tap kh
    when r = i*s + kh*d, so rows [o0, o1) need input rows
    [floor((o0 - d*(k-1)) / s), floor((o1 - 1) / s)]; local row = global - i0*s."""
    s, d, k, H = BIG["s"], BIG["d"], BIG["k"], BIG["H"]
    i0 = max(0, (o0 - d * (k - 1)) // s)
    i1 = min(H, (o1 - 1) // s + 2)
    local = F.conv_transpose2d(x[:, :, i0:i1].double(), w.double(), b.double(), stride=s, dilation=d)
    return local[:, :, o0 - i0 * s : o1 - i0 * s]


def _grad_input_rows_reference(go, w, a0: int, a1: int) -> torch.Tensor:
    """grad_input rows [a0, a1) = conv2d of the grad_output rows they read, in float64."""
    s, d, k = BIG["s"], BIG["d"], BIG["k"]
    g = go[:, :, a0 * s : (a1 - 1) * s + d * (k - 1) + 1].double()
    return F.conv2d(g, w.double(), stride=s, dilation=d)


def _grad_weight_reference(x, go) -> torch.Tensor:
    """grad_weight in float64, summed over chunks of input rows: each (input row, tap)
    pair lands in exactly one chunk, whose grad_output rows are exactly the chunk's
    local forward output rows."""
    s, d, k, H = BIG["s"], BIG["d"], BIG["k"], BIG["H"]
    w64 = torch.zeros(BIG["Cin"], BIG["Cout"], k, k, dtype=torch.float64, device=DEVICE, requires_grad=True)
    total = torch.zeros_like(w64)
    for a0 in range(0, H, 1024):
        a1 = min(H, a0 + 1024)
        out = F.conv_transpose2d(x[:, :, a0:a1].double(), w64, stride=s, dilation=d)
        g = go[:, :, a0 * s : a0 * s + out.shape[2]].double()
        total += torch.autograd.grad(out, w64, g)[0]
    return total


def test_output_over_2_31_elements():
    """64-bit indexing: forward (and backward where built) on an output of > 2^31 elements,
    checked on sampled row bands (top, middle, bottom) against float64 PyTorch."""
    if torch.cuda.mem_get_info()[0] < BIG_FREE_BYTES:
        pytest.skip(f"needs {BIG_FREE_BYTES >> 30} GiB of free GPU memory")
    N, Cin, Cout, H, W, k, s, d = (BIG[key] for key in ("N", "Cin", "Cout", "H", "W", "k", "s", "d"))
    Hout, Wout = (H - 1) * s + d * (k - 1) + 1, (W - 1) * s + d * (k - 1) + 1
    assert N * Cout * Hout * Wout > 2**31
    gen = torch.Generator(device=DEVICE).manual_seed(21)
    x = torch.randn(N, Cin, H, W, generator=gen, device=DEVICE, dtype=BIG_DTYPE)
    w = (torch.randn(Cin, Cout, k, k, generator=gen, device=DEVICE) / 3).to(BIG_DTYPE)
    b = torch.randn(Cout, generator=gen, device=DEVICE, dtype=BIG_DTYPE)
    args = ([s, s], [0, 0], [0, 0], 1, [d, d])
    tol = TOLERANCE[BIG_DTYPE]

    (out,), _ = run_poisoned(lambda: (op(x, w, b, *args),))
    assert out.shape == (N, Cout, Hout, Wout)
    for o0 in (0, Hout // 2 - 3, Hout - 9):
        band = out[:, :, o0 : o0 + 9]
        assert_close_to(band, _rows_reference(x, w, b, o0, o0 + 9), tol, f"output rows {o0}..{o0 + 8}")
    # Every element written (no NaN left from the poisoning), counted in chunks.
    assert sum(torch.isnan(c).sum().item() for c in out.view(-1).split(1 << 28)) == 0
    del out
    torch.cuda.empty_cache()

    # Scaled by 1/64 (exact) so that grad_bias, a sum of 2.7e8 terms, stays far from fp16's max.
    go = torch.randn(N, Cout, Hout, Wout, generator=gen, device=DEVICE, dtype=BIG_DTYPE).mul_(1 / 64)
    (gi, gw, gb), _ = run_poisoned(lambda: backward_op(go, x, w, *args, [True, True, True]))
    for a0 in (0, H // 2 - 2, H - 5):
        assert_close_to(gi[:, :, a0 : a0 + 5], _grad_input_rows_reference(go, w, a0, a0 + 5), tol,
                        f"grad_input rows {a0}..{a0 + 4}")
    assert_close_to(gw, _grad_weight_reference(x, go), tol, "grad_weight")
    assert_close_to(gb, go.sum(dim=(0, 2, 3), dtype=torch.float64), tol, "grad_bias")


# --------------------------------------------------------------------------- channels_last in place

# channels_last inputs that the Hopper wgmma kernel reads in place (no NCHW copy): input
# channels a multiple of the 16-byte quantum (8 for 16-bit types), width a multiple of 8,
# at least 32 output channels per group. Edges: a second, partly used 64-channel tile,
# odd channels per group (no paired stores), channel chunks past Cin_g, several images per
# block, stride, padding, output_padding, dilation, groups, no bias. On other GPUs these
# take the other kernels; the expectations are the same.
CL_WGMMA_CASES = [
    Case(2, 16, 64, 8, 16, (3, 3), layout="channels_last"),
    Case(2, 32, 96, 8, 8, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(3, 24, 66, 4, 8, (3, 5), (1, 2), (1, 2), (0, 1), (2, 1), layout="channels_last"),
    Case(2, 32, 70, 8, 8, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), groups=2, layout="channels_last"),
    Case(1, 8, 40, 16, 16, (3, 3), (1, 1), (2, 2), (0, 0), (2, 2), bias=False, layout="channels_last"),
    Case(16, 16, 32, 4, 8, (2, 2), (2, 2), layout="channels_last"),
]
TC_CONFIGS = [c for c in DTYPE_CONFIGS if c[0] in ("fp32_tf32", "bf16", "fp16")]


@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", CL_WGMMA_CASES, ids=[c.id for c in CL_WGMMA_CASES])
def test_forward_channels_last_in_place(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=31)
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    with conv_tf32(tf32):
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
    assert_close_to(out, reference(x, w, b, case), tol)
    assert out.is_contiguous(memory_format=torch.channels_last)


# channels_last inputs on the cuBLAS + gather path (>= 128 input channels, few taps): the
# NHWC input is the GEMM operand as is and the gather runs along the channels. One tap per
# axis (kernel == stride), two (k4 s2, k3 s2), three (dilated: the general walk); fewer
# than 32 output channels, a partial 32-channel group, more than one 128-channel pass.
# Kernel == stride skips the gather in 16-bit types, and in float / double with rows of >= 64
# pixels: per-row GEMMs write the output in place, the bias by cublasLt's epilogue
# (forward_gemm.cu launch_gemm_direct_cl):
# square and 3 x 2 kernels, no bias, an odd output channel count and input channels that
# leave the rows unaligned to 16 bytes, one image. CONVT_GEMM_LAYOUT=direct sends the
# narrow kernel == stride cases that way in every dtype, =pixel all to the gather.
CL_GEMM_CASES = [
    Case(2, 128, 16, 6, 6, (2, 2), (2, 2), layout="channels_last"),
    Case(3, 128, 40, 5, 7, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
    Case(2, 128, 150, 3, 4, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 128, 12, 3, 3, (3, 3), (2, 2), (0, 0), (1, 1), (2, 2), layout="channels_last"),
    Case(2, 128, 40, 3, 64, (2, 2), (2, 2), layout="channels_last"),
    Case(1, 128, 24, 2, 40, (3, 2), (3, 2), bias=False, layout="channels_last"),
    Case(2, 130, 13, 3, 33, (2, 2), (2, 2), layout="channels_last"),
    Case(3, 128, 264, 4, 4, (4, 4), (2, 2), (1, 1), layout="channels_last"),
]


@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", CL_GEMM_CASES, ids=[c.id for c in CL_GEMM_CASES])
def test_forward_channels_last_gemm(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=33)
    with conv_tf32(tf32):
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
    assert_close_to(out, reference(x, w, b, case), tol)
    assert out.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
def test_forward_channels_last_gemm_direct_strided_bias(config):
    """The direct per-row GEMMs (kernel == stride, 64-pixel rows) take the bias repeated per kx from
    repeat_bias_kernel (forward_gemm.cu); here a bias that is every other element of a longer tensor."""
    skip_under_knobs("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_FWD_KSTRIDE")
    _, dtype, tf32, tol = config
    case = CL_GEMM_CASES[4]
    x, w, _ = case.make(dtype, DEVICE, seed=37)
    gen = torch.Generator().manual_seed(38)
    b = torch.randn(2 * case.Cout, generator=gen, dtype=torch.float64).to(DEVICE, dtype)[::2]
    assert b.stride() == (2,)
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        torch.cuda.synchronize()
    assert_close_to(out, reference(x, w, b, case), tol)
    assert any("repeat_bias_kernel" in e.key for e in prof.key_averages()), [e.key for e in prof.key_averages()]


def kernel_equals_stride(case: Case) -> bool:
    """Every output pixel one tap of one input pixel (forward_kernel_stride.cu's problems)."""
    return (case.kernel == case.stride and case.padding == (0, 0) and case.output_padding == (0, 0)
            and case.dilation == (1, 1) and case.groups == 1)


def kstride_takes(case: Case) -> bool:
    """Whether the kernel == stride forward runs `case` by default (sm_90a, rows under 64 pixels;
    the dtype conditions are the callers')."""
    return (torch.cuda.get_device_capability() == (9, 0) and os.environ.get("CONVT_FWD_KSTRIDE") != "0"
            and kernel_equals_stride(case) and case.W < 64)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_forward_channels_last_kernel_equals_stride_dispatch():
    """On sm_90a, kernel == stride with input rows under 64 pixels goes to its own GEMM kernel
    (forward_kernel_stride.cu) in every tensor-core dtype; wider rows, other GPUs or
    CONVT_FWD_KSTRIDE=0 take cuBLAS: 16-bit types without the gather kernel at any width, float
    with rows of 64 pixels, and narrower float rows (W = 6) through it."""
    if os.environ.get("CONVT_GEMM_LAYOUT") or os.environ.get("CONVT_FWD_PATH"):
        pytest.skip("a test knob sends the forward elsewhere")
    for case, dtype, gathers in ((CL_GEMM_CASES[4], torch.float32, False), (CL_GEMM_CASES[0], torch.bfloat16, False),
                                 (CL_GEMM_CASES[0], torch.float32, True)):
        own_kernel = kstride_takes(case)
        x, w, b = case.make(dtype, DEVICE, seed=35)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            out = op(x, w, b, *op_args(case))
            torch.cuda.synchronize()
        kernels = [e.key for e in prof.key_averages()]
        assert any("kernel_stride_fwd_kernel" in k for k in kernels) == own_kernel, (case.id, dtype, kernels)
        assert any("col2im" in k for k in kernels) == (gathers and not own_kernel), (case.id, dtype, kernels)
        assert_close_to(out, reference(x, w, b, case), TOLERANCE[torch.bfloat16 if dtype == torch.bfloat16 else "tf32"])


# The channels_last gather after cuBLAS (col2im_gather.cuh): 16-byte vectors of channels
# (col2im_cl_vec_kernel) where the channel count is a multiple of 16 / element size, single
# elements (col2im_cl_kernel) otherwise or under CONVT_FWD_GATHER_VEC=0. Cases: 40 channels (k4 s2,
# two taps per axis: vectors in every dtype), 264 (33 vectors of bf16 per pixel: positions start
# mid-warp), 150 (vectors in float64 only); and k3 s2 dilated 2 (three taps per axis: the general
# walk, single elements in every dtype). Which kernel ran, by the profiler; the values against
# float64 with the output poisoned.
GATHER_CASES = [CL_GEMM_CASES[1], CL_GEMM_CASES[7], CL_GEMM_CASES[2], CL_GEMM_CASES[3]]


def gather_taps(case: Case) -> int:
    """Most taps that reach one output coordinate along an axis (col2im_gather.cuh max_taps)."""
    return max(-(-k // (s // math.gcd(s, d))) for k, s, d in zip(case.kernel, case.stride, case.dilation))


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
def test_forward_channels_last_gather_vectors(config):
    skip_under_knobs("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_FWD_GATHER_VEC")
    _, dtype, tf32, tol = config
    vec = 16 // torch.empty((), dtype=dtype).element_size()
    for case in GATHER_CASES:
        x, w, b = case.make(dtype, DEVICE, seed=36)
        with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
            torch.cuda.synchronize()
        assert_close_to(out, reference(x, w, b, case), tol)
        keys = [e.key for e in prof.key_averages()]
        want = "col2im_cl_vec_kernel" if case.Cout % vec == 0 and gather_taps(case) <= 2 else "col2im_cl_kernel"
        assert any(want in k for k in keys), (case.id, dtype, keys)
        other = "col2im_cl_kernel" if want != "col2im_cl_kernel" else "col2im_cl_vec_kernel"
        assert not any(other in k for k in keys), (case.id, dtype, keys)


# The NCHW gather after cuBLAS (col2im_gather.cuh) where taps overlap (the rows kernel): DCGAN-like
# 4 x 4 (k4 s2); k3 s2 with output padding on 3 x 5 and on 5 x 7; k2 s1 on 8 x 8; 8 x 8 at k4 s2;
# dilated k3 s2 (three taps per axis: the general walk). All take the flat cols layout (images
# under 1024 pixels); CONVT_GEMM_LAYOUT=image runs them on the per-image layout (its own process).
NCHW_GATHER_CASES = [
    Case(3, 128, 40, 4, 4, (4, 4), (2, 2), (1, 1)),
    Case(2, 128, 20, 3, 5, (3, 3), (2, 2), (1, 1), (1, 1)),
    Case(2, 128, 24, 5, 7, (3, 3), (2, 2), (1, 1), (1, 1), bias=False),
    Case(2, 128, 24, 8, 8, (2, 2), (1, 1)),
    Case(2, 128, 16, 8, 8, (4, 4), (2, 2), (1, 1)),
    Case(2, 128, 12, 3, 3, (3, 3), (2, 2), (0, 0), (1, 1), (2, 2)),
]


@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
def test_forward_nchw_gather_values(config):
    """NCHW_GATHER_CASES against float64 with the output poisoned, under whatever cols layout
    the process has (the per-image run below sets one)."""
    skip_under_knobs("CONVT_FWD_PATH")
    _, dtype, tf32, tol = config
    for case in NCHW_GATHER_CASES:
        x, w, b = case.make(dtype, DEVICE, seed=40)
        with conv_tf32(tf32):
            (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        assert_close_to(out, reference(x, w, b, case), tol)
        assert out.is_contiguous()


def test_forward_nchw_gather_per_image_layout():
    """The same on the per-image cols layout (CONVT_GEMM_LAYOUT=image, a fresh pytest process:
    the knob is read once): every dtype against float64."""
    skip_under_knobs("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH")
    run_pytest([this_file("test_forward_nchw_gather_values")], dict(CONVT_GEMM_LAYOUT="image"), len(DTYPE_CONFIGS))


# Strict float32 (allow_tf32 off) on the cuBLAS + gather forward where Cout*KH*KW >= 512: one TF32
# GEMM over operands split into TF32 parts and remainders, tripled along K (gemm_3xtf32.cu), the
# weight split once for every batch slice; float32 accuracy against float64; the split kernel runs
# in strict mode where the rule says so only (with TF32 on, the kernel == stride cases take other
# kernels). Cases: DCGAN-like NCHW (k4 s2, 640 rows, flat cols layout), kernel == stride 2 x 2
# NCHW on 32 x 32 images (512 rows, per-image layout), channels_last (pixel-major cols, the weight
# as A), 128 input channels (640 rows), and 64 rows (not split).
GEMM_3XTF32_CASES = [Case(2, 512, 40, 4, 4, (4, 4), (2, 2), (1, 1)), Case(1, 512, 128, 32, 32, (2, 2), (2, 2)),
                     Case(2, 512, 40, 5, 7, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
                     NCHW_GATHER_CASES[0], Case(2, 128, 16, 8, 8, (2, 2), (2, 2))]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("tf32", [False, True], ids=["strict", "tf32"])
def test_forward_gemm_strict_3xtf32(tf32):
    skip_under_knobs("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_GEMM_3XTF32", "CONVT_FWD_VIA_CL", "CONVT_FWD_KSTRIDE")
    for case in GEMM_3XTF32_CASES:
        x, w, b = case.make(torch.float32, DEVICE, seed=42)
        with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
            torch.cuda.synchronize()
        assert_close_to(out, reference(x, w, b, case), TOLERANCE["tf32"] if tf32 else TOLERANCE[torch.float32])
        keys = [e.key for e in prof.key_averages()]
        if not tf32:
            assert any("col2im" in k for k in keys), (case.id, keys)  # the cuBLAS + gather forward ran
        split = not tf32 and case.Cout * case.kernel[0] * case.kernel[1] >= 512
        assert any("split_tf32_kernel" in k for k in keys) == split, (case.id, tf32, keys)


def test_forward_gemm_strict_3xtf32_everywhere():
    """CONVT_GEMM_3XTF32=all (a fresh pytest process): every strict float32 call of the cuBLAS
    forward splits its operands, whatever its channel count; the NCHW gather cases and the
    channels_last GEMM cases against float64 in every dtype."""
    skip_under_knobs("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_GEMM_3XTF32")
    run_pytest([this_file("test_forward_nchw_gather_values"), this_file("test_forward_channels_last_gemm")],
               dict(CONVT_GEMM_3XTF32="all"), len(DTYPE_CONFIGS) * (1 + len(CL_GEMM_CASES)))


def test_forward_gemm_batch_slices():
    """CONVT_GEMM_SLICE_KB=1 (a fresh pytest process): the cuBLAS + gather forward runs one image
    per batch slice (columns of at most 1 KB), so every case takes several slices, each GEMM and
    gather at its images' offsets (the strict split weight made once for all of them): the NCHW
    gather cases, the channels_last GEMM cases and the strict split cases against float64."""
    skip_under_knobs("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_GEMM_3XTF32", "CONVT_GEMM_SLICE_KB")
    run_pytest([
        this_file("test_forward_nchw_gather_values"),
        this_file("test_forward_channels_last_gemm"),
        this_file("test_forward_gemm_strict_3xtf32"),
    ], dict(CONVT_GEMM_SLICE_KB="1"), len(DTYPE_CONFIGS) * (1 + len(CL_GEMM_CASES)) + 2)


@SM90_ONLY
def test_forward_channels_last_gemm_with_kstride_off():
    """CONVT_FWD_KSTRIDE=0 (a fresh pytest process): the channels_last GEMM cases and the
    dispatch test run on the cuBLAS path again (per-row GEMMs for kernel == stride), and match
    float64."""
    if any(os.environ.get(k) for k in ("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_FWD_KSTRIDE")):
        pytest.skip("a test knob sends the forward elsewhere")
    run_pytest([
        this_file("test_forward_channels_last_gemm"),
        this_file("test_forward_channels_last_kernel_equals_stride_dispatch"),
    ], dict(CONVT_FWD_KSTRIDE="0"), len(CL_GEMM_CASES) * len(DTYPE_CONFIGS) + 1)


# kernel == stride, channels_last (forward_kernel_stride.cu on sm_90a: flat runs of 128 input
# pixels kept in shared memory, one item per (tap, 64 output channels)). Edges: one partial
# run; two runs over image boundaries with a partial second channel tile (Cout 72); input
# channels that end inside a K chunk (40 in 16-bit: the box reads zeros past them) and a 3 x 2
# kernel; a 1 x 1 stride-1 kernel with one column tile (consumers idle in alternate runs) over
# 300 runs (every block reuses both input buffers); a 2 x 2 kernel with a partial channel tile
# over 300 runs; a 2 x 3 kernel, one image; 1024 input channels (too wide to keep: the cuBLAS
# path). Other GPUs take the other kernels; the expectations are the same.
KSTRIDE_CASES = [
    Case(3, 64, 64, 5, 7, (2, 2), (2, 2), layout="channels_last"),
    Case(2, 256, 72, 9, 14, (2, 2), (2, 2), layout="channels_last"),
    Case(2, 40, 128, 6, 33, (3, 2), (3, 2), bias=False, layout="channels_last"),
    Case(2, 16, 8, 320, 60, (1, 1), (1, 1), layout="channels_last"),
    Case(2, 16, 16, 320, 60, (2, 2), (2, 2), layout="channels_last"),
    Case(1, 32, 64, 3, 5, (2, 3), (2, 3), layout="channels_last"),
    Case(1, 1024, 16, 2, 3, (2, 2), (2, 2), layout="channels_last"),
]


@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", KSTRIDE_CASES, ids=[c.id for c in KSTRIDE_CASES])
def test_forward_kernel_equals_stride_channels_last(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=37)
    with conv_tf32(tf32):
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
    assert_close_to(out, reference(x, w, b, case), tol)
    assert out.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_kernel_equals_stride_takes_its_kernel():
    """The kernel == stride cases run forward_kernel_stride.cu's kernel where it applies (not
    the 1024-channel case, not strict fp32) and run to the same bits twice."""
    if any(os.environ.get(k) for k in ("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_FWD_KSTRIDE")):
        pytest.skip("a test knob sends the forward elsewhere")
    for case in KSTRIDE_CASES:
        for dtype, tf32 in ((torch.bfloat16, False), (torch.float32, True), (torch.float32, False)):
            x, w, b = case.make(dtype, DEVICE, seed=41)
            with conv_tf32(tf32):
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    out = op(x, w, b, *op_args(case))
                    torch.cuda.synchronize()
                again = op(x, w, b, *op_args(case))
            took = any("kernel_stride_fwd_kernel" in e.key for e in prof.key_averages())
            assert took == (kstride_takes(case) and case.Cin <= 384 and (dtype != torch.float32 or tf32)), (case.id, dtype, tf32)
            assert torch.equal(out, again), (case.id, dtype)


# The same cases with NCHW tensors: where the kernel is 2 wide, forward.cu's route copies the
# input to channels_last and the kernel == stride kernel writes the NCHW output itself (kNchw:
# both kx taps per item; 16-byte stores of a pixel pair's four outputs where W is even, 8-byte
# stores per pixel where odd: cases 0 and 2). Other widths take the other NCHW paths (16-bit:
# the route with its copy back). Against float64; whether the kernel ran and the output was
# copied back, by the profiler.
@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", KSTRIDE_CASES, ids=[c.id for c in KSTRIDE_CASES])
def test_forward_kernel_equals_stride_nchw(case: Case, config):
    _, dtype, tf32, tol = config
    case = replace(case, layout="contiguous")
    x, w, b = case.make(dtype, DEVICE, seed=38)
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        torch.cuda.synchronize()
    assert_close_to(out, reference(x, w, b, case), tol)
    assert out.is_contiguous()
    if any(os.environ.get(k) for k in ("CONVT_GEMM_LAYOUT", "CONVT_FWD_PATH", "CONVT_FWD_KSTRIDE", "CONVT_FWD_VIA_CL")):
        return  # a knob sends the forward elsewhere: the values above are still checked
    kernels = [e.key for e in prof.key_averages()]
    if kstride_takes(case) and case.Cin <= 384 and case.kernel[1] == 2:
        assert any("kernel_stride_fwd_kernel" in k for k in kernels), kernels
        assert not any("nhwc_to_nchw" in k for k in kernels), kernels


# Batches of small images with more images than a wgmma block's tile holds whole: their
# phase images are stacked into one tall image and tiled by rows that span images (the
# default; CONVT_FWD_TALL=0 turns it off, test_forward_wgmma_block_variants runs both). DCGAN's k4 s2 p1 on 16 x 16 images (one per block
# otherwise), 8 x 8 with bias, 3 x 5 kernels with dilation, channels_last. Checked against
# float64 like every forward case, knob or not.
TALL_CASES = [
    Case(5, 16, 64, 16, 16, (4, 4), (2, 2), (1, 1), bias=False),
    Case(9, 16, 32, 8, 8, (3, 3), (1, 1), (1, 1)),
    Case(4, 24, 40, 12, 10, (3, 5), (2, 1), (1, 2), (1, 0), (2, 1)),
    Case(6, 16, 64, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last"),
]


@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", TALL_CASES, ids=[c.id for c in TALL_CASES])
def test_forward_small_image_batches(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=39)
    with conv_tf32(tf32):
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
    assert_close_to(out, reference(x, w, b, case), tol)


def _wgmma_fwd_names(prof) -> str:
    """The wgmma forward kernels a profiler recorded, spaces removed, "|"-joined."""
    return "|".join(e.key.replace(" ", "") for e in prof.key_averages() if "wgmma_fwd_kernel" in e.key)


def _block_shapes(names: str) -> list[tuple[str, str, str]]:
    """(WG_CO, WG_PX, PX) of each wgmma_fwd_kernel<T, WG_CO, WG_PX, kCL, kElemLoads, kAsync, PX, kTma, kCols>
    in "|"-joined kernel names: the block shape that ran."""
    return re.findall(r"wgmma_fwd_kernel<[^,>]+,(\d+),(\d+),\w+,\w+,\w+,(\d+)(?:,\w+)*>", names)


def _wgmma_flag_kernels(names: str, index: int) -> list[str]:
    """The wgmma forward kernels in "|"-joined kernel names whose template argument `index`
    (0: T) is true."""
    kernels = re.findall(r"wgmma_fwd_kernel<([^>]*)>", names)
    return [k for k in kernels if len(k.split(",")) > index and k.split(",")[index] in ("true", "1")]


def _tma_kernels(names: str) -> list[str]:
    """The wgmma forward kernels that ran tensor-map tiles (template argument kTma)."""
    return _wgmma_flag_kernels(names, 7)


def _cols_kernels(names: str) -> list[str]:
    """The wgmma forward kernels that ran column-phase blocks (template argument kCols)."""
    return _wgmma_flag_kernels(names, 8)


def _check_wgmma_variant(case: Case, config, knob: str, seed: int, kernels_of) -> None:
    """A wgmma forward variant on its default path: against float64 in poisoned output memory,
    bit-identical on a second call, and `kernels_of` (a name filter) finds the variant's kernel
    among those the profiler saw. Skipped where a test knob (or `knob`) changes the choice."""
    _, dtype, tf32, tol = config
    if any(os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_STAGE", "CONVT_FWD_WG", knob)):
        pytest.skip("a test knob changes the forward's choice")
    x, w, b = case.make(dtype, DEVICE, seed=seed)
    with conv_tf32(tf32):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
            torch.cuda.synchronize()
        out2 = op(x, w, b, *op_args(case))
    names = _wgmma_fwd_names(prof)
    # NCHW cases that the channels_last route takes by default (forward.cu
    # via_channels_last_suitable) run the ws or kernel == stride forward instead (after a copy to
    # channels_last, or the ws kernel reading the NCHW input in place): checked here for values only;
    # the variant itself runs for them with the route off in test_forward_column_phase_blocks_without_route.
    routed = any(k in e.key for e in prof.key_averages()
                 for k in ("nchw_to_nhwc_vec_kernel", "wgmma_ws_fwd_kernel", "kernel_stride_fwd_kernel"))
    assert routed or kernels_of(names), (case.id, names)
    assert_close_to(out, reference(x, w, b, case), tol)
    assert torch.equal(out, out2), "not bit-identical run to run"


# The wgmma forward's block shapes and tilings are chosen once per process from knobs read at
# the first call (block_shape, tall_tiles_allowed, tma_tiles_allowed in forward_wgmma.cu): by default 16-bit
# types run blocks of two m64n128 warpgroups (two blocks per multiprocessor) and float32 two
# m64n256 ones, and small images take tall tiles. Each non-default choice runs here in a fresh process, on cases that reach
# the cp.async NCHW (aligned and 4-byte rows), channels_last and tall paths, against float64;
# the profiler checks that the forced block shape ran.
_FWD_VARIANTS_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
cases = [Case(2, 32, 64, 12, 16, (3, 3), (1, 1), (1, 1)),
         Case(2, 24, 40, 7, 22, (3, 5), (1, 1), (1, 2), (0, 0), (1, 1), bias=False),
         Case(2, 32, 64, 10, 12, (4, 4), (2, 2), (1, 1), layout="channels_last"),
         Case(5, 16, 64, 16, 16, (4, 4), (2, 2), (1, 1), bias=False),
         Case(4, 24, 40, 12, 10, (3, 5), (2, 1), (1, 2), (1, 0), (2, 1))]
for case in cases:
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        if case.layout == "channels_last" and dtype == torch.float32:
            continue  # float32 channels_last: tensor-map tiles, test_forward_channels_last_tensor_map_tiles
        err, names, _ = forward_check(case, dtype, 71, "wgmma_fwd_kernel")
        print(case.id, str(dtype), err, names)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("knobs", [{"CONVT_FWD_WG": "2x256"}, {"CONVT_FWD_WG": "4x128"}, {"CONVT_FWD_WG": "2x128"},
                                   {"CONVT_FWD_TALL": "0"}, {"CONVT_FWD_TMA": "0"}, {"CONVT_FWD_COLS": "0"}],
                         ids=["wg2x256", "wg4x128", "wg2x128", "no_tall", "no_tma", "no_cols"])
def test_forward_wgmma_block_variants(knobs):
    if os.environ.get("CONVT_FWD_PATH") or os.environ.get("CONVT_FWD_STAGE"):
        pytest.skip("a test knob sends the forward elsewhere")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    # CONVT_FWD_WS=0: the channels_last 16-bit cases here are the general kernel's to test.
    lines = [line for line in run_python(_FWD_VARIANTS_SCRIPT, tests_dir, env_extra={**knobs, "CONVT_FWD_WS": "0"}).split("\n") if line]
    assert len(lines) == 14, lines
    for line in lines:
        case_id, dtype, err, names = line.split(" ")
        tf32 = "float32" in dtype  # PyTorch's default for convolutions: TF32
        tol = TOLERANCE["tf32"] if tf32 else TOLERANCE[torch.bfloat16 if "bfloat16" in dtype else torch.float16]
        assert float(err) <= tol, f"{knobs} {case_id} {dtype}: {err} > {tol}"
        assert names, f"{knobs} {case_id} {dtype}: the wgmma forward did not run"
        shapes = _block_shapes(names)
        assert shapes, (case_id, dtype, names)
        if "CONVT_FWD_WG" in knobs:
            want = {"4x128": ("1", "4", "128"), "2x128": ("1", "2", "128"), "2x256": ("1", "2", "256")}[knobs["CONVT_FWD_WG"]]
            assert set(shapes) == {want}, (knobs, case_id, dtype, names)
        if "CONVT_FWD_TMA" in knobs:
            assert not _tma_kernels(names), (knobs, case_id, dtype, names)
        if "CONVT_FWD_COLS" in knobs:
            assert not _cols_kernels(names), (knobs, case_id, dtype, names)



# NCHW outputs of three or more column phases on column-phase blocks (kCols in
# forward_wgmma.cu): one warpgroup per column phase with taps (two or three) on the same tile,
# the block storing whole output rows with the phases interleaved. Stride 5 with dilation 2
# (three column phases with taps of five; two of five row phases without taps store zeros or
# the bias; a 320-column tile row, whose column map lives in shared memory), strides 4 and 8
# with two and three of their phases carrying taps, strides (2, 3) with groups of 40 output
# channels (part of a 64-channel tile empty), three channel tiles, several tiles along the
# width (W = 160 > a tile's width) with padding beyond the stride (phases whose first column is
# offset), two whole images per tile, and unbatched input. (Batches whose images would take
# tall tiles keep them, without column-phase blocks: make_plan.) Against float64 in poisoned
# output memory, bit-identical on a second call; the profiler checks that a column-phase
# kernel ran.
COLS_FWD_CASES = [
    Case(2, 32, 64, 16, 64, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), bias=False),
    Case(1, 32, 64, 12, 24, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2)),
    Case(1, 32, 80, 6, 16, (3, 5), (2, 3), (1, 2), (0, 1), (2, 1), groups=2),
    Case(1, 16, 130, 5, 8, (3, 3), (3, 3)),
    Case(1, 16, 32, 4, 160, (3, 3), (1, 3), (0, 4), (0, 1)),
    Case(2, 16, 32, 5, 8, (3, 3), (8, 8), (3, 3)),
    Case(2, 16, 32, 6, 8, (2, 2), (4, 4), (1, 1)),
    Case(2, 16, 32, 4, 8, (3, 3), (3, 3)),
    Case(None, 24, 32, 7, 8, (3, 3), (3, 3), (2, 1), (2, 0)),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", COLS_FWD_CASES, ids=[c.id for c in COLS_FWD_CASES])
def test_forward_column_phase_blocks(case: Case, config):
    _check_wgmma_variant(case, config, "CONVT_FWD_COLS", 43, _cols_kernels)


# The same cases with the channels_last route off (CONVT_FWD_VIA_CL=0, fresh process): by default
# the route takes some of them (16-bit at stride 3 with 32 channels; float32 at stride > 1 with a
# small output), so the column-phase blocks run for every one here. float32 in TF32 (a fresh
# process's default for convolutions).
_COLS_UNROUTED_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
for case in eval(sys.argv[2]):  # COLS_FWD_CASES, by repr
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        err, names, same = forward_check(case, dtype, 43, "wgmma_fwd_kernel")
        print(case.id, str(dtype), err, same, names)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_column_phase_blocks_without_route():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_STAGE", "CONVT_FWD_WG", "CONVT_FWD_COLS")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    out = run_python(_COLS_UNROUTED_SCRIPT, tests_dir, repr(COLS_FWD_CASES), env_extra={"CONVT_FWD_VIA_CL": "0"})
    lines = [line for line in out.split("\n") if line]
    assert len(lines) == 3 * len(COLS_FWD_CASES), lines
    for line in lines:
        case_id, dtype, err, same, names = line.split(" ")
        tol = TOLERANCE["tf32" if "float32" in dtype else torch.bfloat16 if "bfloat16" in dtype else torch.float16]
        assert float(err) <= tol, f"{case_id} {dtype}: {err} > {tol}"
        assert same == "1", f"{case_id} {dtype}: not bit-identical run to run"
        assert _cols_kernels(names), (case_id, dtype, names)


# Column-phase blocks at stride 2 along W (CONVT_FWD_COLS=all; by default stride 2 keeps one
# block per phase, which measured faster), in a fresh process: k4 / k3 with output padding,
# three channel tiles, several tiles along the width with padding beyond the stride, several
# whole images per tile. Against float64, bit-identical on a second call, the column-phase
# kernel seen by the profiler.
_COLS_STRIDE2_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
cases = [Case(2, 32, 64, 24, 24, (4, 4), (2, 2), (1, 1), (1, 1)),
         Case(1, 16, 40, 9, 16, (3, 3), (2, 2), (1, 1), (1, 1)),
         Case(1, 16, 130, 5, 8, (2, 2), (2, 2)),
         Case(1, 16, 32, 4, 160, (3, 3), (1, 2), (0, 4), (0, 1)),
         Case(6, 16, 32, 4, 8, (2, 2), (2, 2))]
for case in cases:
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        err, names, same = forward_check(case, dtype, 73, "wgmma_fwd_kernel")
        print(case.id, str(dtype), err, same, names)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_column_phase_blocks_stride2():
    if any(os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_STAGE", "CONVT_FWD_WG")):
        pytest.skip("a test knob changes the forward's choice")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    # CONVT_FWD_VIA_CL=0: the 16-bit cases would take the channels_last route by default.
    out = run_python(_COLS_STRIDE2_SCRIPT, tests_dir, env_extra={"CONVT_FWD_COLS": "all", "CONVT_FWD_VIA_CL": "0"})
    lines = [line for line in out.split("\n") if line]
    assert len(lines) == 15, lines
    for line in lines:
        case_id, dtype, err, same, names = line.split(" ")
        tol = TOLERANCE["tf32"] if "float32" in dtype else TOLERANCE[torch.bfloat16 if "bfloat16" in dtype else torch.float16]
        assert float(err) <= tol, f"{case_id} {dtype}: {err} > {tol}"
        assert same == "1", f"{case_id} {dtype}: not bit-identical run to run"
        assert _cols_kernels(names), (case_id, dtype, names)



# The mma.sync implicit GEMM's staged epilogue (staged_epilogue in forward_igemm.cu): the
# block's results go through shared memory, and warps store runs of a phase row's columns
# (NCHW) or of a pixel's channels (channels_last). One case per block configuration of
# run_typed: 16-channel tiles (half empty with 8 channels per group; stride 3 with dilation,
# kb1_75's pattern), 32-channel tiles (24 used), 64-channel tiles of 4 warps (40 used) and of 8
# warps (a 130 x 130 phase image, 9 taps), several whole images per tile, channels_last
# outputs (16-byte channel runs, and scalar stores where 18 channels per group break the
# runs' alignment), tapless phases (stride 2 with dilation 2 along H), unbatched input. Strict float32
# always runs this kernel; the tensor-core configurations run it below 32 channels per group
# (forward.cu). Against float64 in poisoned output memory, bit-identical on a second call, the
# profiler checks that the kernel ran; CONVT_IGEMM_EPILOGUE=direct runs the same cases on the
# fragment stores.
IGEMM_EPILOGUE_CASES = [
    Case(2, 8, 16, 9, 20, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2, bias=False),
    Case(2, 16, 24, 7, 12, (3, 3), (3, 3), (1, 1), (1, 2)),
    Case(1, 8, 40, 10, 37, (3, 3), (2, 2), (1, 1), (1, 0)),
    Case(1, 8, 40, 128, 128, (3, 3)),
    Case(5, 8, 16, 4, 4, (4, 4), (2, 2), (1, 1)),
    Case(2, 8, 16, 9, 20, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2, layout="channels_last"),
    Case(2, 16, 40, 6, 11, (3, 3), (3, 2), (1, 1), (2, 1), layout="channels_last"),
    Case(2, 12, 18, 5, 7, (3, 3), (2, 3), (1, 0), layout="channels_last"),
    Case(None, 12, 20, 7, 9, (3, 3), (2, 4), (2, 1), (1, 3)),
]
IGEMM_CONFIGS = [c for c in DTYPE_CONFIGS if c[0] in ("fp32", "fp32_tf32", "bf16", "fp16")]


def _runs_igemm(case: Case, dtype, tf32: bool) -> bool:
    """Whether the dispatcher (forward.cu) sends `case` to the mma.sync implicit GEMM."""
    return (dtype == torch.float32 and not tf32) or case.Cout // case.groups < 32


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", IGEMM_CONFIGS, ids=[c[0] for c in IGEMM_CONFIGS])
@pytest.mark.parametrize("case", IGEMM_EPILOGUE_CASES, ids=[c.id for c in IGEMM_EPILOGUE_CASES])
def test_forward_igemm_staged_epilogue(case: Case, config):
    _, dtype, tf32, tol = config
    if not _runs_igemm(case, dtype, tf32):
        pytest.skip("the wgmma kernel takes this case")
    if os.environ.get("CONVT_FWD_PATH"):
        pytest.skip("a test knob sends the forward elsewhere")
    x, w, b = case.make(dtype, DEVICE, seed=47)
    with conv_tf32(tf32):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
            torch.cuda.synchronize()
        out2 = op(x, w, b, *op_args(case))
    assert any("igemm_kernel" in e.key for e in prof.key_averages()), case.id
    assert_close_to(out, reference(x, w, b, case), tol)
    assert torch.equal(out, out2), "not bit-identical run to run"
    if case.layout == "channels_last":
        assert out.is_contiguous(memory_format=torch.channels_last)


_IGEMM_DIRECT_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from fresh_process import forward_check
from test_cuda import IGEMM_EPILOGUE_CASES
torch.backends.cudnn.allow_tf32 = False
for case in IGEMM_EPILOGUE_CASES:
    for dtype in (torch.float32, torch.bfloat16):
        err, names, _ = forward_check(case, dtype, 75, "igemm_kernel")
        print(case.id, str(dtype), err, int(bool(names)), case.Cout // case.groups)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_forward_igemm_direct_epilogue():
    if os.environ.get("CONVT_FWD_PATH"):
        pytest.skip("a test knob sends the forward elsewhere")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    out = run_python(_IGEMM_DIRECT_SCRIPT, tests_dir, env_extra={"CONVT_IGEMM_EPILOGUE": "direct"})
    lines = [line for line in out.split("\n") if line]
    assert len(lines) == 2 * len(IGEMM_EPILOGUE_CASES), lines
    for line in lines:
        case_id, dtype, err, ran, cout_g = line.split(" ")
        tol = TOLERANCE[torch.float32 if "float32" in dtype else torch.bfloat16]
        assert float(err) <= tol, f"{case_id} {dtype}: {err} > {tol}"
        if "float32" in dtype or int(cout_g) < 32:
            assert ran == "1", f"{case_id} {dtype}: the implicit GEMM did not run"

# The store-bound forward (forward_store_bound.cu): CUDA-core fp32 accumulation, lanes on consecutive
# output columns, for few multiply-adds per output element. STORE_BOUND_CASES run under whatever knobs
# the process has; test_forward_store_bound_forced runs them with CONVT_FWD_PATH=store_bound in a
# fresh process, where the kernel must have run (its channels per thread, 16 or 8, the template's
# second argument) and float32 must be fp32-accurate whatever the TF32 flag says. Cases: kb1_81's
# geometry (stride 5, dilation 2) and kb1_75's (groups, stride 2 x 3, dilation 2 along H) in small;
# 24 channels (a partial 16-channel block); 10 a group (8-channel blocks) with padding past the
# kernel's reach; 9 channels (a one-channel second block); taps whose first input rows lie before
# the input (row 0 of an item invalid, row 1 valid); unbatched; channels_last and non-contiguous
# input (strides); stride 40 (past tap_walk.cuh's table); stride 1 with several blocks a plane
# group; 65600 plane groups (past the grid's 65535 in y: the kernel's loop).
STORE_BOUND_CASES = [
    Case(2, 4, 16, 5, 7, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), bias=False),
    Case(2, 16, 32, 4, 6, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2),
    Case(2, 4, 24, 3, 4, (3, 3), (3, 2), (2, 0), (2, 1), (1, 2)),
    Case(1, 6, 20, 4, 3, (2, 4), (4, 3), (3, 1), (1, 2), (3, 1), groups=2),
    Case(1, 2, 9, 3, 3, (4, 1), (3, 1)),
    Case(1, 3, 16, 3, 5, (5, 3), (2, 2), (3, 1), (1, 1), (1, 3), bias=False),
    Case(None, 4, 16, 3, 4, (2, 2), (2, 2)),
    Case(2, 8, 16, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 8, 16, 5, 6, (3, 3), (3, 3), (1, 1), layout="noncontiguous"),
    Case(1, 4, 8, 3, 2, (2, 2), (40, 3), (0, 1)),
    Case(2, 2, 16, 70, 9, (3, 3), (1, 1), (1, 1)),
    Case(65600, 2, 16, 1, 1, (2, 2), (2, 2), bias=False),
]
STORE_BOUND_CONFIGS = [c for c in DTYPE_CONFIGS if c[0] != "fp64"]
_STORE_BOUND_TYPE = {torch.float32: "float", torch.bfloat16: "c10::BFloat16", torch.float16: "c10::Half"}


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", STORE_BOUND_CONFIGS, ids=[c[0] for c in STORE_BOUND_CONFIGS])
def test_forward_store_bound_values(config):
    _, dtype, tf32, tol = config
    forced = os.environ.get("CONVT_FWD_PATH") == "store_bound"
    if forced and dtype == torch.float32:
        tol = TOLERANCE[torch.float32]  # fp32 accumulation on CUDA cores, TF32 or not
    for case in STORE_BOUND_CASES:
        x, w, b = case.make(dtype, DEVICE, seed=53)
        with conv_tf32(tf32):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
                torch.cuda.synchronize()
            out2 = op(x, w, b, *op_args(case))
        assert_close_to(out, reference(x, w, b, case), tol, case.id)
        assert torch.equal(out, out2), f"{case.id}: not bit-identical run to run"
        assert_memory_format_by_rule(out, case)
        if forced:
            cpt = 16 if case.Cout // case.groups >= 16 else 8
            want = f"store_bound_kernel<{_STORE_BOUND_TYPE[dtype]},{cpt}>"
            names = [e.key.replace(" ", "") for e in prof.key_averages()]
            assert any(want in n for n in names), (case.id, want, names)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_forward_store_bound_forced():
    skip_under_knobs("CONVT_FWD_PATH")
    run_pytest([this_file("test_forward_store_bound_values")], {"CONVT_FWD_PATH": "store_bound"},
               len(STORE_BOUND_CONFIGS))


# The dispatcher's rule (forward.cu, store_bound_suitable): kb1_81 and kb1_75 with one image
# (13 and 12.6 M output elements, 11.3 and 19.8 multiply-adds per output element, NCHW) take the
# store-bound kernel in every dtype; kb1_81 with channels_last input (a channels_last output) does
# not. Against float64 on the GPU (PyTorch's), the output poisoned. Under CONVT_FWD_STORE_BOUND=0
# (test_forward_store_bound_rule_knob, a fresh process) none of them takes it.
STORE_BOUND_RULE_CASES = [
    ("kb1_81", Case(1, 32, 64, 64, 128, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), bias=False), True),
    ("kb1_75", Case(1, 32, 64, 128, 256, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=4, bias=False), True),
    ("kb1_81_cl", Case(1, 32, 64, 64, 128, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), bias=False, layout="channels_last"),
     False),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", STORE_BOUND_CONFIGS, ids=[c[0] for c in STORE_BOUND_CONFIGS])
@pytest.mark.parametrize("name,case,takes", STORE_BOUND_RULE_CASES, ids=[c[0] for c in STORE_BOUND_RULE_CASES])
def test_forward_store_bound_default_rule(name, case: Case, takes, config):
    skip_under_knobs("CONVT_FWD_PATH")
    _, dtype, tf32, tol = config
    takes = takes and os.environ.get("CONVT_FWD_STORE_BOUND") != "0"
    x, w, b = case.make(dtype, DEVICE, seed=54)
    ref = F.conv_transpose2d(x.double(), w.double(), None, **case.kwargs())
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        torch.cuda.synchronize()
    assert_close_to(out, ref, TOLERANCE[torch.float32] if takes and dtype == torch.float32 else tol, name)
    ran = any("store_bound_kernel" in e.key for e in prof.key_averages())
    assert ran == takes, (name, dtype, [e.key for e in prof.key_averages()])


def test_forward_store_bound_rule_knob():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_STORE_BOUND")
    run_pytest([this_file("test_forward_store_bound_default_rule")], {"CONVT_FWD_STORE_BOUND": "0"},
               len(STORE_BOUND_RULE_CASES) * len(STORE_BOUND_CONFIGS))


# channels_last input through tensor-map tiles (kTma in forward_wgmma.cu; float32 unrounded,
# within the TF32 tolerance; 16-bit stride-1 cases with Cout a multiple of 8 would take the
# warp-specialized kernel instead, test_forward_channels_last_warp_specialized): halos past
# the image's edges (padding, dilation), several phases, a channel count that leaves the last
# chunk's second quantum past the tensor's channels (zeros from the map), groups of 16
# channels, several small images per tile and odd widths; against float64, bit-identical on a
# second call, and the profiler checks that the tensor-map kernel ran.
TMA_CASES = [
    Case(2, 32, 68, 20, 24, (3, 3), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 24, 44, 12, 16, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
    Case(1, 32, 64, 9, 7, (3, 3), (1, 1), (0, 0), groups=2, layout="channels_last"),
    Case(2, 16, 36, 6, 5, (3, 5), (1, 1), (1, 2), (0, 0), (2, 1), layout="channels_last"),
    Case(2, 8, 40, 17, 33, (5, 3), (3, 2), (2, 1), (1, 0), (1, 2), bias=False, layout="channels_last"),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", TMA_CASES, ids=[c.id for c in TMA_CASES])
def test_forward_channels_last_tensor_map_tiles(case: Case, config):
    _check_wgmma_variant(case, config, "CONVT_FWD_TMA", 47, _tma_kernels)


# The warp-specialized forward (forward_wgmma_ws.cu): 16-bit channels_last, one group, Cin a
# multiple of 16 and Cout of 8; stride 1 with any dilation, or stride by phases. Padding and dilation (halos past the image's
# edges, from the tensor map's zero fill), output_padding with dilation, rows wider than a
# tile (several tiles along the width), two and three channel tiles, partial channel tiles
# (Cout 32 and 72, with and without bias), three chunks, 25 taps,
# 21 taps of 64 channels (a two-stage ring), one tap, and more items than an H100 holds blocks (each block alternating its consumers over
# several tiles). Against float64 in poisoned output memory, bit-identical on a second call;
# the profiler checks that the kernel ran.
WS_CASES = [
    Case(2, 64, 64, 20, 37, (3, 3), layout="channels_last"),
    Case(3, 32, 128, 17, 300, (3, 5), (1, 1), (1, 2), bias=False, layout="channels_last"),
    Case(2, 16, 64, 9, 11, (2, 3), (1, 1), (0, 1), (1, 1), (2, 2), layout="channels_last"),
    Case(1, 48, 64, 5, 3, (5, 5), (1, 1), (2, 2), layout="channels_last"),
    Case(2, 64, 64, 40, 50, (3, 7), (1, 1), (1, 3), bias=False, layout="channels_last"),
    Case(4, 64, 192, 33, 65, (1, 1), layout="channels_last"),
    Case(2, 32, 32, 30, 70, (3, 3), layout="channels_last"),
    Case(3, 16, 72, 12, 40, (3, 5), (1, 1), (1, 2), bias=False, layout="channels_last"),
    Case(16, 16, 64, 64, 64, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
    # Stride by phases: k3 s2 with output padding (phases of 4, 2, 2 and 1 taps), k4 s2 (kb2_5's
    # pattern), kernel == stride with a partial second channel tile, strides 2 x 3 with output
    # padding, stride 4 (16 phases) with padding, phase rows wider than a tile with padding 2
    # (phases starting at m = 1).
    Case(2, 64, 64, 20, 24, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 32, 64, 17, 19, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
    Case(3, 64, 72, 14, 14, (2, 2), (2, 2), layout="channels_last"),
    Case(2, 16, 64, 9, 13, (3, 4), (2, 3), (0, 1), (1, 2), layout="channels_last"),
    Case(1, 32, 128, 6, 7, (4, 4), (4, 4), (1, 2), layout="channels_last"),
    Case(2, 16, 32, 5, 300, (3, 3), (2, 2), (2, 2), (1, 0), layout="channels_last"),
]
WS_CONFIGS = TC_CONFIGS  # float32 in TF32 too


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("config", WS_CONFIGS, ids=[c[0] for c in WS_CONFIGS])
@pytest.mark.parametrize("case", WS_CASES, ids=[c.id for c in WS_CASES])
def test_forward_channels_last_warp_specialized(case: Case, config):
    """The warp-specialized kernel, except at kernel == stride, which its own kernel takes
    (unless CONVT_FWD_KSTRIDE=0: test_forward_warp_specialized_kernel_equals_stride runs these
    cases so in a fresh process)."""
    _, dtype, tf32, tol = config
    if any(os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_TF32")):
        pytest.skip("a test knob changes the forward's choice")
    x, w, b = case.make(dtype, DEVICE, seed=53)
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        torch.cuda.synchronize()
    with conv_tf32(tf32):
        out2 = op(x, w, b, *op_args(case))
    want = "kernel_stride_fwd_kernel" if kstride_takes(case) else "wgmma_ws_fwd_kernel"
    assert any(want in e.key for e in prof.key_averages()), (case.id, want)
    assert_close_to(out, reference(x, w, b, case), tol)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(out, out2), "not bit-identical run to run"


@SM90_ONLY
def test_forward_warp_specialized_kernel_equals_stride():
    """CONVT_FWD_KSTRIDE=0 (a fresh pytest process): the warp-specialized kernel's kernel ==
    stride cases run on it again (1 x 1; 2 x 2 with a partial second channel tile)."""
    if any(os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_TF32", "CONVT_FWD_KSTRIDE")):
        pytest.skip("a test knob changes the forward's choice")
    ids = [c.id for c in WS_CASES if kernel_equals_stride(c)]
    assert len(ids) == 2, ids
    run_pytest([this_file("test_forward_channels_last_warp_specialized")],
               dict(CONVT_FWD_KSTRIDE="0"), len(ids) * len(WS_CONFIGS), "-k", " or ".join(ids))


# The warp-specialized forward's knobs, each in a fresh process (read once): weights streamed
# with every stage (CONVT_FWD_WS_WEIGHTS=stream, on cases that keep them resident by default),
# and the kernel off (CONVT_FWD_WS=0: the general wgmma kernel takes the same cases). Against
# float64 in the subprocess; the profiler says which kernel ran.
_WS_KNOB_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
cases = [Case(2, 64, 64, 20, 37, (3, 3), layout="channels_last"),
         Case(3, 32, 128, 17, 300, (3, 5), (1, 1), (1, 2), bias=False, layout="channels_last"),
         Case(2, 32, 32, 30, 70, (3, 3), layout="channels_last")]
for case in cases:
    for dtype in (torch.bfloat16, torch.float16):
        err, names, _ = forward_check(case, dtype, 57, "wgmma_ws_fwd_kernel")
        print(case.id, str(dtype), err, int(bool(names)))
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("knobs", [{"CONVT_FWD_WS_WEIGHTS": "stream"}, {"CONVT_FWD_WS": "0"}], ids=["streamed", "off"])
def test_forward_warp_specialized_knobs(knobs):
    if os.environ.get("CONVT_FWD_PATH"):
        pytest.skip("a test knob sends the forward elsewhere")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    lines = [line for line in run_python(_WS_KNOB_SCRIPT, tests_dir, env_extra=knobs).split("\n") if line]
    assert len(lines) == 6, lines
    for line in lines:
        case_id, dtype, err, ws = line.split(" ")
        tol = TOLERANCE[torch.bfloat16 if "bfloat16" in dtype else torch.float16]
        assert float(err) <= tol, f"{knobs} {case_id} {dtype}: {err} > {tol}"
        assert ws == ("0" if knobs.get("CONVT_FWD_WS") == "0" else "1"), (knobs, case_id, dtype)


# Tile kinds of the warp-specialized forward (forward_wgmma_ws.cu plan_ws): full (every tile's MMAs
# 256 columns), short (default; CONVT_FWD_WS_SHORT=0 turns them off: the last tile row's MMAs only as
# wide as its valid slots, 128 / 64 / 32 columns) and wide (default where they cut the modelled cost
# by 20%; CONVT_FWD_WS_WIDE=0 never: every tile one more m64n32 MMA per tap, 288 columns). DCGAN's
# 16 x 16 phase images at stride 2 and a 16 x 16 output at stride 1 (wide: one tile of 16 rows of
# 17 / 18 slots; without wide tiles short ones, 32- and 64-column last rows), 18 x 18 outputs at
# stride 1 (a 128-column last row), and cases of full tiles (stride 2 phases, dilation, 14 x 14 phase
# images with output_padding), in bf16, fp16 and float32 (TF32; the float epilogue staged, and from
# the registers under CONVT_FWD_WS_F32_STORE=registers); grad_input through the same kernel (the
# backward of the DCGAN case). The kind each case runs is the one a Python copy of the planner
# predicts (EXPECTED_TILE_KINDS). Fresh processes (knobs are read once); against float64,
# bit-identical reruns.
_WS_TILE_KINDS_SCRIPT = r"""
import re, sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import WS_TILE_KIND, forward_check
torch.backends.cudnn.allow_tf32 = True
cases = [Case(2, 32, 64, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last"),
         Case(2, 32, 64, 16, 16, (3, 3), (1, 1), (1, 1), layout="channels_last"),
         Case(2, 32, 64, 18, 18, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
         Case(2, 64, 64, 20, 24, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
         Case(2, 16, 64, 9, 11, (2, 3), (1, 1), (0, 1), (1, 1), (2, 2), layout="channels_last"),
         Case(2, 32, 72, 14, 14, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last")]
for i, case in enumerate(cases):
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        err, names, same = forward_check(case, dtype, 59, "wgmma_ws_fwd_kernel")
        kind = re.findall(WS_TILE_KIND, names)
        print(i, str(dtype), err, int(bool(names)), kind[0] if len(kind) == 1 else "?", same)
case = cases[0]
x, w, b = case.make(torch.bfloat16, "cuda", seed=60)
x.requires_grad_()
y = torch.ops.convt.conv_transpose2d(x, w, b, list(case.stride), list(case.padding), list(case.output_padding), 1, [1, 1])
go = torch.randn(y.shape, generator=torch.Generator().manual_seed(61), dtype=torch.float64)
y.backward(go.to("cuda", torch.bfloat16).contiguous(memory_format=torch.channels_last))
xr = x.detach().cpu().double().requires_grad_()
F.conv_transpose2d(xr, w.cpu().double(), b.cpu().double(), **case.kwargs()).backward(go)
print("grad_input", ((x.grad.cpu().double() - xr.grad).norm() / xr.grad.norm()).item())
"""
# Per knob setting, the tile kind of each case above (0 full, 1 short, 2 wide: the kernel's
# kTiles template argument), as plan_ws chooses it (same for every dtype).
EXPECTED_TILE_KINDS = {
    (): [2, 2, 1, 0, 0, 0],
    (("CONVT_FWD_WS_F32_STORE", "registers"),): [2, 2, 1, 0, 0, 0],
    (("CONVT_FWD_WS_WIDE", "0"),): [1, 1, 1, 0, 0, 0],
    (("CONVT_FWD_WS_WIDE", "0"), ("CONVT_FWD_WS_SHORT", "0")): [0, 0, 0, 0, 0, 0],
}


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_warp_specialized_tile_kinds():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_SHORT", "CONVT_FWD_WS_WIDE", "CONVT_FWD_WS_F32_STORE")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    for knobs, kinds in EXPECTED_TILE_KINDS.items():
        out = run_python(_WS_TILE_KINDS_SCRIPT, tests_dir, env_extra=dict(knobs))
        lines = [line for line in out.split("\n") if line]
        assert len(lines) == 19, (knobs, lines)
        for line in lines[:-1]:
            i, dtype, err, ws, kind, same = line.split(" ")
            tol = TOLERANCE["tf32" if "float32" in dtype else (torch.bfloat16 if "bfloat16" in dtype else torch.float16)]
            assert float(err) <= tol, f"{knobs} case {i} {dtype}: {err} > {tol}"
            assert ws == "1" and kind == str(kinds[int(i)]) and same == "1", (knobs, line)
        name, err = lines[-1].split(" ")
        assert name == "grad_input" and float(err) <= TOLERANCE[torch.bfloat16], (knobs, lines[-1])


# The 16-bit channels_last epilogue staged half a tile at a time (WsParams::half_staged in
# forward_wgmma_ws.cu): by default where the whole staging tiles leave only 2 pipeline stages (the
# 21-tap case here), always under CONVT_FWD_WS_HALF_STAGE=all, never under =0. Full,
# short and wide tiles, stride-2 phases, a partial last channel tile, bias or not, and grad_input
# through the same kernel (stride 2: grad_output's residue planes). Fresh processes (knobs are read
# once); against float64, bit-identical reruns, and the same bits in every mode (the staging moves
# the results, it does not compute them).
_WS_HALF_STAGE_SCRIPT = r"""
import hashlib, sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
import convt_op
cases = [Case(2, 64, 64, 12, 40, (3, 7), layout="channels_last"),
         Case(2, 64, 128, 11, 37, (3, 5), bias=False, layout="channels_last"),
         Case(2, 32, 64, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last"),
         Case(2, 32, 64, 18, 18, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
         Case(2, 32, 72, 14, 14, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last")]
def digest(t):
    return hashlib.sha256(t.detach().cpu().contiguous().view(torch.int16).numpy().tobytes()).hexdigest()[:16]
for i, case in enumerate(cases):
    for dtype in (torch.bfloat16, torch.float16):
        err, names, same = forward_check(case, dtype, 62, "wgmma_ws_fwd_kernel")
        x, w, b = case.make(dtype, "cuda", seed=62)
        y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        print(i, str(dtype), err, int(bool(names)), same, digest(y))
case = cases[2]
x, w, b = case.make(torch.bfloat16, "cuda", seed=63)
x.requires_grad_()
y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
go = torch.randn(y.shape, generator=torch.Generator().manual_seed(64), dtype=torch.float64)
y.backward(go.to("cuda", torch.bfloat16).contiguous(memory_format=torch.channels_last))
xr = x.detach().cpu().double().requires_grad_()
F.conv_transpose2d(xr, w.cpu().double(), b.cpu().double(), **case.kwargs()).backward(go)
print("grad_input", ((x.grad.cpu().double() - xr.grad).norm() / xr.grad.norm()).item(), digest(x.grad))
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_warp_specialized_half_staging():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_HALF_STAGE")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    digests = {}
    for mode in (None, "all", "0"):
        env = {} if mode is None else {"CONVT_FWD_WS_HALF_STAGE": mode}
        lines = [line for line in run_python(_WS_HALF_STAGE_SCRIPT, tests_dir, env_extra=env).split("\n") if line]
        assert len(lines) == 11, (mode, lines)
        for line in lines[:-1]:
            i, dtype, err, ws, same, dig = line.split(" ")
            tol = TOLERANCE[torch.bfloat16 if "bfloat16" in dtype else torch.float16]
            assert float(err) <= tol, f"CONVT_FWD_WS_HALF_STAGE={mode} case {i} {dtype}: {err} > {tol}"
            assert ws == "1" and same == "1", (mode, line)
            assert digests.setdefault((i, dtype), dig) == dig, f"case {i} {dtype}: other bits under {mode}"
        name, err, dig = lines[-1].split(" ")
        assert name == "grad_input" and float(err) <= TOLERANCE[torch.bfloat16], (mode, lines[-1])
        assert digests.setdefault("grad_input", dig) == dig, f"grad_input: other bits under {mode}"


# NCHW input read in place by the warp-specialized forward (forward_wgmma_ws.cu "NCHW input": raw boxes of
# NCHW rows, transposed into the stages by the producer warpgroup) instead of copied to channels_last
# first. Fresh processes: the default, CONVT_FWD_WS_NCHW_IN=0 (the copy) and CONVT_FWD_WS_PAIR=all (paired
# phases read in place too). Each case: the ws kernel ran, no copy kernel ran where the input is readable
# in place (rows of whole 16-byte pieces) and one did where it is not, against float64, and the same bits
# as the copy (the MMAs see the same values in the same order). Cases: stride 1 with 32 / 128 output
# channels (float32's route), weights streamed with every stage (float32, 64 x 15 taps), padding and a
# ragged last chunk row, strides 2 (wide tiles; paired under the knob) and 3, a width whose rows are not
# whole 16-byte pieces (the copy), and a training step through the same forward.
_WS_NCHW_IN_SCRIPT = r"""
import hashlib, sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from cases import Case
import convt_op
torch.backends.cudnn.allow_tf32 = True
F32, B16, F16 = torch.float32, torch.bfloat16, torch.float16
# (Rows of 36 bfloat16 or 20 float16 elements are not whole 16-byte pieces: those take the copy.)
cases = [(Case(2, 32, 32, 20, 36, (3, 3), padding=(1, 1)), (F32, B16)),
         (Case(2, 64, 128, 11, 40, (3, 5), bias=False), (F32, F16)),
         (Case(2, 48, 64, 13, 24, (3, 5), padding=(1, 2)), (B16,)),
         (Case(2, 32, 64, 16, 16, (4, 4), (2, 2), (1, 1)), (F32, B16)),
         (Case(2, 32, 72, 14, 16, (3, 3), (2, 2), (1, 1), (1, 1)), (F32, F16)),
         (Case(1, 32, 64, 10, 24, (5, 5), (3, 3), (1, 2)), (B16,)),
         (Case(2, 32, 64, 12, 20, (3, 3), padding=(1, 1)), (F16,))]
def digest(t):
    return hashlib.sha256(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()[:16]
def kernels(prof):
    return [e.key for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
for i, (case, dtypes) in enumerate(cases):
    for dtype in dtypes:
        x, w, b = case.make(dtype, "cuda", seed=70 + i)
        assert x.is_contiguous()
        in_place = x.size(3) * x.element_size() % 16 == 0
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
            torch.cuda.synchronize()
        names = kernels(prof)
        y2 = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        ref = F.conv_transpose2d(*(t.cpu().double() if t is not None else None for t in (x, w, b)), **case.kwargs())
        err = ((y.cpu().double() - ref).norm() / ref.norm()).item()
        ws = any("wgmma_ws_fwd_kernel" in n for n in names)
        copied = any("nchw_to_nhwc" in n for n in names)
        print(i, str(dtype), int(in_place), err, int(ws), int(copied), int(torch.equal(y, y2)), digest(y))
case = cases[0][0]
x, w, b = case.make(F32, "cuda", seed=79)
x.requires_grad_()
y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
go = torch.randn(y.shape, generator=torch.Generator().manual_seed(80), dtype=torch.float64)
y.backward(go.to("cuda", F32))
xr = x.detach().cpu().double().requires_grad_()
yr = F.conv_transpose2d(xr, w.cpu().double(), b.cpu().double(), **case.kwargs())
yr.backward(go)
print("training", ((y.detach().cpu().double() - yr).norm() / yr.norm()).item(),
      ((x.grad.cpu().double() - xr.grad).norm() / xr.grad.norm()).item(), digest(y))
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_warp_specialized_reads_nchw_input_in_place():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_NCHW_IN", "CONVT_FWD_WS_PAIR", "CONVT_FWD_VIA_CL",
                     "CONVT_FWD_WS_TF32")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    digests: dict = {}
    for env in ({}, {"CONVT_FWD_WS_NCHW_IN": "0"}, {"CONVT_FWD_WS_PAIR": "all"}):
        lines = [line for line in run_python(_WS_NCHW_IN_SCRIPT, tests_dir, env_extra=env).split("\n") if line]
        print(env, *lines, sep="\n")
        assert len(lines) == 12, (env, lines)
        copy_knob = env.get("CONVT_FWD_WS_NCHW_IN") == "0"
        for line in lines[:-1]:
            i, dtype, in_place, err, ws, copied, same, dig = line.split(" ")
            tol = TOLERANCE["tf32"] if "float32" in dtype else TOLERANCE[torch.bfloat16 if "bfloat16" in dtype else torch.float16]
            assert float(err) <= tol, f"{env} case {i} {dtype}: {err} > {tol}"
            assert ws == "1" and same == "1", (env, line)
            expect_copy = copy_knob or in_place == "0"
            assert copied == ("1" if expect_copy else "0"), f"{env} case {i} {dtype}: copy kernel ran: {copied}"
            # The same bits read in place or copied, per phase layout (paired phases are another plan).
            key = (i, dtype, env.get("CONVT_FWD_WS_PAIR"))
            assert digests.setdefault(key, dig) == dig, f"case {i} {dtype}: other bits under {env}"
        name, err_y, err_gx, dig = lines[-1].split(" ")
        assert name == "training" and float(err_y) <= TOLERANCE["tf32"] and float(err_gx) <= TOLERANCE["tf32"], (env, lines[-1])
        assert digests.setdefault(("training", env.get("CONVT_FWD_WS_PAIR")), dig) == dig, f"training: other bits under {env}"


# float32 whose channel tile's weights never fit in shared memory (64 input channels x 15 taps: 240 KB)
# streams them with every stage; there plan_ws takes wide tiles where its model puts them within 0.92 of
# the best other plan (kWideGainStreamed: 0.86 here), while bf16 on the same shape (120 KB) keeps full
# tiles (wide only within 0.8). Against float64, bit-identical on a second call.
@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_warp_specialized_wide_tiles_for_streamed_float32_weights():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_WIDE", "CONVT_FWD_WS_SHORT", "CONVT_FWD_WS_TF32",
                     "CONVT_FWD_WS_TX")
    case = Case(2, 64, 64, 18, 48, (3, 5), layout="channels_last")
    for dtype, kind, tol in ((torch.float32, "2", TOLERANCE["tf32"]), (torch.bfloat16, "0", TOLERANCE[torch.bfloat16])):
        with conv_tf32(True):
            err, names, same = forward_check(case, dtype, 65, "wgmma_ws_fwd_kernel")
        kinds = re.findall(WS_TILE_KIND, names)
        assert kinds == [kind], f"{dtype}: {names}"
        assert err <= tol and same == 1, (dtype, err, same)


# The measurement knob CONVT_FWD_WS_TX=<n> (forward_wgmma_ws.cu plan_ws): tiles n phase outputs wide
# where that gives a plan (7 here: ragged last tile columns), else the usual plan (256: wider than
# any tile with a halo); a malformed value is an error, not a silent default. Fresh processes (read
# once); against float64, bit-identical reruns, the ws kernel ran.
_WS_TX_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
torch.backends.cudnn.allow_tf32 = True
cases = [Case(2, 32, 64, 20, 23, (3, 3), (1, 1), (1, 1), layout="channels_last"),
         Case(2, 32, 72, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last")]
for i, case in enumerate(cases):
    for dtype in (torch.bfloat16, torch.float32):
        try:
            err, names, same = forward_check(case, dtype, 63, "wgmma_ws_fwd_kernel")
        except RuntimeError as e:
            print(i, str(dtype), "error", int("CONVT_FWD_WS_TX" in str(e)))
            continue
        print(i, str(dtype), err, int(bool(names)), same)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_warp_specialized_forced_tile_width():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_TX", "CONVT_FWD_WS_TF32")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    for value in ("7", "256", "abc"):
        lines = [line for line in run_python(_WS_TX_SCRIPT, tests_dir, env_extra={"CONVT_FWD_WS_TX": value}).split("\n")
                 if line]
        assert len(lines) == 4, (value, lines)
        for line in lines:
            fields = line.split(" ")
            if value == "abc":
                assert fields[2:] == ["error", "1"], (value, line)
                continue
            i, dtype, err, ws, same = fields
            tol = TOLERANCE["tf32" if "float32" in dtype else torch.bfloat16]
            assert float(err) <= tol, f"CONVT_FWD_WS_TX={value} case {i} {dtype}: {err} > {tol}"
            assert ws == "1" and same == "1", (value, line)


# NCHW through the channels_last kernels (forward.cu launch_via_channels_last): the input
# transposed to channels_last by layout.cu's nchw_to_nhwc_vec_kernel (16-bit pairs where H*W is
# even, single elements where odd; float), then the warp-specialized forward writing the NCHW
# output itself (its kNchwOut epilogue: at stride 1, with paired column phases at SW == 2, or up
# to 40 MB of output), or the kernel ==
# stride or warp-specialized forward into a channels_last temporary transposed into the NCHW
# output. Knob CONVT_FWD_VIA_CL: all (wherever a channels_last kernel plans), unset (the rule:
# 16-bit wherever a kernel plans; float32 at stride > 1 with the NCHW epilogue, or at stride 1
# with >= 128 or <= 32 output channels (case 7; case 10: 32 channels, 21 taps) or an input the ws
# kernel reads in place (case 3: 40 channels, rows of 48 bytes; not case 1's 44); never where
# the cuBLAS family takes the shape), 0 (never). Cases: the DCGAN
# layer (wide tiles), odd H*W at stride 1, a partial channel tile at stride 2 with output
# padding, 5 x 5 taps, a Mask R-CNN-like 2 x 2 layer (kernel == stride); two the route declines
# (grouped: no plan; a channels_last input, which the ws kernel takes directly); 128 channels at
# stride 1; a small image the cuBLAS family takes; a 40 x 70 image in several tile rows (a short
# last row); 32 channels at stride 1 (half a channel tile); a stride-2 layer with 50 MB of bf16
# output (paired phases; the two-copy form under CONVT_FWD_WS_PAIR=0); kernel == stride 3 x 2
# over odd rows (W = 7) with 36 output channels (not whole 16-byte pieces: the kNchw epilogue
# stores per pixel); kernel == stride 2 x 2 over two runs with a partial channel tile (72);
# paired phases at stride (1, 2), at k3 s2 with an odd output width and a partial channel tile,
# and at k5 s2 padding 2 (both phases' first columns at the same staged column). Fresh processes
# (the knobs are read once); against float64, bit-identical reruns; which kernels ran, by the
# profiler.
_VIA_CL_SCRIPT = r"""
import re, sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import convt_op
from cases import Case
torch.backends.cudnn.allow_tf32 = True
cases = [Case(2, 32, 64, 16, 16, (4, 4), (2, 2), (1, 1)),
         Case(2, 32, 64, 9, 11, (3, 3), (1, 1), (1, 1), bias=False),
         Case(3, 48, 72, 7, 10, (3, 3), (2, 2), (1, 1), (1, 1)),
         Case(2, 16, 40, 12, 12, (5, 5), (1, 1), (2, 2)),
         Case(3, 64, 64, 14, 14, (2, 2), (2, 2)),
         Case(2, 32, 64, 8, 8, (3, 3), (1, 1), (1, 1), groups=2),
         Case(2, 32, 64, 8, 8, (3, 3), (1, 1), (1, 1), layout="channels_last"),
         Case(2, 32, 128, 9, 11, (3, 3), (1, 1), (1, 1)),
         Case(2, 128, 64, 4, 4, (4, 4), (2, 2), (1, 1), bias=False),
         Case(2, 32, 64, 40, 70, (3, 3), (1, 1), (1, 1)),
         Case(2, 32, 32, 20, 30, (3, 7), (1, 1), (1, 3)),
         Case(6, 32, 64, 128, 128, (4, 4), (2, 2), (1, 1)),
         Case(2, 40, 36, 5, 7, (3, 2), (3, 2)),
         Case(2, 256, 72, 9, 14, (2, 2), (2, 2), bias=False),
         Case(2, 32, 64, 40, 70, (3, 4), (1, 2), (1, 1)),
         Case(2, 32, 48, 9, 13, (3, 3), (2, 2), (1, 1)),
         Case(2, 32, 64, 11, 15, (5, 5), (2, 2), (2, 2), (1, 1))]
for i, case in enumerate(cases):
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        x, w, b = case.make(dtype, "cuda", seed=62)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
            torch.cuda.synchronize()
        y2 = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        keys = [e.key for e in prof.key_averages()]
        ran = lambda part: int(any(part in k for k in keys))
        ref = F.conv_transpose2d(*(t.cpu().double() if t is not None else None for t in (x, w, b)), **case.kwargs())
        err = ((y.cpu().double() - ref).norm() / ref.norm()).item()
        layout_ok = int(y.is_contiguous(memory_format=torch.channels_last) if case.layout == "channels_last" else y.is_contiguous())
        cl_kernel = ran("wgmma_ws_fwd_kernel") + 2 * ran("kernel_stride_fwd_kernel")
        paired = int(any(re.search(r"wgmma_ws_fwd_kernel<[^<>]+, 3, true, (?:true|false)>", k) for k in keys))  # kTilesPaired
        # NCHW rows of whole 16-byte pieces: the ws kernel reads such an input in place (no copy in).
        readable = int(case.layout == "contiguous" and x.size(-1) * x.element_size() % 16 == 0)
        print(i, str(dtype), err, cl_kernel, ran("nchw_to_nhwc_vec_kernel"), ran("nhwc_to_nchw_vec_kernel"),
              layout_ok, int(torch.equal(y, y2)), paired, readable)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_nchw_via_channels_last():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_VIA_CL", "CONVT_FWD_WS_TF32", "CONVT_FWD_WS_PAIR",
                     "CONVT_FWD_WS_TX", "CONVT_FWD_WS_NCHW_IN")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    # The channels_last kernel each case runs where routed (1 warp-specialized, 2 kernel == stride).
    routed = {0: "1", 1: "1", 2: "1", 3: "1", 4: "2", 7: "1", 8: "1", 9: "1", 10: "1", 11: "1", 12: "2", 13: "2",
              14: "1", 15: "1", 16: "1"}
    # With paired column phases (SW == 2; by default above 40 MB of output, at any size under
    # CONVT_FWD_WS_PAIR=all) the ws kernel writes any NCHW output itself; without them
    # (CONVT_FWD_WS_PAIR=0) only up to 40 MB at stride > 1, so case 11 (100 MB of float32) is
    # copied back, and float32 keeps its NCHW kernels there.
    ws_sw2 = {0, 2, 8, 11, 14, 15, 16}  # the ws kernel's cases at stride 2 along W
    for knob in ("all", None, "0", "pair0", "pairall"):
        env = ({"CONVT_FWD_WS_PAIR": "0"} if knob == "pair0" else {"CONVT_FWD_WS_PAIR": "all"} if knob == "pairall"
               else {"CONVT_FWD_VIA_CL": knob} if knob else {})
        paired = knob != "pair0"
        by_rule = {"16-bit": {0, 1, 2, 3, 4, 7, 9, 10, 11, 12, 13, 14, 15, 16},
                   "float32": {0, 2, 3, 4, 7, 10, 11, 12, 13, 14, 15, 16} if paired else {0, 2, 3, 4, 7, 10, 12, 13, 14, 15, 16}}
        copied_back = set() if paired else {11}
        lines = [line for line in run_python(_VIA_CL_SCRIPT, tests_dir, env_extra=env).split("\n") if line]
        assert len(lines) == 51, lines
        for line in lines:
            i, dtype, err, cl_kernel, to_cl, to_nchw, layout_ok, same, ran_paired, readable = line.split(" ")
            tol = TOLERANCE["tf32" if "float32" in dtype else (torch.bfloat16 if "bfloat16" in dtype else torch.float16)]
            assert float(err) <= tol, f"{knob} case {i} {dtype}: {err} > {tol}"
            assert layout_ok == "1" and same == "1", (knob, line)
            if knob == "all":
                via = int(i) in routed
            elif knob in (None, "pair0", "pairall"):
                via = int(i) in by_rule["float32" if "float32" in dtype else "16-bit"]
            else:
                via = False
            # The input copied in; the output copied back after the ws kernel where it cannot
            # write the NCHW output itself. Not routed, float32 (TF32) on the cuBLAS family (cases 8
            # and 13, Cin >= 128 on small images) copies the weight to K-major [rows][Cin] by the
            # same transpose kernel.
            weight_copy = "float32" in dtype and int(i) in (8, 13)
            # Routed to the ws kernel, an input of whole 16-byte rows is read in place: no copy in.
            # (Not where the output is copied back: the ws kernel then writes a channels_last temporary.)
            copy_in = "0" if cl_kernel == "1" and readable == "1" and int(i) not in copied_back else "1"
            expect = (str(int(weight_copy)), "0") if not via else (copy_in, "1") if int(i) in copied_back else (copy_in, "0")
            assert (to_cl, to_nchw) == expect, (knob, line)
            want_paired = via and int(i) in ws_sw2 and (knob == "pairall" or (knob in (None, "all") and int(i) == 11))
            assert ran_paired == str(int(want_paired)), (knob, line)
            if via:
                assert cl_kernel == routed[int(i)], (knob, line)
            elif int(i) == 6:  # channels_last in place
                assert cl_kernel == "1", (knob, line)


# Paired column phases (forward_wgmma_ws.cu kTilesPaired: NCHW output at stride 2 along W, each
# tile holding both column phases, their outputs merged into whole-row stores), at any size under
# CONVT_FWD_WS_PAIR=all (by default above 40 MB of output only), with the planner's tiles and with
# tiles forced 7 phase columns wide (CONVT_FWD_WS_TX=7: several rows per tile). Cases: k3 s2 with
# output padding (the two phases' first columns one staged column apart); k4 s2 without padding;
# a phase row wider than a tile (150 columns: two one-row tiles) with two channel tiles; k5 s2
# padding 2; stride (1, 2) with a partial channel tile (40); stride (3, 2) (three phase rows)
# with 48 input channels; a tall narrow image with output padding along W only; one-row tiles
# 128 wide over a 256-wide output. The planner's tiles store runs of 4 outputs (cases 0, 2, 4;
# 16-bit case 7: 8), 2 (1, 3) or 1 (5, 6); 7-wide tiles runs of 2 or 1. The output memory is
# poisoned (NaN) first; against float64, bit-identical reruns, the paired kernel seen by the
# profiler.
# The NCHW epilogue tests' script (this one and test_forward_nchw_row_runs): per case and dtype, a
# forward into poisoned output memory, whether a kernel matching argv[3] ran, seeds from argv[4].
_POISONED_NCHW_SCRIPT = r"""
import re, sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import poisoned_forward_check
torch.backends.cudnn.allow_tf32 = True
for i, case in enumerate(eval(sys.argv[2])):
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        err, keys, poisoned, same = poisoned_forward_check(case, dtype, int(sys.argv[4]) + i)
        ran = int(any(re.search(sys.argv[3], k) for k in keys))
        print(i, str(dtype), err, ran, poisoned, same)
"""


def check_poisoned_nchw(cases, kernel_pattern: str, seed: int, env: dict) -> None:
    """Runs _POISONED_NCHW_SCRIPT in a fresh process under `env`: every case and dtype within its
    tolerance of float64, the kernel matching `kernel_pattern` run, the output written into the
    poisoned block, and a rerun bit-identical."""
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    lines = [line for line in run_python(_POISONED_NCHW_SCRIPT, tests_dir, repr(cases), kernel_pattern, str(seed),
                                         env_extra=env).split("\n") if line]
    assert len(lines) == 3 * len(cases), lines
    for line in lines:
        i, dtype, err, ran, poisoned, same = line.split(" ")
        tol = TOLERANCE["tf32" if "float32" in dtype else (torch.bfloat16 if "bfloat16" in dtype else torch.float16)]
        assert float(err) <= tol, f"{env} case {i} {dtype}: {err} > {tol}"
        assert ran == "1" and poisoned == "1" and same == "1", (env, line)


PAIRED_CASES = [Case(2, 32, 64, 20, 24, (3, 3), (2, 2), (1, 1), (1, 1)),
                Case(2, 32, 64, 17, 13, (4, 4), (2, 2)),
                Case(1, 64, 128, 9, 150, (3, 3), (2, 2), (1, 1), (1, 1), bias=False),
                Case(1, 32, 64, 11, 15, (5, 5), (2, 2), (2, 2), (1, 1)),
                Case(2, 32, 40, 12, 30, (3, 4), (1, 2), (1, 1)),
                Case(2, 48, 64, 7, 9, (6, 4), (3, 2), (1, 1), (2, 1)),
                Case(3, 32, 64, 40, 9, (4, 4), (2, 2), (1, 1), (0, 1)),
                Case(1, 32, 64, 5, 128, (3, 3), (2, 2), (1, 1), (1, 1))]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_forward_paired_phases():
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_VIA_CL", "CONVT_FWD_WS_TF32", "CONVT_FWD_WS_PAIR",
                     "CONVT_FWD_WS_TX")
    for extra in ({}, {"CONVT_FWD_WS_TX": "7"}):
        # kTilesPaired (3) with kNchwOut
        check_poisoned_nchw(PAIRED_CASES, r"wgmma_ws_fwd_kernel<[^<>]+, 3, true, (?:true|false)>", 90,
                            {"CONVT_FWD_WS_PAIR": "all", **extra})


# Runs of outputs per store in the 16-bit NCHW epilogue at stride 1 along W (forward_wgmma_ws.cu's
# kNchwOut, plan_ws's row_vec_for): where the output width, the tile width and the first tile's
# column are multiples of V, each thread stores V consecutive outputs of a row at once (16 bytes
# where the widths allow), the tile pitch padded up to a multiple of V. Through forward.cu's route
# (CONVT_FWD_VIA_CL=all: the input copied to channels_last, the ws kernel writing the NCHW output),
# with the planner's tiles, tiles 7 wide (odd: one element per store), 12 wide (V = 4 with a padded
# pitch) and with the runs off (CONVT_FWD_WS_NCHW_VEC=0); float32 (element stores) alongside, and
# staged a quarter tile at a time under CONVT_FWD_WS_NCHW_QUARTERS=all (by default only where that
# leaves more pipeline stages: not on these small cases).
# Cases: output width 32 (V = 8); 62 with a partial channel tile (40; V = 2); 19 (odd: V = 1) with a 3 x 5 kernel; 250 wide
# with a 3 x 7 kernel (halo 6, padded pitch); a 16 x 16 image (18 wide: V = 2, wide tiles); stride
# (2, 1) (phase rows, one column phase); dilation (1, 2) (halo 4); a 1 x 3 kernel (no row halo)
# with two channel tiles. Output memory poisoned (NaN) first; against float64, bit-identical
# reruns, the kNchwOut kernel (not the paired one) seen by the profiler (check_poisoned_nchw).
ROW_RUNS_CASES = [Case(2, 32, 64, 20, 30, (3, 3)),
                  Case(2, 32, 40, 17, 62, (3, 3), (1, 1), (1, 1)),
                  Case(1, 64, 32, 9, 19, (3, 5), (1, 1), (0, 2)),
                  Case(2, 32, 64, 12, 250, (3, 7), (1, 1), (1, 3)),
                  Case(2, 32, 64, 16, 16, (3, 3)),
                  Case(2, 48, 64, 10, 40, (3, 3), (2, 1), (1, 1)),
                  Case(1, 32, 64, 11, 64, (3, 3), (1, 1), (0, 0), (0, 0), (1, 2)),
                  Case(2, 32, 128, 9, 120, (1, 3), bias=False)]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("extra", [{}, {"CONVT_FWD_WS_TX": "7"}, {"CONVT_FWD_WS_TX": "12"},
                                   {"CONVT_FWD_WS_NCHW_VEC": "0"}, {"CONVT_FWD_WS_NCHW_QUARTERS": "all"}],
                         ids=["planned", "tx7", "tx12", "vec_off", "f32_quarters"])
def test_forward_nchw_row_runs(extra):
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_VIA_CL", "CONVT_FWD_WS_TF32", "CONVT_FWD_WS_TX",
                     "CONVT_FWD_WS_NCHW_VEC", "CONVT_FWD_WS_NCHW_QUARTERS")
    # kTilesFull / kTilesShort / kTilesWide (0-2) with kNchwOut, not the paired kernel
    check_poisoned_nchw(ROW_RUNS_CASES, r"wgmma_ws_fwd_kernel<[^<>]+, [012], true, (?:true|false)>", 120,
                        {"CONVT_FWD_VIA_CL": "all", **extra})


# grad_input of an NCHW 16-bit layer through the channels_last kernels
# (backward_grad_input_as_forward.cu, whose stride-1 forward has the layer's input channels as
# output channels):
#  - stride 1: forward.cu's route, by default whatever their count (images above 16 x 16:
#    smaller ones with >= 128 input channels take the columns backward);
#  - stride > 1 (nchw_via_channels_last; CONVT_BWD_GI=forward sends these small cases there):
#    grad_output transposed once, its residues read in place by the ws kernel, NCHW grad_input
#    written by its epilogue; not with 36 output channels (72-byte runs); float32 (TF32) where
#    every slot of the flattened kernel is a tap and there are several (k4 s2; not k3 s2, not
#    kernel == stride 2 x 2; 36 channels are 144-byte runs there); knob CONVT_BWD_GI_VIA_CL=0
#    never, =all float32 with padding slots or one tap too. (32 input channels keep the 2 x 2
#    case off the space-to-depth columns.)
# Fresh processes; every gradient against float64, and whether the backward ran the ws kernel
# after the transpose (of grad_output itself, not of copied residue planes).
_VIA_CL_GRAD_INPUT_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import backward_check
torch.backends.cudnn.allow_tf32 = True
for i, case in enumerate(eval(sys.argv[2])):
    for dtype in [getattr(torch, name) for name in sys.argv[3].split(",")]:
        err, keys = backward_check(case, dtype, (66, 67))
        # (Not after copied residue planes: their stride-1 forward may take forward.cu's route too.)
        # (The transpose sums grad_bias on the way where it is asked for: nchw_to_nhwc_sums_kernel.)
        routed = int(any("nchw_to_nhwc_" in k for k in keys) and any("wgmma_ws_fwd_kernel" in k for k in keys)
                     and not any("copy_planes" in k for k in keys))
        print(i, str(dtype), err, routed)
"""
VIA_CL_GRAD_INPUT_STRIDE1 = [Case(2, 32, 32, 20, 30, (3, 7), (1, 1), (1, 3)),
                             Case(2, 128, 64, 18, 20, (3, 3), (1, 1), (1, 1), bias=False),
                             Case(2, 64, 64, 12, 12, (3, 3), (1, 1), (1, 1))]
VIA_CL_GRAD_INPUT_STRIDED = [Case(2, 64, 32, 10, 12, (4, 4), (2, 2), (1, 1)),
                             Case(2, 48, 40, 9, 7, (3, 3), (2, 2), (1, 1), (1, 1), bias=False),
                             Case(2, 64, 36, 8, 8, (4, 4), (2, 2), (1, 1)),
                             Case(2, 32, 48, 10, 12, (2, 2), (2, 2))]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("strided", [False, True], ids=["stride1", "strided"])
def test_grad_input_nchw_via_channels_last(strided):
    skip_under_knobs("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_VIA_CL", "CONVT_BWD_PATH", "CONVT_BWD_GI",
                     "CONVT_BWD_COLS", "CONVT_BWD_GI_VIA_CL", "CONVT_BWD_GI_PLANES")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    cases = VIA_CL_GRAD_INPUT_STRIDED if strided else VIA_CL_GRAD_INPUT_STRIDE1
    knob_name = "CONVT_BWD_GI_VIA_CL" if strided else "CONVT_FWD_VIA_CL"
    runs = [(None, "bfloat16,float16"), ("0", "bfloat16,float16")]
    if strided:
        runs += [(None, "float32"), ("0", "float32"), ("all", "float32")]
    for knob, dtypes in runs:
        env = {"CONVT_BWD_GI": "forward"} if strided else {}
        if knob:
            env[knob_name] = knob
        lines = [line for line in run_python(_VIA_CL_GRAD_INPUT_SCRIPT, tests_dir, repr(cases), dtypes,
                                             env_extra=env).split("\n") if line]
        assert len(lines) == len(cases) * len(dtypes.split(",")), lines
        for line in lines:
            i, dtype, err, routed = line.split(" ")
            tol = TOLERANCE["tf32" if "float32" in dtype else torch.bfloat16 if "bfloat16" in dtype else torch.float16]
            assert float(err) <= tol, f"{knob_name}={knob} case {i} {dtype}: {err} > {tol}"
            if int(i) == 3 and not (knob is None and "float32" in dtype):
                continue  # the 2 x 2 case: only that float32 keeps it off by default is asserted
            # float32: the k4 s2 cases; 16-bit strided: not case 2's 36 channels
            by_rule = (0, 2) if "float32" in dtype else (0, 1) if strided else (0, 1, 2)
            want = knob == "all" or (knob is None and int(i) in by_rule)
            assert routed == ("1" if want else "0"), (knob_name, knob, line)


# grad_weight of an NCHW 16-bit layer through the warp-specialized channels_last
# kernel (backward.cu grad_weight_nchw_via_channels_last): channels_last copies of grad_output
# (shared with grad_input's residues where those take it) and of the input. By default with 2^24+
# grad_output elements, and at stride 1 only with enough MACs per copied element (backward.cu
# stride1_copies_pay); CONVT_BWD_GW_VIA_CL=all at any size and stride, =0 never. Cases: k4 s2 with
# 40 input channels; k3 s2 with output padding (residues of unequal taps); the large k4 s2 case
# (by the rule); stride 1: k3x5, small (all only); 32 x 32 channels k3, 2^24 grad_output elements
# (by the rule: 144 MACs per copied element); 64 x 64 k3 as large (all only: 288, under 480). Each
# with every gradient and with grad_weight alone (its own copy of grad_output). Fresh processes;
# gradients against float64 computed on the GPU; whether grad_weight_ws_kernel ran.
_VIA_CL_GRAD_WEIGHT_SCRIPT = r"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import convt_op
from cases import Case
rel = lambda a, r: ((a.double() - r).norm() / r.norm()).item()
for i, case in enumerate(eval(sys.argv[2])):
    for dtype in (torch.bfloat16, torch.float16):
        for weight_only in (0, 1):
            x, w, b = case.make(dtype, "cuda", seed=80)
            w.requires_grad_()
            if not weight_only:
                x.requires_grad_()
                if b is not None:
                    b.requires_grad_()
            y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
            go = torch.randn(y.shape, generator=torch.Generator().manual_seed(81), dtype=torch.float64).cuda()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                y.backward(go.to(dtype))
                torch.cuda.synchronize()
            ran = int(any("grad_weight_ws_kernel" in e.key for e in prof.key_averages()))
            xr = x.detach().double().requires_grad_(not weight_only)
            wr = w.detach().double().requires_grad_()
            br = b.detach().double() if b is not None else None
            F.conv_transpose2d(xr, wr, br, **case.kwargs()).backward(go)
            err = max([rel(w.grad, wr.grad)] + ([] if weight_only else [rel(x.grad, xr.grad)]))
            print(i, str(dtype), weight_only, err, ran)
"""
VIA_CL_GRAD_WEIGHT_CASES = [Case(2, 40, 48, 10, 12, (4, 4), (2, 2), (1, 1)),
                            Case(2, 48, 40, 9, 7, (3, 3), (2, 2), (1, 1), (1, 1), bias=False),
                            Case(1, 64, 64, 257, 257, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False),
                            Case(2, 32, 40, 11, 13, (3, 5), (1, 1), (1, 2)),
                            Case(1, 32, 32, 724, 724, (3, 3), (1, 1), bias=False),
                            Case(1, 64, 64, 512, 512, (3, 3), (1, 1), bias=False)]
VIA_CL_GRAD_WEIGHT_BY_RULE = (2, 4)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_grad_weight_nchw_via_channels_last():
    skip_under_knobs("CONVT_BWD_PATH", "CONVT_BWD_GW", "CONVT_BWD_GW_WS", "CONVT_BWD_GW_VIA_CL", "CONVT_BWD_COLS",
                     "CONVT_BWD_S2D")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    for knob in ("all", None, "0"):
        env = {"CONVT_BWD_GW_VIA_CL": knob} if knob else {}
        lines = [line for line in run_python(_VIA_CL_GRAD_WEIGHT_SCRIPT, tests_dir, repr(VIA_CL_GRAD_WEIGHT_CASES),
                                             env_extra=env).split("\n") if line]
        assert len(lines) == 4 * len(VIA_CL_GRAD_WEIGHT_CASES), lines
        for line in lines:
            i, dtype, weight_only, err, ran = line.split(" ")
            tol = TOLERANCE[torch.bfloat16 if "bfloat16" in dtype else torch.float16]
            assert float(err) <= tol, f"CONVT_BWD_GW_VIA_CL={knob} case {i} {dtype} weight_only={weight_only}: {err} > {tol}"
            want = knob == "all" or (knob is None and int(i) in VIA_CL_GRAD_WEIGHT_BY_RULE)
            assert ran == ("1" if want else "0"), (knob, line)


# float32 (TF32) through the warp-specialized forward: weights rounded to TF32 when packed, the
# input unrounded (truncated by the MMA), the results through the half-tile staging (default
# where it fits) or from the registers (CONVT_FWD_WS_F32_STORE=registers); stride 1 and stride
# by phases. Fresh process (knobs are read once); against float64 within the TF32 tolerance.
# With CONVT_FWD_WS_TF32=0 the general kernel takes the same cases.
_WS_TF32_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import forward_check
torch.backends.cudnn.allow_tf32 = True
cases = [Case(2, 64, 64, 20, 37, (3, 3), layout="channels_last"),
         Case(3, 32, 128, 17, 300, (3, 5), (1, 1), (1, 2), bias=False, layout="channels_last"),
         Case(2, 16, 64, 9, 11, (2, 3), (1, 1), (0, 1), (1, 1), (2, 2), layout="channels_last"),
         Case(2, 32, 40, 30, 70, (3, 3), layout="channels_last"),
         Case(16, 8, 64, 64, 64, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
         Case(2, 64, 64, 20, 24, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
         Case(3, 32, 72, 14, 14, (2, 2), (2, 2), layout="channels_last")]
for case in cases:
    err, names, same = forward_check(case, torch.float32, 59, "wgmma_ws_fwd_kernel")
    print(case.id, err, int(bool(names)), same)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("knobs", [{}, {"CONVT_FWD_WS_F32_STORE": "registers"}, {"CONVT_FWD_WS_TF32": "0"}],
                         ids=["ws", "ws_register_stores", "ws_tf32_off"])
def test_forward_warp_specialized_tf32(knobs):
    if any(os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_TF32", "CONVT_FWD_WS_F32_STORE")):
        pytest.skip("a test knob sends the forward elsewhere")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    # CONVT_FWD_KSTRIDE=0: the last case (kernel == stride) stays on the warp-specialized kernel.
    env = dict(knobs, CONVT_FWD_KSTRIDE="0")
    lines = [line for line in run_python(_WS_TF32_SCRIPT, tests_dir, env_extra=env).split("\n") if line]
    assert len(lines) == 7, lines
    want_ws = "0" if knobs.get("CONVT_FWD_WS_TF32") == "0" else "1"
    for line in lines:
        case_id, err, ws, same = line.split(" ")
        assert float(err) <= TOLERANCE["tf32"], f"{case_id}: {err}"
        assert ws == want_ws, f"{knobs} {case_id}: the warp-specialized kernel ran: {ws}"
        assert same == "1", f"{case_id}: not bit-identical run to run"


# channels_last on the persistent grid (WgParams::persist in forward_wgmma.cu): more tiles than
# an H100 holds blocks (512 items against 2 x 132 resident two-block slots), so each block takes
# several, with the next tile's first chunks issued during the current one's last; the strided
# case's items cycle through four phases of 4 taps. Against float64, bit-identical on a
# second call.
PERSIST_CASES = [
    Case(8, 16, 36, 128, 128, (3, 3), (1, 1), (1, 1), layout="channels_last"),
    Case(8, 16, 36, 64, 64, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
]


@SM90_ONLY
@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", PERSIST_CASES, ids=[c.id for c in PERSIST_CASES])
def test_forward_channels_last_persistent_grid(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=48)
    with conv_tf32(tf32):
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
        out2 = op(x, w, b, *op_args(case))
    assert_close_to(out, reference(x, w, b, case), tol)
    assert torch.equal(out, out2), "not bit-identical run to run"


# float32's default block shape by rule (two_block_plan_ok in forward_wgmma.cu): 2x128 where the
# phases have two taps or more and the tiles are not tall and at least 32 outputs wide, else
# 2x256 (here: one tap per phase; phase images under 32 columns wide). Strides along W are 1:
# with two or more column phases, column-phase blocks run instead (test_forward_column_phase_blocks).
# The last case has 12 input channels: the channels_last route (float32 at stride > 1 with a small
# output, forward.cu) needs whole 8-channel chunks, so it stays on the NCHW kernel. The first
# case's rows are 62 float32 wide (248 bytes, not whole 16-byte pieces): the route would take
# an input that the warp-specialized kernel reads in place.
FP32_BLOCK_RULE_CASES = [
    (Case(1, 16, 64, 64, 62, (3, 3), (1, 1), (0, 0)), ("1", "2", "128")),
    (Case(2, 16, 64, 16, 16, (2, 1), (2, 1), (0, 0)), ("1", "2", "256")),
    (Case(8, 12, 64, 16, 16, (4, 4), (2, 1), (1, 1), bias=False), ("1", "2", "256")),
]


@SM90_ONLY
@pytest.mark.parametrize("case,want", FP32_BLOCK_RULE_CASES, ids=[c.id for c, _ in FP32_BLOCK_RULE_CASES])
def test_forward_wgmma_float32_block_rule(case: Case, want):
    if any(os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_STAGE", "CONVT_FWD_WG", "CONVT_FWD_TALL")):
        pytest.skip("a test knob changes the forward's choice")
    x, w, b = case.make(torch.float32, DEVICE, seed=43)
    with conv_tf32(True), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        out = op(x, w, b, *op_args(case))
        torch.cuda.synchronize()
    names = _wgmma_fwd_names(prof)
    assert set(_block_shapes(names)) == {want}, (case.id, names)
    with conv_tf32(True):
        assert_close_to(out, reference(x, w, b, case), TOLERANCE["tf32"])


# NCHW rows that are not 16-byte aligned (W not a multiple of 4 fp32 / 8 16-bit elements):
# the wgmma kernel's element-load variant, masked at each row's end (>= 32 output channels
# so that the heuristic picks wgmma on sm_90a; other GPUs run the mma.sync kernel).
UNALIGNED_CASES = [
    Case(2, 16, 64, 9, 13, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1)),
    Case(2, 24, 40, 7, 22, (3, 5), (1, 1), (1, 2), (0, 0), (1, 1), bias=False),
    Case(3, 16, 64, 5, 6, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
    Case(2, 8, 32, 6, 1, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), bias=False),
    Case(2, 16, 64, 9, 13, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), layout="channels_last"),
    Case(2, 32, 48, 5, 6, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False, layout="channels_last"),
]


@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", UNALIGNED_CASES, ids=[c.id for c in UNALIGNED_CASES])
def test_forward_unaligned_rows(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=37)
    with conv_tf32(tf32):
        (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
    assert_close_to(out, reference(x, w, b, case), tol)


# --------------------------------------------------------------------------- grad_input via the forward

# grad_input as a stride-1 transposed convolution run by the forward kernels
# (backward_grad_input_as_forward.cu; backward.cu takes it at stride 1 for tensor-core dtypes
# with Cin_g >= 8 and Cout_g >= 4; CONVT_BWD_GI=forward sends every stride, which is how the
# strided cases here reach it on the GPU runs, docs/gpu-test-results.md). Stride 1 reads
# grad_output in place (with padding above dilation * (kernel - 1), or output_padding, it
# copies); other strides copy it into residue planes, with per-residue offsets (k4 s2 p1),
# padding slots (k3 s2), residues without a tap (s5 d2), a 1x1 flattened kernel that the
# cuBLAS path takes (kernel == stride, 128 channels), groups, channels_last.
AS_FORWARD_CASES = [
    Case(2, 64, 32, 12, 20, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), bias=False),
    Case(2, 48, 40, 9, 14, (3, 7), (1, 1), (1, 3), (0, 0), (1, 1)),
    Case(2, 32, 24, 10, 9, (3, 3), (1, 1), (1, 2), (0, 0), (2, 2)),
    Case(2, 32, 24, 10, 9, (3, 3), (1, 1), (1, 1), (1, 0), (2, 1), bias=False),
    Case(1, 16, 16, 8, 8, (3, 3), (1, 1), (3, 3), (0, 0), (1, 1), bias=False),
    Case(2, 64, 32, 9, 11, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    Case(3, 64, 48, 8, 10, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False),
    Case(2, 32, 64, 6, 7, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), bias=False),
    Case(2, 32, 64, 7, 9, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=4),
    Case(2, 64, 128, 7, 6, (2, 2), (2, 2)),
    Case(2, 64, 40, 9, 8, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), layout="channels_last"),
    Case(2, 40, 24, 11, 9, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), groups=2, layout="channels_last"),
    # channels_last planes (on Hopper, >= 32 grad_input channels per group): 12 channels
    # (16-byte vectors for fp32, elements for 16-bit); 5 per group (fp32: element copies;
    # 16-bit: 20 plane channels per group, not whole quanta, so the NCHW planes)
    Case(2, 48, 12, 7, 9, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 64, 10, 6, 7, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), groups=2, layout="channels_last"),
]
AS_FORWARD_CONFIGS = [c for c in DTYPE_CONFIGS if c[0] != "fp64"]


@pytest.mark.parametrize("config", AS_FORWARD_CONFIGS, ids=[c[0] for c in AS_FORWARD_CONFIGS])
@pytest.mark.parametrize("case", AS_FORWARD_CASES, ids=[c.id for c in AS_FORWARD_CASES])
def test_grad_input_as_forward(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=41)
    out_shape = reference(x, w, b, case).shape
    go = random_like_output(case, out_shape, dtype, seed=42, channels_last=case.output_is_channels_last())
    ref_gi, _, _ = reference_grads(x, w, b, go, case)
    with conv_tf32(tf32):
        (gi, gw, gb), _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [True, False, False]))
    assert_close_to(gi, ref_gi, tol, "grad_input")
    assert gw.shape == (0,) and gb.shape == (0,)
    assert_memory_format_by_rule(gi, case)



# The default dispatch at stride > 1 (no knob): backward.cu sends grad_input through the
# forward for 16-bit dtypes, or for fp32 with narrow channel groups, once grad_output has
# 2^24 elements, and NCHW fp32 (TF32) with one group where every slot of the flattened kernel
# is a tap (k4 s2: any size). These problems are just past that size; the profiler shows that
# the path was taken (the NCHW plane copy for grouped float32; the channels_last residues
# otherwise), and the result is checked against float64 on the GPU (a CPU reference of this
# size would take minutes).
AS_FORWARD_DEFAULT_CASES = [
    ("k4s2_bf16", Case(1, 64, 64, 257, 257, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False), torch.bfloat16, False),
    ("k4s2_fp16", Case(1, 64, 64, 257, 257, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False), torch.float16, False),
    ("grouped_fp32_tf32", Case(2, 32, 64, 128, 256, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=4, bias=False), torch.float32, True),
    ("k4s2_fp32_tf32", Case(1, 64, 64, 257, 257, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False), torch.float32, True),
    # channels_last: the plane copy reads grad_output in place and writes channels_last planes
    ("k4s2_bf16_cl", Case(1, 64, 64, 257, 257, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False, layout="channels_last"), torch.bfloat16, False),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("name,case,dtype,tf32", AS_FORWARD_DEFAULT_CASES, ids=[c[0] for c in AS_FORWARD_DEFAULT_CASES])
def test_grad_input_as_forward_default_dispatch(name, case: Case, dtype, tf32):
    x, w, b = case.make(dtype, DEVICE, seed=43)
    x64 = x.detach().double().requires_grad_()
    out64 = F.conv_transpose2d(x64, w.double(), None, **case.kwargs())
    assert out64.numel() >= 2**24, "the case must be large enough for the default dispatch"
    go = random_like_output(case, out64.shape, dtype, seed=44, channels_last=case.output_is_channels_last())
    (ref_gi,) = torch.autograd.grad(out64, x64, go.double())
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        gi, _, _ = backward_op(go, x, w, *op_args(case), [True, False, False])
        torch.cuda.synchronize()
    # (Unless a test knob overrides the dispatch: CONVT_BWD_GI=native, CONVT_BWD_PATH or
    # CONVT_BWD_COLS=on.)
    if (os.environ.get("CONVT_BWD_GI", "") in ("", "forward") and not os.environ.get("CONVT_BWD_PATH")
            and os.environ.get("CONVT_BWD_COLS", "") != "on"):
        kernels = [e.key for e in prof.key_averages()]
        if case.layout == "channels_last":
            # The residue planes are read in place by the warp-specialized forward (or copied,
            # with CONVT_BWD_GI_PLANES=copy or another forward knob); never an NCHW copy.
            in_place = not any(os.environ.get(k) for k in ("CONVT_BWD_GI_PLANES", "CONVT_FWD_WS", "CONVT_FWD_PATH"))
            if in_place:
                assert any("wgmma_ws_fwd_kernel" in k for k in kernels), kernels
                assert not any("copy_planes" in k for k in kernels), kernels
            else:
                assert any("copy_planes_cl_kernel" in k for k in kernels), kernels
            assert not any("nhwc_to_nchw" in k for k in kernels), kernels
        elif (case.groups == 1 and os.environ.get("CONVT_BWD_GI_VIA_CL") != "0"
              and os.environ.get("CONVT_BWD_GI_PLANES") != "copy"):
            # NCHW, one group: grad_output transposed to channels_last, its residues read in place by
            # the warp-specialized forward (backward_grad_input_as_forward.cu
            # nchw_via_channels_last; channels_last planes copied where a forward knob keeps it
            # off), grad_input written NCHW by its epilogue: no NCHW plane copy.
            assert any("nchw_to_nhwc_" in k for k in kernels), kernels  # _vec_ or (with grad_bias) _sums_
            in_place = not any(os.environ.get(k) for k in ("CONVT_FWD_WS", "CONVT_FWD_PATH"))
            assert any(("wgmma_ws_fwd_kernel" if in_place else "copy_planes_cl_kernel") in k for k in kernels), kernels
            assert not any("copy_planes_kernel" in k for k in kernels), kernels
        else:
            assert any("copy_planes_kernel" in k for k in kernels), kernels
    assert_close_to(gi, ref_gi, TOLERANCE["tf32"] if tf32 else TOLERANCE[dtype], "grad_input")

# channels_last residue planes read in place (backward_grad_input_as_forward.cu
# residues_in_place: one tensor map per residue subgrid of grad_output, the warp-specialized
# forward reading them as its input channels) against the plane copy (CONVT_BWD_GI_PLANES=copy).
# k4 s2 with a partial 40-channel residue; k3 s2 with output padding (padding slots); stride 2
# with dilation 3 (a residue whose first q is 1: its subgrid starts there, so plane pixels
# below 0 read zeros); padding beyond the kernel's reach (negative q); strides 2 x 1; a partial
# grad_input channel tile (72). CONVT_BWD_GI=forward sends them all to this path. Fresh
# process (knobs are read once); against float64; the profiler says which kernels ran.
_GI_RESIDUES_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
import convt_op
torch.backends.cudnn.allow_tf32 = True
cases = [Case(2, 64, 40, 9, 8, (4, 4), (2, 2), (1, 1), layout="channels_last"),
         Case(2, 48, 32, 7, 9, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
         Case(2, 32, 16, 6, 7, (3, 3), (2, 2), (0, 0), (0, 0), (3, 3), layout="channels_last"),
         Case(1, 32, 24, 5, 11, (4, 4), (2, 2), (3, 2), layout="channels_last"),
         Case(2, 32, 32, 6, 20, (3, 3), (2, 1), (1, 1), (1, 0), layout="channels_last"),
         Case(2, 72, 64, 17, 15, (4, 4), (2, 2), (1, 1), layout="channels_last")]
for case in cases:
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        x, w, b = case.make(dtype, "cuda", seed=61)
        out64 = torch.nn.functional.conv_transpose2d(x.cpu().double(), w.cpu().double(), None, **case.kwargs())
        gen = torch.Generator().manual_seed(62)
        go = torch.randn(out64.shape, generator=gen, dtype=torch.float64).to("cuda", dtype).contiguous(memory_format=torch.channels_last)
        x64 = x.cpu().double().requires_grad_()
        ref = torch.autograd.grad(torch.nn.functional.conv_transpose2d(x64, w.cpu().double(), None, **case.kwargs()), x64, go.cpu().double())[0]
        args = (list(case.stride), list(case.padding), list(case.output_padding), case.groups, list(case.dilation))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            gi = torch.ops.convt.conv_transpose2d_backward(go, x, w, *args, [True, False, False])[0]
            torch.cuda.synchronize()
        gi2 = torch.ops.convt.conv_transpose2d_backward(go, x, w, *args, [True, False, False])[0]
        keys = [e.key for e in prof.key_averages()]
        ws = int(any("wgmma_ws_fwd_kernel" in k for k in keys))
        copied = int(any("copy_planes" in k for k in keys))
        err = ((gi.cpu().double() - ref).norm() / ref.norm()).item()
        print(case.id, str(dtype), err, ws, copied, int(torch.equal(gi, gi2)))
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("knobs", [{}, {"CONVT_BWD_GI_PLANES": "copy"}], ids=["in_place", "copy"])
def test_grad_input_residue_planes_in_place(knobs):
    if any(os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_FWD_WS_TF32", "CONVT_BWD_PATH", "CONVT_BWD_GI_PLANES")):
        pytest.skip("a test knob changes the dispatch")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    env = {"CONVT_BWD_GI": "forward", **knobs}
    lines = [line for line in run_python(_GI_RESIDUES_SCRIPT, tests_dir, env_extra=env).split("\n") if line]
    assert len(lines) == 18, lines
    for line in lines:
        case_id, dtype, err, ws, copied, same = line.split(" ")
        tol = TOLERANCE["tf32"] if "float32" in dtype else TOLERANCE[torch.bfloat16 if "bfloat16" in dtype else torch.float16]
        assert float(err) <= tol, f"{knobs} {case_id} {dtype}: {err} > {tol}"
        assert same == "1", f"{case_id} {dtype}: not bit-identical run to run"
        if knobs:
            assert copied == "1", f"{case_id} {dtype}: CONVT_BWD_GI_PLANES=copy, but no plane copy ran"
        else:
            assert (ws, copied) == ("1", "0"), f"{case_id} {dtype}: planes not read in place (ws {ws}, copy {copied})"


def check_grad_weight_alone(case: Case, config, seed: int):
    """grad_weight alone (output_mask [False, True, False]) into a poisoned buffer, against
    float64 PyTorch; the other two results must come back empty."""
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=seed)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=seed + 1,
                            channels_last=case.output_is_channels_last())
    _, ref_gw, _ = reference_grads(x, w, b, go, case)
    with conv_tf32(tf32):
        (gi, gw, gb), _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [False, True, False]))
    assert_close_to(gw, ref_gw, tol, "grad_weight")
    assert gi.shape == (0,) and gb.shape == (0,)


# grad_weight on the rows kernels (backward_grad_weight_rows.cu; backward.cu takes them for
# TF32 / 16-bit MMAs when W >= 24 and both channel groups have >= 16 channels, which every
# case here meets; the cp.async variant where the stride along the width is 1 and x rows
# are 16-byte multiples, the element variant otherwise. CONVT_BWD_GW=rows / rows_element
# send every supported geometry to them on the GPU runs, docs/gpu-test-results.md). Segments of 32 columns with a partial last one, kernel rows
# whose output row is outside grad_output (padding, stride), groups of 1-4 taps per row
# (KW 1, 3, 5 dilated, 7), halos from dilation and padding, two column residue planes
# (stride 2: k2, k3 p1, k4 p1), 32 x 32 and 64 x 64 channel tiles with partial ones and
# several along each side, groups, channels_last.
GW_ROWS_CASES = [
    Case(2, 64, 64, 5, 70, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), bias=False),
    Case(2, 40, 96, 4, 33, (3, 7), (1, 1), (1, 3), (0, 0), (1, 1)),
    Case(1, 130, 20, 3, 40, (2, 5), (1, 1), (0, 2), (0, 0), (2, 2), bias=False),
    Case(2, 32, 32, 6, 48, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    Case(2, 64, 48, 4, 40, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False),
    Case(2, 32, 64, 3, 64, (2, 2), (2, 2)),
    Case(2, 48, 32, 5, 36, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), groups=2),
    Case(2, 32, 32, 5, 40, (3, 1), (3, 1), (2, 0), (0, 0), (1, 1), bias=False),
    Case(2, 64, 32, 4, 40, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), layout="channels_last"),
    # 16-byte x rows at stride 1 (the cp.async kernel): grad_output rows of 8-byte (fp32) /
    # 4-byte (16-bit) units, and a 32 x 32 tile with 16-byte units.
    Case(2, 64, 64, 4, 64, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), bias=False),
    Case(2, 32, 32, 5, 64, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1)),
]


@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", GW_ROWS_CASES, ids=[c.id for c in GW_ROWS_CASES])
def test_grad_weight_rows(case: Case, config):
    check_grad_weight_alone(case, config, seed=45)



# grad_weight for narrow channel groups (backward_grad_weight_narrow.cu; backward.cu takes it
# for TF32 / 16-bit MMAs with at most 16 input and 32 output channels per group, where the
# rows kernels do not run). kb1_75's pattern (strides 2 x 3, dilation 2 along the height: a
# row phase without taps), both channel tiles full (16 x 32, nine taps in three tap groups),
# a partial output-channel tile (24; 16 taps in two groups), a partial input-channel tile
# (12) with output padding, 49 taps in four groups, stride 5 with dilation 2 (tapless phases
# both ways), tiles along the width with a partial last one and several tiles per split,
# unbatched input, padding that crops whole rows, a stride larger than the kernel, rows copied
# in 16-byte pieces (W = 32, Wout = 64; the others copy 8-, 4- or 2-byte pieces, odd 16-bit
# rows element by element), and channels_last operands, read in place (no NCHW copy kernel
# runs): 16-byte channel runs (8 x 16 per group), runs of 10 and 12 channels (2- to 8-byte
# pieces), a partial 24-channel tile, odd widths. Against float64 in a poisoned buffer, bit-identical on a
# second call; the profiler checks that the kernel ran.
GW_NARROW_CASES = [
    Case(2, 16, 32, 9, 20, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2, bias=False),
    Case(2, 16, 32, 7, 12, (3, 3), (1, 1), (1, 1)),
    Case(2, 8, 24, 6, 10, (4, 4), (2, 2), (1, 1), bias=False),
    Case(1, 12, 10, 5, 9, (3, 3), (3, 2), (0, 1), (2, 1), (1, 2)),
    Case(2, 8, 8, 6, 7, (7, 7), (1, 1), (3, 3), bias=False),
    Case(2, 8, 16, 5, 6, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2)),
    Case(4, 8, 16, 40, 150, (3, 3), (2, 2), (1, 1), (1, 1), bias=False),
    Case(2, 16, 32, 9, 20, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2, layout="channels_last"),
    Case(None, 8, 16, 7, 9, (2, 2), (2, 2)),
    Case(2, 8, 8, 6, 8, (3, 3), (1, 1), (2, 2), bias=False),
    Case(2, 8, 8, 4, 5, (2, 2), (3, 3)),
    Case(2, 8, 16, 6, 32, (2, 2), (2, 2), bias=False),
    Case(1, 12, 10, 5, 9, (3, 3), (3, 2), (0, 1), (2, 1), (1, 2), layout="channels_last"),
    Case(2, 8, 24, 6, 10, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
    Case(2, 16, 32, 9, 21, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2, bias=False, layout="channels_last"),
]


def check_grad_weight_profiled(case: Case, config, seed: int) -> list:
    """grad_weight alone into a poisoned buffer against float64, bit-identical on a second
    call, the other results empty; returns the names of the CUDA kernels the first call ran."""
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=seed)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=seed + 1,
                            channels_last=case.output_is_channels_last())
    _, ref_gw, _ = reference_grads(x, w, b, go, case)
    with conv_tf32(tf32):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            (gi, gw, gb), _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [False, True, False]))
            torch.cuda.synchronize()
        gw2 = backward_op(go, x, w, *op_args(case), [False, True, False])[1]
    assert_close_to(gw, ref_gw, tol, "grad_weight")
    assert torch.equal(gw, gw2), "not bit-identical run to run"
    assert gi.shape == (0,) and gb.shape == (0,)
    return [e.key for e in prof.key_averages()]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", TC_CONFIGS, ids=[c[0] for c in TC_CONFIGS])
@pytest.mark.parametrize("case", GW_NARROW_CASES, ids=[c.id for c in GW_NARROW_CASES])
def test_grad_weight_narrow(case: Case, config):
    names = check_grad_weight_profiled(case, config, seed=49)
    if not (os.environ.get("CONVT_BWD_GW") or os.environ.get("CONVT_BWD_PATH")):
        assert any("grad_weight_narrow_kernel" in k for k in names), case.id
        if case.layout == "channels_last":
            assert not any("nhwc_to_nchw" in k for k in names), (case.id, names)

# grad_weight on the wgmma kernel (backward_grad_weight_wgmma.cu; bf16 / fp16 on sm_90a,
# stride 1 or 2 along the width, W a multiple of 8, grad_output rows of whole 4-byte pieces;
# backward.cu takes it where the rows kernels would run). 64-column segments with partial
# last ones, tap groups of 1-4 (KW 1, 3, 5 dilated, 7) with a partial group, padding (a
# negative first column), height stride and dilation, grad_output rows of 4 / 8 / 16-byte
# pieces, 64 x 64 channel tiles with partial ones and several along each side, groups,
# channels_last. The last two rows fall back to the rows kernels (odd grad_output width;
# W not a multiple of 8) and must still be right.
# (test_grad_weight_wgmma_channels_last_in_place checks that the channels_last rows read
# their operands in place: no NCHW copy kernel runs.)
GW_WGMMA_CASES = [
    Case(2, 64, 64, 5, 64, (3, 3), bias=False),
    Case(2, 80, 72, 4, 72, (3, 5), (1, 1), (1, 2), (0, 0), (1, 2)),
    Case(1, 130, 20, 3, 136, (2, 7), (2, 1), (0, 3), (1, 0), (1, 1), bias=False),
    Case(2, 128, 96, 4, 48, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), groups=2),
    Case(2, 64, 136, 6, 32, (3, 1), (1, 1), (1, 0), bias=False),
    Case(2, 64, 64, 4, 40, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), layout="channels_last"),
    # Stride 2 along the width (two column planes; 32-column segments): k4 p1 (16-byte
    # pieces), k3 p1 op1 with partial channel tiles, stride only along the width with a
    # 5-wide kernel in groups of 3 + 2, 4-byte pieces (k4 p0), dilation 2 (one plane).
    Case(2, 64, 64, 5, 64, (4, 4), (2, 2), (1, 1), bias=False),
    Case(2, 72, 40, 4, 40, (3, 3), (2, 2), (1, 1), (1, 1)),
    Case(1, 64, 96, 3, 48, (4, 5), (1, 2), (0, 2), (0, 1), (1, 1), bias=False),
    Case(2, 64, 64, 4, 64, (4, 4), (2, 2)),
    Case(2, 64, 64, 4, 32, (3, 3), (2, 2), (2, 2), (1, 1), (2, 2), bias=False),
    # channels_last, read in place (no row alignment rule; channel groups of 8): an odd
    # width, stride 2 with an odd grad_output width, partial channel tiles with a dilated
    # 5-wide kernel, groups, and channel counts that are not multiples of 8 (NCHW copies).
    Case(2, 64, 64, 4, 37, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), bias=False, layout="channels_last"),
    Case(2, 64, 64, 5, 33, (4, 4), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 72, 40, 4, 30, (3, 5), (1, 1), (1, 2), (0, 0), (1, 2), bias=False, layout="channels_last"),
    Case(2, 128, 96, 3, 20, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), groups=2, layout="channels_last"),
    Case(2, 36, 60, 4, 24, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
    Case(2, 64, 64, 4, 64, (3, 4), bias=False),
    Case(2, 64, 64, 4, 60, (3, 3)),
    # channels_last with 32 channels on both sides: the wgmma kernel too (in place), where
    # NCHW operands of that size go to the rows kernels.
    Case(2, 32, 32, 4, 40, (3, 3), layout="channels_last"),
    # channels_last with KH >= 2 and H >= 3 runs the ring kernel (several kernel rows per
    # block, grad_output rows in a ring; the cases above with KH >= 2 do too): five kernel
    # rows in groups of 3 + 2 (an idle third warpgroup), dilation 2 along the height (a
    # window of 5 rows for 3 kernel rows), stride 3 along the height (no overlap), 19 splits
    # of 8 steps that start mid-column, and H = 2, where the one-row kernel runs.
    Case(2, 64, 64, 6, 40, (5, 3), (1, 1), (2, 1), bias=False, layout="channels_last"),
    Case(2, 64, 64, 7, 40, (3, 3), (1, 1), (2, 1), (0, 0), (2, 1), layout="channels_last"),
    Case(2, 64, 64, 5, 24, (3, 3), (3, 1), (1, 1), (2, 0), bias=False, layout="channels_last"),
    Case(4, 64, 64, 37, 64, (3, 3), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 64, 64, 2, 40, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
    # NCHW with stride 1 along the height and KH >= 2 runs the NCHW ring kernel (cases 0, 1,
    # 3, 4, 8, 16 above too): dilation 2 along the height, four kernel rows in blocks of
    # 2 + 2, 19 splits that start mid-column, and one-row images (every step a new column:
    # two pre-steps before each).
    Case(2, 64, 64, 7, 64, (3, 3), (1, 1), (2, 1), (0, 0), (2, 1)),
    Case(2, 64, 64, 6, 64, (4, 3), (1, 1), (2, 1), bias=False),
    Case(4, 64, 64, 37, 64, (3, 3), (1, 1), (1, 1)),
    Case(3, 64, 64, 1, 64, (3, 3), (1, 1), (1, 1), bias=False),
]
WGMMA_16BIT_CONFIGS = [c for c in DTYPE_CONFIGS if c[0] in ("bf16", "fp16")]


@pytest.mark.parametrize("config", WGMMA_16BIT_CONFIGS, ids=[c[0] for c in WGMMA_16BIT_CONFIGS])
@pytest.mark.parametrize("case", GW_WGMMA_CASES, ids=[c.id for c in GW_WGMMA_CASES])
def test_grad_weight_wgmma(case: Case, config):
    check_grad_weight_alone(case, config, seed=48)


# float32 grad_weight with TF32 on the wgmma kernel (grad_weight_wgmma_tf32_kernel: NCHW,
# stride 1 along the width, W a multiple of 4, each tap group's lead + halo + 32 columns
# within 48; backward.cu takes it where the rows kernels would run and either channel group
# has more than 32 channels; by default for tap groups of 4 and wherever the ring kernel runs,
# everywhere under CONVT_BWD_GW_TF32=all, nowhere under 0). Each case with whether the kernel can run: grad_output rows of
# 16-, 8- and 4-byte pieces (leads 0-3), tap groups of 1-4 with a partial one, dilation and
# padding along the width (halos up to 8, the rows kernels' limit; negative columns), stride along the height,
# partial and several channel tiles, groups, splits starting mid-row, channels_last (NCHW
# copies first, under CONVT_BWD_GW_ROWS_CL=0 only); and where it does not: a halo of 14 (past the rows kernels' limit too), W not a multiple
# of 4, 32 channels on both sides, stride 2 along the width. Where tf32_ring_applies, the ring
# kernel runs (several kernel rows per block). Against float64, bit-identical run to run.
GW_TF32_CASES = [
    (Case(2, 64, 64, 5, 64, (3, 3), bias=False), True),
    (Case(2, 80, 72, 4, 72, (3, 5), (1, 1), (1, 2), (0, 0), (1, 2)), True),
    (Case(1, 130, 20, 3, 136, (2, 7), (2, 1), (0, 3), (1, 0), (1, 1), bias=False), True),
    (Case(2, 128, 96, 6, 48, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), groups=2), True),
    (Case(2, 64, 136, 6, 32, (3, 1), (1, 1), (1, 0), bias=False), True),
    (Case(2, 64, 64, 4, 64, (3, 4), bias=False), True),
    (Case(2, 64, 64, 4, 60, (3, 3)), True),
    (Case(2, 64, 48, 5, 40, (1, 7), (1, 1), (0, 6), (0, 0), (1, 2)), True),
    (Case(2, 64, 64, 4, 40, (1, 5), (1, 1), (0, 0), (0, 0), (1, 4), bias=False), True),
    (Case(4, 64, 64, 37, 64, (3, 3), (1, 1), (1, 1)), True),
    (Case(2, 64, 64, 4, 40, (3, 3), layout="channels_last"), True),
    (Case(2, 64, 64, 4, 40, (1, 5), (1, 1), (0, 0), (0, 0), (1, 7), bias=False), False),
    (Case(2, 64, 64, 4, 42, (3, 3)), False),
    (Case(2, 32, 32, 5, 64, (3, 3)), False),
    (Case(2, 64, 64, 5, 64, (4, 4), (2, 2), (1, 1)), False),
    # The ring kernel's windows: dilation 2 along the height (5 rows for 3 kernel rows), one-row
    # images (every step a new column: pre-steps before each), four kernel rows in blocks of
    # 2 + 2, two kernel rows with an odd grad_output width.
    (Case(2, 64, 64, 7, 64, (3, 3), (1, 1), (2, 1), (0, 0), (2, 1)), True),
    (Case(3, 64, 64, 1, 64, (3, 3), (1, 1), (1, 1), bias=False), True),
    (Case(2, 64, 64, 6, 64, (4, 3), (1, 1), (2, 1), bias=False), True),
    (Case(2, 64, 64, 5, 40, (2, 2), bias=False), True),
]


def gw_group_taps(case: Case) -> int:
    """A grad_weight block's taps of one kernel row: KW in groups of at most 4, as even as possible."""
    kw_groups = -(-case.kernel[1] // 4)
    return -(-case.kernel[1] // kw_groups)


def tf32_ring_applies(case: Case) -> bool:
    """The TF32 grad_weight ring kernel's plan (backward_grad_weight_wgmma.cu, tf32_ring_plan): two or
    more kernel rows at stride 1 along the height, in blocks of 3 rows (tap groups up to 3) or 2,
    with no idle warpgroup."""
    kh = case.kernel[0]
    if kh < 2 or case.stride[0] != 1:
        return False
    kr_max = 3 if gw_group_taps(case) <= 3 else 2
    kr = -(-kh // -(-kh // kr_max))
    return kh % kr == 0


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("case,runs", GW_TF32_CASES, ids=[c.id for c, _ in GW_TF32_CASES])
def test_grad_weight_wgmma_tf32(case: Case, runs: bool):
    config = DTYPE_CONFIGS[0]
    assert config[1] == torch.float32 and config[2]  # float32 with TF32
    names = check_grad_weight_profiled(case, config, seed=51)
    if not any(os.environ.get(k) for k in ("CONVT_BWD_GW", "CONVT_BWD_PATH", "CONVT_BWD_COLS")):
        mode = os.environ.get("CONVT_BWD_GW_TF32", "")
        ring = tf32_ring_applies(case) and os.environ.get("CONVT_BWD_GW_TF32_RING", "") != "0"
        # channels_last operands: the channels_last rows kernel reads them in place instead (test_grad_weight_rows_channels_last)
        # unless CONVT_BWD_GW_ROWS_CL=0 sends them through NCHW copies here.
        rows_cl = case.layout == "channels_last" and os.environ.get("CONVT_BWD_GW_ROWS_CL") != "0"
        expect = runs and not rows_cl and (mode == "all" or (mode == "" and (gw_group_taps(case) == 4 or ring)))
        ran_ring = any("grad_weight_wgmma_tf32_ring_kernel" in k for k in names)
        ran_one_row = any("grad_weight_wgmma_tf32_kernel" in k for k in names)
        assert (ran_ring or ran_one_row) == expect, (case.id, mode, names)
        assert ran_ring == (expect and ring), (case.id, mode, names)


@pytest.mark.parametrize("mode", ["all", "0", "all_one_row"])
def test_grad_weight_wgmma_tf32_knob(mode):
    """CONVT_BWD_GW_TF32=all / 0 (a fresh pytest process): the same cases with the kernels taken
    wherever they run / nowhere (the rows and tile kernels); all_one_row: everywhere with
    CONVT_BWD_GW_TF32_RING=0 (the one-row kernel only); against float64."""
    skip_under_knobs("CONVT_BWD_GW", "CONVT_BWD_PATH", "CONVT_BWD_GW_TF32", "CONVT_BWD_COLS", "CONVT_BWD_GW_TF32_RING")
    env = dict(CONVT_BWD_GW_TF32="0" if mode == "0" else "all")
    if mode == "all_one_row":
        env["CONVT_BWD_GW_TF32_RING"] = "0"
    run_pytest([this_file("test_grad_weight_wgmma_tf32")], env, len(GW_TF32_CASES))


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_grad_weight_wgmma_channels_last_in_place():
    """channels_last x and grad_output: the default dispatch reads them in place (a wgmma
    kernel runs, no NCHW copy does), at stride 1 and 2, and with 32 channels on both sides:
    the warp-specialized kernel where it applies (unless CONVT_BWD_GW_WS=0), else the ring
    kernel where KH >= 2 and H >= 3 (unless CONVT_BWD_GW_RING=0), else the one-row kernel."""
    if (os.environ.get("CONVT_BWD_GW", "") not in ("", "wgmma") or os.environ.get("CONVT_BWD_PATH")
            or os.environ.get("CONVT_BWD_COLS", "") == "on"):
        pytest.skip("a test knob sends grad_weight elsewhere")
    ring_on = os.environ.get("CONVT_BWD_GW_RING", "") != "0"
    for case in (GW_WGMMA_CASES[11], GW_WGMMA_CASES[12], GW_WGMMA_CASES[18], GW_WGMMA_CASES[23]):
        x, w, b = case.make(torch.bfloat16, DEVICE, seed=52)
        go = random_like_output(case, reference(x, w, b, case).shape, torch.bfloat16, seed=53, channels_last=True)
        _, ref_gw, _ = reference_grads(x, w, b, go, case)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            _, gw, _ = backward_op(go, x, w, *op_args(case), [False, True, False])
            torch.cuda.synchronize()
        kernels = [e.key for e in prof.key_averages()]
        ws_on = os.environ.get("CONVT_BWD_GW_WS", "") != "0"
        if ws_on and gw_ws_takes(case):
            want = "grad_weight_ws_kernel"  # the warp-specialized kernel (stride 1 and 2 here)
        else:
            want = ("grad_weight_wgmma_cl_ring_kernel" if ring_on and case.kernel[0] >= 2 and case.H >= 3
                    else "grad_weight_wgmma_cl_kernel")
        assert any(want in k for k in kernels), (case.id, want, kernels)
        assert not any("nhwc_to_nchw" in k for k in kernels), kernels
        assert_close_to(gw, ref_gw, TOLERANCE[torch.bfloat16], "grad_weight")


@SM90_ONLY
def test_grad_weight_wgmma_channels_last_ring_with_ws_off():
    """CONVT_BWD_GW_WS=0 (a fresh pytest process): the in-place test's cases, which the
    warp-specialized kernel takes by default, run on the channels_last ring / one-row kernels
    again, and match float64."""
    if any(os.environ.get(k) for k in ("CONVT_BWD_GW", "CONVT_BWD_GW_WS", "CONVT_BWD_PATH", "CONVT_BWD_COLS")):
        pytest.skip("a test knob sends grad_weight elsewhere")
    run_pytest([this_file("test_grad_weight_wgmma_channels_last_in_place")], dict(CONVT_BWD_GW_WS="0"), 1)


def gw_ws_takes(case: Case) -> bool:
    """Whether the warp-specialized grad_weight takes this channels_last 16-bit case (the
    dispatch's part for it): one group, channels multiples of 8, at most 4 residue subgrids of
    grad_output holding taps, each non-empty."""
    if case.groups != 1 or case.Cin % 8 or case.Cout % 8:
        return False
    out = [(case.H - 1) * case.stride[0] - 2 * case.padding[0] + case.dilation[0] * (case.kernel[0] - 1)
           + case.output_padding[0] + 1,
           (case.W - 1) * case.stride[1] - 2 * case.padding[1] + case.dilation[1] * (case.kernel[1] - 1)
           + case.output_padding[1] + 1]
    residues = set()
    for ky in range(case.kernel[0]):
        for kx in range(case.kernel[1]):
            residues.add(((ky * case.dilation[0] - case.padding[0]) % case.stride[0],
                          (kx * case.dilation[1] - case.padding[1]) % case.stride[1]))
    return len(residues) <= 4 and all(out[0] > ry and out[1] > rx for ry, rx in residues)


# The warp-specialized grad_weight (backward_grad_weight_ws.cu): channels_last bf16 / fp16,
# one group. Stride 1: 3 x 3 with padding and an image width that is not a multiple of the
# 64-column tile; partial channel tiles on both sides (40, 72) with dilation; 21 taps (units of
# 6 + 6 | 6 + 3: padding slots) and 15 taps with 128 output channels (two channel tiles, two
# block kinds); 1 x 1 (consumer 1 idle); a one-row image; more pixel tiles than splits.
# Stride 2 by residue subgrids of grad_output: k4 s2 (four residues of 4 taps: two boxes per
# block); k3 s2 with output padding and partial channel tiles (residues of 1, 2, 2 and 4 taps:
# one block kind of four boxes, units spanning residues);
# stride 2 x 1 with 128 output channels; stride 2 with dilation 2 (all taps in one residue,
# qy from -1 to 1). (Kernel == stride layers take the space-to-depth GEMMs instead.)
# Narrow images, on 16- and 32-column tiles: DCGAN's k4 s2 at 16 x 16 (TX 16, two rows of 8-row
# tiles), a 12 x 13 stride-1 image (TX 16, 12 rows in one tile), k3 s2 with output padding at
# 5 x 7 (TX 16, partial channel tiles), and 9 x 20 (TX 32) with a partial output-channel tile.
# (Each is one the dispatch sends to the channels_last wgmma kernels: widths >= 24 with at least 16
# channels on each side, or narrower with at least 32.) Narrow co tiles (Cout <= 32: the kernel's
# NCO = 32, m64n32 products): 1 x 3 with 32 output channels (above); 32 x 32 k3x7 with padding
# (21 taps, units 6 + 6 | 6 + 3); 15 taps into 24 output channels (one kind of 8 + 7, a partial
# tile); k4 s2 into 16; 32 x 32 k3 at 12 x 13 (TX 16). Against float64 in poisoned memory,
# bit-identical on a second call, and the profiler checks that the kernel ran, with the co tile
# width the case asks for.
GW_WS_CASES = [
    Case(2, 64, 64, 9, 70, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
    Case(2, 40, 72, 7, 30, (3, 5), (1, 1), (1, 2), (0, 0), (2, 1), layout="channels_last"),
    Case(2, 64, 64, 6, 40, (3, 7), bias=False, layout="channels_last"),
    Case(2, 64, 128, 5, 33, (3, 5), (1, 1), (1, 2), layout="channels_last"),
    Case(2, 32, 48, 8, 30, (1, 1), layout="channels_last"),
    Case(3, 64, 32, 1, 90, (1, 3), (1, 1), (0, 1), bias=False, layout="channels_last"),
    Case(8, 16, 64, 64, 64, (3, 3), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 64, 64, 9, 40, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(2, 40, 72, 7, 30, (3, 3), (2, 2), (1, 1), (1, 1), bias=False, layout="channels_last"),
    Case(2, 64, 128, 5, 33, (3, 5), (2, 1), (1, 2), layout="channels_last"),
    Case(2, 32, 48, 6, 36, (3, 3), (2, 2), (1, 1), (0, 0), (2, 2), layout="channels_last"),
    Case(4, 64, 64, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(3, 32, 48, 12, 13, (3, 3), (1, 1), (1, 1), bias=False, layout="channels_last"),
    Case(2, 64, 40, 5, 7, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 40, 72, 9, 20, (3, 5), (1, 1), (1, 2), layout="channels_last"),
    Case(2, 32, 32, 8, 70, (3, 7), (1, 1), (1, 3), layout="channels_last"),
    Case(2, 48, 24, 7, 30, (3, 5), (1, 1), (1, 2), bias=False, layout="channels_last"),
    Case(2, 32, 16, 9, 40, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(3, 32, 32, 12, 13, (3, 3), (1, 1), (1, 1), layout="channels_last"),
]
assert all(gw_ws_takes(c) for c in GW_WS_CASES)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("config", WGMMA_16BIT_CONFIGS, ids=[c[0] for c in WGMMA_16BIT_CONFIGS])
@pytest.mark.parametrize("case", GW_WS_CASES, ids=[c.id for c in GW_WS_CASES])
def test_grad_weight_warp_specialized(case: Case, config):
    if any(os.environ.get(k) for k in ("CONVT_BWD_GW", "CONVT_BWD_GW_WS", "CONVT_BWD_PATH", "CONVT_BWD_COLS")):
        pytest.skip("a test knob sends grad_weight elsewhere")
    _, dtype, _, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=63)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=64, channels_last=True)
    _, ref_gw, _ = reference_grads(x, w, b, go, case)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        (_, gw, _), _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [False, True, False]))
        torch.cuda.synchronize()
    _, gw2, _ = backward_op(go, x, w, *op_args(case), [False, True, False])
    ran = [e.key for e in prof.key_averages() if "grad_weight_ws_kernel" in e.key]
    assert ran, case.id
    # The co tile width, the kernel's fourth template argument: 32 where Cout <= 32, unless
    # CONVT_BWD_GW_WS_NARROW=0 (test_grad_weight_warp_specialized_wide_knob).
    narrow = case.Cout <= 32 and os.environ.get("CONVT_BWD_GW_WS_NARROW") != "0"
    assert template_args(ran[0])[3] == ("32" if narrow else "64"), (case.id, ran)
    assert_close_to(gw, ref_gw, tol, "grad_weight")
    assert torch.equal(gw, gw2), "not bit-identical run to run"


@SM90_ONLY
def test_grad_weight_warp_specialized_wide_knob():
    """CONVT_BWD_GW_WS_NARROW=0, in a fresh pytest process: every GW_WS_CASES case on the wide
    (64-channel) co tiles, the narrow ones included."""
    skip_under_knobs("CONVT_BWD_GW_WS_NARROW", "CONVT_BWD_GW", "CONVT_BWD_GW_WS", "CONVT_BWD_PATH", "CONVT_BWD_COLS")
    run_pytest([this_file("test_grad_weight_warp_specialized")], {"CONVT_BWD_GW_WS_NARROW": "0"},
               len(GW_WS_CASES) * len(WGMMA_16BIT_CONFIGS))


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
def test_grad_weight_wgmma_nchw_ring_dispatch():
    """The default dispatch takes a wgmma kernel for bf16 NCHW problems it supports: the ring
    kernel at stride 1 along the height with KH >= 2 (unless CONVT_BWD_GW_RING=0), the
    one-row kernel at stride 2 along the height."""
    if (os.environ.get("CONVT_BWD_GW", "") not in ("", "wgmma") or os.environ.get("CONVT_BWD_PATH")
            or os.environ.get("CONVT_BWD_COLS", "") == "on"):
        pytest.skip("a test knob sends grad_weight elsewhere")
    ring_on = os.environ.get("CONVT_BWD_GW_RING", "") != "0"
    for case, ring in ((GW_WGMMA_CASES[0], ring_on), (GW_WGMMA_CASES[8], ring_on), (GW_WGMMA_CASES[6], False)):
        x, w, b = case.make(torch.bfloat16, DEVICE, seed=54)
        go = random_like_output(case, reference(x, w, b, case).shape, torch.bfloat16, seed=55, channels_last=False)
        _, ref_gw, _ = reference_grads(x, w, b, go, case)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            _, gw, _ = backward_op(go, x, w, *op_args(case), [False, True, False])
            torch.cuda.synchronize()
        kernels = [e.key for e in prof.key_averages()]
        want = "grad_weight_wgmma_ring_kernel" if ring else "grad_weight_wgmma_kernel"
        assert any(want in k for k in kernels), (case.id, want, kernels)
        assert_close_to(gw, ref_gw, TOLERANCE[torch.bfloat16], "grad_weight")


# kernel == stride: both gradients as cuBLAS GEMMs over grad_output rearranged
# space-to-depth (backward_s2d_gemm.cu; backward.cu takes it for float / bf16 / fp16 NCHW
# with Cin >= 64 and Cout >= 32, which every NCHW case here meets; CONVT_BWD_S2D=on sends
# every kernel == stride case of the backward tests, channels_last included, on the GPU runs).
# 2x2, 3x3, 2x3 and 4x1 kernels, one image (no input transpose), bias; channels_last
# operands take the channels_last variant (input read in place, grad_output rearranged into
# co-major columns: with 4 taps each thread's channels (pairs in 16-bit types) in one store,
# as with 32, 40 and 34 output channels, else one element at a time, as with 3x3 taps and
# with 33 channels in 16-bit types; bias summed from channels_last grad_output).
S2D_CASES = [
    Case(2, 64, 32, 5, 7, (2, 2), (2, 2)),
    Case(3, 128, 40, 4, 6, (2, 2), (2, 2), bias=False),
    Case(2, 64, 48, 3, 5, (3, 3), (3, 3)),
    Case(1, 64, 32, 4, 4, (2, 3), (2, 3), bias=False),
    Case(2, 96, 64, 4, 3, (4, 1), (4, 1)),
    Case(2, 64, 32, 6, 5, (2, 2), (2, 2), layout="channels_last"),
    Case(3, 128, 40, 4, 6, (2, 2), (2, 2), bias=False, layout="channels_last"),
    Case(2, 64, 36, 3, 5, (3, 3), (3, 3), layout="channels_last"),
    Case(2, 96, 34, 4, 3, (4, 1), (4, 1), layout="channels_last"),
    # 2 x 2 with W = 8: the paired-column kernel's widest vectors (16 bytes in every dtype);
    # the first two cases above take its narrower ones (W = 7: 2 elements, W = 6: 4).
    Case(2, 64, 32, 3, 8, (2, 2), (2, 2)),
    Case(2, 64, 33, 4, 5, (2, 2), (2, 2), layout="channels_last"),
]
S2D_CONFIGS = [c for c in DTYPE_CONFIGS if c[0] != "fp64"]


def check_backward_both_gradients(case: Case, config):
    """All three gradients against float64 PyTorch into poisoned buffers, bit-identical on a
    second run, grad_input's memory format by the rule, and grad_weight alone."""
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=47)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=48,
                            channels_last=case.output_is_channels_last())
    refs = reference_grads(x, w, b, go, case)
    mask = [True, True, case.bias]
    with conv_tf32(tf32):
        grads, _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), mask))
        again = backward_op(go, x, w, *op_args(case), mask)
    for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
        if ref is not None:
            assert_close_to(got, ref, tol, name)
    for got, rerun in zip(grads, again):
        assert torch.equal(got, rerun), "not bit-identical run to run"
    assert_memory_format_by_rule(grads[0], case)
    # One gradient alone: the other is not computed.
    with conv_tf32(tf32):
        gi, gw, gb = backward_op(go, x, w, *op_args(case), [False, True, False])
    assert gi.shape == (0,) and gb.shape == (0,)
    assert_close_to(gw, refs[1], tol, "grad_weight alone")


@pytest.mark.parametrize("config", S2D_CONFIGS, ids=[c[0] for c in S2D_CONFIGS])
@pytest.mark.parametrize("case", S2D_CASES, ids=[c.id for c in S2D_CASES])
def test_backward_kernel_equals_stride(case: Case, config):
    check_backward_both_gradients(case, config)


# grad_input alone on kernel == stride layers (backward.cu grad_input_alone_as_forward):
# channels_last operands in 16-bit or float32 with TF32 and at most 128 input channels take the
# warp-specialized forward over grad_output's residues, read in place (no copy of grad_output),
# where it can read them: at most four residues, grad_output's pixels whole 16-byte runs. More
# input channels, more residues, other channel counts, strict float32, or grad_weight or grad_bias
# asked for too keep the space-to-depth copy + cuBLAS (test_backward_bias_fused_columns_cl: the
# copy sums grad_bias). 2 x 2 with 64 and 128 input channels, 4 x 1 at
# 4 x 1; 33 and 36 output channels (36: 16-byte pixels in float32 only); 3 x 3 at stride 3 (9
# residues); 192 input channels. Against float64, bit-identical run to run.
GI_ALONE_KS_CASES = [
    Case(2, 64, 32, 6, 5, (2, 2), (2, 2), layout="channels_last"),
    Case(3, 128, 40, 4, 6, (2, 2), (2, 2), bias=False, layout="channels_last"),
    Case(2, 96, 40, 4, 3, (4, 1), (4, 1), layout="channels_last"),
    Case(2, 64, 33, 4, 5, (2, 2), (2, 2), layout="channels_last"),
    Case(2, 64, 36, 6, 5, (2, 2), (2, 2), bias=False, layout="channels_last"),
    Case(2, 64, 32, 3, 5, (3, 3), (3, 3), layout="channels_last"),
    Case(2, 192, 64, 4, 5, (2, 2), (2, 2), layout="channels_last"),
]


def backward_profiled(go, x, w, case: Case, mask, tf32: bool):
    """The backward op into poisoned buffers under the CUDA profiler, then once more: (grads, the rerun's grads,
    the names of the kernels the first call ran)."""
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        grads, _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), mask))
        torch.cuda.synchronize()
    with conv_tf32(tf32):
        again = backward_op(go, x, w, *op_args(case), mask)
    return grads, again, [e.key for e in prof.key_averages()]


def template_args(kernel_name: str) -> list[str]:
    """The top-level template arguments of a profiler kernel name: "k<64, 64, 3, 1, true, false>(float const*, ...)"
    -> ["64", "64", "3", "1", "true", "false"]."""
    start = kernel_name.index("<") + 1
    args, depth, cur = [], 0, ""
    for ch in kernel_name[start:]:
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return args + [cur.strip()]


def assert_asked_grads(mask, grads, again, refs, tol: float) -> None:
    """Each gradient the mask asks for: within tol of float64, and bit-identical in the rerun."""
    for want, got, rerun, ref, name in zip(mask, grads, again, refs, ("grad_input", "grad_weight", "grad_bias")):
        if want:
            assert_close_to(got, ref, tol, f"{name}, mask {mask}")
            assert torch.equal(got, rerun), f"{name} not bit-identical run to run"


def grad_input_alone_takes_forward(case: Case, dtype, tf32: bool) -> bool:
    """backward.cu's grad_input_alone_as_forward for a channels_last kernel == stride case."""
    element = torch.tensor([], dtype=dtype).element_size()
    return ((dtype != torch.float32 or tf32) and case.groups == 1 and case.Cin <= 128
            and case.stride[0] * case.stride[1] <= 4 and case.Cout * element % 16 == 0)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("dtype,tf32", [(torch.bfloat16, False), (torch.float16, False), (torch.float32, True),
                                        (torch.float32, False)], ids=["bf16", "fp16", "fp32_tf32", "fp32_strict"])
@pytest.mark.parametrize("case", GI_ALONE_KS_CASES, ids=[c.id for c in GI_ALONE_KS_CASES])
def test_grad_input_alone_kernel_equals_stride(case: Case, dtype, tf32: bool):
    if any(os.environ.get(k) for k in ("CONVT_BWD_GI", "CONVT_BWD_S2D", "CONVT_BWD_PATH", "CONVT_BWD_COLS",
                                       "CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_BWD_GI_PLANES", "CONVT_GEMM_3XTF32")):
        pytest.skip("a test knob changes the dispatch")
    x, w, b = case.make(dtype, DEVICE, seed=71)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=72, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    tol = TOLERANCE["tf32"] if tf32 else TOLERANCE[dtype]
    for mask in ([True, False, False], [True, True, False]):
        grads, again, kernels = backward_profiled(go, x, w, case, mask, tf32)
        forward = grad_input_alone_takes_forward(case, dtype, tf32) and not mask[1]
        # The copy path's kernels: space_to_depth_* or im2col_cl_* (its channels_last forms); the
        # forward reads grad_output where it lies (no copy_planes either).
        copied = any("space_to_depth" in k or "im2col_cl" in k or "copy_planes" in k for k in kernels)
        assert any("wgmma_ws_fwd_kernel" in k for k in kernels) == forward, (case.id, mask, kernels)
        assert copied == (not forward), (case.id, mask, kernels)
        assert_asked_grads(mask, grads, again, refs, tol)
        assert_memory_format_by_rule(grads[0], case)


# float32 (TF32) channels_last grad_input at stride > 1 (backward.cu float32_cl_residues_in_place): the
# warp-specialized forward over grad_output's residues read in place, not the native GEMM behind an NCHW
# transpose of grad_output, where the residues can be mapped: one group, at most four residues, grad_output's
# pixels whole 16-byte runs, at least 32 input channels. Shapes like kb2_2 (k3 s2 op1: padding slots), kb2_5
# (k4 s2 p1) and kb2_93 (k4 s2 p0), strides 2 x 1 with 36 output channels (16-byte pixels, a partial channel
# tile), dilation 3 (a residue whose subgrid starts at q = 1); native: 24 input channels, 34 output channels
# (8-byte pixels), two groups, k4 at stride 3 (9 residues), and every case in strict float32. Every output mask
# that asks for grad_input (grad_weight and grad_bias run beside it); against float64, bit-identical run to run.
GI_F32_CL_RESIDUE_CASES = [
    (Case(2, 64, 64, 9, 8, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"), True),
    (Case(2, 64, 64, 7, 9, (4, 4), (2, 2), (1, 1), (1, 1), layout="channels_last"), True),
    (Case(2, 64, 128, 6, 6, (4, 4), (2, 2), bias=False, layout="channels_last"), True),
    (Case(1, 40, 36, 5, 11, (3, 3), (2, 1), (1, 1), (1, 0), layout="channels_last"), True),
    (Case(2, 32, 16, 6, 7, (3, 3), (2, 2), (0, 0), (0, 0), (3, 3), layout="channels_last"), True),
    (Case(2, 24, 32, 6, 7, (3, 3), (2, 2), (1, 1), layout="channels_last"), False),
    (Case(2, 64, 34, 6, 7, (3, 3), (2, 2), (1, 1), layout="channels_last"), False),
    (Case(2, 64, 64, 6, 7, (3, 3), (2, 2), (1, 1), groups=2, layout="channels_last"), False),
    (Case(2, 64, 32, 5, 6, (4, 4), (3, 3), (1, 1), layout="channels_last"), False),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("tf32", [True, False], ids=["tf32", "strict"])
@pytest.mark.parametrize("case,in_place", GI_F32_CL_RESIDUE_CASES, ids=[c.id for c, _ in GI_F32_CL_RESIDUE_CASES])
def test_grad_input_float32_channels_last_residues(case: Case, in_place: bool, tf32: bool):
    skip_under_knobs("CONVT_BWD_GI", "CONVT_BWD_PATH", "CONVT_BWD_COLS", "CONVT_BWD_S2D", "CONVT_FWD_PATH",
                     "CONVT_FWD_WS", "CONVT_FWD_WS_TF32", "CONVT_BWD_GI_PLANES")
    x, w, b = case.make(torch.float32, DEVICE, seed=81)
    go = random_like_output(case, reference(x, w, b, case).shape, torch.float32, seed=82, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    tol = TOLERANCE["tf32"] if tf32 else TOLERANCE[torch.float32]
    for mask in ([True, False, False], [True, True, False], [True, True, case.bias]):
        grads, again, kernels = backward_profiled(go, x, w, case, mask, tf32)
        forward = in_place and tf32
        assert any("wgmma_ws_fwd_kernel" in k for k in kernels) == forward, (case.id, mask, kernels)
        assert any("grad_input_gemm_kernel" in k for k in kernels) == (not forward), (case.id, mask, kernels)
        assert not any("copy_planes" in k for k in kernels), (case.id, mask, kernels)
        assert_asked_grads(mask, grads, again, refs, tol)
        assert_memory_format_by_rule(grads[0], case)


# float32 (TF32) channels_last grad_weight on the channels_last rows kernel, operands read in place
# (backward_grad_weight_rows_cl.cu; backward.cu takes it where the rows kernels would run), grad_bias
# summed from its staged grad_output where every output row and column is owned by a tap (one group).
# Cases (fused?): kb2_2's k3 s2 p1 op1 on 40 columns (a partial last segment); kb2_5's k4 s2 p1 (two
# residue planes, shifts 0-2); kb2_93's k4 s2 p0 with 128 output channels (two channel tiles); kb2_10's
# k3 p1 at stride 1 (one plane); k3 x 7 (groups of 4 taps, one block per SM) with 48 input channels (a
# partial tile); k3 x 5 with 36 output channels; 32 x 32 tiles (k3, stride 2 x 1); dilation 4 at stride
# 1 (a halo of 8, the most it stages); then not fused: two groups, and dilation 2 at stride 2 (odd rows
# and columns reached by no tap); the fragment maps' other shapes (FragmentMap: paired n-blocks where a
# warp has an even count of them): 32 x 32 tiles with 4 taps a block (paired, two planes, 28 output
# channels) and 2 taps (paired), 64 x 64 tiles with one tap a block (96 x 80 channels: partial tiles on
# both sides). Last, the NCHW kernels behind copies: 30 input channels (not whole
# 16-byte units) and dilation 5 (a halo of 10). Against float64 in poisoned buffers, bit-identical run
# to run, with grad_input asked or not; strict float32 (3xTF32) never takes it.
GW_ROWS_CL_CASES = [
    (Case(2, 64, 64, 9, 40, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"), True, True),
    (Case(2, 64, 64, 7, 36, (4, 4), (2, 2), (1, 1), layout="channels_last"), True, True),
    (Case(2, 64, 128, 6, 33, (4, 4), (2, 2), layout="channels_last"), True, True),
    (Case(2, 64, 64, 5, 70, (3, 3), (1, 1), (1, 1), layout="channels_last"), True, True),
    (Case(2, 48, 64, 4, 40, (3, 7), (1, 1), (0, 0), bias=False, layout="channels_last"), True, False),
    (Case(1, 64, 36, 5, 48, (3, 5), (1, 1), (1, 2), layout="channels_last"), True, True),
    (Case(2, 32, 32, 6, 37, (3, 3), (2, 1), (1, 1), (1, 0), layout="channels_last"), True, True),
    (Case(1, 64, 32, 4, 40, (3, 3), (1, 1), (4, 4), (0, 0), (4, 4), layout="channels_last"), True, True),
    (Case(2, 64, 64, 5, 40, (3, 3), (1, 1), (1, 1), groups=2, layout="channels_last"), True, False),
    (Case(2, 64, 64, 6, 32, (3, 3), (2, 2), (2, 2), (0, 0), (2, 2), layout="channels_last"), True, False),
    (Case(2, 32, 28, 5, 45, (2, 4), (2, 2), (1, 1), layout="channels_last"), True, True),
    (Case(1, 24, 32, 5, 33, (2, 2), (1, 1), layout="channels_last"), True, True),
    (Case(1, 96, 80, 3, 37, (2, 1), (1, 1), layout="channels_last"), True, True),
    (Case(2, 30, 64, 5, 40, (3, 3), (1, 1), (1, 1), layout="channels_last"), False, False),
    (Case(1, 64, 32, 4, 40, (3, 3), (1, 1), (5, 5), (0, 0), (5, 5), bias=False, layout="channels_last"), False, False),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("tf32", [True, False], ids=["tf32", "strict"])
@pytest.mark.parametrize("case,taken,fused", GW_ROWS_CL_CASES, ids=[c.id for c, _, _ in GW_ROWS_CL_CASES])
def test_grad_weight_rows_channels_last(case: Case, taken: bool, fused: bool, tf32: bool):
    skip_under_knobs("CONVT_BWD_GW", "CONVT_BWD_GW_ROWS_CL", "CONVT_BWD_PATH", "CONVT_BWD_COLS", "CONVT_BWD_S2D",
                     "CONVT_BWD_BIAS_FUSED", "CONVT_GEMM_3XTF32")
    x, w, b = case.make(torch.float32, DEVICE, seed=83)
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    go = random_like_output(case, reference(x, w, b, case).shape, torch.float32, seed=84, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    tol = TOLERANCE["tf32"] if tf32 else TOLERANCE[torch.float32]
    for mask in ([False, True, False], [False, True, case.bias], [True, True, case.bias]):
        grads, again, kernels = backward_profiled(go, x, w, case, mask, tf32)
        ran = any("grad_weight_rows_cl_kernel" in k for k in kernels)
        assert ran == (taken and tf32), (case.id, mask, kernels)
        if ran:
            # (the sixth is kTrunc: the MMA truncates the raw operands unless the knob asks for rounding)
            trunc = "false" if os.environ.get("CONVT_BWD_GW_ROWS_CL_TF32") == "round" else "true"
            assert all(template_args(k)[5] == trunc for k in kernels if "grad_weight_rows_cl_kernel" in k), kernels
            # No NCHW copy of either operand for grad_weight (grad_input's native GEMM, where its
            # residues cannot be read in place, still copies grad_output), and grad_bias from the
            # kernel's stages where it sums it.
            if not mask[0]:
                assert not any("nhwc_to_nchw" in k for k in kernels), (case.id, mask, kernels)
            if mask[2]:
                # (the kernel's fifth template argument is kBias)
                summing = any("grad_weight_rows_cl_kernel" in k and template_args(k)[4] == "true" for k in kernels)
                assert summing == fused, (case.id, mask, kernels)
                assert any("grad_bias_partial" in k for k in kernels) == (not fused), (case.id, mask, kernels)
        assert_asked_grads(mask, grads, again, refs, tol)


# The same cases with TF32 by rounding each fragment register to nearest before the MMA
# (CONVT_BWD_GW_ROWS_CL_TF32=round: the 16-byte wide-order loads and their integer adds) instead of
# the default truncation by the MMA: a fresh process, as the knob is read once.
@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_grad_weight_rows_channels_last_rounded():
    skip_under_knobs("CONVT_BWD_GW", "CONVT_BWD_GW_ROWS_CL", "CONVT_BWD_GW_ROWS_CL_TF32", "CONVT_BWD_PATH",
                     "CONVT_BWD_COLS", "CONVT_BWD_S2D", "CONVT_BWD_BIAS_FUSED", "CONVT_GEMM_3XTF32")
    taken = [c.id for c, t, _ in GW_ROWS_CL_CASES if t]
    run_pytest([this_file("test_grad_weight_rows_channels_last")], dict(CONVT_BWD_GW_ROWS_CL_TF32="round"),
               len(taken), "-k", "tf32 and (" + " or ".join(taken) + ")")


# Small images with many channels (DCGAN): both gradients as cuBLAS GEMMs over grad_output's
# columns (backward_s2d_gemm.cu cols_gemm_backward; backward.cu takes it for float / bf16 /
# fp16 in any layout with Cin >= 128, Cout >= 64, kernel != stride and images up to 16 x 16,
# 8 x 8 in strict fp32; channels_last operands also at sparse taps, below; CONVT_BWD_COLS=on
# sends every groups-1 case of the backward tests on the GPU runs). k4 s2 p1 (DCGAN), k3 s2
# with output_padding, dilation 2 at stride 1, a 5 x 3 kernel with strides 3 x 2; columns
# that read outside grad_output (padding); one image (the per-image GEMM for grad_input);
# channels_last operands (the channels_last columns, grad_input written channels_last);
# 12 x 12 images (columns in 16-bit and TF32, the backward's own kernels in strict fp32).
COLS_CASES = [
    Case(3, 128, 64, 4, 4, (4, 4), (2, 2), (1, 1)),
    Case(2, 128, 72, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), bias=False),
    Case(2, 160, 64, 6, 5, (3, 3), (1, 1), (1, 1), (0, 0), (2, 2)),
    Case(2, 128, 64, 5, 7, (5, 3), (3, 2), (2, 1), (0, 1), (1, 1)),
    Case(1, 128, 64, 7, 6, (4, 4), (2, 2), (1, 1)),
    Case(2, 128, 64, 4, 4, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(2, 128, 64, 12, 12, (4, 4), (2, 2), (1, 1)),
    # rows of whole 16-byte vectors in 16-bit dtypes (W = 16, 8): the vector im2col kernel
    Case(2, 128, 64, 8, 16, (4, 4), (2, 2), (1, 1)),
    Case(2, 128, 64, 6, 8, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    # channels_last im2col (co-major, through each warp's shared-memory tile): 72 channels in
    # chunks of 64 + 8; 65 channels (single-element loads; 16 taps: 16-byte stores, 9 taps:
    # single-element stores in 16-bit types)
    Case(2, 128, 72, 4, 4, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(2, 128, 65, 4, 4, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
    Case(2, 128, 65, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
]


@pytest.mark.parametrize("config", S2D_CONFIGS, ids=[c[0] for c in S2D_CONFIGS])
@pytest.mark.parametrize("case", COLS_CASES, ids=[c.id for c in COLS_CASES])
def test_backward_columns(case: Case, config):
    check_backward_both_gradients(case, config)



# The GEMM paths (columns, kernel == stride, the forward's cuBLAS + col2im) call cuBLAS
# through cublasLt with a plan cached per problem (csrc/cuda/cublas_gemm.cu), or through the
# legacy cublasGemmStridedBatchedEx under CONVT_GEMM_LT=0. The knob is read once per process,
# so each mode runs in a fresh process: both must be accurate against float64, and the cached
# plans must give the same bits in two processes (the algorithm comes from a deterministic
# heuristic and never reduces in place into the output).
_GEMM_MODES_SCRIPT = r"""
import hashlib, sys, torch, torch.nn.functional as F, convt_op
sys.path.insert(0, sys.argv[1])
from cases import Case
cases = [Case(3, 128, 64, 4, 4, (4, 4), (2, 2), (1, 1)),
         Case(2, 128, 64, 4, 4, (4, 4), (2, 2), (1, 1), layout="channels_last"),
         Case(2, 64, 32, 5, 7, (2, 2), (2, 2)),
         Case(2, 128, 64, 3, 3, (2, 2), (2, 2))]
for case in cases:
    for dtype, tf32 in ((torch.float32, True), (torch.float32, False), (torch.bfloat16, False)):
        torch.backends.cudnn.allow_tf32 = tf32
        x, w, b = case.make(dtype, "cuda", seed=61)
        x.requires_grad_(); w.requires_grad_(); b.requires_grad_()
        y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        go = torch.randn(y.shape, generator=torch.Generator().manual_seed(62), dtype=torch.float64)
        y.backward(go.to("cuda", dtype).contiguous(memory_format=torch.channels_last
                   if case.layout == "channels_last" else torch.contiguous_format))
        leaves = [t.detach().cpu().double().requires_grad_() for t in (x, w, b)]
        ref = F.conv_transpose2d(*leaves, **case.kwargs())
        ref.backward(go)
        got = (y, x.grad, w.grad, b.grad)
        err = max(((g.detach().cpu().double() - r).norm() / r.norm()).item()
                  for g, r in zip(got, (ref, *(t.grad for t in leaves))))
        digest = hashlib.sha1(b"".join(g.detach().float().cpu().numpy().tobytes() for g in got)).hexdigest()
        print(case.id, dtype, tf32, err, digest)
"""


def test_gemm_cublaslt_and_legacy_modes():
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    runs = {mode: run_python(_GEMM_MODES_SCRIPT, tests_dir, env_extra={"CONVT_GEMM_LT": mode}).split("\n")
            for mode in ("1", "0")}
    again = run_python(_GEMM_MODES_SCRIPT, tests_dir, env_extra={"CONVT_GEMM_LT": "1"}).split("\n")
    assert len(runs["1"]) > 12 and runs["1"] == again, "cublasLt plans: not bit-identical across processes"
    # The default plans may use a 32 MiB workspace (split-K); the plans of a 1 MiB bound
    # (CONVT_GEMM_WORKSPACE_MB=1, PyTorch's own workspace) are accurate and bit-identical across
    # processes too.
    ws = [run_python(_GEMM_MODES_SCRIPT, tests_dir, env_extra={"CONVT_GEMM_WORKSPACE_MB": "1"}).split("\n")
          for _ in range(2)]
    assert len(ws[0]) > 12 and ws[0] == ws[1], "1 MiB workspace plans: not bit-identical across processes"
    runs["1, 1 MiB workspace"] = ws[0]
    for mode, lines in runs.items():
        for line in filter(None, lines):
            case_id, dtype, tf32, err, _ = line.split()
            tol = TOLERANCE[torch.bfloat16] if "bfloat16" in dtype else (
                TOLERANCE["tf32"] if tf32 == "True" else TOLERANCE[torch.float32])
            assert float(err) <= tol, f"CONVT_GEMM_LT={mode} {case_id} {dtype} tf32={tf32}: {err} > {tol}"


def profiled_backward_bf16(case: Case, seed: int, mask):
    """bfloat16 gradients of `case` under the CUDA profiler: (gradients, float64 references,
    the names of the kernels that ran)."""
    x, w, b = case.make(torch.bfloat16, DEVICE, seed=seed)
    go = random_like_output(case, reference(x, w, b, case).shape, torch.bfloat16, seed=seed + 1,
                            channels_last=case.output_is_channels_last())
    refs = reference_grads(x, w, b, go, case)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        grads = backward_op(go, x, w, *op_args(case), mask)
        torch.cuda.synchronize()
    return grads, refs, [e.key for e in prof.key_averages()]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_backward_columns_default_dispatch():
    """The DCGAN-like cases take the columns path by default (the rearranging kernel runs):
    NCHW and channels_last 4 x 4 images, and 12 x 12 images in bfloat16."""
    if os.environ.get("CONVT_BWD_COLS", "") == "off" or os.environ.get("CONVT_BWD_PATH"):
        pytest.skip("a test knob sends the backward elsewhere")
    for case in (COLS_CASES[0], COLS_CASES[5], COLS_CASES[6]):
        grads, refs, kernels = profiled_backward_bf16(case, 51, [True, True, True])
        # channels_last operands: the channels_last columns, no transpose to NCHW.
        cl = case.layout == "channels_last"
        # NCHW: the per-plane kernel (these planes fit in its shared memory).
        assert any(("im2col_cl_kernel" if cl else "space_to_depth_plane_kernel") in k for k in kernels), (case.id, kernels)
        assert not (cl and any("nhwc_to_nchw" in k for k in kernels)), (case.id, kernels)
        # NCHW batches: the input as [Cin][N][hw] and grad_input from [Cin][N][hw] by layout.cu's
        # outer-dimension swap (not at::Tensor::contiguous()).
        assert cl or any("swap_outer_kernel" in k for k in kernels), (case.id, kernels)
        for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
            assert_close_to(got, ref, TOLERANCE[torch.bfloat16], name)


# Small 16-bit channels_last images at least 16 wide (DCGAN's 16 x 16 layer), which the columns
# rule would otherwise take: grad_input as the warp-specialized forward over grad_output's residues
# read in place, grad_weight on the warp-specialized kernel's 16- and 32-column tiles
# (backward.cu small_images_on_ws); CONVT_BWD_SMALL_WS=0 keeps the columns. k4 s2 p1 at 16 x 16
# (TX 16) with a bias; k3 s2 with output padding at 12 x 20 (TX 32) with 72 output channels.
SMALL_WS_CASES = [
    Case(2, 128, 64, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(2, 128, 72, 12, 20, (3, 3), (2, 2), (1, 1), (1, 1), bias=False, layout="channels_last"),
]


@pytest.mark.parametrize("config", S2D_CONFIGS, ids=[c[0] for c in S2D_CONFIGS])
@pytest.mark.parametrize("case", SMALL_WS_CASES, ids=[c.id for c in SMALL_WS_CASES])
def test_backward_small_images(case: Case, config):
    check_backward_both_gradients(case, config)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("case", SMALL_WS_CASES, ids=[c.id for c in SMALL_WS_CASES])
def test_backward_small_images_dispatch(case: Case):
    """bfloat16, every gradient: the warp-specialized kernels and no columns, nothing transposed
    (or, under CONVT_BWD_SMALL_WS=0, the channels_last columns); against float64."""
    skip_under_knobs("CONVT_BWD_PATH", "CONVT_BWD_GW", "CONVT_BWD_GW_WS", "CONVT_BWD_COLS", "CONVT_BWD_GI",
                     "CONVT_BWD_GI_PLANES", "CONVT_FWD_PATH", "CONVT_FWD_WS")
    grads, refs, kernels = profiled_backward_bf16(case, 71, [True, True, case.bias])
    if os.environ.get("CONVT_BWD_SMALL_WS") == "0":
        assert any(re.search(r"im2col_cl_(taps_)?(sums_)?kernel", k) for k in kernels), (case.id, kernels)
    else:
        assert any("grad_weight_ws_kernel" in k for k in kernels), (case.id, kernels)
        assert any("wgmma_ws_fwd_kernel" in k for k in kernels), (case.id, kernels)
        assert not any("im2col" in k or "nhwc_to_nchw" in k or "copy_planes" in k for k in kernels), (case.id, kernels)
    for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
        if ref is not None:
            assert_close_to(got, ref, TOLERANCE[torch.bfloat16], name)


@SM90_ONLY
def test_backward_small_images_knob_off():
    """CONVT_BWD_SMALL_WS=0 (a fresh pytest process): the same cases on the columns."""
    skip_under_knobs("CONVT_BWD_SMALL_WS", "CONVT_BWD_PATH", "CONVT_BWD_COLS")
    run_pytest([this_file("test_backward_small_images_dispatch")], dict(CONVT_BWD_SMALL_WS="0"), len(SMALL_WS_CASES))


# NCHW grad_output's columns by the per-plane kernel (backward_s2d_gemm.cu
# space_to_depth_plane_kernel: a grad_output plane staged in shared memory, every tap's S row
# segment written from it) and its knob CONVT_S2D_PLANE: unset (where a plane fits and the paired
# kernel == stride kernel does not apply), 0 (never: the vector or element kernels), all (ahead
# of the paired kernel too), padded / dense (the default choice of kernel, staged rows of Wout + 1
# elements always / never; by default padded for 16-bit rows of >= 64 bytes: plane_rows_padded).
# Cases: DCGAN's 4 x 4 layer (stores of 4 elements), rows of 16 (16-byte stores) with 16-byte plane
# loads and outputs 32 wide (padded rows in bf16 by default), odd widths and padding
# (single-element stores and loads), dilation, and the paired kernel's kernel == stride case.
# Fresh processes; all three gradients against float64 in bf16 and float32 (TF32), and which
# kernel wrote the columns.
_S2D_PLANE_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import backward_check
torch.backends.cudnn.allow_tf32 = True
cases = [Case(3, 128, 64, 4, 4, (4, 4), (2, 2), (1, 1)),
         Case(2, 128, 64, 8, 16, (4, 4), (2, 2), (1, 1)),
         Case(2, 128, 72, 5, 7, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), bias=False),
         Case(2, 160, 64, 6, 5, (3, 3), (1, 1), (1, 1), (0, 0), (2, 2)),
         Case(3, 64, 48, 9, 16, (2, 2), (2, 2))]
for i, case in enumerate(cases):
    for dtype in (torch.bfloat16, torch.float32):
        err, keys = backward_check(case, dtype, (64, 65))
        kind = ("plane_padded" if any("space_to_depth_plane_kernel" in k and "true>" in k for k in keys) else
                "plane" if any("space_to_depth_plane_kernel" in k for k in keys) else
                "kw2" if any("space_to_depth_kw2_" in k for k in keys) else  # _kernel or (bias) _sums_kernel
                "vec" if any("space_to_depth_vec_kernel" in k for k in keys) else
                "element" if any("space_to_depth_kernel" in k for k in keys) else "none")
        print(i, str(dtype), err, kind)
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_backward_columns_plane_kernel():
    skip_under_knobs("CONVT_S2D_PLANE", "CONVT_BWD_COLS", "CONVT_BWD_S2D", "CONVT_BWD_PATH")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    # The kernel that writes each case's columns with the plane kernel off: the vector kernel
    # where a row is whole 16-byte vectors (W = 16; W = 4 in float32), the paired kernel == stride
    # kernel for the last case, else the element kernel. Strict float32 is not run here.
    without = {0: ("element", "vec"), 1: ("vec", "vec"), 2: ("element", "element"), 3: ("element", "element"),
               4: ("kw2", "kw2")}
    padded_by_rule = {(1, False), (4, False)}  # (case, float32): Wout 32 in bf16 (64-byte rows)
    for knob in (None, "0", "all", "padded", "dense"):
        env = {"CONVT_S2D_PLANE": knob} if knob else {}
        lines = [line for line in run_python(_S2D_PLANE_SCRIPT, tests_dir, env_extra=env).split("\n") if line]
        assert len(lines) == 10, lines
        for line in lines:
            i, dtype, err, kind = line.split(" ")
            tol = TOLERANCE["tf32"] if "float32" in dtype else TOLERANCE[torch.bfloat16]
            assert float(err) <= tol, f"CONVT_S2D_PLANE={knob} case {i} {dtype}: {err} > {tol}"
            off = without[int(i)]["float32" in dtype]
            want = off if knob == "0" or (knob in (None, "padded", "dense") and off == "kw2") else "plane"
            if want == "plane" and (knob == "padded" or (knob in (None, "all") and
                                                         (int(i), "float32" in dtype) in padded_by_rule)):
                want = "plane_padded"
            assert kind == want, (knob, line, want)


# Sparse taps (KH*KW <= SH*SW) with channels_last operands: the channels_last columns + cuBLAS
# by default in every tensor-core dtype and size (backward.cu cols_suitable), where grad_output
# would otherwise be transposed to NCHW for the backward's own kernels. kb1_81's k3 s5 d2 with
# padding (taps outside grad_output), a 2 x 3 kernel at stride 3 x 2 with output_padding, and
# 36 output channels (not whole 16-byte vectors in 16-bit dtypes: the element gather) on one
# image.
SPARSE_CL_CASES = [
    Case(2, 32, 64, 6, 9, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), layout="channels_last"),
    Case(2, 24, 40, 5, 7, (2, 3), (3, 2), (1, 0), (1, 1), (1, 1), layout="channels_last"),
    Case(1, 16, 36, 4, 5, (3, 1), (3, 2), (2, 0), (0, 0), (1, 1), bias=False, layout="channels_last"),
]


@pytest.mark.parametrize("config", S2D_CONFIGS, ids=[c[0] for c in S2D_CONFIGS])
@pytest.mark.parametrize("case", SPARSE_CL_CASES, ids=[c.id for c in SPARSE_CL_CASES])
def test_backward_sparse_taps_channels_last_columns(case: Case, config):
    check_backward_both_gradients(case, config)
    if os.environ.get("CONVT_BWD_COLS", "") == "off" or os.environ.get("CONVT_BWD_PATH"):
        return  # a test knob sends the backward elsewhere: the gradients above still count
    _, dtype, tf32, _ = config
    x, w, b = case.make(dtype, DEVICE, seed=57)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=58, channels_last=True)
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        backward_op(go, x, w, *op_args(case), [True, True, case.bias])
        torch.cuda.synchronize()
    kernels = [e.key for e in prof.key_averages()]
    assert any("im2col_cl_kernel" in k for k in kernels), kernels
    assert not any("nhwc_to_nchw" in k for k in kernels), kernels


# channels_last weights, as nn.Module.to(memory_format=torch.channels_last) leaves them (and
# the benchmark's channels_last rows pass them). The columns backward then gathers grad_output
# tap-major (im2col_cl_taps_kernel, the weight's own [Cin][KH][KW][Cout] order), so that
# grad_input's GEMM reads the weight in place and grad_weight's GEMM writes the channels_last
# grad_weight in place: no copy kernel in the backward. The forward's weight packing (the ws
# forward, forward_wgmma_ws.cu) reads the weight through its strides: no copy there either.
# Cases: DCGAN's k4 s2 p1 (16 taps of whole 16-byte channel runs), 72 channels, 65 channels
# (single-element units), k3 s5 d2 sparse taps with padding (taps outside grad_output), a 3 x 1
# kernel at strides 3 x 2 with 36 channels on one image, kernel == stride (2 x 2), and a 16 x 16
# DCGAN layer that the ws forward takes in bf16. `columns`: bf16 takes the columns backward.
CL_WEIGHT_CASES = [
    (Case(2, 128, 64, 4, 4, (4, 4), (2, 2), (1, 1), layout="channels_last"), True),
    (Case(2, 128, 72, 4, 4, (4, 4), (2, 2), (1, 1), layout="channels_last"), True),
    (Case(2, 128, 65, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), bias=False, layout="channels_last"), True),
    (Case(2, 32, 64, 6, 9, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), layout="channels_last"), True),
    (Case(1, 16, 36, 4, 5, (3, 1), (3, 2), (2, 0), (0, 0), (1, 1), bias=False, layout="channels_last"), True),
    (Case(2, 64, 40, 3, 5, (2, 2), (2, 2), layout="channels_last"), True),
    (Case(2, 128, 64, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last"), False),
]
_COPY_KERNEL = re.compile(r"direct_copy|copy_kernel|nhwc_to_nchw|nchw_to_nhwc")


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", S2D_CONFIGS, ids=[c[0] for c in S2D_CONFIGS])
@pytest.mark.parametrize("case,columns", CL_WEIGHT_CASES, ids=[c.id for c, _ in CL_WEIGHT_CASES])
def test_channels_last_weight(case: Case, columns: bool, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=71)
    w = w.contiguous(memory_format=torch.channels_last)
    assert not w.is_contiguous()
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=72, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    mask = [True, True, case.bias]
    with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        grads = backward_op(go, x, w, *op_args(case), mask)
        torch.cuda.synchronize()
    for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
        if ref is not None:
            assert_close_to(got, ref, tol, name)
    # grad_weight in the weight's layout (what autograd's accumulation keeps without a copy).
    assert grads[1].is_contiguous(memory_format=torch.channels_last), grads[1].stride()
    with conv_tf32(tf32):
        again = backward_op(go, x, w, *op_args(case), mask)
        gw_alone = backward_op(go, x, w, *op_args(case), [False, True, False])[1]
    for got, rerun in zip(grads, again):
        assert torch.equal(got, rerun), "not bit-identical run to run"
    assert_close_to(gw_alone, refs[1], tol, "grad_weight alone")
    if dtype == torch.bfloat16 and columns and not (
        os.environ.get("CONVT_BWD_COLS", "") == "off" or os.environ.get("CONVT_BWD_PATH")
    ):
        kernels = [e.key for e in prof.key_averages()]
        # (With a bias at kernel == stride, the summing copy.)
        assert any(re.search(r"im2col_cl_taps_(sums_)?kernel", k) for k in kernels), kernels
        assert not any(_COPY_KERNEL.search(k) for k in kernels), kernels

    # The forward: the channels_last weight, and a non-dense one (every other element of a
    # wider tensor: the packing's strides in full).
    wide = torch.empty((*w.shape[:-1], 2 * w.shape[-1]), dtype=dtype, device=DEVICE)
    wide[..., ::2] = w
    for weight, name in ((w, "channels_last weight"), (wide[..., ::2], "strided weight")):
        with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            y = op(x, weight, b, *op_args(case))
            torch.cuda.synchronize()
        assert_close_to(y, reference(x, w, b, case), tol, f"forward, {name}")
        if dtype == torch.bfloat16 and not columns and weight is w and not any(
            os.environ.get(k) for k in ("CONVT_FWD_PATH", "CONVT_FWD_WS")
        ):
            kernels = [e.key for e in prof.key_averages()]
            assert any("wgmma_ws_fwd_kernel" in k for k in kernels), kernels
            assert not any(_COPY_KERNEL.search(k) for k in kernels), kernels


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_backward_kernel_equals_stride_paired_columns():
    """NCHW 2 x 2 layers rearrange grad_output with the paired-column kernel (one vector load
    per piece of a row, its even and odd columns stored to the two kj rows of S)."""
    if os.environ.get("CONVT_BWD_S2D", "") == "off" or os.environ.get("CONVT_BWD_PATH"):
        pytest.skip("a test knob sends the backward elsewhere")
    grads, refs, kernels = profiled_backward_bf16(S2D_CASES[9], 53, [True, True, False])
    assert any("space_to_depth_kw2_kernel" in k for k in kernels), kernels
    for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight")):
        assert_close_to(got, ref, TOLERANCE[torch.bfloat16], name)


@pytest.mark.parametrize("config", S2D_CONFIGS, ids=[c[0] for c in S2D_CONFIGS])
def test_backward_kernel_equals_stride_unaligned_grad_output(config):
    """A contiguous grad_output one element past an aligned address: the paired-column kernel
    declines (its vector loads need alignment) and the generic rearrangement runs, correctly."""
    _, dtype, tf32, tol = config
    case = S2D_CASES[9]
    x, w, b = case.make(dtype, DEVICE, seed=55)
    shape = reference(x, w, b, case).shape
    base = random_like_output(case, (shape.numel() + 1,), dtype, seed=56, channels_last=False)
    go = base[1:].view(shape)
    refs = reference_grads(x, w, b, go, case)
    with conv_tf32(tf32):
        grads = backward_op(go, x, w, *op_args(case), [True, True, True])
    for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
        assert_close_to(got, ref, tol, name)


@pytest.mark.parametrize("config", S2D_CONFIGS, ids=[c[0] for c in S2D_CONFIGS])
def test_backward_kernel_equals_stride_channels_last_unaligned_grad_output(config):
    """channels_last grad_output one element past an aligned address: in 16-bit types the
    channel-pair loads of the channels_last space-to-depth decline (they need 4 bytes) and the
    element kernel runs, correctly; float keeps its single-channel loads."""
    _, dtype, tf32, tol = config
    case = S2D_CASES[5]
    x, w, b = case.make(dtype, DEVICE, seed=57)
    n, c, h, wo = reference(x, w, b, case).shape
    base = random_like_output(case, (n * c * h * wo + 1,), dtype, seed=58, channels_last=False)
    go = base[1:].view(n, h, wo, c).permute(0, 3, 1, 2)
    assert go.is_contiguous(memory_format=torch.channels_last)
    refs = reference_grads(x, w, b, go, case)
    with conv_tf32(tf32):
        grads = backward_op(go, x, w, *op_args(case), [True, True, True])
    for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
        assert_close_to(got, ref, tol, name)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_backward_kernel_equals_stride_channels_last_in_place():
    """channels_last operands of a kernel == stride layer: the default dispatch takes the
    channels_last space-to-depth variant, and nothing transposes them to NCHW."""
    if os.environ.get("CONVT_BWD_S2D", "") == "off" or os.environ.get("CONVT_BWD_PATH"):
        pytest.skip("a test knob sends the backward elsewhere")
    grads, refs, kernels = profiled_backward_bf16(S2D_CASES[6], 49, [True, True, False])
    assert any("space_to_depth_cl_kernel" in k for k in kernels), kernels
    assert not any("nhwc_to_nchw" in k for k in kernels), kernels
    for got, ref, name in zip(grads[:2], refs[:2], ("grad_input", "grad_weight")):
        assert_close_to(got, ref, TOLERANCE[torch.bfloat16], name)
    assert grads[0].is_contiguous(memory_format=torch.channels_last)


# channels_last operands of the backward's own kernels go through layout.cu's tiled
# transposes. The first two: channel counts of neither 16-byte vector kind (36 / 40 / 70 / 33
# channels of 8 bytes, or not whole 16-byte chunks), so the element kernel's partial 32 x 32
# tiles. The last two take the vector kernel for 2- and 4-byte types (C * size a multiple of
# 16 bytes): 72 channels leave a partial channel tile (64 + 8 for 16-bit types, 32 + 32 + 8
# for float), the pixel counts partial 128-pixel tiles, and 13 x 17 an odd plane (2-byte
# stores at odd offsets).
CL_BACKWARD_CASES = [
    Case(3, 40, 36, 9, 13, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 33, 70, 7, 5, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False, layout="channels_last"),
    Case(2, 64, 72, 11, 13, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), layout="channels_last"),
    Case(3, 24, 40, 7, 9, (3, 3), (2, 2), (1, 1), (0, 0), (1, 1), bias=False, layout="channels_last"),
]


def transposes_with_vectors(case: Case, dtype: torch.dtype) -> bool:
    """Whether layout.cu's vector kernel takes both operands' channels_last -> NCHW copies."""
    size = torch.tensor([], dtype=dtype).element_size()
    return size in (2, 4) and all(c * size % 16 == 0 for c in (case.Cin, case.Cout))


@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", CL_BACKWARD_CASES, ids=[c.id for c in CL_BACKWARD_CASES])
def test_backward_channels_last_operands(case: Case, config):
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=43)
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=44, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    with conv_tf32(tf32):
        grads, _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [True, True, case.bias]))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            again = backward_op(go, x, w, *op_args(case), [True, True, case.bias])
            torch.cuda.synchronize()
    for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
        if ref is not None:
            assert_close_to(got, ref, tol, name)
    assert grads[0].is_contiguous(memory_format=torch.channels_last)
    for got, rerun in zip(grads, again):
        if got is not None and got.numel():
            assert torch.equal(got, rerun)
    kernels = [e.key for e in prof.key_averages()]
    if not os.environ.get("CONVT_BWD_PATH"):
        vec = transposes_with_vectors(case, dtype)
        assert any(("nhwc_to_nchw_vec_kernel" if vec else "nhwc_to_nchw_kernel") in k for k in kernels), kernels


# --------------------------------------------------------------------------- grad_bias

# grad_bias alone (backward_grad_bias.cu): NCHW planes whose rows leave unaligned heads and
# tails (odd Hout * Wout) and planes of several segments; channels_last with channel counts
# that take the vector kernel (a multiple of 16 bytes: 64, 72, 520 channels, one to three
# tiles) and one that does not (70).
BIAS_CASES = [
    ("nchw_odd_plane", (3, 5, 37, 41), False),
    ("nchw_segments", (2, 3, 100, 101), False),
    ("nchw_tiny_plane", (4, 6, 1, 3), False),
    ("nchw_small_aligned_planes", (6, 5, 4, 14), False),
    ("nchw_aligned_segments", (3, 4, 64, 72), False),
    ("cl_64", (2, 64, 9, 11), True),
    ("cl_72", (3, 72, 7, 5), True),
    ("cl_520", (2, 520, 5, 6), True),
    ("cl_70", (2, 70, 6, 7), True),
    ("cl_512_splits", (2, 512, 16, 16), True),
]


@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
@pytest.mark.parametrize("name,shape,cl", BIAS_CASES, ids=[c[0] for c in BIAS_CASES])
def test_grad_bias_alone(name, shape, cl, config):
    """grad_bias by itself against the float64 sum, bits equal run to run."""
    _, dtype, tf32, tol = config
    N, C, Ho, Wo = shape
    # A 1 x 1 kernel at stride 1: the output is the input's size, so grad_output has `shape`.
    case = Case(N, C, C, Ho, Wo, (1, 1), layout="channels_last" if cl else "contiguous")
    x, w, b = case.make(dtype, DEVICE, seed=61)
    go = random_like_output(case, shape, dtype, seed=62, channels_last=cl)
    ref = go.detach().to("cpu", torch.float64).sum((0, 2, 3))
    with conv_tf32(tf32):
        (gi, gw, gb), _ = run_poisoned(lambda: backward_op(go, x, w, *op_args(case), [False, False, True]))
        again = backward_op(go, x, w, *op_args(case), [False, False, True])[2]
    assert gi.shape == (0,) and gw.shape == (0,)
    assert_close_to(gb, ref, tol, "grad_bias")
    assert torch.equal(gb, again), "grad_bias not bit-identical run to run"


# --------------------------------------------------------------------------- depthwise backward

# One input and one output channel per group: both gradients in one pass over grad_output
# (backward_depthwise.cu). The depthwise grid (Cin 4, channel multiplier 1 or 2 alternating:
# 1 takes the plane kernel in all three layouts, 2 the generic kernels; kernels 1 x 1, 2 x 4
# and 3 x 5 the generic variant, 3 x 3 the fixed one), then: the channels_last kernel (dense
# channels_last, even C >= 32) with a partial second channel chunk; odd C on channels_last
# (the plane kernel through channels_last strides); the fixed 4 x 4 and generic 5 x 5 / 2 x 3
# variants; large planes cut into bands of rows (several workspace splits per image);
# unbatched input.
DW_BACKWARD_CASES = DEPTHWISE_CASES + [
    Case(2, 64, 64, 9, 11, (3, 3), (2, 2), (1, 1), (1, 1), groups=64, layout="channels_last"),
    Case(2, 66, 66, 8, 5, (4, 4), (2, 2), (1, 1), (0, 0), groups=66, bias=False, layout="channels_last"),
    Case(3, 96, 96, 6, 7, (5, 5), (3, 2), (2, 1), (0, 1), (1, 2), groups=96, layout="channels_last"),
    Case(2, 33, 33, 7, 9, (3, 3), (2, 2), (1, 1), (1, 1), groups=33, layout="channels_last"),
    Case(2, 8, 8, 10, 12, (4, 4), (2, 2), (1, 1), (0, 0), groups=8),
    Case(2, 6, 6, 9, 8, (2, 3), (1, 2), (0, 1), (0, 1), (2, 1), groups=6, layout="noncontiguous"),
    Case(1, 2, 2, 200, 300, (3, 3), (1, 1), (1, 1), groups=2),
    Case(1, 64, 64, 40, 50, (3, 3), (2, 2), (1, 1), (1, 1), groups=64, layout="channels_last"),
    Case(None, 8, 8, 6, 5, (3, 3), (2, 2), (1, 1), (1, 1), groups=8),
    # grad_bias beside the plane kernel: every output row reached by two or three taps (5 x 3,
    # stride 2 and dilation 3 along the height: the first-pair rule steps two taps and three
    # rows; an output padding); some output rows and columns reached by no tap (1 x 1 at
    # stride 2 with an output padding), so grad_bias_sum runs.
    Case(2, 4, 4, 40, 30, (5, 3), (2, 1), (3, 1), (1, 0), (3, 1), groups=4),
    Case(2, 6, 6, 6, 5, (1, 1), (2, 2), (0, 0), (1, 1), groups=6),
]


@pytest.mark.parametrize("config", DTYPE_CONFIGS, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", DW_BACKWARD_CASES, ids=[c.id for c in DW_BACKWARD_CASES])
def test_depthwise_backward(case: Case, config):
    """Values against float64 into poisoned buffers, bits equal run to run, grad_weight alone."""
    check_backward_both_gradients(case, config)
    _, dtype, tf32, tol = config
    x, w, b = case.make(dtype, DEVICE, seed=47)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=48,
                            channels_last=case.output_is_channels_last())
    with conv_tf32(tf32):
        gi, gw, gb = backward_op(go, x, w, *op_args(case), [True, False, False])
    assert gw.shape == (0,) and gb.shape == (0,)
    assert_close_to(gi, reference_grads(x, w, b, go, case)[0], tol, "grad_input alone")


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_depthwise_backward_staged_needs_aligned_input():
    """The staged kernel copies x in 16-byte pieces where grad_weight is asked for: an input that starts
    8 bytes past a 16-byte boundary (a view into a larger buffer) takes the channels kernel instead,
    with every gradient right; grad_input alone (x not read) stays staged."""
    if os.environ.get("CONVT_BWD_DW") or os.environ.get("CONVT_BWD_PATH"):
        pytest.skip("a test knob sends the backward elsewhere")
    case = DW_BACKWARD_CASES[-11]  # channels_last, C = 64, 3 x 3 at stride 2
    x, w, b = case.make(torch.bfloat16, DEVICE, seed=81)
    n, c, h, wd = x.shape
    buf = torch.empty(x.numel() + 4, dtype=x.dtype, device=DEVICE)
    x = buf[4:].view(n, h, wd, c).permute(0, 3, 1, 2).copy_(x)  # channels_last, 8-byte aligned start
    assert x.is_contiguous(memory_format=torch.channels_last) and x.data_ptr() % 16 == 8
    go = random_like_output(case, reference(x, w, b, case).shape, torch.bfloat16, seed=82, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    for mask, want in (([True, True, case.bias], "depthwise_backward_channels_kernel"),
                       ([True, False, False], "depthwise_backward_staged_kernel")):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            grads = backward_op(go, x, w, *op_args(case), mask)
            torch.cuda.synchronize()
        kernels = [e.key for e in prof.key_averages()]
        assert any(want in k for k in kernels), (mask, kernels)
        for asked, got, ref, name in zip(mask, grads, refs, ("grad_input", "grad_weight", "grad_bias")):
            if asked and ref is not None:
                assert_close_to(got, ref, TOLERANCE[torch.bfloat16], f"{name}, mask {mask}")


def taps_cover(n_in: int, n_out: int, stride: int, pad: int, k: int, dil: int) -> bool:
    """Every output coordinate is i * stride - pad + t * dil for some input i and tap t
    (backward_depthwise.cu, depthwise_bias_fused)."""
    return all(any((o + pad - t * dil) >= 0 and (o + pad - t * dil) % stride == 0 and
                   (o + pad - t * dil) // stride < n_in for t in range(k)) for o in range(n_out))


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("case", [c for c in DW_BACKWARD_CASES if c.bias and c.groups == c.Cin == c.Cout],
                         ids=[c.id for c in DW_BACKWARD_CASES if c.bias and c.groups == c.Cin == c.Cout])
def test_depthwise_backward_bias_fused(case: Case):
    """grad_bias rides along in the plane kernel and in the channels kernel (no grad_bias pass of
    its own) exactly where the taps reach every grad_output element; elsewhere (rows or columns
    no tap reaches) grad_bias_sum runs. Every gradient against float64, grad_bias also alone
    beside grad_input."""
    if os.environ.get("CONVT_BWD_DW") or os.environ.get("CONVT_BWD_PATH"):
        pytest.skip("a test knob sends the backward elsewhere")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = case.kernel, case.stride, case.padding, case.dilation
    oh = (case.H - 1) * sh - 2 * ph + dh * (kh - 1) + case.output_padding[0] + 1
    ow = (case.W - 1) * sw - 2 * pw + dw * (kw - 1) + case.output_padding[1] + 1
    covered = taps_cover(case.H, oh, sh, ph, kh, dh) and taps_cover(case.W, ow, sw, pw, kw, dw)
    for mask in ([True, True, True], [True, False, True]):
        grads, refs, kernels = profiled_backward_bf16(case, 61, mask)
        plane = any("depthwise_backward_plane_kernel" in k for k in kernels)
        assert plane or any("depthwise_backward_channels_kernel" in k or "depthwise_backward_staged_kernel" in k
                            for k in kernels), (case.id, kernels)
        fused = covered  # either kernel
        assert any("grad_bias_partial" in k for k in kernels) == (not fused), (case.id, mask, kernels)
        for got, ref, name, want in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias"), mask):
            if want:
                assert_close_to(got, ref, TOLERANCE[torch.bfloat16], name)


def assert_mask_gradients(grads, again, refs, mask, tol):
    """The gradients `mask` asks for against their float64 references and bit-equal to a second run's;
    the others empty."""
    for got, rerun, ref, name, want in zip(grads, again, refs, ("grad_input", "grad_weight", "grad_bias"), mask):
        if want:
            assert_close_to(got, ref, tol, f"{name}, mask {mask}")
            assert torch.equal(got, rerun), f"{name} not bit-identical run to run"
        else:
            assert got.numel() == 0, name


# grad_bias with every combination of the other two gradients.
BIAS_MASKS = ([True, True, True], [False, True, True], [True, False, True], [False, False, True])


def backward_each_bias_mask(go, x, w, case: Case, tf32: bool):
    """For each mask of BIAS_MASKS: (mask, the gradients, a second call's gradients for bit equality,
    the CUDA kernels the first call ran)."""
    for mask in BIAS_MASKS:
        with conv_tf32(tf32), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            grads = backward_op(go, x, w, *op_args(case), mask)
            torch.cuda.synchronize()
        with conv_tf32(tf32):
            again = backward_op(go, x, w, *op_args(case), mask)
        yield mask, grads, again, [e.key for e in prof.key_averages()]


# grad_bias from the loads of a pass that already reads all of grad_output (backward.cu,
# bias_fused_mode): "cl_copy", the channels_last copy of an NCHW grad_output that grad_input's
# residues read (float32 TF32 where grad_input is asked for, kernel a multiple of the stride;
# 16-bit takes that route from 2^24 grad_output elements only, so here it keeps its bias pass);
# "kw2", the paired-column space-to-depth copy of the
# columns backward (kernel == stride 2 x 2, NCHW), made for either weight-side gradient. Edge
# tiles: pixel counts not a multiple of the copy's 128-pixel tile, channels past a tile's 32
# words. The paired copy cuts each channel's vectors into runs of over 1024 (one block step)
# where there are enough: the 20 x 24 case in two runs that end inside a plane (float32), the
# 40 x 24 one in three (float32, at plane ends) or two (bf16, inside a plane); 512 channels of
# one run each. "s1_copy": at stride 1 grad_input's forward copies an NCHW grad_output to
# channels_last itself where forward.cu's route takes it (16-bit; float32 with at most 32 or at
# least 128 output channels, here the layer's 32 input channels); backward.cu makes that copy, with
# the sums, in its place (64 input channels: float32 keeps its bias pass). An odd and an even pixel
# count (the 16-bit copy's pixel pairs).
BIAS_FUSED_CASES = [
    (Case(2, 64, 32, 10, 12, (4, 4), (2, 2), (1, 1)), "cl_copy"),
    (Case(3, 32, 48, 9, 7, (4, 4), (2, 2), (1, 1), (1, 1)), "cl_copy"),
    (Case(3, 64, 48, 9, 16, (2, 2), (2, 2)), "kw2"),
    (Case(7, 64, 512, 3, 4, (2, 2), (2, 2)), "kw2"),
    (Case(3, 64, 32, 20, 24, (2, 2), (2, 2)), "kw2"),
    (Case(3, 64, 32, 40, 24, (2, 2), (2, 2)), "kw2"),
    (Case(2, 64, 48, 10, 12, (3, 3), (1, 1), (1, 1)), "s1_copy"),
    (Case(2, 32, 48, 9, 13, (3, 5), (1, 1), (1, 2)), "s1_copy"),
]
BIAS_FUSED_CONFIGS = [DTYPE_CONFIGS[0], DTYPE_CONFIGS[3]]  # float32 (TF32), bf16


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("config", BIAS_FUSED_CONFIGS, ids=[c[0] for c in BIAS_FUSED_CONFIGS])
@pytest.mark.parametrize("case,kind", BIAS_FUSED_CASES, ids=[c.id for c, _ in BIAS_FUSED_CASES])
def test_backward_bias_fused(case: Case, kind: str, config):
    """Every mask with grad_bias: no grad_bias pass of its own exactly where the copy that sums it
    runs (and CONVT_BWD_BIAS_FUSED=0 turns that off); every gradient against float64, bits equal
    run to run."""
    skip_under_knobs("CONVT_BWD_PATH", "CONVT_BWD_GI", "CONVT_BWD_GI_VIA_CL", "CONVT_BWD_COLS", "CONVT_BWD_S2D",
                     "CONVT_S2D_PLANE", "CONVT_FWD_PATH", "CONVT_FWD_WS", "CONVT_BWD_GW_WS", "CONVT_FWD_VIA_CL")
    _, dtype, tf32, tol = config
    knob_off = os.environ.get("CONVT_BWD_BIAS_FUSED") == "0"
    # CONVT_BWD_GW_VIA_CL=all: 16-bit grad_weight through channels_last copies at any size where the
    # ws kernel plans, stride 1 included, so the copy (and its sums) may run for bf16 too: then only
    # "one of the two".
    loose = kind in ("cl_copy", "s1_copy") and dtype != torch.float32 and os.environ.get("CONVT_BWD_GW_VIA_CL") == "all"
    x, w, b = case.make(dtype, DEVICE, seed=81)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=82, channels_last=False)
    refs = reference_grads(x, w, b, go, case)
    for mask, grads, again, kernels in backward_each_bias_mask(go, x, w, case, tf32):
        summing = "space_to_depth_kw2_sums_kernel" if kind == "kw2" else "nchw_to_nhwc_sums_kernel"
        routed = dtype != torch.float32 or case.Cin <= 32 or case.Cin >= 128  # s1_copy: forward.cu's route
        expect = not knob_off and {"cl_copy": mask[0] and dtype == torch.float32, "kw2": mask[0] or mask[1],
                                   "s1_copy": mask[0] and routed}[kind]
        if loose:
            expect = any(summing in k for k in kernels)
        assert any(summing in k for k in kernels) == expect, (case.id, mask, kernels)
        assert any("grad_bias_partial" in k for k in kernels) == (not expect), (case.id, mask, kernels)
        assert_mask_gradients(grads, again, refs, mask, tol)


@SM90_ONLY
@pytest.mark.parametrize("knob", ["CONVT_BWD_BIAS_FUSED=0", "CONVT_BWD_GW_VIA_CL=all"])
def test_backward_bias_fused_knob(knob):
    """In a fresh pytest process: CONVT_BWD_BIAS_FUSED=0, grad_bias by its own pass everywhere;
    CONVT_BWD_GW_VIA_CL=all, bf16 grad_weight through the channels_last copies (their sums, 16-bit
    pixel pairs or single pixels) on the small cases too."""
    name, value = knob.split("=")
    skip_under_knobs(name)
    run_pytest([this_file("test_backward_bias_fused")], {name: value}, len(BIAS_FUSED_CASES) * len(BIAS_FUSED_CONFIGS))


_BIAS_FUSED_FP64_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
from cases import Case
from fresh_process import backward_check
err, keys = backward_check(Case(3, 64, 32, 20, 24, (2, 2), (2, 2)), torch.float64, (83, 84))
print(err, int(any("space_to_depth_kw2_sums_kernel" in k for k in keys)))
"""


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_backward_bias_fused_float64():
    """CONVT_BWD_S2D=on (a fresh process) sends a float64 2 x 2 layer to the columns backward: the
    paired copy sums grad_bias in double (the partials in grad_bias's accumulation type)."""
    skip_under_knobs("CONVT_BWD_S2D", "CONVT_BWD_PATH", "CONVT_S2D_PLANE", "CONVT_BWD_BIAS_FUSED")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    err, summed = run_python(_BIAS_FUSED_FP64_SCRIPT, tests_dir, env_extra={"CONVT_BWD_S2D": "on"}).split()
    assert float(err) <= TOLERANCE[torch.float64], err
    assert summed == "1"


# grad_bias from the warp-specialized grad_weight kernel's grad_output stages (backward_grad_weight_ws.cu:
# m64n8 MMAs of each box against ones, the halo parts by consumer 0): 16-bit channels_last layers
# that take that kernel, where every grad_output residue subgrid of the stride holds taps and the
# pixel tiles' regions reach its edges (ws_bias_covered). Inputs at least 24 wide, or narrower with at
# least 32 channels a side (the dispatch's rule for the ws kernel). Cases: kernel 4 x 4 stride 2 (four residues in two block kinds, kb2_5's geometry; 96 input
# channels: two input-channel tiles, the first sums), 3 x 3 stride 2 with an output padding (four
# residues of 1, 2, 2 and 4 taps in one kind, kb2_2's), 5 x 5 stride 2 (several kinds: a residue
# summed by its first kind only), stride 1 with two column tiles and a partial second channel tile
# (Cout 72), a batch of 8 x 40 x 70 images (several splits of pixel tiles), dilation 2 at
# stride 2 (the taps reach one residue of four: grad_bias keeps its own pass), and narrow images
# on 16- and 32-column tiles (DCGAN's k4 s2 at 16 x 16; k3 s2 at 11 x 7; stride 1 at 10 x 27).
WS_BIAS_CASES = [
    Case(2, 96, 32, 10, 30, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(3, 64, 48, 9, 27, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 64, 64, 9, 29, (5, 5), (2, 2), (2, 2), (1, 1), layout="channels_last"),
    Case(2, 64, 72, 11, 70, (3, 3), (1, 1), (1, 1), layout="channels_last"),
    Case(8, 64, 64, 40, 70, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 64, 32, 10, 30, (3, 3), (2, 2), (1, 1), (0, 0), (2, 2), layout="channels_last"),
    Case(4, 64, 64, 16, 16, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    Case(3, 64, 48, 11, 7, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    Case(2, 64, 72, 10, 27, (3, 3), (1, 1), (1, 1), layout="channels_last"),
]
WS_BIAS_CONFIGS = [DTYPE_CONFIGS[3], DTYPE_CONFIGS[4]]  # bf16, fp16


def ws_bias_covered(case: Case) -> bool:
    """Every residue r of the stride holds a tap, and along each dimension its taps' subgrid
    offsets q = floor((t d - p) / s) reach from row 0 (min q <= 0) to its last row (max q + the
    input's extent >= the subgrid's rows): the ws kernel's own regions then cover grad_output
    (plan_gw_ws's bias_ok; it differs only where some rows are read by no tap)."""
    for n_in, k, s, p, d, op in zip((case.H, case.W), case.kernel, case.stride, case.padding, case.dilation,
                                    case.output_padding):
        n_out = (n_in - 1) * s - 2 * p + d * (k - 1) + op + 1
        per_residue = {}
        for t in range(k):
            a = t * d - p
            per_residue.setdefault(a % s, []).append(a // s)
        if len(per_residue) != s:
            return False
        for r, qs in per_residue.items():
            rows = -(-(n_out - r) // s)
            if min(qs) > 0 or max(qs) + n_in < rows:
                return False
    return True


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("config", WS_BIAS_CONFIGS, ids=[c[0] for c in WS_BIAS_CONFIGS])
@pytest.mark.parametrize("case", WS_BIAS_CASES, ids=[c.id for c in WS_BIAS_CASES])
def test_backward_bias_fused_ws(case: Case, config):
    """Every mask with grad_bias: the ws grad_weight kernel runs wherever grad_weight is asked for,
    and grad_bias has no pass of its own exactly where it also sums grad_bias (covered, knob not 0);
    every gradient against float64, bits equal run to run."""
    skip_under_knobs("CONVT_BWD_PATH", "CONVT_BWD_GW", "CONVT_BWD_COLS", "CONVT_BWD_S2D", "CONVT_BWD_GW_WS")
    _, dtype, tf32, tol = config
    knob_off = os.environ.get("CONVT_BWD_BIAS_FUSED") == "0"
    x, w, b = case.make(dtype, DEVICE, seed=85)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=86, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    for mask, grads, again, kernels in backward_each_bias_mask(go, x, w, case, tf32):
        assert any("grad_weight_ws_kernel" in k for k in kernels) == mask[1], (case.id, mask, kernels)
        fused = mask[1] and not knob_off and ws_bias_covered(case)
        assert any("grad_bias_partial" in k for k in kernels) == (not fused), (case.id, mask, kernels)
        assert_mask_gradients(grads, again, refs, mask, tol)


# grad_bias from the channels_last columns copy (backward_s2d_gemm.cu, im2col_cl_taps_sums_kernel):
# kernel == stride layers without padding, dilation or output padding, whose tap-major columns (a
# channels_last weight) read every grad_output element once; a lane holds the sums of KU 16-byte units
# of a row (the smallest power of two covering the row in 32 lanes; at most 8 in 16-bit, 16 in float32)
# and a warp copies 8 / KU pixels a step. Cases (units per row bf16 / float32 -> KU): 24 / 48 -> 1 / 2
# with 405 pixels (a last step of 5 of 8), 256 / 512 -> 8 / 16, 36 / 72 (3 x 3 stride 3) -> 2 / 4,
# 96 / 192 -> 4 / 8 with 70 pixels, 512 / 1024 (too many: its own pass); then not fused: padding 1,
# an output padding, and a contiguous weight (the co-major copy).
COLS_CL_BIAS_CASES = [
    (Case(3, 64, 48, 9, 15, (2, 2), (2, 2), layout="channels_last"), "cl"),
    (Case(2, 64, 512, 5, 6, (2, 2), (2, 2), layout="channels_last"), "cl"),
    (Case(2, 64, 32, 7, 9, (3, 3), (3, 3), layout="channels_last"), "cl"),
    (Case(2, 64, 192, 5, 7, (2, 2), (2, 2), layout="channels_last"), "cl"),
    (Case(2, 64, 1024, 3, 5, (2, 2), (2, 2), layout="channels_last"), "cl"),
    (Case(2, 64, 32, 8, 8, (2, 2), (2, 2), (1, 1), layout="channels_last"), "cl"),
    (Case(2, 64, 32, 8, 8, (2, 2), (2, 2), (0, 0), (1, 1), layout="channels_last"), "cl"),
    (Case(3, 64, 48, 9, 16, (2, 2), (2, 2), layout="channels_last"), "contiguous"),
]
COLS_CL_BIAS_CONFIGS = [DTYPE_CONFIGS[0], DTYPE_CONFIGS[3], DTYPE_CONFIGS[4]]  # float32 (TF32), bf16, fp16


def cols_cl_bias_fused(case: Case, weight_layout: str, dtype) -> bool:
    """im2col_cl_taps_sums_units > 0 for these cases: kernel == stride, no padding, dilation or output
    padding, a channels_last weight, at most 32 * KU 16-byte units per row (KU 8 in 16-bit, 16 in float32)."""
    element = torch.tensor([], dtype=dtype).element_size()
    units = case.kernel[0] * case.kernel[1] * case.Cout * element // 16
    max_units = 32 * (16 if element == 4 else 8)
    return (weight_layout == "cl" and case.kernel == case.stride and case.padding == (0, 0) and
            case.output_padding == (0, 0) and case.dilation == (1, 1) and units <= max_units)


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("config", COLS_CL_BIAS_CONFIGS, ids=[c[0] for c in COLS_CL_BIAS_CONFIGS])
@pytest.mark.parametrize("case,weight_layout", COLS_CL_BIAS_CASES,
                         ids=[f"{c.id}-w_{wl}" for c, wl in COLS_CL_BIAS_CASES])
def test_backward_bias_fused_columns_cl(case: Case, weight_layout: str, config):
    """Every mask with grad_bias: the channels_last columns copy runs wherever a weight-side or input
    gradient is asked for, and grad_bias has no pass of its own exactly where the copy sums it;
    every gradient against float64, bits equal run to run."""
    skip_under_knobs("CONVT_BWD_PATH", "CONVT_BWD_COLS", "CONVT_BWD_S2D", "CONVT_S2D_PLANE")
    _, dtype, tf32, tol = config
    knob_off = os.environ.get("CONVT_BWD_BIAS_FUSED") == "0"
    x, w, b = case.make(dtype, DEVICE, seed=87)
    if weight_layout == "cl":
        w = w.contiguous(memory_format=torch.channels_last)
    go = random_like_output(case, reference(x, w, b, case).shape, dtype, seed=88, channels_last=True)
    refs = reference_grads(x, w, b, go, case)
    for mask, grads, again, kernels in backward_each_bias_mask(go, x, w, case, tf32):
        fused = (mask[0] or mask[1]) and not knob_off and cols_cl_bias_fused(case, weight_layout, dtype)
        assert any("im2col_cl_taps_sums_kernel" in k for k in kernels) == fused, (case.id, mask, kernels)
        assert any("grad_bias_partial" in k for k in kernels) == (not fused), (case.id, mask, kernels)
        assert_mask_gradients(grads, again, refs, mask, tol)


def tf32_nchw_bias_masks(case: Case, seed: int):
    """float32 NCHW inputs (seeds seed, seed + 1) and float64 references for the fused-bias tests of the
    float32 grad_weight kernels: backward_each_bias_mask's tuples, with TF32 on, plus the references."""
    x, w, b = case.make(torch.float32, DEVICE, seed=seed)
    go = random_like_output(case, reference(x, w, b, case).shape, torch.float32, seed=seed + 1, channels_last=False)
    refs = reference_grads(x, w, b, go, case)
    for mask, grads, again, kernels in backward_each_bias_mask(go, x, w, case, True):
        yield mask, grads, again, kernels, refs


# grad_bias from the float32 rows grad_weight kernel at stride > 1 along the width
# (backward_grad_weight_rows.cu, grad_weight_rows_async_kernel<.., 2, true>): NCHW with TF32, one
# group, every output row and column owned by some tap (geometry.h owning_tap). Cases (fused?):
# kb2_2's k3 s2 p1 op1 on 40 columns (two segments, the last of 8 columns); k4 s2 (one group of 4
# taps, 48 channels: a partial channel tile); k5 s2 p2 (two tap groups per kernel row); 32 x 32
# tiles with stride 3 x 2 on 72 columns (a middle segment); then not fused: dilation 2 (odd rows
# reached by no tap) and 33 columns (rows of 132 bytes: the element-load kernel). Last, a kernel ==
# stride layer on 66 x 64 images (over 64 x 64): with grad_input it takes the space-to-depth columns,
# with grad_weight alone the rows kernel (backward.cu s2d_suitable).
ROWS_BIAS_CASES = [
    (Case(2, 64, 64, 9, 40, (3, 3), (2, 2), (1, 1), (1, 1)), True),
    (Case(2, 64, 48, 7, 36, (4, 4), (2, 2), (1, 1)), True),
    (Case(2, 64, 64, 6, 28, (5, 5), (2, 2), (2, 2)), True),
    (Case(1, 32, 32, 5, 72, (3, 3), (3, 2), (1, 1), (0, 1)), True),
    (Case(2, 64, 64, 6, 32, (3, 3), (2, 2), (2, 2), (0, 0), (2, 2)), False),
    (Case(2, 64, 64, 6, 33, (3, 3), (2, 2), (1, 1), (1, 1)), False),
    (Case(1, 64, 32, 66, 64, (2, 2), (2, 2)), True),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("case,fused", ROWS_BIAS_CASES, ids=[c.id for c, _ in ROWS_BIAS_CASES])
def test_backward_bias_fused_rows(case: Case, fused: bool):
    """Every mask with grad_bias, float32 NCHW with TF32: with grad_weight alone (the rows kernel is
    then the only pass over grad_output) the kernel's summing form runs and grad_bias has no pass of
    its own exactly where the case says; every gradient against float64, bits equal run to run.
    (With grad_input too, an as-forward grad_input's channels_last copy may sum it first.)"""
    skip_under_knobs("CONVT_BWD_PATH", "CONVT_BWD_GW", "CONVT_BWD_COLS", "CONVT_BWD_GI")
    knob_off = os.environ.get("CONVT_BWD_BIAS_FUSED") == "0"
    kernel_is_stride = case.kernel == case.stride and case.padding == (0, 0)
    for mask, grads, again, kernels, refs in tf32_nchw_bias_masks(case, 91):
        if kernel_is_stride and os.environ.get("CONVT_BWD_S2D") is None:
            assert any("space_to_depth_kw2" in k for k in kernels) == mask[0], (case.id, mask, kernels)
        if mask == [False, True, True]:
            summing = fused and not knob_off
            assert any("grad_weight_rows_async_kernel" in k and "true>" in k for k in kernels) == summing, kernels
            assert any("grad_bias_partial" in k for k in kernels) == (not summing), kernels
        assert_mask_gradients(grads, again, refs, mask, TOLERANCE["tf32"])


# grad_bias from the TF32 ring grad_weight kernel's staged grad_output rows (backward_grad_weight_wgmma.cu,
# grad_weight_wgmma_tf32_ring_kernel<.., true>): float32 NCHW at stride 1 with one kernel-row group
# (KH == the kernel rows per block) and one tap group, whose ring rows and segments' own columns cover
# grad_output. Cases (64 or 48 input channels, so grad_input's forward makes no channels_last copy that
# would sum it first): kb2_10's k3 p1 with 48 output channels (a partial channel tile) on two segments,
# with splits that start inside a column; no padding (the first rows from a column's pre-steps) with
# 72 output channels (two channel tiles) and 152-byte rows (8-byte pieces); two kernel rows per block
# at dilation 2 (two pre-steps) on three segments; then not fused: a 6-row kernel (two row groups).
RING_BIAS_CASES = [
    (Case(2, 64, 48, 10, 40, (3, 3), (1, 1), (1, 1)), True),
    (Case(3, 48, 72, 7, 36, (3, 3)), True),
    (Case(2, 64, 64, 6, 68, (2, 3), (1, 1), (0, 1), (0, 0), (2, 1)), True),
    (Case(2, 64, 32, 8, 24, (6, 3), (1, 1), (2, 1)), False),
]


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@SM90_ONLY
@pytest.mark.parametrize("case,fused", RING_BIAS_CASES, ids=[c.id for c, _ in RING_BIAS_CASES])
def test_backward_bias_fused_tf32_ring(case: Case, fused: bool):
    """Every mask with grad_bias, float32 NCHW with TF32: wherever grad_weight is asked for the TF32
    ring kernel runs, in its summing form, with no grad_bias pass of its own, exactly where the case
    says; every gradient against float64, bits equal run to run."""
    skip_under_knobs("CONVT_BWD_PATH", "CONVT_BWD_GW", "CONVT_BWD_COLS", "CONVT_BWD_GI", "CONVT_BWD_GW_TF32",
                     "CONVT_BWD_GW_TF32_RING", "CONVT_FWD_VIA_CL")
    knob_off = os.environ.get("CONVT_BWD_BIAS_FUSED") == "0"
    for mask, grads, again, kernels, refs in tf32_nchw_bias_masks(case, 93):
        ring = [k for k in kernels if "grad_weight_wgmma_tf32_ring_kernel" in k]
        assert bool(ring) == mask[1], (case.id, mask, kernels)
        summing = mask[1] and fused and not knob_off
        assert any("true>" in k for k in ring) == summing, (case.id, mask, ring)
        assert any("grad_bias_partial" in k for k in kernels) == (not summing), (case.id, mask, kernels)
        assert_mask_gradients(grads, again, refs, mask, TOLERANCE["tf32"])


@SM90_ONLY
def test_backward_bias_fused_ws_knob():
    """CONVT_BWD_BIAS_FUSED=0 in a fresh pytest process: the ws kernel, the channels_last columns copy,
    the rows kernel and the TF32 ring kernel leave grad_bias to its own pass."""
    skip_under_knobs("CONVT_BWD_BIAS_FUSED")
    run_pytest([this_file("test_backward_bias_fused_ws"), this_file("test_backward_bias_fused_columns_cl"),
                this_file("test_backward_bias_fused_rows"), this_file("test_backward_bias_fused_tf32_ring")],
               {"CONVT_BWD_BIAS_FUSED": "0"},
               len(WS_BIAS_CASES) * len(WS_BIAS_CONFIGS) + len(COLS_CL_BIAS_CASES) * len(COLS_CL_BIAS_CONFIGS)
               + len(ROWS_BIAS_CASES) + len(RING_BIAS_CASES))


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
def test_depthwise_backward_dispatch():
    """The plane kernel for NCHW and narrow channels_last, the staged kernel for dense channels_last with
    16-byte channel runs, the channels kernel for other even C >= 32, neither for a channel multiplier
    of 2 (bf16 here: the staged kernel takes C a multiple of 8)."""
    if os.environ.get("CONVT_BWD_DW") or os.environ.get("CONVT_BWD_PATH"):
        pytest.skip("a test knob sends the backward elsewhere")
    want = [
        (DW_BACKWARD_CASES[-7], "depthwise_backward_plane_kernel"),  # NCHW 4 x 4
        (DW_BACKWARD_CASES[-8], "depthwise_backward_plane_kernel"),  # channels_last, C = 33
        (DW_BACKWARD_CASES[-11], "depthwise_backward_staged_kernel"),  # channels_last, C = 64
        (DW_BACKWARD_CASES[-9], "depthwise_backward_staged_kernel"),  # channels_last, C = 96, 5 x 5
        (DW_BACKWARD_CASES[-10], "depthwise_backward_channels_kernel"),  # channels_last, C = 66, 4 x 4
        (FEATURE_CASES[3], None),  # multiplier 2
    ]
    for case, kernel in want:
        grads, refs, kernels = profiled_backward_bf16(case, 53, [True, True, case.bias])
        ran = [k for k in kernels if "depthwise_backward" in k]
        if kernel is None:
            assert not ran, (case.id, ran)
        else:
            assert any(kernel in k for k in ran), (case.id, kernels)
        for got, ref, name in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
            if ref is not None:
                assert_close_to(got, ref, TOLERANCE[torch.bfloat16], name)


# --------------------------------------------------------------------------- sanitizer subset

# Small problems for scripts/gpu_check.sh: compute-sanitizer memcheck runs
# `-k sanitizer_smoke`, racecheck `-k "sanitizer_smoke and tiny"`. References are
# computed on the CPU so that only convt's kernels run on the GPU under the tool.
SMOKE_CASES = {
    "tiny": Case(1, 2, 3, 3, 4, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    "stride1": Case(2, 16, 24, 13, 11, (3, 5), (1, 1), (1, 2), (0, 0), (1, 1)),
    "s2k4": Case(2, 16, 8, 9, 10, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), bias=False),
    "grouped_dil": Case(2, 8, 12, 6, 5, (3, 3), (2, 3), (1, 2), (0, 0), (2, 1), groups=4),
    "depthwise_cl": Case(2, 16, 16, 7, 9, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), groups=16, layout="channels_last"),
    "depthwise_cl_wide": Case(2, 66, 66, 5, 6, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), groups=66, layout="channels_last"),
    # the staged depthwise backward (cp.async into shared memory): two column tiles, the second partial
    "depthwise_cl_staged": Case(2, 64, 64, 5, 37, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), groups=64, layout="channels_last"),
    "depthwise_generic": Case(2, 6, 6, 5, 7, (2, 3), (1, 2), (0, 1), (0, 1), (2, 1), groups=6),
    "s5_sparse": Case(1, 4, 6, 5, 6, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2)),
    "cl_wgmma": Case(2, 16, 70, 4, 8, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), layout="channels_last"),
    # the wgmma forward's pair stores, an odd output plane (rows alternate parity)
    "wgmma_pairs": Case(2, 16, 40, 5, 13, (3, 3), (1, 1), (0, 1), (0, 0), (1, 1)),
    "cl_gemm": Case(2, 128, 40, 5, 7, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    "gi_as_forward": Case(2, 32, 16, 6, 7, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    "gi_planes_cl": Case(2, 32, 16, 6, 7, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), layout="channels_last"),
    "gw_rows": Case(2, 32, 40, 4, 40, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    "gw_rows_async": Case(2, 32, 40, 5, 40, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1)),
    "gw_wgmma": Case(2, 64, 72, 4, 64, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1)),
    "gw_wgmma_s2": Case(2, 64, 64, 4, 32, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
    "gw_wgmma_cl": Case(2, 64, 64, 4, 26, (3, 3), (2, 1), (1, 1), (1, 0), (1, 1), layout="channels_last"),
    "s2d_gemm": Case(2, 64, 32, 3, 5, (2, 2), (2, 2)),
    "s2d_gemm_cl": Case(2, 64, 40, 3, 5, (2, 2), (2, 2), layout="channels_last"),
    "cols_gemm": Case(2, 128, 64, 3, 4, (4, 4), (2, 2), (1, 1)),
    # channels_last input through tensor maps (kTma): halos past the edges, a last chunk past
    # the channels, strides and dilation (two of TMA_CASES, which check that the path is taken)
    "tma_cl": Case(2, 24, 44, 12, 16, (4, 4), (2, 2), (1, 1), bias=False, layout="channels_last"),
    "tma_cl_halo": Case(2, 8, 40, 17, 33, (5, 3), (3, 2), (2, 1), (1, 0), (1, 2), bias=False, layout="channels_last"),
    # the persistent grid: several tiles per block on an H100, the next one's loads in flight
    "persist_cl": Case(8, 16, 36, 64, 64, (4, 4), (2, 2), (1, 1), layout="channels_last"),
    # column-phase blocks (kCols): three warpgroups, stride 5 (column map in registers) and a
    # 3-strided row of more than 256 columns (column map in shared memory)
    "cols_s5": Case(1, 32, 64, 6, 24, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2)),
    "cols_s3_map": Case(1, 16, 32, 2, 128, (3, 3), (1, 3), (0, 1)),
    # narrow groups: the mma.sync forward's staged epilogue (NCHW and channels_last 16-byte
    # runs) and the narrow-group grad_weight (kb1_75's pattern; a wide row whose float32 tile
    # is narrowed to fit, several tiles per split)
    "narrow_gw": Case(2, 16, 32, 5, 12, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2),
    "narrow_gw_wide": Case(1, 8, 16, 3, 150, (3, 3), (2, 2), (1, 1), (1, 1)),
    "narrow_igemm_cl": Case(2, 8, 16, 5, 9, (3, 3), (2, 3), (1, 1), layout="channels_last"),
    "narrow_gw_cl": Case(2, 16, 32, 5, 12, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=2, layout="channels_last"),
    # layout.cu: the vector channels_last -> NCHW transpose (a partial channel tile; the plane
    # of grad_output even, of the input odd), and the outer-dimension swap of the NCHW columns
    # (the element form: 5 x 7 planes); the channels_last columns at sparse taps (im2col_cl)
    "cl_transpose_vec": Case(2, 64, 72, 11, 13, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), layout="channels_last"),
    "cols_swap_odd": Case(2, 128, 64, 5, 7, (5, 3), (3, 2), (2, 1), (0, 1), (1, 1)),
    "cl_sparse_cols": Case(2, 32, 64, 6, 9, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), layout="channels_last"),
    # the paired-column space-to-depth (kernel == stride, KW = 2), several vectors per thread
    "s2d_kw2": Case(3, 64, 48, 9, 16, (2, 2), (2, 2)),
    # the warp-specialized forward (bf16, and fp32 in TF32): a partial channel tile and several
    # tiles along the width; 21 taps of 64 channels on a two-stage ring, forward and
    # grad_input; stride 2 by phases of 4, 2, 2 and 1 taps with output padding
    "ws_partial": Case(2, 32, 40, 9, 70, (3, 3), (1, 1), (1, 1), layout="channels_last"),
    "ws_two_stages": Case(1, 64, 64, 6, 20, (3, 7), (1, 1), (1, 3), layout="channels_last"),
    "ws_phases": Case(2, 32, 40, 7, 9, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    # the warp-specialized grad_weight (bf16): partial channel tiles on both sides, 128-byte swizzled boxes
    "gw_ws": Case(2, 40, 72, 5, 30, (3, 3), (1, 1), (1, 1), layout="channels_last"),
    # ... at stride 2 by residue subgrids (residues of 1, 2, 2 and 4 taps, two boxes per block)
    "gw_ws_s2": Case(2, 40, 72, 5, 30, (3, 3), (2, 2), (1, 1), (1, 1), layout="channels_last"),
    # the kernel == stride forward: a K chunk past Cin, a partial channel tile, two runs over
    # image boundaries; one column tile over 320 runs (both input buffers reused, consumers idle
    # in alternate runs)
    "kstride": Case(2, 40, 72, 9, 14, (2, 2), (2, 2), layout="channels_last"),
    "kstride_runs": Case(2, 16, 8, 320, 60, (1, 1), (1, 1), layout="channels_last"),
    # NCHW bf16 through the channels_last route (forward.cu launch_via_channels_last): the input's
    # transpose (an odd plane: single elements), then the ws forward writing NCHW itself (a partial
    # channel tile; wide tiles on 16 x 16 phase images; float32 too), and both transposes around
    # the kernel == stride forward (an even plane: pairs; bf16 only)
    "via_cl_ws": Case(2, 32, 40, 7, 9, (3, 3), (2, 2), (1, 1), (1, 1)),
    "via_cl_ws_wide": Case(2, 32, 64, 16, 16, (4, 4), (2, 2), (1, 1)),
    "via_cl_kstride": Case(2, 40, 72, 9, 14, (2, 2), (2, 2)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", list(SMOKE_CASES))
def test_sanitizer_smoke(name, dtype):
    case = SMOKE_CASES[name]
    x, w, b = case.make(dtype, DEVICE, seed=22)
    ref = reference(x, w, b, case)
    with conv_tf32(True):
        out = op(x, w, b, *op_args(case))
        tol = TOLERANCE["tf32" if dtype == torch.float32 else dtype]
        assert_close_to(out, ref, tol)
        go = random_like_output(case, ref.shape, dtype, 23, case.output_is_channels_last())
        grads = backward_op(go, x, w, *op_args(case), [True, True, case.bias])
        refs = reference_grads(x, w, b, go, case)
        for g, r, gname in zip(grads, refs, ("grad_input", "grad_weight", "grad_bias")):
            if r is not None:
                assert_close_to(g, r, tol, gname)
    torch.cuda.synchronize()


# Strict fp32 for compute-sanitizer (`-k sanitizer_smoke_strict`): on an H100 the 3xTF32 wgmma
# forward (aligned and 4-byte rows, phases, tall tiles); elsewhere the mma.sync kernel.
SMOKE_STRICT_CASES = {
    "split_s1": Case(2, 16, 72, 7, 12, (3, 3), (1, 1), (1, 1)),
    "split_rows4": Case(1, 16, 64, 5, 10, (3, 5), (1, 1), (1, 2), bias=False),
    "split_phases": Case(2, 16, 64, 6, 8, (4, 4), (2, 2), (1, 1), (1, 1)),
    "split_tall": Case(8, 16, 64, 4, 4, (4, 4), (2, 2), (1, 1)),
}


@pytest.mark.parametrize("name", list(SMOKE_STRICT_CASES))
def test_sanitizer_smoke_strict(name):
    case = SMOKE_STRICT_CASES[name]
    x, w, b = case.make(torch.float32, DEVICE, seed=24)
    ref = reference(x, w, b, case)
    with conv_tf32(False):
        out = op(x, w, b, *op_args(case))
    assert_close_to(out, ref, TOLERANCE[torch.float32])
    torch.cuda.synchronize()


# channels_last weights for compute-sanitizer (`-k sanitizer_smoke_cl_weight`): the tap-major
# columns (im2col_cl_taps_kernel, 16-byte and single-element units, sparse taps, kernel ==
# stride; with a bias at kernel == stride, im2col_cl_taps_sums_kernel) and the strided weight packing of the ws forward; the cases of test_channels_last_weight
# without its profiler.
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("case", [c for c, _ in CL_WEIGHT_CASES], ids=[c.id for c, _ in CL_WEIGHT_CASES])
def test_sanitizer_smoke_cl_weight(case, dtype):
    x, w, b = case.make(dtype, DEVICE, seed=25)
    w = w.contiguous(memory_format=torch.channels_last)
    ref = reference(x, w, b, case)
    tol = TOLERANCE["tf32" if dtype == torch.float32 else dtype]
    with conv_tf32(True):
        assert_close_to(op(x, w, b, *op_args(case)), ref, tol)
        go = random_like_output(case, ref.shape, dtype, 26, channels_last=True)
        grads = backward_op(go, x, w, *op_args(case), [True, True, case.bias])
    for g, r, gname in zip(grads, reference_grads(x, w, b, go, case), ("grad_input", "grad_weight", "grad_bias")):
        if r is not None:
            assert_close_to(g, r, tol, gname)
    torch.cuda.synchronize()


# The mma.sync implicit GEMM reading channels_last input in place (forward_igemm.cu's
# channels_last form, kClInput: the tile staged [pixel slot][chunk words] by copies along
# channels, no nhwc_to_nchw transpose before it). Fewer than 32 output channels per group, so
# that the dispatcher picks this kernel for every dtype (strict float32 included: the 3xTF32
# wgmma forward wants 64). Cases: kb1_75's pattern small (4 groups of 8 input channels, strides
# 2 x 3, dilation 2 along H, odd width), 16 and 24 channels per group (24: a chunk's second
# k-group half past the group, zeros), two chunks with the last one partly past the group,
# stride 1 with padding and dilation halos, stride 3, several whole images per tile, 12 channels
# per group (8-byte copies in 16-bit); and where the copies cannot be aligned (5 channels per
# group, or a base address 2 bytes off 16) 16-bit takes the old transpose, float32 4-byte
# copies. Against float64 in poisoned output memory, bit-identical on a second call; the
# profiler checks that the kernel ran and that no layout copy ran where the form applies.
IGEMM_CL_INPUT_CASES = [
    # (case, base address offset in elements)
    (Case(2, 32, 64, 9, 21, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), groups=4, layout="channels_last"), 0),
    (Case(2, 32, 48, 10, 13, (3, 3), (2, 2), (1, 1), (1, 1), groups=2, layout="channels_last"), 0),
    (Case(1, 24, 16, 12, 17, (3, 3), (1, 1), (2, 1), (0, 0), (2, 2), bias=False, layout="channels_last"), 0),
    (Case(1, 96, 24, 6, 11, (3, 3), (2, 2), (1, 1), layout="channels_last"), 0),
    (Case(2, 16, 20, 7, 9, (4, 4), (3, 3), (1, 2), (2, 1), layout="channels_last"), 0),
    (Case(4, 16, 16, 4, 5, (4, 4), (2, 2), (1, 1), layout="channels_last"), 0),
    (Case(2, 24, 16, 5, 9, (3, 3), (1, 1), (1, 1), groups=2, layout="channels_last"), 0),
    (Case(2, 10, 16, 6, 7, (3, 3), (2, 2), (1, 1), groups=2, layout="channels_last"), 0),
    (Case(2, 16, 16, 6, 7, (3, 3), (2, 2), (1, 1), layout="channels_last"), 1),
]


def _cl_input_reads_in_place(case: Case, dtype, offset: int) -> bool:
    """Whether the channels_last form can align its copies (cl_copy_vec in forward_igemm.cu):
    4 bytes at least, so 16-bit needs even channel counts and an even-word base address."""
    if dtype == torch.float32:
        return True
    return offset % 2 == 0 and case.Cin % 2 == 0 and (case.Cin // case.groups) % 2 == 0


@pytest.mark.filterwarnings("ignore:.*Profiler clears events")
@pytest.mark.parametrize("config", IGEMM_CONFIGS, ids=[c[0] for c in IGEMM_CONFIGS])
@pytest.mark.parametrize(
    "case,offset", IGEMM_CL_INPUT_CASES, ids=[f"{c.id}_off{o}" for c, o in IGEMM_CL_INPUT_CASES]
)
def test_forward_igemm_channels_last_input(case: Case, offset: int, config):
    _, dtype, tf32, tol = config
    if os.environ.get("CONVT_FWD_PATH"):
        pytest.skip("a test knob sends the forward elsewhere")
    assert case.Cout // case.groups < 32 and _runs_igemm(case, dtype, tf32)
    x, w, b = case.make(dtype, DEVICE, seed=48)
    if offset:
        # The same values at a base address `offset` elements into a buffer: still dense
        # channels_last, but the 16-byte (or any) alignment of the copies is gone.
        nhwc = x.permute(0, 2, 3, 1)
        buf = torch.empty(nhwc.numel() + offset, dtype=dtype, device=DEVICE)
        x = buf[offset:].view(nhwc.shape).copy_(nhwc).permute(0, 3, 1, 2)
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    with conv_tf32(tf32):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            (out,), _ = run_poisoned(lambda: (op(x, w, b, *op_args(case)),))
            torch.cuda.synchronize()
        out2 = op(x, w, b, *op_args(case))
    kernels = [e.key for e in prof.key_averages()]
    assert any("igemm_kernel" in k for k in kernels), (case.id, kernels)
    copied = any("nhwc_to_nchw" in k for k in kernels)
    if _cl_input_reads_in_place(case, dtype, offset):
        assert not copied, (case.id, kernels)
        # The kernel's last template argument is kClInput, where the name is demangled so.
        for k in kernels:
            m = re.search(r"igemm_kernel<(.*?)>\(", k)
            if m:
                assert m.group(1).split(",")[-1].strip() in ("true", "(bool)1", "1"), (case.id, k)
    else:
        assert copied, (case.id, kernels)
    assert_close_to(out, reference(x, w, b, case), tol)
    assert torch.equal(out, out2), "not bit-identical run to run"
    assert out.is_contiguous(memory_format=torch.channels_last)
