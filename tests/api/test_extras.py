"""``require``: an optional dependency imported on use, or an error naming its extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.extras import MissingExtraError, require


def test_an_installed_module_is_returned() -> None:
    assert require("json", "report", "test") is sys.modules["json"]


def test_a_missing_module_names_the_extra_to_install() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'joiner\[lp\]'") as exc:
        require("joiner_no_such_solver", "lp", "packing: cost-optimal")
    assert isinstance(exc.value, InputError)
    assert str(exc.value).startswith("packing: cost-optimal needs joiner_no_such_solver")


def test_a_broken_install_is_not_blamed_on_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module is there but imports one that is not: that error is raised as it is."""
    (tmp_path / "joiner_broken_dep.py").write_text("import joiner_missing_inner\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as exc:
        require("joiner_broken_dep", "report", "test")
    assert not isinstance(exc.value, MissingExtraError)
    assert exc.value.name == "joiner_missing_inner"


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` unimportable for this test (``None`` in sys.modules)."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_cost_optimal_packing_without_highspy_names_the_lp_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from joiner.scheduling.costopt import scheduler_for

    _without(monkeypatch, "highspy")
    scheduler_for("karpenter")  # the default packing needs no solver
    with pytest.raises(MissingExtraError, match=r"joiner\[lp\]"):
        scheduler_for("cost-optimal")


def test_the_aws_adapter_without_boto3_names_the_aws_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    _without(monkeypatch, "boto3")
    for name in [m for m in sys.modules if m.startswith("joiner.cloudprovider.aws")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(MissingExtraError, match=r"pip install 'joiner\[aws\]'"):
        importlib.import_module("joiner.cloudprovider.aws")


@pytest.mark.parametrize("missing", ["matplotlib", "jinja2"])
def test_sweep_report_without_the_report_extra_exits_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    from typer.testing import CliRunner

    from joiner.cli.main import app

    _without(monkeypatch, missing)
    results = tmp_path / "results.jsonl"
    results.write_text("")
    run = CliRunner().invoke(app, ["sweep", "report", str(results)])
    assert run.exit_code == 2
    assert "pip install 'joiner[report]'" in run.stderr


@pytest.mark.parametrize("missing", ["matplotlib", "jinja2"])
def test_simulate_report_without_the_report_extra_exits_2_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    """``simulate --report`` without the report extra stops before the simulation, names
    the extra, and writes no summary."""
    from typer.testing import CliRunner

    from joiner.cli.main import app

    _without(monkeypatch, missing)
    scenario = Path(__file__).resolve().parents[2] / "examples" / "seed-spot" / "scenario.yaml"
    out = tmp_path / "out"
    args = ["simulate", str(scenario), "--out", str(out), "--report", str(tmp_path / "r")]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 2, run.output
    assert "pip install 'joiner[report]'" in run.stderr
    assert not (out / "summary.json").exists()


def test_run_on_aws_without_boto3_exits_2_before_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``joiner run --cloud aws`` without the aws extra stops at start-up, naming it,
    rather than waiting for the lease and failing once elected."""
    from typer.testing import CliRunner

    from joiner.cli.main import app

    _without(monkeypatch, "boto3")
    for name in [m for m in sys.modules if m.startswith("joiner.cloudprovider.aws")]:
        monkeypatch.delitem(sys.modules, name)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    args = ["run", "--cloud", "aws", "--cluster-name", "c", "--kubeconfig", str(kubeconfig)]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 2, run.output
    assert "pip install 'joiner[aws]'" in run.stderr
