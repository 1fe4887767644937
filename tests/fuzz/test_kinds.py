"""Fuzzing of the input kinds beyond the manifests and Scenarios of ``test_loaders``: EC2
user data (AL2 MIME, AL2023 NodeConfig, Bottlerocket TOML), Sweeps, sweep results,
Spot price histories and placement scores, Karpenter-kwok instance types, as-run CSVs,
replica traces and saved Prometheus responses, each through its real loader and, for a
subset, through the command line (``harness.invoke``: exit 0, 1 or 2, no traceback, no raw
control character). Derandomized: the same inputs on every run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from joiner.api.manifests import load_text
from joiner.cloudprovider.kwok import load_instance_types
from joiner.history.files import FileSource
from joiner.history.response import parse_text
from joiner.history.series import QueryRange
from joiner.operator.sweep.cell import summary_text
from joiner.operator.sweep.report import groups, parse_objective, recommend, table_rows
from joiner.operator.sweep.results import metrics, read_rows
from joiner.operator.sweep.spec import load_sweep
from joiner.sim.asrun_files import NODES_HEADER, PODS_HEADER, load_nodes, load_pods
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import load_trace
from tests.fuzz.gen import FUZZ, VALUES, corrupt, deepen, mutate, write
from tests.fuzz.harness import invoke, reads_or_refuses
from tests.sim.test_spot_market_inputs import _history, _scenario, _scores

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CLI = settings(FUZZ, max_examples=10)

# --- EC2 user data ------------------------------------------------------------------------

BOTTLEROCKET = {
    "settings": {
        "kubernetes": {
            "cluster-name": "demo",
            "max-pods": 7,
            "node-labels": {"custom": "yes"},
            "node-taints": {"dedicated": ["gpu:NoSchedule"]},
        },
        "ntp": {"time-servers": ["169.254.169.123"]},
    }
}
NODE_CONFIG = {
    "apiVersion": "node.eks.aws/v1alpha1",
    "kind": "NodeConfig",
    "spec": {"kubelet": {"config": {"maxPods": 42, "shutdownGracePeriod": "30s"}}},
}
MIME = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: {ctype}

{body}
--BOUNDARY--
"""


def _nodeclass(alias: str, user_data: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "amiSelectorTerms": [{"alias": alias}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "kubelet": {"maxPods": 110},
            "userData": user_data,
        },
    }


def _user_data(data: st.DataObject) -> tuple[str, str]:
    """An AMI alias and user data for it, its structure mutated or its text corrupted."""
    family = data.draw(st.sampled_from(["bottlerocket", "al2023", "al2"]), label="family")
    if family == "bottlerocket":
        doc = mutate(BOTTLEROCKET, data, VALUES.filter(lambda v: v is not None))
        try:
            text = tomli_w.dumps(doc if isinstance(doc, dict) else {"x": doc})
        except (TypeError, ValueError):
            text = str(doc)
    elif family == "al2023":
        body = yaml.safe_dump(mutate(NODE_CONFIG, data), allow_unicode=True)
        text = MIME.format(ctype="application/node.eks.aws", body=body)
    else:
        text = MIME.format(ctype="text/x-shellscript", body="#!/bin/bash\necho hi")
    if data.draw(st.booleans(), label="corrupt"):
        text = corrupt(text, data)
    return f"{family}@latest", deepen(text)


@FUZZ
@given(data=st.data())
def test_user_data(data: st.DataObject) -> None:
    alias, text = _user_data(data)
    doc = _nodeclass(alias, text)
    reads_or_refuses(lambda: load_text(yaml.safe_dump(doc, allow_unicode=True), "fuzz.yaml"))


NODEPOOL = (EXAMPLES / "nightly-consolidation" / "nodepool.yaml").read_text()
APP = (EXAMPLES / "nightly-consolidation" / "app.yaml").read_text()


@CLI
@given(data=st.data())
def test_user_data_cli(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``lint`` and ``convert`` on a NodeClass with fuzzed user data."""
    alias, text = _user_data(data)
    path = tmp_path_factory.mktemp("ud") / "nodeclass.yaml"
    write(path, yaml.safe_dump(_nodeclass(alias, text), allow_unicode=True))
    invoke(["lint", str(path)])
    invoke(["convert", str(path)])


# --- Sweeps and their results -------------------------------------------------------------

SWEEP = yaml.safe_load((EXAMPLES / "seed-spot" / "sweep.yaml").read_text())
SWEEP["spec"]["scenario"] = str(EXAMPLES / "seed-spot" / "scenario.yaml")


@settings(FUZZ, max_examples=20)
@given(data=st.data())
def test_sweep_spec(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("sweep") / "sweep.yaml"
    write(path, deepen(yaml.safe_dump(mutate(SWEEP, data), allow_unicode=True)))
    reads_or_refuses(lambda: load_sweep(path))


def _row(variant: str, seed: int, cost: float) -> dict[str, Any]:
    summary = {
        "cost": {"total": cost},
        "pods": {"pendingSeconds": {"p95": 5.0}, "lost": 0},
        "interruptions": {"byKind": {"notice": 1}},
    }
    return {
        "sweep": "fuzz",
        "cellId": f"{variant}/joiner/x1/seed-{seed}",
        "variant": variant,
        "policy": "joiner",
        "interruptionRateMultiplier": 1.0,
        "seed": seed,
        "metrics": metrics(summary),
        "summary": summary,
        "summaryDigest": hashlib.sha256(summary_text(summary).encode()).hexdigest(),
        "error": None,
        "nodePoolsYaml": f"kind: NodePool\nmetadata: {{name: {variant}}}\n",
    }


ROWS = [_row(v, s, c) for v, c in (("cheap", 10.0), ("dear", 20.0)) for s in (1, 2)]


def _results(data: st.DataObject) -> str:
    rows = list(ROWS)
    i = data.draw(st.integers(0, len(rows) - 1), label="row")
    rows[i] = mutate(rows[i], data)
    text = "".join(json.dumps(r, allow_nan=True) + "\n" for r in rows)
    if data.draw(st.booleans(), label="corrupt"):
        text = corrupt(text, data)
    return deepen(text)


def _report(path: Path) -> None:
    rows = read_rows(path)
    table_rows(groups(rows))
    recommend(rows, parse_objective("minimise cost subject to p95 pending <= 60 s"))


@FUZZ
@given(data=st.data())
def test_sweep_results(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = write(tmp_path_factory.mktemp("results") / "results.jsonl", _results(data))
    reads_or_refuses(lambda: _report(path))


@settings(FUZZ, max_examples=6)
@given(data=st.data())
def test_sweep_report_cli(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``sweep report`` prints a table and writes the HTML next to, never over, its input."""
    base = tmp_path_factory.mktemp("report")
    path = write(base / "results.jsonl", _results(data))
    before = path.read_bytes()
    invoke(["sweep", "report", str(path), "--objective", "minimise cost"])
    assert path.read_bytes() == before


# --- Spot price history and placement scores ----------------------------------------------

HISTORY = _history("0.0420", "0.0510")
SCORES = _scores(9, 3)


def _market(base: Path) -> Path:
    """A Scenario directory with a Spot price history and placement scores."""
    return _scenario(base, HISTORY, SCORES).parent


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_spot_market_files(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = _market(tmp_path_factory.mktemp("market"))
    history, scores = HISTORY, SCORES
    if data.draw(st.booleans(), label="history"):
        history = mutate(HISTORY, data)
    else:
        scores = mutate(SCORES, data)
    for name, doc in (("history.json", history), ("scores.json", scores)):
        text = json.dumps(doc, allow_nan=True, ensure_ascii=False)
        write(base / name, deepen(text))
    reads_or_refuses(lambda: load_scenario(base / "scenario.yaml"))


# --- Karpenter-kwok instance types ----------------------------------------------------------

sys.path.insert(0, str(REPO / "tests" / "fidelity"))
import catalog  # noqa: E402  (the fidelity suite's kwok catalog)

KWOK_TYPES = catalog.instance_types()[:3]


@FUZZ
@given(data=st.data())
def test_kwok_instance_types(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("kwok") / "types.json"
    text = json.dumps(mutate(KWOK_TYPES, data), allow_nan=True)
    if data.draw(st.booleans(), label="corrupt"):
        text = corrupt(text, data)
    write(path, deepen(text))
    reads_or_refuses(lambda: load_instance_types(path))


# --- CSV inputs: as-run records and replica traces -----------------------------------------

NODES = [
    list(NODES_HEADER),
    ["n1", "c5.xlarge", "spot", "us-east-1a", "default", "0", "3600"],
    ["n2", "m5.large", "on-demand", "us-east-1b", "default", "60", ""],
]
PODS = [list(PODS_HEADER), ["default", "web-1", "0", "5"], ["default", "web-2", "10", ""]]
CSV_VALUES = st.one_of(
    st.sampled_from(["", "-1", "1e400", "nan", "inf", "٣", "1_0", '"', "a,b", "\x1b[2J", "0x10"]),
    st.text(max_size=6),
    st.integers(-(2**64), 2**64).map(str),
    st.floats().map(str),
)


def _csv(rows: list[list[str]], data: st.DataObject) -> str:
    rows = [list(r) for r in rows]
    for _ in range(data.draw(st.integers(1, 3), label="cells")):
        # the header now and then; a row cut short now and then
        r = data.draw(st.sampled_from([0, *[*range(1, len(rows))] * 3]), label="row")
        if data.draw(st.integers(0, 4), label="drop") == 0:
            rows[r] = rows[r][: data.draw(st.integers(0, len(rows[r])), label="keep")]
        else:
            c = data.draw(st.integers(0, max(len(rows[r]) - 1, 0)), label="col")
            rows[r][c : c + 1] = [data.draw(CSV_VALUES, label="cell")]
    text = "\n".join(",".join(r) for r in rows) + "\n"
    return corrupt(text, data) if data.draw(st.booleans(), label="corrupt") else text


@FUZZ
@given(data=st.data())
def test_as_run_files(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("asrun")
    nodes = write(base / "nodes.csv", _csv(NODES, data))
    pods = write(base / "pods.csv", _csv(PODS, data))
    reads_or_refuses(lambda: load_nodes(nodes))
    reads_or_refuses(lambda: load_pods(pods))


@FUZZ
@given(data=st.data())
def test_trace_text(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    source = (EXAMPLES / "broad-bursty" / "traffic.csv").read_text().splitlines()[:8]
    path = write(
        tmp_path_factory.mktemp("trace") / "t.csv", _csv([r.split(",") for r in source], data)
    )
    reads_or_refuses(
        lambda: load_trace(path, target_per_replica=10, min_replicas=1, max_replicas=10)
    )


# --- saved Prometheus responses (joiner import --from-file) --------------------------------

RESPONSES = REPO / "tests" / "fixtures" / "history" / "day" / "responses"
RESPONSE = json.loads((RESPONSES / "pod_init_container_info.json").read_text())


@FUZZ
@given(data=st.data())
def test_prometheus_response(data: st.DataObject) -> None:
    text = json.dumps(mutate(RESPONSE, data), allow_nan=True)
    if data.draw(st.booleans(), label="corrupt"):
        text = corrupt(text, data)
    reads_or_refuses(lambda: parse_text(deepen(text), "fuzz.json"))


@settings(FUZZ, max_examples=15)
@given(data=st.data())
def test_prometheus_saved_directory(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A ``--from-file`` directory whose index (queries.json) or one response is fuzzed."""
    base = tmp_path_factory.mktemp("prom") / "responses"
    base.mkdir()
    for name in ("queries.json", "pod_init_container_info.json"):
        shutil.copy(RESPONSES / name, base / name)
    name = data.draw(st.sampled_from(["queries.json", "pod_init_container_info.json"]))
    doc = mutate(json.loads((RESPONSES / name).read_text()), data)
    write(base / name, deepen(json.dumps(doc, allow_nan=True)))
    start = datetime(2026, 11, 23, tzinfo=UTC).timestamp()

    def load() -> None:
        source = FileSource(base, QueryRange(start, start + 86_400, 300.0))
        source.fetch("pod_init_container_info", "x")

    reads_or_refuses(load)


# --- the unmutated inputs read: the mutations start from valid input -----------------------


def _lines(rows: list[list[str]]) -> str:
    return "\n".join(",".join(r) for r in rows) + "\n"


def test_every_base_input_reads(tmp_path: Path) -> None:
    for alias, text in (
        ("bottlerocket@latest", tomli_w.dumps(BOTTLEROCKET)),
        (
            "al2023@latest",
            MIME.format(ctype="application/node.eks.aws", body=yaml.safe_dump(NODE_CONFIG)),
        ),
        ("al2@latest", MIME.format(ctype="text/x-shellscript", body="#!/bin/bash\necho hi")),
    ):
        load_text(yaml.safe_dump(_nodeclass(alias, text)), "base.yaml")
    write(tmp_path / "sweep.yaml", yaml.safe_dump(SWEEP))
    load_sweep(tmp_path / "sweep.yaml")
    write(tmp_path / "results.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS))
    _report(tmp_path / "results.jsonl")
    (tmp_path / "market").mkdir()
    load_scenario(_market(tmp_path / "market") / "scenario.yaml")
    write(tmp_path / "types.json", json.dumps(KWOK_TYPES))
    assert len(load_instance_types(tmp_path / "types.json")) == 3
    assert len(load_nodes(write(tmp_path / "nodes.csv", _lines(NODES)))) == 2
    assert len(load_pods(write(tmp_path / "pods.csv", _lines(PODS)))) == 2
    parse_text(json.dumps(RESPONSE), "base.json")
    start = datetime(2026, 11, 23, tzinfo=UTC).timestamp()
    FileSource(RESPONSES, QueryRange(start, start + 86_400, 300.0)).fetch(
        "pod_init_container_info", "x"
    )
