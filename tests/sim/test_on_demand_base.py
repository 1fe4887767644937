"""joiner.dev/on-demand-base: a count or percentage of a pool's nodes kept on-demand."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"


def _run(tmp_path: Path, base: str):
    d = tmp_path / "seed"
    shutil.copytree(SEED, d)
    p = d / "provisioner.yaml"
    p.write_text(
        p.read_text().replace(
            "  name: my-provisioner\n",
            f'  name: my-provisioner\n  annotations:\n    joiner.dev/on-demand-base: "{base}"\n',
        )
    )
    return SimulationRuntime(load_scenario(d / "scenario.yaml")).run().summary


@pytest.mark.parametrize(("base", "on_demand"), [("2", 2), ("30%", 3), ("0", 0)])
def test_base_is_kept_on_demand(tmp_path, base, on_demand):
    s = _run(tmp_path, base)
    kinds = [n["capacityType"] for n in s["nodes"]]
    assert len(kinds) == 7  # 20 one-vCPU pods, 3 per c5.xlarge
    assert kinds.count("on-demand") == on_demand
    assert s["pods"]["scheduled"] == 20


def test_bad_base_is_input_error(tmp_path):
    with pytest.raises(InputError, match="on-demand-base"):
        _run(tmp_path, "lots")
