"""``quantity.exact_quantity`` (written in Joiner so start-up does not import lightkube's
client) gives apimachinery's answers: ``fixtures/quantity/apimachinery-parsequantity.tsv``
holds, for 774 strings, what ``resource.ParseQuantity`` of k8s.io/apimachinery v0.36.3
made of each (its ``AsDec()``, or ``error``), printed by ``parsequantity.go.txt`` beside
it (``go run`` it in a module requiring apimachinery, the strings on standard input)."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.quantity import exact_quantity, parse, parse_quantity

APIMACHINERY = (
    Path(__file__).parents[1] / "fixtures" / "quantity" / "apimachinery-parsequantity.tsv"
)


def _cases() -> list[tuple[str, str]]:
    out = []
    for line in APIMACHINERY.read_text().splitlines():
        quoted, answer = line.split("\t")
        out.append((json.loads(quoted), answer))
    return out


def test_same_answers_as_apimachinery() -> None:
    cases = _cases()
    assert len(cases) == 774
    wrong = []
    for text, answer in cases:
        try:
            got: object = exact_quantity(text)
        except ValueError:
            got = "error"
        want = answer if answer == "error" else Decimal(answer)
        if got != want:
            wrong.append((text, answer, got))
    assert wrong == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1E9", 10**9),  # an exponent, not Exa followed by 9
        ("2E3", 2000),
        ("1E+3", 1000),
        ("1E-3", Decimal("0.001")),
        ("1e3", 1000),
        ("1E", 10**18),  # E alone is Exa
        ("1Ei", 2**60),  # Ei is exbi
    ],
)
def test_capital_e_is_an_exponent_unless_it_stands_alone(text: str, value: object) -> None:
    assert exact_quantity(text) == value


@pytest.mark.parametrize("text", ["1e", "1Ee3", "1E1.5", "1Z", "1Y", "1Zi", "1K", "", "Pi"])
def test_what_apimachinery_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid"):
        exact_quantity(text)


def test_a_deployment_may_ask_for_1e9_bytes() -> None:
    """The tester's input: ``memory: 1E9`` was refused as not a quantity."""
    assert parse("1E9", resource="memory", field="f") == 10**9
    assert parse_quantity("1E9") == 10**9
    with pytest.raises(InputError, match="not a Kubernetes quantity"):
        parse("1e", resource="memory", field="f")


def test_loading_a_scenario_does_not_import_lightkube():
    code = (
        "import sys\n"
        "from joiner.sim.scenario import load_scenario\n"
        "from joiner.operator.compare import prepare_policies\n"
        "prepare_policies(load_scenario('examples/seed-spot/scenario.yaml'))\n"
        "print('lightkube' in sys.modules)\n"
    )
    from joiner.testing.golden import REPO

    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
