"""Property-based fuzzing of the loaders with mutated versions of the examples.

Each loader (manifests of every kind, scenarios, FIS templates, NTH values, controller
settings, captured events, traces) gets the examples with a few values replaced (by the
hostile values of ``gen``, deep nesting among them), deleted or renamed, or with their text
cut or corrupted. Whatever the input, the loader either reads it or raises an
``InputError`` whose message has no raw validation text and no wrong plural; never another
exception (a traceback in the CLI) and never a hang (each call runs under a CPU budget far
above any real input's: a hang detector, not a speed target). The CLI cases check the
documented exit codes, that nothing is planned on exit 2 and that no raw control character
is printed (``harness.invoke``). The other input kinds are in ``test_kinds``, the inputs
that broke Joiner in ``test_corpus``.

Bounded for CI: a fixed number of examples per loader, derandomized (the same inputs on
every run).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from joiner.api.manifests import load_text
from joiner.cloudprovider.events import parse_message
from joiner.controllers.interruption.settings import InterruptionSettings
from joiner.faults.template import parse_template
from joiner.operator.controller_settings import load_settings
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import load_trace
from tests.fuzz.gen import FUZZ, VALUES, deepen, mutate, write
from tests.fuzz.harness import invoke, reads_or_refuses

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FIXTURES = REPO / "tests" / "fixtures"


def _docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _is_manifest_file(path: Path) -> bool:
    return path.name not in ("scenario.yaml", "nth-values.yaml", "captured-event.yaml") and (
        path.name != "sweep.yaml"
    )


#: Manifest files, each a list of documents that loads as it is (every kind the loader
#: reads: the examples, cluster dumps, and one of each remaining kind in data/kinds.yaml).
MANIFEST_FILES = [
    _docs(path)
    for path in [
        *sorted(p for p in EXAMPLES.glob("*/*.yaml") if _is_manifest_file(p)),
        FIXTURES / "cluster-dump.yaml",
        FIXTURES / "eks-cluster" / "dump.yaml",
        FIXTURES / "history" / "day" / "dump.yaml",
        Path(__file__).parent / "data" / "kinds.yaml",
    ]
]
MANIFESTS = [doc for docs in MANIFEST_FILES for doc in docs]


# --- loaders -----------------------------------------------------------------------------


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_manifest_loader(data: st.DataObject) -> None:
    """One object of a manifest file mutated; the file loaded whole (its references)."""
    docs = list(data.draw(st.sampled_from(MANIFEST_FILES), label="file"))
    i = data.draw(st.integers(0, len(docs) - 1), label="doc")
    docs[i] = mutate(docs[i], data)
    text = deepen(yaml.safe_dump_all(docs, allow_unicode=True))
    reads_or_refuses(lambda: load_text(text, "fuzz.yaml"))


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
    reads_or_refuses(lambda: load_text(text, "fuzz.yaml"))


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
        write(target, deepen(yaml.safe_dump(mutate(scenario, data), allow_unicode=True)))
        reads_or_refuses(lambda: load_scenario(target))

    run()


@settings(FUZZ, max_examples=10)
@given(data=st.data())
def test_scenario_lint(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``lint SCENARIO`` on a mutated Scenario: exit 0, 1 or 2, never a traceback."""
    base = tmp_path_factory.mktemp("lint-scenario")
    for f in (EXAMPLES / "spot-interruptions").iterdir():
        shutil.copy(f, base / f.name)
    scenario = _docs(EXAMPLES / "spot-interruptions" / "scenario.yaml")[0]
    target = base / "fuzz-scenario.yaml"
    write(target, deepen(yaml.safe_dump(mutate(scenario, data), allow_unicode=True)))
    invoke(["lint", str(target)])


@FUZZ
@given(data=st.data())
def test_fis_template_loader(data: st.DataObject) -> None:
    template = json.loads((EXAMPLES / "seed-spot" / "fis-spot-interruption.json").read_text())
    text = deepen(json.dumps(mutate(template, data), allow_nan=True))
    reads_or_refuses(lambda: parse_template(text, "fuzz.json"))


@FUZZ
@given(data=st.data())
def test_nth_values_loader(data: st.DataObject) -> None:
    values = _docs(EXAMPLES / "spot-interruptions" / "nth-values.yaml")[0]
    mutated = mutate(values, data)
    reads_or_refuses(lambda: InterruptionSettings.from_helm_values(mutated, file="fuzz.yaml"))


SETTINGS = {
    "region": "us-east-1",
    "clusterName": "demo",
    "batchIdleDuration": "1s",
    "batchMaxDuration": "10s",
    "leaderElection": {"leaseDurationSeconds": 15, "renewDeadlineSeconds": 10},
}


@FUZZ
@given(data=st.data())
def test_settings_loader(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("settings") / "settings.yaml"
    write(path, deepen(yaml.safe_dump(mutate(SETTINGS, data), allow_unicode=True)))
    reads_or_refuses(lambda: load_settings(path))


@FUZZ
@given(data=st.data())
def test_event_loader(data: st.DataObject) -> None:
    message = json.loads((EXAMPLES / "spot-interruptions" / "spot-itn-sample.json").read_text())
    text = deepen(json.dumps(mutate(message, data), allow_nan=True))
    reads_or_refuses(lambda: parse_message(text, file="fuzz.json"))


@FUZZ
@given(data=st.data())
def test_trace_loader(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    rows = [["minute", "value"], *([str(i), str(10 * i)] for i in range(5))]
    row = data.draw(st.integers(0, len(rows) - 1), label="row")
    col = data.draw(st.integers(0, 1), label="col")
    rows[row][col] = str(data.draw(VALUES, label="cell"))
    path = tmp_path_factory.mktemp("trace") / "t.csv"
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")
    reads_or_refuses(
        lambda: load_trace(path, target_per_replica=10, min_replicas=1, max_replicas=10)
    )


# --- the command line ---------------------------------------------------------------------


@settings(FUZZ, max_examples=15)
@given(data=st.data())
def test_plan_and_lint_exit_codes(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory):
    """``plan`` exits 0 or 2, ``lint`` 0, 1 or 2, ``convert`` 0 or 2; never a traceback, no
    raw control character; nothing planned on 2."""
    docs = _docs(EXAMPLES / "nightly-consolidation" / "running-cluster.yaml")
    docs += _docs(EXAMPLES / "nightly-consolidation" / "nodepool.yaml")
    i = data.draw(st.integers(0, len(docs) - 1), label="doc")
    docs[i] = mutate(docs[i], data)
    path = tmp_path_factory.mktemp("cli") / "cluster.yaml"
    write(path, deepen(yaml.safe_dump_all(docs, allow_unicode=True)))
    planned = invoke(["plan", "-f", str(path), "-o", "json"], frozenset({0, 2}))
    invoke(["lint", str(path)])
    invoke(["convert", str(path)], frozenset({0, 2}))
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
    write(path, deepen(json.dumps(mutate(template, data))))
    validated = invoke(["chaos", "validate", str(path)], frozenset({0, 2}))
    if validated.exit_code == 2:
        # chaos run reads the template first: the same refusal, before any simulation.
        scenario = EXAMPLES / "seed-spot" / "scenario.yaml"
        invoke(["chaos", "run", str(path), "--scenario", str(scenario)], frozenset({2}))
