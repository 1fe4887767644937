"""Joiner's behaviour on diff-karpenter cases, pinned without a cluster: the same rendered
objects, the same instance-types file, the same ``build_plan`` the harness calls.

A known disagreement (docs/fidelity.md, "Known disagreements") is pinned here while it lasts;
once fixed, its test asserts the agreement instead, as a regression test. There is no open
disagreement now.
"""

from __future__ import annotations

from pathlib import Path

import cases
import catalog
import render
from harness import Snapshot, joiner_plan

from joiner.cloudprovider.kwok import load_instance_types


def _plan(case_id: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    [case] = cases.by_id([case_id])
    types = load_instance_types(catalog.write(tmp_path / "types.json"))
    docs = [dict(render.KWOK_NODECLASS)]
    docs += [d for d in render.base_objects(case) if d["kind"] != "Namespace"]
    return joiner_plan(case, Snapshot(docs, {}, {}), types, tmp_path)


def test_daemonset_host_port_conflict_leaves_the_pods_pending(tmp_path: Path) -> None:
    """Was a known disagreement, fixed by issue 19: Karpenter v1.14 counts the host ports of
    the DaemonSet pods a new node will run (``HostPortUsage`` of the daemon overhead groups,
    ``pkg/controllers/provisioning/scheduling/scheduler.go``), so pods asking for the
    exporter's port 9100 stay pending and no NodeClaim is launched for them."""
    side = _plan("daemonset-host-port", tmp_path)
    assert side.error == ""
    assert side.claims == []
    assert side.pending == ["dsp-0", "dsp-1"]
