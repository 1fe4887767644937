"""The user's DescribeSpotPriceHistory and GetSpotPlacementScores JSON drive launches as
price-capacity-optimized would; malformed files are input errors naming file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.sim.test_baseline import APP, NODEPOOL

MANIFESTS = NODEPOOL.replace("CAPACITY", "spot").replace("TYPES", "c5.xlarge") + "---\n" + APP


def _history(a: str, b: str) -> dict[str, Any]:
    return {
        "SpotPriceHistory": [
            {
                "AvailabilityZone": zone,
                "InstanceType": "c5.xlarge",
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": price,
                "Timestamp": "2025-01-05T00:00:00+00:00",
            }
            for zone, price in (("us-east-1a", a), ("us-east-1b", b))
        ]
        + [
            {
                "AvailabilityZone": "us-east-1a",
                "InstanceType": "c5.xlarge",
                "ProductDescription": "Windows",
                "SpotPrice": "0.0001",
                "Timestamp": "2025-01-05T00:00:00+00:00",
            }
        ],
        "NextToken": "",
    }


def _scores(a: int, b: int) -> dict[str, Any]:
    # us-east-1a is use1-az6 and us-east-1b is use1-az1 in the packaged zone table.
    return {
        "SpotPlacementScores": [
            {"Region": "us-east-1", "AvailabilityZoneId": "use1-az6", "Score": a},
            {"Region": "us-east-1", "AvailabilityZoneId": "use1-az1", "Score": b},
        ]
    }


def _scenario(tmp_path: Path, history: Any, scores: Any, cloud_extra: str = "") -> Path:
    (tmp_path / "m.yaml").write_text(MANIFESTS)
    (tmp_path / "history.json").write_text(json.dumps(history))
    (tmp_path / "scores.json").write_text(json.dumps(scores))
    path = tmp_path / "scenario.yaml"
    path.write_text(
        f"""\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: inputs}}
spec:
  duration: 10m
  seed: 1
  manifests: [m.yaml]
  cloud:
    subnets:
      - {{id: subnet-a, zone: us-east-1a, tags: {{t: "1"}}}}
      - {{id: subnet-b, zone: us-east-1b, tags: {{t: "1"}}}}
    securityGroups: [{{id: sg-1, tags: {{t: "1"}}}}]
    spotPriceHistory: history.json
    spotPlacementScores:
      - {{file: scores.json, instanceTypes: [c5.xlarge]}}
{cloud_extra}"""
    )
    return path


def _node(path: Path) -> dict[str, Any]:
    s = SimulationRuntime(load_scenario(path)).run().summary
    (node,) = s["nodes"]
    return node


@pytest.mark.parametrize(
    ("prices", "scores", "zone", "price"),
    [
        # Equal capacity: the cheaper pool wins.
        (("0.0500", "0.0800"), (8, 8), "us-east-1a", 0.05),
        (("0.0900", "0.0600"), (8, 8), "us-east-1b", 0.06),
        # Within one point of the best capacity: still the cheaper.
        (("0.0500", "0.0800"), (7, 8), "us-east-1a", 0.05),
        # The cheap pool is shallow: the deeper one wins, at its own price.
        (("0.0500", "0.0800"), (3, 9), "us-east-1b", 0.08),
    ],
)
def test_launch_follows_the_users_prices_and_placement_scores(
    tmp_path: Path, prices: tuple[str, str], scores: tuple[int, int], zone: str, price: float
) -> None:
    node = _node(_scenario(tmp_path, _history(*prices), _scores(*scores)))
    assert node["zone"] == zone
    assert node["pricePerHour"] == pytest.approx(price)
    a = node["allocation"]
    assert a["strategy"] == "price-capacity-optimized"
    assert a["capacityScore"] == pytest.approx(max(scores) if zone.endswith("b") else scores[0])


def _error(tmp_path: Path, history: Any, scores: Any) -> InputError:
    with pytest.raises(InputError) as info:
        load_scenario(_scenario(tmp_path, history, scores))
    return info.value


def test_malformed_price_history_names_file_and_field(tmp_path: Path) -> None:
    bad = _history("0.05", "0.08")
    bad["SpotPriceHistory"][1]["SpotPrice"] = "cheap"
    e = _error(tmp_path, bad, _scores(5, 5))
    assert e.file is not None and e.file.endswith("scenario.yaml") and e.obj == "Scenario/inputs"
    assert e.field == "spec.cloud.spotPriceHistory.SpotPriceHistory[1].SpotPrice"
    assert f"{tmp_path / 'history.json'}: 'cheap' is not a positive price" in str(e)
    bad = _history("0.05", "0.08")
    bad["SpotPriceHistory"][0]["AvailabilityZone"] = "eu-west-1a"
    e = _error(tmp_path, bad, _scores(5, 5))
    assert "AvailabilityZone" in str(e.field) and "not in the scenario's region" in str(e)
    bad = _history("0.05", "0.08")
    del bad["SpotPriceHistory"][0]["Timestamp"]
    assert str(_error(tmp_path, bad, _scores(5, 5)).field).endswith("[0].Timestamp")
    e = _error(tmp_path, {"Prices": []}, _scores(5, 5))
    assert "describe-spot-price-history" in str(e)


def test_malformed_placement_scores_name_file_and_field(tmp_path: Path) -> None:
    history = _history("0.05", "0.08")
    e = _error(tmp_path, history, {"SpotPlacementScores": [{"Region": "us-east-1", "Score": 5}]})
    assert e.file is not None and e.file.endswith("scenario.yaml")
    assert str(tmp_path / "scores.json") in e.detail
    assert e.field == "spec.cloud.spotPlacementScores[0].SpotPlacementScores[0].AvailabilityZoneId"
    assert "--single-availability-zone" in str(e)
    bad = _scores(5, 11)
    e = _error(tmp_path, history, bad)
    assert str(e.field).endswith("SpotPlacementScores[1].Score")
    bad = _scores(5, 5)
    bad["SpotPlacementScores"][0]["AvailabilityZoneId"] = "euw1-az1"
    assert "not a zone of us-east-1" in str(_error(tmp_path, history, bad))
    (tmp_path / "x").mkdir(exist_ok=True)
    path = _scenario(tmp_path, history, _scores(5, 5))
    (tmp_path / "scores.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON: line 1, column 2"):
        load_scenario(path)
    # A missing file is named, at the scenario field that names it.
    path.write_text(path.read_text().replace("history.json", "nope.json"))
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert info.value.file == str(path) and info.value.field == "spec.cloud.spotPriceHistory"
    assert "nope.json: spot price history not found" in str(info.value)


def test_a_history_that_starts_after_the_run_says_so(tmp_path: Path) -> None:
    """Regression (breaker): a history dated after ``spec.startTime`` priced the whole run
    with its first rows, silently (documented: instants before the first row use it)."""
    path = _scenario(tmp_path, _history("0.05", "0.08"), _scores(8, 8))
    text = path.read_text()

    def late(start: str) -> list[str]:
        path.write_text(text.replace("  seed: 1\n", f"  seed: 1\n  startTime: {start}\n"))
        return [w for w in load_scenario(path).manifests.warnings if "after spec.startTime" in w]

    (warning,) = late("2024-01-05T00:00:00Z")
    assert "history.json" in warning and "8784.0 h after" in warning
    assert late("2025-01-05T00:00:00Z") == []


def test_rows_and_requests_that_can_never_apply_are_named_once_per_file(tmp_path: Path) -> None:
    """Regression (breaker): price rows and placement-score requests for an instance type the
    region does not offer (a typo: c5.xlarg), or a zone no subnet is in, were ignored
    silently; each file now draws one warning naming them."""
    history = _history("0.05", "0.08")
    rows = history["SpotPriceHistory"]
    for name in ("c5.xlarg", "c5.xlarg", "zz9.huge"):
        rows.append({**rows[0], "InstanceType": name})
    rows.append({**rows[0], "AvailabilityZone": "us-east-1c"})
    scores = _scores(8, 8)
    scores["SpotPlacementScores"].append(
        {"Region": "us-east-1", "AvailabilityZoneId": "use1-az2", "Score": 5}
    )
    path = _scenario(tmp_path, history, scores)
    path.write_text(path.read_text().replace("[c5.xlarge]", "[c5.xlarge, m5.nope]"))
    warnings = load_scenario(path).manifests.warnings

    def about(file: str) -> list[str]:
        return [w for w in warnings if w.startswith(str(tmp_path / file)) and "ignored:" in w]

    assert about("history.json") == [
        f"{tmp_path / 'history.json'}: field SpotPriceHistory[].InstanceType: rows for 2 "
        "instance types the region does not offer are ignored: c5.xlarg, zz9.huge",
        f"{tmp_path / 'history.json'}: field SpotPriceHistory[].AvailabilityZone: rows for 1 "
        "zone no subnet is in are ignored: us-east-1c",
    ]
    types_warning, zone_warning = about("scores.json")
    assert types_warning.endswith(
        "instanceTypes: scores for 1 instance type the region does not offer are ignored: m5.nope"
    )
    assert "AvailabilityZoneId: scores for 1 zone no subnet is in are ignored: us-east-1" in (
        zone_warning
    )
    # Rows and requests that all apply draw none.
    clean = load_scenario(_scenario(tmp_path, _history("0.05", "0.08"), _scores(8, 8)))
    assert [w for w in clean.manifests.warnings if "ignored:" in w] == []


def _load(tmp_path: Path, history: Any, warnings: list[str] | None = None) -> Any:
    from datetime import UTC, datetime

    from joiner.sim.spotdata import load_price_history

    path = tmp_path / "history.json"
    path.write_text(json.dumps(history))
    return load_price_history(
        path,
        zones=["us-east-1a", "us-east-1b"],
        start=datetime(2025, 1, 5, tzinfo=UTC),
        warnings=[] if warnings is None else warnings,
    )


@pytest.mark.parametrize("price", ["1e308", "10000.01", "1e-320", "0.000009", "0", "-1"])
def test_a_price_outside_the_range_of_ec2_prices_is_refused(tmp_path: Path, price: str) -> None:
    # "1e308" used to be read and add up to $inf/h (JSON null); "1e-320" showed as $0.0000.
    bad = _history("0.05", "0.08")
    bad["SpotPriceHistory"][1]["SpotPrice"] = price
    with pytest.raises(InputError) as info:
        _load(tmp_path, bad)
    assert info.value.field == "SpotPriceHistory[1].SpotPrice"
    assert "from 0.00001 to 10,000" in str(info.value)


def test_the_bounds_of_the_price_range_are_accepted(tmp_path: Path) -> None:
    prices = _load(tmp_path, _history("0.00001", "10000"))
    assert sorted(p for series in prices.values() for _, p in series) == [0.00001, 10000.0]


def test_an_offset_out_of_range_says_so_without_python_text(tmp_path: Path) -> None:
    bad = _history("0.05", "0.08")
    bad["SpotPriceHistory"][0]["Timestamp"] = "2025-01-05T00:00:00+25:00"
    with pytest.raises(InputError) as info:
        _load(tmp_path, bad)
    assert info.value.field == "SpotPriceHistory[0].Timestamp"
    assert "UTC offset (at most 23:59 from UTC) is out of range" in str(info.value)
    assert "timedelta" not in str(info.value)


def test_rows_of_one_pool_and_instant_with_different_prices_are_named(tmp_path: Path) -> None:
    history = _history("0.05", "0.08")
    twin = dict(history["SpotPriceHistory"][0], SpotPrice="0.5")
    history["SpotPriceHistory"].append(twin)
    same = dict(history["SpotPriceHistory"][1])  # an exact duplicate is no conflict
    history["SpotPriceHistory"].append(same)
    warnings: list[str] = []
    _load(tmp_path, history, warnings)
    (w,) = [w for w in warnings if "different prices" in w]
    zone = twin["AvailabilityZone"]
    assert "1 pool instant with rows of different prices (the highest is used): " in w
    assert f"in {zone} at " in w and "(0.05 and 0.5)" in w
