"""Builds and loads the C++/CUDA operator library.

The sources under ``csrc/`` ship with the package and are compiled on first
import with ``torch.utils.cpp_extension`` and ninja, against whatever torch is
installed. The build lands in a folder named by a hash of the sources, the
flags and the torch/CUDA versions, so an unchanged library is loaded straight
from disk and any change rebuilds it. ``python -m convt_op build`` prebuilds
with ninja's progress shown.

Environment:
  CONVT_OP_BUILD_DIR   where builds are cached (default ~/.cache/convt_op)
  CONVT_OP_NO_CUDA=1   build the CPU kernels only, even where CUDA is available
  TORCH_CUDA_ARCH_LIST GPU architectures to build for (default: the GPUs present,
                       with sm_90a for Hopper so wgmma is available)
  CXX, CC              the C++ compiler (and nvcc's host compiler), as torch.utils.cpp_extension
                       reads them. A build is used only once a child process has seen it raise
                       a formatted error without crashing (see _isolated_build.py); if the one
                       made with CXX/CC fails that, the system default compiler is tried next.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import torch

from . import _isolated_build

_LIB_PREFIX = "convt_op_C"
_loaded_path: Path | None = None


def source_dir() -> Path:
    """The csrc/ folder: inside the package when installed, beside it in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "csrc", here.parent / "csrc"):
        if (candidate / "convt.cpp").is_file():
            return candidate
    raise FileNotFoundError(f"convt_op: C++ sources (csrc/convt.cpp) not found near {here}")


def cuda_enabled() -> bool:
    """True when the CUDA kernels are (to be) built: torch has CUDA and nvcc exists."""
    if os.environ.get("CONVT_OP_NO_CUDA", "") not in ("", "0"):
        return False
    if torch.version.cuda is None:
        return False
    from torch.utils.cpp_extension import CUDA_HOME

    return CUDA_HOME is not None and Path(CUDA_HOME, "bin", "nvcc").exists()


def _sources(with_cuda: bool) -> list[Path]:
    root = source_dir()
    files = sorted(root.glob("*.cpp")) + sorted((root / "cpu").glob("*.cpp"))
    if with_cuda:
        files += sorted((root / "cuda").glob("*.cu")) + sorted((root / "cuda").glob("*.cpp"))
    return files


def _headers(with_cuda: bool) -> list[Path]:
    root = source_dir()
    folders = [root, root / "cpu"] + ([root / "cuda"] if with_cuda else [])
    return sorted(p for folder in folders for ext in ("*.h", "*.cuh") for p in folder.glob(ext))


def _cuda_arch_list() -> str:
    """Architectures for nvcc; Hopper gets the 'a' variant (wgmma, setmaxnreg)."""
    env = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if env:
        return env
    archs = []
    for i in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(i)
        arch = f"{major}.{minor}" + ("a" if (major, minor) == (9, 0) else "")
        if arch not in archs:
            archs.append(arch)
    return ";".join(archs) or "9.0a"


def _flags(with_cuda: bool) -> dict[str, list[str]]:
    # The libstdc++ ABI of the torch we link against: newer torch.utils.cpp_extension no
    # longer passes it, and against a torch built with the old ABI a mismatch would crash
    # as soon as a std::string crosses into libc10 (TORCH_CHECK messages, for one).
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    cflags = ["-O3", abi]
    cuda_flags = ["-O3", "-lineinfo", "--expt-relaxed-constexpr", abi]
    if with_cuda:
        cflags.append("-DCONVT_WITH_CUDA")
        cuda_flags.append("-DCONVT_WITH_CUDA")
        # Hopper's wgmma kernels exist only in sm_90a code; the host launches them only
        # when the build has it (forward_wgmma.cu, wgmma_available).
        if "9.0a" in _cuda_arch_list().replace(" ", ";").split(";"):
            cuda_flags.append("-DCONVT_HAVE_SM90A")
    return {"cflags": cflags, "cuda_cflags": cuda_flags}


# The variables through which torch.utils.cpp_extension picks compilers: CXX compiles
# and links the C++, CC is passed to nvcc as its host compiler (-ccbin).
_COMPILER_VARIABLES = ("CXX", "CC")


def _compiler_choices() -> list[dict[str, str | None]]:
    """Compiler settings to try in order: the environment's, then (if it set any) the defaults."""
    configured = {name: os.environ.get(name) for name in _COMPILER_VARIABLES}
    choices = [configured]
    if any(value is not None for value in configured.values()):
        choices.append({name: None for name in _COMPILER_VARIABLES})
    return choices


def _build_key(with_cuda: bool, compilers: dict[str, str | None] | None = None) -> str:
    if compilers is None:
        compilers = _compiler_choices()[0]
    h = hashlib.sha256()
    for path in _sources(with_cuda) + _headers(with_cuda):
        h.update(str(path.relative_to(source_dir())).encode())
        h.update(path.read_bytes())
    h.update(repr(_flags(with_cuda)).encode())
    h.update(f"{torch.__version__}|{torch.version.cuda}|{sys.version_info[:2]}".encode())
    h.update(repr(sorted(compilers.items())).encode())
    if with_cuda:
        h.update(_cuda_arch_list().encode())
    return h.hexdigest()[:16]


def build_dir_root() -> Path:
    default = Path.home() / ".cache" / "convt_op"
    return Path(os.environ.get("CONVT_OP_BUILD_DIR", default))


def _describe(compilers: dict[str, str | None]) -> str:
    named = [f"{k}={v}" for k, v in compilers.items() if v is not None]
    return " ".join(named) if named else "the default compiler"


def _build_with(with_cuda: bool, compilers: dict[str, str | None], verbose: bool) -> tuple[Path, bool, str]:
    """Builds (if needed) with the given compiler settings: (library, passed its check, reason)."""
    name = f"{_LIB_PREFIX}_{_build_key(with_cuda, compilers)}"
    out_dir = build_dir_root() / name
    lib = out_dir / f"{name}.so"
    verdict = _isolated_build.stored_verdict(out_dir) if lib.is_file() else None
    if verdict is not None:
        if verbose and verdict[0]:
            print(f"convt_op: up to date: {lib}", file=sys.stderr)
        return lib, verdict[0], verdict[1]

    out_dir.mkdir(parents=True, exist_ok=True)
    what = "C++ and CUDA" if with_cuda else "C++"
    print(
        f"convt_op: building the {what} operator library (once per source change) into {out_dir} ...",
        file=sys.stderr,
        flush=True,
    )
    flags = _flags(with_cuda)
    load_kwargs = dict(
        name=name,
        sources=[str(p) for p in _sources(with_cuda)],
        extra_cflags=flags["cflags"],
        extra_cuda_cflags=flags["cuda_cflags"],
        extra_include_paths=[str(source_dir())],
        build_directory=str(out_dir),
        with_cuda=with_cuda,
        is_python_module=False,
        is_standalone=False,
        verbose=verbose,
    )
    env_changes = dict(compilers)
    if with_cuda:
        env_changes["TORCH_CUDA_ARCH_LIST"] = _cuda_arch_list()
    passed, reason = _isolated_build.build_and_check(load_kwargs, out_dir, env_changes)
    return lib, passed, reason


def build(verbose: bool = False) -> Path:
    """Builds the library if needed and returns the path of a shared object that passed its check."""
    with_cuda = cuda_enabled()
    failures = []
    for compilers in _compiler_choices():
        lib, passed, reason = _build_with(with_cuda, compilers, verbose)
        if passed:
            return lib
        failures.append(f"  built with {_describe(compilers)}: {reason} ({lib})")
        print(
            f"convt_op: the library built with {_describe(compilers)} is unusable: {reason}",
            file=sys.stderr,
            flush=True,
        )
    raise RuntimeError(
        "convt_op: no usable operator library could be built:\n"
        + "\n".join(failures)
        + "\nThe compiler links a C++ runtime that crashes inside a shared library (a statically "
        "linked libstdc++, say). Point CXX and CC at the system's g++ and gcc and import again."
    )


def load_library(verbose: bool = False) -> Path:
    """Builds if needed and loads the library into this process (once)."""
    global _loaded_path
    if _loaded_path is None:
        lib = build(verbose=verbose)
        torch.ops.load_library(str(lib))
        _loaded_path = lib
    return _loaded_path


def library_path() -> Path:
    """Path of the loaded shared object (for AOTInductor and other runtimes)."""
    return load_library()
