"""The store-bound forward's work split and index math (forward_store_bound.cu), model-checked on the CPU.

scripts/store_bound_model.py does what store_bound_kernel does (plane groups, the weights' staging,
items of two rows SH apart, the tap walks, the stores' bounds) in float64. Its output must match
F.conv_transpose2d and write every element exactly once; a model with one of the kernel's bounds
changed must not, so that the check keeps the power to find such a slip.
"""

from __future__ import annotations

import pytest

from script_models import load_script_model


def _model():
    return load_script_model("store_bound_model")


MODEL = _model()


@pytest.mark.parametrize("case", MODEL.CASES, ids=[f"case{i}" for i in range(len(MODEL.CASES))])
def test_model_matches_pytorch_and_writes_each_element_once(case):
    err, once = MODEL.check(case)
    assert err < 1e-12, err
    assert once


@pytest.mark.parametrize("rows", [1, 3])
def test_model_split_holds_for_other_row_counts(monkeypatch, rows):
    # The kernel's kRows is 2; the scheme (bands of SH * kRows rows, row k reading iy + k) must hold
    # for any count, so that changing it is a one-line change.
    module = _model()
    monkeypatch.setattr(module, "K_ROWS", rows)
    for case in module.CASES[:6]:
        err, once = module.check(case)
        assert err < 1e-12 and once, (rows, case, err, once)


def test_check_detects_an_input_row_off_by_one(monkeypatch):
    # The check's power: a tap walk that starts one input coordinate late must fail it.
    module = _model()
    first_tap = module._first_tap
    monkeypatch.setattr(module, "_first_tap", lambda *a: (lambda t, i: (t, i + 1))(*first_tap(*a)))
    err, _ = module.check(module.CASES[1])
    assert err > 1e-3
