"""The differential corpus: each case once, in a neutral form both sides are rendered from.

A case names its NodePools (a NodePool ``spec`` without ``nodeClassRef``, which rendering
fills in), the pods that exist before (``before``: applied first and left to Karpenter and
kube-scheduler until stable, they make the existing nodes), the pods of the batch under test
(``pods``), DaemonSets and PDBs. A disruption case (``kind="disrupt"``) then applies
``change`` (pods deleted, NodePool fields merged in) and compares the disruption that
follows. Only well-known labels are used; prices never tie (catalog.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
CT = "karpenter.sh/capacity-type"
IT = "node.kubernetes.io/instance-type"
HOST = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"


@dataclass
class Change:
    """What a disruption case changes once the ``before`` cluster is stable."""

    delete_pods: tuple[str, ...] = ()
    #: merged into the named NodePool's spec (dicts merge, other values replace)
    pool_patch: dict[str, Obj] = field(default_factory=dict)


@dataclass
class Case:
    """One differential case (see the module docstring)."""

    id: str
    features: tuple[str, ...]
    pools: dict[str, Obj]
    pods: list[Obj] = field(default_factory=list)
    before: list[Obj] = field(default_factory=list)
    daemonsets: list[Obj] = field(default_factory=list)
    pdbs: list[Obj] = field(default_factory=list)
    kind: str = "provision"
    change: Change | None = None
    #: runs alone: it could see other cases' nodes (nodeAffinityPolicy Ignore, ...)
    alone: bool = False
    #: why the zones are a tie Karpenter breaks at random: then only the zone pattern (how
    #: many NodeClaims per zone, not which zone) is compared
    zone_ties: str = ""
    note: str = ""


def req(key: str, op: str, *values: str, min_values: int | None = None) -> Obj:
    r: Obj = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    if min_values is not None:
        r["minValues"] = min_values
    return r


def pool(
    *requirements: Obj,
    taints: list[Obj] | None = None,
    labels: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    weight: int | None = None,
    policy: str = "WhenEmptyOrUnderutilized",
    after: str = "Never",
    budgets: list[Obj] | None = None,
) -> Obj:
    """A NodePool spec; linux/amd64 unless the requirements say otherwise."""
    keys = {r["key"] for r in requirements}
    reqs = list(requirements)
    if ARCH not in keys:
        reqs.append(req(ARCH, "In", "amd64"))
    spec: Obj = {
        "template": {
            "metadata": {"labels": dict(labels or {})},
            "spec": {"requirements": reqs, "taints": list(taints or []), "expireAfter": "Never"},
        },
        "disruption": {
            "consolidationPolicy": policy,
            "consolidateAfter": after,
            "budgets": budgets or [{"nodes": "100%"}],
        },
    }
    if limits:
        spec["limits"] = limits
    if weight is not None:
        spec["weight"] = weight
    return spec


def pod(
    name: str,
    cpu: str = "500m",
    memory: str = "256Mi",
    *,
    labels: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    limits_only: bool = False,
    **spec: Any,
) -> Obj:
    """A bare Pod with one container; ``spec`` keys are merged into ``spec``."""
    resources: Obj = {"cpu": cpu, "memory": memory, **(extra or {})}
    container: Obj = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"limits": resources} if limits_only else {"requests": resources},
    }
    if extra and not limits_only:  # extended resources cannot be overcommitted
        container["resources"]["limits"] = dict(extra)
    ports = spec.pop("host_ports", None)
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    body: Obj = {"containers": [container], **spec}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": dict(labels or {"app": name.rstrip("0123456789-") or name}),
            "annotations": dict(annotations or {}),
        },
        "spec": body,
    }


def deployment(name: str, replicas: int = 1, **kw: Any) -> Obj:
    """A Deployment of ``pod(name, **kw)``: its pods come back after an eviction, as a
    real workload's do (a bare Pod evicted by a drain is gone for good)."""
    template = pod(name, labels={"app": name}, **kw)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": template["metadata"], "spec": template["spec"]},
        },
    }


def pods(prefix: str, n: int, **kw: Any) -> list[Obj]:
    """``n`` identical pods ``<prefix>-0..n-1`` labelled ``app: <prefix>``."""
    kw.setdefault("labels", {"app": prefix})
    return [pod(f"{prefix}-{i}", **copy.deepcopy(kw)) for i in range(n)]


def spread(key: str, app: str, skew: int = 1, when: str = "DoNotSchedule", **kw: Any) -> Obj:
    c: Obj = {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}},
    }
    c.update(kw)
    return c


def affinity_term(key: str, app: str) -> Obj:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def node_affinity(*exprs: Obj) -> Obj:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
            }
        }
    }


def daemonset(name: str, cpu: str, memory: str = "128Mi", **spec: Any) -> Obj:
    template = pod(name, cpu, memory, labels={"ds": name}, **spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"ds": name}},
            "template": {"metadata": template["metadata"], "spec": template["spec"]},
        },
    }


def pdb(name: str, app: str, max_unavailable: int = 0) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
    }


TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]
DEFAULT = {"default": pool()}


def _provisioning() -> list[Case]:
    c: list[Case] = []
    add = c.append
    add(Case("basic-cpu", ("resources",), DEFAULT, pods("web", 3, cpu="1")))
    add(Case("many-small", ("resources",), DEFAULT, pods("small", 20, cpu="250m")))
    add(Case("memory-heavy", ("resources",), DEFAULT, pods("cache", 2, cpu="500m", memory="6Gi")))
    add(
        Case(
            "mixed-sizes",
            ("resources",),
            DEFAULT,
            [
                pod(f"mix-{i}", cpu, mem)
                for i, (cpu, mem) in enumerate(
                    [
                        ("1500m", "1Gi"),
                        ("700m", "3Gi"),
                        ("300m", "512Mi"),
                        ("2", "2Gi"),
                        ("100m", "6Gi"),
                    ]
                )
            ],
        )
    )
    add(Case("largest-type", ("resources",), DEFAULT, [pod("big", cpu="7", memory="20Gi")]))
    add(Case("too-big", ("resources",), DEFAULT, [pod("huge", cpu="16")]))
    add(Case("limits-only", ("resources",), DEFAULT, pods("lim", 2, cpu="1500m", limits_only=True)))
    add(
        Case(
            "extended-gpu",
            ("extended resources",),
            DEFAULT,
            [pod("train", cpu="1", extra={"nvidia.com/gpu": "1"}), *pods("cpu", 2)],
        )
    )
    add(
        Case(
            "pods-capacity",
            ("resources",),
            {"default": pool(req(IT, "In", "p-4x", "c-4x"))},
            pods("tiny", 6, cpu="100m", memory="64Mi"),
            note="p-4x allows 4 pods: the cheaper c-4x... is not cheaper; pod count decides",
        )
    )
    add(
        Case(
            "node-selector-type",
            ("nodeSelector",),
            DEFAULT,
            pods("pinned", 2, nodeSelector={IT: "m-4x"}),
        )
    )
    add(
        Case(
            "node-selector-arm",
            ("nodeSelector",),
            {"default": pool(req(ARCH, "In", "amd64", "arm64"))},
            pods("arm", 3, nodeSelector={ARCH: "arm64"}),
        )
    )
    add(
        Case(
            "affinity-zone-in",
            ("node affinity",),
            DEFAULT,
            pods("zb", 2, affinity=node_affinity(req(ZONE, "In", "test-zone-b"))),
        )
    )
    add(
        Case(
            "affinity-notin-spot",
            ("node affinity", "spot/on-demand"),
            DEFAULT,
            pods("od", 2, cpu="1", affinity=node_affinity(req(CT, "NotIn", "spot"))),
        )
    )
    add(
        Case(
            "affinity-preferred-zone",
            ("node affinity",),
            DEFAULT,
            pods(
                "pref",
                2,
                affinity={
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "preference": {
                                    "matchExpressions": [req(ZONE, "In", "test-zone-c")]
                                },
                            }
                        ]
                    }
                },
            ),
        )
    )
    add(
        Case(
            "affinity-gt-cpu",
            ("node affinity",),
            DEFAULT,
            pods("gt", 2, affinity=node_affinity(req("karpenter.kwok.sh/instance-cpu", "Gt", "3"))),
            note="a kwok label: both sides define it the same way",
        )
    )
    add(
        Case(
            "taint-tolerated",
            ("taints/tolerations",),
            {"batch": pool(taints=[TAINT])},
            [*pods("tol", 2, tolerations=TOLERATE), pod("intolerant")],
        )
    )
    add(
        Case(
            "taint-two-pools",
            ("taints/tolerations", "weights"),
            {
                "batch": pool(req(IT, "In", "c-2x"), taints=[TAINT]),
                "general": pool(req(IT, "In", "m-2x", "m-4x")),
            },
            [*pods("tol", 2, cpu="1", tolerations=TOLERATE), *pods("plain", 2, cpu="1200m")],
            note="sizes differ: Karpenter orders equal pods by creation time, then UID",
        )
    )
    add(
        Case(
            "spread-zone",
            ("topology spread",),
            DEFAULT,
            pods("sz", 3, topologySpreadConstraints=[spread(ZONE, "sz")]),
        )
    )
    add(
        Case(
            "spread-zone-skew2",
            ("topology spread",),
            DEFAULT,
            pods("sk", 5, topologySpreadConstraints=[spread(ZONE, "sk", skew=2)]),
        )
    )
    add(
        Case(
            "spread-hostname",
            ("topology spread",),
            DEFAULT,
            pods("sh", 4, topologySpreadConstraints=[spread(HOST, "sh")]),
        )
    )
    add(
        Case(
            "spread-capacity-type",
            ("topology spread", "spot/on-demand"),
            DEFAULT,
            pods("sc", 2, cpu="1", topologySpreadConstraints=[spread(CT, "sc")]),
        )
    )
    add(
        Case(
            "spread-min-domains",
            ("topology spread", "minDomains"),
            DEFAULT,
            pods(
                "md",
                3,
                affinity=node_affinity(req(ZONE, "In", "test-zone-a", "test-zone-b")),
                topologySpreadConstraints=[spread(ZONE, "md", minDomains=3)],
            ),
            note="two eligible zones < minDomains 3: the global minimum is 0, so one pod per "
            "zone and the third stays pending (without minDomains all three would run)",
        )
    )
    add(
        Case(
            "spread-affinity-honor",
            ("topology spread", "nodeAffinityPolicy"),
            DEFAULT,
            pods(
                "ah",
                4,
                affinity=node_affinity(req(ZONE, "In", "test-zone-a", "test-zone-b")),
                topologySpreadConstraints=[spread(ZONE, "ah")],
            ),
        )
    )
    add(
        Case(
            "spread-taints-honor",
            ("topology spread", "nodeTaintsPolicy"),
            {"tainted": pool(req(ZONE, "In", "test-zone-c"), taints=[TAINT]), **DEFAULT},
            pods(
                "th",
                3,
                topologySpreadConstraints=[spread(ZONE, "th", nodeTaintsPolicy="Honor")],
            ),
            alone=True,
        )
    )
    add(
        Case(
            "spread-match-label-keys",
            ("topology spread", "matchLabelKeys"),
            DEFAULT,
            [
                pod(
                    f"mlk-{v}-{i}",
                    labels={"app": "mlk", "version": v},
                    topologySpreadConstraints=[spread(ZONE, "mlk", matchLabelKeys=["version"])],
                )
                for v in ("v1", "v2")
                for i in range(2)
            ],
            note="matchLabelKeys splits the group: 2 NodeClaims (v1 and v2 pods share), not 3",
            zone_ties="each version's two pods take two of three empty zones: Karpenter's "
            "nextDomainTopologySpread picks among min-count domains in Go map order",
        )
    )
    add(
        Case(
            "spread-schedule-anyway",
            ("topology spread",),
            DEFAULT,
            pods("sa", 3, topologySpreadConstraints=[spread(ZONE, "sa", when="ScheduleAnyway")]),
        )
    )
    add(
        Case(
            "anti-affinity-hostname",
            ("pod anti-affinity",),
            DEFAULT,
            pods(
                "aa",
                3,
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            affinity_term(HOST, "aa")
                        ]
                    }
                },
            ),
        )
    )
    add(
        Case(
            "anti-affinity-zone",
            ("pod anti-affinity",),
            DEFAULT,
            pods(
                "az",
                4,
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            affinity_term(ZONE, "az")
                        ]
                    }
                },
            ),
        )
    )
    add(
        Case(
            "anti-affinity-preferred",
            ("pod anti-affinity",),
            DEFAULT,
            pods(
                "ap",
                2,
                affinity={
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 100, "podAffinityTerm": affinity_term(HOST, "ap")}
                        ]
                    }
                },
            ),
        )
    )
    add(
        Case(
            "affinity-hostname",
            ("pod affinity",),
            DEFAULT,
            [
                pod("leader", labels={"app": "leader"}),
                *pods(
                    "follower",
                    2,
                    affinity={
                        "podAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                affinity_term(HOST, "leader")
                            ]
                        }
                    },
                ),
            ],
        )
    )
    add(
        Case(
            "affinity-zone-existing",
            ("pod affinity", "existing nodes"),
            DEFAULT,
            pods(
                "near",
                2,
                cpu="1500m",
                affinity={
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            affinity_term(ZONE, "db")
                        ]
                    }
                },
            ),
            before=[pod("db", cpu="1", labels={"app": "db"}, nodeSelector={ZONE: "test-zone-b"})],
        )
    )
    add(Case("host-ports", ("hostPorts",), DEFAULT, pods("hp", 3, host_ports=[8080])))
    add(
        Case(
            "daemonset-overhead",
            ("DaemonSet overhead",),
            DEFAULT,
            pods("dso", 2, cpu="1400m"),
            daemonsets=[daemonset("agent", "500m")],
        )
    )
    add(
        Case(
            "daemonset-host-port",
            ("DaemonSet overhead", "hostPorts"),
            DEFAULT,
            pods("dsp", 2, cpu="200m", host_ports=[9100]),
            daemonsets=[daemonset("exporter", "100m", host_ports=[9100])],
        )
    )
    add(
        Case(
            "limits-cpu",
            ("limits",),
            {"default": pool(limits={"cpu": "4"})},
            pods("lc", 6, cpu="1"),
        )
    )
    add(
        Case(
            "weights",
            ("weights",),
            {
                "cheap": pool(req(IT, "In", "c-2x", "c-4x")),
                "preferred": pool(req(IT, "In", "m-2x", "m-4x"), weight=50),
            },
            pods("w", 2, cpu="1"),
        )
    )
    add(
        Case(
            "min-values",
            ("minValues",),
            {"default": pool(req(IT, "In", "c-2x", "c-4x", "m-2x", "m-4x", min_values=3))},
            pods("mv", 2, cpu="800m"),
        )
    )
    add(
        Case(
            "spot-only",
            ("spot/on-demand",),
            {"default": pool(req(CT, "In", "spot"))},
            pods("so", 2),
        )
    )
    add(
        Case(
            "on-demand-only",
            ("spot/on-demand",),
            {"default": pool(req(CT, "In", "on-demand"))},
            pods("odo", 2, cpu="1"),
        )
    )
    add(
        Case(
            "spot-od-mix",
            ("spot/on-demand", "nodeSelector"),
            DEFAULT,
            [*pods("sp", 2, cpu="1"), *pods("ond", 2, cpu="1", nodeSelector={CT: "on-demand"})],
        )
    )
    add(
        Case(
            "existing-fits",
            ("existing nodes", "resources"),
            DEFAULT,
            pods("late", 2, cpu="300m"),
            before=[pod("early", cpu="1200m")],
        )
    )
    add(
        Case(
            "existing-overflow",
            ("existing nodes", "resources"),
            DEFAULT,
            pods("more", 3, cpu="700m"),
            before=[pod("first", cpu="1200m")],
        )
    )
    add(
        Case(
            "pool-label-selector",
            ("nodeSelector",),
            {
                "team-a": pool(req(IT, "In", "c-2x"), labels={"team": "a"}),
                "team-b": pool(req(IT, "In", "m-2x"), labels={"team": "b"}),
            },
            pods("tb", 2, nodeSelector={"team": "b"}),
        )
    )
    add(
        Case(
            "pool-conflict",
            ("node affinity",),
            {"default": pool(req(IT, "In", "c-2x", "c-4x"))},
            pods("conf", 1, nodeSelector={IT: "m-2x"}),
        )
    )
    return c


def _disruption() -> list[Case]:
    """Pods that must survive a drain are Deployments (an evicted bare Pod is gone, and
    Karpenter would then empty its replacement); the pods a change deletes are bare."""
    c: list[Case] = []
    add = c.append
    on = {"consolidateAfter": "0s"}
    od = req(CT, "In", "on-demand")
    add(
        Case(
            "emptiness",
            ("disruption: emptiness",),
            DEFAULT,
            before=pods("e", 2, cpu="1"),
            kind="disrupt",
            change=Change(delete_pods=("e-0", "e-1"), pool_patch={"default": {"disruption": on}}),
        )
    )
    add(
        Case(
            "multi-node-same-type",
            ("disruption: multi-node consolidation", "disruption: single-node consolidation"),
            {"default": pool(req(IT, "In", "c-2x", "c-4x"), od)},
            before=[
                *pods("big", 2, cpu="1500m", host_ports=[7000]),
                deployment("small", 2, cpu="300m"),
            ],
            kind="disrupt",
            change=Change(
                delete_pods=("big-0", "big-1"), pool_patch={"default": {"disruption": on}}
            ),
            note="two on-demand c-2x each keep one 300m pod; merging both needs a c-2x, which "
            "filterOutSameInstanceType rejects, so single-node consolidation deletes one",
        )
    )
    add(
        Case(
            "multi-node-replace",
            ("disruption: multi-node consolidation",),
            {"default": pool(req(IT, "In", "c-1x", "c-2x"), od)},
            before=[
                *pods("big", 3, cpu="1500m", host_ports=[7000]),
                deployment("small", 3, cpu="250m"),
            ],
            kind="disrupt",
            change=Change(
                delete_pods=("big-0", "big-1", "big-2"),
                pool_patch={"default": {"disruption": on}},
            ),
            note="three on-demand c-2x each keep one 250m pod: two could go (their pods fit on "
            "the third), but all three go together for one cheaper c-1x",
        )
    )

    def shrink(**rest: Any) -> list[Obj]:
        return [pod("huge", cpu="6"), deployment("rest", 1, cpu="500m", **rest)]

    add(
        Case(
            "single-node-replace",
            ("disruption: single-node consolidation",),
            {"default": pool(od)},
            before=shrink(),
            kind="disrupt",
            change=Change(delete_pods=("huge",), pool_patch={"default": {"disruption": on}}),
        )
    )
    add(
        Case(
            "single-node-delete",
            ("disruption: single-node consolidation", "existing nodes"),
            {"default": pool(od)},
            before=[
                pod("anchor", cpu="1200m", host_ports=[7200]),
                pod("second", cpu="1200m", host_ports=[7200]),
                deployment("mover", 1, cpu="300m", host_ports=[7201]),
            ],
            kind="disrupt",
            change=Change(delete_pods=("second",), pool_patch={"default": {"disruption": on}}),
            note="the node that kept only the 300m pod is deleted; the pod fits beside anchor",
        )
    )
    add(
        Case(
            "do-not-disrupt",
            ("disruption: do-not-disrupt",),
            {"default": pool(od)},
            before=shrink(annotations={"karpenter.sh/do-not-disrupt": "true"}),
            kind="disrupt",
            change=Change(delete_pods=("huge",), pool_patch={"default": {"disruption": on}}),
        )
    )
    add(
        Case(
            "pdb-blocks",
            ("disruption: PDBs",),
            {"default": pool(od)},
            before=shrink(),
            pdbs=[pdb("rest", "rest", 0)],
            kind="disrupt",
            change=Change(delete_pods=("huge",), pool_patch={"default": {"disruption": on}}),
        )
    )
    add(
        Case(
            "budget-zero",
            ("disruption: budgets",),
            {"default": pool(od)},
            before=shrink(),
            kind="disrupt",
            change=Change(
                delete_pods=("huge",),
                pool_patch={"default": {"disruption": {**on, "budgets": [{"nodes": "0"}]}}},
            ),
        )
    )
    add(
        Case(
            "when-empty-policy",
            ("disruption: emptiness", "disruption: single-node consolidation"),
            {"default": pool(od, policy="WhenEmpty")},
            before=shrink(),
            kind="disrupt",
            change=Change(delete_pods=("huge",), pool_patch={"default": {"disruption": on}}),
        )
    )
    add(
        Case(
            "spot-no-replace",
            ("disruption: single-node consolidation", "spot/on-demand"),
            {"default": pool(req(CT, "In", "spot"))},
            before=shrink(),
            kind="disrupt",
            change=Change(delete_pods=("huge",), pool_patch={"default": {"disruption": on}}),
            note="SpotToSpotConsolidation is off by default on both sides",
        )
    )
    add(
        Case(
            "drift-requirements",
            ("disruption: drift",),
            {"default": pool(req(ZONE, "In", "test-zone-a"))},
            before=[deployment("dr", 1, cpu="1")],
            kind="disrupt",
            change=Change(
                pool_patch={
                    "default": {
                        "disruption": on,
                        "template": {
                            "spec": {
                                "requirements": [
                                    req(ZONE, "In", "test-zone-b"),
                                    req(ARCH, "In", "amd64"),
                                ]
                            }
                        },
                    }
                }
            ),
            note="NodePool drift (kwok has no NodeClass drift): the pool moves to zone b",
        )
    )
    add(
        Case(
            "emptiness-budget-one",
            ("disruption: emptiness", "disruption: budgets"),
            DEFAULT,
            before=pods("eb", 3, cpu="1", host_ports=[7100]),
            kind="disrupt",
            change=Change(
                delete_pods=("eb-0", "eb-1", "eb-2"),
                pool_patch={"default": {"disruption": {**on, "budgets": [{"nodes": "1"}]}}},
            ),
        )
    )
    return c


CASES: list[Case] = [*_provisioning(), *_disruption()]


def by_id(ids: list[str] | None = None) -> list[Case]:
    """The corpus, or the named cases in corpus order.

    Raises:
        KeyError: an unknown case id.
    """
    if not ids:
        return list(CASES)
    known = {c.id for c in CASES}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise KeyError(f"unknown cases: {unknown}")
    return [c for c in CASES if c.id in ids]
