"""Compiles the library in a child interpreter and checks it can raise a formatted error.

Why a child: some toolchains produce a library that loads and computes
correctly but crashes the whole process the first time it builds an error
message. We met one: a GPU machine whose ``CXX`` was a GCC 13 wrapper that
links libstdc++ statically; the static copy's iostreams were never initialised
inside a dlopen'ed library, so every ``std::ostringstream`` (any multi-argument
``TORCH_CHECK``) segfaulted while single-literal messages and all kernels
worked. PyTorch's own AOTInductor libraries built with that ``CXX`` crash the
same way. A crash cannot be caught in-process, and ``cpp_extension.load``
loads what it builds (registering the ops for good), so the build and the
check both run in a child. The parent loads the library only once it passed,
and can still rebuild with another compiler if it did not.

The child's stdout and stderr are the parent's, so compiler errors and ninja's
progress show as they would in-process. Its verdict goes to a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

# Written beside the .so by the child: "ok", or "failed" and the reason on the next line.
VERDICT_FILE = "selftest.txt"

_CHILD = r"""
import json, sys
import torch
from torch.utils import cpp_extension
kwargs, verdict_path = json.loads(sys.argv[1]), sys.argv[2]
cpp_extension.load(**kwargs)  # builds if needed, then loads into this child only
try:
    # A 2-D input fails the first check, whose message streams input.sizes()
    # through std::ostringstream: the path that crashes with a broken toolchain.
    torch.ops.convt.conv_transpose2d(torch.randn(2, 3), torch.randn(2, 2, 1, 1))
    verdict = "failed\nno error was raised for a 2-D input"
except RuntimeError as e:
    verdict = "ok" if "[2, 3]" in str(e) else "failed\nunexpected message: " + str(e)[:300]
with open(verdict_path, "w") as f:
    f.write(verdict + "\n")
"""


def stored_verdict(out_dir: Path) -> tuple[bool, str] | None:
    """(passed, reason) from an earlier check of the library in out_dir, or None if never checked."""
    path = out_dir / VERDICT_FILE
    if not path.is_file():
        return None
    lines = path.read_text().splitlines() or ["failed", "empty verdict file"]
    return lines[0] == "ok", (lines[1] if len(lines) > 1 else lines[0])


def build_and_check(load_kwargs: dict, out_dir: Path, env_changes: dict[str, str | None]) -> tuple[bool, str]:
    """Runs cpp_extension.load(**load_kwargs) and the error-path check in a child.

    env_changes sets (str) or removes (None) variables for the child only, e.g.
    the compiler. Returns (passed, reason); raises RuntimeError if the build
    itself failed (the compiler's messages are already on stderr).

    Several processes may do this at once on a fresh cache (torchrun, say):
    cpp_extension's lock file serialises the builds, and each child writes its
    verdict to a file of its own that then replaces VERDICT_FILE atomically,
    so no process reads another's half-written or deleted verdict.
    """
    own_verdict = out_dir / f"{VERDICT_FILE}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    env = dict(os.environ)
    for name, value in env_changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(load_kwargs), str(own_verdict)], env=env
        )
        lib = out_dir / f"{load_kwargs['name']}.so"
        if proc.returncode < 0 and lib.is_file():
            own_verdict.write_text(
                f"failed\nit crashed (signal {-proc.returncode}) while formatting an error message\n"
            )
        elif proc.returncode != 0 or not lib.is_file():
            raise RuntimeError(
                f"convt_op: building the operator library failed (exit status {proc.returncode}); "
                "the compiler's messages are above"
            )
        if not own_verdict.is_file():
            raise RuntimeError(f"convt_op: the build check wrote no verdict to {own_verdict}")
        lines = own_verdict.read_text().splitlines() or ["failed", "empty verdict file"]
        os.replace(own_verdict, out_dir / VERDICT_FILE)
        return lines[0] == "ok", (lines[1] if len(lines) > 1 else lines[0])
    finally:
        own_verdict.unlink(missing_ok=True)
