"""The `--shard K/N` option of tests/conftest.py, by which scripts/gpu_check.sh splits a test run over
concurrent processes (GPU_CHECK_SHARDS): the shards partition the collected tests, and a malformed
value is a usage error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
TARGET = str(TESTS / "test_errors.py")  # CPU tests, a few hundred ids, collected in about a second


def _collect(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", TARGET, "--collect-only", "-q", "-p", "no:cacheprovider", *extra],
                          cwd=TESTS.parent, capture_output=True, text=True, timeout=300)


def _ids(proc: subprocess.CompletedProcess) -> list[str]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_shards_partition_the_collection():
    everything = _ids(_collect())
    assert len(everything) > 30
    shards = [_ids(_collect("--shard", f"{k}/3")) for k in range(3)]
    assert all(shards), [len(s) for s in shards]
    # Every test in exactly one shard, each shard in collection order.
    assert sorted(sum(shards, [])) == sorted(everything)
    assert sum(len(s) for s in shards) == len(everything)
    assert shards[1] == everything[1::3]
    assert _ids(_collect("--shard", "0/1")) == everything


def test_shard_value_errors():
    for value, message in (("3/3", "0 <= K < N"), ("-1/2", "0 <= K < N"), ("2", "whole numbers")):
        proc = _collect(f"--shard={value}")  # "=": a value may start with "-"
        assert proc.returncode == 4, (value, proc.returncode, proc.stdout, proc.stderr)
        assert message in proc.stdout + proc.stderr, (value, proc.stdout, proc.stderr)
