"""Every Karpenter v1.14 metric (core and karpenter-provider-aws), as extracted from
Karpenter's Go source by ``tools/karpenter_metrics.py``, is in Joiner's registry with the
same name, type, label names and buckets, or on ``metrics_exclusions.EXCLUDED`` with a
reason. The extraction needs Go and the modules (the module cache, or the module proxy);
without them those tests are skipped with the reason. The registry's own description
(``Metrics.specs``) is checked against what ``/metrics`` actually serves, without Go."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import Gauge, Histogram, Summary
from prometheus_client.parser import text_string_to_metric_families

from joiner.cluster.kube.metrics import Metrics, MetricSpec
from joiner.cluster.kube.metrics_exclusions import EXCLUDED

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "karpenter_metrics.py"
MISSING = 3  # tools/karpenter_metrics.py's exit status when Go or a module is missing


@pytest.fixture(scope="session")
def karpenter() -> dict[str, dict[str, Any]]:
    """Karpenter's metrics by exposed name, extracted once per session."""
    proc = subprocess.run(
        [sys.executable, str(TOOL)], capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode == MISSING:
        pytest.skip(f"cannot read Karpenter's source: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    return {m["name"]: m for m in json.loads(proc.stdout)}


def test_the_extraction_reads_names_labels_and_buckets_from_the_source(
    karpenter: dict[str, dict[str, Any]],
) -> None:
    """Constants are resolved across packages and modules (``metrics.Namespace`` in the AWS
    provider), label lists built by functions and ``append`` are followed, and every bucket
    expression Karpenter uses is evaluated."""
    assert len(karpenter) >= 70
    assert not [n for n in karpenter if "<" in n or not n.startswith("karpenter_")]
    created = karpenter["karpenter_nodeclaims_created_total"]
    assert (created["type"], created["labels"]) == (
        "counter",
        ["reason", "nodepool", "min_values_relaxed"],
    )
    launch = karpenter["karpenter_cloudprovider_instance_launch_failures_total"]
    assert launch["labels"] == ["zone", "zone_id", "capacity_type", "reason"]
    pods = karpenter["karpenter_pods_state"]["labels"]
    assert pods[:3] == ["name", "namespace", "owner"] and "capacity_type" in pods
    lifetime = karpenter["karpenter_nodes_lifetime_duration_seconds"]["bucket_values"]
    assert lifetime[:4] == [900, 1800, 2700, 3600] and lifetime[-1] == 30 * 86400
    termination = karpenter["karpenter_nodeclaims_termination_duration_seconds"]
    assert termination["buckets"] == "prometheus.ExponentialBuckets(1, 2, 12)"
    assert termination["bucket_values"][-1] == 2048
    duration = karpenter["karpenter_cloudprovider_duration_seconds"]
    assert duration["buckets"] == "prometheus.DefBuckets"
    startup = karpenter["karpenter_pods_startup_duration_seconds"]
    assert (startup["type"], startup["objectives"]) == ("summary", "metrics.SummaryObjectives()")
    allocatable = karpenter["karpenter_nodes_allocatable"]
    assert "getWellKnownLabels" in allocatable["dynamic_labels"]
    assert allocatable["labels"] == ["node_name", "phase", "managed", "resource_type"]
    histograms = [m for m in karpenter.values() if m["type"] == "histogram"]
    assert all(m["bucket_values"] for m in histograms)


def _mismatch(theirs: dict[str, Any], ours: MetricSpec | None) -> str | None:
    if ours is None:
        return "missing from Joiner's registry"
    if ours.kind != theirs["type"]:
        return f"type {ours.kind}, Karpenter's {theirs['type']}"
    if theirs.get("dynamic_labels"):
        return f"labels known only at run time ({theirs['dynamic_labels']})"
    if list(ours.labels) != theirs["labels"]:
        return f"labels {list(ours.labels)}, Karpenter's {theirs['labels']}"
    if theirs["type"] == "histogram" and list(ours.buckets) != theirs["bucket_values"]:
        return f"buckets {list(ours.buckets)}, Karpenter's {theirs['buckets']}"
    return None


def test_every_applicable_karpenter_metric_is_in_joiners_registry_as_karpenter_has_it(
    karpenter: dict[str, dict[str, Any]],
) -> None:
    specs = Metrics().specs
    wrong = {
        name: why
        for name, theirs in karpenter.items()
        if name not in EXCLUDED and (why := _mismatch(theirs, specs.get(name)))
    }
    assert not wrong, json.dumps(wrong, indent=2)


def test_exclusions_are_karpenter_metrics_joiner_lacks_each_with_a_reason(
    karpenter: dict[str, dict[str, Any]],
) -> None:
    specs = Metrics().specs
    assert sorted(set(EXCLUDED) - set(karpenter)) == []  # gone from Karpenter
    assert sorted(set(EXCLUDED) & set(specs)) == []  # implemented: take it off the list
    assert all(reason.strip() for reason in EXCLUDED.values())


def test_joiners_karpenter_names_are_all_karpenters(
    karpenter: dict[str, dict[str, Any]],
) -> None:
    """A ``karpenter_`` name Karpenter does not have would mislead; Joiner's own are
    ``joiner_``."""
    specs = Metrics().specs
    assert sorted(n for n in specs if n.startswith("karpenter_") and n not in karpenter) == []
    assert all(n.startswith(("karpenter_", "joiner_")) for n in specs)


def _doc_rows() -> dict[str, str]:
    """``docs/reference/metrics.md``'s table: metric name -> its row."""
    rows = {}
    for line in (ROOT / "docs" / "reference" / "metrics.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            rows[cells[0].strip("`")] = line
    return rows


def test_the_metrics_page_lists_each_metric_as_exposed_or_not() -> None:
    rows = _doc_rows()
    specs = Metrics().specs
    karpenter_named = {n for n in specs if n.startswith("karpenter_")}
    assert sorted(set(rows) - karpenter_named - set(EXCLUDED)) == []
    assert sorted(karpenter_named - set(rows)) == []
    assert sorted(set(EXCLUDED) - set(rows)) == []
    for name, row in rows.items():
        assert ("| not exposed: " in row) == (name in EXCLUDED), row
        assert ("| updated: " in row) == (name in specs), row


def test_the_metrics_page_lists_every_karpenter_metric(
    karpenter: dict[str, dict[str, Any]],
) -> None:
    assert sorted(set(karpenter) ^ set(_doc_rows())) == []


def _touch_every_metric(metrics: Metrics) -> None:
    """Give each metric one sample (label values ``x``)."""
    for name, collector in metrics.collectors.items():
        labelled: Any = collector
        if metrics.specs[name].labels:
            labelled = collector.labels(*["x"] * len(metrics.specs[name].labels))
        if isinstance(collector, Histogram | Summary):
            labelled.observe(0.01)
        elif isinstance(collector, Gauge):
            labelled.set(1)
        else:
            labelled.inc()


def test_the_served_exposition_is_what_the_specs_say_with_no_created_series() -> None:
    """``Metrics.specs`` (compared with Karpenter above) describes what ``/metrics`` serves:
    names, types, label names, histogram buckets; and no ``*_created`` series, which
    Karpenter (client_golang) does not have and prometheus_client adds unless disabled."""
    metrics = Metrics()
    _touch_every_metric(metrics)
    served: dict[str, MetricSpec] = {}
    sample_names: list[str] = []
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        sample_names += [s.name for s in family.samples]
        name = f"{family.name}_total" if family.type == "counter" else family.name
        # The parser's label order is not the exposition's: compare the sets.
        labels = {tuple(sorted(k for k in s.labels if k != "le")) for s in family.samples}
        assert len(labels) == 1, (name, labels)
        bounds = tuple(
            float(s.labels["le"])
            for s in family.samples
            if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"
        )
        served[name] = MetricSpec(name, family.type, labels.pop(), bounds)
    specs = {
        n: dataclasses.replace(s, labels=tuple(sorted(s.labels))) for n, s in metrics.specs.items()
    }
    assert served == specs
    assert [n for n in sample_names if n.endswith("_created")] == []
