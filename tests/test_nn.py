"""The module API: convt_op.ConvTranspose2d is a drop-in for nn.ConvTranspose2d,
and convert(model) swaps modules in place without changing outputs, state or
parameter identity. Everything in float64 against PyTorch's own modules.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import convt_op
from cases import TOLERANCE, relative_error

F64 = torch.float64

MODULE_CONFIGS = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), output_padding=(1, 0)),
    dict(in_channels=6, out_channels=4, kernel_size=4, stride=2, padding=1, groups=2, bias=False),
    dict(in_channels=4, out_channels=8, kernel_size=3, stride=3, padding=2, output_padding=2, dilation=(2, 1), groups=4),
    dict(in_channels=4, out_channels=4, kernel_size=3, stride=2, groups=4),  # depthwise
    dict(in_channels=3, out_channels=5, kernel_size=(1, 3), stride=(1, 2), padding=(0, 1), dilation=2),
]


_SHORT = dict(in_channels="cin", out_channels="cout", kernel_size="k", stride="s", padding="p",
              output_padding="op", dilation="d", groups="g", bias="bias")


def _config_id(config: dict) -> str:
    return "-".join(f"{_SHORT[k]}{v}" for k, v in config.items()).replace(" ", "")


def _pair_of_modules(config: dict, seed: int = 0):
    """PyTorch's module and ours with the same initial parameters (same seed)."""
    torch.manual_seed(seed)
    theirs = nn.ConvTranspose2d(**config, dtype=F64)
    torch.manual_seed(seed)
    ours = convt_op.ConvTranspose2d(**config, dtype=F64)
    return theirs, ours


def _input(config: dict, batch=2, hw=(5, 6), seed=1):
    shape = (config["in_channels"], *hw) if batch is None else (batch, config["in_channels"], *hw)
    return torch.randn(shape, dtype=F64, generator=torch.Generator().manual_seed(seed))


def _assert_state_dicts_equal(a: dict, b: dict):
    assert list(a.keys()) == list(b.keys())
    for key in a:
        assert a[key].shape == b[key].shape and a[key].dtype == b[key].dtype
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("config", MODULE_CONFIGS, ids=_config_id)
def test_module_same_init_state_and_repr(config):
    theirs, ours = _pair_of_modules(config)
    assert isinstance(ours, nn.ConvTranspose2d)
    _assert_state_dicts_equal(theirs.state_dict(), ours.state_dict())
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("batch", [2, None], ids=["batched", "unbatched"])
@pytest.mark.parametrize("config", MODULE_CONFIGS, ids=_config_id)
def test_module_forward_and_backward_match(config, batch):
    theirs, ours = _pair_of_modules(config)
    x_theirs = _input(config, batch).requires_grad_()
    x_ours = x_theirs.detach().clone().requires_grad_()
    out_theirs, out_ours = theirs(x_theirs), ours(x_ours)
    assert out_ours.shape == out_theirs.shape
    assert relative_error(out_ours, out_theirs) <= TOLERANCE[F64]
    grad = torch.randn(out_theirs.shape, dtype=F64)
    out_theirs.backward(grad)
    out_ours.backward(grad)
    assert relative_error(x_ours.grad, x_theirs.grad) <= TOLERANCE[F64]
    for (name, p_theirs), (_, p_ours) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert relative_error(p_ours.grad, p_theirs.grad) <= TOLERANCE[F64], name


def test_module_load_state_dict_from_pytorch_module():
    config = MODULE_CONFIGS[3]
    theirs = nn.ConvTranspose2d(**config, dtype=F64)
    ours = convt_op.ConvTranspose2d(**config, dtype=F64)
    ours.load_state_dict(theirs.state_dict())
    x = _input(config)
    assert relative_error(ours(x), theirs(x)) <= TOLERANCE[F64]
    theirs.load_state_dict(ours.state_dict())  # and back


@pytest.mark.parametrize(
    "config,hw,output_size",
    [
        (dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1), (5, 6), (10, 12)),
        (dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1), (5, 6), [9, 11]),
        (dict(in_channels=4, out_channels=6, kernel_size=3, stride=(3, 2), padding=1, dilation=2), (4, 5), (13, 12)),  # H in [12, 14], W in [11, 12]
        (dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1), (5, 6), (2, 4, 10, 12)),  # N, C too
    ],
    ids=["h+1_w+1", "exact", "dilation", "full_size"],
)
def test_module_output_size_argument(config, hw, output_size):
    theirs, ours = _pair_of_modules(config)
    x = _input(config, hw=hw)
    expected = theirs(x, output_size=output_size)
    got = ours(x, output_size=output_size)
    assert got.shape == expected.shape and tuple(got.shape[-2:]) == tuple(output_size[-2:])
    assert relative_error(got, expected) <= TOLERANCE[F64]


def test_module_output_size_unbatched():
    config = dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1)
    theirs, ours = _pair_of_modules(config)
    x = _input(config, batch=None)
    expected = theirs(x, output_size=(10, 12))
    assert relative_error(ours(x, output_size=(10, 12)), expected) <= TOLERANCE[F64]


def test_module_output_size_out_of_range_raises_like_pytorch():
    config = dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1)
    theirs, ours = _pair_of_modules(config)
    x = _input(config)
    with pytest.raises(ValueError) as expected:
        theirs(x, output_size=(20, 20))
    with pytest.raises(ValueError) as got:
        ours(x, output_size=(20, 20))
    assert str(got.value) == str(expected.value)


def test_module_channels_last_input():
    config = MODULE_CONFIGS[1]
    theirs, ours = _pair_of_modules(config)
    x = _input(config).contiguous(memory_format=torch.channels_last)
    got, expected = ours(x), theirs(x)
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert relative_error(got, expected) <= TOLERANCE[F64]


def test_module_uses_convt_op():
    """Our module really runs convt's op (not a fallback to PyTorch's)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func)
            return func(*args, **(kwargs or {}))

    _, ours = _pair_of_modules(MODULE_CONFIGS[1])
    with Record() as record:
        ours(_input(MODULE_CONFIGS[1]))
    assert torch.ops.convt.conv_transpose2d.default in record.ops
    assert torch.ops.aten.convolution.default not in record.ops


# ---------------------------------------------------------------------------
# convert(model)


class _Decoder(nn.Module):
    """A small decoder with nested containers, a subclass and other layers."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1),
            nn.BatchNorm2d(6),
            nn.ReLU(),
        )
        self.blocks = nn.ModuleList(
            [
                nn.Sequential(nn.ConvTranspose2d(6, 6, 3, padding=1, groups=3, bias=False), nn.GELU()),
                nn.Sequential(nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1, dilation=1)),
            ]
        )
        self.head = nn.ModuleDict({"out": nn.ConvTranspose2d(4, 3, (3, 5), stride=(1, 2), padding=(1, 2), dilation=(1, 2))})
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.conv(self.head["out"](x))


class _ScaledConvT(nn.ConvTranspose2d):
    """A user subclass with its own forward: convert() must leave it alone."""

    def forward(self, input, output_size=None):
        return 2 * super().forward(input, output_size)


def _decoder(seed=0):
    torch.manual_seed(seed)
    model = _Decoder().double()
    model.eval()  # BatchNorm uses its (randomised) running statistics
    with torch.no_grad():
        model.stem[1].running_mean.uniform_(-0.5, 0.5)
        model.stem[1].running_var.uniform_(0.5, 1.5)
    return model


def test_convert_decoder_outputs_state_and_identity():
    reference = _decoder()
    model = copy.deepcopy(reference)
    params_before = {name: p for name, p in model.named_parameters()}
    buffers_before = {name: b for name, b in model.named_buffers()}
    conv_names = [name for name, m in model.named_modules() if type(m) is nn.ConvTranspose2d]
    assert len(conv_names) == 4

    returned = convt_op.convert(model)

    assert returned is model
    modules = dict(model.named_modules())
    for name in conv_names:
        assert type(modules[name]) is convt_op.ConvTranspose2d
    assert type(model.conv) is nn.Conv2d and type(model.stem[1]) is nn.BatchNorm2d
    # Same parameter and buffer objects, same state_dict.
    assert {name: p for name, p in model.named_parameters()}.keys() == params_before.keys()
    for name, p in model.named_parameters():
        assert p is params_before[name], name
    for name, b in model.named_buffers():
        assert b is buffers_before[name], name
    _assert_state_dicts_equal(reference.state_dict(), model.state_dict())

    x = torch.randn(2, 8, 4, 5, dtype=F64)
    expected, got = reference(x), model(x)
    assert got.shape == expected.shape
    assert relative_error(got, expected) <= TOLERANCE[F64]


def test_convert_gradients_match_pytorch():
    # eval(): in training mode BatchNorm would cancel the first conv's bias gradient.
    reference = _decoder(seed=1)
    model = convt_op.convert(copy.deepcopy(reference))
    x = torch.randn(2, 8, 4, 5, dtype=F64)
    grad = None
    for m in (reference, model):
        out = m(x)
        grad = torch.randn(out.shape, dtype=F64, generator=torch.Generator().manual_seed(2)) if grad is None else grad
        out.backward(grad)
    for (name, p_ref), (_, p) in zip(reference.named_parameters(), model.named_parameters()):
        assert relative_error(p.grad, p_ref.grad) <= TOLERANCE[F64], name


def test_convert_training_mode_updates_same_statistics():
    reference = _decoder(seed=6).train()
    model = convt_op.convert(copy.deepcopy(reference))
    x = torch.randn(2, 8, 4, 5, dtype=F64)
    out_ref, out = reference(x), model(x)
    assert relative_error(out, out_ref) <= TOLERANCE[F64]
    state_ref, state = reference.state_dict(), model.state_dict()
    assert state.keys() == state_ref.keys()
    for key in state:
        if state[key].is_floating_point():
            assert relative_error(state[key], state_ref[key]) <= TOLERANCE[F64], key
        else:  # num_batches_tracked
            assert torch.equal(state[key], state_ref[key]), key


def test_convert_keeps_optimizer_working():
    """An optimizer built before convert() still updates the (same) parameters."""
    reference = _decoder(seed=3)
    model = copy.deepcopy(reference)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1)
    convt_op.convert(model)
    x = torch.randn(1, 8, 4, 5, dtype=F64)
    for m, o in ((reference, opt_ref), (model, opt)):
        o.zero_grad()
        m(x).square().sum().backward()
        o.step()
    for (name, p_ref), (_, p) in zip(reference.named_parameters(), model.named_parameters()):
        assert relative_error(p, p_ref) <= TOLERANCE[F64], name


def test_convert_leaves_subclasses_alone_and_converts_the_root():
    torch.manual_seed(0)
    scaled = _ScaledConvT(4, 4, 3).double()
    model = nn.Sequential(scaled, nn.ConvTranspose2d(4, 2, 3).double())
    convt_op.convert(model)
    assert type(model[0]) is _ScaledConvT
    assert type(model[1]) is convt_op.ConvTranspose2d

    root = nn.ConvTranspose2d(4, 2, 3).double()
    assert convt_op.convert(root) is root and type(root) is convt_op.ConvTranspose2d

    already = convt_op.ConvTranspose2d(4, 2, 3).double()
    assert type(convt_op.convert(already)) is convt_op.ConvTranspose2d


def test_convert_model_without_conv_transpose_is_unchanged():
    model = nn.Sequential(nn.Conv2d(3, 3, 3), nn.ReLU())
    types_before = [type(m) for m in model.modules()]
    assert convt_op.convert(model) is model
    assert [type(m) for m in model.modules()] == types_before


def test_converted_module_keeps_hooks():
    torch.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(4, 2, 3).double())
    seen = []
    model[0].register_forward_hook(lambda module, inputs, output: seen.append(type(module)))
    convt_op.convert(model)
    model(torch.randn(1, 4, 3, 3, dtype=F64))
    assert seen == [convt_op.ConvTranspose2d]


def test_converted_module_state_dict_round_trip_into_pytorch():
    model = convt_op.convert(_decoder(seed=4))
    fresh = _decoder(seed=5)
    fresh.load_state_dict(model.state_dict())
    x = torch.randn(1, 8, 4, 5, dtype=F64)
    assert relative_error(model(x), fresh(x)) <= TOLERANCE[F64]
