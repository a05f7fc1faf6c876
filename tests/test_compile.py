"""convt_op.rewrite and the torch.compile integration (convt_op/compile.py), on the CPU.

CPU substitution is opt-in (device_types=("cpu",)); these tests force it so that
CI, which has no GPU, runs the whole path: Dynamo -> AOTAutograd -> Inductor's
post-grad pass -> convt ops called from the generated code, forward and backward.

What is checked:
- rewrite() on hand-made and make_fx graphs: how many nodes change, which are
  left alone (1-D/3-D transposed, ordinary convolutions, complex dtype, devices
  not enabled, a backward output read although output_mask does not request
  it), and that the rewritten graph computes what the original did.
- torch.compile(fullgraph=True) of a DCGAN-style generator and a UNet-style
  decoder, static and dynamic=True, inference and training: the graphs Inductor
  lowers hold convt ops and no transposed aten convolution, outputs and
  gradients match eager PyTorch, no graph breaks, no recompiles across batch sizes.
- enable()/disable() chain and restore an installed pass; backend="convt" leaves
  no global state; the pass's uuid is stable so the FX graph cache hits in a
  new process.

Compiles on 2 CPU cores take ~5-20 s each; the models are tiny on purpose.
"""

from __future__ import annotations

import copy
import json
import logging
import operator
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch._dynamo
import torch._inductor.config as inductor_config
from torch import nn
from torch._dynamo.utils import counters
from torch._inductor.custom_graph_pass import CustomGraphPass

import convt_op
from fresh_process import run_python
from convt_op.compile import CustomInferenceAwareGraphPass, ConvtPass

aten = torch.ops.aten
CPU = ("cpu",)


# --------------------------------------------------------------------------- models


def dcgan_generator(nz: int = 8, ngf: int = 4, nc: int = 3) -> nn.Module:
    """DCGAN's generator, shrunk: [N, nz, 1, 1] -> [N, nc, 16, 16]."""
    return nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
        nn.BatchNorm2d(ngf * 4),
        nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
        nn.BatchNorm2d(ngf * 2),
        nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
        nn.Tanh(),
    )


class UNetDecoder(nn.Module):
    """A UNet up path: transposed-conv upsampling, skip concatenation, 3x3 convs.

    The three transposed convs cover bias, kernel 2 stride 2, groups with
    output_padding, and dilation with stride 1.
    """

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.conv1 = nn.Conv2d(16, 8, 3, padding=1)
        self.up2 = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
        self.head = nn.ConvTranspose2d(4, 2, 3, padding=2, dilation=2)

    def forward(self, x, skip1, skip2):
        x = torch.relu(self.conv1(torch.cat([self.up1(x), skip1], 1)))
        x = torch.relu(self.conv2(torch.cat([self.up2(x), skip2], 1)))
        return self.head(x)


def unet_inputs(n: int, dtype, memory_format=torch.contiguous_format):
    shapes = [(n, 16, 4, 4), (n, 8, 8, 8), (n, 4, 16, 16)]
    return [torch.randn(s, dtype=dtype).to(memory_format=memory_format) for s in shapes]


class NotTwoD(nn.Module):
    """Transposed convs we must not touch (1-D, 3-D) and an ordinary conv."""

    def __init__(self):
        super().__init__()
        self.t1 = nn.ConvTranspose1d(3, 2, 3, stride=2)
        self.t3 = nn.ConvTranspose3d(3, 2, 3, stride=2)
        self.c2 = nn.Conv2d(3, 2, 3)

    def forward(self, x1, x3, x2):
        return self.t1(x1), self.t3(x3), self.c2(x2)


# --------------------------------------------------------------------------- helpers


def _kind(node: torch.fx.Node) -> str | None:
    """Classifies convolution nodes of a post-grad graph."""
    if node.op != "call_function":
        return None
    t = node.target
    if t is torch.ops.convt.conv_transpose2d.default:
        return "convt_forward"
    if t is torch.ops.convt.conv_transpose2d_backward.default:
        return "convt_backward"
    if t is aten.convolution.default:
        return "aten_transposed" if node.args[6] else "aten_conv"
    if t is aten.convolution_backward.default:
        return "aten_transposed" if node.args[7] else "aten_conv_backward"
    name = str(t)
    if "conv" in name and "transpose" in name:  # e.g. oneDNN fusions of transposed convs
        return "aten_transposed"
    return None


class GraphRecorder(CustomGraphPass):
    """Post-grad *post* pass: records the convolution nodes of each graph Inductor lowers.

    No uuid on purpose: Inductor then bypasses its FX graph cache, so every
    test really compiles (and runs the convt pass) instead of loading a graph.
    """

    def __init__(self):
        self.graphs: list[Counter] = []

    def __call__(self, graph: torch.fx.Graph) -> None:
        self.graphs.append(Counter(k for k in map(_kind, graph.nodes) if k))

    def uuid(self):
        return None


class CountingPass(CustomGraphPass):
    """A pass someone installed before convt_op.enable(): must keep running."""

    def __init__(self):
        self.calls = 0

    def __call__(self, graph: torch.fx.Graph) -> None:
        self.calls += 1

    def uuid(self):
        return "counting-pass-v1"


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch, and leaves the pass slots as it found them."""
    torch._dynamo.reset()
    counters.clear()
    pre, post = inductor_config.post_grad_custom_pre_pass, inductor_config.post_grad_custom_post_pass
    yield
    convt_op.disable()
    inductor_config.post_grad_custom_pre_pass, inductor_config.post_grad_custom_post_pass = pre, post
    torch._dynamo.reset()


def _assert_close(actual, expected, rtol, atol, what=""):
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def _assert_no_graph_breaks():
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])


def _assert_all_substituted(graph_counts: Counter, forward: int, backward: int = 0):
    assert graph_counts["aten_transposed"] == 0, graph_counts
    assert graph_counts["convt_forward"] == forward, graph_counts
    assert graph_counts["convt_backward"] == backward, graph_counts


def _train_step(model, inputs):
    out = model(*inputs)
    # A loss that weighs every output element differently, so grads are not a plain sum.
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype, device=out.device).view_as(out)
    (out * weights).sum().backward()
    return out


def _grads(model, inputs):
    return [p.grad for p in model.parameters()] + [x.grad for x in inputs]


# --------------------------------------------------------------------------- rewrite() unit tests


def _hand_made_graph():
    """A graph of explicit aten nodes: 5 to rewrite, 5 candidates to leave alone, 1 ordinary conv."""
    g = torch.fx.Graph()
    x, w, b = g.placeholder("x"), g.placeholder("w"), g.placeholder("b")
    x1, w1 = g.placeholder("x1"), g.placeholder("w1")
    x3, w3 = g.placeholder("x3"), g.placeholder("w3")
    xc, wc = g.placeholder("xc"), g.placeholder("wc")
    go, wo = g.placeholder("go"), g.placeholder("wo")
    call = g.call_function
    outs = {
        # rewritten
        "t2d": call(aten.convolution.default, (x, w, b, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)),
        "t2d_1elem_lists": call(aten.convolution.default, (x, w, None, [2], [1], [1], True, [0], 1)),
        "unbatched_ct2d": call(aten.conv_transpose2d.input, (call(aten.select.int, (x, 0, 0)), w, b, [2], [1])),
        # left alone
        "ordinary": call(aten.convolution.default, (x, wo, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)),
        "t1d": call(aten.convolution.default, (x1, w1, None, [2], [0], [1], True, [0], 1)),
        "t3d": call(aten.convolution.default, (x3, w3, None, [2, 2, 2], [0, 0, 0], [1, 1, 1], True, [0, 0, 0], 1)),
    }
    # Not an output: no CPU kernel computes complex transposed convs; erased before running.
    call(aten.convolution.default, (xc, wc, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1), name="t2d_complex")
    args = (go, x, w, [3], [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
    bw_a = call(aten.convolution_backward.default, args + ([True, True, False],), name="bw_a")
    bw_b = call(aten.convolution_backward.default, args + ([False, True, True],), name="bw_b")
    bw_c = call(aten.convolution_backward.default, args + ([True, False, False],), name="bw_c")
    outs["bw_a.gi"], outs["bw_a.gw"] = call(operator.getitem, (bw_a, 0)), call(operator.getitem, (bw_a, 1))
    outs["bw_b.gw"], outs["bw_b.gb"] = call(operator.getitem, (bw_b, 1)), call(operator.getitem, (bw_b, 2))
    # Reads grad_weight although the mask does not ask for it (aten gives None): left alone.
    outs["bw_c.gi"], outs["bw_c.gw"] = call(operator.getitem, (bw_c, 0)), call(operator.getitem, (bw_c, 1))
    g.output(tuple(outs.values()))
    gm = torch.fx.GraphModule(nn.Module(), g)
    d = torch.float64
    inputs = [
        torch.randn(2, 4, 5, 5, dtype=d), torch.randn(4, 3, 3, 3, dtype=d), torch.randn(3, dtype=d),
        torch.randn(2, 4, 5, dtype=d), torch.randn(4, 3, 3, dtype=d),
        torch.randn(1, 3, 2, 2, 2, dtype=d), torch.randn(3, 2, 3, 3, 3, dtype=d),
        torch.randn(1, 4, 3, 3, dtype=torch.complex64), torch.randn(4, 2, 3, 3, dtype=torch.complex64),
        torch.randn(2, 3, 10, 10, dtype=d),  # go: the forward output of t2d
        torch.randn(5, 4, 3, 3, dtype=d),  # wo: ordinary conv weight [Cout, Cin, kh, kw]
    ]
    return gm, list(outs), inputs


def _fake_prop(gm, inputs):
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = FakeTensorMode()
    FakeTensorProp(gm, mode).propagate(*[mode.from_tensor(t) for t in inputs])


def test_rewrite_hand_made_graph(caplog):
    gm, names, inputs = _hand_made_graph()
    _fake_prop(gm, inputs)
    original = copy.deepcopy(gm)

    with caplog.at_level(logging.DEBUG, logger="convt_op"):
        count = convt_op.rewrite(gm, device_types=CPU)
    assert count == 5

    by_name = {n.name: n for n in gm.graph.nodes}
    targets = Counter(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    assert targets["convt.conv_transpose2d.default"] == 3
    assert targets["convt.conv_transpose2d_backward.default"] == 2
    assert targets["aten.convolution.default"] == 4  # ordinary, 1-D, 3-D, complex
    assert targets["aten.convolution_backward.default"] == 1  # bw_c
    assert by_name["bw_a"].args[-1] == [True, True, False]
    assert by_name["bw_b"].args[3:] == ([2, 2], [1, 1], [1, 1], 1, [1, 1], [False, True, True])
    assert by_name["bw_c"].target is aten.convolution_backward.default
    # 1-element lists were widened to pairs, as our schema needs.
    one_elem = [n for n in gm.graph.nodes if n.target is torch.ops.convt.conv_transpose2d.default][1]
    assert one_elem.args[3:] == ([2, 2], [1, 1], [0, 0], 1, [1, 1])

    log = caplog.text
    assert "1-D transposed convolution" in log
    assert "3-D transposed convolution" in log
    assert "dtype torch.complex64 not supported" in log
    assert "which output_mask does not request" in log
    assert "rewrote 5 transposed-convolution node(s), left 4 alone" in log

    assert by_name["t2d_complex"].target is aten.convolution.default
    for module in (gm, original):
        module.graph.erase_node(next(n for n in module.graph.nodes if n.name == "t2d_complex"))
        module.recompile()
    actual, expected = gm(*inputs), original(*inputs)
    for name, a, e in zip(names, actual, expected):
        if e is None:  # bw_c.gw: left alone, still aten's None
            assert a is None, name
        else:
            _assert_close(a, e, 1e-12, 1e-12, name)
    # Metadata follows the new ops (shapes unchanged; the backward's extra slot is our empty [0]).
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.convt.conv_transpose2d_backward.default:
            assert len(node.meta["val"]) == 3


def test_rewrite_symbolic_graph_and_devices(caplog):
    """make_fx with symbolic sizes (as in dynamic compile graphs); devices not enabled are left alone."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w, b):
        y = aten.convolution(x, w, b, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
        gi, gw, gb = aten.convolution_backward(y, x, w, [3], [2, 2], [1, 1], [1, 1], True, [1, 1], 1, [True, True, True])
        return y, gi, gw, gb

    x, w, b = torch.randn(2, 4, 5, 6, dtype=torch.float64), torch.randn(4, 3, 3, 2, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    gm = make_fx(f, tracing_mode="symbolic")(x, w, b)
    expected = f(x, w, b)

    with caplog.at_level(logging.DEBUG, logger="convt_op"):
        assert convt_op.rewrite(gm, device_types=("cuda",)) == 0
    assert "device type 'cpu' not enabled" in caplog.text

    assert convt_op.rewrite(gm, device_types=CPU) == 2
    forward = next(n for n in gm.graph.nodes if n.target is torch.ops.convt.conv_transpose2d.default)
    out_val = forward.meta["val"]
    assert any(isinstance(s, torch.SymInt) for s in out_val.shape)  # stayed symbolic
    for a, e in zip(gm(x, w, b), expected):
        _assert_close(a, e, 1e-12, 1e-12)
    x2 = torch.randn(3, 4, 7, 4, dtype=torch.float64)
    for a, e in zip(gm(x2, w, b), f(x2, w, b)):
        _assert_close(a, e, 1e-12, 1e-12)


# --------------------------------------------------------------------------- pass installation


def test_enable_chains_and_disable_restores():
    theirs = CountingPass()
    inductor_config.post_grad_custom_pre_pass = theirs
    convt_op.enable(device_types=CPU)
    ours = inductor_config.post_grad_custom_pre_pass
    assert isinstance(ours, ConvtPass) and ours.previous is theirs and ours.device_types == CPU
    convt_op.enable(device_types=("cpu", "cuda"))  # re-enabling replaces, never nests ours in ours
    ours = inductor_config.post_grad_custom_pre_pass
    assert ours.previous is theirs and ours.device_types == ("cpu", "cuda")

    g = torch.fx.Graph()
    g.output(g.placeholder("x"))
    ours(g)
    assert theirs.calls == 1  # the chained pass ran

    convt_op.disable()
    assert inductor_config.post_grad_custom_pre_pass is theirs
    convt_op.disable()  # idempotent
    assert inductor_config.post_grad_custom_pre_pass is theirs


@pytest.mark.skipif(CustomInferenceAwareGraphPass is None, reason="torch without CustomInferenceAwareGraphPass")
def test_enable_chains_inference_aware_pass():
    seen = []

    class Theirs(CustomInferenceAwareGraphPass):
        def __call__(self, graph, is_inference):
            seen.append(is_inference)

        def uuid(self):
            return "theirs"

    inductor_config.post_grad_custom_pre_pass = Theirs()
    convt_op.enable(device_types=CPU)
    ours = inductor_config.post_grad_custom_pre_pass
    # Inductor passes is_inference only to passes of this class: ours must be one too.
    assert isinstance(ours, CustomInferenceAwareGraphPass) and isinstance(ours, ConvtPass)
    g = torch.fx.Graph()
    g.output(g.placeholder("x"))
    ours(g, is_inference=True)
    ours(g, is_inference=False)
    assert seen == [True, False]


def test_pass_uuid():
    a, b = ConvtPass(CPU), ConvtPass(CPU)
    assert a.uuid() == b.uuid() and a.uuid() is not None
    assert ConvtPass(("cpu", "cuda")).uuid() != a.uuid()
    assert ConvtPass(CPU, previous=CountingPass()).uuid() not in (None, a.uuid())
    # A chained pass without a uuid makes the whole pass uncacheable (Inductor then bypasses the cache).
    assert ConvtPass(CPU, previous=lambda graph: None).uuid() is None


# --------------------------------------------------------------------------- torch.compile end to end

# (model factory, input factory(batch, dtype, memory_format), ordinary convs in it)
MODELS = {
    "dcgan": (dcgan_generator, lambda n, dtype, fmt: [torch.randn(n, 8, 1, 1, dtype=dtype)], 0),
    "unet": (UNetDecoder, unet_inputs, 2),
}


def _backend_installed() -> bool:
    """Whether the "convt" entry point is visible: only once the package is pip-installed."""
    from importlib.metadata import entry_points

    return any(e.name == "convt" for e in entry_points(group="torch_dynamo_backends"))


def _compile(model, way: str, dynamic: bool):
    """The two ways in: convt_op.enable() + default Inductor, or backend="convt".

    In a bare checkout (package not installed) the backend is passed as the function
    the entry point names; test_backend_entry_point checks the name itself."""
    if way == "enable":
        convt_op.enable(device_types=CPU)
        return torch.compile(model, fullgraph=True, dynamic=dynamic)
    backend = "convt" if _backend_installed() else convt_op.compile.convt_backend
    return torch.compile(model, backend=backend, fullgraph=True, dynamic=dynamic, options={"device_types": CPU})


@pytest.mark.skipif(not _backend_installed(), reason="package not pip-installed: no entry points")
def test_backend_entry_point():
    """torch.compile(backend="convt") finds convt_op.compile.convt_backend through the entry point."""
    from torch._dynamo.backends.registry import lookup_backend

    assert lookup_backend("convt") is convt_op.compile.convt_backend


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("way", ["enable", "backend"])
@pytest.mark.parametrize("name", ["dcgan", "unet"])
def test_compiled_inference(name, way, dynamic):
    """float32, channels_last inputs, eval mode, under no_grad: one forward graph."""
    make_model, make_inputs, ordinary_convs = MODELS[name]
    torch.manual_seed(0)
    model = make_model().eval()
    before = inductor_config.post_grad_custom_pre_pass
    recorder = GraphRecorder()
    compiled = _compile(model, way, dynamic)
    with torch.no_grad(), inductor_config.patch(post_grad_custom_post_pass=recorder):
        for batch in (2, 3) if dynamic else (2,):
            inputs = make_inputs(batch, torch.float32, torch.channels_last)
            _assert_close(compiled(*inputs), model(*inputs), 1e-4, 1e-4, f"output, batch {batch}")
    if way == "backend":
        assert inductor_config.post_grad_custom_pre_pass is before  # nothing global left behind
    assert len(recorder.graphs) == 1, recorder.graphs  # dynamic: no recompile for a new batch size
    _assert_all_substituted(recorder.graphs[0], forward=3)
    assert recorder.graphs[0]["aten_conv"] == ordinary_convs  # ordinary convs stay with aten
    _assert_no_graph_breaks()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize(("name", "way"), [("dcgan", "enable"), ("unet", "backend")])
def test_compiled_training(name, way, dynamic):
    """float64, train mode, loss.backward(): forward and backward graphs, grads of params and inputs."""
    make_model, make_inputs, ordinary_convs = MODELS[name]
    torch.manual_seed(0)
    model = make_model().double()
    reference = copy.deepcopy(model)
    theirs = CountingPass()  # installed before: must keep running on both graphs
    inductor_config.post_grad_custom_pre_pass = theirs
    recorder = GraphRecorder()
    compiled = _compile(model, way, dynamic)
    with inductor_config.patch(post_grad_custom_post_pass=recorder):
        for batch in (2, 3) if dynamic else (2,):
            inputs = [t.requires_grad_() for t in make_inputs(batch, torch.float64, torch.contiguous_format)]
            inputs_ref = [t.detach().clone().requires_grad_() for t in inputs]
            model.zero_grad()
            reference.zero_grad()
            out = _train_step(compiled, inputs)
            expected = _train_step(reference, inputs_ref)
            _assert_close(out, expected, 1e-9, 1e-9, f"output, batch {batch}")
            for i, (g, e) in enumerate(zip(_grads(model, inputs), _grads(reference, inputs_ref))):
                _assert_close(g, e, 1e-9, 1e-9, f"grad {i}, batch {batch}")
    assert len(recorder.graphs) == 2, recorder.graphs  # one forward, one backward: no recompile
    _assert_all_substituted(recorder.graphs[0], forward=3)
    _assert_all_substituted(recorder.graphs[1], forward=0, backward=3)
    assert recorder.graphs[1]["aten_conv_backward"] == ordinary_convs
    assert theirs.calls == 2
    if way == "backend":
        assert inductor_config.post_grad_custom_pre_pass is theirs
    _assert_no_graph_breaks()


def test_compiled_direct_calls_need_no_pass():
    """A model converted to convt modules compiles with plain Inductor: the ops trace as they are."""
    torch.manual_seed(0)
    model = dcgan_generator().double()
    reference = copy.deepcopy(model)
    convt_op.convert(model)
    recorder = GraphRecorder()
    z = torch.randn(2, 8, 1, 1, dtype=torch.float64, requires_grad=True)
    z_ref = z.detach().clone().requires_grad_()
    with inductor_config.patch(post_grad_custom_post_pass=recorder):
        out = _train_step(torch.compile(model, fullgraph=True), [z])
    _assert_close(out, _train_step(reference, [z_ref]), 1e-9, 1e-9, "output")
    for i, (g, e) in enumerate(zip(_grads(model, [z]), _grads(reference, [z_ref]))):
        _assert_close(g, e, 1e-9, 1e-9, f"grad {i}")
    _assert_all_substituted(recorder.graphs[0], forward=3)
    _assert_all_substituted(recorder.graphs[1], forward=0, backward=3)
    _assert_no_graph_breaks()


def test_1d_3d_and_ordinary_convs_left_alone(caplog):
    torch.manual_seed(0)
    model = NotTwoD().eval()
    convt_op.enable(device_types=CPU)
    recorder = GraphRecorder()
    inputs = (torch.randn(2, 3, 5), torch.randn(1, 3, 2, 3, 2), torch.randn(2, 3, 6, 6))
    with torch.no_grad(), inductor_config.patch(post_grad_custom_post_pass=recorder), caplog.at_level(
        logging.DEBUG, logger="convt_op"
    ):
        out = torch.compile(model, fullgraph=True)(*inputs)
    for a, e in zip(out, model(*inputs)):
        _assert_close(a, e, 1e-5, 1e-5)
    (graph,) = recorder.graphs
    assert graph["convt_forward"] == 0 and graph["aten_conv"] == 1, graph
    assert "1-D transposed convolution" in caplog.text and "3-D transposed convolution" in caplog.text
    assert "rewrote 0 transposed-convolution node(s), left 2 alone" in caplog.text


# --------------------------------------------------------------------------- FX graph cache across processes

_CACHE_SCRIPT = r"""
import json, sys, torch, convt_op
from torch._dynamo.utils import counters
sys.path.insert(0, sys.argv[1])
from test_compile import _train_step

# A lone transposed conv: its graphs hold only convt calls, so no C++ kernel has to be
# compiled (the fresh cache dir would make it compile from scratch, twice as slow).
torch.manual_seed(0)
model = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1).double()
convt_op.enable(device_types=("cpu",))
z = torch.randn(2, 4, 5, 5, dtype=torch.float64, requires_grad=True)
compiled = torch.compile(model, fullgraph=True)
out = _train_step(compiled, [z])
grad_sum = sum(p.grad.sum().item() for p in model.parameters())
with torch.profiler.profile() as prof:  # a second step, so compile-time (fake) calls are not counted
    _train_step(compiled, [z])
names = [e.name for e in prof.events()]
print(json.dumps({
    "hit": counters["inductor"]["fxgraph_cache_hit"],
    "miss": counters["inductor"]["fxgraph_cache_miss"],
    "bypass": counters["inductor"]["fxgraph_cache_bypass"],
    "convt_forward_calls": names.count("convt::conv_transpose2d"),
    "convt_backward_calls": names.count("convt::conv_transpose2d_backward"),
    "out_sum": out.sum().item(),
    "grad_sum": grad_sum,
}))
"""


def test_fx_graph_cache_hit_in_new_process(tmp_path):
    env = {
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor_cache"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
    }
    tests_dir = str(Path(__file__).resolve().parent)
    runs = [json.loads(run_python(_CACHE_SCRIPT, tests_dir, env_extra=env).strip().splitlines()[-1]) for _ in range(2)]
    first, second = runs
    assert first["bypass"] == 0 and first["miss"] >= 2 and first["hit"] == 0, first
    assert second["bypass"] == 0 and second["hit"] >= 2 and second["miss"] == 0, second
    for run in runs:  # the cached code still calls the convt ops, forward and backward
        assert run["convt_forward_calls"] == 1 and run["convt_backward_calls"] == 1, run
    assert first["out_sum"] == pytest.approx(second["out_sum"], rel=1e-12)
    assert first["grad_sum"] == pytest.approx(second["grad_sum"], rel=1e-12)
