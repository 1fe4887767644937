"""``scheduling.lint``'s shortcuts give the answers of the plain computation: ``launchable``
keeps its recent answers, ``spot_flexibility`` stops counting at the threshold."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from joiner.api import labels
from joiner.api.objects import NodePool
from joiner.api.requirements import Requirement
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling import lint
from joiner.testing.builders import make_nodepool

REGION = "us-east-1"


def _plain_launchable(pool: NodePool, types: Sequence[InstanceType]) -> list[InstanceType]:
    reqs = pool.requirements
    if pool.own_label_conflict() is not None:
        return []
    return [
        it
        for it in types
        if it.requirements.intersects(reqs) is None
        and any(o.available and o.compatible(reqs) for o in it.offerings)
    ]


def _plain_spot_names(pool: NodePool, types: Sequence[InstanceType]) -> list[str]:
    spot = pool.requirements.add(Requirement.in_(labels.CAPACITY_TYPE, "spot"))
    return sorted(
        it.name
        for it in types
        if it.requirements.intersects(spot) is None and it.available_offerings(spot)
    )


POOLS = [
    make_nodepool("broad"),
    make_nodepool("c", requirements=[Requirement.in_(labels.INSTANCE_CATEGORY, "c")]),
    make_nodepool(
        "few", requirements=[Requirement.in_(labels.INSTANCE_TYPE, "m5.large", "c5.large")]
    ),
    make_nodepool(
        "arm-od",
        requirements=[
            Requirement.in_(labels.ARCH, "arm64"),
            Requirement.in_(labels.CAPACITY_TYPE, "on-demand"),
        ],
    ),
]


@pytest.fixture(scope="module")
def types() -> list[InstanceType]:
    catalog = Catalog.load()
    return build_instance_types(catalog, REGION, catalog.zones(REGION)[:3])


def test_launchable_memo_matches_the_plain_filter_for_any_types(
    types: list[InstanceType],
) -> None:
    half = types[::2]
    # One type made unavailable everywhere: a different object under the same name.
    first = types[0]
    dead = dataclasses.replace(
        first, offerings=tuple(dataclasses.replace(o, available=False) for o in first.offerings)
    )
    changed = [dead, *types[1:]]
    for _ in range(2):  # the second round is served from the memo
        for pool in POOLS:
            for ts in (types, half, changed, []):
                got = lint.launchable(pool, ts)
                assert [it.name for it in got] == [it.name for it in _plain_launchable(pool, ts)]
                assert all(a is b for a, b in zip(got, _plain_launchable(pool, ts), strict=True))
    assert first in lint.launchable(POOLS[0], types)
    assert dead not in lint.launchable(POOLS[0], changed)


def test_spot_flexibility_warns_exactly_when_the_full_count_is_below_the_threshold(
    types: list[InstanceType],
) -> None:
    for pool in POOLS:
        for ts in (types, types[:20], types[:3]):
            names = _plain_spot_names(pool, ts)
            warnings = lint.spot_flexibility(pool, ts)
            expect = bool(names) and len(names) < lint.MIN_SPOT_INSTANCE_TYPES
            assert bool(warnings) == expect, (pool.name, len(ts), names)
            if warnings:
                assert ", ".join(names) in warnings[0].message
