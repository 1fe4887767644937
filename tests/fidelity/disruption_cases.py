"""The disruption cases of the corpus (cases.py): each makes its nodes with ``before``,
then applies ``change`` and compares the disruption that follows."""

from __future__ import annotations

from typing import Any

from casekit import (
    ARCH,
    CT,
    DEFAULT,
    IT,
    ZONE,
    Case,
    Change,
    Obj,
    deployment,
    pdb,
    pod,
    pods,
    pool,
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
    return c
