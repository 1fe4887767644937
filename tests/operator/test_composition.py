"""The simulation, the live controller and ``joiner disrupt`` get their controllers from the
one composition root (``operator/composition.py``): the same controllers, in the same
order, hooked the same way; the live controller adds only liveness and garbage collection,
which act on what the simulated kubelet and cloud never do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from joiner.cloudprovider.catalog import Catalog
from joiner.operator import composition, controller, disrupt, wiring
from joiner.operator.composition import ORDER, Controllers
from joiner.operator.controller import ControllerRuntime
from joiner.operator.controller_settings import ControllerSettings
from joiner.operator.disrupt import DryRun
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "seed-spot" / "scenario.yaml"
#: The controllers only the live controller runs.
LIVE_ONLY = ("liveness", "gc")


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Controllers]]:
    """What each caller got from ``new_controllers``, by module."""
    calls: dict[str, list[Controllers]] = {}
    for module in (wiring, controller, disrupt):

        def spy(*args: Any, _name: str = module.__name__, **kwargs: Any) -> Controllers:
            out = composition.new_controllers(*args, **kwargs)
            calls.setdefault(_name, []).append(out)
            return out

        monkeypatch.setattr(module, "new_controllers", spy)
    return calls


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _simulation() -> SimulationRuntime:
    scenario = load_scenario(SCENARIO)
    gates = replace(scenario.feature_gates, node_repair=True, static_capacity=True)
    return SimulationRuntime(replace(scenario, feature_gates=gates), Catalog.load())


def _live(loop: asyncio.AbstractEventLoop) -> ControllerRuntime:
    rt = ControllerRuntime(
        None,
        settings=ControllerSettings.model_validate(
            {"featureGates": {"nodeRepair": True, "staticCapacity": True}}
        ),
        dry_run=True,
        metrics_port=None,
        health_port=None,
    )
    rt._build(loop)  # builds without an API server: the informers start later
    return rt


def test_simulation_and_live_controller_get_the_same_controllers_in_order(
    built: dict[str, list[Controllers]], loop: asyncio.AbstractEventLoop
) -> None:
    sim = _simulation()
    live = _live(loop)
    [sim_built] = built[wiring.__name__]
    [live_built] = built[controller.__name__]
    assert sim.controllers is sim_built and live.controllers is live_built
    assert [f.name for f in fields(Controllers)] == list(ORDER)
    assert live_built.order() == list(ORDER)
    assert sim_built.order() == [n for n in ORDER if n not in LIVE_ONLY]
    for rt, c in ((sim, sim_built), (live, live_built)):
        assert rt.lifecycle is c.lifecycle and rt.provisioner is c.provisioner
        assert rt.batcher is c.batcher and rt.terminator is c.terminator
        assert rt.interruption is c.interruption and rt.disruption is c.disruption
        assert rt.expiration is c.expiration and rt.health is c.health
        assert rt.static is c.static and c.static is not None


def test_the_shared_hooks_come_first_and_in_the_same_order(
    built: dict[str, list[Controllers]], loop: asyncio.AbstractEventLoop
) -> None:
    sim = _simulation()
    live = _live(loop)
    # The simulation's kubelet watches launches before any controller (cluster adapter).
    assert sim.lifecycle.launch_listeners == [
        sim.kubelet._launched,
        sim.expiration.watch,
        sim._launched,
    ]
    assert live.liveness is not None
    assert live.lifecycle.launch_listeners == [
        live.expiration.watch,
        live.liveness.watch,
        live._launched,
        live.events.nominated,
    ]
    for rt in (sim, live):
        # The batcher's trigger, then static capacity's kick (the gate is on).
        assert len(rt.lifecycle.deleted_listeners) == 2
        assert len(rt.terminator.on_terminated) == 1
    assert len(live.terminator.on_evicted) == 1
    assert sim.terminator.on_evicted[1] == sim._gone


def test_the_cluster_autoscaler_baseline_leaves_disruption_unhooked(
    built: dict[str, list[Controllers]],
) -> None:
    rt = SimulationRuntime(
        load_scenario(SCENARIO), Catalog.load(), policy=wiring.CLUSTER_AUTOSCALER
    )
    assert rt.lifecycle.launch_listeners == [rt.kubelet._launched, rt._launched]
    assert rt.terminator.on_evicted == [rt._gone]


def test_disrupt_takes_its_controllers_from_the_same_function(
    built: dict[str, list[Controllers]],
) -> None:
    scenario = load_scenario(SCENARIO)
    dry = DryRun(
        scenario.manifests,
        Catalog.load(),
        scenario.region,
        at=datetime(2026, 1, 5, 12, tzinfo=UTC),
        subnets=scenario.subnets,
    )
    [c] = built[disrupt.__name__]
    assert dry.controller is c.disruption and dry.provisioner is c.provisioner
    assert c.order() == [n for n in ORDER if n not in (*LIVE_ONLY, "health", "static")]
    # Its clock never runs: no controller reacts to its launches but the caller's hook.
    assert len(c.lifecycle.launch_listeners) == 1


def test_plan_solves_with_the_provisioners_scheduler() -> None:
    """``joiner plan`` runs no controller; its round uses the function that gives the
    provisioner its scheduler (without importing the controllers)."""
    from joiner.operator import plan

    assert plan.scheduler_for is composition.scheduler_for
