"""Start a simulation from a running cluster: the manifests' Nodes and Pods, read as
``joiner plan`` reads them.

A Node labelled ``karpenter.sh/nodepool`` (or the legacy provisioner-name) whose instance
type, zone and capacity type are known becomes a launched, registered NodeClaim of that
NodePool, initialized unless the dump holds its NodeClaim and the Node lacks
``karpenter.sh/initialized`` (``_initialized``), backed by an instance whose id is the last
segment of ``spec.providerID`` (so captured EventBridge messages find it). A Node outside
any NodePool is static capacity. A Node being deleted (or whose NodeClaim is) is adopted
marked deleting (its pods are demand; the caller drains it). A Node keeps its ``Ready``
condition (NotReady counts against its NodePool's disruption budgets, and nothing is placed
on it), its other conditions, and the taints the node lifecycle controller keeps for them
and for a cordon (``ClusterNode.scheduling_taints``); a Node without conditions is Ready.
A NodeClaim launched but not registered is in-flight. A Pod with ``spec.nodeName`` on an
adopted node is bound there at t=0; other live Pods start pending, except pods held by
scheduling gates; a pending Pod nominated (``status.nominatedNodeName``) to an adopted node
keeps its nomination. A pod selected by a workload belongs to it, so the workload only creates
the replicas that are missing. Finished pods are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from joiner.api import durations, labels, quantity
from joiner.api.grouping import grouped, plural
from joiner.api.manifests import ManifestSet
from joiner.api.manifests.cluster_notes import gated_warning, static_capacity_warning
from joiner.api.manifests.pods import selects
from joiner.api.nodepools import NodePool
from joiner.api.objects import ClusterNode, ClusterNodeClaim, PodTemplate
from joiner.api.requirements import Requirements
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.types import CloudProviderError, InstanceType, NodeClassNotReadyError
from joiner.scheduling.volumes import MissingVolumeError, resolve_volumes
from joiner.sim.workloads import PodFactory
from joiner.state.cluster import ClusterState, Node, NodeClaim, NodeCondition


def cluster_state(m: ManifestSet) -> tuple[ClusterState, list[str]]:
    """An empty cluster of the manifests' NodePools, DaemonSets and PDBs, with each pod
    template's volume topology resolved; returns a warning for each workload or Pod whose
    claims cannot be used (``scheduling.volumes.volume_terms`` raises): its pending pods wait
    (``ClusterState.volume_waits``), as ``joiner plan`` counts them unschedulable."""
    state = ClusterState()
    state.nodepools = {p.name: p for p in m.nodepools}
    state.daemonsets = {f"{d.namespace}/{d.name}": d.template for d in m.daemonsets}
    state.pdbs = list(m.pdbs)
    warnings: list[str] = []
    for source, template, whose in [
        *((w.source, w.template, "its pending pods are") for w in m.workloads),
        *((p.source, p.template, "pending, it is") for p in m.pods),
    ]:
        try:
            vols = resolve_volumes(template, m.pvcs, m.pvs, m.storageclasses)
        except MissingVolumeError as exc:
            state.volume_waits[template] = str(exc)
            warnings.append(
                f"{source.ref} ({source.file}): {exc}; {whose} neither provisioned for nor "
                "scheduled"
            )
            continue
        if vols.terms:
            state.volume_terms[template] = vols.terms
            state.volume_claims[template] = vols.described
    return state, warnings


def _conditions(n: ClusterNode) -> dict[str, NodeCondition]:
    """The dump's node conditions at t=0 (their transition times are not kept)."""
    return {type_: NodeCondition(status, 0.0) for type_, status in n.conditions}


def static_node(n: ClusterNode, allocatable: quantity.Resources | None = None) -> Node:
    """A node no NodePool manages, as static capacity: never disrupted; its readiness, cordon
    and conditions' taints as the dump has them (``ClusterNode.scheduling_taints``).

    ``allocatable``: the room to give it instead of the Node's own allocatable (a plan's
    room left by DaemonSet pods still to come)."""
    node_labels = dict(n.labels)
    node_labels.setdefault(labels.HOSTNAME, n.name)
    return Node(
        name=n.name,
        nodeclaim=None,
        labels=node_labels,
        taints=n.scheduling_taints,
        capacity=dict(n.capacity),
        allocatable=dict(n.allocatable if allocatable is None else allocatable),
        created_at_s=0.0,
        ready=n.ready,
        deleting=n.deleting,
        conditions=_conditions(n),
    )


#: Each NodePool's instance types as the provisioner sees them (NodeOverlays applied).
PoolTypes = Mapping[str, Sequence[InstanceType]]


def _types_of(
    cloud: SimulatedCloudProvider, pool: NodePool, pool_types: PoolTypes | None
) -> dict[str, InstanceType]:
    """``pool``'s instance types by name: from ``pool_types`` when it lists the pool, else
    the cloud's (which raises ``NodeClassNotReadyError`` for a NodeClass that does not
    resolve)."""
    listed = pool_types.get(pool.name) if pool_types is not None else None
    if listed is None:
        listed = cloud.get_instance_types(pool.node_class_ref.name)
    return {t.name: t for t in listed}


def _adopt_in_flight(
    m: ManifestSet,
    state: ClusterState,
    cloud: SimulatedCloudProvider,
    on_in_flight: Callable[[NodeClaim], None] | None,
    warnings: list[str],
    pool_types: PoolTypes | None = None,
) -> None:
    """NodeClaims launched whose Node has not registered: launched NodeClaims here too, so
    their pods' room is held and the kubelet model registers them."""
    registered = {n.name for n in m.nodes}
    skipped: list[str] = []
    for c in m.nodeclaims:
        if c.deleting or not c.launched or (c.node_name is not None and c.node_name in registered):
            continue
        pool = state.nodepools.get(c.nodepool or "")
        claim_labels = dict(c.labels)
        type_name = claim_labels.get(labels.INSTANCE_TYPE)
        zone = claim_labels.get(labels.ZONE)
        capacity_type = claim_labels.get(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_ON_DEMAND)
        try:
            types = _types_of(cloud, pool, pool_types) if pool is not None else {}
        except NodeClassNotReadyError:
            types = {}
        it = types.get(type_name or "")
        instance_id = (c.provider_id or "").rsplit("/", 1)[-1] or f"i-{c.name}"
        if (
            pool is None
            or it is None
            or zone is None
            or c.name in state.nodeclaims
            or cloud.instance_by_id(instance_id) is not None
        ):
            skipped.append(c.name)
            continue
        try:
            instance = cloud.adopt(
                it,
                zone,
                capacity_type,
                instance_id,
                tags=(("karpenter.sh/nodepool", pool.name), ("karpenter.sh/nodeclaim", c.name)),
            )
        except CloudProviderError:
            skipped.append(c.name)
            continue
        claim = NodeClaim(
            name=c.name,
            nodepool=pool.name,
            node_class=pool.node_class_ref.name,
            requirements=Requirements.from_labels(
                {
                    labels.INSTANCE_TYPE: it.name,
                    labels.ZONE: zone,
                    labels.CAPACITY_TYPE: capacity_type,
                }
            ),
            requests={},
            instance_type_options=(it,),
            created_at_s=0.0,
            instance=instance,
            launched_at_s=0.0,
        )
        state.nodeclaims[claim.name] = claim
        if on_in_flight is not None:
            on_in_flight(claim)
    if skipped:
        warnings.append(
            grouped(
                f"{plural(len(skipped), 'launched NodeClaim')} whose NodePool, instance type "
                "or zone is not known here are not part of the starting cluster",
                skipped,
            )
        )


def adopt(
    m: ManifestSet,
    state: ClusterState,
    cloud: SimulatedCloudProvider,
    pods: PodFactory,
    workload_keys: Mapping[str, object],
    *,
    on_in_flight: Callable[[NodeClaim], None] | None = None,
    settles_pending: bool = False,
    pool_types: PoolTypes | None = None,
    left_out: dict[str, str] | None = None,
) -> list[str]:
    """Create the running cluster's nodes and pods; returns warnings for what was skipped.

    ``left_out``: filled with each NodePool's Node left out of the starting cluster and
    why (the warning's text, without the Node's location).

    ``settles_pending``: the caller places the pods that would start pending before it
    reads the cluster (``joiner disrupt``), so no warning says they start pending.

    ``pool_types``: each NodePool's instance types as the provisioner sees them (with
    NodeOverlays applied, so an adopted node carries its overlaid price and capacity, as
    Karpenter's candidates read them from the decorated cloud provider); absent pools, or
    None, read the cloud's.

    * A Node of a NodePool in the manifests becomes a launched NodeClaim (initialized as
      ``_initialized`` says) and its Node (marked deleting when the dump shows it being
      deleted: the caller drains it).
    * A Node no NodePool manages (EKS managed node group, self-managed, Fargate) is static
      capacity (``Node.nodeclaim is None``), as Karpenter's cluster state counts every Node.
    * A NodeClaim launched but not registered is in-flight capacity; ``on_in_flight`` hears
      of each (the simulation's kubelet model registers it).
    * Pods bound in the dump are bound to their node; pods held by ``schedulingGates`` are
      left out (nothing schedules them until the gates go); DaemonSet pods of nodes not
      part of the starting cluster go with their node.
    """
    warnings: list[str] = []
    adopted = _adopt_nodes(m, state, cloud, warnings, pool_types, left_out)
    _adopt_in_flight(m, state, cloud, on_in_flight, warnings, pool_types)
    moved = _adopt_pods(m, pods, workload_keys, adopted, warnings)
    if moved and not settles_pending:
        warnings.append(
            grouped(
                f"{plural(len(moved), 'pod')} on nodes not part of the starting cluster "
                "start pending",
                moved,
            )
        )
    return warnings


def _adopt_nodes(
    m: ManifestSet,
    state: ClusterState,
    cloud: SimulatedCloudProvider,
    warnings: list[str],
    pool_types: PoolTypes | None = None,
    left_out: dict[str, str] | None = None,
) -> set[str]:
    """Create the manifests' Nodes (see ``adopt``); returns the names of those now in
    ``state``, and appends a warning for each Node left out (recorded in ``left_out`` too,
    when given) and one for static capacity."""
    adopted: set[str] = set()
    static: list[str] = []
    for n in m.nodes:
        if n.nodepool is None:
            state.nodes[n.name] = static_node(n)
            adopted.add(n.name)
            static.append(n.name)
            continue
        problem = _adopt_node(n, n.nodepool, m, state, cloud, pool_types)
        if problem is None:
            adopted.add(n.name)
        else:
            warnings.append(f"{n.source.ref} ({n.source.file}): {problem}")
            if left_out is not None:
                left_out[n.name] = problem
    if static:
        warnings.append(static_capacity_warning(static))
    return adopted


def _initialized(n: ClusterNode, m: ManifestSet) -> bool:
    """Whether Node ``n`` of a NodePool is initialized: with its NodeClaim in the dump
    (by ``status.nodeName`` or provider ID), when it carries ``karpenter.sh/initialized:
    "true"``, as Karpenter's cluster state reads it (``StateNode.Initialized``,
    pkg/controllers/state/statenode.go); a Node whose NodeClaim is not in the manifests
    (hand-written) is taken as initialized."""
    has_claim = any(
        c.node_name == n.name or (n.provider_id is not None and c.provider_id == n.provider_id)
        for c in m.nodeclaims
    )
    return not has_claim or dict(n.labels).get(labels.INITIALIZED) == "true"


def _adopt_node(
    n: ClusterNode,
    nodepool: str,
    m: ManifestSet,
    state: ClusterState,
    cloud: SimulatedCloudProvider,
    pool_types: PoolTypes | None = None,
) -> str | None:
    """Adopt Node ``n`` of NodePool ``nodepool`` as a launched NodeClaim backed
    by a simulated instance; None when done, else why it is not part of the starting cluster
    (a warning without the Node's location)."""
    pool = state.nodepools.get(nodepool)
    if pool is None:
        return (
            f"its NodePool {nodepool!r} is not in the manifests; not part of the starting cluster"
        )
    node_labels = dict(n.labels)
    type_name = node_labels.get(labels.INSTANCE_TYPE)
    zone = node_labels.get(labels.ZONE)
    capacity_type = node_labels.get(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_ON_DEMAND)
    try:
        types = _types_of(cloud, pool, pool_types)
    except NodeClassNotReadyError as exc:
        return f"{exc}; not part of the starting cluster"
    missing = [k for k, v in ((labels.INSTANCE_TYPE, type_name), (labels.ZONE, zone)) if not v]
    if missing:
        return f"it has no {' or '.join(missing)} label; not part of the starting cluster"
    it = types.get(type_name or "")
    if it is None or zone is None:
        return (
            f"instance type {type_name!r} in zone {zone!r} is not offered to "
            f"NodePool {pool.name}; not part of the starting cluster"
        )
    if capacity_type not in labels.CAPACITY_TYPE_PRECEDENCE:
        return (
            f"its {labels.CAPACITY_TYPE} label {capacity_type!r} is none of "
            f"{', '.join(labels.CAPACITY_TYPE_PRECEDENCE)}; not part of the starting cluster"
        )
    instance_id = (n.provider_id or "").rsplit("/", 1)[-1] or f"i-{n.name}"
    if cloud.instance_by_id(instance_id) is not None:
        return (
            f"instance {instance_id} already backs another Node; not part of the starting cluster"
        )
    nc = m.nodeclass(pool.node_class_ref.name)
    tags = (
        *(nc.tags if nc is not None else ()),
        ("karpenter.sh/nodepool", pool.name),
        ("karpenter.sh/nodeclaim", n.name),
    )
    try:
        instance = cloud.adopt(it, zone, capacity_type, instance_id, tags=tags)
    except CloudProviderError as exc:
        return f"{exc}; not part of the starting cluster"
    node_labels.setdefault(labels.HOSTNAME, n.name)
    node_labels.setdefault(labels.NODEPOOL, pool.name)
    initialized = _initialized(n, m)
    if initialized:
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
        initialized_at_s=0.0 if initialized else None,
        node_name=n.name,
    )
    state.nodeclaims[claim.name] = claim
    state.nodes[n.name] = Node(
        name=n.name,
        nodeclaim=claim.name,
        labels=node_labels,
        taints=n.scheduling_taints,
        capacity=dict(n.capacity) or dict(it.capacity),
        allocatable=dict(n.allocatable) or dict(it.allocatable),
        created_at_s=0.0,
        ready=n.ready,
        deleting=n.deleting,
        conditions=_conditions(n),
        do_not_disrupt=dict(n.annotations).get(labels.DO_NOT_DISRUPT) == "true",
        scale_down_disabled=dict(n.annotations).get(labels.CA_SCALE_DOWN_DISABLED) == "true",
    )
    return None


def _adopt_pods(
    m: ManifestSet,
    pods: PodFactory,
    workload_keys: Mapping[str, object],
    adopted: set[str],
    warnings: list[str],
) -> list[str]:
    """Create the manifests' live Pods (see ``adopt``), bound when their node is in
    ``adopted``; appends a warning for gated pods, and returns the pods (``key (node
    name)``) whose node was left out: they start pending."""
    ds_keys = {f"{d.namespace}/{d.name}": d for d in m.daemonsets}
    workloads = [w for w in m.workloads if w.key in workload_keys]
    gated: list[str] = []
    moved: list[str] = []
    # Running pods of one controller with equal specs share one template object, as the
    # replicas a simulation creates do: what treats pods as alike goes by that object
    # (Cluster Autoscaler's fit check skips a pod similar to one that failed, CA
    # ``SimilarPodsScheduling``: same controller, equal labels and spec).
    # A pod equal to its workload's template takes that very object, the one the
    # controller creates new replicas from.
    shared: dict[tuple[str, PodTemplate], PodTemplate] = {
        (w.key, w.template): w.template for w in workloads
    }
    for p in m.pods:
        if p.terminal or (p.node_name is None and not p.provisionable):
            if p.scheduling_gates and not p.terminal:
                gated.append(p.key)
            continue
        daemon_owner = p.owner is not None and p.owner.startswith("DaemonSet/")
        if daemon_owner and p.node_name not in adopted:
            continue  # a DaemonSet pod goes with its node
        owner = next(
            (
                w.key
                for w in workloads
                if w.namespace == p.namespace and selects(w.selector, dict(p.template.labels))
            ),
            None,
        )
        daemon = False
        if owner is None and daemon_owner:
            assert p.owner is not None
            key = f"{p.namespace}/{p.owner.split('/', 1)[1]}"
            daemon = key in ds_keys
            owner = key
        template = shared.setdefault((owner or p.key, p.template), p.template)
        pod = pods.create(owner or p.key, template, daemon=daemon, name=p.name)
        pod.do_not_disrupt, pod.do_not_disrupt_for_s = durations.do_not_disrupt(
            dict(p.annotations).get(labels.DO_NOT_DISRUPT)
        )
        if p.node_name in adopted:
            pod.node_name = p.node_name
            pod.bound_at_s = 0.0
        elif p.preempting and p.nominated_node_name in adopted:
            # kube-scheduler nominated it there by preemption: it waits for its victims, and
            # Karpenter does not provision for it (``IsProvisionable``).
            pod.nominated_node_name = p.nominated_node_name
        elif p.node_name is not None:
            moved.append(f"{p.key} (node {p.node_name})")
    if gated:
        warnings.append(gated_warning(gated))
    return moved


def last_pod_events(m: ManifestSet, state: ClusterState, at: datetime) -> None:
    """Set each adopted managed node's last pod event (``Node.last_pod_event_s``, run time 0
    being ``at``) from its NodeClaim in the dump, as Karpenter's consolidation reads it
    (pkg/controllers/nodeclaim/disruption/consolidation.go ``Consolidation.Reconcile``):
    ``status.lastPodEventTime``, else the ``Initialized`` condition's transition time; a
    NodeClaim with neither whose ``Consolidatable`` condition is False counts from ``at``.
    A time after ``at`` counts from ``at``. Without any of these nothing is set (the
    caller's default: from the node's adoption, or elapsed in ``joiner disrupt``)."""
    for claim in m.nodeclaims:
        node = _adopted_node(m, state, claim)
        if node is None:
            continue
        since = claim.last_pod_event_at or claim.initialized_at
        if since is not None:
            node.last_pod_event_s = min((since - at).total_seconds(), 0.0)
        elif claim.consolidatable == "False":
            node.last_pod_event_s = 0.0


def _adopted_node(m: ManifestSet, state: ClusterState, claim: ClusterNodeClaim) -> Node | None:
    """The managed node adopted from ``claim``'s Node (by ``status.nodeName``, else by
    provider id), or None."""
    for n in m.nodes:
        by_id = claim.provider_id is not None and n.provider_id == claim.provider_id
        if n.name == claim.node_name or by_id:
            node = state.nodes.get(n.name)
            if node is not None and node.nodeclaim is not None:
                return node
    return None
