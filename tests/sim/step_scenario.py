"""A seed-spot scenario whose web Deployment steps from 1 to 4 replicas at minute 10, with
one extra manifest (placeholders, a CapacityBuffer): the headroom tests share it."""

from __future__ import annotations

import shutil
from pathlib import Path

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"

#: A CronJob of one 1-vCPU pod every 10 minutes.
CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: default}
spec:
  schedule: "*/10 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: job
              image: busybox
              resources: {requests: {cpu: "1"}}
"""


def step_scenario(tmp_path: Path, name: str, manifest: str, settings: str = "") -> Path:
    """Write the scenario (30 minutes) with ``manifest`` as ``name`` and return its path;
    ``settings`` is a ``spec.settings`` flow mapping, if any."""
    d = tmp_path / "sc"
    shutil.copytree(SEED, d)
    (d / name).write_text(manifest)
    trace = d / "web.csv"
    trace.write_text(
        "minute,value\n" + "".join(f"{m},{100 if m < 10 else 400}\n" for m in range(30))
    )
    text = (d / "scenario.yaml").read_text()
    head = text[: text.index("  workloads:")].replace("duration: 2h", "duration: 30m")
    head = head.replace("    - deployment.yaml\n", f"    - deployment.yaml\n    - {name}\n")
    if settings:
        head = head.replace("  seed: 42\n", f"  seed: 42\n  settings: {settings}\n")
    (d / "scenario.yaml").write_text(
        head
        + "  workloads:\n"
        + f"    - deployment: default/web\n      trace: {{file: {trace}, targetPerReplica: 100,"
        " min: 1, max: 10}\n"
    )
    return d / "scenario.yaml"
