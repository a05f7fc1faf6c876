"""Summaries of `python -m convt_op bench` results, without a GPU.

    python -m convt_op bench-report RUN [RUN ...] [--against BASE] [--out DIR]

RUN and BASE are folders written by `bench --out` (their results.json). Several RUNs are
merged into one set of rows (a later folder's row replaces an earlier one for the same shape
and configuration), which is how a suite measured in more than one invocation becomes one
result. The report gives, per configuration (dtype, TF32, layout, mode): the geometric mean
of the speedups, how many shapes are faster than PyTorch, the slowest and fastest shape and
the geometric mean of the percent of floor; a shape x configuration matrix of speedups with
our times; each configuration that an issue's speed target names, judged against it
(bench_targets.py: timed, and on device time where the rows have it); and, with --against, each configuration's geomean before and after and the shapes
whose time moved by more than --threshold. With --out, the merged results.json / results.md /
speedup.png and report.md are written there.

Only rows with status "ok" and a measured speedup count; the others are listed as not timed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ConfigKey = tuple  # (dtype, tf32, layout, mode)


class ReportError(Exception):
    """A folder or file the report cannot use; the message says which and why."""


def config_key(row: dict) -> ConfigKey:
    return (row["dtype"], row["tf32"], row["layout"], row["mode"])


def config_label(key: ConfigKey) -> str:
    """The name of a configuration everywhere the benchmark prints one (bench.Config.label too)."""
    dtype, tf32, layout, mode = key
    precision = "" if tf32 is None else ("/tf32" if tf32 else "/strict")
    return f"{dtype}{precision} {layout} {mode}"


def _timed(row: dict) -> bool:
    return row.get("status") == "ok" and row.get("speedup") is not None


def geomean(values: list[float]) -> float:
    if not values:
        raise ValueError("geomean of no values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def load_rows(folders: list[Path]) -> tuple[dict, list[dict]]:
    """(environment of the first folder, merged rows in first-seen order)."""
    env: dict | None = None
    merged: dict[tuple, dict] = {}
    for folder in folders:
        path = Path(folder) / "results.json"
        if not path.is_file():
            raise ReportError(f"{folder}: no results.json (a folder written by `python -m convt_op bench --out`)")
        try:
            data = json.loads(path.read_text())
            rows = data["rows"]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ReportError(f"{path}: not a bench result ({type(err).__name__}: {err})") from None
        if env is None:
            env = data.get("environment", {})
        for row in rows:
            merged[(row["shape"],) + config_key(row)] = row
    if env is None:
        raise ReportError("no result folders given")
    return env, list(merged.values())


def summarize(rows: list[dict]) -> list[dict]:
    """Per configuration, in first-seen order: counts, geomeans, extremes."""
    by: dict[ConfigKey, list[dict]] = {}
    for row in rows:
        by.setdefault(config_key(row), []).append(row)
    out = []
    for key, group in by.items():
        timed = [r for r in group if _timed(r)]
        entry = {"config": key, "label": config_label(key), "shapes": len(group), "timed": len(timed),
                 "not_timed": [r["shape"] for r in group if not _timed(r)]}
        if timed:
            slowest = min(timed, key=lambda r: r["speedup"])
            fastest = max(timed, key=lambda r: r["speedup"])
            pct = [r["ours_pct_floor"] for r in timed if r.get("ours_pct_floor")]
            entry.update(
                geomean=geomean([r["speedup"] for r in timed]),
                faster=sum(r["speedup"] > 1.0 for r in timed),
                slowest=(slowest["shape"], slowest["speedup"]),
                fastest=(fastest["shape"], fastest["speedup"]),
                pct_floor_geomean=geomean(pct) if pct else None,
            )
            # bench --device-time: the same ratio of device times per call, where every timed row
            # has them. It tells host-bound rows apart: there the timed ratio follows the host.
            device = [r["pytorch_device_ms"] / r["ours_device_ms"] for r in timed
                      if r.get("ours_device_ms") and r.get("pytorch_device_ms")]
            if len(device) == len(timed):
                entry.update(device_geomean=geomean(device), device_faster=sum(d > 1.0 for d in device))
        out.append(entry)
    return out


def summary_markdown(summary: list[dict]) -> str:
    # A column of device-time geomeans where any configuration has them (bench --device-time).
    device = any("device_geomean" in e for e in summary)
    lines = ["| configuration | geomean speedup | faster than PyTorch | slowest | fastest | ours % floor (geomean) |"
             + (" device-time geomean (faster) |" if device else ""),
             "|---|---|---|---|---|---|" + ("---|" if device else "")]
    for e in summary:
        if not e["timed"]:
            lines.append(f"| {e['label']} | - | 0 of {e['shapes']} timed | - | - | - |" + (" - |" if device else ""))
            continue
        pct = "-" if e["pct_floor_geomean"] is None else f"{e['pct_floor_geomean']:.0f}"
        dev = ""
        if device:
            dev = (f" {e['device_geomean']:.2f}x ({e['device_faster']} of {e['timed']}) |" if "device_geomean" in e
                   else " - |")
        lines.append(
            f"| {e['label']} | **{e['geomean']:.2f}x** | {e['faster']} of {e['timed']} "
            f"| {e['slowest'][0]} {e['slowest'][1]:.2f}x | {e['fastest'][0]} {e['fastest'][1]:.2f}x | {pct} |" + dev)
    untimed = [f"{e['label']}: {', '.join(e['not_timed'])}" for e in summary if e["not_timed"]]
    if untimed:
        lines.append("")
        lines.append("Not timed (status not ok): " + "; ".join(untimed) + ".")
    return "\n".join(lines)


def matrix_markdown(rows: list[dict]) -> str:
    """Shapes down, configurations across; cells "speedup (ours ms)"; a geomean row."""
    keys = list(dict.fromkeys(config_key(r) for r in rows))
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    cell = {(r["shape"], config_key(r)): r for r in rows}
    lines = ["| shape | " + " | ".join(config_label(k) for k in keys) + " |",
             "|---" * (len(keys) + 1) + "|"]
    for s in shapes:
        cells = []
        for k in keys:
            r = cell.get((s, k))
            if r is None:
                cells.append("")
            elif _timed(r):
                cells.append(f"{r['speedup']:.2f} ({r['ours_ms']:.3f})")
            else:
                cells.append(r.get("status", "-"))
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    foot = []
    for k in keys:
        speedups = [r["speedup"] for r in rows if config_key(r) == k and _timed(r)]
        foot.append(f"**{geomean(speedups):.2f}**" if speedups else "-")
    lines.append("| geomean | " + " | ".join(foot) + " |")
    return "\n".join(lines)


def compare(rows: list[dict], base_rows: list[dict], threshold: float = 0.10) -> list[dict]:
    """Per configuration present in both: geomeans over the shapes timed in both, and the
    shapes whose time (ours) moved by more than `threshold` (a fraction)."""
    base = {(r["shape"],) + config_key(r): r for r in base_rows if _timed(r)}
    out: list[dict] = []
    for key in dict.fromkeys(config_key(r) for r in rows):
        pairs = [(base[(r["shape"],) + key], r) for r in rows
                 if config_key(r) == key and _timed(r) and (r["shape"],) + key in base]
        if not pairs:
            continue
        moved = [(b["shape"], b["ours_ms"], r["ours_ms"], b["speedup"], r["speedup"]) for b, r in pairs
                 if abs(r["ours_ms"] / b["ours_ms"] - 1.0) > threshold]
        out.append({"config": key, "label": config_label(key), "shapes": len(pairs),
                    "before": geomean([b["speedup"] for b, _ in pairs]),
                    "after": geomean([r["speedup"] for _, r in pairs]), "moved": moved})
    return out


def comparison_markdown(comparison: list[dict], threshold: float) -> str:
    if not comparison:
        return "No configuration and shape in common with the base run."
    lines = ["| configuration | shapes | geomean before | geomean after |", "|---|---|---|---|"]
    for c in comparison:
        lines.append(f"| {c['label']} | {c['shapes']} | {c['before']:.2f}x | {c['after']:.2f}x |")
    lines.append("")
    lines.append(f"Our time moved by more than {threshold:.0%} (ms before -> after, speedup before -> after):")
    lines.append("")
    any_moved = False
    for c in comparison:
        for shape, b_ms, a_ms, b_x, a_x in c["moved"]:
            any_moved = True
            lines.append(f"- {c['label']}, {shape}: {b_ms:.3f} -> {a_ms:.3f} ms, {b_x:.2f}x -> {a_x:.2f}x")
    if not any_moved:
        lines.append("- none")
    return "\n".join(lines)


def report_markdown(rows: list[dict], base_rows: list[dict] | None, threshold: float) -> str:
    from .bench_targets import evaluate, targets_markdown  # (it imports this module's helpers)

    parts = ["## Per configuration", "", summary_markdown(summarize(rows)), "",
             "## Speedup per shape (ours ms in brackets)", "", matrix_markdown(rows), ""]
    targets = evaluate(rows)
    if targets:
        parts += ["## Against the issue targets", "", targets_markdown(targets), ""]
    if base_rows is not None:
        parts += ["## Against the base run", "", comparison_markdown(compare(rows, base_rows, threshold), threshold), ""]
    return "\n".join(parts)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m convt_op bench-report",
                                description="summarize (and merge, and compare) bench result folders")
    p.add_argument("runs", nargs="+", type=Path, help="folders written by `python -m convt_op bench --out`")
    p.add_argument("--against", type=Path, default=None, help="an earlier result folder to compare with")
    p.add_argument("--threshold", type=float, default=0.10,
                   help="list shapes whose time moved by more than this fraction (default 0.10)")
    p.add_argument("--out", type=Path, default=None,
                   help="write the merged results.json, results.md, speedup.png and report.md here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        env, rows = load_rows(args.runs)
        base_rows = load_rows([args.against])[1] if args.against else None
    except ReportError as err:
        print(f"convt_op bench-report: {err}", file=sys.stderr)
        return 2
    if args.threshold < 0:
        print("convt_op bench-report: --threshold must be >= 0", file=sys.stderr)
        return 2
    text = report_markdown(rows, base_rows, args.threshold)
    if args.out:
        from . import bench  # imports torch; only needed to write the merged results

        args.out.mkdir(parents=True, exist_ok=True)
        sources = [str(r) for r in args.runs]
        (args.out / "results.json").write_text(
            json.dumps({"environment": env, "rows": rows, "merged_from": sources}, indent=1) + "\n")
        if "matmul_flops" in env and "copy_bandwidth_Bps" in env:
            bench.write_markdown(args.out / "results.md", env, rows)
        note = bench.write_plot(args.out / "speedup.png", rows)
        if note:
            print(f"convt_op bench-report: {note}", file=sys.stderr)
        (args.out / "report.md").write_text(text)
        print(f"convt_op bench-report: wrote {args.out}", file=sys.stderr)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
