"""Golden ``summary.json`` files of every example: what each decision-preserving change must
leave byte-identical.

``tests/golden/<example>/summary.json`` is the ``summary.json`` that
``joiner simulate examples/<example>/scenario.yaml`` writes (run from the repository root, so
warnings quote the same relative paths). ``tests/sim/test_golden.py`` compares them.

Regenerate with ``make golden`` (``python -m joiner.testing.golden``), only when a change is
*meant* to change decisions (a new rule, a price table, a fixed bug), and say in the commit
message which examples changed and why. ``python -m joiner.testing.golden --check`` prints the
examples whose summary differs and exits 1.

The import fixtures are golden cases too: ``tests/golden/history-<name>/summary.json`` is what
``joiner simulate`` writes for the Scenario ``joiner import --from-file`` makes of
``tests/fixtures/history/<name>/`` (saved Prometheus responses, the cluster's dump and the
range in ``import.json``), with the temporary output directory's path written ``<out>``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GOLDEN = REPO / "tests" / "golden"
HISTORY = REPO / "tests" / "fixtures" / "history"
#: The name prefix of the import fixtures' golden cases.
HISTORY_PREFIX = "history-"


def examples() -> list[str]:
    """The example directory names that hold a ``scenario.yaml``, sorted."""
    return sorted(p.parent.name for p in EXAMPLES.glob("*/scenario.yaml"))


def history_cases() -> list[str]:
    """``history-<name>`` for every import fixture ``tests/fixtures/history/<name>/`` that
    holds an ``import.json``, sorted."""
    return sorted(HISTORY_PREFIX + p.parent.name for p in HISTORY.glob("*/import.json"))


def cases() -> list[str]:
    """Every golden case: the examples, then the import fixtures."""
    return examples() + history_cases()


def render(example: str) -> str:
    """The ``summary.json`` text ``joiner simulate`` writes for ``examples/<example>``, or for
    the import fixture of a ``history-<name>`` case (``render_history``).

    Must be called with the repository root as the working directory (warnings quote the
    scenario's paths as given).

    Raises:
        InputError: the example does not load.
    """
    if example.startswith(HISTORY_PREFIX):
        return render_history(example.removeprefix(HISTORY_PREFIX))
    from joiner.operator.compare import run_policies
    from joiner.sim.scenario import load_scenario

    scenario = load_scenario(Path("examples") / example / "scenario.yaml")
    return json.dumps(run_policies(scenario).summary, indent=2) + "\n"


def render_history(name: str) -> str:
    """The ``summary.json`` text ``joiner simulate`` writes for the Scenario that ``joiner
    import --from-file tests/fixtures/history/<name>/responses -f .../dump.yaml`` writes
    over the range of its ``import.json`` (``start``, ``end``: RFC 3339; ``step``: a
    duration), the output directory's path written ``<out>``.

    Raises:
        InputError: the fixture does not read, translate or load.
    """
    import tempfile

    from joiner.api.durations import parse_required_seconds
    from joiner.history.files import FileSource
    from joiner.history.series import HistoryWarnings, QueryRange
    from joiner.history.translate import objects_from_files, translate
    from joiner.history.writer import write_scenario
    from joiner.operator.compare import run_policies
    from joiner.sim.scenario import load_scenario

    fixture = HISTORY / name
    spec = json.loads((fixture / "import.json").read_text(encoding="utf-8"))
    rng = QueryRange(
        start_s=_unix_s(spec["start"]),
        end_s=_unix_s(spec["end"]),
        step_s=parse_required_seconds(spec["step"], field="step"),
    )
    warnings = HistoryWarnings()
    responses = fixture / "responses"
    source = FileSource(responses, rng, warnings=warnings)
    objects = objects_from_files([fixture / "dump.yaml"])
    imported = translate(source, str(responses), rng, objects, warnings=warnings)
    with tempfile.TemporaryDirectory(prefix="joiner-golden-") as tmp:
        out = Path(tmp) / "imported"
        scenario = load_scenario(write_scenario(imported, out))
        text = json.dumps(run_policies(scenario).summary, indent=2) + "\n"
        return text.replace(str(out), "<out>")


def _unix_s(rfc3339: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def golden_path(example: str) -> Path:
    """Where ``example``'s golden summary lives."""
    return GOLDEN / example / "summary.json"


def _arguments(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; ``--help`` prints the usage and an unknown option or case name exits 2
    (argparse), so a mistyped flag never regenerates every golden summary."""
    parser = argparse.ArgumentParser(
        prog="python -m joiner.testing.golden",
        description="Regenerate the golden summary.json of every case (or of the cases named); "
        "with --check, only compare and exit 1 on a difference.",
    )
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("names", nargs="*", metavar="CASE", help="cases (default: all)")
    args = parser.parse_args(argv)
    known = cases()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"unknown case {', '.join(unknown)}; cases: {', '.join(known)}")
    args.names = args.names or known
    return args


def main(argv: list[str]) -> int:
    """Write (or with ``--check``, compare) every golden case's summary (``cases``); names
    given as arguments limit it to those cases. Returns the exit code.

    Raises:
        SystemExit: 0 after ``--help``; 2 for an unknown option or case name.
    """
    args = _arguments(argv)
    check, names = args.check, args.names
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
