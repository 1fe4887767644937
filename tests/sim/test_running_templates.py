"""Running pods read from a cluster dump share one template per controller and equal spec
(``sim.running.adopt``), as the replicas a simulation creates do, so what treats pods as
alike (Cluster Autoscaler's ``SimilarPodsScheduling`` in the baseline's fit check) sees
them as CA does; pods whose specs differ keep their own."""

from __future__ import annotations

from pathlib import Path

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spot-interruptions"


def test_running_replicas_of_one_controller_share_a_template():
    rt = SimulationRuntime(load_scenario(EXAMPLE / "captured-event.yaml"))
    rt.run()
    adopted = [p for p in rt.state.pods.values() if p.created_at_s == 0.0 and not p.daemon]
    by_owner: dict[str, set[int]] = {}
    for p in adopted:
        by_owner.setdefault(p.owner, set()).add(id(p.template))
    web = [p for p in adopted if p.owner == "shop/web"]
    assert len(web) == 4 and len(by_owner["shop/web"]) == 1  # web-a..d, equal specs
    # Equal specs under one owner: one object; the same template is not shared across owners.
    for owner, ids in by_owner.items():
        pods = [p for p in adopted if p.owner == owner]
        assert len(ids) == len({p.template for p in pods}), owner
    all_ids = [i for ids in by_owner.values() for i in ids]
    assert len(all_ids) == len(set(all_ids))
    # The controller's new replicas take the same object when the spec is equal.
    created = [p for p in rt.state.pods.values() if p.owner == "shop/web" and p not in web]
    assert created and all(p.template is web[0].template for p in created)
