"""The Cluster Autoscaler differential corpus (the vocabulary is ca_casekit.py).

Allocatable of the types used (Joiner's EC2 model, AL2023, us-east-1; the kwok templates
carry exactly these): m5.large and r5.large 1930m, m5.xlarge and c5.xlarge 3920m,
m5.2xlarge 7910m; memory m5.large 6.74 GiB, c5.xlarge 6.43 GiB, m5.xlarge 13.83 GiB.
Sizes are chosen away from the edge of a fit unless a case is about the edge.
"""

from __future__ import annotations

from ca_casekit import (
    HOST,
    IT,
    SAFE_TO_EVICT,
    SCALE_DOWN_DISABLED,
    ZONE,
    Case,
    Group,
    Pool,
    anti_affinity,
    bare,
    daemonset,
    deploy,
    node_affinity,
    one_a_node,
    pdb,
    prefer_node,
    spread,
    toleration,
)

A, B, C = "us-east-1a", "us-east-1b", "us-east-1c"
SMALL = Group("small", "m5.large")
BIG = Group("big", "m5.2xlarge")
XL = Group("xl", "m5.xlarge")
TAINT = ("dedicated", "batch", "NoSchedule")
HSPREAD = spread("blk")


def _expanders() -> list[Case]:
    c: list[Case] = []
    add = c.append
    add(Case("lw-basic", ("expander:least-waste",), [SMALL, BIG], [deploy("web", 6, "1")]))
    add(
        Case(
            "lw-memory-tiebreak",
            ("expander:least-waste",),
            [Group("cpu", "c5.xlarge"), Group("gen", "m5.xlarge")],
            [deploy("web", 3, "1", "1Gi")],
            note="equal CPU waste; less idle memory on c5.xlarge",
        )
    )
    add(
        Case(
            "lw-small-wins",
            ("expander:least-waste",),
            [SMALL, BIG],
            [deploy("web", 1, "1500m", "1Gi")],
        )
    )
    add(
        Case(
            "most-pods",
            ("expander:most-pods",),
            [Group("ssd", "m5.large", pool="ssd"), BIG],
            [
                deploy("any", 2, "400m"),
                deploy("disk", 2, "400m", spec={"nodeSelector": {"disk": "ssd"}}),
            ],
            pools={"main": Pool(), "ssd": Pool(labels=(("disk", "ssd"),))},
            ca={"expander": "most-pods"},
            note="the ssd group takes all four pods, the big one two",
        )
    )
    add(
        Case(
            "priority-small",
            ("expander:priority",),
            [SMALL, BIG],
            [deploy("web", 2, "1")],
            ca={"expander": "priority"},
            priorities={50: ["small"], 10: [".*"]},
            note="least-waste would take big",
        )
    )
    add(
        Case(
            "priority-then-least-waste",
            ("expander:priority", "expander:chain"),
            [SMALL, BIG, Group("xl", "m5.xlarge")],
            [deploy("web", 3, "1")],
            ca={"expander": "priority,least-waste"},
            priorities={50: ["(small|xl)"], 10: ["big"]},
        )
    )
    add(
        Case(
            "priority-full-falls-back",
            ("expander:priority", "max-size"),
            [Group("small", "m5.large", max_size=2), BIG],
            # kube-scheduler fills the small nodes first however soon the big one is Ready
            # (a preference, which Cluster Autoscaler's estimate ignores).
            [deploy("web", 4, "1", spec={"affinity": prefer_node(IT, "m5.large")})],
            ca={"expander": "priority"},
            priorities={50: ["small"], 10: ["big"]},
        )
    )
    add(
        Case(
            "random-one-fits",
            ("expander:random",),
            [SMALL, Group("tainted", "m5.2xlarge", pool="batch")],
            [deploy("web", 3, "1")],
            pools={"main": Pool(), "batch": Pool(taints=(TAINT,))},
            ca={"expander": "random"},
            note="random, but only one group can take the pods",
        )
    )
    return c


def _estimator() -> list[Case]:
    c: list[Case] = []
    add = c.append
    add(Case("binpack-cpu", ("binpacking",), [XL], [deploy("web", 10, "1")]))
    add(Case("binpack-memory", ("binpacking",), [SMALL], [deploy("cache", 5, "200m", "3Gi")]))
    add(
        Case(
            "binpack-mixed",
            ("binpacking",),
            [XL],
            [deploy("a", 3, "2"), deploy("b", 4, "700m"), deploy("c", 6, "250m")],
        )
    )
    add(
        Case(
            "binpack-edge",
            ("binpacking", "template:kube-proxy"),
            [SMALL],
            [deploy("web", 4, "900m")],
            note="two 900m pods fit 1930m of allocatable, also with 100m taken on the template",
        )
    )
    add(
        Case(
            "template-kube-proxy",
            ("binpacking", "template:kube-proxy"),
            [SMALL],
            [deploy("web", 4, "950m")],
            note="two 950m pods fit 1930m, not 1830m",
        )
    )
    add(
        Case(
            "pods-per-node",
            ("binpacking",),
            [Group("tiny", "t3.medium")],
            [deploy("web", 20, "10m", "16Mi")],
            note="17 pods per t3.medium",
        )
    )
    add(
        Case(
            "max-size",
            ("max-size",),
            [Group("small", "m5.large", max_size=2)],
            [deploy("web", 5, "1")],
        )
    )
    add(
        Case(
            "max-size-spill",
            ("max-size", "expander:least-waste"),
            [SMALL, Group("big", "m5.2xlarge", max_size=1)],
            [deploy("web", 8, "1")],
        )
    )
    add(
        Case(
            "fits-no-group",
            ("no-fit",),
            [SMALL, XL],
            [deploy("huge", 1, "6"), deploy("web", 2, "1")],
        )
    )
    add(
        Case(
            "daemonset-overhead",
            ("daemonset",),
            [SMALL],
            [daemonset("agent", "600m"), deploy("web", 5, "600m")],
            note="without the DaemonSet three pods fit a node, with it two",
        )
    )
    add(
        Case(
            "max-nodes-total",
            ("cluster-limits",),
            [SMALL],
            [deploy("web", 5, "1")],
            ca={"maxNodesTotal": 3},
        )
    )
    add(
        Case(
            "cores-total",
            ("cluster-limits",),
            [SMALL],
            [deploy("web", 5, "1")],
            ca={"coresTotal": "0:6"},
        )
    )
    add(
        Case(
            "memory-total",
            ("cluster-limits",),
            [SMALL],
            [deploy("web", 5, "1")],
            ca={"memoryTotal": "0:20"},
            note="m5.large has 7.4 GiB of capacity: two nodes fit 20 GiB, three do not",
        )
    )
    return c


def _constraints() -> list[Case]:
    c: list[Case] = []
    add = c.append
    batch = {"main": Pool(), "batch": Pool(taints=(TAINT,))}
    tol = {"tolerations": [toleration("dedicated", "batch")]}
    add(
        Case(
            "taint-blocks",
            ("taints",),
            [SMALL, Group("big", "m5.2xlarge", pool="batch")],
            [deploy("web", 3, "1")],
            pools=batch,
        )
    )
    add(
        Case(
            "taint-tolerated",
            ("taints",),
            [SMALL, Group("big", "m5.2xlarge", pool="batch")],
            [deploy("jobs", 3, "1", spec=tol)],
            pools=batch,
        )
    )
    add(
        Case(
            "taint-only-group",
            ("taints", "no-fit"),
            [Group("big", "m5.2xlarge", pool="batch")],
            [deploy("web", 2, "1")],
            pools=batch,
        )
    )
    add(
        Case(
            "node-selector",
            ("node-affinity",),
            [Group("a", "m5.large", pool="a"), Group("b", "m5.2xlarge", pool="b")],
            [deploy("web", 3, "1", spec={"nodeSelector": {"team": "a"}})],
            pools={"a": Pool(labels=(("team", "a"),)), "b": Pool(labels=(("team", "b"),))},
        )
    )
    add(
        Case(
            "affinity-instance-type",
            ("node-affinity",),
            [Group("c5", "c5.xlarge"), BIG],
            [deploy("web", 3, "1", spec={"affinity": node_affinity(IT, "c5.xlarge")})],
        )
    )
    add(
        Case(
            "affinity-zone",
            ("node-affinity", "zones"),
            [Group("a", "m5.large", A), Group("b", "m5.2xlarge", B)],
            [deploy("web", 2, "1", spec={"affinity": node_affinity(ZONE, A)})],
        )
    )
    add(
        Case(
            "anti-affinity-hostname",
            ("pod-anti-affinity",),
            [BIG],
            [deploy("web", 3, "500m", spec={"affinity": anti_affinity("web")})],
        )
    )
    add(
        Case(
            "spread-hostname",
            ("topology-spread",),
            [BIG],
            [deploy("web", 4, "500m", spec={"topologySpreadConstraints": [spread("web")]})],
        )
    )
    add(
        Case(
            "spread-zone",
            ("topology-spread", "zones"),
            [Group("a", "m5.large", A), Group("b", "m5.large", B), Group("c", "m5.large", C)],
            [deploy("web", 3, "1", spec={"topologySpreadConstraints": [spread("web", ZONE)]})],
            ca={"balanceSimilarNodeGroups": True},
        )
    )
    return c


def _balancing() -> list[Case]:
    c: list[Case] = []
    add = c.append
    zones = [Group("a", "m5.large", A), Group("b", "m5.large", B), Group("c", "m5.large", C)]
    add(
        Case(
            "balance-similar",
            ("balance-similar",),
            zones,
            [deploy("web", 6, "1")],
            ca={"balanceSimilarNodeGroups": True},
        )
    )
    add(
        Case(
            "balance-uneven",
            ("balance-similar",),
            zones,
            [deploy("web", 4, "1")],
            ca={"balanceSimilarNodeGroups": True},
            note="four nodes over three groups: 2/1/1, the group that gets two is a tie",
        )
    )
    add(
        Case(
            "balance-not-similar",
            ("balance-similar",),
            [Group("a", "m5.large", A, pool="a"), Group("b", "m5.large", B, pool="b")],
            [deploy("web", 4, "1")],
            pools={"a": Pool(labels=(("team", "a"),)), "b": Pool(labels=(("team", "b"),))},
            ca={"balanceSimilarNodeGroups": True},
            note="labels differ: not similar, one group takes all (which one is a tie)",
        )
    )
    return c


def _blocker_case(
    cid: str, features: tuple[str, ...], note: str = "", ns: str = "", **blk: object
) -> Case:
    """Three m5.large nodes, each with one 1-CPU ``x`` pod; then ``x`` goes and three 300m
    ``blk`` pods come, one a node (``one_a_node``: soft constraints, which Cluster
    Autoscaler's drain simulation ignores): each node is under the threshold and its ``blk``
    pod could move, so without a drain rule in the way one node stays."""
    spec = {**one_a_node("blk"), **blk.pop("spec", {})}  # type: ignore[dict-item]
    return Case(
        cid,
        features,
        [SMALL],
        [
            deploy("x", 3, "1", then=0),
            deploy("blk", 0, "300m", then=3, spec=spec, namespace=ns, **blk),  # type: ignore[arg-type]
        ],
        note=note,
    )


def _scale_down() -> list[Case]:
    c: list[Case] = []
    add = c.append
    add(Case("sd-empty", ("scale-down:empty",), [SMALL], [deploy("web", 4, "1", then=0)]))
    add(
        Case(
            "sd-keep-busy",
            ("scale-down:utilization",),
            [SMALL],
            [deploy("web", 4, "1200m", then=2)],
            note="62% busy nodes stay",
        )
    )
    add(
        Case(
            "sd-consolidate",
            ("scale-down:utilization", "scale-down:unneeded-time"),
            [SMALL],
            [deploy("web", 4, "1200m", then=0), deploy("lite", 0, "500m", then=2)],
            note="two 500m pods on their own nodes (26%) move together",
        )
    )
    add(
        Case(
            "sd-threshold",
            ("scale-down:utilization",),
            [SMALL],
            [deploy("web", 4, "1200m", then=0), deploy("lite", 0, "500m", then=2)],
            ca={"scaleDownUtilizationThreshold": 0.2},
            note="26% is above a 0.2 threshold: nothing is removed but the empty nodes",
        )
    )
    add(_blocker_case("sd-movable", ("scale-down:utilization",), "nothing blocks: one node stays"))
    add(
        Case(
            "sd-spread-holds",
            ("scale-down:utilization", "topology-spread"),
            [SMALL],
            [
                deploy("x", 3, "1", then=0),
                deploy(
                    "blk", 0, "300m", then=3, spec={"topologySpreadConstraints": [spread("blk")]}
                ),
            ],
            note="the node being removed stays a hostname domain at zero in CA's drain "
            "simulation, so a pod under a maxSkew-1 hostname spread cannot leave it",
        )
    )
    add(
        Case(
            "sd-bulk-empty",
            ("scale-down:empty", "scale-down:per-loop"),
            [SMALL],
            [deploy("web", 6, "1", then=0)],
            ca={"maxScaleDownParallelism": 2},
        )
    )
    blocked = _blocker_case(
        "sd-pdb", ("scale-down:pdb",), "a PDB with maxUnavailable 0 blocks every drain"
    )
    blocked.pdbs.append(pdb("blk", "blk", max_unavailable=0))
    add(blocked)
    add(
        _blocker_case(
            "sd-safe-to-evict-false",
            ("scale-down:safe-to-evict",),
            annotations={SAFE_TO_EVICT: "false"},
        )
    )
    add(
        _blocker_case(
            "sd-local-storage",
            ("scale-down:local-storage",),
            spec={"volumes": [{"name": "scratch", "emptyDir": {}}]},
        )
    )
    add(
        _blocker_case(
            "sd-local-storage-safe",
            ("scale-down:local-storage", "scale-down:safe-to-evict"),
            spec={"volumes": [{"name": "scratch", "emptyDir": {}}]},
            annotations={SAFE_TO_EVICT: "true"},
        )
    )
    add(_blocker_case("sd-kube-system", ("scale-down:system-pods",), ns="kube-system"))
    add(
        Case(
            "sd-unreplicated",
            ("scale-down:unreplicated",),
            [SMALL],
            [
                deploy("x", 3, "1200m", then=0),
                bare("solo", 3, "300m", spec=one_a_node("solo")),
            ],
            note="a bare 300m pod on each node (15%) keeps it",
        )
    )
    add(
        Case(
            "sd-disabled",
            ("scale-down:disabled-annotation",),
            [SMALL],
            [deploy("web", 3, "1", then=0)],
            pools={"main": Pool(annotations=((SCALE_DOWN_DISABLED, "true"),))},
        )
    )
    return c


CASES: list[Case] = _expanders() + _estimator() + _constraints() + _balancing() + _scale_down()

#: Cases whose group choice is a tie CA breaks at random: only the pattern of node counts
#: over groups (not which group) is compared.
GROUP_TIES = {"balance-uneven", "balance-not-similar"}
#: Cases whose nodes of two groups are made within a second of each other (one loop apart):
#: which of them kube-scheduler fills first is a race on the stack, and a node it leaves
#: empty is removed. The decision under test is the scale-up (nodes added per group) and
#: the pods left pending; the node counts once stable are not compared.
PLACEMENT_RACES = {"priority-full-falls-back"}


def by_id(ids: list[str]) -> list[Case]:
    """The cases named (all when ``ids`` is empty).

    Raises:
        KeyError: an unknown id.
    """
    if not ids:
        return list(CASES)
    known = {c.id: c for c in CASES}
    missing = [i for i in ids if i not in known]
    if missing:
        raise KeyError(f"unknown case(s): {', '.join(missing)}")
    return [known[i] for i in ids]


__all__ = ["CASES", "GROUP_TIES", "HOST", "PLACEMENT_RACES", "by_id"]
