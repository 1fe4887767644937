"""A Scenario's capacity reservations reach the dry runs as they reach ``joiner simulate``:
``lint``, ``plan`` and ``advise`` see its ``reserved`` offerings (they used to warn that
``reserved`` matched nothing and plan Spot), the ReservedCapacity gate turns them off, and
``lint`` names a reservation in a zone where its NodeClass has no subnet."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app

runner = CliRunner()

MANIFESTS = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [reserved]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  capacityReservationSelectorTerms: [{id: cr-0123abcd}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: default}
spec:
  replicas: 6
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: nginx
          resources: {requests: {cpu: "1", memory: 1536Mi}}
"""

SCENARIO = """\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: reserved-dry-run}}
spec:
  region: us-east-1
  duration: 10m
  manifests: [manifests.yaml]
  settings: {{featureGates: {{reservedCapacity: {gate}}}}}
  cloud:
    subnets:
      - {{id: subnet-0a1, zone: us-east-1a, tags: {{karpenter.sh/discovery: demo}}}}
    securityGroups: [{{id: sg-0b2, tags: {{karpenter.sh/discovery: demo}}}}]
    capacityReservations:
      - {{id: cr-0123abcd, instanceType: m5.xlarge, zone: {zone}, instanceCount: 2}}
"""


def _scenario(tmp_path: Path, *, gate: str = "true", zone: str = "us-east-1a") -> str:
    (tmp_path / "manifests.yaml").write_text(MANIFESTS)
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(gate=gate, zone=zone))
    return str(path)


def _plan(scenario: str) -> dict:
    result = runner.invoke(app, ["plan", "-f", scenario, "-o", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_plan_launches_into_the_scenarios_reservation(tmp_path: Path) -> None:
    doc = _plan(_scenario(tmp_path))
    launches = [c["launch"] for c in doc["nodeClaims"]]
    assert [(x["instanceType"], x["capacityType"]) for x in launches] == [
        ("m5.xlarge", "reserved"),
        ("m5.xlarge", "reserved"),
    ]
    ids = {c["labels"]["karpenter.k8s.aws/capacity-reservation-id"] for c in doc["nodeClaims"]}
    assert ids == {"cr-0123abcd"}
    assert sum(len(c["pods"]) for c in doc["nodeClaims"]) == 6
    assert not any("matches no instance type" in w for w in doc["warnings"])


def test_plan_without_the_gate_has_no_reserved_capacity(tmp_path: Path) -> None:
    doc = _plan(_scenario(tmp_path, gate="false"))
    assert doc["nodeClaims"] == []
    assert len(doc["unschedulable"]) == 6
    assert any("capacity-type In [reserved]" in w for w in doc["warnings"])


def test_lint_accepts_a_reserved_only_pool_with_a_reservation(tmp_path: Path) -> None:
    result = runner.invoke(app, ["lint", _scenario(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "no warnings" in result.output


def test_lint_names_a_reservation_no_subnet_reaches(tmp_path: Path) -> None:
    result = runner.invoke(app, ["lint", _scenario(tmp_path, zone="us-east-1c")])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "spec.capacityReservationSelectorTerms" in text
    assert "cr-0123abcd" in text and "us-east-1c" in text


def test_advise_counts_reserved_nodes_as_on_no_spot(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["advise", "-f", _scenario(tmp_path), "-o", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    (pool,) = json.loads(result.stdout)["nodePools"]
    assert pool["nodes"] == 2 and pool["spotNodes"] == 0 and pool["pods"] == 6


def test_plan_on_a_dump_says_its_status_reservations_are_not_modelled(tmp_path: Path) -> None:
    """The breaker's input: a dump's EC2NodeClass ``status.capacityReservations`` was read
    and dropped without a word."""
    status = (
        "status:\n"
        "  subnets: [{id: subnet-1, zone: us-east-1a}]\n"
        "  securityGroups: [{id: sg-1}]\n"
        "  capacityReservations:\n"
        "    - {id: cr-0123abcd, instanceType: m5.xlarge, availabilityZone: us-east-1a}\n"
    )
    dump = MANIFESTS.replace("---\napiVersion: apps/v1", status + "---\napiVersion: apps/v1")
    (tmp_path / "dump.yaml").write_text(dump)
    result = runner.invoke(
        app, ["plan", "-f", str(tmp_path / "dump.yaml"), "-o", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert any(
        "EC2NodeClass/default" in w
        and "not modelled: status.capacityReservations (cr-0123abcd)" in w
        for w in warnings
    ), warnings


def test_lint_of_reserved_without_reservations_names_the_selector_not_the_spelling(
    tmp_path: Path,
) -> None:
    path = _scenario(tmp_path, gate="false")
    (tmp_path / "manifests.yaml").write_text(
        MANIFESTS.replace("values: [reserved]", "values: [reserved, spot]")
    )
    result = runner.invoke(app, ["lint", path])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "value 'reserved' matches no instance type" in text
    assert "capacityReservationSelectorTerms" in text and "check its spelling" not in text
