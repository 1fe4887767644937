"""A cluster read live (``--kubeconfig``) and the same cluster read from its dump (``-f``)
give the same ``plan``, ``disrupt`` and ``advise``.

The state built on the stack is a small production cluster as Karpenter leaves it: an
EC2NodeClass with its resolved subnets and security groups, two NodePools (weights, a
budget, a tainted one), Nodes with Karpenter's labels (one cordoned, one whose kubelet
stopped reporting, one being deleted behind its termination finalizer), their NodeClaims
with status plus one launched whose Node has not registered, a Deployment with its
ReplicaSet and pods (made by kube-controller-manager, bound by kube-scheduler), bare pods
(priorities, pod-deletion-cost, do-not-disrupt), pending pods (one nominated, one with a
zonal volume), a PodDisruptionBudget, PriorityClasses, a DaemonSet, a StatefulSet, a
completed Job and a StorageClass, PersistentVolume and claim.

The stack has no kubectl binary, so the dump is made as ``kubectl get KINDS -A -o yaml``
makes it: one ``v1`` ``List`` of the kinds docs/guides/your-cluster.md names, each item the
API server's JSON with ``apiVersion`` and ``kind`` set and ``metadata.managedFields`` left
out (kubectl hides them unless ``--show-managed-fields``).
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import json
import ssl
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from joinerctl import EC2NodeClassRes, NodeClaimRes, NodePoolRes, joiner, new_name
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Namespace, Node, Pod
from lightkube.types import PatchType

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

POOL_LABEL = "karpenter.sh/nodepool"
ZONE = "topology.kubernetes.io/zone"
#: docs/guides/your-cluster.md "Taking the dump": (API path, apiVersion, kind), in the
#: order kubectl prints them.
DUMP_KINDS = (
    ("/apis/karpenter.sh/v1/nodepools", "karpenter.sh/v1", "NodePool"),
    ("/apis/karpenter.k8s.aws/v1/ec2nodeclasses", "karpenter.k8s.aws/v1", "EC2NodeClass"),
    ("/apis/karpenter.sh/v1/nodeclaims", "karpenter.sh/v1", "NodeClaim"),
    ("/api/v1/nodes", "v1", "Node"),
    ("/api/v1/pods", "v1", "Pod"),
    ("/apis/apps/v1/deployments", "apps/v1", "Deployment"),
    ("/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "apps/v1", "StatefulSet"),
    ("/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet"),
    ("/apis/batch/v1/jobs", "batch/v1", "Job"),
    ("/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget"),
    ("/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass"),
    ("/api/v1/persistentvolumeclaims", "v1", "PersistentVolumeClaim"),
    ("/api/v1/persistentvolumes", "v1", "PersistentVolume"),
    ("/apis/storage.k8s.io/v1/storageclasses", "storage.k8s.io/v1", "StorageClass"),
)


class Api:
    """Raw GETs with the admin kubeconfig: the server's JSON, as kubectl receives it."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.server = cluster["server"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.ctx = ssl.create_default_context(cadata=ca)
        self.token = config["users"][0]["user"]["token"]

    def get(self, path: str) -> dict[str, Any]:
        request = urllib.request.Request(
            self.server + path, headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30, context=self.ctx) as response:
            body: dict[str, Any] = json.load(response)
            return body


def dump(api: Api) -> dict[str, Any]:
    """``kubectl get <DUMP_KINDS> -A -o yaml`` as one List document."""
    items: list[dict[str, Any]] = []
    for path, api_version, kind in DUMP_KINDS:
        for item in api.get(path)["items"]:
            item.get("metadata", {}).pop("managedFields", None)
            items.append({"apiVersion": api_version, "kind": kind, **item})
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def versions(listing: dict[str, Any]) -> dict[str, str]:
    """kind/namespace/name -> resourceVersion of every item of a dump."""
    return {
        f"{i['kind']}/{i['metadata'].get('namespace', '')}/{i['metadata']['name']}": i["metadata"][
            "resourceVersion"
        ]
        for i in listing["items"]
    }


# --- the cluster's state --------------------------------------------------------------------

NODECLASS_NAME = "parity"


def nodeclass() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": NODECLASS_NAME},
        "spec": {
            "role": "KarpenterNodeRole-parity",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "parity"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "parity"}}],
        },
    }


NODECLASS_STATUS = {
    "subnets": [
        {"id": "subnet-0a", "zone": "us-east-1a", "zoneID": "use1-az1"},
        {"id": "subnet-0b", "zone": "us-east-1b", "zoneID": "use1-az2"},
    ],
    "securityGroups": [{"id": "sg-0parity", "name": "parity-nodes"}],
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 1,
        }
    ],
}

BATCH_TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
BATCH_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "batch"}


def nodepool(name: str, weight: int, requirements: list[dict[str, Any]], **extra: Any) -> dict:
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "parity"},
        "requirements": requirements,
        "expireAfter": "720h",
    }
    if "taints" in extra:
        template_spec["taints"] = extra.pop("taints")
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "weight": weight,
            "template": {"metadata": {"labels": {"team": name}}, "spec": template_spec},
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
                **extra,
            },
        },
    }


def nodepools(general: str, batch: str) -> list[dict[str, Any]]:
    return [
        nodepool(
            general,
            10,
            [
                {
                    "key": "karpenter.sh/capacity-type",
                    "operator": "In",
                    "values": ["spot", "on-demand"],
                },
                {
                    "key": "karpenter.k8s.aws/instance-family",
                    "operator": "In",
                    "values": ["m5", "c6a"],
                },
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ],
            budgets=[{"nodes": "50%"}],
        ),
        nodepool(
            batch,
            5,
            [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c6a"]},
            ],
            taints=[BATCH_TAINT],
            budgets=[{"nodes": "1"}],
        ),
    ]


#: name suffix -> (pool key, instance type, zone, capacity type, cpu, memory)
NODES = {
    "a": ("general", "m5.xlarge", "us-east-1a", "on-demand", "4", "16Gi"),
    "b": ("general", "m5.large", "us-east-1b", "spot", "2", "8Gi"),
    "c": ("batch", "c6a.xlarge", "us-east-1a", "spot", "4", "8Gi"),
    "d": ("general", "m5.large", "us-east-1b", "on-demand", "2", "8Gi"),
}


def node(
    name: str, pool: str, itype: str, zone: str, ct: str, cpu: str, mem: str, *, kwok: bool
) -> dict:
    instance = "i-0" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"} if kwok else {},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": itype,
                ZONE: zone,
                "topology.kubernetes.io/region": "us-east-1",
                "karpenter.sh/capacity-type": ct,
                POOL_LABEL: pool,
                "karpenter.sh/initialized": "true",
                "karpenter.sh/registered": "true",
                "karpenter.k8s.aws/instance-family": itype.split(".")[0],
                "team": pool,
            },
        },
        "spec": {"providerID": f"aws:///{zone}/{instance}"},
        "status": {
            "capacity": {"cpu": cpu, "memory": mem, "pods": "58"},
            "allocatable": {"cpu": f"{int(cpu) * 1000 - 100}m", "memory": mem, "pods": "58"},
        },
    }


def nodeclaim(node_doc: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    labels = node_doc["metadata"]["labels"]
    pool = labels[POOL_LABEL]
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "parity"},
        "requirements": [
            {"key": POOL_LABEL, "operator": "In", "values": [pool]},
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": [labels["node.kubernetes.io/instance-type"]],
            },
        ],
        "expireAfter": "720h",
    }
    if node_doc["spec"].get("taints"):
        spec["taints"] = [t for t in node_doc["spec"]["taints"] if t["key"] == "dedicated"]
    doc = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {k: v for k, v in labels.items() if k != "kubernetes.io/hostname"},
            "finalizers": ["karpenter.sh/termination"],
        },
        "spec": spec,
    }
    conditions = [
        {
            "type": t,
            "status": "True",
            "reason": t,
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        for t in ("Launched", "Registered", "Initialized", "Ready")
    ]
    status = {
        "providerID": node_doc["spec"]["providerID"],
        "nodeName": node_doc["metadata"]["name"],
        "imageID": "ami-0parity",
        "capacity": node_doc["status"]["capacity"],
        "allocatable": node_doc["status"]["allocatable"],
        "conditions": conditions,
    }
    return doc, status


def pod(
    name: str,
    ns: str,
    cpu: str,
    *,
    node_name: str | None = None,
    selector: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "registry.invalid/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}},
            }
        ],
        "terminationGracePeriodSeconds": 0,
        **spec,
    }
    if node_name:
        body["nodeName"] = node_name
    if selector:
        body["nodeSelector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"app": name},
            "annotations": annotations or {},
        },
        "spec": body,
    }


class State:
    """The names of one test's objects (fresh per run: the session's stack is shared)."""

    def __init__(self) -> None:
        tag = new_name()
        self.ns = tag
        self.general = f"{tag}-general"
        self.batch = f"{tag}-batch"
        self.pools = {"general": self.general, "batch": self.batch}
        self.nodes = {k: f"{tag}-{k}" for k in NODES}


def build(client: Client, s: State) -> None:
    """Create the cluster described in the module docstring."""
    create = client.create
    create(from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.ns}}))
    # The kubelet-less Node first: the node lifecycle controller marks it Unknown one grace
    # period after it first sees it, which the test waits for.
    for key, (pool, itype, zone, ct, cpu, mem) in NODES.items():
        doc = node(s.nodes[key], s.pools[pool], itype, zone, ct, cpu, mem, kwok=key != "d")
        if key == "b":
            doc["spec"]["unschedulable"] = True
        if key == "d":
            # A kubelet that registered and reported not ready once, then went silent. The
            # Ready condition is there from the start: without one, the node lifecycle
            # controller drops the not-ready taint and kube-scheduler may bind pods here.
            not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
            doc["spec"]["taints"] = [not_ready]
            doc["status"]["conditions"] = [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "KubeletNotReady",
                    "message": "container runtime network not ready",
                    "lastHeartbeatTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        if key == "c":
            doc["spec"]["taints"] = [
                BATCH_TAINT,
                {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
            ]
            doc["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        create(from_dict(doc))
        claim, status = nodeclaim(doc, f"{s.nodes[key]}-claim")
        create(NodeClaimRes.from_dict(claim))
        client.patch(
            NodeClaimRes.Status,
            claim["metadata"]["name"],
            {"status": status},
            patch_type=PatchType.MERGE,
        )
    client.delete(Node, s.nodes["c"])  # held by its finalizer: being deleted
    # A NodeClaim launched whose Node has not registered yet.
    inflight, status = nodeclaim(
        node(f"{s.ns}-e", s.batch, "c6a.xlarge", "us-east-1b", "spot", "4", "8Gi", kwok=True),
        f"{s.ns}-inflight",
    )
    status.pop("nodeName")
    status["conditions"] = status["conditions"][:1]
    inflight["metadata"]["labels"].pop("karpenter.sh/initialized")
    inflight["metadata"]["labels"].pop("karpenter.sh/registered")
    create(NodeClaimRes.from_dict(inflight))
    client.patch(
        NodeClaimRes.Status,
        inflight["metadata"]["name"],
        {"status": status},
        patch_type=PatchType.MERGE,
    )
    client.apply(EC2NodeClassRes.from_dict(nodeclass()), force=True)
    client.patch(
        EC2NodeClassRes.Status,
        NODECLASS_NAME,
        {"status": NODECLASS_STATUS},
        patch_type=PatchType.MERGE,
    )
    for doc in nodepools(s.general, s.batch):
        client.apply(NodePoolRes.from_dict(doc), force=True)
    build_workloads(client, s)


def build_workloads(client: Client, s: State) -> None:
    """PriorityClasses, the Deployment, DaemonSet, PDB, bare and pending pods, volumes."""
    ns, create = s.ns, client.create
    for name, value, policy in (
        (f"{ns}-high", 1000, "PreemptLowerPriority"),
        (f"{ns}-urgent", 2000, "Never"),
    ):
        create(
            from_dict(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                    "preemptionPolicy": policy,
                }
            )
        )
    general = {POOL_LABEL: s.general}
    template = pod("web", ns, "500m", selector=general, priorityClassName=f"{ns}-high")
    create(
        from_dict(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {
                    "replicas": 4,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]},
                },
            }
        )
    )
    create(
        from_dict(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "agent", "namespace": ns},
                "spec": {
                    "selector": {"matchLabels": {"app": "agent"}},
                    "template": {
                        "metadata": {"labels": {"app": "agent"}},
                        "spec": {
                            **pod("agent", ns, "100m")["spec"],
                            "nodeSelector": {"team": s.general},
                        },
                    },
                },
            }
        )
    )
    create(
        from_dict(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}},
            }
        )
    )
    bare = [
        pod(
            "cache",
            ns,
            "250m",
            node_name=s.nodes["a"],
            annotations={"controller.kubernetes.io/pod-deletion-cost": "100"},
        ),
        pod(
            "pinned",
            ns,
            "250m",
            node_name=s.nodes["a"],
            annotations={"karpenter.sh/do-not-disrupt": "true"},
        ),
        pod(
            "batch-job",
            ns,
            "1",
            node_name=s.nodes["c"],
            tolerations=[BATCH_TOLERATION],
            priorityClassName=f"{ns}-high",
            annotations={"controller.kubernetes.io/pod-deletion-cost": "-5"},
        ),
        pod(
            "crunch",
            ns,
            "3",
            selector={POOL_LABEL: s.batch},
            tolerations=[BATCH_TOLERATION],
        ),
        # More than node a has free even before the web pods exist (3,900m allocatable less
        # 600m of bare and daemon pods): created in the same breath as the Deployment, a
        # smaller one could be bound first (it has the higher priority) and leave the web
        # pods pending.
        pod("urgent", ns, "3500m", selector=general, priorityClassName=f"{ns}-urgent"),
    ]
    for doc in bare:
        create(from_dict(doc))
    build_volumes(client, s)
    build_controllers(client, s)


def build_controllers(client: Client, s: State) -> None:
    """A StatefulSet of one replica and a Job that has run to completion (kwok finishes
    Job pods), both on the general pool."""
    spec = pod("x", s.ns, "100m", selector={POOL_LABEL: s.general})["spec"]
    for kind, name, extra in (
        ("StatefulSet", "store", {"serviceName": "store", "replicas": 1}),
        ("Job", "migrate", {"backoffLimit": 0}),
    ):
        template_spec = {**spec, "restartPolicy": "Never"} if kind == "Job" else spec
        body: dict[str, Any] = {
            **extra,
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
        }
        if kind == "StatefulSet":
            body["selector"] = {"matchLabels": {"app": name}}
        api_version = "apps/v1" if kind == "StatefulSet" else "batch/v1"
        client.create(
            from_dict(
                {
                    "apiVersion": api_version,
                    "kind": kind,
                    "metadata": {"name": name, "namespace": s.ns},
                    "spec": body,
                }
            )
        )


def build_volumes(client: Client, s: State) -> None:
    """A WaitForFirstConsumer StorageClass, a PersistentVolume in us-east-1b bound to a
    claim, and a pending pod using the claim."""
    ns = s.ns
    sc = f"{ns}-zonal"
    client.create(
        from_dict(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": sc},
                "provisioner": "ebs.csi.aws.com",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
    )
    client.create(
        from_dict(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"{ns}-data"},
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": sc,
                    "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0parity"},
                    "claimRef": {"namespace": ns, "name": "data"},
                    "nodeAffinity": {
                        "required": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": ZONE, "operator": "In", "values": ["us-east-1b"]}
                                    ]
                                }
                            ]
                        }
                    },
                },
            }
        )
    )
    client.create(
        from_dict(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": ns},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": sc,
                    "volumeName": f"{ns}-data",
                    "resources": {"requests": {"storage": "10Gi"}},
                },
            }
        )
    )
    db = pod("db", ns, "1", selector={POOL_LABEL: s.general})
    db["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    client.create(from_dict(db))


def unsettled(client: Client, s: State, *, nominated: bool) -> str | None:
    """What the controllers have not done yet, None when done: the Deployment's 4 pods and
    the StatefulSet's pod run, the Job completed, the DaemonSet's pods are ready, the
    pending pods were found unschedulable (the nominated one keeps its nomination), and the
    kubelet-less Node is Unknown with its unreachable taints (and no others)."""
    pods = {p.metadata.name: p for p in client.list(Pod, namespace=s.ns)}
    web = [p for n, p in pods.items() if n.startswith("web-")]
    if len(web) != 4 or not all(p.status.phase == "Running" for p in web):
        return f"web pods: {[(p.metadata.name, p.spec.nodeName, p.status.phase) for p in web]}"
    if "store-0" not in pods or pods["store-0"].status.phase != "Running":
        return "StatefulSet pod store-0 not running"
    job = client.get(Job, "migrate", namespace=s.ns).status
    if not job or job.succeeded != 1 or not job.completionTime:
        return f"Job: {job}"
    ds = client.get(DaemonSet, "agent", namespace=s.ns).status
    # The daemon pod bound to the kubelet-less Node stays Pending (misscheduled once the
    # Node is tainted unreachable); the others run.
    if not ds or not ds.desiredNumberScheduled or ds.numberReady != ds.desiredNumberScheduled:
        return f"DaemonSet: {ds}"
    waiting = [n for n in ("crunch", "urgent", "db") if not _unschedulable(pods[n])]
    if waiting:
        return f"not yet unschedulable: {waiting}"
    if nominated and pods["urgent"].status.nominatedNodeName != s.nodes["a"]:
        return f"urgent nominated to {pods['urgent'].status.nominatedNodeName}"
    d = client.get(Node, s.nodes["d"])
    ready = next(c for c in d.status.conditions or [] if c.type == "Ready")
    taints = {(t.key, t.effect) for t in d.spec.taints or []}
    unreachable = {("node.kubernetes.io/unreachable", e) for e in ("NoSchedule", "NoExecute")}
    if ready.status != "Unknown" or taints != unreachable:
        return f"node d: Ready {ready.status}, taints {sorted(taints)}"
    return None


def settle(client: Client, s: State, *, nominated: bool, timeout_s: float = 60.0) -> None:
    """Wait for ``unsettled`` to be None.

    Raises:
        AssertionError: not within ``timeout_s``; says what was still missing.
    """
    deadline = time.monotonic() + timeout_s
    while (missing := unsettled(client, s, nominated=nominated)) is not None:
        assert time.monotonic() < deadline, f"the cluster did not settle: {missing}"
        time.sleep(0.5)


def quiet_dump(api: Api, timeout_s: float = 30.0) -> dict[str, Any]:
    """A dump taken when no object has changed for a second (node lifecycle updates may
    trail the conditions ``unsettled`` checks).

    Raises:
        AssertionError: objects kept changing for ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    listing = dump(api)
    while True:
        time.sleep(1.0)
        again = dump(api)
        if versions(again) == versions(listing):
            return again
        assert time.monotonic() < deadline, "the cluster's objects kept changing"
        listing = again


def _unschedulable(p: Pod) -> bool:
    return any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])


def nominate(client: Client, s: State) -> None:
    """Set the urgent pod's ``status.nominatedNodeName`` (kube-scheduler keeps it: the pod's
    PriorityClass does not preempt, so a failed attempt does not clear it)."""
    client.patch(
        Pod.Status,
        "urgent",
        {"status": {"nominatedNodeName": s.nodes["a"]}},
        namespace=s.ns,
        patch_type=PatchType.MERGE,
    )


def cleanup(client: Client, s: State) -> None:
    """Delete the test's objects; Nodes and NodeClaims lose their finalizers first (no
    Karpenter runs to release them)."""
    release = {"metadata": {"finalizers": None}}
    claims = [*(f"{n}-claim" for n in s.nodes.values()), f"{s.ns}-inflight"]
    for res, names in ((NodeClaimRes, claims), (Node, list(s.nodes.values()))):
        for name in names:
            _quiet(client.patch, res, name, release, patch_type=PatchType.MERGE)
            _quiet(client.delete, res, name)
    for pool in s.pools.values():
        _quiet(client.delete, NodePoolRes, pool)
    _quiet(client.delete, Namespace, s.ns)


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except ApiError as exc:
        if exc.status.code != 404:
            raise


def run_json(*args: str, source: str) -> Any:
    """``joiner ARGS -o json``, parsed, with ``source`` replaced by ``<source>``: messages
    name the input they were read from (the dump's path, or ``kube:KUBECONFIG`` when read
    live), the only part of an answer that names how the cluster was read."""
    proc = joiner(*args, "-o", "json", check=False)
    assert proc.returncode == 0, f"joiner {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}"
    return json.loads(proc.stdout.replace(source, "<source>"))


def test_live_and_dump_readings_agree(admin: Client, kubeconfig: Path, tmp_path: Path) -> None:
    """The JSON of plan, disrupt and advise is the same read live and read from the dump;
    only the name of the source in messages differs (``run_json``)."""
    s = State()
    try:
        build(admin, s)
        # Nominated last: kube-scheduler keeps a nominated pod's room on its node for pods
        # of lower priority, which would leave a web pod pending.
        settle(admin, s, nominated=False)
        nominate(admin, s)
        settle(admin, s, nominated=True)
        api = Api(kubeconfig)
        listing = quiet_dump(api)
        dump_file = tmp_path / "dump.yaml"
        dump_file.write_text(yaml.safe_dump(listing, sort_keys=False))
        at = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
        commands = {
            "plan": ("plan", "--region", "us-east-1"),
            "disrupt": ("disrupt", "--region", "us-east-1", "--at", at),
            "advise": ("advise", "--region", "us-east-1"),
        }
        live = {
            k: run_json(*c, "--kubeconfig", str(kubeconfig), source=f"kube:{kubeconfig}")
            for k, c in commands.items()
        }
        after = dump(api)
        from_file = {
            k: run_json(*c, "-f", str(dump_file), source=str(dump_file))
            for k, c in commands.items()
        }
    finally:
        cleanup(admin, s)
    for k in commands:  # kept with the dump, for a failure's post-mortem
        (tmp_path / f"{k}.live.json").write_text(json.dumps(live[k], indent=1))
        (tmp_path / f"{k}.dump.json").write_text(json.dumps(from_file[k], indent=1))
    # The comparison is fair only if the cluster held still while it was read live.
    assert versions(after) == versions(listing)
    for k in commands:
        assert live[k] == from_file[k], f"joiner {k}: live (-) and dump (+) differ:\n" + "".join(
            difflib.unified_diff(_lines(live[k]), _lines(from_file[k]), n=2)
        )
    # The state is read, not skipped: the in-flight NodeClaim holds the batch pod, the
    # nominated pod is not provisioned for, the zonal claim's pod gets a node in its zone.
    plan = live["plan"]
    crunch = {"pod": f"{s.ns}/crunch", "node": f"{s.ns}-inflight", "boundBy": "karpenter"}
    assert {**crunch, "onNodeClaim": False, "afterLaunch": False} in plan["placements"]
    assert plan["nominated"] == [{"pod": f"{s.ns}/urgent", "node": s.nodes["a"]}]
    assert [(c["pods"], c["launch"]["zone"]) for c in plan["nodeClaims"]] == [
        ([f"{s.ns}/db"], "us-east-1b")
    ]


def _lines(doc: Any) -> list[str]:
    return json.dumps(doc, indent=1, sort_keys=True).splitlines(keepends=True)
