"""Issue 19, the class: every field Joiner accepts in a pod spec, a container and a
NodePool either has an effect or draws a "not modelled" warning.

The fields come from the manifest models themselves (a walk over ``PodSpec``, ``Container``
and the NodePool spec's models), so a field added there without a mutation here fails the
test. Each mutation is applied to a small example, and one of these must differ from the
unmutated run:

* ``plan``: ``joiner plan -o json`` (NodeClaims, placements, unschedulable pods);
* ``model``: the loaded objects the controllers act on (for fields that matter after
  scheduling: drains, drift, consolidation, expiry), when the plan cannot show them;
* ``warn``: a warning naming the field as not modelled.

Fields with no effect on where or whether a pod runs are listed in ``SILENT`` and must stay
silent (no warning).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from joiner.api.manifests import load_text
from joiner.api.manifests import models as m
from joiner.cli.main import app

runner = CliRunner()

NODECLASSES = [
    {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        },
    }
    for name in ("default", "other")
]

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "general"},
    "spec": {
        "template": {
            "metadata": {},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {
                        "key": "karpenter.k8s.aws/instance-category",
                        "operator": "In",
                        "values": ["c", "m"],
                    }
                ],
            },
        },
    },
}

CONTAINER: dict[str, Any] = {
    "name": "app",
    "image": "nginx",
    "ports": [{"containerPort": 8080}],
    "lifecycle": {"preStop": {"sleep": {"seconds": 20}}},
    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
}

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [CONTAINER]},
        },
    },
}

ZONE_B = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "topology.kubernetes.io/zone",
                            "operator": "In",
                            "values": ["us-east-1b"],
                        }
                    ]
                }
            ]
        }
    }
}

#: PodSpec field -> (value, how its effect shows).
POD: dict[str, tuple[Any, str]] = {
    # A Pod's own nodeName binds it (tests/cli/test_plan.py); in a template it is warned.
    "nodeName": ("ip-10-0-0-1", "warn"),
    "containers": ([CONTAINER, {**CONTAINER, "name": "big", "ports": []}], "plan"),
    "topologySpreadConstraints": (
        [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
        "plan",
    ),
    "volumes": ([{"name": "scratch", "emptyDir": {}}], "model"),
    "initContainers": ([{"name": "init", "resources": {"requests": {"cpu": "7"}}}], "plan"),
    "nodeSelector": ({"karpenter.k8s.aws/instance-family": "m5"}, "plan"),
    "affinity": (ZONE_B, "plan"),
    "tolerations": ([{"operator": "Exists"}], "model"),
    "overhead": ({"cpu": "3"}, "plan"),
    "activeDeadlineSeconds": (60, "warn"),
    "hostNetwork": (True, "plan"),
    "os": ({"name": "linux"}, "warn"),
    # Priority and preemption are modelled (api.manifests.priority, sim.preemption); set
    # against what admission computes (here: no class, 0 and PreemptLowerPriority), each is
    # rejected as Priority admission rejects the pods.
    "preemptionPolicy": ("Never", "error"),
    "priority": (1000, "error"),
    "priorityClassName": ("system-cluster-critical", "model"),
    "resourceClaims": ([{"name": "gpu"}], "warn"),
    "resources": ({"requests": {"cpu": "1"}}, "warn"),
    "runtimeClassName": ("kata", "warn"),
    "schedulerName": ("my-scheduler", "warn"),
    "schedulingGates": ([{"name": "wait"}], "warn"),
    "terminationGracePeriodSeconds": (5, "model"),
}

#: Container field -> (value, how its effect shows).
CONTAINER_FIELDS: dict[str, tuple[Any, str]] = {
    "resources": ({"requests": {"cpu": "3", "memory": "1Gi"}}, "plan"),
    "ports": ([{"containerPort": 8080, "hostPort": 80}], "plan"),
    "lifecycle": ({"preStop": {"sleep": {"seconds": 5}}}, "model"),
    # On an init container, restartPolicy: Always makes it a sidecar (tested separately).
    "restartPolicy": (None, "sidecar"),
}

#: Fields with no effect on scheduling, drains or disruption: silent by design.
SILENT = {
    "pod": {
        "automountServiceAccountToken": False,
        "dnsConfig": {"nameservers": ["1.1.1.1"]},
        "dnsPolicy": "None",
        "enableServiceLinks": False,
        "ephemeralContainers": [],
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}],
        "hostIPC": True,
        "hostPID": True,
        "hostUsers": False,
        "hostname": "web",
        "hostnameOverride": "web",
        "imagePullSecrets": [{"name": "regcred"}],
        "readinessGates": [{"conditionType": "x"}],
        "restartPolicy": "Always",
        "securityContext": {"runAsUser": 1000},
        "serviceAccount": "web",
        "serviceAccountName": "web",
        "setHostnameAsFQDN": True,
        "shareProcessNamespace": True,
        "subdomain": "web",
    },
    "container": {
        "name": "renamed",
        "args": ["--x"],
        "command": ["/bin/app"],
        "env": [{"name": "A", "value": "1"}],
        "envFrom": [{"configMapRef": {"name": "c"}}],
        "image": "nginx:2",
        "imagePullPolicy": "Always",
        "livenessProbe": {"tcpSocket": {"port": 8080}},
        "readinessProbe": {"tcpSocket": {"port": 8080}},
        "startupProbe": {"tcpSocket": {"port": 8080}},
        "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
        "securityContext": {"readOnlyRootFilesystem": True},
        "stdin": True,
        "stdinOnce": True,
        "terminationMessagePath": "/x",
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "tty": True,
        "volumeDevices": [],
        "volumeMounts": [],
        "workingDir": "/app",
        "restartPolicyRules": [],
    },
}

#: NodePool field path (dotted, under spec) -> (value, how its effect shows).
NODEPOOL_FIELDS: dict[str, tuple[Any, str]] = {
    "template.metadata.labels": ({"team": "a"}, "plan"),
    "template.metadata.annotations": ({"team": "a"}, "model"),
    "template.spec.requirements": (
        [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
        "plan",
    ),
    "template.spec.taints": ([{"key": "dedicated", "effect": "NoSchedule"}], "plan"),
    "template.spec.startupTaints": ([{"key": "cni", "effect": "NoSchedule"}], "model"),
    "template.spec.nodeClassRef": (
        {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "other"},
        "model",
    ),
    "template.spec.expireAfter": ("1h", "model"),
    "template.spec.terminationGracePeriod": ("1h", "model"),
    "disruption.consolidationPolicy": ("WhenEmpty", "model"),
    "disruption.consolidateAfter": ("5m", "model"),
    "disruption.budgets": ([{"nodes": "0"}], "model"),
    "limits": ({"cpu": "1"}, "plan"),
    "weight": (10, "model"),
    "replicas": (3, "warn"),
}


def _fields(model: type[m.Model]) -> set[str]:
    return set(model.model_fields)


def _nodepool_fields() -> set[str]:
    out = {f"{k}" for k in _fields(m.NodePoolSpec) - {"template", "disruption"}}
    out |= {f"disruption.{k}" for k in _fields(m.Disruption)}
    out |= {f"template.metadata.{k}" for k in _fields(m.TemplateMetadata)}
    out |= {f"template.spec.{k}" for k in _fields(m.NodeClaimTemplateSpec)}
    return out


def test_every_field_has_a_mutation_or_is_declared_silent():
    """The walk: a new field in the models needs an entry here (effect, warning or silence)."""
    assert _fields(m.PodSpec) == set(POD) | set(SILENT["pod"])
    assert _fields(m.Container) == set(CONTAINER_FIELDS) | set(SILENT["container"])
    assert _nodepool_fields() == set(NODEPOOL_FIELDS)


def _observe(tmp_path: Path, docs: list[dict[str, Any]]) -> dict[str, Any]:
    text = yaml.safe_dump_all(docs, sort_keys=True)
    path = tmp_path / "m.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["plan", "-f", str(path), "-o", "json"])
    if result.exit_code == 2:
        return {"error": result.output}
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    loaded = load_text(text, "m.yaml")
    return {
        "plan": {k: plan[k] for k in ("nodeClaims", "placements", "unschedulable")},
        "model": repr((loaded.nodepools, loaded.workloads)),
        "warnings": [w for w in plan["warnings"] if "not modelled" in w],
    }


def _base() -> list[dict[str, Any]]:
    return [*copy.deepcopy(NODECLASSES), copy.deepcopy(NODEPOOL), copy.deepcopy(DEPLOYMENT)]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    return _observe(tmp_path_factory.mktemp("base"), _base())


def _check(baseline: dict[str, Any], got: dict[str, Any], how: str, field: str) -> None:
    if how == "warn":
        assert any(field.rsplit(".", 1)[-1] in w for w in got["warnings"]), got["warnings"]
    elif how == "error":
        assert f"field {field}:" in got.get("error", ""), got
    else:
        assert got[how] != baseline[how], f"{field}: no effect on the {how}"
        assert got["warnings"] == baseline["warnings"]


@pytest.mark.parametrize("field", sorted(POD))
def test_pod_field_has_an_effect_or_warns(tmp_path, baseline, field):
    value, how = POD[field]
    docs = _base()
    docs[-1]["spec"]["template"]["spec"][field] = value
    _check(baseline, _observe(tmp_path, docs), how, f"spec.template.spec.{field}")


@pytest.mark.parametrize(
    "field", sorted(f for f, (_, h) in CONTAINER_FIELDS.items() if h != "sidecar")
)
def test_container_field_has_an_effect_or_warns(tmp_path, baseline, field):
    value, how = CONTAINER_FIELDS[field]
    docs = _base()
    docs[-1]["spec"]["template"]["spec"]["containers"][0][field] = value
    _check(baseline, _observe(tmp_path, docs), how, field)


def test_init_container_restart_policy_makes_a_sidecar(tmp_path):
    init = {"name": "proxy", "resources": {"requests": {"cpu": "3"}}}
    docs = _base()
    docs[-1]["spec"]["template"]["spec"]["initContainers"] = [init]
    (tmp_path / "a").mkdir()
    plain = _observe(tmp_path / "a", docs)
    docs[-1]["spec"]["template"]["spec"]["initContainers"] = [{**init, "restartPolicy": "Always"}]
    (tmp_path / "b").mkdir()
    assert _observe(tmp_path / "b", docs)["plan"] != plain["plan"]


@pytest.mark.parametrize("field", sorted(NODEPOOL_FIELDS))
def test_nodepool_field_has_an_effect_or_warns(tmp_path, baseline, field):
    value, how = NODEPOOL_FIELDS[field]
    docs = _base()
    target = docs[2]["spec"]
    *parents, leaf = field.split(".")
    for p in parents:
        # The CRD requires consolidateAfter once disruption is given (its default is 0s).
        target = target.setdefault(p, {"consolidateAfter": "0s"} if p == "disruption" else {})
    if leaf == "requirements":
        value = target[leaf] + value
    target[leaf] = value
    _check(baseline, _observe(tmp_path, docs), how, f"spec.{field}")


@pytest.mark.parametrize(("kind", "field"), [(k, f) for k in SILENT for f in sorted(SILENT[k])])
def test_fields_without_scheduling_effect_stay_silent(tmp_path, baseline, kind, field):
    docs = _base()
    spec = docs[-1]["spec"]["template"]["spec"]
    if kind == "pod":
        spec[field] = SILENT[kind][field]
    else:
        spec["containers"][0][field] = SILENT[kind][field]
    got = _observe(tmp_path, docs)
    assert got["warnings"] == baseline["warnings"]
    assert got["plan"] == baseline["plan"]
