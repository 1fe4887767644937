"""Scheduled scaling (``spec.schedules``, issue 20): a minimum raised at times of day, in
virtual time."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.controllers.provisioning.buffers import Buffers
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.clock import SimClock
from joiner.sim.scenario import load_scenario
from joiner.sim.schedules import ScheduledMinimum, ScheduleRunner, fire_times
from tests.sim.test_capacity_buffer import BUFFER
from tests.sim.test_manifest_hpa import _scenario as hpa_scenario

from .test_baseline import _write


def _web(tmp_path: Path, workloads: str, schedules: str, start: str = "07:40") -> Path:
    return _write(
        tmp_path,
        workloads=workloads,
        duration="40m",
        extra_spec=f'  startTime: "2025-01-06T{start}:00Z"\n  schedules:\n{schedules}',
    )


def _web_pods(rt: SimulationRuntime) -> list[tuple[float, float]]:
    """(created, deleted) of the web pods; deleted is -1 for a pod still running."""
    return sorted(
        (p.created_at_s, -1.0 if p.deleted_at_s is None else p.deleted_at_s)
        for p in rt.state.pods.values()
        if p.owner == "default/web"
    )


def test_fixed_replicas_are_raised_for_the_window_and_restored(tmp_path):
    path = _web(
        tmp_path,
        "    - {deployment: default/web, replicas: 1}",
        '    - {workload: web, cron: "50 7 * * *", minReplicas: 4, duration: 20m}',
    )
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    pods = _web_pods(rt)
    # 07:50 is run time 600 s; the window closes at 1800 s (08:10).
    assert pods == [(0.0, -1.0)] + [(600.0, 1800.0)] * 3


def test_a_window_open_at_the_start_is_in_force_from_time_zero(tmp_path):
    path = _web(
        tmp_path,
        "    - {deployment: default/web, replicas: 1}",
        '    - {workload: web, cron: "50 7 * * *", minReplicas: 3, duration: 20m}',
        start="08:00",
    )
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    assert _web_pods(rt) == [(0.0, -1.0)] + [(0.0, 600.0)] * 2


def test_the_hpa_minimum_is_raised_and_released(tmp_path):
    path = hpa_scenario(tmp_path, "- {deployment: web, traffic: {file: traffic.csv}}")
    text = path.read_text().replace(
        "duration: 10m",
        "duration: 10m\n  schedules:\n"
        '    - {workload: default/web, cron: "0 * * * *", minReplicas: 12, duration: 1m}\n',
    )
    path.write_text(text)
    sc = load_scenario(path)
    (s,) = sc.schedules
    assert (s.kind, s.target, s.min_replicas, s.duration_s) == ("workload", "default/web", 12, 60)
    rt = SimulationRuntime(sc)
    rt.run()
    # At 00:00 the window is open: 12 replicas at once (the HPA alone would start at 2).
    created = sorted(p.created_at_s for p in rt.state.pods.values() if p.owner == "default/web")
    assert created[:12] == [0.0] * 12
    (ctl,) = [h for h in rt.hpas if h.deployment.key == "default/web"]
    assert ctl.min_floor == 0  # the window (00:00-00:01) closed


def test_overlapping_windows_take_the_highest_minimum():
    start = datetime(2025, 1, 6, tzinfo=UTC)
    a = ScheduledMinimum(
        "workload",
        "default/web",
        "0 * * * *",
        5,
        600.0,
        fire_times("0 * * * *", start, 600.0, 3600.0, field="a"),
    )
    b = ScheduledMinimum(
        "workload",
        "default/web",
        "5 * * * *",
        8,
        60.0,
        fire_times("5 * * * *", start, 60.0, 3600.0, field="b"),
    )
    clock = SimClock()
    seen: list[tuple[float, int]] = []
    ScheduleRunner((a, b), clock, lambda _k, _t, n: seen.append((clock.now(), n))).start()
    clock.run_until(3600.0)
    assert seen == [(0.0, 5), (300.0, 8), (360.0, 5), (600.0, 0), (3600.0, 5)]


def test_a_schedules_own_windows_merge_and_a_huge_duration_is_one_window():
    """Every minute for 12 minutes: the windows of one schedule merge into one (one apply
    when it opens, one when it closes); a window of a million hours opened before the run
    is in force from 0 without walking the fires since (it never ran to an end)."""
    start = datetime(2025, 1, 6, tzinfo=UTC)
    every_minute = ScheduledMinimum(
        "workload",
        "default/web",
        "* 0 * * *",
        4,
        720.0,
        fire_times("* 0 * * *", start, 720.0, 7200.0, field="a"),
    )
    clock = SimClock()
    seen: list[tuple[float, int]] = []
    ScheduleRunner((every_minute,), clock, lambda _k, _t, n: seen.append((clock.now(), n))).start()
    clock.run_until(7200.0)
    assert seen == [(0.0, 4), (3540.0 + 720.0, 0)]
    huge = 1e6 * 3600.0
    forever = ScheduledMinimum(
        "workload",
        "default/web",
        "* * * * *",
        9,
        huge,
        fire_times("* * * * *", start, huge, 7200.0, field="b"),
    )
    assert next(iter(forever.fire_times)) == -60.0  # only the last fire before the start
    clock = SimClock()
    seen = []
    ScheduleRunner((forever,), clock, lambda _k, _t, n: seen.append((clock.now(), n))).start()
    clock.run_until(7200.0)
    assert seen == [(0.0, 9)]
    assert clock.events_run < 200


def test_a_buffer_floor_raises_its_virtual_pods():
    m = load_text(BUFFER)
    buffers = Buffers(m.capacitybuffers, lambda _k: 0)
    assert len(buffers.virtual_pods()) == 3
    buffers.floors["default/spare"] = 7
    assert len(buffers.virtual_pods()) == 7


@pytest.mark.parametrize(
    ("schedule", "match"),
    [
        (
            '{workload: web, buffer: b, cron: "0 8 * * *", minReplicas: 2, duration: 1h}',
            r"spec.schedules\[0\]: give exactly one",
        ),
        (
            '{workload: nope, cron: "0 8 * * *", minReplicas: 2, duration: 1h}',
            r"spec.schedules\[0\].workload.*no workload",
        ),
        (
            '{buffer: nope, cron: "0 8 * * *", minReplicas: 2, duration: 1h}',
            r"spec.schedules\[0\].buffer.*no CapacityBuffer",
        ),
        (
            '{workload: web, cron: "0 25 * * *", minReplicas: 2, duration: 1h}',
            r"spec.schedules\[0\].cron",
        ),
        (
            '{workload: web, cron: "0 8 * * *", minReplicas: 2, duration: soon}',
            r"spec.schedules\[0\].duration",
        ),
        (
            '{workload: web, cron: "0 8 * * *", minReplicas: 2, duration: 0s}',
            r"spec.schedules\[0\].duration",
        ),
        (
            '{workload: web, cron: "0 8 * * *", minReplicas: -1, duration: 1h}',
            r"spec.schedules\[0\].minReplicas",
        ),
        (
            '{workload: web, cron: "0 8 * * *", minReplicas: 2, duration: 1h, size: 3}',
            r"spec.schedules\[0\].size",
        ),
    ],
)
def test_bad_schedules_name_the_field(tmp_path, schedule, match):
    path = _web(tmp_path, "    - {deployment: default/web, replicas: 1}", f"    - {schedule}")
    with pytest.raises(InputError, match=match):
        load_scenario(path)


def test_a_minimum_above_the_hpa_maximum_is_refused(tmp_path):
    path = _web(
        tmp_path,
        "    - {deployment: default/web, hpa: {file: t.csv, targetPerReplica: 1, max: 5}}",
        '    - {workload: web, cron: "0 8 * * *", minReplicas: 6, duration: 1h}',
    )
    (tmp_path / "t.csv").write_text("minute,value\n0,1\n")
    with pytest.raises(InputError, match=r"spec.schedules\[0\].minReplicas.*maxReplicas 5"):
        load_scenario(path)
