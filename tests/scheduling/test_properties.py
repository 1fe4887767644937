"""Properties of every plan over random pods, NodePools and catalogs (hypothesis), and a
differential check: replaying a plan through the kube-scheduler model binds every pod the
plan placed."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from joiner.api import labels, quantity
from joiner.api.objects import (
    HostPort,
    PodAffinityTerm,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    tolerates_all,
)
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import (
    BoundPod,
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
)
from joiner.scheduling.costopt import CostOptimalScheduler, lower_bound, plan_cost
from joiner.scheduling.costopt import solver as solver_module
from joiner.scheduling.costopt.lp import assignment_bound
from joiner.scheduling.costopt.solver import _CostSolve
from joiner.scheduling.placement import _queue_key
from joiner.scheduling.scheduler import CreationTieScheduler, _CreationTieSolve
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


@st.composite
def catalogs(draw):
    n = draw(st.integers(1, 6))
    types = []
    for i in range(n):
        cpu = draw(st.sampled_from([1000, 2000, 4000, 8000, 16000]))
        zones = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True))
        price = cpu / 1000 * draw(st.sampled_from([0.03, 0.05, 0.07]))
        prices = {
            (z, ct): price * (0.4 if ct == "spot" else 1)
            for z in zones
            for ct in ("spot", "on-demand")
        }
        arch = draw(st.sampled_from(["amd64", "arm64"]))
        types.append(
            make_instance_type(
                f"t{i}.x{cpu // 1000}",
                cpu_m=cpu,
                memory=cpu // 1000 * 4 * GIB,
                pods=draw(st.sampled_from([4, 8, 110])),
                arch=arch,
                prices=prices,
            )
        )
    return tuple(types)


@st.composite
def pools(draw):
    out = []
    for i in range(draw(st.integers(1, 3))):
        reqs = []
        if draw(st.booleans()):
            reqs.append(Requirement.in_(labels.ARCH, draw(st.sampled_from(["amd64", "arm64"]))))
        if draw(st.booleans()):
            reqs.append(
                Requirement.in_(
                    labels.ZONE,
                    *draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=2, unique=True)),
                )
            )
        taints = [Taint("dedicated", "NoSchedule", "x")] if draw(st.booleans()) else []
        limits = {"cpu": draw(st.sampled_from([4000, 16000, 64000]))} if draw(st.booleans()) else {}
        pool = make_nodepool(
            f"pool{i}",
            requirements=reqs,
            taints=taints,
            limits=limits,
            weight=draw(st.integers(0, 3)),
        )
        out.append((pool, limits))
    return out


APP_SEL = {"a": Requirements.from_labels({"app": "a"}), "b": Requirements.from_labels({"app": "b"})}


@st.composite
def templates(draw):
    app = draw(st.sampled_from(["a", "b"]))
    t = make_pod_template(
        draw(st.sampled_from([100, 500, 1000, 1500, 3000])),
        draw(st.sampled_from([GIB // 4, GIB, 2 * GIB])),
        tolerations=[Toleration("dedicated", "Exists")] if draw(st.booleans()) else [],
        node_selector={labels.ARCH: draw(st.sampled_from(["amd64", "arm64"]))}
        if draw(st.booleans())
        else None,
    )
    extra = {}
    feature = draw(st.sampled_from(["none", "zspread", "hspread", "anti", "affinity", "port"]))
    sel = APP_SEL[app]
    if feature == "zspread":
        extra["spread"] = (TopologySpreadConstraint(labels.ZONE, 1, sel),)
    elif feature == "hspread":
        extra["spread"] = (TopologySpreadConstraint(labels.HOSTNAME, 2, sel),)
    elif feature == "anti":
        extra["pod_anti_affinity"] = (PodAffinityTerm(labels.HOSTNAME, sel),)
    elif feature == "affinity":
        extra["pod_affinity"] = (PodAffinityTerm(labels.ZONE, sel),)
    elif feature == "port":
        extra["host_ports"] = (HostPort(9100),)
    return replace(t, labels=(("app", app),), **extra)


@st.composite
def inputs(draw):
    types = draw(catalogs())
    pool_specs = draw(pools())
    tmpls = draw(st.lists(templates(), min_size=1, max_size=4))
    n = draw(st.integers(1, 30))
    pods = tuple(
        PodRequest(f"p{i:03d}", tmpls[draw(st.integers(0, len(tmpls) - 1))], i) for i in range(n)
    )
    nodepools = tuple(
        NodePoolTemplate(p, types, tuple(sorted(lim.items()))) for p, lim in pool_specs
    )
    return SchedulingInput(pods=pods, nodepools=nodepools)


def _terms_ok(reqs: Requirements, pod: PodRequest) -> bool:
    return any(reqs.compatible(t) is None for t in pod.template.requirement_terms())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=inputs())
def test_every_plan_is_valid(inp):
    result = Scheduler().solve(inp)
    pods = {p.uid: p for p in inp.pods}
    # Every pod exactly once: in one NodeClaim, on an existing node, or unschedulable.
    seen = Counter(
        [u for c in result.new_nodeclaims for u in c.pods]
        + [u for u, _ in result.existing_placements]
        + [u for u, _ in result.unschedulable]
    )
    assert seen == Counter(pods.keys())
    pools = {t.nodepool.name: t for t in inp.nodepools}
    used: dict[str, int] = Counter()
    for claim in result.new_nodeclaims:
        pool = pools[claim.nodepool].nodepool
        members = [pods[u] for u in claim.pods]
        total: quantity.Resources = {}
        for p in members:
            total = quantity.add(total, p.template.requests)
            assert tolerates_all(p.template.tolerations, pool.taints) is None
            assert _terms_ok(claim.requirements, p)
        assert claim.instance_types, "a NodeClaim always keeps at least one option"
        for it in claim.instance_types:
            # Every option fits all its pods and has an offering the requirements allow.
            assert quantity.fits(total, it.allocatable)
            assert it.requirements.intersects(claim.requirements) is None
            assert it.available_offerings(claim.requirements)
        assert pool.requirements.intersects(claim.requirements) is None
        # Host ports never collide on one node.
        ports = [hp for p in members for hp in p.template.host_ports]
        assert len(ports) == len(set(ports))
        # Hostname anti-affinity: at most one matching pod per NodeClaim.
        for p in members:
            for term in p.template.pod_anti_affinity:
                if term.key == labels.HOSTNAME:
                    matching = [
                        q
                        for q in members
                        if dict(q.template.labels).get("app") == dict(p.template.labels).get("app")
                    ]
                    assert len(matching) == 1
            for c in p.template.spread:
                if c.key == labels.HOSTNAME:
                    # Each constrained pod saw count + 1 <= maxSkew when placed; unconstrained
                    # matching pods may join later (kube-scheduler semantics).
                    same = [
                        q
                        for q in members
                        if c in q.template.spread
                        and dict(q.template.labels) == dict(p.template.labels)
                    ]
                    assert len(same) <= c.max_skew
        limit_cpu = pool.limit("cpu")
        if limit_cpu is not None:
            used[pool.name] += max(it.capacity["cpu"] for it in claim.instance_types)
    for name, total_cpu in used.items():
        assert total_cpu <= pools[name].nodepool.limit("cpu")
    # Spread and affinity hold at the moment each pod is placed (later unconstrained pods may
    # skew the end state, as with kube-scheduler); the replay tests below check exactly that.


def _replay(inp: SchedulingInput, result, key=_queue_key) -> list[str]:
    """Make a Ready node of every NodeClaim (its cheapest option, its pinned labels), then
    bind each pod, in the order the plan placed them (``key``), to the node the plan chose,
    checking each binding with kube-scheduler's filters. Returns the pods it could not bind."""
    nodes: dict[int, ExistingNode] = {}
    home: dict[str, str] = {}
    for i, claim in enumerate(result.new_nodeclaims):
        it = claim.instance_types[0]
        node_labels = {
            k: next(iter(r.values))
            for k, r in it.requirements.items()
            if not r.complement and len(r.values) == 1
        }
        node_labels.update(claim.requirements.labels())
        offers = it.available_offerings(claim.requirements)
        node_labels.setdefault(labels.ZONE, offers[0].zone)
        name = f"node-{i:04d}"
        node_labels[labels.HOSTNAME] = name
        pool = next(t.nodepool for t in inp.nodepools if t.nodepool.name == claim.nodepool)
        nodes[i] = ExistingNode(
            name=name,
            labels=tuple(sorted(node_labels.items())),
            taints=pool.taints,
            available=dict(it.allocatable),
            initialized=True,
            allocatable=dict(it.allocatable),
        )
        for uid in claim.pods:
            home[uid] = name
    by_name = {n.name: i for i, n in nodes.items()}
    bound: list[BoundPod] = []
    failed = []
    order = sorted((p for p in inp.pods if p.uid in home), key=key)
    for pod in order:
        target = home[pod.uid]
        feasible = Scheduler().feasible_nodes(
            SchedulingInput(
                pods=(pod,),
                existing=tuple(nodes.values()),
                bound_pods=tuple(bound),
            ),
            pod.uid,
        )
        if target not in feasible:
            failed.append(pod.uid)
            continue
        i = by_name[target]
        nodes[i] = replace(
            nodes[i], available=quantity.subtract(nodes[i].available, pod.template.requests)
        )
        bound.append(
            BoundPod(
                target,
                pod.template.namespace,
                pod.template.labels,
                pod.template.pod_anti_affinity,
                pod.template.host_ports,
            )
        )
    return failed


class RecordsOrder:
    """Mixin for a solve class (``_Solve`` or a subclass): records, in ``order``, the pods
    in the order it places them on NodeClaims."""

    def __init__(self, inp: SchedulingInput) -> None:
        super().__init__(inp)  # type: ignore[call-arg]
        self.order: list[str] = []

    def _commit(self, claim, pod, final, cand, need):  # type: ignore[no-untyped-def]
        self.order.append(pod.uid)
        super()._commit(claim, pod, final, cand, need)  # type: ignore[misc]


class _PlacedOrder(RecordsOrder, _CreationTieSolve):
    """The solve of the other autoscalers' models and of the plan the cost-optimal packing
    compares with (``CreationTieScheduler``), recording the order it places pods on
    NodeClaims: a pod that failed is placed in a later round of the queue (``_Queue``),
    after pods behind it. It pins a NodeClaim where the groups that count a pod will see it
    (``PINS_COUNTED_DOMAINS``), so its plans replay through kube-scheduler. Karpenter's own
    rules do not (``topology.go`` ``Record`` counts a pod only where its NodeClaim's domain
    is one value), so its plans may put a pod past a skew kube-scheduler enforces, which
    the differential harness sees as a race."""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=inputs())
def test_replaying_random_plans_binds_every_placed_pod(inp):
    solve = _PlacedOrder(inp)
    result = solve.run()
    assert result == CreationTieScheduler().solve(inp)
    position = {u: i for i, u in enumerate(solve.order)}
    assert _replay(inp, result, key=lambda p: position[p.uid]) == []


# -- packing: cost-optimal (joiner.scheduling.costopt) ----------------------------------


class _Recording(RecordsOrder, _CostSolve):
    """The cost-optimal solve without the faithful fallback, recording placement order."""


def _placed(inp: SchedulingInput, result) -> SchedulingInput:
    on_claims = {u for c in result.new_nodeclaims for u in c.pods}
    return replace(inp, pods=tuple(p for p in inp.pods if p.uid in on_claims))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=inputs())
def test_the_lower_bound_is_at_most_every_plans_cost(inp):
    for scheduler in (Scheduler(), CostOptimalScheduler()):
        result = scheduler.solve(inp)
        placed = _placed(inp, result)
        assert lower_bound(placed) <= assignment_bound(placed) + 1e-9
        assert assignment_bound(placed) <= plan_cost(result) + 1e-9
    raw = _Recording(inp).run()
    assert lower_bound(_placed(inp, raw)) <= plan_cost(raw) + 1e-9


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=inputs())
def test_cost_optimal_plans_replay_through_kube_scheduler_filters(inp):
    """Every pod the cost-optimal packing places binds, in the order it was placed, to the
    node the plan says, through kube-scheduler's Filter phase; nothing is lost."""
    _check_replay(inp)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=inputs())
def test_repaired_cost_optimal_plans_replay_through_kube_scheduler_filters(inp):
    """The same with the repair pass on for every launch (it runs only on launches of more
    than ``COMPARE_UP_TO`` pods, larger than these inputs)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(solver_module, "REPAIR_FROM", 0)
        _check_replay(inp)


def _check_replay(inp: SchedulingInput) -> None:
    solve = _Recording(inp)
    result = solve.run()
    seen = Counter(
        [u for c in result.new_nodeclaims for u in c.pods]
        + [u for u, _ in result.existing_placements]
        + [u for u, _ in result.unschedulable]
    )
    assert seen == Counter(p.uid for p in inp.pods)
    position = {u: i for i, u in enumerate(solve.order)}
    assert _replay(inp, result, key=lambda p: position[p.uid]) == []
    # The scheduler as wired (with its fallback) never leaves more pods out than Karpenter's.
    final = CostOptimalScheduler().solve(inp)
    # never more pods left out than the faithful plan it compares with (which pins, as it
    # does; Karpenter's own rules may place a pod it cannot, ``PINS_COUNTED_DOMAINS``)
    assert len(final.unschedulable) <= len(CreationTieScheduler().solve(inp).unschedulable)


def test_replaying_the_benchmark_mix_binds_every_placed_pod():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "scheduling.py"
    spec = importlib.util.spec_from_file_location("bench_scheduling", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    types = tuple(bench.synthetic_types()[:32])
    for n in (10, 100, 400):
        pods = tuple(bench.make_pods(n))
        inp = SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(make_nodepool(), types),))
        result = Scheduler().solve(inp)
        assert not result.unschedulable
        assert _replay(inp, result) == [], f"{n} pods"


def _cluster(inp: SchedulingInput, result) -> tuple[tuple[ExistingNode, ...], tuple[BoundPod, ...]]:
    """A running cluster from a plan: a Ready node per NodeClaim (its cheapest option, its
    pinned labels, the zone of its first offering, a PreferNoSchedule or NoSchedule taint on
    some) with the plan's pods bound to it (a taint here does not move them: they run)."""
    pods = {p.uid: p for p in inp.pods}
    nodes: list[ExistingNode] = []
    bound: list[BoundPod] = []
    for i, claim in enumerate(result.new_nodeclaims):
        it = claim.instance_types[0]
        node_labels = dict(claim.requirements.labels())
        node_labels.setdefault(labels.ZONE, it.available_offerings(claim.requirements)[0].zone)
        name = f"node-{i:04d}"
        node_labels[labels.HOSTNAME] = name
        available = dict(it.allocatable)
        for uid in claim.pods:
            t = pods[uid].template
            available = quantity.subtract(available, t.requests)
            bound.append(BoundPod(name, t.namespace, t.labels, t.pod_anti_affinity, t.host_ports))
        nodes.append(
            ExistingNode(
                name=name,
                labels=tuple(sorted(node_labels.items())),
                # Some nodes tainted, so excluding them changes the taint sets offering a
                # domain and whether any PreferNoSchedule taint is left.
                taints=(Taint("soft", "PreferNoSchedule"),)
                if i % 4 == 1
                else (Taint("dedicated", "NoSchedule", "x"),)
                if i % 5 == 3
                else (),
                available=available,
                initialized=i % 3 != 0,
                allocatable=dict(it.allocatable),
            )
        )
    return tuple(reversed(nodes)), tuple(bound)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=inputs(), then=inputs(), data=st.data())
def test_excluding_nodes_equals_solving_without_them(first, then, data):
    """A consolidation candidate's solve: the whole snapshot with ``exclude_nodes`` gives the
    same plan as the snapshot without those nodes and their pods, also when the snapshot's
    shared base (``scheduling.base``) is reused from an earlier solve."""
    existing, bound = _cluster(first, Scheduler().solve(first))
    names = sorted(n.name for n in existing)
    exclude = frozenset(data.draw(st.lists(st.sampled_from(names), unique=True)) if names else ())
    inp = replace(then, existing=existing, bound_pods=bound)
    kept = replace(
        inp,
        existing=tuple(n for n in existing if n.name not in exclude),
        bound_pods=tuple(b for b in bound if b.node not in exclude),
    )
    expected = Scheduler().solve(kept)
    for mode in ("provisioner", "kube-scheduler"):
        want = Scheduler().solve(replace(kept, mode=mode))
        # Twice: the second solve reuses the base the first built for these very tuples.
        for _ in range(2):
            got = Scheduler().solve(replace(inp, exclude_nodes=exclude, mode=mode))
            assert got == want
    assert lower_bound(replace(inp, exclude_nodes=exclude)) == lower_bound(kept)
    assert expected == Scheduler().solve(replace(inp, exclude_nodes=exclude))


class _Forgetful(dict):
    """A memo that never keeps an answer (every check is made afresh)."""

    def __setitem__(self, key, value) -> None:
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=inputs(), then=inputs())
def test_node_checks_decided_once_per_solve_equal_checks_made_every_time(first, then):
    """A node's taints and node selection are decided once per template and relaxation step
    in a solve (``_Solve._static``): plans equal those of checking them at every attempt,
    in both modes, over a cluster with PreferNoSchedule and NoSchedule taints."""
    from joiner.scheduling import scheduler as scheduler_module

    existing, bound = _cluster(first, Scheduler().solve(first))
    inp = replace(then, existing=existing, bound_pods=bound)
    real_init = scheduler_module._Solve.__init__

    def forgetful_init(self, solve_input):
        real_init(self, solve_input)
        self._static = _Forgetful()

    for mode in ("provisioner", "kube-scheduler"):
        want = Scheduler().solve(replace(inp, mode=mode))
        scheduler_module._Solve.__init__ = forgetful_init
        try:
            got = Scheduler().solve(replace(inp, mode=mode))
        finally:
            scheduler_module._Solve.__init__ = real_init
        assert got == want
