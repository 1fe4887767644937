"""Regressions from trying to break ``joiner simulate``: each input once crashed, hung, was
silently accepted, or gave a message without its place. Every one must now exit 2 with one
located message, write nothing, and never show a traceback."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
runner = CliRunner()


def _edit(name: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        p = d / name
        text = p.read_text()
        assert old in text, (name, old)
        p.write_text(text.replace(old, new, 1))

    return apply


def _write(name: str, text: str | bytes) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        p = d / name
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)

    return apply


TRACE = (
    "    - deployment: default/web\n      trace: {file: t.csv, targetPerReplica: 0.001, max: 50}\n"
)
with_trace = _edit("scenario.yaml", "    - deployment: default/web\n      replicas: 20\n", TRACE)

CASES: dict[str, tuple[list[Callable[[Path], None]], list[str]]] = {
    "cpu-inf": ([_edit("deployment.yaml", 'cpu: "1"', "cpu: .inf")], ["requests.cpu", "finite"]),
    "cpu-nan": ([_edit("deployment.yaml", 'cpu: "1"', "cpu: .nan")], ["requests.cpu"]),
    "cpu-true": ([_edit("deployment.yaml", 'cpu: "1"', "cpu: true")], ["requests.cpu"]),
    "volume-inf": (
        [_edit("awsnodetemplate.yaml", "volumeSize: 100Gi", "volumeSize: .inf")],
        ["AWSNodeTemplate/default", "volumeSize"],
    ),
    "seed-true": ([_edit("scenario.yaml", "seed: 42", "seed: true")], ["field spec.seed"]),
    "seed-huge": ([_edit("scenario.yaml", "seed: 42", "seed: " + "9" * 5000)], ["scenario.yaml"]),
    "replicas-true": (
        [_edit("deployment.yaml", "replicas: 20", "replicas: true")],
        ["Deployment/web", "spec.replicas"],
    ),
    # Joiner's own limit (MAX_REPLICAS) read as an API rule: "must be at most 100000".
    "replicas-over-the-simulation-limit": (
        [_edit("deployment.yaml", "replicas: 20", "replicas: 150000")],
        ["Deployment/web", "spec.replicas", "Joiner's simulation limit of 100,000", "not an API"],
    ),
    "scenario-replicas-over-the-simulation-limit": (
        [_edit("scenario.yaml", "replicas: 20", "replicas: 150000")],
        ["spec.workloads[0].replicas", "Joiner's simulation limit of 100,000"],
    ),
    "replicas-huge": (
        [_edit("scenario.yaml", "replicas: 20", "replicas: 100000000000000000000")],
        ["spec.workloads[0].replicas"],
    ),
    "duplicate-key": (
        [_edit("scenario.yaml", "seed: 42", "seed: 42\n  seed: 7")],
        ["duplicate key 'seed'"],
    ),
    "duplicate-workload": (
        [
            _edit(
                "scenario.yaml",
                "      replicas: 20\n",
                "      replicas: 20\n    - deployment: web\n      replicas: 3\n",
            )
        ],
        ["spec.workloads[1].deployment", "already listed"],
    ),
    "manifest-twice": (
        [
            _edit(
                "scenario.yaml",
                "    - deployment.yaml\n",
                "    - deployment.yaml\n    - ./deployment.yaml\n",
            )
        ],
        ["spec.manifests[3]", "listed twice"],
    ),
    "manifest-missing": (
        [_edit("scenario.yaml", "    - deployment.yaml\n", "    - nope.yaml\n")],
        ["Scenario/seed-spot", "spec.manifests[2]", "does not exist"],
    ),
    "manifest-dir": (
        [_edit("scenario.yaml", "    - deployment.yaml\n", "    - .\n")],
        ["spec.manifests[2]", "is a directory"],
    ),
    "duration-1y": ([_edit("scenario.yaml", "duration: 2h", "duration: 1y")], ["spec.duration"]),
    "duration-negative-part": (
        [_edit("scenario.yaml", "duration: 2h", "duration: 1h-30m")],
        ["spec.duration", "not a Go duration"],
    ),
    "duration-negative": (
        [_edit("scenario.yaml", "duration: 2h", "duration: -2h")],
        ["spec.duration", "'-2h' is negative"],
    ),
    "replicas-string": (
        [_edit("scenario.yaml", "replicas: 20", 'replicas: "20"')],
        ["spec.workloads[0].replicas", "whole number, not a string"],
    ),
    "deployment-replicas-string": (
        [_edit("deployment.yaml", "replicas: 20", 'replicas: "20"')],
        ["Deployment/web", "spec.replicas", "whole number, not a string"],
    ),
    # `resources: null` is not bad input: the API server reads a null as absent
    # (tests/api/test_nulls.py); the stray key left under the container is.
    "resources-null": (
        [_edit("deployment.yaml", "resources:", "resources: null\n          x:")],
        ["spec.template.spec.containers[0].x: unknown field 'x'"],
    ),
    "duration-1ns": ([_edit("scenario.yaml", "duration: 2h", "duration: 1ns")], ["at least 1s"]),
    # A century ran without end (its work grows with the length): at most a leap year.
    "duration-century": (
        [_edit("scenario.yaml", "duration: 2h", "duration: 876000h")],
        ["spec.duration", "876000h is 36,500 days; simulate at most 366 days (8784h)"],
    ),
    "deep-nesting": ([_write("deployment.yaml", "a: " + "[" * 2000)], ["deployment.yaml"]),
    "kind-not-string": (
        [_write("deployment.yaml", "apiVersion: v1\nkind: [1, 2]\nmetadata: {name: x}\n")],
        ["field kind", "must be a string"],
    ),
    "kind-typo": (
        [_edit("provisioner.yaml", "kind: Provisioner", "kind: Provisoner")],
        ["field kind", "did you mean 'Provisioner'"],
    ),
    "empty-selector-terms": (
        [
            _edit(
                "deployment.yaml",
                "      nodeSelector:\n        type: my-provisioner\n",
                "      affinity:\n        nodeAffinity:\n"
                "          requiredDuringSchedulingIgnoredDuringExecution:\n"
                "            nodeSelectorTerms: [{}]\n",
            )
        ],
        ["nodeSelectorTerms[0]", "matches no node"],
    ),
    "trace-bad-utf8": (
        [with_trace, _write("t.csv", b"minute,value\n0,1\n\xff\xfe,2\n")],
        ["spec.workloads[0].trace.file", "not UTF-8"],
    ),
    "trace-negative-minute": (
        [with_trace, _write("t.csv", "minute,value\n-5,1\n")],
        ["spec.workloads[0].trace.file", "line 2: minute -5 is negative"],
    ),
    "trace-negative-value": (
        [with_trace, _write("t.csv", "minute,value\n0,-10\n")],
        ["spec.workloads[0].trace.file", "line 2: value -10 is negative"],
    ),
    "history-missing": (
        [_edit("scenario.yaml", "  cloud:\n", "  cloud:\n    spotPriceHistory: nope.json\n")],
        ["scenario.yaml: Scenario/seed-spot: field spec.cloud.spotPriceHistory: ", "nope.json"],
    ),
    "trace-extra-column": (
        [with_trace, _write("t.csv", "minute,value\n0,1,9\n")],
        ["spec.workloads[0].trace.file", "line 2"],
    ),
    "trace-huge-field": (
        [with_trace, _write("t.csv", "minute,value\n0," + "1" * 200000 + "\n")],
        ["spec.workloads[0].trace.file"],
    ),
    "name-too-long": (
        [_edit("scenario.yaml", "name: seed-spot", "name: " + "a" * 300)],
        ["metadata.name"],
    ),
    "gt-out-of-range": (
        [
            _edit(
                "provisioner.yaml",
                "  consolidation:",
                "    - key: karpenter.k8s.aws/instance-cpu\n      operator: Gt\n"
                "      values: ['99999999999999999999999']\n  consolidation:",
            )
        ],
        ["outside the 64-bit integer range"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_with_a_located_message(tmp_path, case):
    d = tmp_path / "seed"
    shutil.copytree(SEED, d)
    edits, needles = CASES[case]
    for edit in edits:
        edit(d)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(d / "scenario.yaml"), "--out", str(out)])
    message = " ".join(result.output.split())
    assert result.exit_code == 2, message
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in message, message
    assert not out.exists()


def test_out_that_is_a_file_fails_before_simulating(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    result = runner.invoke(app, ["simulate", str(SEED / "scenario.yaml"), "--out", str(afile)])
    assert result.exit_code == 2
    assert "--out" in " ".join(result.output.split())


def test_schema_to_unwritable_path(tmp_path):
    result = runner.invoke(app, ["schema", "-o", str(tmp_path / "missing" / "x.json")])
    assert result.exit_code == 2
    assert "--output" in result.output


def test_a_job_of_a_billion_completions_names_the_field_and_the_limit():
    # A Job of 1e9 completions of a 1ms pod ran without end: one pod after another.
    from joiner.api.errors import InputError
    from joiner.sim.scenario import load_scenario

    corpus = Path(__file__).parents[1] / "fuzz" / "corpus" / "scenario"
    with pytest.raises(InputError) as raised:
        load_scenario(corpus / "refused-job-a-billion-completions.yaml")
    assert raised.value.field == "spec.completions"
    assert raised.value.file is not None and raised.value.file.endswith("completions.yaml")
    assert "at most 100,000 completions" in str(raised.value)
