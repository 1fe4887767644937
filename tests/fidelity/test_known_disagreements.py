"""Joiner's behaviour on the diff-karpenter cases where it knowingly differs from Karpenter
(docs/fidelity.md, "Known disagreements"), pinned without a cluster: the same rendered
objects, the same instance-types file, the same ``build_plan`` the harness calls.

When one of these is fixed (by the issue named), the test fails: update docs/fidelity.md
and turn the test into a regression test of the agreement.
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


def test_daemonset_host_port_conflict_is_not_counted(tmp_path: Path) -> None:
    """Issue 19 (DaemonSet hostPorts): Karpenter v1.14 counts the host ports of the
    DaemonSet pods a new node will run, so pods asking for the same port (9100, the
    exporter's) stay pending; Joiner launches a node for each."""
    side = _plan("daemonset-host-port", tmp_path)
    assert side.error == ""
    assert [c[1] for c in side.claims] == ["c-1x", "c-1x"]
    assert side.pending == []
