"""No module under joiner/ parses Joiner's own messages with regular expressions.

Decisions travel as typed values (``joiner.controllers.disruption.verdicts``) and become
English only at the edge; a regular expression reading a message back would make a
rewording silently change behaviour. The only modules that may import ``re`` are those
whose regular expressions read user input or outside data, each listed here with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "joiner"

#: Module (path under joiner/) -> what its regular expressions read.
ALLOWED: dict[str, str] = {
    "api/cron.py": "budget schedules: cron fields from NodePool manifests",
    "api/decimals.py": "Spot prices and kubelet percentages written in input files",
    "api/durations.py": "Go duration strings from manifests and scenarios",
    "api/k8snames.py": "object names, namespaces and label values in manifests",
    "api/openapi.py": "the API server's schema patterns, applied to manifest fields",
    "api/corevalidation.py": "IntOrString percentages in manifest fields",
    "api/manifests/convert.py": "NodePool budget nodes/duration fields from manifests",
    "api/manifests/input_notes.py": "memory quantities written in manifests without a unit",
    "api/manifests/nodeclass_rules.py": "EC2NodeClass volume sizes and AMI aliases",
    "api/manifests/termination.py": "a pod's preStop command (its sleep) from manifests",
    "api/manifests/yamlio.py": "YAML/JSON input text: numbers and characters YAML reads apart",
    "api/quantity.py": "Kubernetes resource quantities from manifests",
    "api/requirements.py": "Gt/Lt requirement values from manifests",
    "api/resourcenames.py": "Kubernetes resource and object names from manifests",
    "cloudprovider/aws/instancetypes.py": "EC2 instance type names from the AWS API",
    "cloudprovider/catalog.py": "the bundled catalog's CSV rows, split by region",
    "cloudprovider/kwok.py": "KWOK instance type names",
    "faults/template.py": "AWS FIS experiment templates: role ARNs, target selection modes",
    "history/translate.py": "zones and provider IDs of the cluster's nodes (Prometheus series)",
    "history/writer.py": "the output directory's name, made a Scenario name",
    "operator/sweep/report.py": "a sweep's objective string written by the user",
    "sim/baseline/limits.py": "Cluster Autoscaler min:max node group flags",
    "sim/baseline/settings.py": "Cluster Autoscaler priority expander patterns (user regexes)",
    "sim/scenario_sections.py": "validates the scenario's priority expander regexes",
    "sim/windows.py": "time-of-day windows in scenarios",
    "sim/workloads.py": "numbers in scenario workload fields",
    "sim/asrun_files.py": "seconds in the as-run record's CSV cells",
}


def _imports_re(path: Path) -> bool:
    """True when the module imports ``re`` (any form: ``import re``, ``import re as x``,
    ``from re import ...``), at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "re" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "re" and node.level == 0:
            return True
    return False


def _modules_using_re() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py") if _imports_re(p)}


def test_only_modules_reading_user_input_use_regular_expressions() -> None:
    unexpected = sorted(_modules_using_re() - set(ALLOWED))
    assert not unexpected, (
        f"{unexpected} import re: Joiner's own messages must not be parsed back (pass a typed "
        "value instead); a module whose regular expressions read user input belongs in "
        "ALLOWED with a one-line reason"
    )


def test_every_allowed_module_still_uses_regular_expressions() -> None:
    stale = sorted(set(ALLOWED) - _modules_using_re())
    assert not stale, f"{stale} no longer import re: remove them from ALLOWED"


def test_the_events_module_is_not_allowed() -> None:
    # Karpenter's Event messages come from the verdict's kind, never from its words.
    assert "cluster/kube/events.py" not in ALLOWED
    assert "cluster/kube/events.py" not in _modules_using_re()


def test_the_detector_sees_every_import_form(tmp_path: Path) -> None:
    for text in ("import re\n", "import os, re as r\n", "from re import compile\n"):
        (tmp_path / "m.py").write_text(text)
        assert _imports_re(tmp_path / "m.py"), text
    (tmp_path / "m.py").write_text("from . import re\nimport regexp_free\n")
    assert not _imports_re(tmp_path / "m.py")
