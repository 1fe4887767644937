"""Karpenter's scheduling queue (``queue.go`` ``Queue``, ``scheduler.go`` ``Solve``): a pod
that fits nowhere goes to the back of the queue and is tried again while other pods are
being placed, with its preferences in force again; the solve stops when a whole round of the
pods left placed none. kube-scheduler mode tries each pod once."""

from __future__ import annotations

from dataclasses import replace

from joiner.api import labels
from joiner.api.objects import PodAffinityTerm, PodTemplate
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import (
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
    provisioning_order,
)
from joiner.testing.builders import (
    GIB,
    make_existing_node,
    make_instance_type,
    make_nodepool,
    make_pod_template,
)

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _pool(cpu_m: int) -> NodePoolTemplate:
    """A NodePool of one instance type of ``cpu_m`` CPU and 16 GiB in three zones."""
    prices = {(z, ct): 0.1 for z in ZONES for ct in ("spot", "on-demand")}
    it = make_instance_type("m5.x", cpu_m=cpu_m, memory=16 * GIB, prices=prices)
    return NodePoolTemplate(make_nodepool(), (it,))


def _pod(name: str, cpu_m: int, app: str, *, near: str | None = None, **kw) -> PodRequest:
    """Pod ``name`` labelled app=``app``; with ``near``, it requires a pod labelled
    app=``near`` on its node (required pod affinity on the hostname)."""
    t: PodTemplate = replace(make_pod_template(cpu_m, GIB), labels=(("app", app),), **kw)
    if near is not None:
        selector = Requirements.from_labels({"app": near})
        t = replace(t, pod_affinity=(PodAffinityTerm(labels.HOSTNAME, selector),))
    return PodRequest(name, t, int(name[-1]))


def _solve(pods, pool=None, mode="provisioner", existing=()):
    return Scheduler().solve(
        SchedulingInput(
            pods=tuple(pods),
            nodepools=(pool or _pool(4000),) if mode != "kube-scheduler" else (),
            existing=tuple(existing),
            mode=mode,
        )
    )


def test_a_pod_is_placed_with_its_affinity_partner_that_comes_later_in_the_queue():
    web = _pod("web-1", 2000, "web", near="cache")
    cache = _pod("cache-2", 500, "cache")
    assert [p.uid for p in provisioning_order([cache, web])] == ["web-1", "cache-2"]
    result = _solve([web, cache])
    assert result.unschedulable == ()
    assert [c.pods for c in result.new_nodeclaims] == [("cache-2", "web-1")]


def test_a_chain_of_affinities_is_resolved_over_several_rounds():
    # a needs b on its node, b needs c: round 1 places c, round 2 b, round 3 a.
    a = _pod("a-1", 1500, "a", near="b")
    b = _pod("b-2", 1000, "b", near="c")
    c = _pod("c-3", 500, "c")
    result = _solve([a, b, c])
    assert result.unschedulable == ()
    assert [cl.pods for cl in result.new_nodeclaims] == [("c-3", "b-2", "a-1")]


def test_pods_that_need_each_other_end_unschedulable_and_the_solve_stops():
    # Neither matches its own affinity, so neither can go first (kube-scheduler's exception
    # for a pod that matches its own term does not apply): no round places anything.
    x = _pod("x-1", 1000, "x", near="y")
    y = _pod("y-2", 500, "y", near="x")
    result = _solve([x, y])
    assert [u for u, _ in result.unschedulable] == ["x-1", "y-2"]
    assert result.new_nodeclaims == ()


def test_the_reason_is_the_last_failures_in_the_order_pods_first_failed():
    # The NodePool's only type has 2 CPU. web (1.5 CPU) fails first for want of a cache pod
    # anywhere; retried once the cache pod (1 CPU) is placed, it fails for want of a node
    # of its own with the cache pod (no room on that NodeClaim, and a new one is another
    # host). Karpenter keeps the last error (``podErrors``).
    web = _pod("web-1", 1500, "web", near="cache")
    cache = _pod("cache-2", 1000, "cache")
    lonely = _pod("lone-3", 1200, "lone", near="nobody")
    result = _solve([web, cache, lonely], pool=_pool(2000))
    assert [u for u, _ in result.unschedulable] == ["web-1", "lone-3"]
    why = dict(result.unschedulable)
    assert "leave no allowed domain" in why["web-1"]
    assert "no matching pod runs anywhere" not in why["web-1"]
    assert "no matching pod runs anywhere" in why["lone-3"]


def test_a_retried_pod_has_its_preferences_in_force_again():
    # web prefers zone b. Its first try relaxes that preference and still fails (no cache
    # pod yet); retried after cache is placed (on a NodeClaim of undecided zone) it is tried
    # with the preference again (Karpenter relaxes a copy, ``trySchedule``), so the
    # NodeClaim is pinned to zone b. Tried relaxed, it would have left the zone open.
    prefer_b = Requirements([Requirement.in_(labels.ZONE, "us-east-1b")])
    web = _pod("web-1", 2000, "web", near="cache", preferred_affinity=((10, prefer_b),))
    cache = _pod("cache-2", 500, "cache")
    result = _solve([web, cache])
    (claim,) = result.new_nodeclaims
    assert claim.pods == ("cache-2", "web-1")
    zone = claim.requirements.get(labels.ZONE)
    assert zone is not None and set(zone.values) == {"us-east-1b"}


def test_kube_scheduler_mode_tries_each_pod_once():
    web = _pod("web-1", 2000, "web", near="cache")
    cache = replace(_pod("cache-2", 500, "cache"), order=9)
    node = make_existing_node("n1", cpu_m=4000)
    result = _solve([web, cache], mode="kube-scheduler", existing=[node])
    assert [u for u, _ in result.unschedulable] == ["web-1"]
    assert result.existing_placements == (("cache-2", "n1"),)
