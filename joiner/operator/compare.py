"""Run a scenario under each policy of ``spec.compare`` on the same seed.

Each policy gets its own ``SimulationRuntime`` (fresh clock, state, simulated cloud and RNG
streams from the same seed), so the workload, the traffic and the Spot market's draws per
instance are the same inputs; what differs is who launches which nodes when.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from joiner.cloudprovider.catalog import Catalog
from joiner.operator.wiring import RunResult, SimulationRuntime
from joiner.sim.scenario import Scenario


@dataclass
class Comparison:
    """The runs by policy (in ``spec.compare`` order) and the merged ``summary.json``."""

    runs: dict[str, RunResult]
    summary: dict[str, Any]


def prepare_policies(
    scenario: Scenario, catalog: Catalog | None = None
) -> list[tuple[str, SimulationRuntime]]:
    """One runtime per policy of ``scenario.policies``, built before anything runs.

    Raises:
        InputError: the scenario cannot be built for a policy (a declared node group that
            does not resolve).
    """
    catalog = catalog or Catalog.load()
    return [(name, SimulationRuntime(scenario, catalog, policy=name)) for name in scenario.policies]


def run_policies(
    scenario: Scenario,
    catalog: Catalog | None = None,
    *,
    progress: Callable[[str, float], None] | None = None,
    prepared: list[tuple[str, SimulationRuntime]] | None = None,
) -> Comparison:
    """Run every policy of ``scenario.policies`` (``prepared`` runtimes, or new ones). The
    summary is the first policy's run, plus
    ``policies`` (every run in the single-run shape) when there is more than one.

    Raises:
        InputError: as ``prepare_policies``.
    """
    runtimes = prepared if prepared is not None else prepare_policies(scenario, catalog)
    runs: dict[str, RunResult] = {}
    for name, runtime in runtimes:

        def tick(t: float, name: str = name) -> None:
            if progress is not None:
                progress(name, t)

        runs[name] = runtime.run(progress=tick)
    summary = dict(runs[scenario.policies[0]].summary)
    if len(runs) > 1:
        summary["policies"] = {name: r.summary for name, r in runs.items()}
    return Comparison(runs=runs, summary=summary)
