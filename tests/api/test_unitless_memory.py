"""A memory quantity written without a unit and under a mebibyte draws a warning naming the
field (``loader._note_unitless_memory``); it is still read as bytes, as Kubernetes reads it."""

from __future__ import annotations

import pytest

from joiner.api import quantity
from joiner.api.manifests import load_text
from tests.manifests import deployment

DEPLOYMENT = deployment(
    "      initContainers: [{name: init, image: x, resources: {limits: {memory: INIT}}}]\n"
    "      containers: [{name: c, image: x, resources: {requests: {cpu: 100m, memory: MEM}}}]\n"
)


def _load(mem: str, init: str = "64Mi") -> tuple[list[str], int]:
    loaded = load_text(DEPLOYMENT.replace("MEM", mem).replace("INIT", init), "web.yaml")
    template = loaded.workloads[0].template
    return loaded.warnings, template.requests[quantity.MEMORY]


def test_a_bare_small_number_warns_and_is_read_as_bytes() -> None:
    warnings, memory = _load("2048", init="1Ki")
    assert memory == 2048  # the larger of the container's 2048 bytes and the init's 1Ki
    assert warnings == [
        "web.yaml: Deployment/web: field spec.template.spec.containers[0].resources.requests"
        ".memory: 2048 has no unit, so it is 2048 bytes; did you mean 2048Mi?"
    ]


def test_an_init_container_limit_is_checked_too() -> None:
    warnings, _ = _load("64Mi", init='"512"')
    assert len(warnings) == 1
    assert "initContainers[0].resources.limits.memory: 512 has no unit" in warnings[0]


@pytest.mark.parametrize("mem", ["2Gi", "2048Mi", "1048576", "0", "1e3", "2k"])
def test_units_zero_and_a_mebibyte_or_more_draw_nothing(mem: str) -> None:
    warnings, _ = _load(mem)
    assert warnings == []


@pytest.mark.parametrize(
    ("mem", "reading"),
    [
        ("0.5", "0.5 has no unit, so it is 0.5 bytes; did you mean 0.5Mi?"),
        ("2048.5", "2048.5 has no unit, so it is 2048.5 bytes; did you mean 2048.5Mi?"),
        (
            '"512m"',
            "512m is 512 thousandths of a byte (m is milli, a CPU unit); did you mean 512Mi?",
        ),
    ],
)
def test_a_bare_decimal_or_a_milli_memory_warns_too(mem: str, reading: str) -> None:
    """``memory: 0.5`` (a bare number under a mebibyte, not whole) and ``memory: 512m`` (a
    CPU unit: 0.512 bytes) were read without a word."""
    warnings, _ = _load(mem)
    assert warnings == [
        "web.yaml: Deployment/web: field spec.template.spec.containers[0].resources.requests"
        f".memory: {reading}"
    ]


def test_milli_memory_of_zero_draws_nothing() -> None:
    assert _load('"0m"')[0] == []
