"""The issue targets in `bench-report` (convt_op/bench_targets.py), on synthetic result rows (no GPU)."""

from __future__ import annotations

import pytest

from convt_op import bench_report as br
from convt_op import bench_targets as bt


def row(shape, speedup, dtype="float32", tf32=True, layout="nchw", mode="fwd", ours_ms=1.0, floor_ms=None,
        device=None, rel_err=1e-7, status="ok"):
    r = {"shape": shape, "dtype": dtype, "tf32": tf32, "layout": layout, "mode": mode, "status": status,
         "speedup": speedup, "ours_ms": ours_ms, "pytorch_ms": None if speedup is None else ours_ms * speedup,
         "floor_ms": floor_ms, "ours_pct_floor": None, "rel_err": rel_err}
    if device is not None:
        r["ours_device_ms"], r["pytorch_device_ms"] = 1.0, device
    return r


def by_label(entries):
    return {e["label"]: e for e in entries}


def test_float32_nchw_forward_each_floor_and_geomean():
    """All three conditions count: a shape below 1.5x, one past 1.5x its floor, a geomean under 3x."""
    rows = [row("a", 4.0, floor_ms=0.9), row("b", 4.0, floor_ms=0.5), row("c", 1.4996, floor_ms=0.8)]
    e = by_label(bt.evaluate(rows))["float32/tf32 nchw fwd"]
    assert e["below"] == [("c", 1.4996)] and e["within_floor"] == 2 and not e["met"]
    assert e["geomean"] == pytest.approx((4.0 * 4.0 * 1.4996) ** (1 / 3))
    text = bt.targets_markdown([e])
    # 1.4996x would print as 1.50x: three decimals for a shape that misses the bound by rounding.
    assert "below: c 1.500x; within the floor bound: 2 of 3" in text and text.endswith("| no |")
    met = bt.evaluate([row("a", 4.0, floor_ms=0.9), row("b", 3.0, floor_ms=0.7)])
    assert met[0]["met"] and "| **yes** |" in bt.targets_markdown(met)
    # Met per shape and on the floor, but the geomean is under 3x.
    assert not bt.evaluate([row("a", 2.0, floor_ms=0.9), row("b", 2.0, floor_ms=0.9)])[0]["met"]


def test_each_target_names_its_configurations():
    rows = [row("a", 1.1, dtype="bfloat16", tf32=None, layout="channels_last"),
            row("a", 1.1, dtype="float16", tf32=None, layout="nchw", mode="fwdbwd"),  # no target
            row("a", 1.3, mode="fwdbwd"), row("b", 1.1, mode="fwdbwd"),
            row("a", 2.5, tf32=False, rel_err=2e-5),
            row("a", 9.0, layout="channels_last", mode="fwdbwd")]  # float32 channels_last training: no target
    entries = by_label(bt.evaluate(rows))
    assert set(entries) == {"bfloat16 channels_last fwd", "float32/tf32 nchw fwdbwd", "float32/strict nchw fwd"}
    bf16 = entries["bfloat16 channels_last fwd"]
    assert bf16["issue"] == 5 and bf16["rule"] == ">= 1.0x each, geomean >= 1.5x" and not bf16["met"]
    train = entries["float32/tf32 nchw fwdbwd"]
    assert train["issue"] == 6 and train["below"] == [("b", 1.1)] and not train["met"]
    strict = entries["float32/strict nchw fwd"]
    assert strict["max_rel_err"] == 2e-5 and not strict["met"]  # 2.5x, but the error is over 1e-5


def test_device_ratios_beside_the_timed_ones_and_untimed_rows_left_out():
    rows = [row("a", 0.8, dtype="bfloat16", tf32=None, mode="fwdbwd", device=1.25),
            row("b", 2.0, dtype="bfloat16", tf32=None, mode="fwdbwd", device=0.9),
            row("c", None, dtype="bfloat16", tf32=None, mode="fwdbwd", status="mismatch")]
    (e,) = bt.evaluate(rows)
    assert e["shapes"] == 2 and e["below"] == [("a", 0.8)] and e["device_below"] == [("b", 0.9)]
    assert e["device_geomean"] == pytest.approx((1.25 * 0.9) ** 0.5)
    line = bt.targets_markdown([e]).splitlines()[-1]
    assert line == ("| 6 | bfloat16 nchw fwdbwd | >= 1.0x each, geomean >= 1.3x | geomean 1.26x; below: a 0.80x "
                    "| geomean 1.06x; below: b 0.90x | no |")
    # Without device times on every row: no device column value.
    (e,) = bt.evaluate([row("a", 2.0, dtype="bfloat16", tf32=None, mode="fwdbwd", device=1.5),
                        row("b", 2.0, dtype="bfloat16", tf32=None, mode="fwdbwd")])
    assert "device_geomean" not in e and "| geomean 2.00x | - | **yes** |" in bt.targets_markdown([e])


def test_report_has_a_targets_section_only_where_a_target_applies():
    rows = [row("a", 2.0, dtype="bfloat16", tf32=None)]
    assert "## Against the issue targets" in br.report_markdown(rows, None, 0.1)
    assert "## Against the issue targets" not in br.report_markdown([row("a", 2.0, dtype="float64", tf32=None)],
                                                                    None, 0.1)
    assert bt.targets_markdown([]).startswith("No configuration")


def test_host_bound_shapes_are_marked():
    """With host times (bench --host-time): a shape below target whose host time per call is at least
    its device time per call is marked "host"; one whose GPU work takes longer is not."""
    bf16 = dict(dtype="bfloat16", tf32=None)
    rows = [dict(row("a", 0.8, device=1.2, **bf16), ours_host_us=1500.0),  # 1.5 ms of host, 1 ms of GPU work
            dict(row("b", 0.9, device=1.1, **bf16), ours_host_us=400.0),
            dict(row("c", 2.0, device=2.0, **bf16), ours_host_us=5000.0)]  # host-bound, but not below target
    (e,) = bt.evaluate(rows)
    assert e["host_bound"] == {"a"}
    assert "| geomean 1.13x; below: a 0.80x host, b 0.90x | geomean 1.38x | no |" in bt.targets_markdown([e])
    assert not bt.host_bound(row("d", 1.0)) and not bt.host_bound(dict(row("d", 1.0), ours_host_us=10.0))


def test_each_backward_kernel_alone_against_its_floor():
    """Issue 6's third target: every grad_input / grad_weight row within 2x of its floor, whatever its
    ratio to PyTorch; judged on device time too where the rows have it."""
    gi = dict(dtype="bfloat16", tf32=None, layout="channels_last", mode="grad_input")
    rows = [row("a", 0.5, ours_ms=1.0, floor_ms=0.6, **gi),   # slower than PyTorch, within 2x: fine here
            row("b", 3.0, ours_ms=1.0, floor_ms=0.4, **gi)]   # 2.5x its floor
    rows[0]["ours_device_ms"], rows[0]["pytorch_device_ms"] = 0.9, 0.45
    rows[1]["ours_device_ms"], rows[1]["pytorch_device_ms"] = 0.7, 2.1
    (e,) = bt.evaluate(rows)
    assert e["issue"] == 6 and e["rule"] == "<= 2.0x the floor" and e["below"] == [] and e["device_below"] == []
    assert e["within_floor"] == 1 and e["device_within_floor"] == 2 and not e["met"]
    line = bt.targets_markdown([e]).splitlines()[-1]
    assert line == ("| 6 | bfloat16 channels_last grad_input | <= 2.0x the floor | geomean 1.22x; within the floor "
                    "bound: 1 of 2 | geomean 1.22x; within the floor bound: 2 of 2 | no |")
    met = bt.evaluate([row("a", 0.5, ours_ms=1.0, floor_ms=0.6, dtype="float32", tf32=True, mode="grad_weight")])
    assert met[0]["met"] and met[0]["label"] == "float32/tf32 nchw grad_weight"
    # float16 and strict float32 kernels alone have no target.
    assert bt.evaluate([row("a", 1.0, floor_ms=0.9, dtype="float16", tf32=None, mode="grad_input"),
                        row("a", 1.0, floor_ms=0.9, tf32=False, mode="grad_weight")]) == []


def test_kernels_alone_summed_over_their_configurations():
    """With the floor-only target measured in two or more configurations, one more row sums the rows
    within the bound over them (issue 6's third target is read by that count); not with one."""
    gi = dict(dtype="bfloat16", tf32=None, layout="channels_last", mode="grad_input")
    gw = dict(dtype="float32", tf32=True, layout="nchw", mode="grad_weight")
    rows = [row("a", 0.5, ours_ms=1.0, floor_ms=0.6, **gi), row("b", 3.0, ours_ms=1.0, floor_ms=0.4, **gi),
            row("a", 1.5, ours_ms=1.0, floor_ms=0.9, **gw)]
    for r, d in zip(rows, (0.9, 0.7, 1.0)):
        r["ours_device_ms"], r["pytorch_device_ms"] = d, 1.0
    entries = bt.evaluate(rows)
    assert len(entries) == 2
    last = bt.targets_markdown(entries).splitlines()[-1]
    assert last == ("| 6 | all 2 of its configurations above | <= 2.0x the floor | within the floor bound: 2 of 3 | "
                    "within the floor bound: 3 of 3 | no |")
    # Every row within: met; and a single configuration gets no sum row.
    ok = bt.evaluate([rows[0], rows[2]])
    assert bt.targets_markdown(ok).splitlines()[-1].endswith("within the floor bound: 2 of 2 | **yes** |")
    assert "all " not in bt.targets_markdown(bt.evaluate(rows[:2]))
