"""CPU-side pytest setup shared by the test files (no GPU fixtures here).

- Makes the checkout importable when the package is not installed, so that
  `python -m pytest tests/` and a bare `pytest` both test this tree.
- Imports convt_op once up front: the first import compiles the C++ library
  (~20-30 s), better spent here than inside the first test's timing.
- Known library bugs are marked where they are tested, xfail(strict=True), so
  that fixing one flips its tests to XPASS (a failure) and the marker goes
  together with the bug.
- `--shard K/N` keeps every N-th collected test from the K-th (0-based), so that
  N concurrent processes share a test run (scripts/gpu_check.sh GPU_CHECK_SHARDS:
  tests/test_cuda.py took ~590 s in one process on an H100, 165-172 s in four).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

_REPO_ROOT = Path(__file__).resolve().parent.parent
try:
    import convt_op  # noqa: F401
except ImportError:
    sys.path.insert(0, str(_REPO_ROOT))
    import convt_op  # noqa: F401


def pytest_addoption(parser):
    parser.addoption("--shard", default=None, metavar="K/N",
                     help="run only every N-th collected test, starting from the K-th (0 <= K < N)")


def _parse_shard(value: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in value.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard expects K/N with whole numbers, got {value!r}") from None
    if n < 1 or not 0 <= k < n:
        raise pytest.UsageError(f"--shard {value}: need N >= 1 and 0 <= K < N")
    return k, n


def pytest_collection_modifyitems(config, items):
    value = config.getoption("--shard")
    if value is None:
        return
    k, n = _parse_shard(value)
    kept = [item for i, item in enumerate(items) if i % n == k]
    config.hook.pytest_deselected(items=[item for i, item in enumerate(items) if i % n != k])
    items[:] = kept


@pytest.fixture(autouse=True)
def _deterministic_seed():
    """Every test starts from the same global RNG state (cases.Case.make uses its own generator)."""
    torch.manual_seed(0)
    yield


@pytest.fixture
def one_thread():
    """Runs a test with one intra-op thread, then restores the count.

    For gradcheck-style tests that make thousands of calls on tiny tensors:
    there threads only add overhead, and on a loaded 2-core machine the
    OpenMP/MKL worker hand-off of each tiny GEMM was seen to stall for up to
    ~1 ms per call (a 0.2 s gradgradcheck took 5-11 s). Everything else runs
    with the default thread count, so the threaded paths stay tested.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
