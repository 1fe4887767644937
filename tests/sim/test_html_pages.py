"""The two HTML pages (``simulate --report`` and ``sweep report --html``) rendered from small
fixed inputs: their structure, and hostile names (markup, quotes, terminal escape sequences)
coming back as the same text, never as markup."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

from joiner.operator.sweep.report import groups, parse_objective, recommend, render_html
from joiner.sim.htmlreport import PLOTS, PolicyData, write_report
from joiner.state.cluster import ClusterState
from tests.operator.test_sweep_report import _row

REPO = Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert('x\"y')</script>\x1b[31mred\x1b[0m & é\x07"
#: HOSTILE as the pages show it: each control character (a parse error in HTML, and
#: replayed by ``cat`` or ``less -R`` on the page) replaced by ``?``.
SHOWN = HOSTILE.replace("\x1b", "?").replace("\x07", "?")


class _Page(HTMLParser):
    """Start tags with their attributes, and the text inside each element by tag name."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: dict[str, list[str]] = {}
        self._open: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in ("img", "meta"):
            self._open.append(tag)
            self.text.setdefault(tag, []).append("")

    def handle_endtag(self, tag: str) -> None:
        assert self._open and self._open[-1] == tag, (tag, self._open)
        self._open.pop()

    def handle_data(self, data: str) -> None:
        if self._open:
            self.text[self._open[-1]][-1] += data

    def count(self, tag: str) -> int:
        return sum(1 for t, _ in self.tags if t == tag)


def _summary(policy: str) -> dict[str, object]:
    return {
        "seed": 7,
        "durationSeconds": 7200.0,
        "policy": {"name": policy, "parameters": {"note": HOSTILE}},
        "nodes": [
            {
                "capacityType": "spot",
                "instanceType": "m5.large" + HOSTILE,
                "zone": "us-east-1a",
                "launchedAtSeconds": 0.0,
                "deletedAtSeconds": 3600.0,
                "pricePerHour": 0.04,
            },
            {
                "capacityType": "on-demand",
                "instanceType": "m5.xlarge",
                "zone": "us-east-1b",
                "launchedAtSeconds": 600.0,
                "deletedAtSeconds": None,
                "pricePerHour": 0.192,
            },
        ],
        "cost": {
            "total": 0.36,
            "savingsPercent": 40.0,
            "onDemandEquivalent": 0.6,
            "pricesEstimated": True,
            "priceNote": "estimated " + HOSTILE,
        },
        "nodeHours": {"spot": 1.0, "onDemand": 1.8},
        "pods": {
            "pending": 0,
            "pendingSeconds": {"p50": 1.0, "p95": 2.0, "max": 3.0},
            "scaleUpLatencySeconds": {"p50": 40.0, "p95": 60.0},
            "lost": 0,
        },
        "interruptions": {
            "count": 1,
            "reclaimEvents": [
                {"atSeconds": 3600.0, "instanceType": "m5.large" + HOSTILE, "zone": "z", "nodes": 1}
            ],
        },
        "disruptions": {"commands": []},
    }


def test_simulate_page_structure_and_hostile_names(tmp_path: Path) -> None:
    runs = {
        "joiner" + HOSTILE: PolicyData(_summary("joiner"), ClusterState()),
        "cost-optimal": PolicyData(_summary("cost-optimal"), ClusterState()),
    }
    path = write_report(tmp_path, "scenario" + HOSTILE, runs, 7200.0)
    text = path.read_text(encoding="utf-8")
    page = _Page(text)
    assert text.startswith("<!DOCTYPE html>\n") and text.endswith("</body></html>\n")
    assert page.text["title"] == ["Joiner report: scenario" + SHOWN]
    assert page.text["h1"] == ["scenario" + SHOWN]
    assert page.count("script") == 1 and "alert" not in page.text["script"][0]
    assert [a["alt"] for t, a in page.tags if t == "img"] == list(PLOTS)
    for name in PLOTS:
        src = next(a["src"] for t, a in page.tags if t == "img" and a["alt"] == name)
        assert src is not None and src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]) == (tmp_path / f"{name}.png").read_bytes()
    assert "joiner" + SHOWN in page.text["th"]
    assert "m5.large" + SHOWN + "/z" in page.text["td"]
    assert page.text["strong"] == ["Prices are estimated:"]
    assert " estimated " + SHOWN in page.text["p"]
    assert [json.loads(p)["parameters"]["note"] for p in page.text["pre"]] == [HOSTILE] * 2
    # Escaped as html.escape spells it; no control character reaches the page.
    assert "&lt;script&gt;alert(&#x27;x&quot;y&#x27;)&lt;/script&gt;?[31mred" in text
    assert "\x1b" not in text


def test_sweep_page_structure_and_hostile_names() -> None:
    rows = [_row("cheap" + HOSTILE, s, 1.0, 10.0, policy="p" + HOSTILE) for s in range(3)]
    rows += [_row("slow", s, 0.5, 90.0) for s in range(3)]
    objective = "minimise cost subject to p95 pending <= 60"
    gs = groups(rows)
    text = render_html(
        "sweep" + HOSTILE, gs, objective, recommend(rows, parse_objective(objective))
    )
    page = _Page(text)
    assert "\x1b" not in text and "\x07" not in text
    assert text.startswith("<!doctype html>\n") and text.endswith("</body></html>\n")
    assert page.text["h1"] == ["Sweep sweep" + SHOWN]
    assert page.count("script") == 0
    assert page.count("tr") == 1 + len(gs) and page.count("th") == 10
    assert page.text["td"][:2] == ["cheap" + SHOWN, "p" + SHOWN]
    (img,) = [a for t, a in page.tags if t == "img"]
    assert (img["src"] or "").startswith("data:image/png;base64,iVBORw0KGgo")
    assert page.text["code"] == [objective]
    assert page.text["b"] == ["cheap" + SHOWN, "p" + SHOWN]
    assert page.text["pre"] == ["kind: NodePool\nmetadata: {name: cheap" + SHOWN + "}\n"]
    assert page.text["li"] == [
        "slow / joiner: pendingP95Seconds <= 60 fails in slow/joiner/x1/seed-0 (90)"
    ]


def test_sweep_page_without_objective_has_no_recommendation() -> None:
    text = render_html("plain", groups([_row("a", 0, 1.0, 1.0)]), None, None)
    assert "Recommendation" not in text
    assert text.endswith('">\n\n</body></html>\n')


def test_importing_the_report_modules_loads_neither_jinja2_nor_matplotlib() -> None:
    code = (
        "import sys, joiner.sim.htmlreport, joiner.operator.sweep.report\n"
        "print(sorted(m for m in ('jinja2', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


def test_the_spot_pools_plot_draws_a_bounded_number_of_bars():
    # An as-run record of 1,200 Spot pools drew a bar each: a PNG 108,000 pixels high.
    from joiner.sim.htmlreport import MAX_POOL_BARS, OTHER_POOLS, _shown_pools

    few = {"joiner": {"m5.large/us-east-1a": 2, "c5.large/us-east-1b": 1}}
    assert _shown_pools(few, launched_or_lost={}) == sorted(few["joiner"])
    launched = {
        "as-run": {f"t{i:04d}.large/us-east-1a": 1 + (i == 7) for i in range(1200)},
        "joiner": {"t0007.large/us-east-1a": 3, "t0500.large/us-east-1a": 1},
    }
    reclaimed = {"as-run": {"t1100.large/us-east-1a": 1, "t0007.large/us-east-1a": 1}}
    pools = _shown_pools(launched, launched_or_lost=reclaimed)
    assert len(pools) == MAX_POOL_BARS and pools[-1] == OTHER_POOLS
    assert "t0007.large/us-east-1a" in pools  # the most launched (5 across policies)
    assert sum(launched["as-run"].values()) == 1201  # nothing lost, only summed
    assert launched["as-run"][OTHER_POOLS] == 1200 - (MAX_POOL_BARS - 1)
    assert reclaimed["as-run"] == {OTHER_POOLS: 1, "t0007.large/us-east-1a": 1}


def test_plots_of_a_run_without_pods_or_nodes_warn_nothing():
    # A Scenario with no pods drew empty legends: matplotlib warned "No artists with labels
    # found to put in legend" into the user's terminal.
    import warnings

    from joiner.sim.htmlreport import render_plots

    summary = {"nodes": [], "durationSeconds": 3600.0, "interruptions": {"reclaimEvents": []}}
    empty = PolicyData(summary=summary, state=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots = render_plots({"as-run": empty}, 3600.0)
    assert set(plots) >= {"nodes", "cost", "pending", "pending-cdf", "spot-pools"}
    assert all(png.startswith(b"\x89PNG") for png in plots.values())
