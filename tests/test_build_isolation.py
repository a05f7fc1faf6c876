"""The build runs in a child and a library is used only after it raised a formatted error there.

A real crash is detected (a stand-in library whose operator segfaults), and a
compiler whose build fails the check is passed over for the system default,
with the verdicts remembered so later imports do not check again.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from convt_op import _build, _isolated_build


def _load_kwargs(name: str, source: Path, out_dir: Path) -> dict:
    return dict(
        name=name,
        sources=[str(source)],
        extra_cflags=["-O0"],
        build_directory=str(out_dir),
        with_cuda=False,
        is_python_module=False,
        is_standalone=False,
        verbose=False,
    )


_STANDIN_BODY = {
    "segfault": "std::raise(SIGSEGV); return input;",
    "good_message": 'TORCH_CHECK(input.dim() == 4, "got input of size: ", input.sizes()); return input;',
}


def _write_standin(tmp_path: Path, behaviour: str) -> Path:
    """A stand-in `convt` library whose operator takes the given error path."""
    body = _STANDIN_BODY[behaviour]
    source = tmp_path / "standin.cpp"
    source.write_text(
        textwrap.dedent(
            f"""
            #include <csignal>
            #include <torch/library.h>
            #include <ATen/ATen.h>
            at::Tensor standin(const at::Tensor& input, const at::Tensor& weight) {{ {body} }}
            TORCH_LIBRARY(convt, m) {{ m.def("conv_transpose2d(Tensor input, Tensor weight) -> Tensor"); }}
            TORCH_LIBRARY_IMPL(convt, CPU, m) {{ m.impl("conv_transpose2d", &standin); }}
            """
        )
    )
    return source


@pytest.mark.parametrize("behaviour", ["segfault", "good_message"])
def test_child_check_tells_crash_from_good_library(tmp_path, behaviour):
    """A stand-in `convt` library that segfaults on the error path fails; one that raises properly passes."""
    source = _write_standin(tmp_path, behaviour)
    name = f"standin_{behaviour}"
    passed, reason = _isolated_build.build_and_check(_load_kwargs(name, source, tmp_path), tmp_path, {})
    if behaviour == "segfault":
        assert not passed and "crashed" in reason and "signal 11" in reason, reason
    else:
        assert passed, reason
    # The verdict is stored beside the library for later imports.
    assert _isolated_build.stored_verdict(tmp_path) == (passed, reason)
    # The parent never loaded the stand-in (it would have clashed with the real convt library).
    assert torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d", "CPU")
    assert "standin" not in str(torch.ops.convt.conv_transpose2d.default._schema)


def test_concurrent_builds_share_one_library(tmp_path):
    """Processes importing at once on a fresh cache (torchrun): each build-and-check succeeds,
    the library is built once (cpp_extension's lock) and one verdict is left behind."""
    from concurrent.futures import ThreadPoolExecutor

    source = _write_standin(tmp_path, "good_message")
    kwargs = _load_kwargs("standin_concurrent", source, tmp_path)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: _isolated_build.build_and_check(kwargs, tmp_path, {}), range(3)))
    assert results == [(True, "ok")] * 3
    assert _isolated_build.stored_verdict(tmp_path) == (True, "ok")
    assert not list(tmp_path.glob("*.tmp"))  # no per-process verdict files left


def _fake_build_and_check(calls, bad_compiler):
    """Stands in for the child: 'builds' a file and fails the check for bad_compiler."""

    def fake(load_kwargs, out_dir, env_changes):
        calls.append(env_changes.get("CXX"))
        (out_dir / f"{load_kwargs['name']}.so").write_bytes(b"")
        passed = env_changes.get("CXX") != bad_compiler
        reason = "ok" if passed else "it crashed (signal 11) while formatting an error message"
        (out_dir / _isolated_build.VERDICT_FILE).write_text("ok\n" if passed else f"failed\n{reason}\n")
        return passed, reason

    return fake


def test_failed_compiler_falls_back_to_default(tmp_path, monkeypatch, capfd):
    bad = "/opt/broken/bin/g++"
    monkeypatch.setenv("CONVT_OP_BUILD_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", bad)
    monkeypatch.delenv("CC", raising=False)
    calls: list = []
    monkeypatch.setattr(_isolated_build, "build_and_check", _fake_build_and_check(calls, bad))

    lib = _build.build()
    assert calls == [bad, None]  # the environment's compiler first, then the default
    assert lib.parent.name == f"convt_op_C_{_build._build_key(_build.cuda_enabled(), {'CXX': None, 'CC': None})}"
    err = capfd.readouterr().err
    assert f"built with CXX={bad} is unusable" in err and "signal 11" in err

    # Both verdicts are remembered: a second build() checks nothing again and picks the same library.
    assert _build.build() == lib
    assert calls == [bad, None]


def test_all_compilers_failing_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CONVT_OP_BUILD_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "/opt/broken/bin/g++")
    calls: list = []
    fake = _fake_build_and_check(calls, None)  # every compiler "fails", the default (None) included

    def all_fail(load_kwargs, out_dir, env_changes):
        passed, _ = fake(load_kwargs, out_dir, {**env_changes, "CXX": None})
        return passed, "it crashed (signal 11) while formatting an error message"

    monkeypatch.setattr(_isolated_build, "build_and_check", all_fail)
    with pytest.raises(RuntimeError, match=r"no usable operator library(.|\n)*Point CXX and CC at the system's g\+\+"):
        _build.build()
    assert len(calls) == 2


def test_compiler_is_part_of_the_build_key():
    default = _build._build_key(False, {"CXX": None, "CC": None})
    assert _build._build_key(False, {"CXX": "/usr/bin/g++", "CC": None}) != default
    assert _build._build_key(False, {"CXX": None, "CC": None}) == default
