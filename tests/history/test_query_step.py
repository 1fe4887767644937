"""The per-pod queries' coarse step: ``queries.query_step``, the sources asking and
reading each query at its own step, and ``last_over_time`` finding short-lived pods."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx2

from joiner.history.files import FileSource
from joiner.history.prometheus import PrometheusSource
from joiner.history.queries import BY_NAME, PER_OBJECT_STEP_S, QUERIES, query_step
from joiner.history.series import QueryRange

URL = "http://prometheus.example:9090"
START = 1_700_000_000.0
DAY = 86400.0
SCRAPE_S = 30.0

#: A pod that lived 5 minutes inside the range's third hour.
POD_FROM, POD_TO = START + 2 * 3600 + 600, START + 2 * 3600 + 900


class LastOverTime:
    """A range-query endpoint over one pod series scraped every ``SCRAPE_S`` while alive,
    evaluating ``last_over_time(...[w])`` as Prometheus does: at each evaluation time t,
    the latest raw sample in ``(t - w, t]`` (prometheus/prometheus promql/functions.go,
    ``funcLastOverTime``; a range selector's left end is open since Prometheus 3.0). The
    window ``w`` is read from the PromQL; without one, an instant lookup (5 min lookback)."""

    def __init__(self, value: Callable[[float], float]) -> None:
        self.value = value
        self.asked: list[dict[str, str]] = []
        n = int((POD_TO - POD_FROM) // SCRAPE_S) + 1
        self.scrapes = [POD_FROM + k * SCRAPE_S for k in range(n)]

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        p = dict(request.url.params)
        self.asked.append(p)
        found = re.search(r"\[(\d+)h\]", p["query"])
        window = int(found.group(1)) * 3600.0 if found else 300.0
        start, end, step = (round(float(p[k]) * 1000) for k in ("start", "end", "step"))
        values = []
        for t_ms in range(start, end + 1, step):
            t = t_ms / 1000
            inside = [s for s in self.scrapes if t - window < s <= t]
            if inside:
                values.append([t, repr(self.value(inside[-1]))])
        result = [{"metric": {"namespace": "ns", "pod": "short"}, "values": values}]
        result = result if values else []
        body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        return httpx2.Response(200, json=body)


def _source(fake: LastOverTime, window: QueryRange, **kw: object) -> PrometheusSource:
    return PrometheusSource(URL, window, transport=httpx2.MockTransport(fake), **kw)  # type: ignore[arg-type]


def test_query_step_is_coarse_for_per_pod_queries_and_ends_on_the_range_end() -> None:
    day = QueryRange(START, START + DAY, 60.0)
    created = BY_NAME["pod_created"]
    assert query_step(created, day) == PER_OBJECT_STEP_S
    assert query_step(BY_NAME["node_info"], day) == 60.0
    # Shorter than an hour: the range itself (two evaluations, at start and end).
    assert query_step(created, QueryRange(START, START + 1800, 60.0)) == 1800.0
    # 90 minutes: two steps of 45 minutes, so the last evaluation is the range's end.
    assert query_step(created, QueryRange(START, START + 5400, 60.0)) == 2700.0
    # A range of one instant keeps the range's step.
    assert query_step(created, QueryRange(START, START, 60.0)) == 60.0


def test_every_per_pod_query_looks_back_at_least_its_step() -> None:
    coarse = [q for q in QUERIES if q.step_s is not None]
    assert {q.name for q in coarse} == {
        "pod_container_requests",
        "pod_init_container_requests",
        "pod_init_container_info",
        "pod_owner",
        "pod_created",
        "pod_scheduled_time",
        "pod_node",
    }
    for q in coarse:
        assert q.promql.count("last_over_time(") == 1, q.name
        assert f"[{round(PER_OBJECT_STEP_S) // 3600}h]" in q.promql, q.name


def test_a_pod_living_5_minutes_inside_an_hour_is_found_at_the_next_evaluation() -> None:
    window = QueryRange(START, START + DAY, 60.0)
    q = BY_NAME["pod_created"]
    fake = LastOverTime(lambda _t: POD_FROM)
    (found,) = _source(fake, window).fetch(q.name, q.promql, query_step(q, window))
    assert [a["step"] for a in fake.asked] == ["3600.000"]
    # Seen once, at the end of the hour it lived in, with its creation time.
    assert found.times_s == (START + 3 * 3600,)
    assert found.values == (POD_FROM,)
    # Without the window, sampling every hour would miss it.
    bare = "max by (namespace, pod) (kube_pod_created)"
    assert _source(LastOverTime(lambda _t: POD_FROM), window).fetch(q.name, bare, 3600.0) == []


def test_a_per_query_step_chunks_by_its_own_steps() -> None:
    # A day at 1 s is 86,401 steps (8 chunks); asked every 5 s, 17,281 steps (2 chunks).
    window = QueryRange(START, START + DAY, 1.0)
    fake = LastOverTime(lambda t: t)
    (found,) = _source(fake, window).fetch("pod_scheduled_time", "up", 5.0)
    assert [a["step"] for a in fake.asked] == ["5.000", "5.000"]
    assert float(fake.asked[1]["start"]) == float(fake.asked[0]["end"]) + 5.0
    assert float(fake.asked[1]["end"]) == START + DAY
    # Every 5 s evaluation from the pod's first scrape to 5 min (the lookback) after its
    # last, once each.
    assert len(found.times_s) == len(set(found.times_s)) == (POD_TO + 300 - POD_FROM) // 5


def test_file_source_reads_responses_saved_at_the_per_query_step(tmp_path: Path) -> None:
    window = QueryRange(START, START + DAY, 60.0)
    q = BY_NAME["pod_owner"]
    step = query_step(q, window)
    live = _source(LastOverTime(lambda _t: 1.0), window, save_dir=tmp_path).fetch(
        q.name, q.promql, step
    )
    offline = FileSource(tmp_path, window)
    assert offline.fetch(q.name, q.promql, step) == live
    assert not offline.warnings
    # Asked at another step than saved: read as saved, counted.
    other = FileSource(tmp_path, window)
    assert other.fetch(q.name, q.promql) == live
    assert other.warnings.kinds() == ["saved step other than asked"]
