"""kube-scheduler preemption in the simulation (``sim.preemption``; DefaultPreemption)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from joiner.api import quantity
from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.objects import PodDisruptionBudget, Source, Taint
from joiner.api.requirements import Requirements
from joiner.operator.wiring import SimulationRuntime
from joiner.sim import preemption
from joiner.sim.scenario import load_scenario
from joiner.state.cluster import ClusterState, Node, Pod
from joiner.testing.builders import make_pod_template
from tests.sim.step_scenario import CRONJOB, step_scenario

CPU4 = {quantity.CPU: 4000, quantity.MEMORY: 16 * quantity.GIB, quantity.PODS: 110}


def _tmpl(app: str, priority: int, cpu_m: int = 1000):
    return replace(make_pod_template(cpu_m), labels=(("app", app),), priority=priority)


def _cluster(victims: dict[str, tuple[str, int, float]]) -> ClusterState:
    """One full 4-vCPU node per entry: a 3-vCPU pod of priority 5000 and a 1-vCPU pod
    ``(app, priority, started_at_s)``."""
    state = ClusterState()
    for i, (node, (app, prio, started)) in enumerate(sorted(victims.items())):
        state.nodes[node] = Node(node, None, {}, (), CPU4, CPU4, 0.0, ready=True)
        state.pods[f"big-{node}"] = Pod(
            f"big-{node}",
            "default",
            f"big-{node}",
            _tmpl("big", 5000, 3000),
            "x",
            0.0,
            2 * i,
            node_name=node,
            bound_at_s=0.0,
        )
        state.pods[f"{app}-{node}"] = Pod(
            f"{app}-{node}",
            "default",
            f"{app}-{node}",
            _tmpl(app, prio),
            f"default/{app}",
            started,
            2 * i + 1,
            node_name=node,
            bound_at_s=started,
        )
    return state


def _guard(state: ClusterState) -> None:
    """A PodDisruptionBudget that lets no ``app=guarded`` pod go."""
    state.pdbs = [
        PodDisruptionBudget(
            "default",
            "guarded",
            Requirements.from_labels({"app": "guarded"}),
            Source("f", "PodDisruptionBudget", "guarded"),
            min_available=1,
        )
    ]


def _preemptor(state: ClusterState, priority: int = 1000, policy: str | None = None) -> Pod:
    t = replace(_tmpl("web", priority), preemption_policy=policy)
    pod = Pod("web-0", "default", "web-0", t, "default/web", 100.0, 99)
    state.pods[pod.uid] = pod
    return pod


def test_candidates_pick_the_lowest_priority_victim():
    state = _cluster({"a": ("spare", -5, 10.0), "b": ("spare", -10, 10.0)})
    found = preemption.find(state, _preemptor(state))
    assert found is not None and found.node == "b"
    assert [v.uid for v in found.victims] == ["spare-b"]  # the 3-vCPU pod is not lower


def test_a_pdb_protected_victim_is_avoided_where_another_candidate_exists():
    # Without budgets the priority -10 pod on node b would be the victim (as above).
    state = _cluster({"a": ("spare", -5, 10.0), "b": ("guarded", -10, 10.0)})
    _guard(state)
    found = preemption.find(state, _preemptor(state))
    assert found is not None and (found.node, found.pdb_violations) == ("a", 0)
    # With no other candidate, kube-scheduler preempts it anyway (counted as a violation).
    del state.nodes["a"]
    state.pods = {k: p for k, p in state.pods.items() if p.node_name != "a"}
    found = preemption.find(state, state.pods["web-0"])
    assert found is not None and (found.node, found.pdb_violations) == ("b", 1)


def test_pdb_violating_pods_are_reprieved_first():
    """``SelectVictimsOnNode`` puts PDB-violating pods back first: with two lower pods on
    one node and room needed for one, the unprotected one goes."""
    state = _cluster({"b": ("guarded", -10, 10.0)})
    state.pods["big-b"] = replace(state.pods["big-b"], template=_tmpl("big", -20, 3000))
    _guard(state)
    found = preemption.find(state, _preemptor(state))
    assert found is not None and [v.uid for v in found.victims] == ["big-b"]
    assert found.pdb_violations == 0


def test_ties_go_to_the_latest_started_victims_and_never_to_equal_priority():
    state = _cluster({"a": ("spare", -5, 10.0), "b": ("spare", -5, 50.0)})
    found = preemption.find(state, _preemptor(state))
    assert found is not None and found.node == "b"
    assert preemption.find(state, _preemptor(state, priority=-5)) is None
    assert preemption.find(state, _preemptor(state, policy="Never")) is None


@pytest.mark.parametrize(
    ("nodes", "wanted"), [(1, 1), (60, 60), (100, 100), (999, 100), (1000, 100), (2000, 200)]
)
def test_the_dry_run_looks_for_ten_percent_of_the_nodes_but_at_least_100(nodes, wanted):
    assert preemption.num_candidates(nodes) == wanted


def _many(count: int, better: str, app: str = "spare") -> ClusterState:
    """``count`` nodes ``n000``... each with a priority -5 victim; ``better`` (last by name)
    has a priority -10 victim, the best candidate of all."""
    nodes = {f"n{i:03d}": (app, -5, 10.0) for i in range(count)}
    nodes[better] = ("spare", -10, 10.0)
    return _cluster(nodes)


def test_the_dry_run_stops_after_100_candidates_from_the_first_node_by_name():
    # 150 nodes: the best candidate is the 151st by name, past the 100 the dry run examines.
    state = _many(150, "z-best")
    found = preemption.find(state, _preemptor(state))
    assert found is not None and found.node == "n000"
    # With 100 nodes every node is examined, and the best one is found.
    state = _many(99, "z-best")
    found = preemption.find(state, _preemptor(state))
    assert found is not None and found.node == "z-best"


def test_the_dry_run_goes_on_until_a_candidate_without_pdb_violations():
    # Every victim but the last node's is guarded: 150 violating candidates come first.
    state = _many(150, "z-free", app="guarded")
    _guard(state)
    state.pdbs = [replace(state.pdbs[0], min_available=None, max_unavailable=0)]
    found = preemption.find(state, _preemptor(state))
    assert found is not None and (found.node, found.pdb_violations) == ("z-free", 0)


def test_filter_verdicts_reused_across_calls_give_the_same_answers():
    """A memo passed to several calls (as ``joiner plan`` does) changes no answer, on a node
    whose taint refuses the pod too."""
    state = _cluster({"a": ("spare", -5, 10.0), "b": ("spare", -10, 10.0)})
    state.nodes["b"].taints = (Taint("k", "v", "NoSchedule"),)
    memo: preemption.Verdicts = {}
    for _ in range(2):
        found = preemption.find(state, _preemptor(state), memo)
        assert found is not None and found.node == "a"
    assert memo  # filled by the first call


def test_victims_are_reprieved_most_important_first():
    state = _cluster({"a": ("spare", -5, 10.0)})
    state.pods["big-a"] = replace(state.pods["big-a"], template=_tmpl("low", -20, 3000))
    # Both pods are lower and either alone makes room: the more important one (-5) is put
    # back first, so the -20 pod is the only victim, though it is the bigger one.
    found = preemption.find(state, _preemptor(state))
    assert found is not None and [v.uid for v in found.victims] == ["big-a"]
    # A preemptor needing 4 vCPU takes both.
    big = _preemptor(state)
    big.template = replace(big.template, requests={**big.template.requests, quantity.CPU: 4000})
    found = preemption.find(state, big)
    assert found is not None and [v.uid for v in found.victims] == ["spare-a", "big-a"]


PLACEHOLDERS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: overprovisioning}
value: -1
description: placeholders real pods preempt
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: placeholder, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: placeholder}}
  template:
    metadata: {labels: {app: placeholder}}
    spec:
      priorityClassName: overprovisioning
      terminationGracePeriodSeconds: 0
      nodeSelector: {type: my-provisioner}
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.10
          resources: {requests: {cpu: "1", memory: 1536Mi}}
"""


def _scenario(tmp_path: Path) -> Path:
    return step_scenario(tmp_path, "placeholder.yaml", PLACEHOLDERS)


def test_real_pods_preempt_placeholders_which_go_pending_and_cause_a_launch(tmp_path):
    rt = SimulationRuntime(load_scenario(_scenario(tmp_path)))
    summary = rt.run().summary
    pods = list(rt.state.pods.values())
    late_web = [p for p in pods if p.owner == "default/web" and p.created_at_s >= 600]
    assert len(late_web) == 3
    # Each binds at once, in the room its placeholder leaves (grace period 0).
    assert all(p.bound_at_s == p.created_at_s for p in late_web)
    victims = [p for p in pods if p.preempted_by is not None]
    # The free room took two of them; the third preempted a placeholder.
    assert len(victims) == 1 and victims[0].preempted_by in {p.uid for p in late_web}
    assert victims[0].owner == "default/placeholder" and victims[0].deleted_at_s == 600.0
    # Its replacement was pending, caused a launch after minute 10, and runs there.
    (again,) = [p for p in pods if p.owner == "default/placeholder" and p.created_at_s >= 600]
    assert again.replaces == victims[0].uid
    (launched,) = [c for c in rt.state.nodeclaims.values() if c.created_at_s >= 600]
    assert again.uid in launched.nominated and again.node_name == launched.node_name
    assert again.bound_at_s is not None and again.bound_at_s > 630
    kinds = [e["kind"] for e in summary["timeline"]]
    assert kinds.count("preempted") == 1
    assert summary["pods"]["pending"] == 0


def test_priority_classes_are_resolved_by_admission():
    m = load_text(
        PLACEHOLDERS
        + "---\n"
        + PLACEHOLDERS.split("---\n")[1]
        .replace("name: placeholder,", "name: plain,")
        .replace("priorityClassName: overprovisioning", "priority: 0")
    )
    assert [w.template.priority for w in m.workloads] == [-1, 0]
    default = PLACEHOLDERS.replace("value: -1", "value: 5\nglobalDefault: true").replace(
        "      priorityClassName: overprovisioning\n", ""
    )
    (w,) = load_text(default).workloads
    assert (w.template.priority, w.template.preemption_policy) == (5, "PreemptLowerPriority")
    with pytest.raises(InputError, match="no PriorityClass named 'overprovisioning'"):
        load_text(PLACEHOLDERS.split("---\n")[1])
    with pytest.raises(InputError, match="only one PriorityClass may be globalDefault"):
        load_text(default + "---\n" + default.split("---\n")[0].replace("overprovisioning", "b"))
    with pytest.raises(InputError, match="reserved"):
        load_text(PLACEHOLDERS.replace("name: overprovisioning}", "name: system-x}"))


def _indent(text: str, by: int) -> str:
    return "".join(" " * by + line for line in text.splitlines(keepends=True))


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        # The class's value is -1; without a class (and no default) admission computes 0.
        ("      priorityClassName: overprovisioning\n      priority: 7\n", "priority", "-1"),
        ("      priority: 7\n", "priority", "computes (no PriorityClass)"),
        (
            "      priorityClassName: overprovisioning\n      preemptionPolicy: Never\n",
            "preemptionPolicy",
            "PreemptLowerPriority it computes (PriorityClass 'overprovisioning')",
        ),
        ("      preemptionPolicy: Never\n", "preemptionPolicy", "PreemptLowerPriority"),
        (
            "      priorityClassName: system-node-critical\n      priority: 5\n",
            "priority",
            "2000001000",
        ),
    ],
)
def test_a_template_priority_admission_would_reject_is_an_input_error(edit, field, message):
    """Regression: a template's own spec.priority or spec.preemptionPolicy won over its class
    (or was taken as admitted); Priority admission (admitPod) forbids every pod such a
    Deployment, StatefulSet, Job, CronJob or DaemonSet creates."""
    klass, deployment = PLACEHOLDERS.split("---\n")
    text = klass + "---\n" + deployment.replace("      priorityClassName: overprovisioning\n", edit)
    with pytest.raises(InputError) as err:
        load_text(text, "app.yaml")
    assert err.value.file == "app.yaml" and err.value.obj == "Deployment/default/placeholder"
    assert err.value.field == f"spec.template.spec.{field}"
    assert "must not be set" in str(err.value) and message in str(err.value)
    # The same check on a CronJob names its own field path.
    cron = CRONJOB.replace(
        "          restartPolicy: Never\n", _indent(edit, 4) + "          restartPolicy: Never\n"
    )
    with pytest.raises(InputError) as err:
        load_text(klass + "---\n" + cron)
    assert err.value.field == f"spec.jobTemplate.spec.template.spec.{field}"


def test_a_template_may_repeat_what_admission_computes_and_a_dump_pod_keeps_its_own():
    klass, deployment = PLACEHOLDERS.split("---\n")
    same = deployment.replace(
        "      priorityClassName: overprovisioning\n",
        "      priorityClassName: overprovisioning\n      priority: -1\n"
        "      preemptionPolicy: PreemptLowerPriority\n",
    )
    (w,) = load_text(klass + "---\n" + same).workloads
    assert (w.template.priority, w.template.preemption_policy) == (-1, "PreemptLowerPriority")
    # A dump's Pod was admitted when it was created (its class may have been recreated
    # since with another value): it keeps its own priority and policy.
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
        "spec:\n  priorityClassName: overprovisioning\n  priority: 12\n"
        "  preemptionPolicy: Never\n  containers: [{name: c, image: i}]\n"
    )
    (p,) = load_text(klass + "---\n" + pod).pods
    assert (p.template.priority, p.template.preemption_policy) == (12, "Never")


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ("      priority: '0'\n", "priority"),
        ("      priority: true\n", "priority"),
        ("      priority: 4294967296\n", "priority"),
        ("      priorityClassName: [a]\n", "priorityClassName"),
    ],
)
def test_a_priority_of_the_wrong_type_is_an_input_error(edit, field):
    """Regression: priority '0' (a string) was converted, as the API server does not."""
    deployment = PLACEHOLDERS.split("---\n")[1]
    text = deployment.replace("      priorityClassName: overprovisioning\n", edit)
    with pytest.raises(InputError) as err:
        load_text(text, "app.yaml")
    assert err.value.field == f"spec.template.spec.{field}"


def test_a_live_clusters_builtin_classes_load_and_duplicates_do_not():
    """Regression (clean-clone CI): every API server lists system-cluster-critical and
    system-node-critical, so `joiner plan --kubeconfig` and the controller failed with
    "names starting with 'system-' are reserved"."""
    builtin = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
        "metadata: {name: system-node-critical}\nvalue: 2000001000\n---\n"
    )
    (w,) = load_text(builtin + PLACEHOLDERS).workloads
    assert w.template.priority == -1
    with pytest.raises(InputError, match="reserved"):  # not the built-in value: a user class
        load_text(builtin.replace("2000001000", "5") + PLACEHOLDERS)
    with pytest.raises(InputError, match="duplicate PriorityClass name"):
        load_text(PLACEHOLDERS.split("---\n")[0] + "---\n" + PLACEHOLDERS)


def test_the_preemptor_waits_for_its_victims_grace_period(tmp_path):
    path = _scenario(tmp_path)
    ph = path.parent / "placeholder.yaml"
    ph.write_text(
        ph.read_text()
        .replace(
            "          image: registry.k8s.io/pause:3.10\n",
            "          image: registry.k8s.io/pause:3.10\n"
            "          lifecycle: {preStop: {sleep: {seconds: 20}}}\n",
        )
        .replace("terminationGracePeriodSeconds: 0", "terminationGracePeriodSeconds: 30")
    )
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    (victim,) = [p for p in rt.state.pods.values() if p.preempted_by is not None]
    preemptor = rt.state.pods[victim.preempted_by]
    assert victim.deleted_at_s == 620.0  # its preStop hook ran within the grace period
    assert preemptor.bound_at_s == 620.0 and preemptor.node_name == victim.node_name
    assert preemptor.nominated_node_name is None


def test_peak_windows_report_the_pods_created_in_them(tmp_path):
    """``spec.report.windows``: minute 10 to 15 holds the three late web pods (they bind at
    once); placeholders (negative priority) are left out; a window in the night is empty."""
    path = _scenario(tmp_path)
    text = path.read_text().replace(
        "  workloads:\n",
        "  report:\n    windows:\n"
        "      - {name: rush, start: '00:10', duration: 5m}\n"
        "      - {name: night, start: '23:00', duration: 30m}\n"
        "  workloads:\n",
    )
    path.write_text(text)
    summary = SimulationRuntime(load_scenario(path)).run().summary
    assert summary["windows"]["rush"] == {
        "pods": 3,
        "pendingSeconds": {"p50": 0.0, "p95": 0.0, "max": 0.0},
    }
    assert summary["windows"]["night"]["pods"] == 0
    # Regression (breaker): a window the run never reaches reported a perfect 0 s silently.
    warned = [w for w in summary["warnings"] if "never falls inside the run" in w]
    assert len(warned) == 1 and "spec.report.windows[1]" in warned[0] and "'night'" in warned[0]
    path.write_text(text.replace("'00:10'", "'25:00'"))
    with pytest.raises(InputError, match=r"spec.report.windows\[0\].start"):
        load_scenario(path)
