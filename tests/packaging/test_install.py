"""Installs of the package into fresh virtualenvs (opt-in, with the end-to-end tests:
``JOINER_E2E=1``; each takes minutes, most of it pip).

* ``pip install .`` with no extra: controller mode's code path and ``plan`` import, and
  run, without matplotlib, Jinja2, highspy, boto3 or Ray; the features that need one say
  which extra to install.
* ``pip install -c constraints-lowest.txt '.[report,lp,aws]'``: the oldest releases
  pyproject.toml allows; a few tests that touch each library run against them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTRA_MODULES = ("matplotlib", "jinja2", "highspy", "boto3", "botocore", "tomli_w", "ray")

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("JOINER_E2E") != "1",
        reason="installs into fresh virtualenvs take minutes: set JOINER_E2E=1",
    ),
    pytest.mark.timeout(1800),
]

#: Runs in the bare install: imports controller mode's modules, runs ``plan``, checks the
#: extras' features fail with the extra's name, and reports what got imported.
_BARE_PROBE = """
import importlib.util, json, subprocess, sys
import joiner.cli.main, joiner.cli.controller, joiner.operator.controller
import joiner.operator.wiring, joiner.cluster.kube.client, joiner.cluster.kube.informer
from joiner.api.extras import MissingExtraError
from joiner.scheduling.costopt import scheduler_for
scheduler_for("karpenter")
errors = []
try:
    scheduler_for("cost-optimal")
except MissingExtraError as exc:
    errors.append(str(exc))
try:
    import joiner.cloudprovider.aws
except MissingExtraError as exc:
    errors.append(str(exc))
names = json.loads(sys.argv[1])
print(json.dumps({
    "imported": [m for m in names if m in sys.modules],
    "installed": [m for m in names if importlib.util.find_spec(m) is not None],
    "errors": errors,
}))
"""


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def _pip(python: Path, *args: str) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *args],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )


def test_the_base_install_runs_the_controller_path_without_extras(tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    _pip(python, str(REPO))
    probe = subprocess.run(
        [str(python), "-c", _BARE_PROBE, json.dumps(EXTRA_MODULES)],
        cwd=tmp_path,  # not the checkout: the installed package is the one imported
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(probe.stdout.strip().splitlines()[-1])
    assert result["imported"] == [] and result["installed"] == [], result
    assert any("pip install 'joiner[lp]'" in e for e in result["errors"]), result
    assert any("pip install 'joiner[aws]'" in e for e in result["errors"]), result
    joiner = tmp_path / "venv" / "bin" / "joiner"
    example = REPO / "examples" / "seed-spot"
    files = ("provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml")
    plan = subprocess.run(
        [str(joiner), "plan", *(arg for f in files for arg in ("-f", str(example / f)))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert plan.returncode == 0, plan.stderr
    version = subprocess.run(
        [str(joiner), "--version"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    from joiner import __version__

    assert __version__ in version.stdout


#: Tests that exercise each pinned library: pydantic (schemas), typer/click/rich (CLI),
#: lightkube/httpx2 (the Kubernetes adapter), numpy and highspy (cost-optimal packing),
#: matplotlib (the sweep report's plot), boto3 and tomli-w (the AWS adapter), croniter
#: and isodate (budgets and fault templates).
LOWEST_TESTS = (
    "tests/cli/test_simulate_cli.py",
    "tests/cluster/test_kube_adapter.py",
    "tests/scheduling/test_costopt.py",
    "tests/operator/test_sweep_report.py",
    "tests/cloudprovider/aws/test_bootstrap.py",
    "tests/cloudprovider/aws/test_stubbed.py",
    "tests/faults/test_templates.py",
    "tests/packaging/test_metadata.py",
)


def test_the_lowest_allowed_versions_pass_the_tests_that_use_them(tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    lowest = str(REPO / "constraints-lowest.txt")
    tools = ("pytest", "pytest-timeout", "hypothesis", "jsonschema", "moto[server]>=5.1,<6")
    _pip(python, "-c", lowest, f"{REPO}[report,lp,aws]", *tools)
    run = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *LOWEST_TESTS],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
