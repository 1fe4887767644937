"""The differential corpus: each case once, in a neutral form both sides are rendered from.

A case names its NodePools (a NodePool ``spec`` without ``nodeClassRef``, which rendering
fills in), the pods that exist before (``before``: applied first and left to Karpenter and
kube-scheduler until stable, they make the existing nodes), the pods of the batch under test
(``pods``), DaemonSets and PDBs. A disruption case (``kind="disrupt"``) then applies
``change`` (pods deleted, NodePool fields merged in) and compares the disruption that
follows. Only well-known labels are used; prices never tie (catalog.py).
"""

from __future__ import annotations

from casekit import (
    ARCH,
    CT,
    DEFAULT,
    HOST,
    IT,
    LICENCE,
    SOFT_TAINT,
    TAINT,
    TOLERATE,
    ZONE,
    Case,
    Change,
    Obj,
    affinity_term,
    daemonset,
    deployment,
    node_affinity,
    overlay,
    pdb,
    pod,
    pods,
    pool,
    priority_class,
    req,
    spread,
)
from disruption_cases import disruption_cases

#: the builders, re-exported: cases are written with ``cases.pod(...)`` etc.
__all__ = [
    "ARCH",
    "CASES",
    "CT",
    "DEFAULT",
    "HOST",
    "IT",
    "TAINT",
    "TOLERATE",
    "ZONE",
    "Case",
    "Change",
    "Obj",
    "affinity_term",
    "by_id",
    "daemonset",
    "deployment",
    "node_affinity",
    "pdb",
    "pod",
    "pods",
    "pool",
    "req",
    "spread",
]


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
            "preempt-placeholder",
            ("existing nodes", "preemption"),
            {"default": pool(req(IT, "In", "c-2x"))},
            [pod("vip", cpu="1500m", priorityClassName="fidelity-preempt-vip")],
            before=[deployment("filler", 1, cpu="1500m")],
            priority_classes=[priority_class("fidelity-preempt-vip", 1000, preempt=True)],
            note="kube-scheduler preempts the filler for the higher-priority vip and nominates "
            "its node; Karpenter skips the nominated vip (IsProvisionable) and launches a "
            "c-2x for the filler's replacement; joiner plan puts vip on the existing node and "
            "the filler on a new NodeClaim",
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
    c += _later_cases()
    return c


def _required(kind: str, key: str, app: str) -> Obj:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [affinity_term(key, app)]}}


def _later_cases() -> list[Case]:
    """Pod affinity to a partner later in the queue, limits reached mid-batch, spread onto
    existing nodes, NodePool requirements and a PreferNoSchedule taint."""
    kwok_cpu = "karpenter.kwok.sh/instance-cpu"
    leader = pod("partner", cpu="200m", labels={"app": "partner"})
    return [
        Case(
            "affinity-partner-later",
            ("pod affinity",),
            DEFAULT,
            [pod("seeker", cpu="1", affinity=_required("podAffinity", HOST, "partner")), leader],
            note="the seeker sorts first (more CPU) but needs its partner's node: Karpenter "
            "retries it after the partner is placed, on the partner's NodeClaim",
        ),
        Case(
            "affinity-partner-later-zone",
            ("pod affinity",),
            DEFAULT,
            [
                *pods("zseek", 2, cpu="1500m", affinity=_required("podAffinity", ZONE, "partner")),
                leader,
            ],
        ),
        Case(
            "limits-mid-batch",
            ("limits", "resources"),
            {"default": pool(limits={"cpu": "6"})},
            [
                pod(f"lm-{i}", cpu)
                for i, cpu in enumerate(("2500m", "1700m", "1200m", "900m", "600m", "400m"))
            ],
            note="the NodePool's 6 CPUs run out while the batch is packed: the types that "
            "would pass the limit are dropped for later NodeClaims",
        ),
        Case(
            "limits-nodes",
            ("limits", "pod anti-affinity"),
            {"default": pool(limits={"nodes": "2"})},
            pods("ln", 4, affinity=_required("podAntiAffinity", HOST, "ln")),
        ),
        Case(
            "spread-zone-existing",
            ("topology spread", "existing nodes"),
            DEFAULT,
            pods("sze", 2, topologySpreadConstraints=[spread(ZONE, "sze")]),
            before=[pod("sze-old", labels={"app": "sze"}, nodeSelector={ZONE: "test-zone-b"})],
            note="zone b already counts one: the two new pods take zones a and c",
        ),
        Case(
            "spread-zone-existing-fill",
            ("topology spread", "existing nodes"),
            DEFAULT,
            pods("szf", 1, topologySpreadConstraints=[spread(ZONE, "szf")]),
            before=[
                pod(f"szf-old{z}", labels={"app": "szf"}, nodeSelector={ZONE: f"test-zone-{z}"})
                for z in ("a", "b")
            ],
            note="zones a and b count one each on existing nodes with room: the pod needs a "
            "new node in zone c",
        ),
        Case(
            "spread-hostname-existing",
            ("topology spread", "existing nodes"),
            DEFAULT,
            pods("she", 2, topologySpreadConstraints=[spread(HOST, "she")]),
            before=[pod("she-old", labels={"app": "she"})],
        ),
        Case(
            "pool-arch-arm",
            ("NodePool requirements",),
            {"default": pool(req(ARCH, "In", "arm64"))},
            pods("arm", 2, cpu="800m"),
        ),
        Case(
            "pool-cpu-lt",
            ("NodePool requirements",),
            {"default": pool(req(kwok_cpu, "Lt", "3"))},
            pods("lt", 3, cpu="700m"),
        ),
        Case(
            "pool-zone-notin",
            ("NodePool requirements",),
            {"default": pool(req(ZONE, "NotIn", "test-zone-a"))},
            pods("nz", 2, cpu="1"),
        ),
        Case(
            "static-two-replicas",
            ("static capacity",),
            {"fixed": {**pool(req(IT, "In", "c-2x", "m-2x")), "replicas": 2}},
            [],
            note="StaticCapacity gate on: two NodeClaims of the pool's template, no pods, "
            "the cheapest offering of the types it allows",
        ),
        Case(
            "soft-taint-pool",
            ("taints/tolerations", "weights"),
            {
                "soft": pool(req(IT, "In", "c-2x"), taints=[SOFT_TAINT], weight=60),
                "plain": pool(req(IT, "In", "m-2x"), weight=10),
            },
            pods("st", 2, cpu="1"),
            alone=True,
            note="the heavier pool's PreferNoSchedule taint is first treated as NoSchedule "
            "(Karpenter preferences.go): the pods go to the lighter pool; alone, since the "
            "taint adds a relaxation step for every pod of the batch",
        ),
        *_overlay_cases(),
    ]


def _overlay_cases() -> list[Case]:
    """NodeOverlays (Karpenter's NodeOverlay gate, on for the whole run: run.py)."""
    return [
        Case(
            "overlay-price",
            ("NodeOverlay",),
            DEFAULT,
            pods("ovp", 1, cpu="1"),
            overlays={"cheap-m": overlay(req(IT, "In", "m-2x"), price="0.001")},
            note="the overlay makes m-2x the cheapest type Karpenter's scheduler sees (the "
            "NodeClaim lists it first), but Karpenter-kwok launches the cheapest type at its "
            "own prices (kwok cloudprovider.go toNode reads the types without overlays): c-2x",
        ),
        Case(
            "overlay-capacity",
            ("NodeOverlay", "extended resources"),
            DEFAULT,
            pods("ovc", 2, cpu="1", extra={LICENCE: "1"}),
            overlays={"licence": overlay(req(IT, "In", "m-4x", "r-4x"), capacity={LICENCE: "2"})},
            note="no type has the licence resource but the two the overlay gives it to: both "
            "pods fit the cheaper, m-4x (without the overlay they stay pending)",
        ),
    ]


CASES: list[Case] = [*_provisioning(), *disruption_cases()]


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
