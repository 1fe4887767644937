"""``examples/clinic-headroom``: placeholder pods keep the booking rush's p95 pending under
5 s where no headroom leaves it at about the launch time of a node (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joiner.api.manifests.proportional import Linear
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

# One 4-hour run of a few hundred pods (the headroom run's figures come from its golden
# summary, which tests/sim/test_golden.py keeps current).
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "clinic-headroom"


def test_headroom_cuts_the_rush_p95_under_5_s_at_a_price():
    none = SimulationRuntime(load_scenario(EXAMPLE / "no-headroom.yaml")).run().summary
    golden = json.loads(
        (REPO / "tests" / "golden" / "clinic-headroom" / "summary.json").read_text()
    )
    rush_none = none["windows"]["booking-rush"]
    rush = golden["windows"]["booking-rush"]
    assert rush_none["pods"] > 300 and rush["pods"] > 300
    # Without headroom the rush waits for new nodes (Ready 25-45 s after launch).
    assert rush_none["pendingSeconds"]["p95"] > 25
    assert rush["pendingSeconds"]["p95"] < 5
    assert golden["cost"]["total"] > none["cost"]["total"]
    # The placeholders were preempted during the rush and replaced in the background.
    preempted = [e for e in golden["timeline"] if e["kind"] == "preempted"]
    assert preempted and all(e["pod"].startswith("clinic/headroom-") for e in preempted)
    assert golden["pods"]["pending"] == none["pods"]["pending"] == 0


def test_the_prescale_settings_raise_the_three_hpas_at_07_50_for_40_minutes():
    # Their figures come from tools/clinic_headroom.py (the table in docs/guides/headroom.md);
    # here only what they schedule, which is cheap to check.
    for name, api in (("prescale-150.yaml", 150), ("prescale-peak.yaml", 195)):
        sc = load_scenario(EXAMPLE / name)
        assert [(s.target, s.duration_s) for s in sc.schedules] == [
            ("clinic/api", 2400.0),
            ("clinic/booking", 2400.0),
            ("clinic/notification", 2400.0),
        ]
        assert sc.schedules[0].min_replicas == api
        # 07:50 is 6600 s after the 06:00 start; the next fire is the next day's.
        assert list(sc.schedules[0].fire_times) == [6600.0]


def test_the_proportional_placeholders_are_sized_by_their_autoscaler():
    sc = load_scenario(EXAMPLE / "headroom-proportional.yaml")
    (cpa,) = sc.manifests.proportional
    assert (cpa.key, cpa.target_key, cpa.poll_s) == (
        "clinic/headroom-autoscaler",
        "clinic/headroom",
        10.0,
    )
    assert cpa.params == Linear(cores_per_replica=2.0, prevent_single_point_failure=True)
