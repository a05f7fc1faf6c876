"""torch.compile integration: the Inductor pass, enable()/disable(), the "convt" backend.

Inductor runs ``torch._inductor.config.post_grad_custom_pre_pass`` on every
post-grad graph it compiles: the forward graph, and in training the backward
graph too. At that point transposed convolutions appear as
``aten.convolution(..., transposed=True)`` and ``aten.convolution_backward``
nodes; ``ConvtPass`` rewrites them into convt ops (convt_op/graph_rewrite.py), which
Inductor then calls as extern kernels.

Two ways in:

* ``convt_op.enable(device_types=("cuda",))`` installs the pass for every later
  ``torch.compile`` (default Inductor backend); ``convt_op.disable()`` restores
  what was there before.
* ``torch.compile(model, backend="convt")`` (registered through the
  ``torch_dynamo_backends`` entry point in pyproject.toml) compiles with
  Inductor and the pass for that compile only; nothing global is changed.
  ``options={"device_types": ("cpu", "cuda")}`` picks the devices; other
  options are Inductor config patches, as with ``backend="inductor"``.

The pass is a ``CustomGraphPass`` whose ``uuid()`` hashes the source of this
file and graph_rewrite.py, the options, and which devices have convt kernels, so
Inductor's FX graph cache keys on it (a pass without a uuid makes Inductor
bypass the cache).

One pass object per config slot: torch 2.11 accepts a single pass in
``post_grad_custom_pre_pass`` (newer versions also take a list), so a pass
already installed is kept inside ours and run first ("chained"), and
``disable()`` puts it back.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path

import torch
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

from .graph_rewrite import DEFAULT_DEVICE_TYPES, as_device_types, has_kernel, rewrite_graph, summary

log = logging.getLogger(__name__)

try:  # newer torch: passes that are told whether the graph is an inference graph
    from torch._inductor.custom_graph_pass import CustomInferenceAwareGraphPass
except ImportError:  # pragma: no cover - older torch
    CustomInferenceAwareGraphPass = None

# This file and the rewrite module's source.
_SOURCES = (Path(__file__), Path(__file__).with_name("graph_rewrite.py"))


@functools.lru_cache(maxsize=None)
def _source_hash() -> str:
    h = hashlib.sha256()
    for path in _SOURCES:
        h.update(path.read_bytes())
    return h.hexdigest()


def _as_tuple(passes) -> tuple:
    """A config slot's value (None, one pass, or a list/tuple of passes) as a tuple."""
    if passes is None:
        return ()
    if isinstance(passes, (list, tuple)):
        return tuple(passes)
    return (passes,)


def _is_inference_aware(p) -> bool:
    return CustomInferenceAwareGraphPass is not None and isinstance(p, CustomInferenceAwareGraphPass)


class ConvtPass(CustomGraphPass):
    """Post-grad pass: the passes it chains (run first), then the convt rewrite.

    previous: whatever was in the config slot before (None, a pass, or a
    list/tuple of passes); kept so that disable() can restore it.
    """

    def __init__(self, device_types: Iterable[str] = DEFAULT_DEVICE_TYPES, previous=None):
        self.device_types = as_device_types(device_types)
        self.previous = previous
        self.active = True

    def _run_previous(self, graph: torch.fx.Graph, is_inference: bool | None) -> None:
        for p in _as_tuple(self.previous):
            if _is_inference_aware(p):
                p(graph, is_inference=bool(is_inference))
            else:
                p(graph)

    def _rewrite(self, graph: torch.fx.Graph) -> None:
        if not self.active:
            return
        count, left_alone = rewrite_graph(graph, self.device_types)
        log.info("convt_op compile pass (graph of %d nodes): %s", len(graph.nodes), summary(count, left_alone))

    def __call__(self, graph: torch.fx.Graph) -> None:
        self._run_previous(graph, None)
        self._rewrite(graph)

    def uuid(self):
        """Stable across processes; None (no caching) if a chained pass has no uuid."""
        previous = []
        for p in _as_tuple(self.previous):
            u = p.uuid() if isinstance(p, CustomGraphPass) else None
            if u is None:
                return None
            previous.append(u.hex() if isinstance(u, bytes) else repr(u))
        kernels = tuple(has_kernel(d) for d in self.device_types)
        key = repr((_source_hash(), self.device_types, kernels, self.active, previous))
        return hashlib.sha256(key.encode()).hexdigest()


if CustomInferenceAwareGraphPass is not None:

    class _InferenceAwareConvtPass(ConvtPass, CustomInferenceAwareGraphPass):
        """ConvtPass chaining an inference-aware pass: Inductor passes is_inference on."""

        def __call__(self, graph: torch.fx.Graph, is_inference: bool) -> None:
            self._run_previous(graph, is_inference)
            self._rewrite(graph)


def make_pass(device_types: Iterable[str] = DEFAULT_DEVICE_TYPES, previous=None) -> ConvtPass:
    """A pass chaining ``previous`` (a ConvtPass in ``previous`` is unwrapped, never doubled)."""
    if isinstance(previous, ConvtPass):
        previous = previous.previous
    if any(_is_inference_aware(p) for p in _as_tuple(previous)):
        return _InferenceAwareConvtPass(device_types, previous)
    return ConvtPass(device_types, previous)


_installed: ConvtPass | None = None


def enable(device_types: Iterable[str] = DEFAULT_DEVICE_TYPES) -> None:
    """Substitute convt ops for 2-D transposed convolutions in every later torch.compile.

    device_types: ("cuda",) by default; ("cpu", "cuda") opts the CPU in.
    Calling it again replaces the options. Graphs compiled before are not
    changed (torch._dynamo.reset() recompiles).
    """
    global _installed
    current = inductor_config.post_grad_custom_pre_pass
    new = make_pass(device_types, previous=current)
    inductor_config.post_grad_custom_pre_pass = new
    _installed = new
    log.info("convt_op: enabled the compile pass for device types %s", list(new.device_types))


def disable() -> None:
    """Removes the pass installed by enable(), restoring the previously installed pass."""
    global _installed
    if _installed is None:
        return
    current = inductor_config.post_grad_custom_pre_pass
    if current is _installed:
        inductor_config.post_grad_custom_pre_pass = _installed.previous
    else:
        # Someone installed a pass on top of ours (and may chain it): we cannot
        # unhook it without dropping theirs, so ours turns into a no-op.
        log.warning("convt_op: the post-grad pass slot was changed after enable(); deactivating in place")
        _installed.active = False
    _installed = None


def is_enabled() -> bool:
    return _installed is not None and _installed.active


def convt_backend(gm: torch.fx.GraphModule, example_inputs, mode: str | None = None, options: dict | None = None):
    """The "convt" torch.compile backend: Inductor plus the convt pass, for this compile only.

    mode: as torch.compile's (e.g. "reduce-overhead", "max-autotune").
    options: {"device_types": (...)} for the pass (default ("cuda",)); any other
    key is an Inductor config option, as with backend="inductor".
    """
    from torch._inductor import list_mode_options
    from torch._inductor.compile_fx import compile_fx

    options = dict(options or {})
    device_types = options.pop("device_types", DEFAULT_DEVICE_TYPES)
    patches = {}
    if mode and mode != "default":
        patches.update(list_mode_options(mode))
    patches.update({k.replace("-", "_"): v for k, v in options.items()})
    # Chain with a pass given in options, else with the one installed globally
    # (make_pass unwraps a ConvtPass installed by enable(): never rewrite twice).
    previous = patches.get("post_grad_custom_pre_pass", inductor_config.post_grad_custom_pre_pass)
    patches["post_grad_custom_pre_pass"] = make_pass(device_types, previous=previous)
    # compile_fx applies config_patches to the backward compile too, which
    # happens lazily after this function has returned.
    return compile_fx(gm, example_inputs, config_patches=patches)
