"""Loads a CPU model from scripts/ (not a package) as a module, for the tests that check one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script_model(name: str):
    """A fresh module object for scripts/<name>.py (fresh: tests that patch it do not leak)."""
    spec = importlib.util.spec_from_file_location(name, _SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
