"""Where Joiner's baseline knowingly decides otherwise than the real Cluster Autoscaler
(docs/fidelity-autoscaler.md, "Known differences"): each pinned with the case's input, so a
change of either side's answer is seen."""

from __future__ import annotations

from pathlib import Path

import ca_cases
from ca_casekit import group_name
from ca_harness import joiner_side


def test_hostname_spread_estimate_opens_a_node_per_pod(tmp_path: Path):
    """``spread-hostname``: four pods under a maxSkew-1 hostname spread, one m5.2xlarge
    group. Cluster Autoscaler's binpacking estimator adds template nodes one at a time and
    puts each pod on the last one while the spread allows (``tryToScheduleOnNewNodes``; with
    one new node the global minimum is that node's own count, so all four fit it): it adds
    one node. Joiner estimates with its Karpenter-style solve, where every new node is a
    domain of its own and the spread sends each pod to another: it adds four, and removes
    the three that kube-scheduler leaves empty once their unneeded time has passed. The
    outcome (one node) is the same; the scale-up asks for three nodes more."""
    case = ca_cases.by_id(["spread-hostname"])[0]
    side = joiner_side(case, tmp_path)
    big = group_name(case, case.groups[0])
    assert side.error == ""
    assert side.added[big] == 4
    assert side.nodes[0][big] == 4  # at the end of phase 1 in virtual time, all still there
