"""Where a series ends: absent at the range's last step (staleness markers), not two steps
before; an as-run node gone in the last steps ends there."""

from __future__ import annotations

from pathlib import Path

from joiner.history.series import QueryRange
from joiner.history.translate import ended_before_end, objects_from_files, translate
from tests.history.conftest import T0, MemorySource, flat
from tests.history.test_translate import RANGE, _answers, _cluster


def test_a_node_gone_in_the_last_steps_ends_where_its_series_does(tmp_path: Path) -> None:
    """Regression (user report): a node whose kube_node_info series stopped within the last
    two steps was written as still running. A live Prometheus marks the series stale at the
    next scrape, so absent at the range's last step means gone."""
    answers = _answers()
    answers["node_info"] = [
        flat({"node": "a", "provider_id": "aws:///us-east-1a/i-0a"}, 1, 0, 7200),
        # Last seen one step before the last one (7200 s).
        flat({"node": "c", "provider_id": "aws:///us-east-1a/i-0c"}, 1, 0, 7140),
    ]
    objects = objects_from_files([_cluster(tmp_path)])
    nodes = {n.node: n for n in translate(MemorySource(answers), "m", RANGE, objects).nodes}
    assert nodes["a"].end_s is None
    assert nodes["c"].end_s == 7140.0
    # An end off the step grid: the last evaluation is at 7200 s, where "a" is present.
    off_grid = QueryRange(T0, T0 + 7230.0, 60.0)
    nodes = {n.node: n for n in translate(MemorySource(answers), "m", off_grid, objects).nodes}
    assert nodes["a"].end_s is None and nodes["c"].end_s == 7140.0


def test_ended_before_end_is_absence_at_the_last_step() -> None:
    rng = QueryRange(0.0, 600.0, 60.0)
    assert not ended_before_end(600.0, rng)
    assert ended_before_end(540.0, rng)
    assert not ended_before_end(595.0, rng)  # a sample off the grid, within half a step
