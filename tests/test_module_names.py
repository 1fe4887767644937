"""No two directories whose modules are imported by bare name (pytest's ``pythonpath``
and ``benchmarks/``, which its tests and scripts put on ``sys.path``) hold a module of the
same name: one would shadow the other by the order of ``sys.path``, which depends on which
test file was collected first (``benchmarks/run.py`` once shadowed ``tests/fidelity/run.py``
for every fidelity test collected after a packing benchmark test)."""

from __future__ import annotations

import tomllib
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_no_module_name_is_in_two_import_paths() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    paths = [*config["tool"]["pytest"]["ini_options"]["pythonpath"], "benchmarks"]
    homes: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        for module in sorted((REPO / path).glob("*.py")):
            if module.name.startswith("test_") or module.name == "conftest.py":
                continue  # test files are imported by path (--import-mode=importlib)
            homes[module.stem].append(path)
    assert len(paths) >= 4 and len(homes) >= 10, "the import paths were read"
    clashes = {name: where for name, where in homes.items() if len(where) > 1}
    assert not clashes, f"modules of one name in several import paths: {clashes}"
