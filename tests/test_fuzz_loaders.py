"""Property-based fuzzing of every loader with mutated versions of the examples.

Each loader (manifests, scenarios, FIS templates, NTH values, controller settings, captured
events, traces) gets the examples with a few values replaced, deleted or renamed, or with
their text cut or corrupted. Whatever the input, the loader either reads it or raises an
``InputError`` whose message has no raw validation text and no wrong plural; never another
exception (a traceback in the CLI) and never a hang (each call runs under an alarm far
above any real input's time: a hang detector, not a speed target). The CLI cases check the
documented exit codes and that nothing is planned on exit 2.

Bounded for CI: a fixed number of examples per loader, derandomized (the same inputs on
every run), about a minute in all.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.cli.main import app
from joiner.cloudprovider.events import parse_message
from joiner.controllers.interruption.settings import InterruptionSettings
from joiner.faults.template import parse_template
from joiner.operator.controller_settings import load_settings
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import load_trace
from tests.api.test_bad_input import _paths

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)
#: Seconds one loader call may take before it counts as a hang.
HANG_S = 30
RAW = re.compile(r"Value error,|Input should be|validation error for")
WRONG_PLURAL = re.compile(r"\b1 (nodes|pods|NodeClaims|commands|objects|problems|targets)\b")


@contextmanager
def _bounded() -> Iterator[None]:
    def hang(_signum: int, _frame: Any) -> None:
        raise TimeoutError(f"no answer within {HANG_S} s: a hang")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _check_message(text: str) -> None:
    assert not RAW.search(text), text
    assert not WRONG_PLURAL.search(text), text


def _reads_or_refuses(load: Callable[[], object]) -> None:
    with _bounded():
        try:
            load()
        except InputError as exc:
            _check_message(str(exc))


# --- mutations ---------------------------------------------------------------------------

_WEIRD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "٣",  # an Arabic-Indic digit: isdigit() but not ASCII
        "１０m",  # full-width digits
        "1e400",
        "-1",
        "99999999999999999999999",
        "NaN",
        "\x1b[31mred\x1b[0m",
        "a\nb",
        "*",
        "500m",
        "1h",
        "P1D",
        "true",
        "null",
        "default",
        "us-east-1",
        "0 * * * *",
        "* * * * *",
    ]
)
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31, 2**63, 100_000, 10**9]),
    st.floats(allow_nan=True, allow_infinity=True),
    _WEIRD_TEXT,
    st.text(max_size=12),
    st.lists(st.integers(min_value=-3, max_value=3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(max_value=3), max_size=2),
)


def _mutate(doc: Any, data: st.DataObject) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3), label="mutations")):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return data.draw(_VALUES)
        path = data.draw(st.sampled_from(paths), label="path")
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        key = path[-1]
        how = data.draw(st.sampled_from(["replace", "delete", "rename", "wrap"]), label="how")
        if how == "replace" or (how in ("delete", "rename") and isinstance(parent, list)):
            parent[key] = data.draw(_VALUES, label="value")
        elif how == "delete":
            del parent[key]
        elif how == "rename":
            parent[f"{key}x"] = parent.pop(key)
        else:
            parent[key] = [parent[key]]
    return doc


def _docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


MANIFESTS = [
    doc
    for path in sorted(EXAMPLES.glob("*/*.yaml"))
    if path.name not in ("scenario.yaml", "nth-values.yaml", "captured-event.yaml")
    for doc in _docs(path)
]


# --- loaders -----------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_manifest_loader(data: st.DataObject) -> None:
    doc = data.draw(st.sampled_from(MANIFESTS), label="example")
    text = yaml.safe_dump(_mutate(doc, data), allow_unicode=True)
    _reads_or_refuses(lambda: load_text(text, "fuzz.yaml"))


@FUZZ
@given(data=st.data())
def test_manifest_text_corruption(data: st.DataObject) -> None:
    """Cut or corrupted YAML text (the parser, not the models)."""
    source = (EXAMPLES / "nightly-consolidation" / "running-cluster.yaml").read_text()
    at = data.draw(st.integers(min_value=0, max_value=len(source)), label="at")
    junk = data.draw(
        st.sampled_from(["", "\t", ": :", "- [", "&a", "*a", "<<: *a", "\x00", "'", "{", "%"]),
        label="junk",
    )
    text = source[:at] + junk + source[at + data.draw(st.integers(0, 20), label="cut") :]
    _reads_or_refuses(lambda: load_text(text, "fuzz.yaml"))


@pytest.mark.parametrize("example", ["seed-spot", "spot-interruptions", "nightly-consolidation"])
def test_scenario_loader(example: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp(example)
    for f in (EXAMPLES / example).iterdir():
        shutil.copy(f, base / f.name)
    scenario = _docs(EXAMPLES / example / "scenario.yaml")[0]

    @FUZZ
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        target = base / "fuzz-scenario.yaml"
        target.write_text(yaml.safe_dump(_mutate(scenario, data), allow_unicode=True))
        _reads_or_refuses(lambda: load_scenario(target))

    run()


@FUZZ
@given(data=st.data())
def test_fis_template_loader(data: st.DataObject) -> None:
    template = json.loads((EXAMPLES / "seed-spot" / "fis-spot-interruption.json").read_text())
    text = json.dumps(_mutate(template, data), allow_nan=True)
    _reads_or_refuses(lambda: parse_template(text, "fuzz.json"))


@FUZZ
@given(data=st.data())
def test_nth_values_loader(data: st.DataObject) -> None:
    values = _docs(EXAMPLES / "spot-interruptions" / "nth-values.yaml")[0]
    mutated = _mutate(values, data)
    _reads_or_refuses(lambda: InterruptionSettings.from_helm_values(mutated, file="fuzz.yaml"))


SETTINGS = {
    "region": "us-east-1",
    "clusterName": "demo",
    "batchIdleSeconds": 1,
    "batchMaxSeconds": 10,
    "leaderElection": {"leaseDurationSeconds": 15, "renewDeadlineSeconds": 10},
}


@FUZZ
@given(data=st.data())
def test_settings_loader(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("settings") / "settings.yaml"
    path.write_text(yaml.safe_dump(_mutate(SETTINGS, data), allow_unicode=True))
    _reads_or_refuses(lambda: load_settings(path))


@FUZZ
@given(data=st.data())
def test_event_loader(data: st.DataObject) -> None:
    message = json.loads((EXAMPLES / "spot-interruptions" / "spot-itn-sample.json").read_text())
    text = json.dumps(_mutate(message, data), allow_nan=True)
    _reads_or_refuses(lambda: parse_message(text, file="fuzz.json"))


@FUZZ
@given(data=st.data())
def test_trace_loader(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    rows = [["minute", "value"], *([str(i), str(10 * i)] for i in range(5))]
    row = data.draw(st.integers(0, len(rows) - 1), label="row")
    col = data.draw(st.integers(0, 1), label="col")
    rows[row][col] = str(data.draw(_VALUES, label="cell"))
    path = tmp_path_factory.mktemp("trace") / "t.csv"
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")
    _reads_or_refuses(
        lambda: load_trace(path, target_per_replica=10, min_replicas=1, max_replicas=10)
    )


# --- the command line ---------------------------------------------------------------------

runner = CliRunner()


@settings(FUZZ, max_examples=15)
@given(data=st.data())
def test_plan_and_lint_exit_codes(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory):
    """``plan`` exits 0 or 2, ``lint`` 0, 1 or 2; never a traceback; nothing planned on 2."""
    docs = _docs(EXAMPLES / "nightly-consolidation" / "running-cluster.yaml")
    docs += _docs(EXAMPLES / "nightly-consolidation" / "nodepool.yaml")
    i = data.draw(st.integers(0, len(docs) - 1), label="doc")
    docs[i] = _mutate(docs[i], data)
    path = tmp_path_factory.mktemp("cli") / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs, allow_unicode=True))
    with _bounded():
        planned = runner.invoke(app, ["plan", "-f", str(path), "-o", "json"])
        linted = runner.invoke(app, ["lint", str(path)])
    for result, codes in ((planned, {0, 2}), (linted, {0, 1, 2})):
        assert result.exit_code in codes, (result.exit_code, result.output, result.exception)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "Traceback" not in result.output
        _check_message(result.output)
    if planned.exit_code == 2:
        assert planned.stdout == ""  # no plan printed
    else:
        json.loads(planned.stdout)


@settings(FUZZ, max_examples=15)
@given(data=st.data())
def test_chaos_validate_and_run_agree(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
):
    """What ``chaos validate`` refuses, ``chaos run`` refuses with exit 2 too."""
    template = json.loads((EXAMPLES / "seed-spot" / "fis-spot-interruption.json").read_text())
    path = tmp_path_factory.mktemp("fis") / "t.json"
    path.write_text(json.dumps(_mutate(template, data)))
    with _bounded():
        validated = runner.invoke(app, ["chaos", "validate", str(path)])
    assert validated.exit_code in (0, 2), validated.output
    assert validated.exception is None or isinstance(validated.exception, SystemExit)
    _check_message(validated.output)
    if validated.exit_code == 2:
        # chaos run reads the template first: the same refusal, before any simulation.
        scenario = EXAMPLES / "seed-spot" / "scenario.yaml"
        with _bounded():
            ran = runner.invoke(app, ["chaos", "run", str(path), "--scenario", str(scenario)])
        assert ran.exit_code == 2, ran.output
