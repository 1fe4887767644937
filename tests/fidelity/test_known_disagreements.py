"""Joiner's behaviour on diff-karpenter cases, pinned without a cluster: the same rendered
objects, the same instance-types file, the same ``build_plan`` the harness calls.

A known disagreement (docs/fidelity.md, "Known disagreements") is pinned here while it lasts;
once fixed, its test asserts the agreement instead, as a regression test. None is open.
Ties Karpenter breaks at random (docs/fidelity.md, "Limits of the comparison") are pinned
here too: Joiner breaks them the same way every time.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import cases
import catalog
import harness
import render
import run
from harness import Snapshot, joiner_disrupt, joiner_gates, joiner_plan
from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.cloudprovider.kwok import load_instance_types

DATA = Path(__file__).parent / "data"

#: the gates Karpenter runs with in run.py, as Joiner reads them
GATES = joiner_gates(run.KARPENTER_FEATURE_GATES)


def _plan(case_id: str | cases.Case, tmp_path: Path):  # type: ignore[no-untyped-def]
    [case] = cases.by_id([case_id]) if isinstance(case_id, str) else [case_id]
    types = load_instance_types(catalog.write(tmp_path / "types.json"))
    docs = [dict(render.KWOK_NODECLASS)]
    docs += [d for d in render.base_objects(case) if d["kind"] != "Namespace"]
    return joiner_plan(case, Snapshot(docs, {}, {}), types, tmp_path, GATES)


def test_daemonset_host_port_conflict_leaves_the_pods_pending(tmp_path: Path) -> None:
    """Was a known disagreement, fixed by issue 19: Karpenter v1.14 counts the host ports of
    the DaemonSet pods a new node will run (``HostPortUsage`` of the daemon overhead groups,
    ``pkg/controllers/provisioning/scheduling/scheduler.go``), so pods asking for the
    exporter's port 9100 stay pending and no NodeClaim is launched for them."""
    side = _plan("daemonset-host-port", tmp_path)
    assert side.error == ""
    assert side.claims == []
    assert side.pending == ["dsp-0", "dsp-1"]


def test_spread_ties_go_to_the_first_zones_by_name(tmp_path: Path) -> None:
    """spread-match-label-keys: matchLabelKeys makes v1 and v2 separate groups, so the four
    pods need two NodeClaims (one group of four would need three). Which two of the three
    empty zones is a tie: Karpenter's ``nextDomainTopologySpread`` (``topologygroup.go``)
    takes the first min-count domain in Go map order (random); Joiner the first by name."""
    side = _plan("spread-match-label-keys", tmp_path)
    assert side.error == "" and side.pending == []
    assert sorted(c[1:] for c in side.claims) == [
        ("c-2x", "spot", "test-zone-a"),
        ("c-2x", "spot", "test-zone-b"),
    ]
    [case] = cases.by_id(["spread-match-label-keys"])
    pods = copy.deepcopy(case.pods)
    for p in pods:
        for c in p["spec"]["topologySpreadConstraints"]:
            del c["matchLabelKeys"]
    one_group = _plan(dataclasses.replace(case, pods=pods), tmp_path)
    assert sorted(c[3] for c in one_group.claims) == ["test-zone-a", "test-zone-b", "test-zone-c"]


def test_zone_anti_affinity_leaves_one_of_the_identical_pods_pending(tmp_path: Path) -> None:
    """anti-affinity-zone: four identical pods, one per zone, three zones. Which pod stays
    pending is a tie (Karpenter: creation time, then UID; kube-scheduler: its queue);
    Joiner leaves the last by name."""
    side = _plan("anti-affinity-zone", tmp_path)
    assert side.error == ""
    assert sorted(c[3] for c in side.claims) == ["test-zone-a", "test-zone-b", "test-zone-c"]
    assert side.pending == ["az-3"]


def test_min_domains_above_the_eligible_zones_keeps_one_pod_per_zone(tmp_path: Path) -> None:
    """spread-min-domains: two zones allowed, minDomains 3, so the global minimum is 0
    (Karpenter ``domainMinCount``, kube-scheduler ``PodTopologySpread``): one pod per zone,
    the third pending."""
    side = _plan("spread-min-domains", tmp_path)
    assert side.error == ""
    assert sorted(c[1:] for c in side.claims) == [
        ("c-1x", "spot", "test-zone-a"),
        ("c-1x", "spot", "test-zone-b"),
    ]
    assert len(side.pending) == 1


def _disrupt(case_id: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``joiner disrupt`` on the dump a live run of the case wrote (tests/fidelity/data)."""
    [case] = cases.by_id([case_id])
    docs = harness.read_input(DATA / f"{case_id}.disrupt-input.json")
    return docs, joiner_disrupt(case, Snapshot(docs, {}, {}), _types(tmp_path), tmp_path, GATES)


def _types(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_instance_types(catalog.write(tmp_path / "types.json"))


def test_multi_node_consolidation_replaces_three_nodes_with_one_cheaper(tmp_path: Path) -> None:
    """multi-node-replace, replayed from the live run's dump (three on-demand c-2x nodes,
    one 250m pod each): Karpenter's ``firstNConsolidationOption`` binary search finds that
    all three go for one c-1x, which ``filterOutSameInstanceType`` keeps (it is not one of
    the removed types); Karpenter did the same live."""
    _, side = _disrupt("multi-node-replace", tmp_path)
    assert side.error == ""
    assert side.methods == ["MultiNodeConsolidation"]
    assert side.reasons == ["Underutilized"]
    assert len(side.removed) == 3
    assert [c[1:3] for c in side.claims] == [("c-1x", "on-demand")]


def test_single_node_consolidation_tries_the_dearer_candidate_first(tmp_path: Path) -> None:
    """single-node-delete, replayed from a live run's dump: a c-2x with a 1200m pod and a
    c-4x left with a 300m pod; either pod fits beside the other. The c-4x has the higher
    savings ratio (price / (1 + pods)), so it is tried first and deleted, as Karpenter did
    live. (With equal prices the two tie, and Karpenter's order is random.)"""
    docs, side = _disrupt("single-node-delete", tmp_path)
    assert side.error == ""
    assert side.methods == ["SingleNodeConsolidation"] and side.claims == []
    types = {
        d["metadata"]["name"]: d["metadata"]["labels"][harness.IT]
        for d in docs
        if d["kind"] == "Node"
    }
    assert [types[n] for n in side.removed] == ["c-4x"]


def test_a_not_ready_node_uses_up_a_budget_of_one(tmp_path: Path) -> None:
    """not-ready-budget, replayed from the live run's dump: three c-2x nodes under a budget
    of one node; one is Ready Unknown with the unreachable taints, the two others are empty.
    A NotReady node counts as disrupting (Karpenter ``helpers.go``
    ``BuildDisruptionBudgetMapping``), so no disruption is allowed and neither empty node
    goes, as Karpenter did live. The same dump with that node Ready again empties both
    (one per pass, as in emptiness-budget-one)."""
    docs, side = _disrupt("not-ready-budget", tmp_path)
    assert side.error == "" and side.removed == [] and side.methods == []
    [case] = cases.by_id(["not-ready-budget"])
    for d in docs:
        if d["kind"] == "Node" and harness.unreachable(d):
            d["spec"]["taints"] = [t for t in d["spec"]["taints"] if "unreachable" not in t["key"]]
            for c in d["status"]["conditions"]:
                c["status"] = "True" if c["type"] == "Ready" else c["status"]
    ready = joiner_disrupt(case, Snapshot(docs, {}, {}), _types(tmp_path), tmp_path, GATES)
    assert ready.error == "" and len(ready.removed) == 2
    assert set(ready.methods) == {"Emptiness"}


def test_nodes_limit_is_not_charged_within_one_batch(tmp_path: Path) -> None:
    """Was a known disagreement (limits-nodes, first seen in a generated case): Karpenter's
    ``subtractMax`` (``scheduler.go``) charges a new NodeClaim only the resources its
    instance types list, never a node, so four hostname-anti-affine pods under
    ``nodes: 2`` get four NodeClaims in one batch; Joiner stopped at two."""
    side = _plan("limits-nodes", tmp_path)
    assert side.error == "" and side.pending == []
    assert [c[1] for c in side.claims] == ["c-1x"] * 4


def test_zone_affinity_to_a_partner_in_the_same_batch_waits_for_the_next_batch(
    tmp_path: Path,
) -> None:
    """Was a known disagreement, affinity-partner-later-zone: two 1500m pods require the
    zone of a 200m partner that sorts after them. The partner's group is not one the
    partner owns, so Karpenter leaves its NodeClaim's zone open and does not count it
    (``topology.go`` ``getMatchingTopologies``, ``Record``): in the batch the seekers find no
    zone and wait; the next batch sees the partner's c-1x launched in zone a and opens a
    c-4x there (two NodeClaims). Joiner pinned the partner's NodeClaim to a zone so the
    seekers joined it: one c-4x."""
    side = _plan("affinity-partner-later-zone", tmp_path)
    assert side.error == "" and side.pending == []
    assert sorted(c[1:] for c in side.claims) == [
        ("c-1x", "spot", "test-zone-a"),
        ("c-4x", "spot", "test-zone-a"),
    ]


def test_relaxed_zone_spread_leaves_the_nodeclaim_zone_open(tmp_path: Path) -> None:
    """Generated case gen-1274-2 (seed 1274, CI run of 2026-12-06), minimised: a NodePool
    with a PreferNoSchedule taint, pods with a ScheduleAnyway zone spread that join the
    NodeClaims of pods with hostname anti-affinity. Karpenter relaxes the spread before it
    tolerates the taint (``preferences.go`` ``Relax``), and a pod no longer owning its
    spread does not narrow the NodeClaim's zone (``topology.go``
    ``getMatchingTopologies``), so every NodeClaim launches in the cheapest zone, a.
    Joiner pinned each NodeClaim to the spread's least-loaded zone: a, b, a, b."""
    taint = {"key": "preferred", "value": "no", "effect": "PreferNoSchedule"}
    anyway = cases.spread(cases.ZONE, "g0", skew=2, when="ScheduleAnyway")
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                cases.affinity_term(cases.HOST, "g1")
            ]
        }
    }
    group = [
        *cases.pods(
            "g0",
            4,
            cpu="900m",
            memory="512Mi",
            nodeSelector={cases.CT: "on-demand"},
            topologySpreadConstraints=[anyway],
        ),
        *cases.pods("g1", 4, cpu="1200m", memory="1Gi", affinity=anti),
    ]
    pools = {"default": cases.pool(cases.req(cases.ZONE, "NotIn", "test-zone-c"), taints=[taint])}
    case = cases.Case("relaxed", ("topology spread",), pools, group, zone_ties="zone spread")
    side = _plan(case, tmp_path)
    assert side.error == "" and side.pending == []
    assert len(side.claims) == 4
    assert {c[3] for c in side.claims} == {"test-zone-a"}


def test_a_pass_counts_its_nodeclaims_against_the_limit(tmp_path: Path) -> None:
    """Generated case gen-2727-14 (seed 2727, 2026-12-07), minimised: a NodePool limited to
    4 CPUs of c-2x (2 CPUs each) and five 600m pods under a hostname spread of maxSkew 1.
    Karpenter's first round created two c-2x, this plan; rounds 1.7 s and 3.0 s later each
    created one more, past the limit (four NodeClaims, 8 CPUs): its scheduler subtracts the
    nodes of its cluster state from the limit (``scheduler.go``
    ``calculateExistingNodeClaims``, ``updateRemainingResources``), and the first two were
    not counted yet, a timing Joiner does not model. Joiner's later passes count every
    NodeClaim an earlier one launched (``operator/plan_passes.py``), so three pods stay
    pending. A documented difference (docs/fidelity.md, "Runs of 40 generated cases")."""
    group = cases.pods(
        "g2",
        5,
        cpu="600m",
        memory="3Gi",
        nodeSelector={cases.ZONE: "test-zone-a"},
        topologySpreadConstraints=[cases.spread(cases.HOST, "g2")],
    )
    limited = cases.pool(
        cases.req(cases.CT, "In", "on-demand"),
        cases.req(cases.IT, "In", "c-2x", "r-2x"),
        limits={"cpu": "4"},
    )
    case = cases.Case("limit-rounds", ("limits",), {"default": limited}, group)
    side = _plan(case, tmp_path)
    assert side.error == ""
    assert [c[1:] for c in side.claims] == [("c-2x", "on-demand", "test-zone-a")] * 2
    assert sorted(side.pending) == ["g2-2", "g2-3", "g2-4"]


def test_new_claims_with_equal_pod_counts_keep_the_previous_sort_order(tmp_path: Path) -> None:
    """Was a known disagreement (generated cases, gen-808-22): Karpenter re-sorts its
    ``newNodeClaims`` slice by pod count before each pod (``scheduler.go`` ``Scheduler.add``,
    ``sort.Slice``, an insertion sort and so stable below 13 elements), so among equal
    counts the order of the previous sort persists: a NodeClaim that gains a pod comes
    first among those that already had its new count. Here the third NodeClaim, first after
    its re-sort, takes a third 3Gi pod (an r-2x). Joiner broke the tie by creation order,
    gave that pod to the first NodeClaim and kept the third an m-2x."""
    group = [
        *cases.pods("g0", 4, cpu="3500m", memory="3Gi"),
        *cases.pods("g1", 3, cpu="600m", memory="128Mi"),
        *cases.pods("g2", 4, cpu="100m", memory="3Gi"),
    ]
    case = cases.Case(
        "tie", ("resources",), {"default": cases.pool(cases.req(cases.CT, "In", "spot"))}, group
    )
    side = _plan(case, tmp_path)
    assert side.error == "" and side.pending == []
    assert sorted(c[1] for c in side.claims) == ["c-8x", "c-8x", "r-2x"]


def test_preferred_zone_anti_affinity_blocks_every_zone_of_an_undecided_claim(
    tmp_path: Path,
) -> None:
    """Was a known disagreement (generated cases gen-798733-0, gen-707-2, gen-707-27): pods
    that prefer to avoid each other's zone. Karpenter leaves a NodeClaim's zone open under
    anti-affinity (``topologygroup.go`` ``nextDomainAntiAffinity``: every empty domain) and
    records the pod in every zone it could take (``topology.go`` ``Topology.Record``), so
    the next pod finds no zone, relaxes the preference and takes the cheapest zone; here a
    host port keeps each pod on its own node, and all three go to zone a. Joiner pinned each
    NodeClaim to one zone and spread them over three."""
    anti = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": cases.affinity_term(cases.ZONE, "pz")}
            ]
        }
    }
    group = cases.pods("pz", 3, cpu="900m", memory="512Mi", host_ports=[8081], affinity=anti)
    case = cases.Case("pz", ("pod anti-affinity",), cases.DEFAULT, group)
    side = _plan(case, tmp_path)
    assert side.error == "" and side.pending == []
    assert sorted(c[3] for c in side.claims) == ["test-zone-a"] * 3


def test_two_zone_ties_broken_opposite_ways_agree_tie_by_tie(tmp_path: Path) -> None:
    """Generated case gen-2323-6 (seed 2323, 2026-12-06), minimised: two lone zone-spread
    pods, one Spot-only and one on-demand-only, each on a NodeClaim of its own. Both zones
    tie (no pod of either group yet); Karpenter draws Go's map order afresh at each tie
    (``topologygroup.go`` ``nextDomainTopologySpread`` over ``Requirement.Values``), so it
    may put one in zone a and the other in zone c, where Joiner puts both in zone a. No
    renaming of the zones gives that (it moves both ties the same way); choosing tie by tie
    does (``harness.tie_choice_agreement``), and nothing else is explained by it."""
    spread = {"cpu": "900m", "memory": "512Mi"}
    group = [
        pod
        for app, ct in (("g0", "spot"), ("g1", "on-demand"))
        for pod in cases.pods(
            app,
            1,
            nodeSelector={cases.CT: ct},
            topologySpreadConstraints=[cases.spread(cases.ZONE, app)],
            **spread,
        )
    ]
    case = cases.Case("ties", ("topology spread",), cases.DEFAULT, group, zone_ties="zone spread")
    side = _plan(case, tmp_path)
    assert side.error == "" and side.pending == []
    assert sorted(c[2:] for c in side.claims) == [
        ("on-demand", "test-zone-a"),
        ("spot", "test-zone-a"),
    ]
    pool, it = side.claims[0][:2]
    karpenter = harness.Side(
        claims=[(pool, it, "on-demand", "test-zone-c"), (pool, it, "spot", "test-zone-a")]
    )
    assert harness.compare(case, karpenter, side)  # two zones against one
    docs = harness.read_input(tmp_path / "ties.plan-input.json")
    types_file = tmp_path / "types.json"
    assert harness.tie_order_agreement(case, karpenter, docs, types_file, GATES) is None
    types = load_instance_types(types_file)
    tied = harness.tie_choice_agreement(case, karpenter, docs, types, GATES)
    assert tied is not None and tied.startswith("per tie: ")
    assert sorted(tied.removeprefix("per tie: ").split(", ")) == ["a", "c"]
    # an outcome no tie explains (zone b is as open as a and c, but on another type)
    karpenter.claims[0] = (pool, "c-8x", "on-demand", "test-zone-c")
    assert harness.tie_choice_agreement(case, karpenter, docs, types, GATES) is None
    # the plan's own tie-break is back afterwards
    assert sorted(c[3] for c in _plan(case, tmp_path).claims) == ["test-zone-a"] * 2


def test_a_zone_tie_broken_in_another_order_agrees_with_exact_zones(tmp_path: Path) -> None:
    """Generated case gen-1212-32 (seed 1212, 2026-12-06): a lone zone-spread pod on a c-2x
    and four pods that need more than 3 CPUs, at most two a node, on two c-4x. Karpenter
    put the c-2x in zone b (``nextDomainTopologySpread``: the first of the tied zones in Go
    map order), Joiner in zone a (the first by name), and the zone pattern over all three
    NodeClaims differs (two in a and one in b, against three in a). Renaming the zones so
    that b wins the tie, Joiner gives Karpenter's NodeClaims zone for zone
    (``harness.tie_order_agreement``); an outcome no order gives (the c-4x in zone c) gets
    none."""
    big = cases.node_affinity(cases.req("karpenter.kwok.sh/instance-cpu", "Gt", "3"))
    group = [
        *cases.pods(
            "g0",
            4,
            cpu="100m",
            memory="512Mi",
            affinity=big,
            topologySpreadConstraints=[cases.spread(cases.HOST, "g0", skew=2)],
        ),
        *cases.pods(
            "g1",
            1,
            cpu="1200m",
            memory="128Mi",
            nodeSelector={cases.IT: "c-2x"},
            topologySpreadConstraints=[cases.spread(cases.ZONE, "g1")],
        ),
    ]
    case = cases.Case("tie", ("topology spread",), cases.DEFAULT, group, zone_ties="zone spread")
    side = _plan(case, tmp_path)
    assert sorted(c[1:] for c in side.claims) == [
        ("c-2x", "spot", "test-zone-a"),
        ("c-4x", "spot", "test-zone-a"),
        ("c-4x", "spot", "test-zone-a"),
    ]
    pool = side.claims[0][0]
    karpenter = harness.Side(
        claims=[
            (pool, "c-2x", "spot", "test-zone-b"),
            (pool, "c-4x", "spot", "test-zone-a"),
            (pool, "c-4x", "spot", "test-zone-a"),
        ]
    )
    assert harness.compare(case, karpenter, side)  # the pattern over all NodeClaims differs
    docs = harness.read_input(tmp_path / "tie.plan-input.json")
    types = tmp_path / "types.json"
    assert harness.tie_order_agreement(case, karpenter, docs, types, GATES) == "b, a, c"
    karpenter.claims[1] = (pool, "c-4x", "spot", "test-zone-c")
    assert harness.tie_order_agreement(case, karpenter, docs, types, GATES) is None


def test_a_case_input_replays_with_the_cli(tmp_path: Path) -> None:
    """The harness writes each case's input as ``kubectl get -o json`` writes several
    objects (a ``List``), so ``joiner plan -f FILE --kwok-instance-types`` gives the plan it
    judged (affinity-partner-later-zone: a c-1x and a c-4x); runs before 2026-12-07 wrote a
    bare array, which ``read_input`` still reads."""
    side = _plan("affinity-partner-later-zone", tmp_path)
    written = tmp_path / "affinity-partner-later-zone.plan-input.json"
    args = ["plan", "-f", str(written), "--kwok-instance-types", str(tmp_path / "types.json")]
    args += ["--feature-gates", run.KARPENTER_FEATURE_GATES, "-o", "json"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    got = sorted((c["launch"]["instanceType"], c["launch"]["zone"]) for c in plan["nodeClaims"])
    assert got == sorted((c[1], c[3]) for c in side.claims)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(harness.read_input(written)))
    assert harness.read_input(bare) == harness.read_input(written)
