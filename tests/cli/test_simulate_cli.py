"""``joiner simulate`` exit codes and bad-input behaviour: exit 2, a located message, no output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
runner = CliRunner()


def _copy_seed(tmp_path: Path) -> Path:
    dst = tmp_path / "seed"
    shutil.copytree(SEED, dst)
    return dst


def _edited_seed(tmp_path: Path, file: str, old: str, new: str) -> Path:
    """The seed example copied with ``old`` replaced by ``new`` in ``file``; returns the
    copy's directory."""
    d = _copy_seed(tmp_path)
    text = (d / file).read_text()
    assert old in text, f"{file} has no {old!r}"
    (d / file).write_text(text.replace(old, new))
    return d


def _run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_simulate_writes_summary_and_prints_table(tmp_path):
    out = tmp_path / "out"
    result = _run("simulate", str(SEED / "scenario.yaml"), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "c5.xlarge" in result.output and "spot" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pods"]["scheduled"] == 20


def _expect_bad_input(tmp_path: Path, scenario: Path, *needles: str) -> None:
    out = tmp_path / "out"
    result = _run("simulate", str(scenario), "--out", str(out))
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    for needle in needles:
        assert needle in message, message
    assert not out.exists(), "nothing may be simulated or written on bad input"


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    d = _copy_seed(tmp_path)
    (d / "provisioner.yaml").write_text("spec:\n  labels: [a\n  b: c\n")
    _expect_bad_input(
        tmp_path, d / "scenario.yaml", "provisioner.yaml", "YAML syntax error", "line 3"
    )


def test_unsupported_karpenter_version(tmp_path):
    d = _edited_seed(tmp_path, "provisioner.yaml", "v1alpha5", "v1alpha4")
    _expect_bad_input(
        tmp_path,
        d / "scenario.yaml",
        "provisioner.yaml",
        "Provisioner/my-provisioner",
        "field apiVersion",
        "unsupported apiVersion 'karpenter.sh/v1alpha4'",
    )


def test_missing_field(tmp_path):
    d = _edited_seed(tmp_path, "deployment.yaml", "  template:", "  xyzzy:")
    _expect_bad_input(
        tmp_path, d / "scenario.yaml", "Deployment/web", "field spec.template", "required field"
    )


def test_misspelt_field(tmp_path):
    """A misspelling of the missing field is the error shown, with its "did you mean"."""
    d = _edited_seed(tmp_path, "deployment.yaml", "  template:", "  tmpl:")
    _expect_bad_input(
        tmp_path,
        d / "scenario.yaml",
        "Deployment/web",
        "field spec.tmpl",
        "did you mean 'template'",
    )


def test_bad_quantity(tmp_path):
    d = _edited_seed(tmp_path, "deployment.yaml", "memory: 1536Mi", "memory: 1.5 GB")
    _expect_bad_input(
        tmp_path,
        d / "scenario.yaml",
        "Deployment/web",
        "containers[0].resources.requests.memory",
        "'1.5 GB' is not a Kubernetes quantity",
    )


def test_bad_duration(tmp_path):
    d = _edited_seed(tmp_path, "scenario.yaml", "duration: 2h", "duration: 2 hours")
    _expect_bad_input(tmp_path, d / "scenario.yaml", "Scenario/seed-spot", "field spec.duration")


def test_provider_ref_names_no_template(tmp_path):
    d = _edited_seed(tmp_path, "provisioner.yaml", "name: default", "name: missing")
    _expect_bad_input(
        tmp_path,
        d / "scenario.yaml",
        "Provisioner/my-provisioner",
        "spec.providerRef.name",
        "'missing'",
    )


def test_subnet_that_does_not_exist(tmp_path):
    d = _edited_seed(tmp_path, "awsnodetemplate.yaml", "subnet-123456", "subnet-999999")
    _expect_bad_input(
        tmp_path,
        d / "scenario.yaml",
        "AWSNodeTemplate/default",
        "spec.subnetSelector",
        "subnet id=subnet-999999 does not exist",
    )


def test_unknown_scenario_field_and_missing_scenario(tmp_path):
    d = _edited_seed(tmp_path, "scenario.yaml", "seed: 42", "seed: 42\n  speed: fast")
    _expect_bad_input(tmp_path, d / "scenario.yaml", "field spec.speed", "unknown field")
    _expect_bad_input(tmp_path, tmp_path / "absent.yaml", "absent.yaml", "file not found")


def test_workload_naming_unknown_deployment(tmp_path):
    d = _edited_seed(tmp_path, "scenario.yaml", "default/web", "default/api")
    _expect_bad_input(
        tmp_path, d / "scenario.yaml", "spec.workloads[0].deployment", "'default/api' is not"
    )


@pytest.mark.parametrize("args", [[], ["simulate"], ["nonsense"]])
def test_usage_errors_exit_2(args):
    assert runner.invoke(app, args).exit_code == 2


@pytest.mark.parametrize("kind", ["scenario", "plan", "summary", "disruption", "sweep", "advice"])
def test_schemas_in_docs_are_current(kind):
    result = _run("schema", kind)
    assert result.exit_code == 0
    assert (REPO / "docs" / "schemas" / f"{kind}.schema.json").read_text() == result.output


def test_summary_validates_against_published_schema(tmp_path):
    import jsonschema

    out = tmp_path / "out"
    assert _run("simulate", str(SEED / "scenario.yaml"), "--out", str(out), "-q").exit_code == 0
    schema = json.loads((REPO / "docs" / "schemas" / "summary.schema.json").read_text())
    jsonschema.validate(json.loads((out / "summary.json").read_text()), schema)
