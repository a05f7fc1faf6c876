"""The warp-specialized forwards' consumer turn protocol, model-checked on the CPU.

scripts/turn_protocol_model.py models the mbarrier protocol of forward_kernel_stride.cu and
forward_wgmma_ws.cu (producer, copies, two consumers of four warps each, parity waits that a
warp evaluates only when it polls) and runs it under random schedules. The kernels' protocol,
one turn arrival per warp, must never deadlock. The earlier one, a single arrival by thread 0,
deadlocks in the model where an item is one stage; the test checks that too, so that the model
keeps the power to find the hang it was written for (runs MC-MG hung on the GPU).
"""

from __future__ import annotations

import pytest

from script_models import load_script_model


def _model():
    return load_script_model("turn_protocol_model")


# (ws, nbuf, stages, chunks per item): the kernel == stride forward's plans (2 x 4 hung on the
# GPU; 1 x 4 and 2 x 2 are its fallbacks) and the ws forward with 1 and 2 chunks per item.
PLANS = [(False, 2, 4, 1), (False, 1, 4, 1), (False, 2, 2, 1), (True, 2, 6, 1), (True, 2, 6, 2)]


@pytest.mark.parametrize("plan", PLANS, ids=[f"{'ws' if p[0] else 'ks'}-{p[1]}x{p[2]}-c{p[3]}" for p in PLANS])
def test_turn_per_warp_never_deadlocks(plan):
    ws, nbuf, stages, chunks = plan
    model = _model()
    for seed in range(150):
        stuck = model.simulate(seed, 4, ws, runs=5, cols=4, nbuf=nbuf, stages=stages, chunks=chunks)
        assert stuck is None, (seed, stuck)


def test_turn_by_one_thread_deadlocks_in_the_model():
    model = _model()
    stuck = [model.simulate(seed, 1, False, runs=5, cols=4, nbuf=2, stages=4, chunks=1) for seed in range(40)]
    deadlocks = [s for s in stuck if isinstance(s, dict)]
    assert deadlocks, "the model no longer finds the single-arrival hang"
    # The shape of MG's hang: the producer on `empty`, a consumer's warps on their turn.
    assert any(v[0].startswith("wait turn") for d in deadlocks for v in d.values())
