"""Run a scenario under each policy of ``spec.compare`` on the same seed.

Each policy gets its own ``SimulationRuntime`` (fresh clock, state, simulated cloud and RNG
streams from the same seed), so the workload, the traffic and the Spot market's draws per
instance are the same inputs; what differs is who launches which nodes when. ``as-run`` is
not a run: its block is the Scenario's record of the nodes the cluster really ran, priced
(``joiner.sim.asrun``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from joiner.cloudprovider.catalog import Catalog
from joiner.operator.wiring import RunResult, SimulationRuntime
from joiner.sim.asrun import AS_RUN, AsRunResult, as_run
from joiner.sim.report import with_month_figures
from joiner.sim.scenario import Scenario


@dataclass
class Comparison:
    """The simulated runs by policy (in ``spec.compare`` order), the as-run record when
    compared, every policy's block in ``spec.compare`` order (``summaries``) and the merged
    ``summary.json``."""

    runs: dict[str, RunResult]
    summary: dict[str, Any]
    as_run: AsRunResult | None = None
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)


def prepare_policies(
    scenario: Scenario, catalog: Catalog | None = None
) -> list[tuple[str, SimulationRuntime]]:
    """One runtime per simulated policy of ``scenario.policies`` (all but ``as-run``),
    built before anything runs.

    Raises:
        InputError: the scenario cannot be built for a policy (a declared node group that
            does not resolve).
    """
    catalog = catalog or Catalog.load()
    return [
        (name, SimulationRuntime(scenario, catalog, policy=name))
        for name in scenario.policies
        if name != AS_RUN
    ]


def run_policies(
    scenario: Scenario,
    catalog: Catalog | None = None,
    *,
    progress: Callable[[str, float], None] | None = None,
    prepared: list[tuple[str, SimulationRuntime]] | None = None,
) -> Comparison:
    """Run every policy of ``scenario.policies`` (``prepared`` runtimes, or new ones) and
    price the as-run record when it is compared. The summary is the first simulated policy's
    run (the as-run record when nothing is simulated), plus ``policies`` (every block in the
    single-run shape, in ``spec.compare`` order) when there is more than one.

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
    record = None
    if AS_RUN in scenario.policies:
        record = as_run(scenario, catalog or Catalog.load())
    summaries: dict[str, dict[str, Any]] = {
        name: record.summary if name == AS_RUN and record is not None else runs[name].summary
        for name in scenario.policies
    }
    if record is not None and len(summaries) > 1:
        summaries = with_month_figures(summaries, AS_RUN)
    top = next((n for n in scenario.policies if n != AS_RUN), scenario.policies[0])
    summary = dict(summaries[top])
    if len(summaries) > 1:
        summary["policies"] = summaries
    return Comparison(runs=runs, summary=summary, as_run=record, summaries=summaries)
