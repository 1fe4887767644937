"""A pod affinity term or spread constraint without ``labelSelector`` selects no pod
(Kubernetes ``metav1.LabelSelectorAsSelector(nil)`` is ``labels.Nothing()``; Karpenter's
``topologygroup.go`` ``NewTopologyGroup`` reads it so): a spread counts nothing, an
anti-affinity avoids nothing and a required affinity is never met. ``mismatchLabelKeys``
exclude the pod's own value, as the API server merges them into the selector.

Inputs from trying to break ``plan`` with hand-written pods (they were read as selecting
every pod: the spread pods went one per zone, the anti-affinity pods one per node and the
affinity pod joined the others)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from tests import manifests

runner = CliRunner()

POOL = (
    manifests.nodepool(
        "[{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}]", name="p"
    )
    + "---\n"
    + manifests.EC2NODECLASS
)


def _pods(prefix: str, count: int, labels: str, spec_extra: str) -> str:
    return "".join(
        f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {prefix}{i}, namespace: d, labels: {labels}}}
spec:
{spec_extra}  containers:
    - {{name: c, resources: {{requests: {{cpu: 500m, memory: 512Mi}}}}}}
"""
        for i in range(count)
    )


def _plan(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "m.yaml"
    path.write_text(POOL + text)
    result = runner.invoke(app, ["plan", "-f", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


SPREAD = (
    "  topologySpreadConstraints:\n"
    "    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,"
    " whenUnsatisfiable: DoNotSchedule}\n"
)
ANTI = (
    "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
    "        - {topologyKey: kubernetes.io/hostname}\n"
)
AFFINITY = (
    "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
    "        - {topologyKey: topology.kubernetes.io/zone}\n"
)


@pytest.mark.parametrize("constraint", [SPREAD, ANTI], ids=["zone-spread", "anti-affinity"])
def test_a_constraint_without_label_selector_counts_no_pod(tmp_path: Path, constraint: str):
    plan = _plan(tmp_path, _pods("s", 3, "{app: w}", constraint))
    assert plan["unschedulable"] == []
    [claim] = plan["nodeClaims"]
    assert sorted(claim["pods"]) == ["d/s0", "d/s1", "d/s2"]


def test_a_required_affinity_without_label_selector_is_never_met(tmp_path: Path):
    plan = _plan(tmp_path, _pods("n", 2, "{app: w}", "") + _pods("f", 1, "{app: w}", AFFINITY))
    assert [sorted(c["pods"]) for c in plan["nodeClaims"]] == [["d/n0", "d/n1"]]
    [pending] = plan["unschedulable"]
    assert pending["pod"] == "d/f0"
    assert "labelSelector is not set, so it selects no pod" in pending["reason"]


def test_a_preference_without_label_selector_has_no_effect(tmp_path: Path):
    preferred = (
        "  affinity:\n    podAntiAffinity:\n"
        "      preferredDuringSchedulingIgnoredDuringExecution:\n"
        "        - {weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}\n"
    )
    plan = _plan(tmp_path, _pods("s", 3, "{app: w}", preferred))
    assert [len(c["pods"]) for c in plan["nodeClaims"]] == [3]


@pytest.mark.parametrize(
    ("spec_extra", "field"),
    [
        (
            "  topologySpreadConstraints:\n"
            "    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,"
            " whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [app]}\n",
            "spec.topologySpreadConstraints[0].matchLabelKeys",
        ),
        (
            "  affinity:\n    podAntiAffinity:\n"
            "      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        - {topologyKey: kubernetes.io/hostname, mismatchLabelKeys: [app]}\n",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".mismatchLabelKeys",
        ),
    ],
    ids=["spread-matchLabelKeys", "anti-affinity-mismatchLabelKeys"],
)
def test_label_keys_without_label_selector_are_refused(tmp_path: Path, spec_extra, field):
    _refused(tmp_path, spec_extra, field, "labelSelector is not set")


def test_a_key_in_both_label_key_lists_is_refused(tmp_path: Path):
    term = (
        "  affinity:\n    podAntiAffinity:\n"
        "      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        - topologyKey: kubernetes.io/hostname\n"
        "          labelSelector: {matchLabels: {team: a}}\n"
        "          matchLabelKeys: [app]\n"
        "          mismatchLabelKeys: [app]\n"
    )
    field = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    _refused(tmp_path, term, f"{field}.matchLabelKeys", "exists in both")


def _refused(tmp_path: Path, spec_extra: str, field: str, why: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(POOL + _pods("s", 1, "{app: w}", spec_extra))
    result = runner.invoke(app, ["plan", "-f", str(path)])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert field in message and why in message


def test_mismatch_label_keys_exclude_the_pods_own_value(tmp_path: Path):
    """Hostname anti-affinity against every ``team`` pod but the pod's own team: the two
    ``team: a`` pods share a node, the ``team: b`` pod keeps away from them."""
    anti = (
        "  affinity:\n    podAntiAffinity:\n"
        "      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        - topologyKey: kubernetes.io/hostname\n"
        "          labelSelector: {matchExpressions: [{key: team, operator: Exists}]}\n"
        "          mismatchLabelKeys: [team]\n"
    )
    plan = _plan(tmp_path, _pods("a", 2, "{team: a}", anti) + _pods("b", 1, "{team: b}", anti))
    assert plan["unschedulable"] == []
    assert sorted(sorted(c["pods"]) for c in plan["nodeClaims"]) == [["d/a0", "d/a1"], ["d/b0"]]
