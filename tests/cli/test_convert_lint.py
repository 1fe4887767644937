"""``joiner convert`` and ``joiner lint`` on the seed and on crafted pools."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from joiner.api.manifests import load_files
from joiner.cli.main import app
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.manifests import EC2NODECLASS

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
runner = CliRunner()


def _convert(*files: Path, fmt: str = "yaml"):
    return runner.invoke(app, ["convert", *map(str, files), "-o", fmt])


def test_convert_seed_to_v1_preserves_behaviour():
    result = _convert(SEED / "provisioner.yaml", SEED / "awsnodetemplate.yaml")
    assert result.exit_code == 0, result.output
    text = result.stdout
    pool, nodeclass = list(yaml.safe_load_all(text))
    assert (pool["apiVersion"], pool["kind"]) == ("karpenter.sh/v1", "NodePool")
    reqs = {r["key"]: r for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert reqs["kubernetes.io/arch"] == {
        "key": "kubernetes.io/arch",
        "operator": "In",
        "values": ["amd64"],
    }
    assert reqs["kubernetes.io/os"]["values"] == ["linux"]
    assert reqs["karpenter.sh/capacity-type"]["values"] == ["spot", "on-demand"]
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "default",
    }
    spec = nodeclass["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-123455"}, {"id": "subnet-123456"}]
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-123456"}, {"id": "sg-123455"}]
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "100Gi"
    assert spec["blockDeviceMappings"][0]["ebs"]["iops"] == 3000
    assert spec["tags"] == {"Name": "my-node"}
    assert "custom node bootstrap" in spec["userData"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2@latest"}]
    assert spec["role"].startswith("PLACEHOLDER")
    assert "spec.role" in nodeclass["metadata"]["annotations"]["joiner.dev/placeholders"]
    warnings = " ".join(result.stderr.split())
    assert "c6g.xlarge" in warnings and "placeholder spec.role" in warnings
    assert "placeholder spec.amiSelectorTerms" in warnings


def test_convert_json_output_loads_back(tmp_path):
    result = _convert(SEED / "provisioner.yaml", SEED / "awsnodetemplate.yaml", fmt="json")
    assert result.exit_code == 0
    path = tmp_path / "out.json"
    path.write_text(result.stdout)
    m = load_files([path])
    assert [p.source.kind for p in m.nodepools] == ["NodePool"]
    assert [n.source.kind for n in m.nodeclasses] == ["EC2NodeClass"]


def test_converted_manifests_launch_the_same_nodes(tmp_path):
    d = tmp_path / "seed"
    shutil.copytree(SEED, d)
    result = _convert(d / "provisioner.yaml", d / "awsnodetemplate.yaml")
    (d / "v1.yaml").write_text(result.stdout)
    text = (d / "scenario.yaml").read_text()
    text = text.replace("    - provisioner.yaml\n    - awsnodetemplate.yaml\n", "    - v1.yaml\n")
    (d / "scenario-v1.yaml").write_text(text)
    before = SimulationRuntime(load_scenario(d / "scenario.yaml")).run().summary
    after = SimulationRuntime(load_scenario(d / "scenario-v1.yaml")).run().summary
    assert after["nodes"] == before["nodes"]
    assert after["cost"] == before["cost"]
    assert after["pods"] == before["pods"]


def test_lint_seed_warns_and_exits_1():
    result = runner.invoke(
        app, ["lint", str(SEED / "provisioner.yaml"), str(SEED / "awsnodetemplate.yaml")]
    )
    assert result.exit_code == 1
    text = " ".join(result.stderr.split())
    assert "'c6g.xlarge' (kubernetes.io/arch=arm64) can never be launched" in text
    assert "add arm64 to kubernetes.io/arch" in text
    assert "only 1 instance type(s) can launch as spot" in text
    assert "Provisioner/my-provisioner: field spec.requirements" in text


CLEAN = (
    """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
---
"""
    + EC2NODECLASS
)


def _lint_text(tmp_path: Path, text: str):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return runner.invoke(app, ["lint", str(path)])


def test_lint_clean_exits_0(tmp_path):
    result = _lint_text(tmp_path, CLEAN)
    assert result.exit_code == 0, result.stderr
    assert "no warnings" in result.stderr


def test_lint_bad_input_exits_2(tmp_path):
    result = _lint_text(tmp_path, CLEAN.replace("operator: In, values: [c, m, r]", "operator: In"))
    assert result.exit_code == 2
    assert "operator In needs at least one value" in " ".join(result.stderr.split())


def test_lint_overlapping_pools_and_small_limit(tmp_path):
    second = CLEAN.split("---")[0].replace("name: general", "name: batch")
    second = second.replace("spec:\n  template:", "spec:\n  limits: {cpu: 500m}\n  template:", 1)
    result = _lint_text(tmp_path, CLEAN + "---" + second)
    text = " ".join(result.stderr.split())
    assert result.exit_code == 1
    assert "NodePool/general: field spec.weight: overlaps NodePool/batch" in text
    assert (
        "NodePool/batch: field spec.limits.cpu: limit cpu=500m is smaller than the smallest node"
        in text
    )


def test_lint_unused_pool(tmp_path):
    tainted = CLEAN.replace(
        "      requirements:",
        "      taints: [{key: gpu, effect: NoSchedule}]\n      requirements:",
        1,
    )
    pod = """
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, resources: {requests: {cpu: 100m}}}]}
"""
    result = _lint_text(tmp_path, tainted + pod)
    text = " ".join(result.stderr.split())
    assert "NodePool/general: field spec.template.spec.taints: none of the 1 pods" in text


def test_lint_scenario_reports_nodeclass_selecting_no_subnet(tmp_path):
    d = tmp_path / "seed"
    shutil.copytree(SEED, d)
    nt = d / "awsnodetemplate.yaml"
    nt.write_text(nt.read_text().replace("aws-ids: subnet-123455,subnet-123456", "env: nowhere"))
    result = runner.invoke(app, ["lint", str(d / "scenario.yaml")])
    text = " ".join(result.stderr.split())
    assert result.exit_code == 1
    assert "AWSNodeTemplate/default: field spec.subnetSelector: selects no subnet" in text


def test_lint_self_defeating_disruption_settings(tmp_path):
    short = CLEAN.replace(
        "      requirements:\n        - {key: karpenter.sh/capacity-type",
        "      expireAfter: 1m\n      requirements:\n        - {key: karpenter.sh/capacity-type",
        1,
    )
    short = short.replace(
        "spec:\n  template:",
        'spec:\n  disruption:\n    consolidateAfter: 0s\n    budgets: [{nodes: "0"}]\n  template:',
        1,
    )
    result = _lint_text(tmp_path, short)
    text = " ".join(result.stderr.split())
    assert result.exit_code == 1
    assert "field spec.template.spec.expireAfter: nodes expire 60s after launch" in text
    assert "field spec.disruption.budgets: a budget without a schedule allows 0 nodes" in text
    scheduled = short.replace('{nodes: "0"}', '{nodes: "0", schedule: "@daily", duration: 1h}')
    scheduled = scheduled.replace("expireAfter: 1m", "expireAfter: 24h")
    assert _lint_text(tmp_path, scheduled).exit_code == 0


def test_lint_of_a_scenario_says_node_repair_tolerations_without_the_gate_do_nothing(tmp_path):
    """The breaker's input: simulate warned, lint said "no warnings"."""
    seed = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
    for name in ("scenario.yaml", "provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml"):
        if (seed / name).exists():
            shutil.copy(seed / name, tmp_path / name)
    text = (tmp_path / "scenario.yaml").read_text()
    settings = "spec:\n  settings: {nodeRepairTolerations: {Ready: 15m}}"
    (tmp_path / "scenario.yaml").write_text(text.replace("spec:", settings, 1))
    result = CliRunner().invoke(app, ["lint", str(tmp_path / "scenario.yaml")])
    assert "nodeRepairTolerations has no effect" in " ".join(result.output.split())
    gated = settings.replace("{nodeRepair", "{featureGates: {nodeRepair: true}, nodeRepair")
    (tmp_path / "scenario.yaml").write_text(text.replace("spec:", gated, 1))
    result = CliRunner().invoke(app, ["lint", str(tmp_path / "scenario.yaml")])
    assert "nodeRepairTolerations" not in result.output


def test_plan_and_disrupt_print_lint_findings(tmp_path):
    """``joiner disrupt`` prints ``joiner lint``'s findings as ``joiner plan`` does."""
    second = CLEAN.split("---")[0].replace("name: general", "name: batch")
    second = second.replace("spec:\n  template:", "spec:\n  limits: {cpu: 500m}\n  template:", 1)
    path = tmp_path / "m.yaml"
    path.write_text(CLEAN + "---" + second)
    finding = "NodePool/batch: field spec.limits.cpu: limit cpu=500m is smaller than the smallest"
    for command in ("plan", "disrupt"):
        result = runner.invoke(app, [command, "-f", str(path)])
        assert result.exit_code == 0, (command, result.output)
        assert finding in " ".join(result.stderr.split()), command


def test_convert_takes_files_with_f_as_lint_does():
    args = [str(SEED / "provisioner.yaml"), str(SEED / "awsnodetemplate.yaml")]
    positional = _convert(*map(Path, args))
    with_f = runner.invoke(app, ["convert", "-f", args[0], "--file", args[1]])
    mixed = runner.invoke(app, ["convert", args[0], "-f", args[1]])
    assert positional.exit_code == with_f.exit_code == mixed.exit_code == 0
    assert with_f.stdout == positional.stdout == mixed.stdout
    none = runner.invoke(app, ["convert"])
    assert none.exit_code == 2
    assert "give manifest files (as arguments or with -f)" in none.stderr
