"""NodeOverlays (Karpenter's alpha ``NodeOverlay`` gate) in ``joiner plan``: written as a
user would, with and without the gate, and the API server's checks on bad overlays."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from tests.manifests import EC2NODECLASS

runner = CliRunner()

#: On-demand m5.large ($0.096/h) or c5.large ($0.085/h) in one zone: c5.large is cheaper.
POOL = """
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    metadata: {labels: {team: web}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, c5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
"""


def web(requests: str = "{cpu: 500m, memory: 512Mi}") -> str:
    return f"""
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: app
          image: nginx
          resources: {{requests: {requests}, limits: {requests}}}
"""


def overlay(name: str, spec: str) -> str:
    return f"""
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {{name: {name}}}
spec:
{spec}"""


M5 = "  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]\n"


def _plan(tmp_path: Path, overlays: str, *args: str, workload: str | None = None) -> dict:
    path = tmp_path / "cluster.yaml"
    path.write_text("\n" + EC2NODECLASS + POOL + (workload or web()) + overlays)
    result = runner.invoke(app, ["plan", "-f", str(path), "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _launched(plan: dict) -> list[str]:
    return [c["launch"]["instanceType"] for c in plan["nodeClaims"]]


def test_a_price_overlay_makes_plan_choose_the_dearer_type_only_with_the_gate_on(tmp_path):
    cheap_m5 = overlay("discount", M5 + '  price: "0.01"\n')
    off = _plan(tmp_path, cheap_m5)
    assert _launched(off) == ["c5.large"]
    warning = " ".join(" ".join(off["warnings"]).split())
    assert "NodeOverlay/discount: NodeOverlay is not modelled" in warning
    assert "spec.price" in warning and "enable the NodeOverlay feature gate" in warning
    on = _plan(tmp_path, cheap_m5, "--feature-gates", "NodeOverlay=true")
    assert _launched(on) == ["m5.large"]
    assert not any("NodeOverlay" in w for w in on["warnings"])
    # The overlay steers the choice; the NodeClaim costs what the catalog charges.
    assert on["nodeClaims"][0]["launch"]["pricePerHour"] == 0.096


def test_a_percentage_adjustment_scales_the_price(tmp_path):
    gate = ("--feature-gates", "NodeOverlay=true")
    # 0.096 x 0.8 = 0.0768 < 0.085: m5.large becomes the cheaper one.
    assert _launched(_plan(tmp_path, overlay("a", M5 + '  priceAdjustment: "-20%"\n'), *gate)) == [
        "m5.large"
    ]
    # 0.096 x 0.95 = 0.0912 > 0.085: still dearer.
    assert _launched(_plan(tmp_path, overlay("a", M5 + '  priceAdjustment: "-5%"\n'), *gate)) == [
        "c5.large"
    ]
    # A signed absolute change: 0.096 - 0.02 = 0.076.
    assert _launched(_plan(tmp_path, overlay("a", M5 + '  priceAdjustment: "-0.02"\n'), *gate)) == [
        "m5.large"
    ]


def test_an_overlay_selecting_on_a_template_label_applies_to_that_pool(tmp_path):
    by_label = overlay(
        "team",
        "  requirements:\n"
        "    - {key: team, operator: In, values: [web]}\n"
        "    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}\n"
        '  price: "0.01"\n',
    )
    assert _launched(_plan(tmp_path, by_label, "--feature-gates", "NodeOverlay=true")) == [
        "m5.large"
    ]
    other = by_label.replace("values: [web]", "values: [batch]")
    assert _launched(_plan(tmp_path, other, "--feature-gates", "NodeOverlay=true")) == ["c5.large"]


def test_a_capacity_overlay_lets_a_pod_requesting_the_extended_resource_schedule(tmp_path):
    gpu = web("{cpu: 500m, memory: 512Mi, example.com/gpu: 1}")
    adds = overlay("gpus", M5 + "  capacity: {example.com/gpu: 2}\n")
    off = _plan(tmp_path, adds, workload=gpu)
    assert off["nodeClaims"] == [] and len(off["unschedulable"]) == 1
    on = _plan(tmp_path, adds, "--feature-gates", "NodeOverlay=true", workload=gpu)
    assert _launched(on) == ["m5.large"] and on["unschedulable"] == []


def test_the_heavier_of_two_overlapping_overlays_sets_the_price(tmp_path):
    gate = ("--feature-gates", "NodeOverlay=true")
    cheap = overlay("cheap", M5 + '  price: "0.01"\n  weight: 10\n')
    dear = overlay("dear", M5 + '  price: "0.50"\n  weight: 5\n')
    assert _launched(_plan(tmp_path, cheap + dear, *gate)) == ["m5.large"]
    cheap_light = cheap.replace("weight: 10", "weight: 1")
    assert _launched(_plan(tmp_path, cheap_light + dear, *gate)) == ["c5.large"]


def test_same_weight_overlays_on_the_same_offerings_conflict_and_the_later_name_wins(tmp_path):
    # Both weight 0: "zeta" comes first (later in the alphabet) and applies; "alpha"
    # conflicts with it and applies nowhere.
    alpha = overlay("alpha", M5 + '  price: "0.50"\n')
    zeta = overlay("zeta", M5 + '  price: "0.01"\n')
    plan = _plan(tmp_path, alpha + zeta, "--feature-gates", "NodeOverlay=true")
    assert _launched(plan) == ["m5.large"]
    text = " ".join(" ".join(plan["warnings"]).split())
    assert "NodeOverlay/alpha: NodeOverlay conflicts with another overlay" in text
    assert "reason Conflict" in text and "NodeOverlay/zeta" not in text


def _rejected(tmp_path: Path, spec: str) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text("\n" + EC2NODECLASS + POOL + web() + overlay("bad", spec))
    result = runner.invoke(app, ["plan", "-f", str(path)])
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


def test_bad_overlays_are_rejected_as_the_api_server_would(tmp_path):
    both = _rejected(tmp_path, M5 + '  price: "0.01"\n  priceAdjustment: "-10%"\n')
    assert "NodeOverlay/bad" in both and "cannot set both 'price' and 'priceAdjustment'" in both
    unsigned = _rejected(tmp_path, M5 + '  priceAdjustment: "10%"\n')
    assert "NodeOverlay/bad" in unsigned and "spec.priceAdjustment" in unsigned
    below = _rejected(tmp_path, M5 + '  priceAdjustment: "-150%"\n')
    assert "spec.priceAdjustment" in below
    cpu = _rejected(tmp_path, M5 + "  capacity: {cpu: 2}\n")
    assert "spec.capacity.cpu" in cpu and "invalid resource restricted" in cpu
    empty_in = _rejected(
        tmp_path, "  requirements: [{key: node.kubernetes.io/instance-type, operator: In}]\n"
    )
    assert "spec.requirements[0].values" in empty_in and "must have a value defined" in empty_in
    weight = _rejected(tmp_path, M5 + "  weight: 0\n")
    assert "spec.weight" in weight
    restricted = _rejected(
        tmp_path, "  requirements: [{key: karpenter.sh/registered, operator: Exists}]\n"
    )
    assert "spec.requirements[0].key" in restricted and '"karpenter.sh" is restricted' in restricted
    host = _rejected(
        tmp_path, "  requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]\n"
    )
    assert "spec.requirements[0].key" in host and "hostname" in host


def test_an_overlay_may_select_its_nodepool_by_name(tmp_path):
    by_pool = overlay(
        "pool",
        "  requirements:\n"
        "    - {key: karpenter.sh/nodepool, operator: In, values: [general]}\n"
        "    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}\n"
        '  price: "0.01"\n',
    )
    gate = ("--feature-gates", "NodeOverlay=true")
    assert _launched(_plan(tmp_path, by_pool, *gate)) == ["m5.large"]
    other = by_pool.replace("values: [general]", "values: [batch]")
    assert _launched(_plan(tmp_path, other, *gate)) == ["c5.large"]


def test_lint_names_an_overlay_the_gate_leaves_without_effect(tmp_path):
    path = tmp_path / "cluster.yaml"
    discount = overlay("discount", M5 + '  price: "0.01"\n')
    path.write_text("\n" + EC2NODECLASS + POOL + web() + discount)
    result = runner.invoke(app, ["lint", str(path)])
    text = " ".join(result.output.split())
    assert "NodeOverlay/discount: NodeOverlay is not modelled" in text
