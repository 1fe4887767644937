"""The Cluster Autoscaler differential harness without the stack: the corpus renders for both
sides from one source, the kwok templates are Joiner's groups, the batches keep cluster-wide
limits apart, and the comparison follows the written equivalence."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import ca_cases
import ca_render
import pytest
import yaml
from autoscaler import FLAG_NAMES, flag_args
from ca_casekit import CA_DEFAULTS, CASE_LABEL, Case, group_name
from ca_harness import Side, batches, compare, templates

from joiner.sim.scenario import load_scenario


def test_corpus_covers_the_feature_list():
    assert len(ca_cases.CASES) >= 30
    assert len({c.id for c in ca_cases.CASES}) == len(ca_cases.CASES)
    features = {f for c in ca_cases.CASES for f in c.features}
    for wanted in (
        "expander:least-waste",
        "expander:most-pods",
        "expander:priority",
        "expander:random",
        "binpacking",
        "max-size",
        "cluster-limits",
        "no-fit",
        "daemonset",
        "taints",
        "node-affinity",
        "topology-spread",
        "pod-anti-affinity",
        "balance-similar",
        "scale-down:utilization",
        "scale-down:unneeded-time",
        "scale-down:pdb",
        "scale-down:local-storage",
        "scale-down:system-pods",
        "scale-down:safe-to-evict",
        "scale-down:unreplicated",
        "scale-down:disabled-annotation",
        "scale-down:per-loop",
    ):
        assert wanted in features, wanted


def test_every_flag_a_case_sets_is_a_cluster_autoscaler_flag():
    for c in ca_cases.CASES:
        args = flag_args(c.flags())
        assert len(args) == len(c.flags())
        assert all(a.startswith("--") and "=" in a for a in args)
    assert set(CA_DEFAULTS) <= set(FLAG_NAMES)
    assert flag_args({"balanceSimilarNodeGroups": True}) == ["--balance-similar-node-groups=true"]


@pytest.mark.parametrize("case", ca_cases.CASES, ids=lambda c: c.id)
def test_case_renders_a_scenario_joiner_loads(case: Case, tmp_path: Path):
    path = ca_render.scenario(case, tmp_path, phases=2 if case.scale_down else 1)
    scenario = load_scenario(path)
    groups = {g.name for g in scenario.autoscaler.node_groups}
    assert groups == {group_name(case, g) for g in case.groups}
    # Every pod selects its case's nodes: cases side by side never share a node.
    for doc in ca_render.workloads(case, 1):
        if doc["kind"] in ("Deployment", "DaemonSet"):
            spec = doc["spec"]["template"]["spec"]
        elif doc["kind"] == "Pod":
            spec = doc["spec"]
        else:
            continue
        assert spec["nodeSelector"][CASE_LABEL] == case.id


def test_kwok_templates_are_joiners_groups(tmp_path: Path):
    case = ca_cases.by_id(["taint-tolerated"])[0]
    nodes = templates([case], tmp_path)
    by_name = {n["metadata"]["name"]: n for n in nodes}
    big = by_name[f"{case.id}-big"]
    assert big["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "m5.2xlarge"
    assert big["metadata"]["labels"][CASE_LABEL] == case.id
    assert big["metadata"]["annotations"][ca_render.GROUP_ANNOTATION] == f"{case.id}-big"
    assert big["spec"]["taints"] == [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    # Joiner's allocatable for m5.2xlarge on AL2023 (kube-reserved and eviction threshold)
    assert big["status"]["allocatable"]["cpu"] == "7910m"
    small = by_name[f"{case.id}-small"]
    assert small["spec"]["taints"] == []
    # Nodes of a case with DaemonSets register behind a startup taint, which Cluster
    # Autoscaler leaves out of its template nodes and the DaemonSet pods tolerate.
    ds_case = ca_cases.by_id(["daemonset-overhead"])[0]
    (node,) = templates([ds_case], tmp_path)
    assert node["spec"]["taints"] == [
        {"key": ca_render.REGISTRATION_TAINT, "value": "true", "effect": "NoSchedule"}
    ]
    assert ca_render.REGISTRATION_TAINT.startswith(
        "startup-taint.cluster-autoscaler.kubernetes.io/"
    )
    # The provider's template list parses as one List of Nodes.
    listing = yaml.safe_load(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    assert {i["kind"] for i in listing["items"]} == {"Node"}


def test_cluster_wide_limits_run_alone():
    picked = ca_cases.by_id(["lw-basic", "binpack-cpu", "max-nodes-total", "cores-total"])
    out = batches(picked, 12)
    assert [c.id for c in out[0]] == ["lw-basic", "binpack-cpu"]
    assert [[c.id for c in b] for b in out[1:]] == [["max-nodes-total"], ["cores-total"]]
    assert [len(b) for b in batches(ca_cases.by_id(["lw-basic", "binpack-cpu"]), 1)] == [1, 1]


def _side(added: dict[str, int], nodes: dict[str, int], pending: dict[str, int]) -> Side:
    return Side(added=Counter(added), nodes=[Counter(nodes)], pending=[Counter(pending)])


def test_compare_counts_per_group_and_pending_per_workload():
    case = ca_cases.by_id(["lw-basic"])[0]
    big = f"{case.id}-big"
    same = _side({big: 1}, {big: 1}, {})
    assert compare(case, same, _side({big: 1}, {big: 1}, {})) == []
    diffs = compare(case, same, _side({f"{case.id}-small": 1}, {big: 1}, {"web": 1}))
    assert [d.split(":")[0] for d in diffs] == ["nodes added", "phase 1 pending"]
    assert "'small': 1" in diffs[0]


def test_group_ties_compare_the_pattern_only():
    case = ca_cases.by_id(["balance-not-similar"])[0]
    assert case.id in ca_cases.GROUP_TIES
    a, b = f"{case.id}-a", f"{case.id}-b"
    assert compare(case, _side({a: 4}, {a: 4}, {}), _side({b: 4}, {b: 4}, {})) == []
    assert compare(case, _side({a: 4}, {a: 4}, {}), _side({a: 2, b: 2}, {a: 2, b: 2}, {}))


def test_an_error_on_either_side_is_a_difference():
    case = ca_cases.CASES[0]
    assert compare(case, Side(error="boom"), Side()) == [
        "error: cluster-autoscaler='boom' joiner=''"
    ]


def test_placement_races_compare_the_decision_only():
    case = ca_cases.by_id(["priority-full-falls-back"])[0]
    assert case.id in ca_cases.PLACEMENT_RACES
    big, small = f"{case.id}-big", f"{case.id}-small"
    added = {big: 1, small: 2}
    assert compare(case, _side(added, {big: 1, small: 1}, {}), _side(added, added, {})) == []
    assert compare(case, _side({big: 2}, {big: 2}, {}), _side(added, added, {}))
