"""Run cases on the live stack (the real Cluster Autoscaler, kwok provider, with
kube-scheduler) and through Joiner's Cluster Autoscaler baseline; compare.

Written equivalence (docs/fidelity-autoscaler.md):

* scale-up: the same number of nodes added to each node group in phase 1;
* the same number of nodes in each group when phase 1, and phase 2 if the case has one,
  is stable (so the same nodes removed by scale-down, counted per group);
* the same pods left pending at the end of each phase, counted per workload.

For a case in ``ca_cases.GROUP_TIES`` CA chooses between equal groups at random: the counts
are compared as a multiset over groups (the pattern, not which group).

"Stable" is: no node added or removed and no pod bound, deleted or made for ``QUIET_S``
seconds of wall time (longer than a scan, the unneeded time and the delay after a scale-up
together, with the harness's flags). Joiner's side runs in virtual time: phase 1 for
``ca_render.PHASE1_S``, phase 2 for ``ca_render.PHASE2_S`` more, each far past its timers.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ca_render as render
import httpx2 as httpx
from ca_casekit import CASE_LABEL, Case, Obj, group_name, namespace
from ca_cases import GROUP_TIES, PLACEMENT_RACES
from lightkube import Client, KubeConfig
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Namespace, Node, Pod

from joiner.sim.baseline import CLUSTER_AUTOSCALER
from joiner.sim.nodes import BootModel
from joiner.sim.scenario import load_scenario

QUIET_S = 30.0
#: Joiner's node boot in the harness: launch to Ready, the same for every node.
BOOT_S = 2.0
TIMEOUT_S = 300.0
KWOK_GROUP = "cluster-autoscaler.kwok.nodegroup/name"


@dataclass
class Side:
    """What one side did for a case: per phase, nodes per group and pods left pending per
    workload; nodes added per group in phase 1."""

    added: Counter[str] = field(default_factory=Counter)
    nodes: list[Counter[str]] = field(default_factory=list)
    pending: list[Counter[str]] = field(default_factory=list)
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "nodesAdded": dict(sorted(self.added.items())),
            "phases": [
                {"nodes": dict(sorted(n.items())), "pending": dict(sorted(p.items()))}
                for n, p in zip(self.nodes, self.pending, strict=True)
            ],
        }
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class Result:
    """One case's outcome."""

    case: Case
    autoscaler: Side
    joiner: Side
    differences: list[str]
    seconds: float

    @property
    def agree(self) -> bool:
        return not self.differences


def _short(case: Case, counts: Counter[str]) -> dict[str, int]:
    prefix = f"{case.id}-"
    return {k.removeprefix(prefix): v for k, v in sorted(counts.items()) if v}


def _same(case: Case, a: Counter[str], b: Counter[str]) -> bool:
    a, b = +a, +b  # drop zero counts
    if case.id in GROUP_TIES:
        return sorted(a.values()) == sorted(b.values())
    return a == b


def compare(case: Case, ca: Side, j: Side) -> list[str]:
    """The written equivalence (module docstring); what differs, empty if nothing."""
    if ca.error or j.error:
        return [f"error: cluster-autoscaler={ca.error!r} joiner={j.error!r}"]
    diffs: list[str] = []

    def differ(what: str, a: Counter[str], b: Counter[str]) -> None:
        diffs.append(f"{what}: cluster-autoscaler {_short(case, a)} joiner {_short(case, b)}")

    if not _same(case, ca.added, j.added):
        differ("nodes added", ca.added, j.added)
    for i, (cn, jn, cp, jp) in enumerate(
        zip(ca.nodes, j.nodes, ca.pending, j.pending, strict=True)
    ):
        if not _same(case, cn, jn) and case.id not in PLACEMENT_RACES:
            differ(f"phase {i + 1} nodes", cn, jn)
        if +cp != +jp:
            diffs.append(
                f"phase {i + 1} pending: cluster-autoscaler {dict(+cp)} joiner {dict(+jp)}"
            )
    return diffs


def batches(items: list[Case], size: int) -> list[list[Case]]:
    """Cases grouped by their flags (``Case.config_key``), at most ``size`` a batch, in
    corpus order of each group's first case."""
    groups: dict[str, list[Case]] = {}
    for c in items:
        groups.setdefault(c.config_key(), []).append(c)
    return [g[i : i + size] for g in groups.values() for i in range(0, len(g), size)]


# -- Joiner's side ---------------------------------------------------------------------


def _joiner_phase(
    case: Case, workdir: Path, phases: int
) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """Run the case's Scenario through ``phases``; (added, nodes, pending) at its end."""
    from joiner.operator.wiring import SimulationRuntime

    path = render.scenario(case, workdir / f"{case.id}-phase{phases}", phases=phases)
    runtime = SimulationRuntime(load_scenario(path), policy=CLUSTER_AUTOSCALER)
    # kwok's nodes are Ready a moment after Cluster Autoscaler creates them, all of a
    # scale-up together; so are Joiner's here (a Scenario's own boot model is AWS's).
    runtime.kubelet.boot = BootModel(
        ready_min_s=BOOT_S, ready_max_s=BOOT_S, registration_lead_s=1.0
    )
    result = runtime.run()
    groups = {group_name(case, g) for g in case.groups}
    added: Counter[str] = Counter()
    nodes: Counter[str] = Counter()
    for name, claim in result.state.nodeclaims.items():
        group = name.rsplit("-", 1)[0]
        if group not in groups or claim.instance is None:
            continue
        added[group] += 1
        if claim.deleted_at_s is None:
            nodes[group] += 1
    pending: Counter[str] = Counter(
        dict(p.template.labels).get("app", p.name) for p in result.state.pending_pods()
    )
    return added, nodes, pending


def joiner_side(case: Case, workdir: Path) -> Side:
    """Joiner's baseline on the case: phase 1, then (for scale-down cases) phases 1 and 2."""
    side = Side()
    try:
        added, nodes, pending = _joiner_phase(case, workdir, 1)
        side.added, side.nodes, side.pending = added, [nodes], [pending]
        if case.scale_down:
            _, nodes2, pending2 = _joiner_phase(case, workdir, 2)
            side.nodes.append(nodes2)
            side.pending.append(pending2)
    except Exception as exc:  # reported as the case's error, with its type
        logging.exception("joiner side of %s", case.id)
        side.error = f"{type(exc).__name__}: {exc}"
    return side


def templates(cases: list[Case], workdir: Path) -> list[Obj]:
    """The kwok template Nodes for every group of ``cases``, from Joiner's resolved groups
    (the same instance types, labels, taints and allocatable Joiner's baseline packs onto)."""
    from joiner.operator.wiring import SimulationRuntime

    out = []
    for case in cases:
        path = render.scenario(case, workdir / f"{case.id}-templates", phases=1)
        runtime = SimulationRuntime(load_scenario(path), policy=CLUSTER_AUTOSCALER)
        assert runtime.autoscaler is not None
        out += [render.kwok_template(case, g) for g in runtime.autoscaler.groups]
    return out


# -- the stack's side --------------------------------------------------------------------


class Cluster:
    """The admin client and the reads and writes the harness needs."""

    def __init__(self, kubeconfig: Path) -> None:
        self.client = Client(
            KubeConfig.from_file(kubeconfig), field_manager="ca-diff", timeout=httpx.Timeout(120.0)
        )

    def apply(self, docs: list[Obj]) -> None:
        for doc in docs:
            self.client.apply(from_dict(doc), force=True)

    def put_configmap(self, ns: str, name: str, data: dict[str, str]) -> None:
        self.apply(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": ns},
                    "data": data,
                },
            ]
        )

    def group_nodes(self) -> dict[str, str]:
        """Node name -> its kwok node group, for every node the provider made."""
        out = {}
        for n in self.client.list(Node):
            group = (n.metadata.annotations or {}).get(KWOK_GROUP)
            if group:
                out[n.metadata.name] = group
        return out

    def lift_registration(self, cases: list[Case]) -> int:
        """Remove ``ca_render.REGISTRATION_TAINT`` from each node of ``cases`` whose case's
        DaemonSet pods are all bound to it. Returns how many nodes were updated."""
        by_case = {c.id: c for c in cases}
        bound = {
            (p["spec"].get("nodeName"), p["metadata"]["labels"].get("app"))
            for p in self.case_pods(cases)
        }
        done = 0
        for n in self.client.list(Node):
            taints = n.spec.taints or []
            case = by_case.get((n.metadata.labels or {}).get(CASE_LABEL, ""))
            if case is None or not any(t.key == render.REGISTRATION_TAINT for t in taints):
                continue
            daemons = [w.name for w in case.workloads if w.kind == "DaemonSet"]
            if any((n.metadata.name, d) not in bound for d in daemons):
                continue
            n.spec.taints = [t for t in taints if t.key != render.REGISTRATION_TAINT]
            try:
                self.client.replace(n)
            except ApiError as exc:
                if exc.status.code not in (404, 409):  # gone, or changed: the next poll
                    raise
            done += 1
        return done

    def case_pods(self, cases: list[Case]) -> list[Obj]:
        """The live pods of ``cases`` (their namespaces and kube-system), as dicts."""
        ids = {c.id for c in cases}
        out = []
        for ns in sorted({namespace(c) for c in cases} | {"kube-system"}):
            for p in self.client.list(Pod, namespace=ns):
                labels = p.metadata.labels or {}
                if labels.get(CASE_LABEL) in ids and p.metadata.deletionTimestamp is None:
                    out.append(p.to_dict())
        return out

    def wipe(self, cases: list[Case], timeout_s: float = 120.0) -> None:
        """Delete the cases' namespaces, their kube-system objects and their nodes; wait
        until they are gone.

        Raises:
            TimeoutError: something was left after ``timeout_s``.
        """
        for c in cases:
            try:
                self.client.delete(Namespace, namespace(c))
            except ApiError as exc:
                if exc.status.code != 404:
                    raise
        from lightkube.resources.apps_v1 import Deployment

        ids = {c.id for c in cases}
        for d in self.client.list(Deployment, namespace="kube-system"):
            if (d.metadata.labels or {}).get(CASE_LABEL) in ids:
                self.client.delete(Deployment, d.metadata.name, namespace="kube-system")
        mine = {group_name(c, g) for c in cases for g in c.groups}
        for name, group in self.group_nodes().items():
            if group in mine:
                self.client.delete(Node, name)
        spaces = {namespace(c) for c in cases}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            left = [n for n in self.client.list(Namespace) if n.metadata.name in spaces]
            nodes = [n for n, g in self.group_nodes().items() if g in mine]
            if not left and not nodes and not self.case_pods(cases):
                return
            time.sleep(0.5)
        raise TimeoutError(f"the cases' objects were not gone after {timeout_s:.0f} s")


def _signature(cluster: Cluster, cases: list[Case]) -> tuple[Any, ...]:
    """The cases' nodes (name, group) and pods (namespace, name, node): other batches'
    nodes and pods change beside them and are no part of it."""
    mine = {group_name(c, g) for c in cases for g in c.groups}
    nodes = {n: g for n, g in cluster.group_nodes().items() if g in mine}
    pods = tuple(
        sorted(
            (p["metadata"]["namespace"], p["metadata"]["name"], p["spec"].get("nodeName") or "")
            for p in cluster.case_pods(cases)
        )
    )
    return (tuple(sorted(nodes.items())), pods)


@dataclass
class Settled:
    """How a phase settled on the stack: seconds to stable, and from the phase's change to
    the first node added and the first node removed (None: none was)."""

    seconds: float
    first_added_s: float | None = None
    first_removed_s: float | None = None


def settle(
    cluster: Cluster, cases: list[Case], seen: dict[str, str], quiet_s: float = QUIET_S
) -> Settled:
    """Wait until nothing changed for ``quiet_s``; every node seen meanwhile is added to
    ``seen`` (name -> group).

    Raises:
        TimeoutError: not stable within ``TIMEOUT_S``.
    """
    t0 = time.monotonic()
    before = {n for n, _ in _signature(cluster, cases)[0]}
    out = Settled(0.0)
    last = None
    since = t0
    while True:
        if any(w.kind == "DaemonSet" for c in cases for w in c.workloads):
            cluster.lift_registration(cases)
        sig = _signature(cluster, cases)
        now = time.monotonic()
        names = {n for n, _ in sig[0]}
        if out.first_added_s is None and names - before:
            out.first_added_s = now - t0
        if out.first_removed_s is None and before - names:
            out.first_removed_s = now - t0
        seen.update(dict(sig[0]))
        if sig != last:
            last, since = sig, now
        elif now - since >= quiet_s:
            out.seconds = now - t0
            return out
        if now - t0 > TIMEOUT_S:
            raise TimeoutError(f"not stable after {TIMEOUT_S:.0f} s")
        time.sleep(0.5)


def apply_phase(cluster: Cluster, cases: list[Case], phase: int, timeout_s: float = 90.0) -> None:
    """Apply the cases' objects of ``phase`` and wait until the cluster has made them:
    every Deployment at its replicas (pods made or gone) and every pod of the cases bound
    or found unschedulable by kube-scheduler. The harness holds Cluster Autoscaler still
    meanwhile (not started, or paused), so its next loop sees the whole change at once,
    as Joiner's simulation makes it at one instant: the ReplicaSet controller makes a
    Deployment's pods one by one, and a loop that saw only the first would scale up for
    them alone. Deployments (and the rest) go first, bare pods once the Deployments' pods
    exist, as a controller-run cluster gets them.

    Raises:
        TimeoutError: not made within ``timeout_s``.
    """
    docs = [d for c in cases for d in render.workloads(c, phase)]
    cluster.apply([d for d in docs if d["kind"] != "Pod"])
    deadline = time.monotonic() + timeout_s
    _wait(lambda: _deployments_done(cluster, docs), deadline, "Deployments at their replicas")
    cluster.apply([d for d in docs if d["kind"] == "Pod"])
    _wait(lambda: _pods_placed(cluster, cases), deadline, "pods bound or unschedulable")


def _wait(done: Any, deadline: float, what: str) -> None:
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done in time: {what}")
        time.sleep(0.2)


def _deployments_done(cluster: Cluster, docs: list[Obj]) -> bool:
    from lightkube.resources.apps_v1 import Deployment

    for d in docs:
        if d["kind"] != "Deployment":
            continue
        got = cluster.client.get(
            Deployment, d["metadata"]["name"], namespace=d["metadata"]["namespace"]
        )
        status = got.status
        if status is None or (status.replicas or 0) != d["spec"]["replicas"]:
            return False
    return True


def _pods_placed(cluster: Cluster, cases: list[Case]) -> bool:
    for p in cluster.case_pods(cases):
        if p["spec"].get("nodeName"):
            continue
        conditions = (p.get("status") or {}).get("conditions") or []
        if not any(
            c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions
        ):
            return False
    return True


def observe(cluster: Cluster, case: Case) -> tuple[Counter[str], Counter[str]]:
    """(nodes per group of ``case``, pending pods per workload of ``case``) now."""
    groups = {group_name(case, g) for g in case.groups}
    nodes = Counter(g for g in cluster.group_nodes().values() if g in groups)
    pending: Counter[str] = Counter()
    for p in cluster.case_pods([case]):
        if (p["metadata"].get("labels") or {}).get(CASE_LABEL) != case.id:
            continue
        if not p["spec"].get("nodeName"):
            pending[p["metadata"]["labels"]["app"]] += 1
    return nodes, pending


def added_per_case(case: Case, seen: dict[str, str]) -> Counter[str]:
    groups = {group_name(case, g) for g in case.groups}
    return Counter(g for g in seen.values() if g in groups)
