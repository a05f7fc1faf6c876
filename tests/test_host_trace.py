"""CONVT_HOST_TRACE=1 (csrc/host_trace.h): the table of host time per C++ section, printed to
stderr when the process exits; nothing without the knob."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import convt_op

# Three forward+backward steps through autograd on the CPU path (the frontend and autograd
# sections are the same code on every backend).
_SCRIPT = r"""
import torch, convt_op
x = torch.randn(2, 3, 5, 5, dtype=torch.float64, requires_grad=True)
w = torch.randn(3, 4, 3, 3, dtype=torch.float64, requires_grad=True)
for _ in range(3):
    convt_op.conv_transpose2d(x, w, None, stride=2).sum().backward()
"""

_HEADER = "convt host trace (CONVT_HOST_TRACE=1)"


def _stderr_of_run(knob: str | None, script: str = _SCRIPT) -> str:
    env = dict(os.environ)
    package_root = str(Path(convt_op.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.pop("CONVT_HOST_TRACE", None)
    if knob is not None:
        env["CONVT_HOST_TRACE"] = knob
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stderr


def test_host_trace_table_printed_at_exit():
    err = _stderr_of_run("1")
    assert _HEADER in err, err[-4000:]
    table = err[err.index(_HEADER):].splitlines()[1:]
    rows = {cols[0]: cols for cols in (line.split() for line in table) if len(cols) == 5}
    for name in ("op.forward", "op.forward.kernels", "op.backward", "op.backward.kernels",
                 "autograd.forward", "autograd.backward"):
        assert name in rows, (name, table)
        _, calls, total_ms, first_us, later_us = rows[name]
        assert int(calls) == 3, (name, calls)
        assert float(first_us) > 0 and float(later_us) > 0, rows[name]
        # total = the first call + two later ones (the total is printed to 1 us).
        assert abs(float(total_ms) * 1e3 - (float(first_us) + 2 * float(later_us))) < 1.0, rows[name]
    # Nested sections: a whole takes at least as long as its part.
    assert float(rows["op.forward"][2]) >= float(rows["op.forward.kernels"][2])
    assert float(rows["autograd.forward"][2]) >= float(rows["op.forward"][2])


# Calls that record nothing for autograd skip the Function (csrc/autograd.cpp, records_nothing):
# two no_grad forwards and the ordinary backward's own call of the backward op run without it;
# a double backward (create_graph) records the backward op's node.
_SKIP_SCRIPT = r"""
import torch, convt_op
x = torch.randn(2, 3, 5, 5, dtype=torch.float64, requires_grad=True)
w = torch.randn(3, 4, 3, 3, dtype=torch.float64, requires_grad=True)
for _ in range(3):
    convt_op.conv_transpose2d(x, w, None, stride=2).sum().backward()
with torch.no_grad():
    for _ in range(2):
        convt_op.conv_transpose2d(x, w, None, stride=2)
out = convt_op.conv_transpose2d(x, w, None, stride=2)
(gx,) = torch.autograd.grad(out.sum(), [x], create_graph=True)
"""


def test_host_trace_calls_without_a_graph_skip_the_function():
    err = _stderr_of_run("1", _SKIP_SCRIPT)
    table = err[err.index(_HEADER):].splitlines()[1:]
    calls = {cols[0]: int(cols[1]) for cols in (line.split() for line in table) if len(cols) == 5}
    assert calls["op.forward"] == 6, calls
    assert calls["autograd.forward"] == 4, calls  # the three steps and the double-backward one
    assert calls["op.backward"] == 4, calls
    assert calls.get("autograd.backward_op", 0) == 1, calls  # only under create_graph


def test_host_trace_off_without_the_knob():
    assert _HEADER not in _stderr_of_run(None)
    assert _HEADER not in _stderr_of_run("0")
