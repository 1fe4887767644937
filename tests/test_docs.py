"""The README and the documentation site (docs/, mkdocs.yml): a README that fits on a
screen, pages that speak of the project only, and every page reachable from the site's nav.

The site's links are checked by ``make docs`` (``mkdocs build --strict``), not here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README_MAX_LINES = 300

#: Words that mean something only to the people who wrote Joiner: working sessions
#: ("stop 33"), the machines they ran on ("machine D") and issue numbers. Figures say the
#: date and the machine's calibration instead.
INTERNAL = [
    re.compile(r"\bstop [0-9]", re.IGNORECASE),
    re.compile(r"\bmachine [A-Z]\b"),
    re.compile(r"\bissue [0-9]", re.IGNORECASE),
]


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_readme_fits_on_a_screen() -> None:
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_internal_nicknames(page: Path) -> None:
    found = [
        f"{page.relative_to(REPO)}:{number}: {match.group(0)!r}"
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        for pattern in INTERNAL
        for match in pattern.finditer(line)
    ]
    assert not found, "internal nicknames or issue numbers:\n" + "\n".join(found)


def _nav_files(node: object) -> list[str]:
    """Every page file named in mkdocs.yml's nav (nested lists of ``{title: file}``)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [f for item in node for f in _nav_files(item)]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _nav_files(value)]
    return []


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    nav = set(_nav_files(config["nav"]))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages - nav == set(), "pages missing from mkdocs.yml's nav"
    assert nav - pages == set(), "nav entries without a page"


@pytest.mark.parametrize(
    ("page", "marker"),
    [("fidelity.md", "fidelity-report"), ("fidelity-autoscaler.md", "fidelity-autoscaler-report")],
)
def test_generated_report_markers_kept(page: str, marker: str) -> None:
    """The differential runs rewrite the text between these markers (``--markdown``)."""
    text = (DOCS / page).read_text()
    assert text.count(f"<!-- {marker}:begin -->") == 1
    assert text.count(f"<!-- {marker}:end -->") == 1


def _clinic_headroom_rows(path: Path) -> list[str]:
    return [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and ".yaml`)" in line
    ]


def test_the_clinic_headroom_table_is_the_same_everywhere() -> None:
    """The table ``tools/clinic_headroom.py`` prints is copied into three pages; a re-run
    that updates one must update all (one copy once kept figures two others had lost)."""
    copies = [
        DOCS / "headroom.md",
        DOCS / "guides" / "headroom.md",
        REPO / "examples" / "clinic-headroom" / "README.md",
    ]
    rows = {str(p.relative_to(REPO)): _clinic_headroom_rows(p) for p in copies}
    first = next(iter(rows.values()))
    assert len(first) == 8
    assert all(r == first for r in rows.values()), rows
