"""The benchmark's logic that runs without a GPU: byte and FLOP counts per mode, config
parsing, the correctness check of the backward-kernel modes (on the CPU kernels), and the
one-line exit without a GPU. Timing itself needs CUDA events and runs on the GPU machine."""

from __future__ import annotations

import pytest
import torch

import convt_op
from convt_op import bench

SHAPE = bench.Shape.from_json(dict(
    name="small", N=2, Cin=6, H=5, W=7, Cout=4, kernel=[3, 2], stride=[2, 1], padding=[1, 0],
    output_padding=[1, 0], dilation=[1, 2], groups=2, bias=True))


def test_counts_per_mode():
    hout, wout = SHAPE.out_hw
    assert (hout, wout) == ((5 - 1) * 2 - 2 + 2 + 1 + 1, (7 - 1) + 2 * 1 + 1)
    x, w, b, y = 2 * 6 * 5 * 7, 6 * 2 * 3 * 2, 4, 2 * 4 * hout * wout
    fwd_flops = 2 * 2 * 6 * 2 * 3 * 2 * 5 * 7
    assert SHAPE.flops("fwd") == SHAPE.flops("grad_input") == SHAPE.flops("grad_weight") == fwd_flops
    assert SHAPE.flops("fwdbwd") == 3 * fwd_flops
    f32 = torch.float32
    assert SHAPE.min_bytes(f32, "fwd") == 4 * (x + w + b + y)
    assert SHAPE.min_bytes(f32, "grad_input") == 4 * (y + w + x)  # read grad_output, weight; write grad_input
    assert SHAPE.min_bytes(f32, "grad_weight") == 4 * (y + x + w)  # read grad_output, input; write grad_weight
    assert SHAPE.min_bytes(torch.bfloat16, "grad_input") == 2 * (y + w + x)


def test_gradients_count_only_the_reached_outputs():
    """Stride 5, kernel 3, dilation 2: output rows 5i + 2t (t < 3) are reached, the rest hold
    only the bias. 2 input rows give outputs {0, 2, 4, 5, 7, 9} of 10 (6 reached); with
    padding 1, {1, 3, 4, 6} of 8."""
    sparse = dict(name="sparse", N=1, Cin=1, H=2, W=2, Cout=1, kernel=[3, 3], stride=[5, 5],
                  padding=[0, 0], output_padding=[0, 0], dilation=[2, 2], groups=1, bias=False)
    shape = bench.Shape.from_json(sparse)
    assert shape.out_hw == (10, 10) and shape.reached_hw == (6, 6)
    x, w, y, reached = 4, 9, 100, 36
    f32 = torch.float32
    assert shape.min_bytes(f32, "fwd") == 4 * (x + w + y)  # the whole output is written
    assert shape.min_bytes(f32, "grad_input") == 4 * (reached + w + x)
    assert shape.min_bytes(f32, "grad_weight") == 4 * (reached + x + w)
    assert shape.min_bytes(f32, "fwdbwd") == 4 * (x + w + y) + 4 * (reached + 2 * x + w)
    padded = bench.Shape.from_json(dict(sparse, padding=[1, 1], bias=True))
    assert padded.out_hw == (8, 8) and padded.reached_hw == (4, 4)
    # grad_bias sums all of grad_output: with a bias, fwdbwd reads it whole.
    assert padded.min_bytes(f32, "fwdbwd") == 4 * (x + w + 1 + 64) + 4 * (64 + 2 * x + w + 1)
    assert SHAPE.reached_hw == SHAPE.out_hw  # no gaps: the counts of test_counts_per_mode


def test_configs_accept_the_grad_modes():
    cfgs = bench.make_configs("float32", "nchw", "fwd", True, "bf16:cl:grad_input,float32:nchw:grad_weight")
    assert [(c.dtype, c.layout, c.mode, c.tf32) for c in cfgs] == [
        ("bfloat16", "channels_last", "grad_input", None), ("float32", "nchw", "grad_weight", True)]
    with pytest.raises(bench.Unavailable, match="unknown mode"):
        bench.make_configs("float32", "nchw", "grad_bias", True, None)


def test_record_configs_cover_the_issue_targets():
    cfgs = bench.make_configs("float32", "nchw", "fwd", True, "record")
    got = {(c.dtype, c.layout, c.mode) for c in cfgs}
    assert len(cfgs) == len(got) == 11
    # Forward: every dtype in both layouts; training: float32 / bfloat16 NCHW and bfloat16 channels_last.
    for dtype in ("float32", "bfloat16", "float16"):
        for layout in ("nchw", "channels_last"):
            assert (dtype, layout, "fwd") in got
    for want in (("float32", "nchw", "fwdbwd"), ("bfloat16", "nchw", "fwdbwd"), ("bfloat16", "channels_last", "fwdbwd")):
        assert want in got
    assert all(c.tf32 is True for c in cfgs if c.dtype == "float32")
    strict = bench.make_configs("float32", "nchw", "fwd", False, "record")
    assert all(c.tf32 is False for c in strict if c.dtype == "float32")


def test_kernels_preset_is_issue_6_per_kernel_target():
    """`--configs kernels`: every configuration that bench-report judges against issue 6's per-kernel floor
    target, and nothing else."""
    from convt_op import bench_targets
    cfgs = bench.make_configs("float32", "nchw", "fwd", True, "kernels")
    got = {(c.dtype, c.layout, c.mode) for c in cfgs}
    assert len(cfgs) == len(got) == 8
    assert {m for _, _, m in got} == {"grad_input", "grad_weight"}
    keys = [(c.dtype, c.tf32, c.layout, c.mode) for c in cfgs]
    per_kernel = [t for t in bench_targets.TARGETS if t.mode in ("grad_input", "grad_weight")]
    assert all(any(t.applies(k) for t in per_kernel) for k in keys)
    assert sum(len(t.dtypes) * len(t.layouts) for t in per_kernel) == len(keys)


@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("mode", ["grad_input", "grad_weight"])
def test_grad_mode_check_on_cpu(mode, layout):
    """The check compares our backward operator's gradient with PyTorch's and with float64."""
    cfg = bench.Config("float32", layout, mode, False)
    x, w, b, go = bench.make_inputs(SHAPE, cfg, seed=3, device="cpu")
    assert go is not None and go.shape == (2, 4, *SHAPE.out_hw)
    check = bench.check_case(convt_op.conv_transpose2d, SHAPE, cfg, x, w, b, go)
    assert set(check["errors"]) == {mode}
    assert check["errors"][mode] <= cfg.tolerance and check["pytorch_errors"][mode] <= cfg.tolerance
    assert check["layout_matches"]


def test_grad_mode_check_catches_a_wrong_gradient(monkeypatch):
    """A backward that is 1% off must fail the tolerance: the check can fail."""
    real = bench.convt_backward

    def off_by_one_percent(*args, **kwargs):
        return tuple(t * 1.01 if t.numel() else t for t in real(*args, **kwargs))

    monkeypatch.setattr(bench, "convt_backward", off_by_one_percent)
    cfg = bench.Config("float32", "nchw", "grad_weight", False)
    tensors = bench.make_inputs(SHAPE, cfg, seed=4, device="cpu")
    check = bench.check_case(convt_op.conv_transpose2d, SHAPE, cfg, *tensors)
    assert check["errors"]["grad_weight"] == pytest.approx(0.01, rel=1e-3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without a GPU")
def test_without_gpu_one_line_and_status_2(capsys):
    assert bench.main(["--mode", "grad_input", "--shapes", "dcgan_g4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no CUDA GPU" in err[0]


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd", "grad_weight"])
def test_rounds_interleave_ours_and_pytorch(mode):
    """--repeat: round i times ours then PyTorch's, round i + 1 the other way round; every call
    runs (on the CPU here) and the forward+backward leaves get their grads cleared."""
    cfg = bench.Config("float32", "nchw", mode, False)
    x, w, b, go = bench.make_inputs(SHAPE, cfg, seed=5, device="cpu")
    calls = []

    def fake_timer(fn, grads=None):
        fn()  # runs the real op
        calls.append(grads)
        return float(len(calls))

    ours, theirs = bench.time_case(convt_op.conv_transpose2d, fake_timer, SHAPE, cfg, x, w, b, go, repeat=3)
    # Call order: ours(1) theirs(2) | theirs(3) ours(4) | ours(5) theirs(6).
    assert (ours, theirs) == ([1.0, 4.0, 5.0], [2.0, 3.0, 6.0])
    assert all((g is not None) == (mode == "fwdbwd") for g in calls)
    assert all(t.grad is None and not t.requires_grad for t in (x, w, b) if t is not None)


def test_timing_fields_medians_and_ratio_range():
    f = bench.timing_fields([1.0, 2.0, 1.2], [2.0, 2.0, 3.6], floor_ms=0.5)
    assert (f["ours_ms"], f["pytorch_ms"]) == (1.2, 2.0)
    assert f["speedup"] == pytest.approx(2.0 / 1.2) and f["ours_pct_floor"] == pytest.approx(100 * 0.5 / 1.2)
    assert f["speedup_range"] == pytest.approx([1.0, 3.0])
    assert bench.timing_fields([1.0], [2.0], 0.5)["speedup_range"] is None
    line = bench.markdown_table([dict(shape="s", dtype="float32", tf32=True, layout="nchw", mode="fwd",
                                      status="ok", floor_ms=0.5, **f)]).splitlines()[2]
    assert "| 1.200 | 2.000 | 1.67 | 1.00-3.00 | 0.500 |" in line
    single = dict(shape="s", dtype="float32", tf32=True, layout="nchw", mode="fwd", status="ok",
                  **bench.timing_fields([1.0], [2.0], 0.5))
    assert "| 2.00 | - |" in bench.markdown_table([single]).splitlines()[2]


def test_device_time_per_call_and_its_columns():
    """--device-time: the profiler events' device time summed over the calls, per call, in ms; the
    table gains two columns after PyTorch's ms only where a row has them."""
    class Event:
        def __init__(self, us):
            self.device_time_total = us

    assert bench.device_ms_per_call([Event(1500.0), Event(500.0), Event(0.0)], calls=10) == pytest.approx(0.2)
    assert bench.device_ms_per_call([], calls=10) == 0.0
    row = dict(shape="s", dtype="float32", tf32=True, layout="nchw", mode="fwdbwd", status="ok", floor_ms=0.5,
               **bench.timing_fields([0.4], [0.3], 0.5))
    plain = bench.markdown_table([row]).splitlines()
    assert "device" not in plain[0] and "| 0.400 | 0.300 | 0.75 |" in plain[2]
    timed = bench.markdown_table([dict(row, ours_device_ms=0.185, pytorch_device_ms=0.27), row]).splitlines()
    assert "| ours ms | pytorch ms | ours device ms | pytorch device ms | speedup |" in timed[0]
    assert timed[0].count("|") == timed[1].count("|") == timed[2].count("|") == timed[3].count("|")
    assert "| 0.400 | 0.300 | 0.185 | 0.270 | 0.75 |" in timed[2]
    assert "| 0.400 | 0.300 | - | - | 0.75 |" in timed[3]
    assert bench.parse_args(["--device-time"]).device_time and not bench.parse_args([]).device_time


def test_repeat_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--repeat", "0"])
    assert "--repeat must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("first_ms,rounds", [(0.4, bench.AUTO_REPEAT_ROUNDS), (2.5, 1)])
def test_auto_repeat_rounds(first_ms, rounds):
    """--repeat auto: cases whose first round's faster side took under AUTO_REPEAT_BELOW_MS get
    AUTO_REPEAT_ROUNDS rounds (still interleaved), the others one."""
    cfg = bench.Config("float32", "nchw", "fwd", False)
    x, w, b, go = bench.make_inputs(SHAPE, cfg, seed=5, device="cpu")
    calls = []

    def fake_timer(fn, grads=None):
        fn()
        calls.append(None)
        # PyTorch's side (the second call of the first round) is slow: the faster side decides.
        return first_ms if len(calls) != 2 else 10.0

    ours, theirs = bench.time_case(convt_op.conv_transpose2d, fake_timer, SHAPE, cfg, x, w, b, go, repeat="auto")
    assert len(ours) == len(theirs) == rounds
    assert len(calls) == 2 * rounds
    assert bench.rounds_for(4, 0.1) == 4 and bench.rounds_for("auto", bench.AUTO_REPEAT_BELOW_MS) == 1


def test_repeat_accepts_auto_and_whole_numbers(capsys):
    assert bench.parse_args([]).repeat == "auto"
    assert bench.parse_args(["--repeat", "2"]).repeat == 2
    with pytest.raises(SystemExit):
        bench.parse_args(["--repeat", "two"])
    assert "--repeat must be 'auto' or a whole number" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_host_time_rounds_interleave_and_clear_grads(mode, monkeypatch):
    """--host-time: the GPU is kept busy before each round and synchronized after it; rounds alternate
    which side goes first; the forward+backward leaves have their grads cleared before every call and
    their requires_grad turned off after; each side's value is the median over rounds of the per-round
    median per call, in microseconds."""
    cfg = bench.Config("float32", "nchw", mode, False)
    x, w, b, go = bench.make_inputs(SHAPE, cfg, seed=5, device="cpu")
    events = []
    clock = [0.0]
    monkeypatch.setattr(bench.time, "perf_counter", lambda: clock[0])

    def op(*args, **kwargs):  # ours: 3 us per call (on the fake clock), around the real op
        events.append("ours")
        clock[0] += 3e-6
        return convt_op.conv_transpose2d(*args, **kwargs)

    def theirs(*args, **kwargs):
        events.append("theirs")
        clock[0] += 5e-6
        return real_f(*args, **kwargs)

    real_f = bench.F.conv_transpose2d
    monkeypatch.setattr(bench.F, "conv_transpose2d", theirs)
    ours_us, theirs_us = bench.host_times(op, SHAPE, cfg, x, w, b, go, rounds=3, calls=2,
                                          busy=lambda: events.append("busy"), sync=lambda: events.append("sync"))
    assert (ours_us, theirs_us) == pytest.approx((3.0, 5.0))
    # One warm-up call each, then per round: busy, two calls, sync; the first side alternates.
    assert events == (["ours", "theirs", "sync"]
                      + ["busy", "ours", "ours", "sync", "busy", "theirs", "theirs", "sync"]
                      + ["busy", "theirs", "theirs", "sync", "busy", "ours", "ours", "sync"]
                      + ["busy", "ours", "ours", "sync", "busy", "theirs", "theirs", "sync"])
    assert all(t.grad is None and not t.requires_grad for t in (x, w, b) if t is not None)


def test_host_time_columns():
    row = dict(shape="s", dtype="float32", tf32=True, layout="nchw", mode="fwdbwd", status="ok", floor_ms=0.5,
               ours_device_ms=0.185, pytorch_device_ms=0.27, **bench.timing_fields([0.4], [0.3], 0.5))
    lines = bench.markdown_table([dict(row, ours_host_us=412.4, pytorch_host_us=301.0), row]).splitlines()
    assert "| ours device ms | pytorch device ms | ours host us | pytorch host us | speedup |" in lines[0]
    assert lines[0].count("|") == lines[2].count("|") == lines[3].count("|")
    assert "| 0.185 | 0.270 | 412 | 301 | 0.75 |" in lines[2] and "| 0.185 | 0.270 | - | - | 0.75 |" in lines[3]
    assert "host us" not in bench.markdown_table([row]).splitlines()[0]
    assert bench.parse_args(["--host-time"]).host_time and not bench.parse_args([]).host_time
