"""The package's metadata agrees with itself: one version, lower bounds that match the
tested lowest set, the license and type marker shipped. Reads files only (fast); the
install checks are in ``test_install.py``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.version import Version

import joiner

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]

#: The extras whose lower bounds constraints-lowest.txt pins (ray's floor is not installed
#: there: Ray is large and its sweeps have their own tests).
PINNED_EXTRAS = ("report", "lp", "aws")


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement (PEP 503)."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _lower_bound(requirement: str) -> str:
    match = re.search(r">=\s*([0-9][^,;\s]*)", requirement)
    assert match, f"{requirement}: no lower bound"
    return match.group(1)


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (REPO / "constraints-lowest.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints-lowest.txt: {line!r} is not NAME==VERSION"
            pins[_name(name)] = version.strip()
    return pins


def _declared() -> list[str]:
    reqs = list(PROJECT["dependencies"])
    for extra in PINNED_EXTRAS:
        reqs += PROJECT["optional-dependencies"][extra]
    return reqs


def test_each_lower_bound_is_the_tested_lowest_version() -> None:
    pins = _pins()
    for req in _declared():
        pin = pins.get(_name(req))
        assert pin is not None and Version(pin) == Version(_lower_bound(req)), (
            f"{req}: constraints-lowest.txt pins {pin}"
        )


def test_base_dependencies_leave_plotting_the_solver_and_clouds_to_extras() -> None:
    base = {_name(r) for r in PROJECT["dependencies"]}
    assert not base & {"matplotlib", "jinja2", "highspy", "boto3", "tomli-w", "ray"}
    extras = PROJECT["optional-dependencies"]
    assert extras["all"] == ["joiner[report,lp,aws,ray]"]
    assert "joiner[all]" in extras["dev"]


def test_the_version_has_one_source() -> None:
    assert "version" in PROJECT["dynamic"] and "version" not in PROJECT
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "joiner.__version__"}
    chart = yaml.safe_load((REPO / "deploy" / "chart" / "Chart.yaml").read_text())
    assert chart["appVersion"] == joiner.__version__
    values = yaml.safe_load((REPO / "deploy" / "chart" / "values.yaml").read_text())
    assert values["image"]["tag"] == ""  # the image tag is the chart's appVersion
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text()
    assert f"-t joiner:{joiner.__version__} " in dockerfile


def test_license_and_type_marker_are_shipped() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert (REPO / "joiner" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["joiner"]
