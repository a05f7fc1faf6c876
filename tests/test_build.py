"""The build: sources found, cache hit on an unchanged tree (no rebuild, no
output), a changed source changes the cache key, and `python -m convt_op build`
works as a command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

import convt_op
from convt_op import _build


def test_sources_found():
    root = _build.source_dir()
    assert (root / "convt.cpp").is_file()
    assert (root / "frontend.cpp").is_file() and (root / "geometry.h").is_file()
    cpu_sources = _build._sources(with_cuda=False)
    names = {p.relative_to(root).as_posix() for p in cpu_sources}
    assert {"convt.cpp", "frontend.cpp", "cpu/conv_transpose2d.cpp"} <= names
    assert not any(p.suffix == ".cu" for p in cpu_sources)
    cuda_names = {p.relative_to(root).as_posix() for p in _build._sources(with_cuda=True)}
    assert "cuda/register.cpp" in cuda_names and any(n.endswith(".cu") for n in cuda_names)


def test_library_loaded_and_ops_registered():
    path = convt_op.library_path()
    assert path.is_file() and path.suffix == ".so"
    assert path.parent.parent == _build.build_dir_root()
    assert hasattr(torch.ops.convt, "conv_transpose2d")
    assert hasattr(torch.ops.convt, "conv_transpose2d_backward")
    # The CPU kernel is registered in C++.
    assert torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d", "CPU")
    assert torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d_backward", "CPU")


def test_build_is_cached(capfd):
    """An unchanged tree is not rebuilt: same path, fast, and silent."""
    loaded = convt_op.library_path()
    mtime = loaded.stat().st_mtime_ns
    capfd.readouterr()
    start = time.perf_counter()
    again = _build.build()
    elapsed = time.perf_counter() - start
    captured = capfd.readouterr()
    assert again == loaded
    assert elapsed < 5.0, f"build() took {elapsed:.1f} s on an unchanged tree"
    assert captured.out == "" and captured.err == ""
    assert loaded.stat().st_mtime_ns == mtime
    assert _build.load_library() == loaded  # loading twice is a no-op


def test_build_key_depends_on_sources(tmp_path, monkeypatch):
    """Editing any source or header changes the key (a stale .so is never reused); nothing is compiled here."""
    key = _build._build_key(with_cuda=False)
    assert key == _build._build_key(with_cuda=False)  # deterministic

    copy = tmp_path / "csrc"
    shutil.copytree(_build.source_dir(), copy)
    monkeypatch.setattr(_build, "source_dir", lambda: copy)
    assert _build._build_key(with_cuda=False) == key  # same contents, other place: same key

    for relative in ("cpu/conv_transpose2d.cpp", "geometry.h"):
        path = copy / relative
        original = path.read_bytes()
        path.write_bytes(original + b"\n// edited\n")
        assert _build._build_key(with_cuda=False) != key, relative
        path.write_bytes(original)
    assert _build._build_key(with_cuda=False) == key


def test_build_dir_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CONVT_OP_BUILD_DIR", str(tmp_path))
    assert _build.build_dir_root() == tmp_path


def test_cli_build_subprocess():
    """`python -m convt_op build` exits 0 and prints the library path (a cache hit here)."""
    package_parent = Path(convt_op.__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package_parent), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "convt_op", "build"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert str(convt_op.library_path()) in result.stdout
    assert "building" not in result.stderr  # cached: nothing compiled
