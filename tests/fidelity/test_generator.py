"""The generated differential cases, without a cluster: the same seed gives the same cases,
every case renders to objects the API server's schemas accept and Joiner loads, and the
seeds cover every feature the hand-written corpus names."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import cases
import catalog
import generator
import pytest
import render
import run
from harness import Snapshot, joiner_gates, joiner_plan

from joiner.api.manifests import load_documents
from joiner.api.openapi import check
from joiner.cloudprovider.kwok import load_instance_types

SEEDS = range(200)
PER_SEED = 8

#: the gates Karpenter runs with in run.py, as Joiner reads them
GATES = joiner_gates(run.KARPENTER_FEATURE_GATES)


def _dump(case: cases.Case) -> str:
    return json.dumps(dataclasses.asdict(case), sort_keys=True)


def _rendered(case: cases.Case) -> list[cases.Obj]:
    docs = [dict(render.KWOK_NODECLASS), *render.base_objects(case)]
    return docs + render.before_pods(case) + render.batch_pods(case)


def test_the_same_seed_gives_the_same_cases() -> None:
    first = [_dump(c) for c in generator.generate(7, 20)]
    assert first == [_dump(c) for c in generator.generate(7, 20)]
    assert first != [_dump(c) for c in generator.generate(8, 20)]
    # a longer run of the same seed starts with the same cases
    assert [_dump(c) for c in generator.generate(7, 25)][:20] == first


def test_ids_name_the_seed_and_never_clash_with_the_corpus() -> None:
    generated = generator.generate(42, 12)
    assert [c.id for c in generated] == [f"gen-42-{i}" for i in range(12)]
    assert not {c.id for c in generated} & {c.id for c in cases.CASES}
    with pytest.raises(ValueError, match="seed and count"):
        generator.generate(-1, 3)


@pytest.mark.parametrize("seed", range(0, 200, 4))
def test_every_generated_case_passes_the_api_schemas_and_loads(seed: int) -> None:
    for case in generator.generate(seed, PER_SEED):
        docs = _rendered(case)
        for i, doc in enumerate(docs):
            check(doc, doc["apiVersion"], doc["kind"], case.id, f"#{i}")
        load_documents(docs, case.id)
        if case.kind == "disrupt":
            assert case.change is not None and case.before
            patched = [render.merge(d, p) for d, p in _patched(case)]
            for d in patched:
                check(d, d["apiVersion"], d["kind"], case.id, "patched NodePool")


def _patched(case: cases.Case) -> list[tuple[cases.Obj, cases.Obj]]:
    pools = {d["metadata"]["name"]: d for d in render.base_objects(case) if d["kind"] == "NodePool"}
    return [(pools[name], patch) for name, patch in render.pool_patches(case).items()]


#: Corpus features the generator does not draw: a static NodePool keeps its count whatever
#: the pods want, so the generator's pods-driven cases have nothing to vary in it; preemption
#: needs a preempting PriorityClass and a node filled by lower-priority pods, a set-up of
#: its own (``preempt-placeholder``), not one of the generator's pod groups.
NOT_GENERATED = {"static capacity", "preemption"}


def test_the_seeds_cover_every_feature_of_the_corpus() -> None:
    wanted = {f for c in cases.CASES for f in c.features} - NOT_GENERATED
    seen: set[str] = set()
    kinds: set[str] = set()
    for seed in SEEDS:
        for case in generator.generate(seed, PER_SEED):
            seen |= set(case.features)
            kinds.add(case.kind)
    assert wanted - seen == set()
    assert kinds == {"provision", "disrupt"}


def test_cases_that_could_see_others_run_alone_and_zone_ties_are_declared() -> None:
    """The isolation and tie rules of the generator's docstring, over many seeds."""
    for seed in range(60):
        for case in generator.generate(seed, PER_SEED):
            text = json.dumps([case.pools, case.pods])
            if "PreferNoSchedule" in text or '"nodeAffinityPolicy": "Ignore"' in text:
                assert case.alone, case.id
            if any(_zone_tie(p["spec"]) for p in case.pods):
                assert case.zone_ties, case.id
            sizes = {}
            for p in case.pods:
                app = p["metadata"]["labels"]["app"]
                sizes[app] = p["spec"]["containers"][0]["resources"]
            cpus = [
                (r.get("requests") or r.get("limits"))["cpu"]  # type: ignore[index]
                for r in sizes.values()
            ]
            assert len(cpus) == len(set(cpus)), case.id  # groups never tie in queue order


def _zone_tie(spec: cases.Obj) -> bool:
    """Spread or anti-affinity over zones: which of the min-count zones is a tie."""
    zone = '"topologyKey": "topology.kubernetes.io/zone"'
    anti = (spec.get("affinity") or {}).get("podAntiAffinity")
    return zone in json.dumps([spec.get("topologySpreadConstraints"), anti])


def test_joiner_plans_every_generated_provisioning_case(tmp_path: Path) -> None:
    """Joiner reads each rendered case without an error (a case's pods pending is fine)."""
    types = load_instance_types(catalog.write(tmp_path / "types.json"))
    for case in generator.generate(3, 30):
        if case.kind != "provision":
            continue
        docs = [dict(render.KWOK_NODECLASS)]
        docs += [d for d in render.base_objects(case) if d["kind"] != "Namespace"]
        side = joiner_plan(case, Snapshot(docs, {}, {}), types, tmp_path, GATES)
        assert side.error == "", (case.id, side.error)


def test_generated_ids_name_their_seed_and_count() -> None:
    import run

    assert run._generated_ids([]) == (None, 0)
    assert run._generated_ids(["gen-5-3", "gen-5-0"]) == (5, 4)
    with pytest.raises(ValueError, match="several seeds"):
        run._generated_ids(["gen-5-3", "gen-6-0"])
    with pytest.raises(ValueError, match="not a generated case id"):
        run._generated_ids(["gen-x-1"])
    args = run._parse(["--cases", "gen-5-3"])
    fixed, generated, seed = run._select(args)
    assert (fixed, [c.id for c in generated], seed) == ([], ["gen-5-3"], 5)
    fixed, generated, seed = run._select(run._parse(["--generated", "2", "--seed", "9"]))
    assert len(fixed) == len(cases.CASES) and [c.id for c in generated] == ["gen-9-0", "gen-9-1"]


def test_the_report_keeps_the_fixed_headline_last() -> None:
    """The fixed corpus's agreement stays the last line, in the format every consumer reads;
    the generated cases' agreement comes just before it, with the seed."""
    import report
    from harness import Result, Side

    fixed = [Result(c, Side(), Side(), [], 1.0) for c in cases.CASES[:3]]
    gen = generator.generate(11, 2)
    generated = [Result(gen[0], Side(), Side(), [], 1.0), Result(gen[1], Side(), Side(), ["x"], 1)]
    doc = report.as_json(fixed, "v1.14.0", 10.0, 1.0, generated=generated, seed=11)
    lines = report.markdown(doc).splitlines()
    assert lines[-1] == "agreement: 3/3 cases (100.0%)"
    assert "generated agreement: 1/2 cases (50.0%), seed 11" in lines
    assert report.generated_headline(report.as_json(fixed, "v", 1.0, 1.0)) == ""


class _Recorder:
    """A stand-in for harness.Cluster that records what run.py applies and deletes."""

    def __init__(self, pools: list[cases.Obj]) -> None:
        self.pools = pools
        self.applied: list[cases.Obj] = []
        self.deleted: list[str] = []

    def nodepools(self, case: cases.Case) -> list[cases.Obj]:
        return self.pools

    def apply(self, docs: list[cases.Obj]) -> None:
        self.applied += docs

    def delete_case(self, case: cases.Case) -> None:
        self.deleted.append(case.id)

    def wait_claims_gone(self, batch: list[cases.Case]) -> float:
        return 0.0


def test_a_judged_disruption_case_is_frozen_and_a_batch_is_deleted() -> None:
    """Isolation (docs/fidelity.md): once judged, a disruption case's NodePools get budget
    0 and consolidateAfter Never, their template untouched (no drift); a provisioning
    batch's cases are deleted before the next batch."""
    import run

    [case] = cases.by_id(["emptiness"])
    live = [d for d in render.base_objects(case) if d["kind"] == "NodePool"]
    cluster = _Recorder(live)
    run._freeze(cluster, case)  # type: ignore[arg-type]
    [frozen] = cluster.applied
    assert frozen["metadata"] == {"name": "emptiness-default"}
    assert frozen["spec"]["disruption"]["budgets"] == [{"nodes": "0"}]
    assert frozen["spec"]["disruption"]["consolidateAfter"] == "Never"
    assert frozen["spec"]["template"] == live[0]["spec"]["template"]
    batch = cases.by_id(["basic-cpu", "many-small"])
    run._isolate(cluster, batch)  # type: ignore[arg-type]
    assert cluster.deleted == ["basic-cpu", "many-small"]


def test_leaky_cases_get_a_batch_of_their_own() -> None:
    import run

    mixed = [*cases.by_id(["basic-cpu", "spread-taints-honor"]), *generator.generate(5, 12)]
    batches = run._batches([c for c in mixed if c.kind == "provision"], 16)
    for b in batches:
        assert len(b) == 1 or not any(c.alone for c in b)
    assert any(len(b) == 1 and b[0].id == "spread-taints-honor" for b in batches)


def test_a_shared_batch_expects_at_most_twelve_nodeclaims_in_its_round() -> None:
    """Karpenter's in-flight NodeClaims of one round are sorted stably only up to 12
    (``run.ROUND_CLAIMS_MAX``; gen-1818-0 disagreed in a round of 43 and agreed alone):
    batches are filled first fit under that budget, and a case expecting more runs alone."""
    import run

    prov = [c for c in generator.generate(1818, 40) if c.kind == "provision"]
    expected = {c.id: (i * 5) % 7 for i, c in enumerate(prov)}
    expected[prov[3].id] = 13
    batches = run._batches(prov, 16, lambda c: expected[c.id])
    assert sorted(c.id for b in batches for c in b) == sorted(c.id for c in prov)
    for b in batches:
        assert len(b) == 1 or sum(expected[c.id] for c in b) <= run.ROUND_CLAIMS_MAX
    assert [prov[3]] in batches
    # without the budget, only the batch size bounds a batch
    assert max(len(b) for b in run._batches(prov, 16)) == 16


def test_expected_claims_plans_the_case_on_an_empty_cluster(tmp_path: Path) -> None:
    import harness

    from joiner.cloudprovider.kwok import load_instance_types

    types = load_instance_types(catalog.write(tmp_path / "instance-types.json"))
    gates = harness.joiner_gates(run.KARPENTER_FEATURE_GATES)
    [case] = cases.by_id(["basic-cpu"])
    assert harness.expected_claims(case, types, gates) == 1


def test_min_domains_only_with_do_not_schedule() -> None:
    """Regression (gen-202-25, refused by the API server: ``minDomains`` is only allowed
    with ``whenUnsatisfiable: DoNotSchedule``, Kubernetes ``ValidateTopologySpreadConstraints``)."""
    seen = 0
    for seed in range(60):
        for case in generator.generate(seed, PER_SEED):
            for p in [*case.pods, *case.before]:
                spec = p["spec"].get("template", {}).get("spec", p["spec"])
                for c in spec.get("topologySpreadConstraints", []):
                    if "minDomains" in c:
                        seen += 1
                        assert c["whenUnsatisfiable"] == "DoNotSchedule", (case.id, c)
    assert seen > 0
