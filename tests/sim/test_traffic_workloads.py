"""Workloads from traffic: the HPA model, CronJobs and Jobs run to completion."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.clock import SimClock
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import DailyMultiplier, Hpa, HpaController, Trace

from .test_baseline import APP, _write


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[float, int]] = []
        self.clock: SimClock | None = None

    def set_replicas(self, n: int) -> None:
        assert self.clock is not None
        self.calls.append((self.clock.now(), n))


def _hpa(values: list[float], **kw: object) -> tuple[HpaController, _Recorder, SimClock]:
    trace = Trace(tuple(values), 10.0, 1, 100, "t.csv")
    clock = SimClock()
    rec = _Recorder()
    rec.clock = clock
    ctl = HpaController(Hpa(trace=trace, **kw), rec, clock)  # type: ignore[arg-type]
    return ctl, rec, clock


def test_hpa_scale_up_is_rate_limited_per_sync():
    # 10 req/replica: 20 -> 2 replicas at t=0, then 1000 -> 100 wanted.
    ctl, rec, clock = _hpa([20.0] + [1000.0] * 10)
    ctl.start(180.0)
    clock.run_until(180.0)
    ups = [n for _, n in rec.calls]
    # Each 15 s sync from minute 1: max(2 x current, current + 4): 2 -> 6 -> 12 -> 24 -> 48
    # -> 96; then 100 is within the 10 % tolerance of 96 and nothing changes.
    assert ups == [6, 12, 24, 48, 96]
    assert [t for t, _ in rec.calls] == [60.0, 75.0, 90.0, 105.0, 120.0]


def test_hpa_scale_down_waits_for_the_stabilisation_window():
    ctl, rec, clock = _hpa([500.0] * 2 + [100.0] * 20)
    ctl.start(20 * 60.0)
    clock.run_until(20 * 60.0)
    assert ctl.initial_replicas(ctl.hpa) == 50
    downs = [(t, n) for t, n in rec.calls if n < 50]
    # The rate drops at minute 2; the highest recommendation of the last 5 minutes holds
    # until minute 7.
    assert downs[0] == (420.0, 10)


def test_hpa_tolerance_keeps_replicas_within_ten_percent():
    ctl, rec, clock = _hpa([100.0, 105.0, 109.0, 95.0, 100.0])
    ctl.start(300.0)
    clock.run_until(300.0)
    assert rec.calls == []


def test_daily_multipliers_apply_at_wall_clock_times():
    trace = Trace((10.0,) * 3000, 10.0, 1, 100, "t.csv")
    spike = DailyMultiplier(start_minute=8 * 60, duration_minutes=30, factor=3.0, name="morning")
    hpa = Hpa(trace=trace, multipliers=(spike,), start_minute_of_day=6 * 60)
    assert hpa.rate_at(0.0) == 10.0
    assert hpa.rate_at(2 * 3600.0) == 30.0  # 08:00
    assert hpa.rate_at(2 * 3600.0 + 29 * 60) == 30.0
    assert hpa.rate_at(2 * 3600.0 + 30 * 60) == 10.0
    assert hpa.rate_at(26 * 3600.0) == 30.0  # next day, 08:00


CRONJOB = """\
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: default}
spec:
  schedule: "0 2 * * *"
  concurrencyPolicy: POLICY
  jobTemplate:
    spec:
      parallelism: 2
      completions: 4
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: b, image: b, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def _cron(tmp_path: Path, *, policy: str = "Allow", run_for: str = "20m", duration: str = "28h"):
    return _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}\n"
        f"    - {{cronJob: default/nightly, runFor: {run_for}}}",
        extra_spec='  startTime: "2025-01-06T00:00:00Z"\n',
        duration=duration,
        app=APP + CRONJOB.replace("POLICY", policy),
    )


def test_cronjob_fires_on_schedule_and_runs_to_completion(tmp_path):
    sc = load_scenario(_cron(tmp_path))
    (run,) = sc.cronjobs
    assert tuple(run.fire_times_s) == (7200.0, 7200.0 + 86400.0)
    assert sc.start_time == datetime(2025, 1, 6, tzinfo=UTC)
    rt = SimulationRuntime(sc)
    summary = rt.run().summary
    (cron,) = rt.cronjobs
    assert [j.key for j in cron.jobs] == ["default/nightly-120", "default/nightly-1560"]
    for job in cron.jobs:
        assert job.done and job.succeeded == 4
        pods = [p for p in rt.state.pods.values() if p.owner == job.key]
        assert len(pods) == 4
        # Two waves of two pods, each running 20 minutes once bound.
        for p in pods:
            assert p.deleted_at_s - p.bound_at_s == pytest.approx(1200.0)
            assert not p.lost
    assert summary["pods"]["pending"] == 0
    # Finished pods free their nodes: Joiner's consolidation removes the batch capacity.
    assert all("CronJob schedules are not simulated" not in w for w in summary["warnings"])


def test_cronjob_forbid_skips_while_a_job_runs(tmp_path):
    path = _cron(tmp_path, policy="Forbid", run_for="23h", duration="28h")
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    (cron,) = rt.cronjobs
    assert len(cron.jobs) == 1


def test_cronjob_needs_run_for_and_a_valid_schedule(tmp_path):
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}\n    - {cronJob: default/nightly}",
        app=APP + CRONJOB.replace("POLICY", "Allow"),
    )
    with pytest.raises(InputError, match="runFor"):
        load_scenario(path)
    (tmp_path / "app.yaml").write_text(
        APP + CRONJOB.replace("POLICY", "Allow").replace("0 2 * * *", "61 2 * * *")
    )
    path.write_text(
        path.read_text().replace(
            "{cronJob: default/nightly}", "{cronJob: default/nightly, runFor: 1m}"
        )
    )
    with pytest.raises(InputError, match=r"spec\.schedule"):
        load_scenario(path)


def test_job_with_run_for_completes(tmp_path):
    job = """\
---
apiVersion: batch/v1
kind: Job
metadata: {name: ci, namespace: default}
spec:
  parallelism: 3
  completions: 5
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
"""
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}\n"
        "    - {deployment: default/ci, runFor: 10m}",
        app=APP + job,
    )
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    (ctl,) = rt.jobs
    assert ctl.done and ctl.succeeded == 5
    pods = [p for p in rt.state.pods.values() if p.owner == "default/ci"]
    assert len(pods) == 5
    assert ctl.completed_at_s is not None and ctl.completed_at_s > 1200.0


def test_hpa_workload_in_a_scenario(tmp_path):
    trace = tmp_path / "rate.csv"
    trace.parent.mkdir(parents=True, exist_ok=True)
    trace.write_text("minute,value\n" + "".join(f"{m},{40 if m < 10 else 10}\n" for m in range(30)))
    path = _write(
        tmp_path,
        workloads=f"    - deployment: default/web\n      hpa: {{file: {trace}, "
        "targetPerReplica: 10, min: 1, max: 10}",
        duration="30m",
    )
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    web = [p for p in rt.state.pods.values() if p.owner == "default/web"]
    assert len(web) == 4
    # Scale-down to 1 after the 5-minute window that follows the drop at minute 10.
    gone = sorted(p.deleted_at_s for p in web if p.deleted_at_s is not None)
    assert gone and min(gone) >= 15 * 60.0


@pytest.mark.parametrize(
    ("every", "fires"),
    [
        ("5h", (18000.0, 36000.0, 54000.0, 72000.0, 90000.0)),
        ("9h30m", (34200.0, 68400.0)),
        ("90000.5s", (90000.0,)),  # robfig/cron Every: fractions of a second dropped
    ],
)
def test_cronjob_every_fires_after_each_delay(tmp_path, every, fires):
    """``@every <duration>`` is a CronJob schedule the CronJob controller accepts (robfig/cron
    ConstantDelaySchedule): the first fire one delay after the start, then every delay."""
    path = _cron(tmp_path)
    (tmp_path / "app.yaml").write_text(
        APP + CRONJOB.replace("POLICY", "Allow").replace("0 2 * * *", f"@every {every}")
    )
    (run,) = load_scenario(path).cronjobs
    assert tuple(run.fire_times_s) == fires


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("@every 5 minutes", "is not a Go duration"),
        ("TZ=Europe/Paris 0 2 * * *", "use spec.timeZone"),
        ("CRON_TZ=UTC 0 2 * * *", "use spec.timeZone"),
        ("@every5m", "is not a supported macro"),
    ],
)
def test_cronjob_schedule_is_checked_alike_by_lint_plan_and_simulate(tmp_path, schedule, message):
    """A CronJob's schedule is checked when the manifests load, so every command that reads
    them gives the same located error (lint once accepted what simulate refused)."""
    from typer.testing import CliRunner

    from joiner.cli.main import app

    path = _cron(tmp_path)
    (tmp_path / "app.yaml").write_text(
        APP + CRONJOB.replace("POLICY", "Allow").replace("0 2 * * *", schedule)
    )
    app_yaml = str(tmp_path / "app.yaml")
    commands = (
        ["lint", app_yaml],
        ["plan", "-f", app_yaml],
        ["simulate", str(path), "--out", str(tmp_path / "o")],
    )
    for args in commands:
        result = CliRunner().invoke(app, args, catch_exceptions=False)
        assert result.exit_code == 2, (args, result.output)
        flat = " ".join(result.output.split())
        assert message in flat and "CronJob/nightly" in flat and "spec.schedule" in flat
