"""joiner.dev/on-demand-base: a count or percentage of a pool's nodes kept on-demand."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.sim.test_baseline import APP, NODECLASS

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"


def _run(tmp_path: Path, base: str):
    d = tmp_path / "seed"
    shutil.copytree(SEED, d)
    p = d / "provisioner.yaml"
    p.write_text(
        p.read_text().replace(
            "  name: my-provisioner\n",
            f'  name: my-provisioner\n  annotations:\n    joiner.dev/on-demand-base: "{base}"\n',
        )
    )
    return SimulationRuntime(load_scenario(d / "scenario.yaml")).run().summary


@pytest.mark.parametrize(("base", "on_demand"), [("2", 2), ("30%", 3), ("0", 0)])
def test_base_is_kept_on_demand(tmp_path, base, on_demand):
    s = _run(tmp_path, base)
    kinds = [n["capacityType"] for n in s["nodes"]]
    assert len(kinds) == 7  # 20 one-vCPU pods, 3 per c5.xlarge
    assert kinds.count("on-demand") == on_demand
    assert s["pods"]["scheduled"] == 20


def test_bad_base_is_input_error(tmp_path):
    with pytest.raises(InputError, match="on-demand-base"):
        _run(tmp_path, "lots")


def test_consolidation_keeps_the_on_demand_base(tmp_path):
    """Consolidation may shrink and replace nodes, but never below the pool's on-demand
    base: a base node is only deleted while the base still holds, and replaced on-demand."""
    (tmp_path / "np.yaml").write_text(
        """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: web
  annotations: {joiner.dev/on-demand-base: "2"}
spec:
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
---
"""
        + NODECLASS
        + "---\n"
        + APP.replace("memory: 1Gi", "memory: 2Gi")
    )
    (tmp_path / "web.csv").write_text(
        "minute,value\n" + "".join(f"{m},{24 if m < 20 else 3}\n" for m in range(120))
    )
    (tmp_path / "scenario.yaml").write_text(
        """\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {name: base}
spec:
  duration: 2h
  seed: 5
  manifests: [np.yaml]
  cloud:
    subnets:
      - {id: s-a, zone: us-east-1a, tags: {t: "1"}}
      - {id: s-b, zone: us-east-1b, tags: {t: "1"}}
    securityGroups: [{id: sg, tags: {t: "1"}}]
    interruptionRateMultiplier: 0
  workloads:
    - deployment: default/web
      trace: {file: web.csv, targetPerReplica: 1, min: 1, max: 24}
"""
    )
    rt = SimulationRuntime(load_scenario(tmp_path / "scenario.yaml"))
    s = rt.run().summary
    assert s["disruptions"]["commands"], "the scale-down must leave something to consolidate"
    # At every instant after the first launches, at least min(2, live nodes) are on-demand.
    events = sorted(
        {n["launchedAtSeconds"] for n in s["nodes"]}
        | {n["deletedAtSeconds"] for n in s["nodes"] if n["deletedAtSeconds"] is not None}
    )
    for t in events:
        live = [
            n
            for n in s["nodes"]
            if n["readyAtSeconds"] is not None
            and n["launchedAtSeconds"] <= t
            and (n["deletedAtSeconds"] is None or n["deletedAtSeconds"] > t)
        ]
        od = sum(1 for n in live if n["capacityType"] == "on-demand")
        assert od >= min(2, len(live)) or t < 300.0, (t, od, len(live))
    final = [n for n in s["nodes"] if n["deletedAtSeconds"] is None]
    assert sum(1 for n in final if n["capacityType"] == "on-demand") >= min(2, len(final))
