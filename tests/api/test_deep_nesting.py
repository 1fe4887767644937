"""Every JSON and TOML input nested deeper than the parser can follow is an input error naming
the file or field, never a RecursionError traceback (``api.jsontext``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests.proportional import parse_params
from joiner.api.manifests.userdata import parse_toml
from joiner.cloudprovider.events import parse_message
from joiner.cloudprovider.kwok import load_instance_types
from joiner.faults.template import parse_template
from joiner.operator.sweep.results import read_rows
from joiner.sim.scenario import load_scenario
from tests.sim.test_spot_market_inputs import _history, _scenario, _scores

DEPTH = 100_000
DEEP_JSON = "[" * DEPTH + "]" * DEPTH
DEEP_OBJECT = '{"a":' * DEPTH + "1" + "}" * DEPTH


def test_deep_spot_price_history_and_placement_scores(tmp_path: Path) -> None:
    path = _scenario(tmp_path, _history("0.05", "0.08"), _scores(5, 5))
    for name, field in (("history.json", "spotPriceHistory"), ("scores.json", "spotPlacement")):
        good = (tmp_path / name).read_text()
        (tmp_path / name).write_text(DEEP_JSON)
        with pytest.raises(InputError, match="nested too deeply") as info:
            load_scenario(path)
        assert field in str(info.value.field)
        (tmp_path / name).write_text(good)


def test_deep_kwok_instance_types(tmp_path: Path) -> None:
    path = tmp_path / "types.json"
    path.write_text(DEEP_JSON)
    with pytest.raises(InputError, match="nested too deeply") as info:
        load_instance_types(path)
    assert info.value.file == str(path)


def test_deep_bottlerocket_toml() -> None:
    deep = "a = " + "[" * DEPTH + "]" * DEPTH + "\n"
    with pytest.raises(InputError, match="nested too deeply") as info:
        parse_toml(deep)
    assert info.value.field == "spec.userData"


def test_deep_proportional_autoscaler_parameters() -> None:
    with pytest.raises(InputError, match="nested too deeply") as info:
        parse_params(DEEP_OBJECT, "linear", "data.linear")
    assert info.value.field == "data.linear"


def test_deep_fis_template_and_event() -> None:
    with pytest.raises(InputError, match="nested too deeply"):
        parse_template(DEEP_OBJECT, "fis.json")
    with pytest.raises(InputError, match="nested too deeply"):
        parse_message(DEEP_OBJECT, file="event.json")


def test_deep_results_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    row = {"cellId": "a", "variant": "a", "policy": "joiner"}
    path.write_text(json.dumps(row)[:-1] + ', "x": ' + DEEP_JSON + "}\n")
    with pytest.raises(InputError, match="line 1 nests too deeply"):
        read_rows(path)
