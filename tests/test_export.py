"""torch.export and AOTInductor with convt ops, on the CPU.

Three exported programs of one small decoder (two transposed convs and an
ordinary conv), all with a dynamic batch (torch.export.Dim):
  - "convt":   the model converted with convt_op.convert() before export;
  - "rewrite": a plain nn model, exported, then convt_op.rewrite(ep);
  - "decomp":  the same after run_decompositions() (aten.convolution nodes), rewritten.
Each is saved with torch.export.save. One fresh interpreter (import convt_op,
nothing else shared) loads them all, plus an AOTInductor package compiled from
"convt", runs them on saved inputs and hands the outputs back; they must match
eager PyTorch. AOTInductor runs the custom op through its proxy executor, so
the loading process must have imported convt_op.

The AOTInductor compile is the slow part (~1 min on 2 cores); it is done once.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

import convt_op
from fresh_process import run_python

CPU = ("cpu",)
BATCHES = (2, 5)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(3, 2, 4, stride=2, padding=1, bias=False)
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        return self.conv(torch.relu(self.up2(torch.relu(self.up1(x)))))


def _export(model, x):
    batch = torch.export.Dim("batch", min=1, max=64)
    return torch.export.export(model, (x,), dynamic_shapes=({0: batch},))


def _targets(ep) -> list[str]:
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


_LOAD_SCRIPT = r"""
import json, sys, torch
folder = sys.argv[1]
inputs = torch.load(f"{folder}/inputs.pt")
errors_without_import = {}  # before convt_op is imported, neither loader can resolve the op
try:
    torch.export.load(f"{folder}/convt.pt2")
except Exception as e:
    errors_without_import["export"] = f"{type(e).__name__}: {e}"
try:
    torch._inductor.aoti_load_package(f"{folder}/aoti.pt2")(inputs[0])
except Exception as e:
    errors_without_import["aoti"] = f"{type(e).__name__}: {e}"

import convt_op  # registers the convt ops: torch.export.load and the AOTI runtime need them
results = {}
for name in ("convt", "rewrite", "decomp"):
    module = torch.export.load(f"{folder}/{name}.pt2").module()
    results[name] = [module(x) for x in inputs]
runner = torch._inductor.aoti_load_package(f"{folder}/aoti.pt2")
with torch.profiler.profile() as prof:
    results["aoti"] = [runner(x) for x in inputs]
calls = [e.name for e in prof.events()].count("convt::conv_transpose2d")
torch.save(results, f"{folder}/outputs.pt")
print(json.dumps({"aoti_convt_calls": calls, "errors_without_import": errors_without_import}))
"""


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """Exports, rewrites, saves and AOT-compiles once; loads everything in one fresh process."""
    folder = tmp_path_factory.mktemp("export")
    torch.manual_seed(0)
    model = Decoder().eval()
    example = torch.randn(2, 4, 5, 5)
    inputs = [torch.randn(n, 4, 5, 5) for n in BATCHES]
    with torch.no_grad():
        expected = [model(x) for x in inputs]

    programs = {"convt": _export(convt_op.convert(copy.deepcopy(model)), example)}
    programs["rewrite"] = _export(model, example)
    rewritten = {"rewrite": convt_op.rewrite(programs["rewrite"], device_types=CPU)}
    programs["decomp"] = _export(model, example).run_decompositions()
    rewritten["decomp"] = convt_op.rewrite(programs["decomp"], device_types=CPU)
    for name, ep in programs.items():
        torch.export.save(ep, folder / f"{name}.pt2")

    torch._inductor.aoti_compile_and_package(programs["convt"], package_path=str(folder / "aoti.pt2"))

    torch.save(inputs, folder / "inputs.pt")
    info = json.loads(run_python(_LOAD_SCRIPT, str(folder)).strip().splitlines()[-1])
    loaded = torch.load(folder / "outputs.pt")
    return dict(programs=programs, rewritten=rewritten, inputs=inputs, expected=expected, loaded=loaded, info=info)


def test_exported_graphs_hold_convt_ops(artifacts):
    for name, ep in artifacts["programs"].items():
        targets = _targets(ep)
        assert targets.count("convt.conv_transpose2d.default") == 2, (name, targets)
        assert "aten.conv_transpose2d.input" not in targets, (name, targets)
    assert artifacts["rewritten"] == {"rewrite": 2, "decomp": 2}
    # The ordinary conv is left to aten, in whichever form each program has it.
    assert "aten.conv2d.default" in _targets(artifacts["programs"]["rewrite"])
    decomp = [n for n in artifacts["programs"]["decomp"].graph.nodes if n.target is torch.ops.aten.convolution.default]
    assert len(decomp) == 1 and decomp[0].args[6] is False


@pytest.mark.parametrize("name", ["convt", "rewrite", "decomp"])
def test_exported_program_runs_in_process(artifacts, name):
    module = artifacts["programs"][name].module()
    for x, e in zip(artifacts["inputs"], artifacts["expected"]):
        torch.testing.assert_close(module(x), e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["convt", "rewrite", "decomp"])
def test_saved_program_loads_in_fresh_process(artifacts, name):
    for out, e in zip(artifacts["loaded"][name], artifacts["expected"]):
        torch.testing.assert_close(out, e, rtol=1e-5, atol=1e-5)


def test_aoti_package_runs_convt_in_fresh_process(artifacts):
    for out, e in zip(artifacts["loaded"]["aoti"], artifacts["expected"]):
        torch.testing.assert_close(out, e, rtol=1e-5, atol=1e-5)
    # Two transposed convs per call, two calls: the op really ran, through the proxy executor.
    assert artifacts["info"]["aoti_convt_calls"] == 2 * len(BATCHES), artifacts["info"]


def test_loading_needs_convt_op_imported(artifacts):
    errors = artifacts["info"]["errors_without_import"]
    assert "convt::conv_transpose2d" in errors.get("aoti", ""), errors
    # torch.export.load logs the cause (the unresolved op) and raises a generic RuntimeError.
    assert errors.get("export", "").startswith("RuntimeError"), errors


def test_rewrite_leaves_cpu_alone_by_default():
    torch.manual_seed(0)
    ep = _export(Decoder().eval(), torch.randn(2, 4, 5, 5))
    assert convt_op.rewrite(ep) == 0  # default device_types is ("cuda",)
    assert _targets(ep).count("aten.conv_transpose2d.input") == 2
