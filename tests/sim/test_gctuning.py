"""``joiner.sim.gctuning``: simulation processes raise the collector's first threshold, never
lower one set higher or switch a disabled collector back on; the CLI's entry point applies
it."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from joiner.sim.gctuning import GEN0_THRESHOLD, tune_for_simulation


@pytest.fixture
def thresholds():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ((700, 10, 10), (GEN0_THRESHOLD, 10, 10)),
        ((700, 5, 3), (GEN0_THRESHOLD, 5, 3)),
        ((50_000, 10, 10), (50_000, 10, 10)),
        ((0, 10, 10), (0, 10, 10)),
    ],
)
def test_only_a_lower_first_threshold_is_raised(thresholds, before, after):
    gc.set_threshold(*before)
    tune_for_simulation()
    assert gc.get_threshold() == after


def test_the_cli_entry_point_runs_with_it():
    code = (
        "import gc, sys\n"
        "from joiner.cli import main as m\n"
        "m.app = lambda: print(gc.get_threshold()[0])\n"
        "m.main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert int(out.stdout) == GEN0_THRESHOLD
