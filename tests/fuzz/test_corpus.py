"""Replays the seed corpus: inputs that broke Joiner (a traceback, a hang, a raw control
character on the terminal, or an answer silently changed), one file each under
``corpus/<kind>/``. Each is read by its kind's real loader under the CPU budget and, for
manifests, FIS templates and sweep results, by the command line too (``harness.invoke``).

A file's name says what it must do: ``refused-*`` is an ``InputError`` (exit 2 on the
command line), ``reads-*`` loads, and ``case-*`` only has to end cleanly either way (its
validation is not settled yet: it must never be a traceback, a hang or a raw control
character).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from joiner.api.manifests import load_files, load_text
from joiner.cloudprovider.events import parse_message
from joiner.cloudprovider.kwok import load_instance_types
from joiner.faults.template import load_template
from joiner.history.response import parse_text
from joiner.operator.controller_settings import load_settings
from joiner.operator.sweep.spec import load_sweep
from joiner.sim.asrun_files import load_nodes, load_pods
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import load_trace
from tests.fuzz.harness import invoke, reads_or_refuses
from tests.fuzz.test_kinds import _market, _nodeclass, _report

CORPUS = Path(__file__).parent / "corpus"
DAY = Path(__file__).parents[1] / "fixtures" / "history" / "day"
CASES = sorted(p for p in CORPUS.glob("*/*") if p.is_file())


def _in_market(tmp: Path, name: str) -> Callable[[Path], object]:
    def load(path: Path) -> object:
        base = _market(tmp / "market")
        shutil.copy(path, base / name)
        return load_scenario(base / "scenario.yaml")

    return load


def _user_data(path: Path) -> object:
    """User data as an EC2NodeClass's: ``.toml`` for Bottlerocket, anything else AL2023."""
    alias = "bottlerocket@latest" if path.suffix == ".toml" else "al2023@latest"
    doc = _nodeclass(alias, path.read_text())
    return load_text(yaml.safe_dump(doc), str(path))


def _as_run(path: Path) -> object:
    return (load_nodes if "-nodes-" in path.name else load_pods)(path)


def _loader(kind: str, tmp: Path) -> Callable[[Path], object]:
    (tmp / "market").mkdir()
    loaders: dict[str, Callable[[Path], object]] = {
        "manifests": lambda p: load_files([p]),
        "userdata": _user_data,
        "spot-price-history": _in_market(tmp, "history.json"),
        "spot-placement-scores": _in_market(tmp, "scores.json"),
        "sweep": load_sweep,
        "sweep-results": _report,
        "fis": load_template,
        "kwok-instance-types": load_instance_types,
        "prometheus": lambda p: parse_text(p.read_text(), str(p)),
        "as-run": _as_run,
        "trace": lambda p: load_trace(p, target_per_replica=10, min_replicas=1, max_replicas=10),
        "settings": load_settings,
        "scenario": load_scenario,
        "events": lambda p: parse_message(p.read_text(), file=str(p)),
    }
    return loaders[kind]


def _expected(path: Path) -> set[int]:
    """The exit codes the file's name allows (``lint`` may also exit 1: warnings)."""
    return {"refused": {2}, "reads": {0, 1}}.get(path.name.split("-")[0], {0, 1, 2})


def test_every_case_names_its_outcome() -> None:
    assert CASES
    for path in CASES:
        assert path.name.split("-")[0] in ("refused", "reads", "case"), path


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_loader(path: Path, tmp_path: Path) -> None:
    error = reads_or_refuses(lambda: _loader(path.parent.name, tmp_path)(path))
    outcome = path.name.split("-")[0]
    if outcome == "refused":
        assert error is not None, f"{path.name} was read"
    elif outcome == "reads":
        assert error is None, str(error)


MANIFESTS = [p for p in CASES if p.parent.name == "manifests"]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_commands(path: Path) -> None:
    """``lint``, ``plan`` and ``convert`` agree on the file, and print no control byte."""
    codes = _expected(path)
    invoke(["lint", str(path)], frozenset(codes))
    invoke(["plan", "-f", str(path)], frozenset(codes - {1}))
    invoke(["convert", str(path)], frozenset(codes - {1}))


@pytest.mark.parametrize("path", [p for p in CASES if p.parent.name == "fis"], ids=lambda p: p.name)
def test_fis_commands(path: Path) -> None:
    invoke(["chaos", "validate", str(path)], frozenset(_expected(path) - {1}))


@pytest.mark.parametrize(
    "path", [p for p in CASES if p.parent.name == "sweep-results"], ids=lambda p: p.name
)
def test_sweep_report(path: Path, tmp_path: Path) -> None:
    """A NaN, infinite or edited cost is never recommended (the variant ``honest`` is), the
    report's escapes from names are not printed raw, and the results file is not touched."""
    results = tmp_path / path.name
    shutil.copy(path, results)
    ran = invoke(
        ["sweep", "report", str(results), "--objective", "minimise cost"],
        frozenset(_expected(path) - {1}),
    )
    assert results.read_bytes() == path.read_bytes()
    if ran.exit_code == 0:
        assert "recommended: honest" in " ".join(ran.stdout.split()), ran.stdout


def test_results_file_that_is_a_fifo(tmp_path: Path) -> None:
    """A FIFO given as the results file is refused at once, not read (it would block)."""
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    ran = invoke(["sweep", "report", str(fifo)], frozenset({2}))
    assert "regular file" in ran.stderr or "FIFO" in ran.stderr, ran.stderr


def test_saved_responses_that_are_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "responses.json"
    os.mkfifo(fifo)
    ran = invoke(
        [
            "import",
            "--from-file",
            str(fifo),
            "-f",
            str(DAY / "dump.yaml"),
            "--start",
            datetime(2026, 11, 23, tzinfo=UTC).isoformat(),
            "--end",
            datetime(2026, 11, 24, tzinfo=UTC).isoformat(),
            "--out",
            str(tmp_path / "o"),
        ],
        frozenset({2}),
    )
    assert "FIFO" in ran.stderr, ran.stderr
