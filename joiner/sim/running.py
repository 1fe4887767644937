"""Start a simulation from a running cluster: the manifests' Nodes and Pods, read as
``joiner plan`` reads them.

A Node labelled ``karpenter.sh/nodepool`` (or the legacy provisioner-name) whose instance
type, zone and capacity type are known becomes a launched, registered, initialized NodeClaim
of that NodePool, backed by an instance whose id is the last segment of ``spec.providerID``
(so captured EventBridge messages find it). A Pod with ``spec.nodeName`` on such a node is
bound there at t=0; other live Pods start pending. A pod selected by a workload belongs to
it, so the workload only creates the replicas that are missing. Finished pods are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from joiner.api import durations, labels
from joiner.api.manifests import ManifestSet
from joiner.api.manifests.convert import selects
from joiner.api.requirements import Requirements
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.types import CloudProviderError, NodeClassNotReadyError
from joiner.scheduling.volumes import MissingVolumeError, volume_terms
from joiner.sim.workloads import PodFactory
from joiner.state.cluster import ClusterState, Node, NodeClaim


def cluster_state(m: ManifestSet) -> tuple[ClusterState, list[str]]:
    """An empty cluster of the manifests' NodePools, DaemonSets and PDBs, with each pod
    template's volume topology resolved; returns warnings for volumes that cannot be."""
    state = ClusterState()
    state.nodepools = {p.name: p for p in m.nodepools}
    state.daemonsets = {f"{d.namespace}/{d.name}": d.template for d in m.daemonsets}
    state.pdbs = list(m.pdbs)
    warnings: list[str] = []
    for source, template in [
        *((w.source, w.template) for w in m.workloads),
        *((p.source, p.template) for p in m.pods),
    ]:
        try:
            terms = volume_terms(template, m.pvcs, m.pvs, m.storageclasses)
        except MissingVolumeError as exc:
            warnings.append(f"{source.ref} ({source.file}): {exc}; its volume topology is ignored")
            continue
        if terms:
            state.volume_terms[template] = terms
    return state, warnings


def adopt(
    m: ManifestSet,
    state: ClusterState,
    cloud: SimulatedCloudProvider,
    pods: PodFactory,
    workload_keys: Mapping[str, object],
) -> list[str]:
    """Create the running cluster's nodes and pods; returns warnings for what was skipped."""
    warnings: list[str] = []
    adopted: set[str] = set()
    for n in m.nodes:
        where = f"{n.source.ref} ({n.source.file})"
        pool = state.nodepools.get(n.nodepool or "")
        if n.deleting:
            warnings.append(f"{where}: being deleted; not part of the starting cluster")
            continue
        if pool is None:
            warnings.append(
                f"{where}: not managed by a NodePool in the manifests (label "
                "karpenter.sh/nodepool); not part of the starting cluster"
            )
            continue
        node_labels = dict(n.labels)
        type_name = node_labels.get(labels.INSTANCE_TYPE)
        zone = node_labels.get(labels.ZONE)
        capacity_type = node_labels.get(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_ON_DEMAND)
        try:
            types = {t.name: t for t in cloud.get_instance_types(pool.node_class_ref.name)}
        except NodeClassNotReadyError as exc:
            warnings.append(f"{where}: {exc}; not part of the starting cluster")
            continue
        it = types.get(type_name or "")
        if it is None or zone is None:
            warnings.append(
                f"{where}: instance type {type_name!r} in zone {zone!r} is not offered to "
                f"NodePool {pool.name}; not part of the starting cluster"
            )
            continue
        instance_id = (n.provider_id or "").rsplit("/", 1)[-1] or f"i-{n.name}"
        if cloud.instance_by_id(instance_id) is not None:
            warnings.append(
                f"{where}: instance {instance_id} already backs another Node; not part of the "
                "starting cluster"
            )
            continue
        nc = m.nodeclass(pool.node_class_ref.name)
        tags = (
            *(nc.tags if nc is not None else ()),
            ("karpenter.sh/nodepool", pool.name),
            ("karpenter.sh/nodeclaim", n.name),
        )
        try:
            instance = cloud.adopt(it, zone, capacity_type, instance_id, tags=tags)
        except CloudProviderError as exc:
            warnings.append(f"{where}: {exc}; not part of the starting cluster")
            continue
        node_labels.setdefault(labels.HOSTNAME, n.name)
        node_labels.setdefault(labels.NODEPOOL, pool.name)
        node_labels[labels.INITIALIZED] = "true"
        claim = NodeClaim(
            name=n.name,
            nodepool=pool.name,
            node_class=pool.node_class_ref.name,
            requirements=Requirements.from_labels(
                {k: node_labels[k] for k in (labels.INSTANCE_TYPE, labels.ZONE) if k in node_labels}
                | {labels.CAPACITY_TYPE: capacity_type}
            ),
            requests={},
            instance_type_options=(it,),
            created_at_s=0.0,
            instance=instance,
            launched_at_s=0.0,
            registered_at_s=0.0,
            initialized_at_s=0.0,
            node_name=n.name,
        )
        state.nodeclaims[claim.name] = claim
        state.nodes[n.name] = Node(
            name=n.name,
            nodeclaim=claim.name,
            labels=node_labels,
            taints=n.taints,
            capacity=dict(n.capacity) or dict(it.capacity),
            allocatable=dict(n.allocatable) or dict(it.allocatable),
            created_at_s=0.0,
            ready=True,
            do_not_disrupt=dict(n.annotations).get(labels.DO_NOT_DISRUPT) == "true",
            scale_down_disabled=dict(n.annotations).get(labels.CA_SCALE_DOWN_DISABLED) == "true",
        )
        adopted.add(n.name)
    ds_keys = {f"{d.namespace}/{d.name}": d for d in m.daemonsets}
    workloads = [w for w in m.workloads if w.key in workload_keys]
    for p in m.pods:
        if p.terminal or (p.node_name is None and not p.provisionable):
            continue
        owner = next(
            (
                w.key
                for w in workloads
                if w.namespace == p.namespace and selects(w.selector, dict(p.template.labels))
            ),
            None,
        )
        daemon = False
        if owner is None and p.owner and p.owner.startswith("DaemonSet/"):
            key = f"{p.namespace}/{p.owner.split('/', 1)[1]}"
            daemon = key in ds_keys
            owner = key
        pod = pods.create(owner or p.key, p.template, daemon=daemon, name=p.name)
        pod.do_not_disrupt, pod.do_not_disrupt_for_s = durations.do_not_disrupt(
            dict(p.annotations).get(labels.DO_NOT_DISRUPT)
        )
        if p.node_name in adopted:
            pod.node_name = p.node_name
            pod.bound_at_s = 0.0
        elif p.node_name is not None:
            warnings.append(
                f"{p.source.ref} ({p.source.file}): its node {p.node_name!r} is not part of the "
                "starting cluster; it starts pending"
            )
    return warnings
