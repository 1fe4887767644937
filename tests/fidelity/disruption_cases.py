"""The disruption cases of the corpus (cases.py): each makes its nodes with ``before``,
then applies ``change`` and compares the disruption that follows."""

from __future__ import annotations

from typing import Any

from casekit import (
    ARCH,
    CT,
    DEFAULT,
    DELETION_COST,
    IT,
    ZONE,
    Case,
    Change,
    Obj,
    daemonset,
    deployment,
    pdb,
    pod,
    pods,
    pool,
    priority_class,
    req,
)


def disruption_cases() -> list[Case]:
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
                pod("anchor", cpu="1200m", host_ports=[7200], nodeSelector={IT: "c-2x"}),
                pod("second", cpu="2500m", host_ports=[7200], nodeSelector={IT: "c-4x"}),
                deployment("mover", 1, cpu="300m", host_ports=[7201]),
            ],
            kind="disrupt",
            change=Change(delete_pods=("second",), pool_patch={"default": {"disruption": on}}),
            note="if second's c-4x keeps only the 300m pod, which fits beside anchor on its "
            "c-2x, the c-4x is deleted: its higher price gives it the higher savings ratio "
            "(with equal prices the two candidates' order is random in Karpenter); if "
            "kube-scheduler put the 300m pod beside anchor, the c-4x goes by Emptiness",
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
    add(
        Case(
            "not-ready-budget",
            ("disruption: emptiness", "disruption: budgets", "disruption: NotReady nodes"),
            DEFAULT,
            before=pods("nr", 3, cpu="1", host_ports=[7100]),
            kind="disrupt",
            change=Change(
                not_ready=("nr-0",),
                delete_pods=("nr-1", "nr-2"),
                pool_patch={"default": {"disruption": {**on, "budgets": [{"nodes": "1"}]}}},
            ),
            note="nr-0's node stops heartbeating and goes Unknown before the other two empty: "
            "a NotReady node counts as disrupting (Karpenter helpers.go "
            "BuildDisruptionBudgetMapping), so the budget of one node is used up and neither "
            "empty node goes",
        )
    )
    c += _cost_cases(on, od, shrink)
    return c


def _pair(dear: dict[str, Any]) -> list[Obj]:
    """Two on-demand c-2x nodes, each left with one 300m pod once the big pods go: either
    could be deleted (its pod fits beside the other), and they cost the same."""
    return [
        *pods("big", 2, cpu="1500m", host_ports=[7000]),
        deployment("dear", 1, cpu="300m", **dear),
        deployment("cheap", 1, cpu="300m"),
    ]


def _cost_cases(on: Obj, od: Obj, shrink: Any) -> list[Case]:
    """Eviction cost ordering (deletion cost, priority), do-not-disrupt on a DaemonSet pod,
    and emptiness under a percentage budget."""
    pair_pool = {"default": pool(req(IT, "In", "c-2x", "c-4x"), od)}
    change = Change(delete_pods=("big-0", "big-1"), pool_patch={"default": {"disruption": on}})
    note = (
        "the two nodes tie on price; the dear pod's eviction cost lowers its node's savings "
        "ratio (Karpenter consolidation.go sortCandidates, EvictionCost), so the other node "
        "is tried first and deleted"
    )
    return [
        Case(
            "deletion-cost-order",
            ("disruption: single-node consolidation", "disruption: deletion cost"),
            pair_pool,
            before=_pair({"annotations": {DELETION_COST: "1000000000"}}),
            kind="disrupt",
            change=change,
            note=note,
        ),
        Case(
            "priority-order",
            ("disruption: single-node consolidation", "disruption: priority"),
            pair_pool,
            before=_pair({"priorityClassName": "fidelity-priority-order"}),
            priority_classes=[priority_class("fidelity-priority-order", 100_000_000)],
            kind="disrupt",
            change=change,
            note=note,
        ),
        Case(
            "do-not-disrupt-daemonset",
            ("disruption: do-not-disrupt", "DaemonSet overhead"),
            {"default": pool(od)},
            before=shrink(),
            daemonsets=[
                daemonset("guard", "100m", annotations={"karpenter.sh/do-not-disrupt": "true"})
            ],
            kind="disrupt",
            change=Change(delete_pods=("huge",), pool_patch={"default": {"disruption": on}}),
            note="a do-not-disrupt DaemonSet pod blocks its node like any other pod "
            "(Karpenter statenode.go ValidatePodsDisruptable)",
        ),
        Case(
            "emptiness-budget-percent",
            ("disruption: emptiness", "disruption: budgets"),
            DEFAULT,
            before=pods("ep", 3, cpu="1", host_ports=[7100]),
            kind="disrupt",
            change=Change(
                delete_pods=("ep-0", "ep-1", "ep-2"),
                pool_patch={"default": {"disruption": {**on, "budgets": [{"nodes": "50%"}]}}},
            ),
        ),
    ]
