"""The bad-input class of issue 17: each refused cleanly (exit 2, named), valid YAML kept."""

from __future__ import annotations

import itertools
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.api import quantity
from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.manifests.yamlio import parse_documents
from joiner.api.objects import CronJob, PodTemplate, Source
from joiner.cli.main import app
from joiner.faults.experiment import schedule
from joiner.faults.template import parse_template
from joiner.operator.controller_settings import load_settings
from joiner.sim.scenario_sections import fire_times

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def test_yaml_merge_keys_are_valid_yaml() -> None:
    (doc,) = parse_documents("base: &b {a: 1, b: 2}\nm:\n  <<: *b\n  b: 3\n", "t")
    assert doc["m"] == {"a": 1, "b": 3}
    with pytest.raises(InputError, match="duplicate key 'b'"):
        parse_documents("m:\n  b: 1\n  b: 2\n", "t")


def test_alias_bombs_are_refused_before_expansion(tmp_path: Path) -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in itertools.pairwise("abcdefg"):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    for args in (["lint", str(bomb)], ["plan", "-f", str(bomb), "-o", "json"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "refusing to expand" in result.output
    with pytest.raises(InputError, match="refers to the node that contains it"):
        parse_documents("a: &a [*a]\n", "t")


def test_only_what_aliases_add_counts_against_the_expansion_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A large document without aliases (a cluster dump of 50,000 Pods has millions of
    nodes) is not an alias bomb: it loads. Aliases adding more than the cap are refused."""
    from joiner.api.manifests import yamlio

    monkeypatch.setattr(yamlio, "MAX_EXPANDED_NODES", 100)
    items = ", ".join(f"{{name: p{i}, n: {i}}}" for i in range(200))  # 1,001 nodes
    (doc,) = parse_documents(f"kind: List\nitems: [{items}]\n", "dump.yaml")
    assert len(doc["items"]) == 200
    thirty = ", ".join(str(i) for i in range(30))  # 31 nodes, each alias adds them again
    (doc,) = parse_documents(f"a: &a [{thirty}]\nb: [*a, *a, *a]\n", "t")
    assert doc["b"][2][29] == 29
    with pytest.raises(InputError, match="expand this document by more than 100 values"):
        parse_documents(f"a: &a [{thirty}]\nb: [*a, *a, *a, *a]\n", "t")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_and_dash_reads_stdin(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    result = runner.invoke(app, ["lint", str(fifo)])
    assert result.exit_code == 2 and "a FIFO, not a regular file" in result.output
    text = (EXAMPLES / "nightly-consolidation" / "nodepool.yaml").read_text()
    result = runner.invoke(app, ["plan", "-f", "-", "-o", "json"], input=text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["kind"] == "Plan"


def test_unicode_digits_are_not_quantities() -> None:
    with pytest.raises(InputError, match="ASCII digits"):
        quantity.parse("١٠", resource="cpu")
    assert quantity.parse("10", resource="cpu") == 10_000


@pytest.mark.parametrize(
    ("items", "ok"),
    [("", True), ("items: null\n", True), ("items: []\n", True), ("items: 5\n", False)],
)
def test_kind_list_edge_cases(items: str, ok: bool) -> None:
    text = f"apiVersion: v1\nkind: List\n{items}"
    if ok:
        assert load_text(text, "l.yaml").warnings == []
    else:
        with pytest.raises(InputError, match="field items: must be a list"):
            load_text(text, "l.yaml")
    with pytest.raises(InputError, match=r"items\[0\]: is not a mapping"):
        load_text("apiVersion: v1\nkind: List\nitems: [5]\n", "l.yaml")


def test_kubeconfig_problems_name_the_kubeconfig(tmp_path: Path) -> None:
    config = tmp_path / "kc"
    body = (
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'SERVER'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: CTX\n"
    )
    for server, ctx, expected in (
        ("https://127.0.0.1:1", "missing", "context 'missing' not found (contexts: x)"),
        ("not a url", "x", "is not an http(s) URL"),
    ):
        config.write_text(body.replace("SERVER", server).replace("CTX", ctx))
        result = runner.invoke(app, ["plan", "--kubeconfig", str(config)])
        assert result.exit_code == 2, result.output
        assert str(config) in result.output and expected in result.output
        assert "Traceback" not in result.output


def test_settings_files_are_checked_like_manifests(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("leaderElection: {leaseDurationSeconds: 5, renewDeadlineSeconds: 10}\n")
    with pytest.raises(InputError, match="must be greater than renewDeadlineSeconds"):
        load_settings(path)
    path.write_text("region: us-east-1\nregion: us-west-2\n")
    with pytest.raises(InputError, match="duplicate key"):
        load_settings(path)
    path.write_bytes(b"region: \xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_settings(path)
    path.write_text("batchIdleDuration: [1]\n")
    with pytest.raises(InputError, match="must be a number, not a list") as info:
        load_settings(path)
    assert "Input should" not in str(info.value)


def test_option_ranges_are_usage_errors() -> None:
    result = runner.invoke(app, ["run", "--metrics-port", "70000"])
    flat = " ".join(result.output.replace("│", " ").split())  # the error box's borders
    assert result.exit_code == 2 and "70000 is not a port" in flat and "Input should" not in flat
    result = runner.invoke(app, ["run", "--cloud", "gcp"])
    assert result.exit_code == 2


def test_cron_fire_times_are_lazy() -> None:
    every_minute = CronJob(
        "ns", "cj", "* * * * *", PodTemplate(requests={}), Source("f", "CronJob", "ns/cj")
    )
    times = fire_times(every_minute, datetime(2025, 1, 6, tzinfo=UTC), 10 * 365 * 86400)
    assert times  # fires, computed without listing five million times
    assert list(itertools.islice(times, 3)) == [0.0, 60.0, 120.0]


def test_a_long_fis_startafter_chain_is_ordered() -> None:
    n = 20_000
    actions = {
        f"a{i:05d}": {
            "actionId": "aws:fis:wait",
            "parameters": {"duration": "PT1S"},
            **({"startAfter": [f"a{i - 1:05d}"]} if i else {}),
        }
        for i in range(n)
    }
    template = {
        "description": "chain",
        "roleArn": "arn:aws:iam::123456789012:role/x",
        "targets": {},
        "actions": actions,
        "stopConditions": [{"source": "none"}],
    }
    times = schedule(parse_template(json.dumps(template), "chain.json"))
    assert times[f"a{n - 1:05d}"] == (n - 1.0, float(n))


def test_chaos_validate_lists_one_problem_per_line(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text(
        json.dumps(
            {
                "roleArn": "bad",
                "targets": {},
                "actions": {"a": {"actionId": "aws:ec2:nope"}},
                "stopConditions": [{"source": "none"}],
            }
        )
    )
    result = runner.invoke(app, ["chaos", "validate", str(bad)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("  field ")]
    assert len(lines) == 2, result.output


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "-f", "x.yaml", "-o", "yaml"],
        ["disrupt", "-f", "x.yaml", "-o", "xml"],
        ["run", "--cloud", "gcp"],
        ["run", "--health-port", "http"],
        ["plan", "--min-values-policy", "Loose"],
    ],
)
def test_option_choices_are_usage_errors_in_plain_words(args: list[str]) -> None:
    result = runner.invoke(app, args)
    flat = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "Value error" not in flat and "Input should be" not in flat, flat


def test_a_scenario_from_stdin_names_missing_files_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its relative paths resolve from the current directory, and a missing one's error says
    which directory that was (it said only 'provisioner.yaml')."""
    text = (EXAMPLES / "seed-spot" / "scenario.yaml").read_text()
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["simulate", "-", "--out", str(tmp_path / "out")], input=text)
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert f"manifest file '{tmp_path / 'provisioner.yaml'}' does not exist" in message
    monkeypatch.chdir(EXAMPLES / "seed-spot")
    result = runner.invoke(app, ["simulate", "-", "--out", str(tmp_path / "out")], input=text)
    assert result.exit_code == 0, result.output
