"""The imported Scenario directory: its files, determinism, and that it loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from joiner.api.errors import InputError
from joiner.cloudprovider.catalog import Catalog
from joiner.history.translate import objects_from_files, translate
from joiner.history.writer import write_scenario
from joiner.sim.scenario import load_scenario
from tests.history.conftest import MemorySource
from tests.history.test_translate import RANGE, _answers, _cluster


def _write(tmp_path: Path, out: Path) -> Path:
    objects = objects_from_files([_cluster(tmp_path)])
    imported = translate(MemorySource(_answers()), "memory", RANGE, objects)
    return write_scenario(imported, out)


def test_written_scenario_loads_and_replays_the_history(tmp_path: Path) -> None:
    path = _write(tmp_path, tmp_path / "week")
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]
    assert spec["compare"] == ["as-run", "joiner", "cluster-autoscaler"]
    assert spec["asRun"] == {"nodes": "as-run/nodes.csv", "pods": "as-run/pods.csv"}
    assert spec["startTime"] == "2025-01-06T00:00:00Z"
    assert spec["duration"] == "2h"
    assert spec["region"] == "us-east-1"
    # The cluster at the start (node "a", running from before the range) after the objects.
    assert spec["manifests"] == ["objects.yaml", "start.yaml"]
    assert {
        "deployment": "shop/web",
        "trace": {
            "file": "traces/shop/deployment.web.csv",
            "targetPerReplica": 1,
            "min": 0,
            "max": 6,
        },
    } in spec["workloads"]
    assert {"cronJob": "batch/nightly", "runFor": "300s"} in spec["workloads"]
    trace = (tmp_path / "week/traces/shop/deployment.web.csv").read_text().splitlines()
    assert trace[:2] == ["minute,value", "0,2"] and trace[61:] == ["60,6"] + [
        f"{m},6" for m in range(61, 120)
    ]
    assert (tmp_path / "week/as-run/nodes.csv").read_text().splitlines() == [
        "node,instanceType,capacityType,zone,nodePool,startSeconds,endSeconds",
        "a,m5.large,spot,us-east-1a,default,0,",
        "b,,on-demand,us-east-1b,ng-1,1200,4800",
    ]
    assert (tmp_path / "week/as-run/pods.csv").read_text().splitlines() == [
        "namespace,pod,createdSeconds,scheduledSeconds",
        "shop,loner-x,600,",
        "shop,web-abc-1,-100,-90",
    ]
    # The EC2NodeClass selects subnets by tag and has no status: a subnet per zone the
    # nodes ran in, tagged as it selects.
    assert spec["cloud"]["subnets"] == [
        {
            "id": f"subnet-us-east-1{z}",
            "zone": f"us-east-1{z}",
            "tags": {"karpenter.sh/discovery": "demo"},
        }
        for z in "ab"
    ]
    sc = load_scenario(path, Catalog.load())
    assert sc.duration_s == 7200.0
    web = next(w for w in sc.workloads if w.deployment == "shop/web")
    assert web.trace is not None and web.trace.replicas_at(0) == 2
    assert web.trace.replicas_at(90) == 6
    assert [c.cronjob.key for c in sc.cronjobs] == ["batch/nightly"]
    assert sc.cronjobs[0].run_for_s == 300.0


def test_output_is_deterministic(tmp_path: Path) -> None:
    _write(tmp_path, tmp_path / "one")
    _write(tmp_path, tmp_path / "two")
    one = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*"))
    two = sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*"))
    assert one == two
    for rel in one:
        a, b = tmp_path / "one" / rel, tmp_path / "two" / rel
        if a.is_file():
            text = a.read_text().replace("/one/", "/two/").replace("name: one", "name: two")
            assert text == b.read_text(), rel


def test_refuses_a_non_empty_directory_without_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="is not empty"):
        _write(tmp_path, out)
    objects = objects_from_files([_cluster(tmp_path)])
    imported = translate(MemorySource(_answers()), "memory", RANGE, objects)
    write_scenario(imported, out, force=True)
    assert (out / "keep.txt").read_text() == "mine"
    assert (out / "scenario.yaml").is_file()


@pytest.mark.parametrize(
    "name", ["../../../../../../etc/x", "..", "a/b", "esc\x1b[31mred", "caf\u00e9", "x.csv"]
)
def test_a_workload_name_stays_one_file_inside_the_directory(tmp_path: Path, name: str) -> None:
    # A hand-edited dump's name used to become path components: "../../etc/x" wrote
    # traces/shop/etc/x.csv, and a deeper one stopped halfway with files already written.
    from joiner.history.translate import WorkloadTrace
    from joiner.history.writer import trace_path

    rel = trace_path(WorkloadTrace("Deployment", f"shop/{name}", (1.0,)))
    parts = rel.split("/")
    assert len(parts) == 3 and parts[:2] == ["traces", "shop"], rel
    assert all(c.isascii() and (c.isalnum() or c in "._-%") for c in parts[2]), rel
    assert not parts[2].startswith(".."), rel
    other = trace_path(WorkloadTrace("Deployment", "shop/x", (1.0,)))
    assert rel != other or name == "x"
    odd = trace_path(WorkloadTrace("Deployment", f"{name}/web", (1.0,))).split("/")
    assert len(odd) == 3 and odd[1] not in ("", ".", ".."), odd


def test_a_workload_name_the_api_server_refuses_is_refused_at_import(tmp_path: Path) -> None:
    dump = _cluster(tmp_path)
    dump.write_text(
        dump.read_text().replace(
            "{name: web, namespace: shop}", "{name: 'a/../b', namespace: shop}", 1
        )
    )
    answers = _answers()
    answers["hpa_info"] = []
    answers["hpa_desired_replicas"] = []
    first = answers["deployment_replicas"][0]
    answers["deployment_replicas"][0] = type(first)(
        {"namespace": "shop", "deployment": "a/../b"}, first.times_s, first.values
    )
    # The API server never holds such a name (not a DNS-1123 subdomain), so the import
    # refuses it, naming the field, before any trace file is written.
    with pytest.raises(InputError) as info:
        translate(MemorySource(answers), "memory", RANGE, objects_from_files([dump]))
    assert info.value.field == "metadata.name"
    assert not (tmp_path / "week").exists()


@pytest.mark.parametrize(
    "odd", ["nl\nkind: Evil\n#", "esc\x1b[31m", "nel\x85x", "ls\u2028x", "tab\tx"]
)
def test_an_odd_out_directory_name_stays_in_the_comment(tmp_path: Path, odd: str) -> None:
    # A newline in --out ended the "# Run:" comment and wrote YAML into the Scenario.
    path = _write(tmp_path, tmp_path / odd)
    text = path.read_text(encoding="utf-8")
    assert text.isascii()
    lines = text.splitlines()
    assert lines[1].startswith("# Run: joiner simulate ") and lines[2].startswith("apiVersion:")
    assert yaml.safe_load(text)["kind"] == "Scenario"
    load_scenario(path, Catalog.load())


def test_an_out_that_cannot_be_written_is_an_input_error(tmp_path: Path) -> None:
    # A name too long and a place where no directory can be made were tracebacks
    # (OSError from the out-directory check or from the write).
    from joiner.history.writer import check_out_dir

    long = tmp_path / ("x" * 300)
    with pytest.raises(InputError, match="field --out: cannot use"):
        check_out_dir(long, force=False)
    with pytest.raises(InputError, match="field --out: cannot use"):
        _write(tmp_path, long / "week")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match=r"field --out: cannot write as-run/nodes\.csv"):
        _write(tmp_path, blocker / "week")


@pytest.mark.parametrize(
    "name", ["cr\ralone", "lf\nx", 'q"uote', "com,ma", "esc\x1b[31m\x07", "del\x7f\x9b", "us\x1f"]
)
def test_as_run_names_read_back_exactly(tmp_path: Path, name: str) -> None:
    # The csv module's writer left a lone carriage return unquoted, which the reader took
    # for the end of a row; a trailing separator control was stripped as white space.
    import dataclasses

    from joiner.sim.asrun_files import AsRunNode, AsRunPod, load_nodes, load_pods

    objects = objects_from_files([_cluster(tmp_path)])
    imported = translate(MemorySource(_answers()), "memory", RANGE, objects)
    node = AsRunNode(name, "m5.large", "spot", "us-east-1a", name, 0.0, 60.0)
    pod = AsRunPod(name, name, 0.0, 1.0)
    odd = dataclasses.replace(imported, nodes=(node,), pods=(pod,))
    write_scenario(odd, tmp_path / "week")
    assert load_nodes(tmp_path / "week/as-run/nodes.csv") == (node,)
    assert load_pods(tmp_path / "week/as-run/pods.csv") == (pod,)
