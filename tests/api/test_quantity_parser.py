"""``quantity.parse_quantity`` (written in Joiner so start-up does not import lightkube's
client) agrees with lightkube's ``parse_quantity`` on valid and invalid strings."""

from __future__ import annotations

import random
import subprocess
import sys

from lightkube.utils.quantity import parse_quantity as lightkube_parse

from joiner.api.quantity import parse_quantity

SUFFIXES = ["", "m", "k", "M", "G", "T", "P", "E", "Z", "Y", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
SUFFIXES += ["Zi", "Yi", "x", "K", "mi", "e3", "E2", "i", " ", "Gi "]
NUMBERS = ["1", "0", "12", "3.25", ".75", "-4", "+7.", "1e3", "2e-2", "", ".", "e3"]


def _either(parse, text):
    try:
        return parse(text)
    except (ValueError, ArithmeticError):
        return "error"


def test_same_answers_as_lightkube():
    rng = random.Random(7)
    cases = [n + s for n in NUMBERS for s in SUFFIXES]
    cases += [
        rng.choice(["9", "1"]) * rng.randint(1, 40) + rng.choice(SUFFIXES) for _ in range(300)
    ]
    for text in cases:
        assert _either(parse_quantity, text) == _either(lightkube_parse, text), text


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
