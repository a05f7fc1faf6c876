"""The speed targets of the forward and backward issues, checked against `bench` result rows.

Each target applies to every configuration (dtype, TF32, layout, mode) it names, one at a time:
where given, every timed shape at or above `min_each` times PyTorch, the geometric mean at or above
`min_geomean`, every shape within `max_floor_ratio` of its floor (our time / floor time) and within
`max_rel_err` of float64. Rows measured with `bench --device-time` are judged a second time on the
ratio of device times (and on device time against the floor), which tells the rows that host time
bounds apart from the ones our kernels lose; with `bench --host-time` too, a shape below target
whose host time per call is at least its device time is marked "host": there the GPU waits for our
launches. A target is met when the timed conditions all hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from .bench_report import ConfigKey, _timed, config_key, config_label, geomean


@dataclass(frozen=True)
class Target:
    issue: int
    dtypes: tuple[str, ...]
    tf32: bool | None  # True: TF32 float32 rows; False: strict float32 rows; None: 16-bit rows
    layouts: tuple[str, ...]
    mode: str  # "fwd", "fwdbwd", or one backward kernel alone: "grad_input", "grad_weight"
    min_each: float | None  # None: no bound on the ratio to PyTorch (the floor alone)
    min_geomean: float | None = None
    max_floor_ratio: float | None = None
    max_rel_err: float | None = None

    def applies(self, key: ConfigKey) -> bool:
        dtype, tf32, layout, mode = key
        return dtype in self.dtypes and tf32 == self.tf32 and layout in self.layouts and mode == self.mode

    def rule(self) -> str:
        parts = [] if self.min_each is None else [f">= {self.min_each:.1f}x each"]
        if self.max_floor_ratio is not None:
            parts.append(f"<= {self.max_floor_ratio:.1f}x the floor")
        if self.min_geomean is not None:
            parts.append(f"geomean >= {self.min_geomean:.1f}x")
        if self.max_rel_err is not None:
            parts.append(f"error <= {self.max_rel_err:g}")
        return ", ".join(parts)


BOTH_LAYOUTS = ("nchw", "channels_last")

# Issue 5 (forward) and issue 6 (forward + backward), as their tables state them. Issue 6's "each
# backward kernel alone <= 2x its own floor" names no dtype: it is judged on the configurations of
# its table that `bench --mode grad_input,grad_weight` measures (float32 with TF32, bfloat16).
TARGETS = [
    Target(5, ("float32",), True, ("nchw",), "fwd", 1.5, 3.0, max_floor_ratio=1.5),
    Target(5, ("float32",), True, ("channels_last",), "fwd", 1.0, 1.5),
    Target(5, ("bfloat16", "float16"), None, BOTH_LAYOUTS, "fwd", 1.0, 1.5),
    Target(5, ("float32",), False, BOTH_LAYOUTS, "fwd", 2.0, max_rel_err=1e-5),
    Target(6, ("float32",), True, ("nchw",), "fwdbwd", 1.2, 2.0),
    Target(6, ("bfloat16",), None, BOTH_LAYOUTS, "fwdbwd", 1.0, 1.3),
    Target(6, ("float32",), True, BOTH_LAYOUTS, "grad_input", None, max_floor_ratio=2.0),
    Target(6, ("float32",), True, BOTH_LAYOUTS, "grad_weight", None, max_floor_ratio=2.0),
    Target(6, ("bfloat16",), None, BOTH_LAYOUTS, "grad_input", None, max_floor_ratio=2.0),
    Target(6, ("bfloat16",), None, BOTH_LAYOUTS, "grad_weight", None, max_floor_ratio=2.0),
]


def host_bound(row: dict) -> bool:
    """Our host time per call at least our device time per call (both measured): the GPU idles."""
    host_us, device_ms = row.get("ours_host_us"), row.get("ours_device_ms")
    return host_us is not None and device_ms is not None and host_us >= 1e3 * device_ms


def _device_ratio(row: dict) -> float | None:
    ours, theirs = row.get("ours_device_ms"), row.get("pytorch_device_ms")
    return theirs / ours if ours and theirs else None


def evaluate(rows: list[dict], targets: list[Target] = TARGETS) -> list[dict]:
    """One entry per (target, configuration present in rows), in the targets' order."""
    by: dict[ConfigKey, list[dict]] = {}
    for row in rows:
        if _timed(row):
            by.setdefault(config_key(row), []).append(row)
    out = []
    for target in targets:
        for key, group in by.items():
            if not target.applies(key):
                continue
            speedups = [r["speedup"] for r in group]
            each = target.min_each
            below = [] if each is None else [(r["shape"], r["speedup"]) for r in group if r["speedup"] < each]
            entry = {
                "issue": target.issue, "config": key, "label": config_label(key), "rule": target.rule(),
                "min_each": each,
                "shapes": len(group), "geomean": geomean(speedups),
                "below": below,
                "host_bound": {r["shape"] for r in group if each is not None and r["speedup"] < each and host_bound(r)},
            }
            met = not entry["below"] and (target.min_geomean is None or entry["geomean"] >= target.min_geomean)
            if target.max_floor_ratio is not None:
                bound = target.max_floor_ratio
                within = [r for r in group if r.get("floor_ms") and r["ours_ms"] / r["floor_ms"] <= bound]
                entry["within_floor"] = len(within)
                met = met and len(within) == len(group)
                if all(r.get("floor_ms") and r.get("ours_device_ms") for r in group):
                    entry["device_within_floor"] = sum(r["ours_device_ms"] / r["floor_ms"] <= bound for r in group)
            if target.max_rel_err is not None:
                entry["max_rel_err"] = max((r.get("rel_err") or 0.0) for r in group)
                met = met and entry["max_rel_err"] <= target.max_rel_err
            device = [(r["shape"], _device_ratio(r)) for r in group]
            if all(d is not None for _, d in device):
                entry["device_geomean"] = geomean([d for _, d in device])
                entry["device_below"] = [] if each is None else [(s, d) for s, d in device if d < each]
            entry["met"] = met
            out.append(entry)
    return out


def _shapes(pairs: list[tuple[str, float]], bound: float, host: set[str] = frozenset()) -> str:
    # Three decimals where two would round up to the bound the shape misses (1.4996x of 1.5x).
    return ", ".join((f"{s} {x:.3f}x" if round(x, 2) >= bound else f"{s} {x:.2f}x") + (" host" if s in host else "")
                     for s, x in pairs)


def _floor_total_rows(entries: list[dict]) -> list[str]:
    """Issue 6's "each backward kernel alone" judged over all its configurations at once: per issue and
    rule whose entries bound the floor alone (no ratio to PyTorch) in two or more configurations, one
    row with the rows within the bound summed (the count that target is read by)."""
    groups: dict[tuple[int, str], list[dict]] = {}
    for e in entries:
        if e["min_each"] is None and "within_floor" in e:
            groups.setdefault((e["issue"], e["rule"]), []).append(e)
    lines = []
    for (issue, rule), group in groups.items():
        if len(group) < 2:
            continue
        shapes = sum(e["shapes"] for e in group)
        timed = f"within the floor bound: {sum(e['within_floor'] for e in group)} of {shapes}"
        device = "-"
        if all("device_within_floor" in e for e in group):
            device = f"within the floor bound: {sum(e['device_within_floor'] for e in group)} of {shapes}"
        met = all(e["met"] for e in group)
        lines.append(f"| {issue} | all {len(group)} of its configurations above | {rule} | {timed} | {device} | "
                     f"{'**yes**' if met else 'no'} |")
    return lines


def targets_markdown(entries: list[dict]) -> str:
    """A row per evaluated configuration: the rule, what the timed and device ratios give, met or not;
    then, for a floor-only target measured in several configurations, their sum (_floor_total_rows)."""
    if not entries:
        return "No configuration of these results has an issue target."
    lines = ["| issue | configuration | target | timed | device | met |", "|---|---|---|---|---|---|"]
    for e in entries:
        timed = f"geomean {e['geomean']:.2f}x"
        if e["below"]:
            timed += f"; below: {_shapes(e['below'], e['min_each'], e['host_bound'])}"
        if "within_floor" in e:
            timed += f"; within the floor bound: {e['within_floor']} of {e['shapes']}"
        if "max_rel_err" in e:
            timed += f"; max error {e['max_rel_err']:.1e}"
        if "device_geomean" in e:
            device = f"geomean {e['device_geomean']:.2f}x"
            if e["device_below"]:
                device += f"; below: {_shapes(e['device_below'], e['min_each'])}"
            if "device_within_floor" in e:
                device += f"; within the floor bound: {e['device_within_floor']} of {e['shapes']}"
        else:
            device = "-"
        lines.append(f"| {e['issue']} | {e['label']} | {e['rule']} | {timed} | {device} | "
                     f"{'**yes**' if e['met'] else 'no'} |")
    return "\n".join(lines + _floor_total_rows(entries))
