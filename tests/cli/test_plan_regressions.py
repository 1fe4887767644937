"""Regressions from trying to break plan, convert and lint with real cluster dumps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.api import quantity
from joiner.api.manifests import load_text
from joiner.cli.main import app

runner = CliRunner()

POOLS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: aaa}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["5"]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: bbb}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["5"]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: R
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {env: x}}]
  securityGroupSelectorTerms: [{tags: {env: x}}]
"""

NODE = """
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {karpenter.sh/nodepool: aaa, topology.kubernetes.io/zone: us-east-1a,
           kubernetes.io/arch: amd64, kubernetes.io/hostname: n1}
spec: {unschedulable: UNSCHED}
status:
  capacity: {cpu: "2", memory: 8Gi, pods: "29"}
  allocatable: {cpu: 1930m, memory: 6Gi, pods: "29"}
"""


def _plan(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["plan", "-f", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _pod(name: str, extra: str = "", node: str | None = None, spec_extra: str = "") -> str:
    node_line = f"  nodeName: {node}\n" if node else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}{extra}}}
spec:
{node_line}{spec_extra}  containers:
    - {{name: c, resources: {{requests: {{cpu: 500m, memory: 512Mi}}}}}}
"""


def test_daemonset_pod_pinned_by_match_fields_loads_and_is_not_demand(tmp_path):
    ds_pod = _pod(
        "aws-node-x7k2p",
        ", ownerReferences: [{kind: DaemonSet, name: aws-node, controller: true}]",
        spec_extra=(
            "  affinity:\n    nodeAffinity:\n"
            "      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, "
            "values: [n9]}]}]\n"
        ),
    )
    plan = _plan(tmp_path, POOLS + ds_pod)
    assert plan["nodeClaims"] == [] and plan["unschedulable"] == []


def test_nodepool_selector_is_honoured(tmp_path):
    plan = _plan(
        tmp_path, POOLS + _pod("p", spec_extra="  nodeSelector: {karpenter.sh/nodepool: bbb}\n")
    )
    assert [c["nodePool"] for c in plan["nodeClaims"]] == ["bbb"]
    missing = _plan(
        tmp_path, POOLS + _pod("p", spec_extra="  nodeSelector: {karpenter.sh/nodepool: zzz}\n")
    )
    assert missing["nodeClaims"] == [] and len(missing["unschedulable"]) == 1


def test_pods_on_a_cordoned_node_are_not_demand(tmp_path):
    text = POOLS + NODE.replace("UNSCHED", "true") + _pod("running", node="n1")
    plan = _plan(tmp_path, text)
    assert plan["nodeClaims"] == [] and plan["placements"] == []


def test_pods_karpenter_ignores(tmp_path):
    ds = _pod("ds-pending", ", ownerReferences: [{kind: DaemonSet, name: d, controller: true}]")
    mirror = _pod("static", ", ownerReferences: [{kind: Node, name: n1, controller: true}]")
    going = _pod("going", ", deletionTimestamp: '2026-11-29T10:00:00Z'")
    plan = _plan(tmp_path, POOLS + ds + mirror + going)
    assert plan["nodeClaims"] == [] and plan["unschedulable"] == []


def test_suspended_job_adds_no_pods(tmp_path):
    job = """
---
apiVersion: batch/v1
kind: Job
metadata: {name: later}
spec:
  suspend: true
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""
    assert _plan(tmp_path, POOLS + job)["nodeClaims"] == []


def test_ebs_csi_zone_key_means_the_zone(tmp_path):
    pv = """
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {storageClassName: gp3, volumeName: pv-1}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  storageClassName: gp3
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: topology.ebs.csi.aws.com/zone, operator: In, values: [us-east-1c]}
"""
    pod = _pod(
        "db", spec_extra="  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]\n"
    )
    plan = _plan(tmp_path, POOLS + pv + pod)
    (claim,) = plan["nodeClaims"]
    assert claim["launch"]["zone"] == "us-east-1c"


def test_markup_in_names_does_not_crash_the_table(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(POOLS.replace("name: aaa", 'name: "gen[/]eral"') + _pod("p"))
    result = runner.invoke(app, ["plan", "-f", str(path)])
    # Not a DNS-1123 subdomain, so refused as the API server refuses it; the error quotes the
    # name as written (rich markup is not interpreted).
    assert result.exit_code == 2, result.output
    assert "'gen[/]eral' is not a valid NodePool name" in result.output


def test_convert_rejects_unknown_region(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(POOLS)
    result = runner.invoke(app, ["convert", str(path), "--region", "mars"])
    assert result.exit_code == 2 and "--region" in result.output


def test_nodeclaims_in_a_dump_are_read_and_v1beta1_ones_skipped():
    claim = (
        "---\napiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: aaa-x}\n"
        "spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}, "
        "requirements: []}\n"
    )
    m = load_text(POOLS + claim + claim.replace("v1\n", "v1beta1\n", 1), "d.yaml")
    (read,) = m.nodeclaims
    assert read.name == "aaa-x" and not read.launched
    assert any("NodeClaim/aaa-x (karpenter.sh/v1beta1)" in w for w in m.warnings)


@pytest.mark.parametrize(("text", "millicores"), [("100u", 1), ("500n", 1), ("250000u", 250)])
def test_nano_and_micro_quantities(text, millicores):
    assert quantity.parse(text, resource="cpu") == millicores


DISRUPTION = """\
  disruption:
    consolidateAfter: 1m
"""


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        # 720 was read as 720 seconds, where the user meant 720h; the CRD types it a string.
        (
            "      requirements:\n",
            "      expireAfter: 720\n      requirements:\n",
            "spec.template.spec.expireAfter",
            "a bare number has no unit",
        ),
        # '-1m' is a Go duration; "is not a Go duration" misled.
        ("consolidateAfter: 1m", "consolidateAfter: -1m", "consolidateAfter", "is negative"),
    ],
)
def test_karpenter_durations_of_the_wrong_shape_are_named(tmp_path, old, new, field, words):
    path = tmp_path / "m.yaml"
    pools = POOLS.replace(
        "spec:\n  template:",
        DISRUPTION.replace("  disruption", "spec:\n  disruption") + "  template:",
        1,
    )
    assert old in pools
    path.write_text(pools.replace(old, new, 1) + _pod("p"))
    result = runner.invoke(app, ["plan", "-f", str(path)])
    message = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in result.output, message
    assert "NodePool/aaa" in message and field in message and words in message


@pytest.mark.parametrize("command", ["plan", "advise", "lint"])
def test_an_empty_manifest_file_is_said_aloud(tmp_path, command):
    """Regression: an empty file (or one of only comments and ---) gave an empty plan or
    table and no word that nothing was read."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n---\n")
    args = [command, str(empty)] if command == "lint" else [command, "-f", str(empty)]
    result = runner.invoke(app, args)
    # lint: a finding; advise: no NodePool to advise on is an error (said after the warning)
    assert result.exit_code == {"lint": 1, "advise": 2}.get(command, 0), result.output
    assert f"{empty}: holds no objects" in " ".join(result.output.split())


def test_the_one_zone_warning_names_the_capacity_type_that_ties() -> None:
    """On-demand NodeClaims tie across zones because on-demand prices are regional, not
    because of the regional Spot estimate the spot wording names."""
    from typer.testing import CliRunner

    from joiner.cli.main import app

    root = Path(__file__).resolve().parents[2]
    result = CliRunner().invoke(
        app, ["plan", "-f", str(root / "examples" / "nightly-consolidation" / "scenario.yaml")]
    )
    assert result.exit_code == 0, result.output
    assert "on-demand prices are the same in every zone of a region" in result.output
    assert "spot prices here are regional" not in result.output
