"""On-demand capacity reservations in the simulation: the ``reserved`` capacity type is
launched first while the reservation has room, then spot/on-demand (Karpenter-AWS)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.manifests import ec2nodeclass
from tests.sim.test_baseline import APP as BASELINE_APP

ROOT = Path(__file__).resolve().parents[2]

#: One pod per m5.xlarge (3 of its ~3.9 allocatable vCPUs).
APP = BASELINE_APP.replace('cpu: "1"', 'cpu: "3"')

RESERVATIONS = """\
    capacityReservations:
      - {id: cr-0a1b2c, instanceType: m5.xlarge, zone: us-east-1a, instanceCount: 2,
         tags: {team: web}}
      - {id: cr-0ffff0, instanceType: m5.xlarge, zone: us-east-1b, instanceCount: 5,
         tags: {team: other}}
"""


def _write(
    tmp_path: Path,
    *,
    capacity: str,
    terms: str,
    replicas: int = 3,
    gates: str = "",
    reservations: str = RESERVATIONS,
    extra_pool: str = "",
    workload: str = "",
) -> Path:
    nodeclass = ec2nodeclass('{tags: {t: "1"}}', role="r")
    if terms:
        nodeclass += f"  capacityReservationSelectorTerms: {terms}\n"
    (tmp_path / "np.yaml").write_text(
        f"""\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: general}}
spec:
{extra_pool}  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: [{capacity}]}}
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge, c5.xlarge]}}
---
"""
        + nodeclass
    )
    (tmp_path / "app.yaml").write_text(APP)
    (tmp_path / "scenario.yaml").write_text(
        f"""\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: t}}
spec:
  duration: 20m
  seed: 3
  manifests: [np.yaml, app.yaml]
  cloud:
    subnets:
      - {{id: s-a, zone: us-east-1a, tags: {{t: "1"}}}}
      - {{id: s-b, zone: us-east-1b, tags: {{t: "1"}}}}
    securityGroups: [{{id: sg, tags: {{t: "1"}}}}]
    interruptionRateMultiplier: 0
{reservations}  workloads:
    - {workload or f"{{deployment: default/web, replicas: {replicas}}}"}
{gates}"""
    )
    return tmp_path / "scenario.yaml"


def _consolidating(tmp_path: Path, **kwargs: Any) -> Path:
    """``_write`` for a pool that consolidates after a minute and allows reserved and
    on-demand capacity from reservation cr-0a1b2c."""
    pool = "  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m}\n"
    return _write(
        tmp_path,
        capacity="reserved, on-demand",
        terms="[{id: cr-0a1b2c}]",
        extra_pool=pool,
        **kwargs,
    )


def _run(path: Path) -> tuple[SimulationRuntime, dict[str, Any]]:
    rt = SimulationRuntime(load_scenario(path))
    return rt, rt.run().summary


def test_a_reservation_of_two_takes_the_first_two_nodes_and_the_third_goes_to_spot(tmp_path):
    rt, s = _run(_write(tmp_path, capacity="reserved, spot, on-demand", terms="[{id: cr-0a1b2c}]"))
    kinds = sorted(n["capacityType"] for n in s["nodes"])
    assert kinds == ["reserved", "reserved", "spot"]
    assert s["pods"]["scheduled"] == 3
    reserved = [n for n in rt.state.nodes.values() if n.labels[labels.CAPACITY_TYPE] == "reserved"]
    assert len(reserved) == 2
    for node in reserved:
        assert node.labels[labels.CAPACITY_RESERVATION_ID] == "cr-0a1b2c"
        assert node.labels[labels.CAPACITY_RESERVATION_TYPE] == "default"
        assert node.labels[labels.INSTANCE_TYPE] == "m5.xlarge"
        assert node.labels[labels.ZONE] == "us-east-1a"
    spot = [n for n in rt.state.nodes.values() if n.labels[labels.CAPACITY_TYPE] == "spot"]
    assert [labels.CAPACITY_RESERVATION_ID in n.labels for n in spot] == [False]
    assert rt.cloud.reservation_counts()["cr-0a1b2c"] == 0
    # The EC2NodeClass status entries (Karpenter's shape) and use, in the summary.
    by_id = {r["id"]: r for r in s["capacityReservations"]}
    assert by_id["cr-0a1b2c"] == {
        "id": "cr-0a1b2c",
        "instanceType": "m5.xlarge",
        "availabilityZone": "us-east-1a",
        "ownerID": "111122223333",
        "instanceMatchCriteria": "targeted",
        "reservationType": "default",
        "state": "active",
        "instanceCount": 2,
        "availableInstanceCount": 0,
        "peakInstancesRunning": 2,
        "selectedBy": ["default"],
    }
    assert by_id["cr-0ffff0"]["selectedBy"] == []
    assert by_id["cr-0ffff0"]["peakInstancesRunning"] == 0
    schema = json.loads((ROOT / "docs" / "schemas" / "summary.schema.json").read_text())
    jsonschema.validate(json.loads(json.dumps(s)), schema)


def test_a_pool_that_allows_only_reserved_leaves_pods_pending_once_it_is_full(tmp_path):
    _, s = _run(_write(tmp_path, capacity="reserved", terms="[{id: cr-0a1b2c}]"))
    assert [n["capacityType"] for n in s["nodes"]] == ["reserved", "reserved"]
    assert s["pods"]["scheduled"] == 2
    assert s["pods"]["pending"] == 1


def test_reservations_are_selected_by_tags(tmp_path):
    rt, s = _run(
        _write(
            tmp_path,
            capacity="reserved, on-demand",
            terms="[{tags: {team: other}, ownerID: '111122223333'}]",
            replicas=4,
        )
    )
    assert [n["capacityType"] for n in s["nodes"]] == ["reserved"] * 4
    ids = {n.labels[labels.CAPACITY_RESERVATION_ID] for n in rt.state.nodes.values()}
    assert ids == {"cr-0ffff0"}
    assert rt.cloud.reservation_counts() == {"cr-0a1b2c": 2, "cr-0ffff0": 1}


def test_another_owner_selects_nothing_and_on_demand_launches(tmp_path):
    _, s = _run(
        _write(
            tmp_path,
            capacity="reserved, on-demand",
            terms="[{tags: {team: web}, ownerID: '999999999999'}]",
            replicas=1,
        )
    )
    assert [n["capacityType"] for n in s["nodes"]] == ["on-demand"]


def test_the_feature_gate_off_ignores_reservations(tmp_path):
    gates = "  settings: {featureGates: {reservedCapacity: false}}\n"
    _, s = _run(
        _write(tmp_path, capacity="reserved, on-demand", terms="[{id: cr-0a1b2c}]", gates=gates)
    )
    assert [n["capacityType"] for n in s["nodes"]] == ["on-demand"] * 3


@pytest.mark.parametrize(("reserved", "kept"), [(True, True), (False, False)])
def test_consolidation_does_not_replace_a_reserved_node(tmp_path, reserved, kept):
    """Six 1-vCPU pods land on one m5.2xlarge, then five go: the node is underutilised. On
    a reservation it is priced at on-demand / 10^7, so no replacement is cheaper and it
    stays (Karpenter: reserved capacity is free); the same node on-demand (the gate off)
    is replaced by a cheaper type."""
    path = _consolidating(
        tmp_path,
        workload="{deployment: default/web, trace: {file: web.csv, targetPerReplica: 1, "
        "min: 1, max: 6}}",
        reservations=RESERVATIONS.replace("m5.xlarge", "m5.2xlarge"),
        gates="" if reserved else "  settings: {featureGates: {reservedCapacity: false}}\n",
    )
    (tmp_path / "web.csv").write_text(
        "minute,value\n" + "".join(f"{m},{6 if m < 5 else 1}\n" for m in range(20))
    )
    (tmp_path / "app.yaml").write_text(APP.replace('cpu: "3"', 'cpu: "1"'))
    np = tmp_path / "np.yaml"
    np.write_text(np.read_text().replace("[m5.xlarge, c5.xlarge]", "[m5.2xlarge, c5.large]"))
    _, s = _run(path)
    first = s["nodes"][0]
    assert first["instanceType"] == "m5.2xlarge"
    assert first["capacityType"] == ("reserved" if reserved else "on-demand")
    assert (first["deletedAtSeconds"] is None) == kept
    if kept:
        assert not s["disruptions"]["commands"]
        assert len(s["nodes"]) == 1
    else:
        assert [n["instanceType"] for n in s["nodes"][1:]] == ["c5.large"]


def test_unknown_reservation_zone_is_an_input_error(tmp_path):
    bad = RESERVATIONS.replace("us-east-1b", "eu-west-1a")
    with pytest.raises(InputError, match=r"capacityReservations\[1\]\.zone"):
        load_scenario(
            _write(tmp_path, capacity="reserved", terms="[{id: cr-0a1b2c}]", reservations=bad)
        )


def test_id_with_tags_is_rejected(tmp_path):
    with pytest.raises(InputError, match="mutually exclusive"):
        load_scenario(
            _write(tmp_path, capacity="reserved", terms="[{id: cr-0a1b2c, tags: {a: b}}]")
        )


def test_consolidation_moves_pods_from_an_on_demand_node_into_reserved_room(tmp_path):
    """Karpenter models reserved capacity as free: once a reserved node has room again, an
    on-demand node whose pods fit there is deleted (SingleNodeConsolidation) and the pods
    run on the reservation."""
    path = _consolidating(
        tmp_path,
        workload="{deployment: default/web, trace: {file: web.csv, targetPerReplica: 1, "
        "min: 0, max: 1}}\n    - {deployment: default/keep, trace: {file: keep.csv, "
        "targetPerReplica: 1, min: 0, max: 1}}",
        reservations=RESERVATIONS.replace("instanceCount: 2", "instanceCount: 1"),
    )
    (tmp_path / "web.csv").write_text(
        "minute,value\n" + "".join(f"{m},{1 if m < 6 else 0}\n" for m in range(20))
    )
    (tmp_path / "keep.csv").write_text(
        "minute,value\n" + "".join(f"{m},{0 if m < 3 else 1}\n" for m in range(20))
    )
    (tmp_path / "app.yaml").write_text(APP + "---\n" + APP.replace("web", "keep"))
    rt, s = _run(path)
    nodes = [(n["capacityType"], n["deletedAtSeconds"] is None) for n in s["nodes"]]
    assert nodes == [("reserved", True), ("on-demand", False)]
    (command,) = s["disruptions"]["commands"]
    assert (command["method"], command["action"]) == ("SingleNodeConsolidation", "Delete")
    keep = [p for p in rt.state.pods.values() if p.deleted_at_s is None]
    assert len(keep) == 1
    node = rt.state.nodes[keep[0].node_name]
    assert node.labels[labels.CAPACITY_TYPE] == "reserved"
