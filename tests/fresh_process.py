"""Running a script in a fresh Python process that imports this same convt_op."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import convt_op


def run_python(script: str, *args: str, env_extra: dict | None = None, timeout: int = 600) -> str:
    """Runs `python -c script args...` with this checkout's convt_op importable; returns stdout."""
    env = dict(os.environ)
    package_root = str(Path(convt_op.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"subprocess failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc.stdout
