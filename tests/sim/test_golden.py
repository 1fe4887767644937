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


# A hang guard, not a speed target: the three-policy examples take about a minute on a
# quiet machine and several under a load of 10 (speed lives in benchmarks/).
@pytest.mark.timeout(600)
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


@pytest.mark.parametrize("hash_seed", ["0", "12345"])
def test_byte_identical_across_processes_and_hash_seeds(hash_seed):
    """The broad GPU example (two broad NodePools, memoised estimates and requirement
    answers) writes the same bytes in a fresh process under another hash seed."""
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "joiner.testing.golden", "--check", "gpu-serving"],
        cwd=golden.REPO,
        env=dict(os.environ, PYTHONHASHSEED=hash_seed),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("argv", [["--help"], ["--chek"], ["no-such-example"]])
def test_golden_command_writes_nothing_on_help_or_a_mistake(argv, monkeypatch):
    """``--help``, a mistyped option or an unknown case must stop before any summary is
    rendered or written (``--help`` once regenerated every golden summary)."""

    def refuse(name):
        raise AssertionError(f"rendered {name}")

    monkeypatch.setattr(golden, "render", refuse)
    with pytest.raises(SystemExit) as stop:
        golden.main(argv)
    assert stop.value.code == (0 if argv == ["--help"] else 2)
