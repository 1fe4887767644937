"""``joiner plan`` and ``joiner disrupt`` price Spot per capacity pool from a Spot price
history (``--spot-price-history`` or a Scenario's ``spec.cloud.spotPriceHistory``) as
``joiner simulate`` does; without one they price Spot regionally, as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

NODECLASS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: r
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {t: "1"}}]
  securityGroupSelectorTerms: [{tags: {t: "1"}}]
"""

SPOT_POOL = (
    """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge, m5.xlarge]}
---
"""
    + NODECLASS
)

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: w, image: w, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""

T0 = "2025-01-05T00:00:00+00:00"


def _rows(prices: dict[tuple[str, str], str], at: str = T0) -> dict[str, Any]:
    return {
        "SpotPriceHistory": [
            {
                "AvailabilityZone": zone,
                "InstanceType": name,
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": price,
                "Timestamp": at,
            }
            for (name, zone), price in prices.items()
        ]
    }


#: Regionally m5.xlarge is the cheaper Spot type (0.0653 against 0.0748 $/h); per pool,
#: c5.xlarge in us-east-1c is much cheaper than anything else.
CHEAP_C = {
    **{("c5.xlarge", z): "0.0800" for z in ("us-east-1a", "us-east-1b")},
    ("c5.xlarge", "us-east-1c"): "0.0200",
    **{("m5.xlarge", z): "0.0700" for z in ("us-east-1a", "us-east-1b", "us-east-1c")},
}


def _scenario(tmp_path: Path, history: dict[str, Any] | None) -> Path:
    (tmp_path / "m.yaml").write_text(SPOT_POOL + "---\n" + APP)
    cloud = ""
    if history is not None:
        (tmp_path / "history.json").write_text(json.dumps(history))
        # Equal placement scores: the simulated fleet's price-capacity-optimized choice is
        # then the cheapest pool.
        scores = {
            "SpotPlacementScores": [
                {"Region": "us-east-1", "AvailabilityZoneId": zid, "Score": 8}
                for zid in ("use1-az6", "use1-az1", "use1-az2")
            ]
        }
        (tmp_path / "scores.json").write_text(json.dumps(scores))
        cloud = "    spotPriceHistory: history.json\n    spotPlacementScores: scores.json\n"
    path = tmp_path / "scenario.yaml"
    path.write_text(
        f"""\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: prices}}
spec:
  duration: 10m
  seed: 4
  startTime: "2025-01-05T06:00:00Z"
  manifests: [m.yaml]
  cloud:
    subnets:
      - {{id: subnet-a, zone: us-east-1a, tags: {{t: "1"}}}}
      - {{id: subnet-b, zone: us-east-1b, tags: {{t: "1"}}}}
      - {{id: subnet-c, zone: us-east-1c, tags: {{t: "1"}}}}
    securityGroups: [{{id: sg-1, tags: {{t: "1"}}}}]
{cloud}"""
    )
    return path


def _json(args: list[str]) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _plan_with_history(tmp_path: Path, history: dict[str, Any]) -> list[str]:
    """``joiner plan`` arguments over the Spot pool's manifests (no Scenario) with
    ``history`` as ``--spot-price-history``."""
    (tmp_path / "m.yaml").write_text(SPOT_POOL + "---\n" + APP)
    (tmp_path / "h.json").write_text(json.dumps(history))
    return [
        "plan",
        "-f",
        str(tmp_path / "m.yaml"),
        "--spot-price-history",
        str(tmp_path / "h.json"),
    ]


def _launch(doc: dict[str, Any]) -> tuple[str, str, float]:
    (claim,) = doc["nodeClaims"]
    launch = claim["launch"]
    return launch["instanceType"], launch["zone"], launch["pricePerHour"]


def test_plan_launches_where_simulate_first_launches(tmp_path: Path) -> None:
    path = _scenario(tmp_path, _rows(CHEAP_C))
    (node, *_) = SimulationRuntime(load_scenario(path)).run().summary["nodes"]
    assert (node["instanceType"], node["zone"]) == ("c5.xlarge", "us-east-1c")
    doc = _json(["plan", "-f", str(path)])
    assert _launch(doc) == (node["instanceType"], node["zone"], pytest.approx(0.02))
    assert doc["priceSource"] == "spot-price-history"
    assert doc["pricesAt"] == "2025-01-05T06:00:00Z"  # spec.startTime
    assert any("not modelled: spec.cloud.spotPlacementScores" in w for w in doc["warnings"])
    schema = json.loads((REPO / "docs" / "schemas" / "plan.schema.json").read_text())
    jsonschema.validate(doc, schema)


def test_without_a_history_plan_prices_spot_regionally_as_before(tmp_path: Path) -> None:
    doc = _json(["plan", "-f", str(_scenario(tmp_path, None))])
    assert _launch(doc) == ("m5.xlarge", "us-east-1a", pytest.approx(0.06528))
    assert doc["priceSource"] == "regional" and doc["pricesAt"] is None
    # The flag brings the history to the same Scenario.
    (tmp_path / "h.json").write_text(json.dumps(_rows(CHEAP_C)))
    doc = _json(
        [
            "plan",
            "-f",
            str(tmp_path / "scenario.yaml"),
            "--spot-price-history",
            str(tmp_path / "h.json"),
        ]
    )
    assert _launch(doc) == ("c5.xlarge", "us-east-1c", pytest.approx(0.02))


def test_plan_over_manifests_reads_the_history_at_its_latest_row_or_at(tmp_path: Path) -> None:
    """Without a Scenario: the history's latest row is "now"; ``--at`` reads an earlier
    instant (rows before it, the earliest row before the history starts)."""
    history = _rows(CHEAP_C)
    # An hour later c5.xlarge in us-east-1c is dear again, and m5.xlarge in us-east-1b cheap.
    history["SpotPriceHistory"] += _rows(
        {("c5.xlarge", "us-east-1c"): "0.0900", ("m5.xlarge", "us-east-1b"): "0.0150"},
        at="2025-01-05T01:00:00Z",
    )["SpotPriceHistory"]
    args = _plan_with_history(tmp_path, history)
    doc = _json(args)
    assert _launch(doc) == ("m5.xlarge", "us-east-1b", pytest.approx(0.015))
    assert doc["pricesAt"] == "2025-01-05T01:00:00Z"
    doc = _json([*args, "--at", "2025-01-05T00:30:00Z"])
    assert _launch(doc) == ("c5.xlarge", "us-east-1c", pytest.approx(0.02))
    result = runner.invoke(app, args)
    assert "Spot prices: per instance type and zone, at 2025-01-05T01:00:00Z" in result.output


RUNNING = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata:
      name: ip-10-0-1-10.ec2.internal
      labels:
        karpenter.sh/nodepool: steady
        karpenter.sh/capacity-type: on-demand
        node.kubernetes.io/instance-type: c5.xlarge
        topology.kubernetes.io/zone: us-east-1a
        kubernetes.io/arch: amd64
        kubernetes.io/os: linux
        kubernetes.io/hostname: ip-10-0-1-10.ec2.internal
    spec:
      providerID: aws:///us-east-1a/i-0a1b2c3d4e5f60010
    status:
      allocatable: {cpu: 3920m, memory: 6900Mi, pods: "58"}
  - apiVersion: v1
    kind: Pod
    metadata: {name: web-1, namespace: shop, labels: {app: web}}
    spec:
      nodeName: ip-10-0-1-10.ec2.internal
      containers: [{name: main, resources: {requests: {cpu: "1", memory: 2Gi}}}]
"""

#: The running node's pool (on-demand c5.xlarge, 0.17 $/h) and a preferred Spot pool whose
#: only type, m5.4xlarge, costs 0.3226 $/h regionally but 0.05-0.06 $/h per pool here.
POOLS = (
    """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: steady}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge]}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  weight: 10
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.4xlarge]}
---
"""
    + NODECLASS
)


def test_disrupt_replaces_a_node_only_per_pool_prices_make_dear(tmp_path: Path) -> None:
    (tmp_path / "running.yaml").write_text(RUNNING)
    (tmp_path / "pools.yaml").write_text(POOLS)
    # Karpenter compares the worst launch price of the replacement's offerings: every
    # zone's pool must be cheap (the EC2NodeClass has no status: every zone of us-east-1).
    zones = [f"us-east-1{z}" for z in "abcdef"]
    prices = {("m5.4xlarge", z): "0.0600" for z in zones} | {("m5.4xlarge", "us-east-1c"): "0.0500"}
    (tmp_path / "h.json").write_text(json.dumps(_rows(prices)))
    args = ["disrupt", "-f", str(tmp_path / "running.yaml"), "-f", str(tmp_path / "pools.yaml")]
    args += ["--at", "2025-01-07T21:00:00Z"]
    regional = _json(args)
    assert regional["commands"] == [] and regional["priceSource"] == "regional"
    doc = _json([*args, "--spot-price-history", str(tmp_path / "h.json")])
    (command,) = doc["commands"]
    assert command["candidates"] == ["ip-10-0-1-10.ec2.internal"]
    (rep,) = command["replacements"]
    assert (rep["instanceType"], rep["zone"], rep["capacityType"]) == (
        "m5.4xlarge",
        "us-east-1c",
        "spot",
    )
    assert rep["pricePerHour"] == pytest.approx(0.05)
    assert command["savingsPerHour"] == pytest.approx(0.12)
    assert doc["priceSource"] == "spot-price-history"
    assert doc["pricesAt"] == "2025-01-07T21:00:00Z"
    schema = json.loads((REPO / "docs" / "schemas" / "disruption.schema.json").read_text())
    jsonschema.validate(doc, schema)


@pytest.mark.parametrize("command", ["plan", "disrupt"])
def test_a_bad_history_file_is_an_input_error_naming_file_and_field(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "m.yaml").write_text(SPOT_POOL + "---\n" + APP)
    bad = _rows(CHEAP_C)
    bad["SpotPriceHistory"][2]["SpotPrice"] = "cheap"
    (tmp_path / "h.json").write_text(json.dumps(bad))
    args = [
        command,
        "-f",
        str(tmp_path / "m.yaml"),
        "--spot-price-history",
        str(tmp_path / "h.json"),
    ]
    result = runner.invoke(app, [*args, "--at", "2025-01-05T00:00:00Z"])
    assert result.exit_code == 2, result.output
    assert str(tmp_path / "h.json") in result.output
    assert "SpotPriceHistory[2].SpotPrice" in result.output
    assert "'cheap' is not a positive price" in result.output


def test_a_scenario_history_is_read_at_plan_at_from_its_start(tmp_path: Path) -> None:
    """``--at`` two hours after ``spec.startTime`` reads the row in force then (the
    Scenario's history counts from its start)."""
    history = _rows(CHEAP_C)
    history["SpotPriceHistory"] += _rows(
        {("c5.xlarge", "us-east-1c"): "0.0900", ("m5.xlarge", "us-east-1b"): "0.0150"},
        at="2025-01-05T07:00:00Z",
    )["SpotPriceHistory"]
    path = str(_scenario(tmp_path, history))
    assert _launch(_json(["plan", "-f", path]))[:2] == ("c5.xlarge", "us-east-1c")
    doc = _json(["plan", "-f", path, "--at", "2025-01-05T08:00:00Z"])
    assert _launch(doc) == ("m5.xlarge", "us-east-1b", pytest.approx(0.015))
    assert doc["pricesAt"] == "2025-01-05T08:00:00Z"
    doc = _json(["disrupt", "-f", path, "--at", "2025-01-05T08:00:00Z"])
    assert (doc["priceSource"], doc["pricesAt"]) == ("spot-price-history", "2025-01-05T08:00:00Z")


def test_plan_at_without_a_history_warns_that_it_has_no_effect(tmp_path: Path) -> None:
    doc = _json(["plan", "-f", str(_scenario(tmp_path, None)), "--at", "2025-01-05T08:00:00Z"])
    assert doc["priceSource"] == "regional"
    assert any(w.startswith("--at has no effect") for w in doc["warnings"])


def test_a_history_after_at_says_so_naming_at(tmp_path: Path) -> None:
    args = _plan_with_history(tmp_path, _rows(CHEAP_C))
    doc = _json([*args, "--at", "2025-01-04T22:00:00Z"])
    (late,) = [w for w in doc["warnings"] if "after --at" in w]
    assert late.startswith(f"{tmp_path / 'h.json'}: field SpotPriceHistory: the first row is 2.0 h")
    assert _launch(doc)[:2] == ("c5.xlarge", "us-east-1c")  # the earliest row before it


def test_a_history_with_kwok_instance_types_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "h.json").write_text(json.dumps(_rows(CHEAP_C)))
    kwok = REPO / "tests" / "fixtures"
    result = runner.invoke(
        app,
        [
            "plan",
            "-f",
            str(tmp_path / "h.json"),
            "--kwok-instance-types",
            str(kwok / "nope.json"),
            "--spot-price-history",
            str(tmp_path / "h.json"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "--spot-price-history" in result.output and "KWOKNodeClasses" in result.output


def test_a_history_ending_long_before_at_is_warned_about(tmp_path: Path) -> None:
    """Regression (newcomer): ``disrupt`` reads ``--at`` as now, so a history that ended a
    month before was used without a word; it is used, with a warning naming both times."""
    args = _plan_with_history(tmp_path, _rows(CHEAP_C))
    late = _json([*args, "--at", "2025-02-05T00:00:00Z"])
    (stale,) = [w for w in late["warnings"] if "the Spot price history ends" in w]
    assert "31 days before --at 2025-02-05T00:00:00+00:00" in stale
    assert _launch(late) == ("c5.xlarge", "us-east-1c", pytest.approx(0.02))
    assert not any("the Spot price history ends" in w for w in _json(args)["warnings"])
