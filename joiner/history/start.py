"""The cluster as it was at an import's ``--start``: its Nodes and Pods as ``v1`` objects.

``joiner import`` writes them to ``start.yaml``, which the Scenario lists after
``objects.yaml``, so every simulated policy starts from the running cluster
(``joiner.sim.running.adopt``) rather than from an empty one:

* **Nodes**: the as-run nodes alive at the start (created at or before it, not gone by it)
  of a NodePool the objects hold (``karpenter.sh/nodepool``). Each is written with the
  labels the history gives it (instance type, zone, capacity type, NodePool,
  ``kubernetes.io/hostname``, the region, the architecture and OS of its instance type),
  its NodePool's template labels and taints (a node it launched has them; without them
  the node reads as drifted) and its provider ID, and becomes an adopted NodeClaim of its
  NodePool, sized as the simulation sizes its instance type. Other nodes (an EKS managed
  node group's, a self-managed one, a NodePool the objects lack) are left out (counted):
  the simulation would keep them as static capacity that neither Joiner nor the Cluster
  Autoscaler baseline launches, removes or prices, while the as-run row prices them; left
  out, their pods start pending and every row pays for the capacity that runs them. A
  node whose instance type the packaged catalog does not know is left out too (counted).
* **Pods**: the pods ``kube_pod_info`` shows running at the start (query ``pod_node``,
  asked hourly with ``last_over_time``: a pod with a sample at the range's first
  evaluation and at a later one lived across the start; one seen only at the first had
  ended before it). Each is written from its workload's pod template (labels, annotations
  and spec, so the workload's selector selects it and the workload only creates the
  replicas that are missing; a Job's pods also carry ``job-name``), bound (``spec.nodeName``,
  phase Running) to the node ``kube_pod_info`` names when that node is in the starting
  cluster and the pod still fits its allocatable (cpu, memory, pods; the pods taken by
  name; as the catalog sizes the node), else pending (counted when the node is unknown or
  full: a workload's requests grew since, or the history is not a scheduler's). A pod
  takes its workload's latest requests (the template's, which ``translate`` updates to
  the history's latest pod), not its own older ones. Pods of a CronJob's run in progress are left
  out (counted): the replay's CronJob starts its runs on schedule and would not end them;
  pods without an owner the objects hold (a deleted workload, a bare pod) are left out
  too (counted).

Everything is sorted (nodes by name, pods by namespace and name): the same history gives
the same bytes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from joiner.api import labels as wk
from joiner.api import quantity
from joiner.history.series import HistoryWarnings, QueryRange, Series
from joiner.sim.asrun_files import AsRunNode

#: Workload kinds whose pods start bound, by the ``kube_pod_owner`` owner kind, in the
#: order tried (a ReplicaSet's pods belong to its Deployment when it has one).
_OWNER_KINDS: dict[str, tuple[str, ...]] = {
    "ReplicaSet": ("Deployment", "ReplicaSet"),
    "StatefulSet": ("StatefulSet",),
    "DaemonSet": ("DaemonSet",),
    "Job": ("CronJob", "Job"),
}

#: The kinds whose pod template a starting pod is written from.
_TEMPLATED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "DaemonSet")


@dataclass(frozen=True, slots=True)
class StartNode:
    """One as-run node with what the starting cluster needs beyond the as-run record:
    ``labels`` (Kubernetes label keys, as the history or the dump gives them) and
    ``provider_id`` (``aws:///zone/i-...``, or '')."""

    record: AsRunNode
    labels: Mapping[str, str]
    provider_id: str


def alive_at_start(node: AsRunNode) -> bool:
    """Whether an as-run node ran at the range's start: created at or before it (its
    record starts at 0 s) and not ended there."""
    return node.start_s <= 0.0 and (node.end_s is None or node.end_s > 0.0)


def start_objects(
    nodes: Sequence[StartNode],
    pod_nodes: Sequence[Series],
    pod_owners: Mapping[str, tuple[str, str]],
    documents: Sequence[Mapping[str, Any]],
    rng: QueryRange,
    region: str | None,
    warnings: HistoryWarnings,
) -> tuple[dict[str, Any], ...]:
    """The starting cluster's Nodes then Pods (module docstring).

    ``nodes``: the as-run nodes with their labels and provider IDs; ``pod_nodes``: the
    ``pod_node`` query's series (labels ``namespace``, ``pod``, ``node``); ``pod_owners``:
    pod key (``namespace/name``) -> (``kube_pod_owner`` owner kind, the key of the
    workload that runs it); ``documents``: the objects ``objects.yaml`` holds; ``region``:
    the Scenario's (None: us-east-1). What is left out or assumed is counted in
    ``warnings``.
    """
    pools = {
        str((d.get("metadata") or {}).get("name", "")): _template(d)
        for d in documents
        if d.get("kind") in ("NodePool", "Provisioner")
    }
    node_docs, room = _node_documents(nodes, pools, region or "us-east-1", warnings)
    pod_docs = _pod_documents(pod_nodes, pod_owners, documents, rng, room, warnings)
    return (*node_docs, *pod_docs)


# -- nodes ----------------------------------------------------------------------------


def _template(pool: Mapping[str, Any]) -> tuple[dict[str, str], list[Any]]:
    """The labels and taints a NodePool (or a legacy Provisioner) puts on its nodes
    (``spec.template.metadata.labels``, ``spec.template.spec.taints``), which a node it
    launched carries: without them the node reads as drifted."""
    spec = pool.get("spec") or {}
    if pool.get("kind") == "NodePool":
        template = spec.get("template") or {}
        found_labels = (template.get("metadata") or {}).get("labels")
        taints = (template.get("spec") or {}).get("taints")
    else:
        found_labels, taints = spec.get("labels"), spec.get("taints")
    return (
        {str(k): str(v) for k, v in (found_labels or {}).items()},
        [copy.deepcopy(t) for t in taints or []],
    )


def _node_documents(
    nodes: Sequence[StartNode],
    pools: Mapping[str, tuple[dict[str, str], list[Any]]],
    region: str,
    warnings: HistoryWarnings,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """The Nodes at the start of the NodePools ``pools`` (name -> template labels and
    taints), and each one's allocatable (cpu millicores, memory bytes, pods) as the
    catalog sizes it."""
    from joiner.cloudprovider.catalog import Catalog
    from joiner.cloudprovider.instancetype import build_instance_type

    catalog = Catalog.load()
    known = set(catalog.type_names())
    out: list[dict[str, Any]] = []
    room: dict[str, dict[str, int]] = {}
    for n in sorted(nodes, key=lambda n: n.record.node):
        rec = n.record
        if not alive_at_start(rec):
            continue
        pool = n.labels.get(wk.NODEPOOL, "")
        if pool not in pools:
            warnings.add(
                "static starting node",
                f"{rec.node} ({'NodePool ' + pool if pool else rec.node_pool or 'no group'})",
                "left out of the starting cluster (its pods start pending): outside the "
                "objects' NodePools it would be static capacity no simulated policy prices",
            )
            continue
        if rec.instance_type not in known:
            warnings.add(
                "unsized starting node",
                rec.node,
                f"left out of the starting cluster: instance type {rec.instance_type!r} "
                "is not in the packaged catalog",
            )
            continue
        info = catalog.info(rec.instance_type)
        pool_labels, taints = pools[pool]
        node_labels = {**pool_labels, **{k: v for k, v in n.labels.items() if v}}
        node_labels[wk.INSTANCE_TYPE] = rec.instance_type
        node_labels[wk.HOSTNAME] = rec.node
        node_labels.setdefault(wk.ARCH, info.architecture)
        node_labels.setdefault(wk.OS, "linux")
        if rec.zone:
            node_labels[wk.ZONE] = rec.zone
            node_labels.setdefault(wk.REGION, region)
        if rec.capacity_type:
            node_labels[wk.CAPACITY_TYPE] = rec.capacity_type
        doc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": rec.node, "labels": dict(sorted(node_labels.items()))},
            "spec": {"providerID": n.provider_id} if n.provider_id else {},
        }
        if taints:
            doc["spec"]["taints"] = taints
        it = build_instance_type(catalog, info, region, [])
        room[rec.node] = {k: it.allocatable.get(k, 0) for k in _FITTED}
        out.append(doc)
    return out, room


# -- pods -----------------------------------------------------------------------------


def _pods_at_start(pod_nodes: Sequence[Series], rng: QueryRange) -> dict[str, str]:
    """Pod key -> its node at the start ('' when pending), for the pods with a sample at
    the range's first evaluation and at a later one (module docstring)."""
    first: dict[str, str] = {}
    later: set[str] = set()
    half = rng.step_s / 2
    for s in pod_nodes:
        if not s.times_s:
            continue
        key = f"{s.labels.get('namespace', '')}/{s.labels.get('pod', '')}"
        if s.times_s[0] <= rng.start_s + half:
            # Pending and bound series of one pod: the bound one names its node.
            first[key] = max(first.get(key, ""), s.labels.get("node", ""))
        if s.times_s[-1] > rng.start_s + half:
            later.add(key)
    return {k: v for k, v in first.items() if k in later}


def _templates(documents: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(kind, ``namespace/name``) -> the object, for the kinds whose pods start bound."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for doc in documents:
        kind = str(doc.get("kind", ""))
        if kind not in (*_TEMPLATED_KINDS, "CronJob"):
            continue
        meta = doc.get("metadata") or {}
        out[kind, f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"] = doc
    return out


def _pod_documents(
    pod_nodes: Sequence[Series],
    pod_owners: Mapping[str, tuple[str, str]],
    documents: Sequence[Mapping[str, Any]],
    rng: QueryRange,
    room: Mapping[str, Mapping[str, int]],
    warnings: HistoryWarnings,
) -> list[dict[str, Any]]:
    """The Pods at the start (module docstring): bound while they fit what is left of
    their node's ``room``, else pending (counted)."""
    objects = _templates(documents)
    left = {name: dict(r) for name, r in room.items()}
    out: list[dict[str, Any]] = []
    for key, node in sorted(_pods_at_start(pod_nodes, rng).items()):
        owner_kind, owner_key = pod_owners.get(key, ("", ""))
        kind = next(
            (k for k in _OWNER_KINDS.get(owner_kind, ()) if (k, owner_key) in objects), None
        )
        if kind is None:
            warnings.add(
                "ownerless starting pod",
                key,
                "left out of the starting cluster: no workload in the objects runs it",
            )
            continue
        if kind == "CronJob":
            warnings.add(
                "starting CronJob pod",
                f"{key} ({owner_key})",
                "left out of the starting cluster: the CronJob's runs start on schedule",
            )
            continue
        if node and node not in left:
            warnings.add(
                "unplaced starting pod",
                f"{key} (node {node})",
                "starts pending: its node is not in the starting cluster",
            )
        pod = _pod(key, kind, owner_key, objects[kind, owner_key], node if node in left else "")
        if node in left and not _take(left[node], spec_requests(pod["spec"])):
            warnings.add(
                "crowded-out starting pod",
                f"{key} (node {node})",
                "starts pending: with its workload's requests it does not fit what the pods "
                "before it (by name) left of the node's allocatable",
            )
            del pod["spec"]["nodeName"]
            pod["status"]["phase"] = "Pending"
        out.append(pod)
    return out


#: The resources checked when binding a starting pod.
_FITTED = ("cpu", "memory", "pods")


def _take(left: dict[str, int], requests: Mapping[str, int]) -> bool:
    """Take ``requests`` (and one pod) from ``left`` when they fit; whether they did."""
    want = {**requests, "pods": 1}
    if any(want.get(k, 0) > left.get(k, 0) for k in _FITTED):
        return False
    for k in _FITTED:
        left[k] -= want.get(k, 0)
    return True


def spec_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """A pod spec's effective cpu (millicores) and memory (bytes) requests, as Kubernetes
    sums them (kubernetes/kubernetes staging/src/k8s.io/component-helpers/resource/
    helpers.go, ``PodRequests``): the app containers' sum plus the sidecars' (init
    containers with ``restartPolicy: Always``), or a regular init container plus the
    sidecars started before it, whichever is larger.

    Raises:
        InputError: a request that is not a quantity (the object's own, as copied).
    """
    out: dict[str, int] = {}
    for res in ("cpu", "memory"):
        side = 0
        peak = 0
        for c in spec.get("initContainers") or []:
            value = _request(c, res)
            if c.get("restartPolicy") == "Always":
                side += value
            else:
                peak = max(peak, side + value)
        app = sum(_request(c, res) for c in spec.get("containers") or [])
        out[res] = max(app + side, peak)
    return out


def _request(container: Mapping[str, Any], resource: str) -> int:
    requests = (container.get("resources") or {}).get("requests") or {}
    if resource not in requests:
        return 0
    return quantity.parse(requests[resource], resource=resource)


def _pod(
    key: str, kind: str, owner_key: str, workload: Mapping[str, Any], node: str
) -> dict[str, Any]:
    """A ``v1`` Pod ``key`` of ``workload`` (its template copied), bound to ``node`` (or
    pending when '')."""
    namespace, _, name = key.partition("/")
    owner_name = owner_key.partition("/")[2]
    template = (workload.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    pod_labels = dict(tmeta.get("labels") or {})
    if kind == "Job":
        pod_labels["job-name"] = owner_name
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": pod_labels}
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    meta["ownerReferences"] = [{"kind": kind, "name": owner_name, "controller": True}]
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }
