"""`python -m convt_op bench-report`: per-configuration summaries, the shape x configuration
matrix, merging result folders and comparing with a base run, on synthetic results (no GPU)."""

from __future__ import annotations

import json
import math

import pytest

from convt_op import __main__ as cli
from convt_op import bench_report as br


def row(shape, speedup, ours_ms, dtype="float32", tf32=True, layout="nchw", mode="fwd", status="ok", pct=40.0):
    return {"shape": shape, "dtype": dtype, "tf32": tf32, "layout": layout, "mode": mode, "status": status,
            "speedup": speedup if status == "ok" else None, "ours_ms": ours_ms if status == "ok" else None,
            "pytorch_ms": None if status != "ok" else ours_ms * speedup, "ours_pct_floor": pct,
            "pytorch_pct_floor": pct}


ROWS = [
    row("a", 2.0, 1.0), row("b", 0.5, 4.0), row("c", 4.0, 0.5, pct=10.0),
    row("a", 1.5, 2.0, dtype="bfloat16", tf32=None, layout="channels_last"),
    row("b", 0.8, 3.0, dtype="bfloat16", tf32=None, layout="channels_last"),
    row("c", None, None, dtype="bfloat16", tf32=None, layout="channels_last", status="mismatch"),
]
ENV = {"date": "2026-11-22 00:00 UTC", "device": "test", "torch": "x", "cuda": "x", "cudnn": 1, "impl": "convt",
       "timer": "t", "copy_bandwidth_Bps": 3e12, "matmul_flops": {"float32_tf32": 4e14}}


def write_run(folder, rows, env=ENV):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps({"environment": env, "rows": rows}))
    return folder


def test_summary_per_configuration():
    s = br.summarize(ROWS)
    assert [e["label"] for e in s] == ["float32/tf32 nchw fwd", "bfloat16 channels_last fwd"]
    f32, bf16 = s
    assert f32["geomean"] == pytest.approx((2.0 * 0.5 * 4.0) ** (1 / 3))
    assert (f32["faster"], f32["timed"], f32["slowest"], f32["fastest"]) == (2, 3, ("b", 0.5), ("c", 4.0))
    assert f32["pct_floor_geomean"] == pytest.approx((40 * 40 * 10) ** (1 / 3))
    # The mismatching row is not timed: out of the geomean, named in the summary.
    assert bf16["geomean"] == pytest.approx(math.sqrt(1.5 * 0.8)) and bf16["not_timed"] == ["c"]
    text = br.summary_markdown(s)
    assert "| float32/tf32 nchw fwd | **1.59x** | 2 of 3 | b 0.50x | c 4.00x | 25 |" in text
    assert "Not timed (status not ok): bfloat16 channels_last fwd: c." in text


def test_matrix_has_a_cell_per_shape_and_config_and_a_geomean_row():
    lines = br.matrix_markdown(ROWS).splitlines()
    assert lines[0] == "| shape | float32/tf32 nchw fwd | bfloat16 channels_last fwd |"
    assert lines[2] == "| a | 2.00 (1.000) | 1.50 (2.000) |"
    assert lines[4] == "| c | 4.00 (0.500) | mismatch |"
    assert lines[5] == "| geomean | **1.59** | **1.10** |"


def test_compare_lists_configs_in_common_and_moved_shapes():
    base = [row("a", 1.0, 2.0), row("b", 0.5, 4.2), row("c", 4.0, 0.5),
            row("a", 1.0, 2.0, dtype="float16", tf32=None)]
    comp = br.compare(ROWS, base, threshold=0.10)
    assert [c["label"] for c in comp] == ["float32/tf32 nchw fwd"]
    c = comp[0]
    assert c["before"] == pytest.approx((1.0 * 0.5 * 4.0) ** (1 / 3)) and c["after"] == pytest.approx(
        (2.0 * 0.5 * 4.0) ** (1 / 3))
    assert c["moved"] == [("a", 2.0, 1.0, 1.0, 2.0)]  # b moved 5%: under the threshold
    text = br.comparison_markdown(comp, 0.10)
    assert "- float32/tf32 nchw fwd, a: 2.000 -> 1.000 ms, 1.00x -> 2.00x" in text
    assert br.comparison_markdown([], 0.1).startswith("No configuration")


def test_merging_folders_later_rows_replace_earlier(tmp_path):
    first = write_run(tmp_path / "r1", ROWS[:3])
    second = write_run(tmp_path / "r2", [row("b", 1.25, 1.6), row("d", 3.0, 1.0)])
    env, rows = br.load_rows([first, second])
    assert env["device"] == "test"
    assert [(r["shape"], r["speedup"]) for r in rows] == [("a", 2.0), ("b", 1.25), ("c", 4.0), ("d", 3.0)]


def test_cli_writes_the_merged_folder_and_report(tmp_path, capsys):
    run = write_run(tmp_path / "run", ROWS)
    base = write_run(tmp_path / "base", [row("a", 1.0, 2.0)])
    out = tmp_path / "out"
    assert cli.main(["bench-report", str(run), "--against", str(base), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "## Per configuration" in printed and "## Against the base run" in printed
    assert (out / "report.md").read_text() + "\n" == printed
    merged = json.loads((out / "results.json").read_text())
    assert len(merged["rows"]) == len(ROWS) and merged["merged_from"] == [str(run)]
    results_md = (out / "results.md").read_text()
    assert "| float32/tf32 nchw fwd | **1.59x** |" in results_md and "| shape | dtype |" in results_md


def test_cli_errors_are_one_line_and_status_2(tmp_path, capsys):
    assert cli.main(["bench-report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no results.json" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text("{not json")
    assert cli.main(["bench-report", str(tmp_path / "bad")]) == 2
    assert "not a bench result" in capsys.readouterr().err
    good = write_run(tmp_path / "good", ROWS)
    assert cli.main(["bench-report", str(good), "--threshold", "-1"]) == 2


def test_summary_device_time_column():
    """bench --device-time rows: a device-time geomean per configuration where every timed row has
    device times; without them the table keeps its six columns."""
    dev_rows = [dict(row("a", 0.5, 0.4), ours_device_ms=0.1, pytorch_device_ms=0.2),
                dict(row("b", 2.0, 1.0), ours_device_ms=1.0, pytorch_device_ms=0.5),
                dict(row("c", 1.0, 1.0, dtype="bfloat16", tf32=None), ours_device_ms=1.0),  # one side missing
                row("d", 1.0, 1.0, dtype="bfloat16", tf32=None)]
    f32, bf16 = br.summarize(dev_rows)
    assert f32["device_geomean"] == pytest.approx(1.0) and f32["device_faster"] == 1
    assert "device_geomean" not in bf16
    text = br.summary_markdown([f32, bf16])
    assert "| float32/tf32 nchw fwd | **1.00x** | 1 of 2 | a 0.50x | b 2.00x | 40 | 1.00x (1 of 2) |" in text
    assert "| bfloat16 nchw fwd | **1.00x** | 0 of 2 | c 1.00x | c 1.00x | 40 | - |" in text
    assert "device-time" not in br.summary_markdown(br.summarize(ROWS))
