"""torch.compile substitution, CUDA graphs and AOTInductor with convt's CUDA kernels.

The GPU counterpart of tests/test_compile.py (whose models and graph recorder
it reuses): a DCGAN-style generator (with BatchNorm) and a UNet-style decoder
(bias, groups + output_padding, dilation, skip concatenations, ordinary convs)
compiled with torch.compile(fullgraph=True), both ways in
(convt_op.enable() with its CUDA default, and the "convt" backend):

- float32 (TF32 on, PyTorch's default for convolutions) and bfloat16 (model
  and inputs in bf16), inference (eval, no_grad) and a training step
  (train mode, forward + backward);
- mode="reduce-overhead" (CUDA graphs around the convt ops): inference with
  enable(), training with the backend's mode, inference with the backend's
  options spelled out ({"triton.cudagraphs": True}, docs/compile.md). Three
  calls warm up and record, a fourth on new values replays; it must be right
  and must not enter the dispatcher for convt (the graph replays the kernels);
- AOTInductor on CUDA: export, convt_op.rewrite(ep), aoti_compile_and_package,
  aoti_load_package, two batch sizes.

Checks: the post-grad graphs Inductor lowers hold convt ops and no transposed
aten convolution (forward and backward), no graph breaks, and outputs and
gradients (parameters and inputs) are as close to eager PyTorch in float64 as
the dtype allows: relative Frobenius error <= max(dtype tolerance, 4 x eager
PyTorch's own error in that dtype), tolerances 1e-2 (TF32) and 3e-2 (bf16).

Skipped (module level) without a CUDA device or with a library built without
CUDA kernels.

Debug: CONVT_COMPILE_TEST_DEVICE=cpu runs the same tests on the CPU with CPU
substitution forced (the CUDA-graph tests skip); this checks the harness on a
machine without a GPU. Slow on 2 cores (~5 min).

About 2-3 minutes on an H100, mostly Inductor compiles (~15 of them).
"""

from __future__ import annotations

import copy
import json
import os

import pytest
import torch
import torch._dynamo
import torch._inductor.config as inductor_config
from torch._dynamo.utils import counters

DEVICE = torch.device(os.environ.get("CONVT_COMPILE_TEST_DEVICE", "cuda"))
ON_CUDA = DEVICE.type == "cuda"

if ON_CUDA and not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import convt_op  # noqa: E402
from cases import relative_error  # noqa: E402
from fresh_process import run_python  # noqa: E402
from convt_op.compile import convt_backend  # noqa: E402
from test_compile import (  # noqa: E402
    GraphRecorder,
    UNetDecoder,
    _assert_all_substituted,
    _assert_no_graph_breaks,
    _fresh_dynamo,  # noqa: F401  (autouse fixture: fresh Dynamo, pass slots restored, per test)
    _grads,
    _train_step,
    dcgan_generator,
    unet_inputs,
)

DISPATCH_KEY = "CUDA" if ON_CUDA else "CPU"
if not torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d", DISPATCH_KEY):
    pytest.skip("convt_op was built without CUDA kernels (no nvcc, or CONVT_OP_NO_CUDA=1)", allow_module_level=True)


pytestmark = pytest.mark.gpu

#: What enable()/the backend substitute: CUDA by default; the CPU debug run opts the CPU in.
DEVICE_TYPES = ("cuda",) if ON_CUDA else ("cpu",)
TOLERANCE = {torch.float32: 1e-2, torch.bfloat16: 3e-2}  # float32 is TF32 on CUDA (PyTorch's default)
DTYPES = [pytest.param(torch.float32, id="float32"), pytest.param(torch.bfloat16, id="bfloat16")]
needs_cuda_graphs = pytest.mark.skipif(not ON_CUDA, reason="CUDA graphs need a CUDA device")

NZ, NGF = 16, 16  # DCGAN generator: [N, 16, 1, 1] -> [N, 3, 16, 16]; widths 64, 32


def _dcgan():
    return dcgan_generator(nz=NZ, ngf=NGF)


def _dcgan_inputs(n, dtype, memory_format=torch.contiguous_format):
    return [torch.randn(n, NZ, 1, 1, dtype=dtype)]


# name -> (model factory, input factory(batch, dtype, memory_format) on the CPU, ordinary convs)
MODELS = {"dcgan": (_dcgan, _dcgan_inputs, 0), "unet": (UNetDecoder, unet_inputs, 2)}
BATCH = 4


# --------------------------------------------------------------------------- helpers


def _backend():
    """The registered "convt" backend when the package is installed (entry point), else the same function."""
    return "convt" if "convt" in torch._dynamo.list_backends(exclude_tags=()) else convt_backend


def _compile(model, way: str, mode: str | None = None, options: dict | None = None):
    if way == "enable":
        convt_op.enable(device_types=DEVICE_TYPES)
        return torch.compile(model, fullgraph=True, mode=mode)
    if options is None and mode is None:
        options = {"device_types": DEVICE_TYPES}
    elif options is not None:
        options = {"device_types": DEVICE_TYPES, **options}
    # With a mode and no options, the pass keeps its default device types (("cuda",)).
    return torch.compile(model, backend=_backend(), fullgraph=True, mode=mode, options=options)


def _inputs(name, batch, dtype, memory_format=torch.contiguous_format, requires_grad=False):
    _, make_inputs, _ = MODELS[name]
    return [t.to(DEVICE).requires_grad_(requires_grad) for t in make_inputs(batch, dtype, memory_format)]


def _check(actual, reference64, eager, dtype, what):
    """actual (compiled, convt) vs float64 PyTorch, allowing what eager PyTorch in `dtype` misses by."""
    ref = reference64.detach().to("cpu", torch.float64)
    assert actual.dtype == eager.dtype and actual.shape == eager.shape, (what, actual.dtype, actual.shape)
    err, eager_err = relative_error(actual, ref), relative_error(eager, ref)
    limit = max(TOLERANCE[dtype], 4 * eager_err)
    assert err <= limit, f"{what}: relative error {err:.2e} > {limit:.1e} (eager PyTorch's: {eager_err:.2e})"


def _convt_dispatcher_calls(fn) -> int:
    """How many times fn enters the dispatcher for a convt op (forward or backward)."""
    with torch.profiler.profile() as prof:
        fn()
        if ON_CUDA:
            torch.cuda.synchronize()
    return sum(e.name.startswith("convt::") for e in prof.events())


# --------------------------------------------------------------------------- torch.compile, default mode


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("way", ["enable", "backend"])
@pytest.mark.parametrize("name", ["dcgan", "unet"])
def test_compiled_inference(name, way, dtype):
    make_model, _, ordinary_convs = MODELS[name]
    torch.manual_seed(0)
    model = make_model().to(DEVICE, dtype).eval()
    eager, reference = copy.deepcopy(model), copy.deepcopy(model).double()
    recorder = GraphRecorder()
    compiled = _compile(model, way)
    inputs = _inputs(name, BATCH, dtype, torch.channels_last)
    with torch.no_grad(), inductor_config.patch(post_grad_custom_post_pass=recorder):
        out = compiled(*inputs)
        expected, out_eager = reference(*[x.double() for x in inputs]), eager(*inputs)
    _check(out, expected, out_eager, dtype, "output")
    assert len(recorder.graphs) == 1, recorder.graphs
    _assert_all_substituted(recorder.graphs[0], forward=3)
    assert recorder.graphs[0]["aten_conv"] == ordinary_convs
    _assert_no_graph_breaks()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "way"), [("dcgan", "enable"), ("unet", "backend")])
def test_compiled_training(name, way, dtype):
    make_model, _, ordinary_convs = MODELS[name]
    torch.manual_seed(0)
    model = make_model().to(DEVICE, dtype)
    eager, reference = copy.deepcopy(model), copy.deepcopy(model).double()
    recorder = GraphRecorder()
    compiled = _compile(model, way)
    inputs = _inputs(name, BATCH, dtype, requires_grad=True)
    inputs_eager = [x.detach().clone().requires_grad_() for x in inputs]
    inputs_ref = [x.detach().double().requires_grad_() for x in inputs]
    with inductor_config.patch(post_grad_custom_post_pass=recorder):
        out = _train_step(compiled, inputs)
    out_eager, expected = _train_step(eager, inputs_eager), _train_step(reference, inputs_ref)
    _check(out, expected, out_eager, dtype, "output")
    for i, (g, e, ge) in enumerate(zip(_grads(model, inputs), _grads(reference, inputs_ref),
                                       _grads(eager, inputs_eager))):
        _check(g, e, ge, dtype, f"grad {i}")
    assert len(recorder.graphs) == 2, recorder.graphs  # one forward, one backward
    _assert_all_substituted(recorder.graphs[0], forward=3)
    _assert_all_substituted(recorder.graphs[1], forward=0, backward=3)
    assert recorder.graphs[1]["aten_conv_backward"] == ordinary_convs
    _assert_no_graph_breaks()


# --------------------------------------------------------------------------- CUDA graphs

# (model, way, mode, options, training)
CUDA_GRAPH_CASES = [
    pytest.param("dcgan", "enable", "reduce-overhead", None, False, id="dcgan-enable-inference"),
    pytest.param("unet", "backend", "reduce-overhead", None, True, id="unet-backend-mode-training"),
    pytest.param("unet", "backend", None, {"triton.cudagraphs": True}, False, id="unet-backend-options-inference"),
]


@needs_cuda_graphs
@pytest.mark.parametrize(("name", "way", "mode", "options", "training"), CUDA_GRAPH_CASES)
def test_cuda_graphs(name, way, mode, options, training):
    """float32. Calls 1-3 warm up and record; call 4, on new values, replays the graph."""
    make_model, _, _ = MODELS[name]
    torch.manual_seed(0)
    model = make_model().to(DEVICE)
    if not training:
        model.eval()
    eager, reference = copy.deepcopy(model), copy.deepcopy(model).double()
    recorder = GraphRecorder()
    compiled = _compile(model, way, mode=mode, options=options)

    def step(inputs):
        torch.compiler.cudagraph_mark_step_begin()
        if training:
            for p in model.parameters():
                p.grad = None
            out = _train_step(compiled, inputs)
            # Graph outputs live in the CUDA-graph pool and are overwritten by the next replay: copy now.
            return out.detach().clone(), [g.detach().clone() for g in _grads(model, inputs)]
        with torch.no_grad():
            return compiled(*inputs).clone(), []

    with inductor_config.patch(post_grad_custom_post_pass=recorder):
        for _ in range(3):
            step(_inputs(name, BATCH, torch.float32, requires_grad=training))
    inputs = _inputs(name, BATCH, torch.float32, requires_grad=training)
    results = []
    calls = _convt_dispatcher_calls(lambda: results.append(step(inputs)))
    (out, grads), = results

    assert counters["inductor"]["cudagraph_skips"] == 0, "Inductor skipped CUDA graphs (see its warning above)"
    assert calls == 0, f"the replayed step entered the dispatcher {calls} times for convt ops: no CUDA graph?"
    inputs_eager = [x.detach().clone().requires_grad_(training) for x in inputs]
    inputs_ref = [x.detach().double().requires_grad_(training) for x in inputs]
    if training:
        out_eager, expected = _train_step(eager, inputs_eager), _train_step(reference, inputs_ref)
        for i, (g, e, ge) in enumerate(zip(grads, _grads(reference, inputs_ref), _grads(eager, inputs_eager))):
            _check(g, e, ge, torch.float32, f"grad {i}")
    else:
        with torch.no_grad():
            out_eager, expected = eager(*inputs_eager), reference(*inputs_ref)
    _check(out, expected, out_eager, torch.float32, "output")
    _assert_all_substituted(recorder.graphs[0], forward=3)
    if training:
        assert len(recorder.graphs) == 2, recorder.graphs
        _assert_all_substituted(recorder.graphs[1], forward=0, backward=3)
    else:
        assert len(recorder.graphs) == 1, recorder.graphs
    _assert_no_graph_breaks()


# --------------------------------------------------------------------------- AOTInductor


# Loaded and run in a fresh process: the package must work where only `import convt_op`
# has registered the ops, and a crash inside the AOTI runtime (seen with torch 2.11 on
# CUDA) fails this test instead of killing the whole pytest run.
_AOTI_RUNNER = """
import json, sys, torch, convt_op
package, inputs, outputs = sys.argv[1:4]
runner = torch._inductor.aoti_load_package(package)
results, calls = [], []
for z in torch.load(inputs):
    with torch.profiler.profile() as prof:
        results.append(runner(z.cuda()).cpu())
        torch.cuda.synchronize()
    calls.append(sum(e.name.startswith("convt::") for e in prof.events()))
torch.save(results, outputs)
print(json.dumps({"calls": calls}))
"""


def test_aoti_package(tmp_path):
    """Plain model exported on the device, rewritten, AOT-compiled, then loaded and run at two batch sizes."""
    if not ON_CUDA:
        pytest.skip("the runner script moves inputs to CUDA")
    torch.manual_seed(0)
    model = _dcgan().to(DEVICE).eval()
    reference = copy.deepcopy(model).double()
    example = _inputs("dcgan", 2, torch.float32)
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(model, tuple(example), dynamic_shapes=({0: batch},))
    assert convt_op.rewrite(ep, device_types=DEVICE_TYPES) == 3
    path = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "dcgan_aoti.pt2"))
    inputs = [_inputs("dcgan", n, torch.float32)[0].cpu() for n in (2, 5)]
    torch.save(inputs, tmp_path / "inputs.pt")
    info = json.loads(run_python(_AOTI_RUNNER, path, str(tmp_path / "inputs.pt"), str(tmp_path / "outputs.pt"),
                                 timeout=300).strip().splitlines()[-1])
    # The package calls the op through the proxy executor, i.e. through the dispatcher.
    assert info["calls"] == [3, 3], info
    for z, out in zip(inputs, torch.load(tmp_path / "outputs.pt")):
        z = z.to(DEVICE)
        with torch.no_grad():
            expected, out_eager = reference(z.double()), model(z)
        _check(out.to(DEVICE), expected, out_eager, torch.float32, f"AOTI output, batch {z.shape[0]}")
