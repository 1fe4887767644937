"""A case rendered for both sides.

Joiner's side is a Scenario (``scenario``): one NodePool per case pool with the case's label
(and the pool's labels, taints and annotations), one EC2NodeClass, the workloads as manifests,
the node groups declared in ``spec.clusterAutoscaler.nodeGroups`` (one instance type and one
zone each, on-demand), and the flags. Replica changes between the phases are scheduled
minimums (``spec.schedules``): phase 1 from run time 0, phase 2 from ``PHASE1_S``.

The real Cluster Autoscaler's side is generated from Joiner's resolved groups
(``kwok_templates``): one template Node per group, with the labels Joiner's template node
has (``NodeGroup.template_labels``), the pool's taints and annotations, and the instance
type's capacity and allocatable as Joiner computes them, so both sides pack onto the same
nodes. The kwok provider groups template Nodes by the ``GROUP_ANNOTATION`` annotation.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from ca_casekit import (
    CASE_LABEL,
    Case,
    Obj,
    Workload,
    group_name,
    merged_spec,
    namespace,
    pool_name,
)

GROUP_ANNOTATION = "joiner.dev/node-group"
#: A kubelet's DaemonSet pods are bound before its node is Ready, ahead of other pods;
#: kwok's nodes are Ready the moment the provider makes them. Nodes of a case with
#: DaemonSets are made with this startup taint (Cluster Autoscaler leaves
#: ``startup-taint.cluster-autoscaler.kubernetes.io/`` taints out of its template nodes,
#: ``taints.SanitizeTaints``), which the DaemonSet pods tolerate; the harness lifts it once
#: they are bound (``ca_harness.Cluster.lift_registration``).
REGISTRATION_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/joiner-registering"
#: The kwok provider makes each node as a copy of its template, ``kubernetes.io/hostname``
#: label included, where a kubelet registers its own: every node of a group would be one
#: hostname domain (hostname anti-affinity then never fits and CA scales up without end, as
#: the provider's README warns). This MutatingAdmissionPolicy sets the label to the node's
#: name as the provider creates it, so nodes are made as a kubelet registers them.
HOSTNAME_POLICY: list[Obj] = [
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "kwok-provider-node-hostname"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["nodes"],
                    }
                ]
            },
            "matchConditions": [
                {
                    "name": "made-by-the-kwok-provider",
                    "expression": "has(object.metadata.annotations) && "
                    "'cluster-autoscaler.kwok.nodegroup/name' in object.metadata.annotations",
                }
            ],
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "mutations": [
                {
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {
                        "expression": "Object{metadata: Object.metadata{labels: "
                        '{"kubernetes.io/hostname": object.metadata.name}}}'
                    },
                }
            ],
        },
    },
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "kwok-provider-node-hostname"},
        "spec": {"policyName": "kwok-provider-node-hostname"},
    },
]
MAX_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/max-count"
MIN_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/min-count"
#: Joiner's phases in virtual time: long enough for ASG launches, boots and every
#: scale-down timer of the harness's flags to run out several times over.
PHASE1_S = 600
PHASE2_S = 1200
START = "2025-01-06T00:00:00Z"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")

NODECLASS: Obj = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole-diff",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"diff": "autoscaler"}}],
        "securityGroupSelectorTerms": [{"tags": {"diff": "autoscaler"}}],
    },
}


def workload_ns(case: Case, w: Workload) -> str:
    return w.namespace or namespace(case)


def pod_template(case: Case, w: Workload) -> Obj:
    """The pod every replica of ``w`` is made from."""
    labels = {"app": w.name, CASE_LABEL: case.id, **w.labels}
    base: Obj = {
        "nodeSelector": {CASE_LABEL: case.id},
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": w.cpu, "memory": w.memory}},
            }
        ],
    }
    meta: Obj = {"labels": labels}
    if w.annotations:
        meta["annotations"] = dict(w.annotations)
    return {"metadata": meta, "spec": merged_spec(base, w.spec)}


def _workload(case: Case, w: Workload, replicas: int) -> list[Obj]:
    ns = workload_ns(case, w)
    tpl = pod_template(case, w)
    selector = {"matchLabels": {"app": w.name, CASE_LABEL: case.id}}
    if w.kind == "Pod":
        return [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    **copy.deepcopy(tpl["metadata"]),
                    "name": f"{w.name}-{i}",
                    "namespace": ns,
                },
                "spec": copy.deepcopy(tpl["spec"]),
            }
            for i in range(replicas)
        ]
    meta = {"name": w.name, "namespace": ns, "labels": {CASE_LABEL: case.id}}
    if w.kind == "DaemonSet":
        # Bound while the node is still registering (REGISTRATION_TAINT), as a kubelet's.
        tpl["spec"].setdefault("tolerations", []).append(
            {"key": REGISTRATION_TAINT, "operator": "Exists", "effect": "NoSchedule"}
        )
        spec: Obj = {"selector": selector, "template": tpl}
        return [{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": spec}]
    spec = {"replicas": replicas, "selector": selector, "template": tpl}
    return [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}]


def workloads(case: Case, phase: int) -> list[Obj]:
    """The case's namespace, workloads (replicas of ``phase`` 1 or 2) and PDBs. Bare pods
    exist in phase 1 only as they were made then (nothing re-creates them)."""
    out: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace(case)}}
    ]
    for w in case.workloads:
        if phase == 2 and w.kind == "Pod":
            continue
        replicas = w.replicas if phase == 1 or w.then is None else w.then
        out += _workload(case, w, replicas)
    for p in case.pdbs:
        out.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": p["name"], "namespace": namespace(case)},
                "spec": copy.deepcopy(p["spec"])
                | {
                    "selector": {
                        "matchLabels": {**p["spec"]["selector"]["matchLabels"], CASE_LABEL: case.id}
                    }
                },
            }
        )
    return out


def nodepools(case: Case) -> list[Obj]:
    """One on-demand NodePool per case pool: the pool's labels, taints and annotations."""
    out = []
    for key, pool in sorted(case.pools.items()):
        template: Obj = {
            "metadata": {"labels": {CASE_LABEL: case.id, **dict(pool.labels)}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
                ],
            },
        }
        if pool.annotations:
            template["metadata"]["annotations"] = dict(pool.annotations)
        if pool.taints:
            template["spec"]["taints"] = [
                {"key": k, "value": v, "effect": e} for k, v, e in pool.taints
            ]
        out.append(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": pool_name(case, key)},
                "spec": {"template": template},
            }
        )
    return out


def ca_spec(case: Case) -> Obj:
    """``spec.clusterAutoscaler`` of the case's Scenario."""
    flags = dict(case.flags())
    spec: Obj = {**flags, "asgLaunchDelay": {"min": "1s", "max": "1s"}}
    spec["priorities"] = {
        str(p): [f"{case.id}-{pat}" for pat in pats] for p, pats in case.priorities.items()
    }
    spec["nodeGroups"] = [
        {
            "name": group_name(case, g),
            "nodePool": pool_name(case, g.pool),
            "instanceTypes": [g.instance_type],
            "zones": [g.zone],
            "maxSize": g.max_size,
        }
        for g in case.groups
    ]
    return spec


def _schedules(case: Case, duration_s: int) -> list[Obj]:
    """Each Deployment's replicas per phase as scheduled minimums (base replicas 0)."""
    out: list[Obj] = []
    for w in case.workloads:
        if w.kind != "Deployment":
            continue
        key = f"{workload_ns(case, w)}/{w.name}"
        # The last window outlasts the run, so it never closes inside it.
        end_s = duration_s + 3600
        if w.then is not None:
            phases = [(0, w.replicas, PHASE1_S), (PHASE1_S, w.then, end_s - PHASE1_S)]
        else:
            phases = [(0, w.replicas, end_s)]
        for at_s, replicas, length_s in phases:
            if replicas and length_s > 0:
                out.append(
                    {
                        "workload": key,
                        "cron": f"{at_s // 60} 0 * * *",
                        "minReplicas": replicas,
                        "duration": f"{length_s}s",
                    }
                )
    return out


def scenario(case: Case, directory: Path, *, phases: int) -> Path:
    """Write the case's Scenario (run through phase ``phases``) and its manifests into
    ``directory``; returns the Scenario's path."""
    directory.mkdir(parents=True, exist_ok=True)
    duration_s = PHASE1_S + (PHASE2_S if phases == 2 else 0)
    docs = [*nodepools(case), NODECLASS, *workloads(case, 1)]
    (directory / "manifests.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    deployments = [w for w in case.workloads if w.kind == "Deployment"]
    doc = {
        "apiVersion": "joiner.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": case.id},
        "spec": {
            "region": "us-east-1",
            "duration": f"{duration_s}s",
            "seed": 1,
            "startTime": START,
            "manifests": ["manifests.yaml"],
            "cloud": {
                "subnets": [
                    {"id": f"subnet-{z[-1]}", "zone": z, "tags": {"diff": "autoscaler"}}
                    for z in ZONES
                ],
                "securityGroups": [{"id": "sg-diff", "tags": {"diff": "autoscaler"}}],
            },
            "workloads": [
                {"deployment": f"{workload_ns(case, w)}/{w.name}", "replicas": 0}
                for w in deployments
            ],
            "schedules": _schedules(case, duration_s),
            "compare": ["cluster-autoscaler"],
            "clusterAutoscaler": ca_spec(case),
        },
    }
    path = directory / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _quantity(resource: str, value: int) -> str:
    return f"{value}m" if resource == "cpu" else str(value)


def kwok_template(case: Case, group: Any) -> Obj:
    """The kwok provider's template Node for Joiner's resolved node group ``group``
    (a ``joiner.sim.baseline.groups.NodeGroup``)."""
    name = group.name
    it = group.template
    pool = next(p for k, p in case.pools.items() if pool_name(case, k) == group.spec.nodepool)
    labels = {
        **group.template_labels(),
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    }
    taints = [{"key": k, "value": v, "effect": e} for k, v, e in pool.taints]
    if any(w.kind == "DaemonSet" for w in case.workloads):
        taints.append({"key": REGISTRATION_TAINT, "value": "true", "effect": "NoSchedule"})
    annotations = {
        GROUP_ANNOTATION: name,
        MIN_ANNOTATION: str(group.spec.min_size),
        MAX_ANNOTATION: str(group.spec.max_size),
        **dict(pool.annotations),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"taints": taints},
        "status": {
            "capacity": {r: _quantity(r, v) for r, v in sorted(it.capacity.items())},
            "allocatable": {r: _quantity(r, v) for r, v in sorted(it.allocatable.items())},
            "nodeInfo": {
                "architecture": labels.get("kubernetes.io/arch", "amd64"),
                "operatingSystem": "linux",
                "kubeletVersion": "fake",
            },
        },
    }


def provider_config() -> str:
    """The kwok provider's configuration: templates from a ConfigMap, grouped by
    ``GROUP_ANNOTATION``, without the provider's own taint."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1alpha1",
            "readNodesFrom": "configmap",
            "nodegroups": {"fromNodeAnnotationKey": GROUP_ANNOTATION},
            "nodes": {"skipTaint": True},
            "configmap": {"name": "kwok-provider-templates"},
        }
    )


def priority_configmap(cases: list[Case], namespace: str) -> Obj | None:
    """The priority expander's ConfigMap for a batch (each case's patterns are anchored to
    its own groups, so cases do not rank each other's)."""
    merged: dict[int, list[str]] = {}
    for c in cases:
        for prio, pats in c.priorities.items():
            merged.setdefault(prio, []).extend(f"{c.id}-{p}" for p in pats)
    if not merged:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cluster-autoscaler-priority-expander", "namespace": namespace},
        "data": {"priorities": yaml.safe_dump({k: v for k, v in sorted(merged.items())})},
    }
