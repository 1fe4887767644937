"""examples/spot-diversity: the seed's narrow Provisioner against a broad NodePool, a week
each in the same market, judged over ten seeds (sums)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "spot-diversity"


def _compare() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spot_diversity", EXAMPLE / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def judged() -> tuple[ModuleType, dict, dict]:
    compare = _compare()
    return compare, compare.judge("narrow"), compare.judge("broad")


def test_broad_has_fewer_large_reclaims_and_loses_no_more_pods(judged) -> None:
    _, narrow, broad = judged
    assert narrow["largeEvents"] >= 3, "the narrow pool must see large events to compare"
    assert broad["largeEvents"] < narrow["largeEvents"]
    assert broad["podsLost"] <= narrow["podsLost"]
    assert broad["pools"] > narrow["pools"] == 2
    assert broad["largestReclaim"] < narrow["largestReclaim"]


def test_spot_guide_shows_the_current_table(judged) -> None:
    compare, narrow, broad = judged
    guide = (REPO / "docs" / "guides" / "spot.md").read_text()
    assert compare.table(narrow, broad) in guide
