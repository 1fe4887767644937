"""The Sweep file: merge patches, variants, the grid, and located errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from joiner.api.errors import InputError
from joiner.operator.sweep.patch import merge_patch
from joiner.operator.sweep.spec import cell_scenario, load_sweep
from tests.operator.sweeps import EXAMPLE, small_sweep


# RFC 7396 Appendix A, re-expressed: (target, patch, result).
@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_follows_rfc_7396(target, patch, result):
    before = repr(target)
    assert merge_patch(target, patch) == result
    assert repr(target) == before  # the target is not modified


def test_example_sweep_is_four_variants_by_twenty_seeds():
    plan = load_sweep(EXAMPLE)
    assert len(plan.variants) >= 4
    assert len(plan.cells) == len(plan.variants) * 20
    ids = [c.cell_id for c in plan.cells]
    assert len(set(ids)) == len(ids)
    # Each variant's patch reached its Provisioner: the NodePools differ per variant.
    pools = {v.name: yaml.safe_load(v.node_pools_yaml) for v in plan.variants.values()}
    reqs = {
        name: {r["key"]: r["values"] for r in p["spec"]["template"]["spec"]["requirements"]}
        for name, p in pools.items()
    }
    assert reqs["on-demand"]["karpenter.sh/capacity-type"] == ["on-demand"]
    assert reqs["as-published"]["node.kubernetes.io/instance-type"] == ["c5.xlarge", "c6g.xlarge"]
    assert "karpenter.k8s.aws/instance-category" in reqs["diversified-spot"]
    assert len({v.digest for v in plan.variants.values()}) == len(plan.variants)


def test_cell_scenario_sets_seed_policy_and_multiplies_the_rate(tmp_path):
    path = small_sweep(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["variants"][0]["scenario"]["spec"]["cloud"] = {"interruptionRateMultiplier": 3}
    doc["spec"]["interruptionRateMultipliers"] = [1, 10]
    path.write_text(yaml.safe_dump(doc))
    plan = load_sweep(path)
    cell = next(c for c in plan.cells if c.rate_multiplier == 10 and c.seed == 2)
    sc = cell_scenario(plan.variants[cell.variant], cell)
    assert sc["spec"]["seed"] == 2
    assert sc["spec"]["compare"] == [cell.policy]
    assert sc["spec"]["cloud"]["interruptionRateMultiplier"] == 30
    assert sc["spec"]["duration"] == "20m"
    # The base scenario's own settings stay.
    assert sc["spec"]["workloads"] == [{"deployment": "default/web", "replicas": 20}]


def test_sample_draws_a_seeded_subset_in_grid_order(tmp_path):
    path = small_sweep(tmp_path, seeds=10)
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["sample"] = {"count": 7, "seed": 3}
    path.write_text(yaml.safe_dump(doc))
    full = [c.cell_id for c in load_sweep(small_sweep(tmp_path, seeds=10, name="f")).cells]
    a = [c.cell_id for c in load_sweep(path).cells]
    assert a == [c.cell_id for c in load_sweep(path).cells]
    assert len(a) == 7
    assert a == [c for c in full if c in set(a)]


def test_a_huge_grid_is_sampled_without_being_built(tmp_path):
    """900 multipliers x a million seeds is 9e8 cells: two are drawn by index (the grid is
    never built), the same two every time, in grid order; without a sample such a grid is an
    input error naming spec.sample."""
    path = small_sweep(tmp_path, seeds=1, variants=1)
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["seeds"] = {"start": 0, "count": 1_000_000}
    doc["spec"]["interruptionRateMultipliers"] = [1 + i / 100 for i in range(900)]
    doc["spec"]["sample"] = {"count": 2, "seed": 5}
    path.write_text(yaml.safe_dump(doc))
    cells = load_sweep(path).cells
    assert len(cells) == 2 and cells == load_sweep(path).cells
    key = [(c.rate_multiplier, c.seed) for c in cells]
    assert key == sorted(key)
    del doc["spec"]["sample"]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"900,000,000 cells.*spec\.sample"):
        load_sweep(path)


def _bad(tmp_path: Path, edit) -> InputError:
    path = small_sweep(tmp_path)
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as info:
        load_sweep(path)
    return info.value


def test_unknown_field_has_a_hint(tmp_path):
    def edit(doc):
        doc["spec"]["seed"] = doc["spec"].pop("seeds")

    e = _bad(tmp_path, edit)
    assert e.field == "spec" or (e.field or "").startswith("spec")
    assert "seed" in str(e) and "Sweep/small" in str(e)


def test_a_typo_in_a_variant_names_it(tmp_path):
    def edit(doc):
        doc["spec"]["variants"][1]["manifest"] = doc["spec"]["variants"][1].pop("manifests")

    e = _bad(tmp_path, edit)
    assert e.field == "spec.variants[1].manifest"
    assert "did you mean 'manifests'" in str(e)


def test_a_target_that_matches_nothing_lists_the_documents(tmp_path):
    def edit(doc):
        doc["spec"]["variants"][1]["manifests"][0]["target"]["name"] = "nope"

    e = _bad(tmp_path, edit)
    assert e.field == "spec.variants[1].manifests[0].target"
    assert "Provisioner/nope" in str(e) and "Provisioner/my-provisioner" in str(e)


def test_a_patch_that_breaks_the_scenario_names_the_variant(tmp_path):
    def edit(doc):
        doc["spec"]["variants"][0]["scenario"] = {"spec": {"duration": "soon"}}

    e = _bad(tmp_path, edit)
    assert e.field == "spec.variants[0]"
    assert "as-published" in str(e) and "spec.duration" in str(e)


def test_a_patch_that_breaks_a_manifest_names_the_variant_and_field(tmp_path):
    def edit(doc):
        doc["spec"]["variants"][1]["manifests"][0]["patch"] = {"spec": {"requirments": []}}

    e = _bad(tmp_path, edit)
    assert e.field == "spec.variants[1]"
    assert "requirments" in str(e)


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["spec"].update(seeds=[1, 1]), "spec.seeds"),
        (lambda d: d["spec"].update(interruptionRateMultipliers=[1, 1.0]), "spec."),
        (lambda d: d["spec"].update(policies=["joiner", "joiner"]), "spec.policies"),
        (lambda d: d["spec"]["variants"][1].update(name="as-published"), "spec.variants[1].name"),
        (lambda d: d["spec"].update(scenario="missing.yaml"), "spec.scenario"),
        (lambda d: d["spec"].update(policies=["karpenter"]), "spec.policies[0]"),
        # A string for a number is an error, not coerced (the sweep model is strict).
        (lambda d: d["spec"].update(interruptionRateMultipliers=["2"]), "spec.inter"),
        (lambda d: d["spec"].update(seeds=["1"]), "spec.seeds[0]"),
        (lambda d: d["spec"].update(seeds={"start": "0", "count": 2}), "spec.seeds.start"),
        (lambda d: d["spec"].update(interruptionRateMultipliers=[float("inf")]), "spec.inter"),
    ],
)
def test_bad_axes_are_located(tmp_path, edit, field):
    e = _bad(tmp_path, edit)
    assert (e.field or "").startswith(field)


@pytest.mark.parametrize(
    "args",
    [
        ["sweep", "missing.yaml"],
        ["sweep", str(EXAMPLE.parent / "scenario.yaml")],
        ["sweep", str(EXAMPLE), "--resume", "--overwrite"],
        ["sweep", "report", "missing.jsonl"],
        ["sweep", "report", str(EXAMPLE), "--objective", "cheapest please"],
    ],
)
def test_cli_bad_input_exits_2_and_runs_nothing(tmp_path, args, monkeypatch):
    from typer.testing import CliRunner

    from joiner.cli.main import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "joiner-out").exists()


def test_as_run_in_the_scenarios_compare_is_left_out_of_the_sweep(tmp_path):
    """A sweep varies seeds and multipliers, which never change the as-run record: its
    policies are the scenario's simulated ones and its cells carry no spec.asRun."""
    import shutil

    base = tmp_path / "base"
    shutil.copytree(EXAMPLE.parent, base)
    text = (base / "scenario.yaml").read_text()
    as_run = "  compare: [as-run, joiner, cluster-autoscaler]\n  asRun: {nodes: as-run/nodes.csv}\n"
    (base / "scenario.yaml").write_text(text.replace("  seed: 42\n", "  seed: 42\n" + as_run))
    path = small_sweep(tmp_path, variants=1)
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["scenario"] = str(base / "scenario.yaml")
    del doc["spec"]["policies"]  # the scenario's spec.compare then
    path.write_text(yaml.safe_dump(doc))
    plan = load_sweep(path)
    assert {c.policy for c in plan.cells} == {"joiner", "cluster-autoscaler"}
    sc = cell_scenario(plan.variants[plan.cells[0].variant], plan.cells[0])
    assert "asRun" not in sc["spec"] and sc["spec"]["compare"] == [plan.cells[0].policy]


@pytest.mark.parametrize("where", ["variant", "sweep"])
def test_a_bad_name_says_what_a_name_may_contain(tmp_path, where):
    def edit(doc):
        if where == "variant":
            doc["spec"]["variants"][0]["name"] = "spot only!"
        else:
            doc["metadata"]["name"] = "-small"

    e = _bad(tmp_path, edit)
    assert e.field == ("spec.variants[0].name" if where == "variant" else "metadata.name")
    assert "may contain letters, digits, '.', '_' and '-'" in str(e)
    assert "String should match pattern" not in str(e)
