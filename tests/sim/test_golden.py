"""Every example's ``summary.json`` against its golden copy in ``tests/golden/``.

Speed work must not change decisions: a difference here is a regression unless the change
meant to alter decisions; then regenerate with ``make golden`` and explain in the commit
message which examples changed and why (``joiner/testing/golden.py``).
"""

from __future__ import annotations

import difflib

import pytest

from joiner.testing import golden


def test_every_example_has_a_golden_summary():
    assert golden.examples(), "no examples found"
    missing = [e for e in golden.examples() if not golden.golden_path(e).exists()]
    assert not missing, f"no golden summary for {missing}: run `make golden`"


@pytest.mark.parametrize("example", golden.examples())
def test_summary_matches_golden(example, monkeypatch):
    monkeypatch.chdir(golden.REPO)
    expected = golden.golden_path(example).read_text(encoding="utf-8")
    actual = golden.render(example)
    if actual != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    actual.splitlines(keepends=True),
                    "golden",
                    "now",
                    n=2,
                )
            )[:80]
        )
        pytest.fail(
            f"examples/{example} decides differently from tests/golden/{example}/summary.json."
            " If the change is meant to alter decisions, run `make golden` and explain it in"
            f" the commit message.\n{diff}"
        )
