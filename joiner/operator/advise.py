"""``joiner advise``: how risky is each NodePool's Spot setup, at the manifests' load.

1. The Nodes a NodePool already runs (a cluster dump's, by their ``karpenter.sh/nodepool``,
   instance-type, zone and capacity-type labels) are taken over by the simulated cloud
   with the Spot market (``market.SpotMarket`` from the scenario's seed, knobs and real
   inputs), with the pods bound to them; a Node whose offering is unknown is left out
   with a warning.
2. One provisioning round (``plan.build_plan``) sizes the NodeClaims the pending pods need,
   and each is launched, in order, through the same cloud: the fleet request and
   price-capacity-optimized choice of a simulation, so our own nodes (running or new)
   lower a pool's capacity score and later NodeClaims spread as they would.
3. Per NodePool, from the market model's rates (expected values, not a sampled run):
   reclaims per month = sum over Spot nodes of the pool's per-instance hazard x 720 h; pods
   disrupted per month weight each node's reclaims by its pods; reclaim events per month =
   sum over pools of crunch rate x 720 h x P(the event takes at least one of our n nodes
   there) with the severity uniform on [SEVERITY_MIN, SEVERITY_MAX]; cost per month = the
   launch prices x 720 h.
4. Findings: a NodePool whose Spot side can launch only one instance type (the seed
   Provisioner's c5.xlarge), and one whose largest pool holds half of its nodes or more
   (and at least three).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from joiner.api import labels
from joiner.api.featuregates import FeatureGates
from joiner.api.manifests import ManifestSet
from joiner.api.objects import NodePool
from joiner.api.outputs import AdvicePool, NodePoolAdvice, SpotAdvice
from joiner.api.requirements import Requirement
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.reservations import CapacityReservation
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.simulated.market import (
    HOURS_PER_MONTH,
    MEAN_SEVERITY,
    SEVERITY_MAX,
    SEVERITY_MIN,
    HazardModel,
    MarketInputs,
    SpotMarket,
    market_seed,
)
from joiner.cloudprovider.types import (
    CloudProviderError,
    Instance,
    InstanceType,
    LaunchRequest,
    SecurityGroup,
    Subnet,
)
from joiner.operator.plan import build_plan, planning_cloud
from joiner.sim.clock import SimClock
from joiner.sim.running import adopt, cluster_state
from joiner.sim.workloads import PodFactory

#: A pool holding this share of a NodePool's nodes or more, and at least
#: ``CONCENTRATION_MIN_NODES`` of them, is flagged (one event could take several at once).
CONCENTRATION_FLAG = 0.5
CONCENTRATION_MIN_NODES = 3


def _p_any_victim(n: int) -> float:
    """P(a crunch takes at least one of ``n`` instances), severity ~ U(min, max)."""
    a, b = SEVERITY_MIN, SEVERITY_MAX
    survive_all = ((1 - a) ** (n + 1) - (1 - b) ** (n + 1)) / ((n + 1) * (b - a))
    return 1.0 - survive_all


def advise(
    m: ManifestSet,
    catalog: Catalog,
    region: str,
    *,
    seed: int = 0,
    hazard: HazardModel | None = None,
    inputs: MarketInputs | None = None,
    subnets: Sequence[Subnet] | None = None,
    security_groups: Sequence[SecurityGroup] = (),
    reservations: Sequence[CapacityReservation] = (),
    feature_gates: FeatureGates | None = None,
) -> SpotAdvice:
    """The advice document for ``m`` in ``region`` (module docstring); ``reservations``
    are the capacity reservations launches may use (a Scenario's). ``feature_gates`` as
    ``plan.build_plan`` takes them: with ``StaticCapacity`` on, a static pool's new nodes
    are the NodeClaims it needs to reach ``spec.replicas`` (``plan.staticNodeClaims``),
    launched like the others."""
    plan = build_plan(
        m,
        catalog,
        region,
        subnets=subnets,
        security_groups=security_groups,
        reservations=reservations,
        feature_gates=feature_gates,
    )
    # The plan's own launch is regional-price (its zone-tie note does not apply here).
    warnings = [w for w in plan.warnings if "zones tie on price" not in w]
    market = SpotMarket(market_seed(seed), hazard, inputs)
    cloud = planning_cloud(
        m, catalog, region, subnets, security_groups, [], market=market, reservations=reservations
    )
    pools = {p.name: p for p in m.nodepools}
    launched: dict[str, list[tuple[Instance, int]]] = {name: [] for name in sorted(pools)}
    placed = Counter(p.node for p in plan.placements)
    running = _take_over_running(m, cloud, pools, launched, warnings, placed)
    estimated = any(i.offering.price_estimated for nodes in launched.values() for i, _ in nodes)
    for claim in [*plan.nodeClaims, *plan.staticNodeClaims]:
        pool = pools[claim.nodePool]
        types = {t.name: t for t in cloud.get_instance_types(pool.node_class_ref.name)}
        options = tuple(types[n] for n in claim.instanceTypes if n in types)
        request = LaunchRequest(
            nodeclaim_name=claim.name,
            nodepool=pool.name,
            node_class=pool.node_class_ref.name,
            requirements=pool.requirements.add(
                Requirement.in_(labels.INSTANCE_TYPE, *[t.name for t in options])
            ),
            instance_types=options,
        )
        try:
            inst = cloud.create(request)
        except CloudProviderError as exc:
            warnings.append(f"NodePool {pool.name}: {claim.name} could not launch: {exc}")
            continue
        estimated = estimated or inst.offering.price_estimated
        launched[pool.name].append((inst, len(claim.pods)))
    out = []
    for name in sorted(pools):
        try:
            offered = cloud.get_instance_types(pools[name].node_class_ref.name)
        except CloudProviderError:
            offered = []  # build_plan already warned about the NodeClass
        out.append(
            _nodepool_advice(pools[name], launched[name], offered, market, running.get(name, 0))
        )
    note = ""
    od = catalog.on_demand_price(region, "m5.large")
    if od is not None and od.estimated:
        note = od.note
        estimated = True
    return SpotAdvice(
        region=region,
        seed=seed,
        priceEstimated=estimated,
        priceNote=note,
        nodePools=out,
        warnings=warnings,
    )


def _take_over_running(
    m: ManifestSet,
    cloud: SimulatedCloudProvider,
    pools: dict[str, NodePool],
    nodes: dict[str, list[tuple[Instance, int]]],
    warnings: list[str],
    placed: Mapping[str, int],
) -> dict[str, int]:
    """Adopt the running cluster into ``cloud`` as ``joiner disrupt`` does
    (``sim.running.adopt``: a NodePool's Node becomes a running NodeClaim with the pods bound
    to it; one whose labels or instance ID it cannot take is left out, with a warning
    here), appending each with its pod count (not a DaemonSet's) to ``nodes[pool]``, Nodes
    being deleted aside, and NodeClaims launched whose Node has not registered yet included;
    ``placed``: the pending pods the provisioning round puts on each node or NodeClaim, by
    name; returns the running nodes per NodePool."""
    state, _ = cluster_state(m)  # its volume warnings are build_plan's too
    left_out: dict[str, str] = {}
    # adopt's other warnings (static capacity, gated pods) are build_plan's too.
    adopt(
        m,
        state,
        cloud,
        PodFactory(state, SimClock()),
        {w.key: w for w in m.workloads},
        settles_pending=True,
        left_out=left_out,
    )
    for name, why in sorted(left_out.items()):
        warnings.append(f"running node {name} is left out: {why}")
    running: dict[str, int] = {}
    for name in sorted(state.nodeclaims):
        claim = state.nodeclaims[name]
        node = state.nodes.get(claim.node_name or "")
        if claim.instance is None or claim.nodepool not in pools:
            continue
        if node is not None and node.deleting:
            continue
        # Pods bound to it, and those the provisioning round places there (an in-flight
        # NodeClaim, launched with no Node yet, holds only the latter).
        pods = placed.get(name, 0) + placed.get(claim.node_name or "", 0)
        if node is not None:
            pods += sum(1 for p in state.pods_on(node.name) if not p.daemon)
        nodes[claim.nodepool].append((claim.instance, pods))
        running[claim.nodepool] = running.get(claim.nodepool, 0) + 1
    return running


def _nodepool_advice(
    pool: NodePool,
    nodes: list[tuple[Instance, int]],
    instance_types: list[InstanceType],
    market: SpotMarket,
    running: int = 0,
) -> NodePoolAdvice:
    """One NodePool's advice from its nodes (with their pod counts): the ``running`` it
    already has, then those one provisioning round launches."""
    name = pool.name
    spot_reqs = pool.requirements.add(
        Requirement.in_(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_SPOT)
    )
    spot_pools: set[tuple[str, str]] = set()
    if pool.requirements.get_or_exists(labels.CAPACITY_TYPE).has(labels.CAPACITY_TYPE_SPOT):
        for it in instance_types:
            if it.requirements.intersects(spot_reqs) is not None:
                continue
            spot_pools.update((it.name, o.zone) for o in it.available_offerings(spot_reqs))
    spot_types = sorted({t for t, _ in spot_pools})
    by_pool: dict[str, list[tuple[Instance, int]]] = {}
    for inst, pods in nodes:
        key = f"{inst.instance_type.name}/{inst.offering.zone}"
        by_pool.setdefault(key, []).append((inst, pods))
    rows: list[AdvicePool] = []
    reclaims = disrupted = events = cost = 0.0
    for key in sorted(by_pool, key=lambda k: (-len(by_pool[k]), k)):
        members = by_pool[key]
        inst = members[0][0]
        spot = inst.offering.capacity_type == labels.CAPACITY_TYPE_SPOT
        rate = market.settings.rate(inst.offering, inst.instance_type.name) if spot else 0.0
        per_node = rate * HOURS_PER_MONTH
        reclaims += per_node * len(members)
        disrupted += per_node * sum(p for _, p in members)
        if rate > 0:
            events += (
                market.crunch_rate_per_hour(rate) * HOURS_PER_MONTH * _p_any_victim(len(members))
            )
        price = sum(i.offering.price_per_hour for i, _ in members)
        cost += price * HOURS_PER_MONTH
        a = inst.allocation
        rows.append(
            AdvicePool(
                pool=key,
                capacityType=inst.offering.capacity_type,
                nodes=len(members),
                pricePerHour=round(inst.offering.price_per_hour, 6),
                capacityScore=round(a.capacity_score, 3)
                if a is not None and a.capacity_score is not None
                else None,
                reclaimsPerMonth=round(per_node * len(members), 4),
                nodesPerEvent=round(MEAN_SEVERITY * len(members), 2) if spot else 0.0,
            )
        )
    total = len(nodes)
    largest = rows[0] if rows else None
    share = largest.nodes / total if largest is not None and total else 0.0
    findings: list[str] = []
    if len(spot_types) == 1:
        findings.append(
            f"single-pool risk: only one instance type ({spot_types[0]}) can launch as Spot "
            f"({len(spot_pools)} pool(s), one per zone); a crunch in one pool reclaims about "
            f"{MEAN_SEVERITY:.0%} of the nodes there at once, and the type's other pools are "
            "all there is to fall back on. Allow many families and sizes (instance-category, "
            "-generation, -cpu requirements) and every zone"
        )
    if (
        largest is not None
        and largest.nodes >= CONCENTRATION_MIN_NODES
        and share >= CONCENTRATION_FLAG
    ):
        findings.append(
            f"concentration: {largest.nodes} of {total} nodes ({share:.0%}) sit in one pool "
            f"({largest.pool}); expect about {largest.nodesPerEvent:g} of them per reclaim "
            "event there"
        )
    return NodePoolAdvice(
        name=name,
        spotInstanceTypes=len(spot_types),
        spotPools=len(spot_pools),
        nodes=total,
        runningNodes=running,
        spotNodes=sum(1 for i, _ in nodes if i.offering.capacity_type == labels.CAPACITY_TYPE_SPOT),
        pods=sum(p for _, p in nodes),
        largestPoolShare=round(share, 4),
        largestPool=largest.pool if largest is not None else None,
        expectedReclaimsPerMonth=round(reclaims, 4),
        expectedReclaimEventsPerMonth=round(events, 4),
        podsDisruptedPerMonth=round(disrupted, 4),
        costPerMonth=round(cost, 2),
        pools=rows,
        findings=findings,
    )
