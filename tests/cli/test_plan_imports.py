"""``joiner plan`` over EC2NodeClasses imports only what that path uses (issue 16: start-up
CPU). Each run is a fresh interpreter, as ``joiner`` is, so a module imported by an earlier
test cannot hide a regression; the assertion is on ``sys.modules``, never on a duration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.manifests import EC2NODECLASS

REPO = Path(__file__).resolve().parents[2]

#: Modules a plan over EC2NodeClasses without schedules or user data does not need:
#: Karpenter-kwok's provider (KWOKNodeClasses only), the simulator (a single file is checked
#: for ``kind: Scenario`` without it), the other output documents' models, croniter
#: (disruption budget schedules), the MIME and TOML parsers (EC2NodeClass user data), and
#: the heavy optional libraries.
NOT_IMPORTED = (
    "joiner.cloudprovider.kwok",
    "joiner.sim.scenario",
    "joiner.api.outputs",
    "croniter",
    "email.parser",
    "tomllib",
    "matplotlib",
    "highspy",
    "boto3",
    "lightkube",
)

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
  disruption:
    consolidateAfter: 1m
    budgets: BUDGETS
---
"""

POD = """---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default}
spec:
  containers: [{name: app, image: app, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""

_PROBE = """
import json, sys
from joiner.cli.main import main
names = json.loads(sys.argv[1])
sys.argv = ["joiner", "plan", "-o", "json", *sys.argv[2:]]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
sys.stderr.write(json.dumps({m: m in sys.modules for m in names}))
"""


def _plan_imports(tmp_path: Path, budgets: str) -> dict[str, bool]:
    """Run ``joiner plan`` in a fresh interpreter; which of ``NOT_IMPORTED`` it imported."""
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(NODEPOOL.replace("BUDGETS", budgets) + EC2NODECLASS + POD)
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(NOT_IMPORTED), "-f", str(manifest)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(proc.stdout)["nodeClaims"], proc.stdout
    result: dict[str, bool] = json.loads(proc.stderr.strip().splitlines()[-1])
    return result


def test_plan_over_ec2_nodeclasses_does_not_import_unused_modules(tmp_path: Path) -> None:
    imported = _plan_imports(tmp_path, '[{nodes: "10%"}]')
    assert not any(imported.values()), [m for m, hit in imported.items() if hit]


def test_a_budget_schedule_imports_croniter_when_it_is_checked(tmp_path: Path) -> None:
    """The control: the probe sees a lazily imported module once its path runs."""
    imported = _plan_imports(tmp_path, '[{nodes: "0", schedule: "@daily", duration: 10m}]')
    assert imported["croniter"]
    assert not imported["joiner.cloudprovider.kwok"]


def test_the_command_line_module_does_not_import_numpy() -> None:
    """``joiner.cli.main.main`` sets ``OPENBLAS_NUM_THREADS`` before a command imports
    numpy (OpenBLAS reads it once, at numpy's import), so importing the command line itself
    must not import numpy."""
    probe = "import sys, joiner.cli.main; print('numpy' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "False"
