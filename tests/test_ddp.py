"""DistributedDataParallel with convt's ops: one training step on 2 processes.

Each of the 2 ranks holds the same UNet-style decoder (tests/test_compile.py's
UNetDecoder: three transposed convs covering bias, groups + output_padding and
dilation, plus ordinary convs), converted with convt_op.convert(), wrapped in
DDP, and runs forward, loss, backward (DDP all-reduces and averages the
gradients) and an SGD step on its own slice of data. Each rank also runs the
same step with a DDP copy of the model that keeps PyTorch's nn.ConvTranspose2d.

The parent process then checks, per parameter:
- every rank ends with the same gradient (the all-reduce happened and agreed);
- convt's gradients equal PyTorch's DDP gradients, and both equal a
  single-process float64 reference: the gradient of the mean of the ranks'
  losses over the whole batch (what DDP's averaging must give);
- that reference differs from rank 0's local gradient, so the check above
  cannot pass without the all-reduce;
- losses and updated parameters agree the same way.

Test ids:
- ddp_gloo_cpu: backend gloo, CPU tensors, float64 (runs everywhere, ~10-20 s);
- ddp_nccl: backend nccl, one GPU per rank, float32 with TF32 off (skipped
  unless 2 GPUs and convt CUDA kernels are there).

The workers are started with torch.multiprocessing (spawn) and rendezvous via
init_method=file:// in tmp_path. NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are put in their
environment (and checked there): the shared GPU hosts this runs on need NVLink
multicast off, in every process.
"""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.multiprocessing as mp

import convt_op
from cases import relative_error
from test_compile import UNetDecoder, unet_inputs

WORLD_SIZE = 2
BATCH_PER_RANK = 2
LR = 0.1
TIMEOUT_S = 240  # a hung rendezvous or collective fails the test instead of hanging CI
# NVLink multicast off (the GPU hosts require it: see the module docstring).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return ((out - target) ** 2).mean()


def _setup(dtype: torch.dtype) -> dict:
    """Initial weights and every rank's data, made once in the parent (CPU, float64, then cast)."""
    torch.manual_seed(0)
    model = UNetDecoder().double()
    ranks = []
    for rank in range(WORLD_SIZE):
        torch.manual_seed(100 + rank)
        inputs = unet_inputs(BATCH_PER_RANK, torch.float64)
        target = torch.randn(BATCH_PER_RANK, 2, 16, 16, dtype=torch.float64)
        ranks.append({"inputs": inputs, "target": target})
    # The data in the dtype the ranks compute in, so the float64 reference sees the same (rounded) values.
    for r in ranks:
        r["inputs"] = [t.to(dtype) for t in r["inputs"]]
        r["target"] = r["target"].to(dtype)
    state = {k: v.to(dtype) for k, v in model.state_dict().items()}
    return {"state": state, "ranks": ranks}


def _worker(rank: int, backend: str, device_type: str, dtype: torch.dtype, folder: str) -> None:
    """One rank: a DDP step with convt's ops and one with PyTorch's; saves what it saw."""
    for key, value in MULTICAST_OFF.items():  # spawned processes inherit them; make sure
        assert os.environ.get(key) == value, (key, os.environ.get(key))
    torch.set_num_threads(1)
    if device_type == "cuda":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
        torch.backends.cudnn.allow_tf32 = False  # fp32-accurate on both sides: tight comparison
        torch.backends.cuda.matmul.allow_tf32 = False
    else:
        device = torch.device("cpu")
    torch.distributed.init_process_group(
        backend, init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD_SIZE
    )
    try:
        setup = torch.load(f"{folder}/setup.pt")
        data = setup["ranks"][rank]
        inputs = [t.to(device) for t in data["inputs"]]
        target = data["target"].to(device)
        ddp_kwargs = {"device_ids": [rank]} if device_type == "cuda" else {}
        results = {}
        for name in ("convt", "pytorch"):
            model = UNetDecoder().to(device=device, dtype=dtype)
            model.load_state_dict(setup["state"])
            if name == "convt":
                convt_op.convert(model)
                assert sum(isinstance(m, convt_op.ConvTranspose2d) for m in model.modules()) == 3
            ddp = torch.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)
            optimizer = torch.optim.SGD(ddp.parameters(), lr=LR)
            loss = _loss(ddp(*inputs), target)
            loss.backward()  # DDP all-reduces (averages) the gradients here
            grads = {k: p.grad.detach().cpu().clone() for k, p in model.named_parameters()}
            optimizer.step()
            results[name] = {
                "loss": loss.detach().cpu(),
                "grads": grads,
                "params": {k: p.detach().cpu().clone() for k, p in model.named_parameters()},
            }
        # The local (not all-reduced) gradients of this rank, to show the all-reduce mattered.
        model = UNetDecoder().to(device=device, dtype=dtype)
        model.load_state_dict(setup["state"])
        _loss(model(*inputs), target).backward()
        results["local_grads"] = {k: p.grad.detach().cpu().clone() for k, p in model.named_parameters()}
        torch.save(results, f"{folder}/rank{rank}.pt")
        torch.distributed.barrier()
    finally:
        torch.distributed.destroy_process_group()


def _spawn(backend: str, device_type: str, dtype: torch.dtype, folder: str) -> None:
    context = mp.start_processes(
        _worker, args=(backend, device_type, dtype, folder), nprocs=WORLD_SIZE, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + TIMEOUT_S
    while not context.join(timeout=5):  # raises ProcessRaisedException if a rank failed
        if time.monotonic() > deadline:
            for p in context.processes:
                if p.is_alive():
                    p.kill()
            pytest.fail(f"DDP workers did not finish within {TIMEOUT_S} s")


def _reference(setup: dict) -> dict:
    """Single process, float64, PyTorch's modules: the gradient of the mean of the ranks' losses."""
    model = UNetDecoder().double()
    model.load_state_dict({k: v.double() for k, v in setup["state"].items()})
    losses = [
        _loss(model(*[t.double() for t in r["inputs"]]), r["target"].double()) for r in setup["ranks"]
    ]
    (sum(losses) / WORLD_SIZE).backward()
    grads = {k: p.grad.clone() for k, p in model.named_parameters()}
    params = {k: (p - LR * p.grad).detach() for k, p in model.named_parameters()}
    return {"losses": [l.detach() for l in losses], "grads": grads, "params": params}


BACKENDS = [
    pytest.param("gloo", "cpu", torch.float64, 1e-10, id="ddp_gloo_cpu"),
    pytest.param(
        "nccl", "cuda", torch.float32, 1e-4, id="ddp_nccl",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(
                not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                reason="needs 2 CUDA devices",
            ),
            pytest.mark.skipif(
                not torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d", "CUDA"),
                reason="convt_op built without CUDA kernels",
            ),
        ],
    ),
]


@pytest.mark.parametrize(("backend", "device_type", "dtype", "tol"), BACKENDS)
def test_ddp_step_matches_pytorch(backend, device_type, dtype, tol, tmp_path, monkeypatch):
    if not torch.distributed.is_available() or not torch.distributed.is_backend_available(backend):
        pytest.skip(f"torch.distributed backend {backend!r} not available")
    for key, value in MULTICAST_OFF.items():
        monkeypatch.setenv(key, value)  # inherited by the spawned workers; restored after the test
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    setup = _setup(dtype)
    torch.save(setup, tmp_path / "setup.pt")

    _spawn(backend, device_type, dtype, str(tmp_path))

    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD_SIZE)]
    ref = _reference(setup)
    names = list(ref["grads"])
    assert names and all(set(r[impl]["grads"]) == set(names) for r in ranks for impl in ("convt", "pytorch"))

    for name in names:
        expected = ref["grads"][name]
        # Without the all-reduce a rank would hold its local gradient: make sure that differs.
        assert relative_error(ranks[0]["local_grads"][name], expected) > 100 * tol, name
        for r, result in enumerate(ranks):
            for impl in ("convt", "pytorch"):
                err = relative_error(result[impl]["grads"][name], expected)
                assert err <= tol, f"rank {r} {impl} grad {name}: relative error {err:.2e} > {tol:.0e}"
                err = relative_error(result[impl]["params"][name], ref["params"][name])
                assert err <= tol, f"rank {r} {impl} param {name} after SGD: relative error {err:.2e}"
        # All ranks hold the same averaged gradient of convt's model (bitwise: it is one all-reduce result).
        for result in ranks[1:]:
            assert torch.equal(result["convt"]["grads"][name], ranks[0]["convt"]["grads"][name]), name

    for r, result in enumerate(ranks):
        for impl in ("convt", "pytorch"):
            loss, expected = result[impl]["loss"].double(), ref["losses"][r]
            assert abs(loss - expected) <= tol * abs(expected), f"rank {r} {impl} loss {loss} vs {expected}"

