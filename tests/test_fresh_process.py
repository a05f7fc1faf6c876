"""tests/fresh_process.py's run_pytest, which the GPU knob tests use to run cases in a fresh
process: it must fail unless the run passed exactly the expected number of tests (a count that
merely contains the expected one, 12 for 2, must not pass)."""

from __future__ import annotations

import pytest

from fresh_process import run_pytest

_THREE_TESTS = "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n\n\ndef test_c():\n    pass\n"


def test_run_pytest_counts_passed_tests(tmp_path):
    module = tmp_path / "test_three.py"
    module.write_text(_THREE_TESTS)
    run_pytest([str(module)], {}, 3)
    run_pytest([str(module)], {}, 1, "-k", "test_b")
    with pytest.raises(AssertionError, match="expected 2 passed"):
        run_pytest([str(module)], {}, 2)


def test_run_pytest_passes_the_environment(tmp_path):
    module = tmp_path / "test_env.py"
    module.write_text("import os\n\n\ndef test_knob():\n    assert os.environ['CONVT_TEST_PROBE'] == 'on'\n")
    run_pytest([str(module)], {"CONVT_TEST_PROBE": "on"}, 1)
    with pytest.raises(AssertionError):
        run_pytest([str(module)], {"CONVT_TEST_PROBE": "off"}, 1)
