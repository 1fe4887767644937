"""The simulation's kube-scheduler holds a nominated pod's room from the pods of lower or
equal priority only (Kubernetes pkg/scheduler/framework/runtime/framework.go
``RunFilterPluginsWithNominatedPods``, ``addGENominatedPods``), as ``joiner plan`` does."""

from __future__ import annotations

from dataclasses import replace

from joiner.api import quantity
from joiner.sim.clock import SimClock
from joiner.sim.kube_scheduler import KubeScheduler
from joiner.state.cluster import ClusterState, Node, Pod
from joiner.testing.builders import make_pod_template

CPU4 = {quantity.CPU: 4000, quantity.MEMORY: 16 * quantity.GIB, quantity.PODS: 110}


def _pod(name: str, priority: int, cpu_m: int, order: int, nominated: str | None = None) -> Pod:
    template = replace(make_pod_template(cpu_m), labels=(("app", name),), priority=priority)
    return Pod(
        name,
        "default",
        name,
        template,
        f"default/{name}",
        0.0,
        order,
        nominated_node_name=nominated,
    )


def _bound_after_one_pass(new_priority: int) -> dict[str, str | None]:
    """An empty 4-vCPU node, a 2-vCPU pod of priority 1000 nominated to it, and a new 3-vCPU
    pod of ``new_priority``: each pod's node after one binding pass."""
    state = ClusterState()
    state.nodes["n"] = Node("n", None, {}, (), CPU4, CPU4, 0.0, ready=True)
    # the nominated pod's own room is taken by a 3-vCPU pod it waits to preempt
    state.pods["low"] = replace(_pod("low", 0, 3000, 0), node_name="n", bound_at_s=0.0)
    state.pods["waiting"] = _pod("waiting", 1000, 2000, 1, nominated="n")
    state.pods["new"] = _pod("new", new_priority, 1000, 2)
    clock = SimClock()
    KubeScheduler(state, clock).kick()
    clock.run_until(1.0)
    return {uid: p.node_name for uid, p in state.pods.items()}


def test_a_new_pod_of_higher_priority_takes_the_room_a_nominated_pod_waits_for() -> None:
    """kube-scheduler adds only the nominated pods of higher or equal priority to a node
    when it filters a pod: the 1-vCPU pod of priority 2000 fits beside the 3-vCPU pod.
    The simulation held the nominated pod's room from every pod and left it pending."""
    assert _bound_after_one_pass(2000)["new"] == "n"


def test_a_new_pod_of_lower_or_equal_priority_does_not() -> None:
    assert _bound_after_one_pass(1000)["new"] is None
    assert _bound_after_one_pass(0)["new"] is None
