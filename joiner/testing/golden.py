"""Golden ``summary.json`` files of every example: what each decision-preserving change must
leave byte-identical.

``tests/golden/<example>/summary.json`` is the ``summary.json`` that
``joiner simulate examples/<example>/scenario.yaml`` writes (run from the repository root, so
warnings quote the same relative paths). ``tests/sim/test_golden.py`` compares them.

Regenerate with ``make golden`` (``python -m joiner.testing.golden``), only when a change is
*meant* to change decisions (a new rule, a price table, a fixed bug), and say in the commit
message which examples changed and why. ``python -m joiner.testing.golden --check`` prints the
examples whose summary differs and exits 1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GOLDEN = REPO / "tests" / "golden"


def examples() -> list[str]:
    """The example directory names that hold a ``scenario.yaml``, sorted."""
    return sorted(p.parent.name for p in EXAMPLES.glob("*/scenario.yaml"))


def render(example: str) -> str:
    """The ``summary.json`` text ``joiner simulate`` writes for ``examples/<example>``.

    Must be called with the repository root as the working directory (warnings quote the
    scenario's paths as given).

    Raises:
        InputError: the example does not load.
    """
    from joiner.operator.compare import run_policies
    from joiner.sim.scenario import load_scenario

    scenario = load_scenario(Path("examples") / example / "scenario.yaml")
    return json.dumps(run_policies(scenario).summary, indent=2) + "\n"


def golden_path(example: str) -> Path:
    """Where ``example``'s golden summary lives."""
    return GOLDEN / example / "summary.json"


def main(argv: list[str]) -> int:
    """Write (or with ``--check``, compare) every example's golden summary; names given as
    arguments limit it to those examples. Returns the exit code."""
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("-")] or examples()
    os.chdir(REPO)
    differ = []
    for name in names:
        text = render(name)
        path = golden_path(name)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                differ.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path.relative_to(REPO))
    if differ:
        print("differ from the golden summaries: " + ", ".join(differ), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
