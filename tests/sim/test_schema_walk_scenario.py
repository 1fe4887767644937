"""Issue 19, the class for the scenario file and the Cluster Autoscaler baseline's
configuration (``spec.clusterAutoscaler``), and for the NTH Helm values: every field Joiner
accepts changes what is run or draws a warning.

The scenario's field paths come from walking ``ScenarioSpec`` (every nested model and list
item), so a field added there without an entry here fails ``test_every_field_has_a_mutation``.
For each field the scenario is loaded twice, before and after the mutation, with every
parent the field needs already present in both (a list gets the item ``ITEMS`` gives), and
the loaded ``Scenario`` (what the simulation, the CA baseline and the reports read) must
differ.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from joiner.api.errors import InputError
from joiner.api.inputfiles import recording
from joiner.controllers.interruption import settings as nth
from joiner.sim.scenario import load_scenario
from joiner.sim.scenario_schema import ScenarioFile, ScenarioSpec, referenced_files
from tests.cli.test_schema_walk_karpenter import walk
from tests.sim.step_scenario import CRONJOB
from tests.sim.test_capacity_buffer import BUFFER

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed-spot"

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics:
    - type: Pods
      pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "50"}}
"""

HISTORY = {
    "SpotPriceHistory": [
        {
            "AvailabilityZone": "us-east-1a",
            "InstanceType": "c5.xlarge",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": "0.05",
            "Timestamp": "2025-01-05T00:00:00+00:00",
        }
    ]
}
SCORES = {
    "SpotPlacementScores": [{"Region": "us-east-1", "AvailabilityZoneId": "use1-az6", "Score": 3}]
}

BASE: dict[str, Any] = {
    "apiVersion": "joiner.dev/v1alpha1",
    "kind": "Scenario",
    "metadata": {"name": "walk"},
    "spec": {
        "manifests": ["provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml"],
        "cloud": {
            "subnets": [
                {"id": "subnet-123455", "zone": "us-east-1a"},
                {"id": "subnet-123456", "zone": "us-east-1b"},
            ],
            "securityGroups": [{"id": "sg-123456"}, {"id": "sg-123455"}],
        },
        "workloads": [{"deployment": "default/web", "replicas": 2}],
    },
}

#: The item a list gets when a field inside it is mutated (before and after alike).
ITEMS: dict[str, Any] = {
    "cloud.interruptionRates": {"ratePerHour": 0.1},
    "cloud.spotPlacementScores": {"file": "scores.json"},
    "cloud.capacityReservations": {
        "id": "cr-0a1b",
        "instanceType": "c5.xlarge",
        "zone": "us-east-1a",
        "instanceCount": 2,
    },
    "workloads[].trace": {"file": "traffic.csv", "targetPerReplica": 50},
    "workloads[].hpa": {"file": "traffic.csv", "targetPerReplica": 50},
    "workloads[].hpa.dailyMultipliers": {"start": "09:00", "duration": "1h", "factor": 2},
    "workloads[].traffic": {"file": "traffic.csv"},
    "workloads[].traffic.dailyMultipliers": {"start": "09:00", "duration": "1h", "factor": 2},
    "events": {"at": "5m", "file": "event.json"},
    "faults": {"at": "5m", "template": "fis.json"},
    "clusterAutoscaler.nodeGroups": {
        "name": "g",
        "nodePool": "my-provisioner",
        "instanceTypes": ["c5.xlarge"],
    },
    "schedules": {
        "workload": "default/web",
        "cron": "*/10 * * * *",
        "minReplicas": 3,
        "duration": "5m",
    },
    # Inside the run (a window outside it resolves to nothing, with a warning).
    "report.windows": {"name": "rush", "start": "00:10", "duration": "10m"},
    "asRun": {"nodes": "nodes.csv"},
}


@dataclass(frozen=True)
class Err:
    """A value the loader must reject, naming ``field`` (the field is read, not ignored)."""

    value: Any
    field: str


#: ScenarioSpec field path -> the value it is set to (a callable mutates the spec itself).
FIELDS: dict[str, Any] = {
    "region": lambda s: s.update(
        region="us-west-2",
        cloud={
            **s["cloud"],
            "subnets": [
                {"id": "subnet-123455", "zone": "us-west-2a"},
                {"id": "subnet-123456", "zone": "us-west-2b"},
            ],
        },
    ),
    "duration": "2h",
    "seed": 7,
    "startTime": "2025-02-01T00:00:00Z",
    "settings.featureGates.spotToSpotConsolidation": True,
    "settings.featureGates.nodeRepair": True,
    "settings.nodeRepairTolerations": {"Ready": "5m"},
    "settings.packing": "cost-optimal",
    "manifests": ["provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml", "cron.yaml"],
    "cloud.subnets[].id": Err("subnet-9", "does not exist"),
    "cloud.subnets[].zone": "us-east-1c",
    "cloud.subnets[].tags": {"team": "a"},
    "cloud.securityGroups[].id": Err("sg-9", "does not exist"),
    "cloud.securityGroups[].name": "named",
    "cloud.securityGroups[].tags": {"team": "a"},
    "cloud.interruptionRateMultiplier": 3.0,
    "cloud.interruptionRates[].ratePerHour": 0.5,
    "cloud.interruptionRates[].instanceType": "c5.xlarge",
    "cloud.interruptionRates[].zone": "us-east-1a",
    "cloud.rebalanceProbability": 0.5,
    "cloud.spotPriceHistory": "history.json",
    "cloud.spotPlacementScores[].file": "scores2.json",
    "cloud.spotPlacementScores[].instanceTypes": ["c5.xlarge"],
    "cloud.capacityReservations[].id": "cr-0c2d",
    "cloud.capacityReservations[].instanceType": "m5.xlarge",
    "cloud.capacityReservations[].zone": Err("eu-west-1a", "capacityReservations"),
    "cloud.capacityReservations[].instanceCount": 5,
    "cloud.capacityReservations[].ownerID": "012345678901",
    "cloud.capacityReservations[].tags": {"team": "a"},
    "cloud.capacityReservations[].instanceMatchCriteria": "open",
    # The seed has one Deployment: naming another is an error (so the field is read).
    "workloads[].deployment": Err("default/missing", "deployment"),
    "workloads[].cronJob": lambda s: s.update(
        manifests=[*s["manifests"], "cron.yaml"],
        workloads=[*s["workloads"], {"cronJob": "default/nightly", "runFor": "5m"}],
    ),
    "workloads[].replicas": 5,
    "workloads[].trace.file": "traffic2.csv",
    "workloads[].trace.targetPerReplica": 25,
    "workloads[].trace.min": 3,
    "workloads[].trace.max": 4,
    "workloads[].hpa.file": "traffic2.csv",
    "workloads[].hpa.targetPerReplica": 25,
    "workloads[].hpa.min": 3,
    "workloads[].hpa.max": 4,
    "workloads[].hpa.syncPeriod": "30s",
    "workloads[].hpa.scaleDownStabilization": "1m",
    "workloads[].hpa.tolerance": 0.2,
    "workloads[].hpa.dailyMultipliers[].name": "morning",
    "workloads[].hpa.dailyMultipliers[].start": "10:00",
    "workloads[].hpa.dailyMultipliers[].duration": "2h",
    "workloads[].hpa.dailyMultipliers[].factor": 3,
    "workloads[].runFor": "7m",
    "workloads[].traffic.file": "traffic2.csv",
    "workloads[].traffic.dailyMultipliers[].name": "morning",
    "workloads[].traffic.dailyMultipliers[].start": "10:00",
    "workloads[].traffic.dailyMultipliers[].duration": "2h",
    "workloads[].traffic.dailyMultipliers[].factor": 3,
    "workloads[].cpuPerRequest": "10m",
    "interruption": {"enableRebalanceDraining": True},
    "events[].at": "6m",
    "events[].file": "event2.json",
    "faults[].at": "6m",
    "faults[].template": "fis2.json",
    "compare": ["joiner", "cluster-autoscaler"],
    "clusterAutoscaler.scanInterval": "20s",
    "clusterAutoscaler.newPodScaleUpDelay": "30s",
    "clusterAutoscaler.expander": "least-waste",
    "clusterAutoscaler.priorities": {"10": [".*"]},
    "clusterAutoscaler.balanceSimilarNodeGroups": False,
    "clusterAutoscaler.skipNodesWithSystemPods": False,
    "clusterAutoscaler.skipNodesWithLocalStorage": False,
    "clusterAutoscaler.derivedGroups": "instance-type",
    "clusterAutoscaler.maxNodeProvisionTime": "10m",
    "clusterAutoscaler.initialNodeGroupBackoffDuration": "1m",
    "clusterAutoscaler.maxNodeGroupBackoffDuration": "10m",
    "clusterAutoscaler.nodeGroupBackoffResetTimeout": "1h",
    "clusterAutoscaler.scaleDownUtilizationThreshold": 0.7,
    "clusterAutoscaler.scaleDownUnneededTime": "5m",
    "clusterAutoscaler.scaleDownDelayAfterAdd": "5m",
    "clusterAutoscaler.scaleDownDelayAfterDelete": "1m",
    "clusterAutoscaler.scaleDownDelayAfterFailure": "1m",
    "clusterAutoscaler.maxEmptyBulkDelete": 3,
    "clusterAutoscaler.maxScaleDownParallelism": 3,
    "clusterAutoscaler.maxDrainParallelism": 2,
    "clusterAutoscaler.blockingSystemPodDisruptionTimeout": "10m",
    "clusterAutoscaler.maxNodesTotal": 2,
    "clusterAutoscaler.coresTotal": "0:8",
    "clusterAutoscaler.memoryTotal": "0:16",
    "clusterAutoscaler.asgLaunchDelay.min": "30s",
    "clusterAutoscaler.asgLaunchDelay.max": "200s",
    "clusterAutoscaler.capacityRebalance": True,
    "clusterAutoscaler.nodeGroups[].name": "h",
    # The seed has one pool: naming another is an error (so the field is read).
    "clusterAutoscaler.nodeGroups[].nodePool": Err("missing-pool", "nodePool"),
    "clusterAutoscaler.nodeGroups[].instanceTypes": ["c5.xlarge", "c6g.xlarge"],
    "clusterAutoscaler.nodeGroups[].onDemandBaseCapacity": 1,
    "clusterAutoscaler.nodeGroups[].onDemandPercentageAboveBaseCapacity": 50,
    "clusterAutoscaler.nodeGroups[].spotAllocationStrategy": "capacity-optimized",
    "clusterAutoscaler.nodeGroups[].onDemandAllocationStrategy": "lowest-price",
    "clusterAutoscaler.nodeGroups[].minSize": 1,
    "clusterAutoscaler.nodeGroups[].maxSize": 10,
    "clusterAutoscaler.nodeGroups[].zones": ["us-east-1a"],
    "clusterAutoscaler.derivedGroupMaxSize": 10,
    "settings.featureGates.capacityBuffer": True,
    "settings.featureGates.reservedCapacity": False,
    "settings.featureGates.nodeOverlay": True,
    "settings.featureGates.staticCapacity": True,
    # The seed has one Deployment: naming another is an error (so the field is read).
    "schedules[].workload": Err("default/missing", "workload"),
    "schedules[].buffer": lambda s: s.update(
        manifests=[*s["manifests"], "buffer.yaml"],
        schedules=[
            {"buffer": "default/spare", "cron": "*/10 * * * *", "minReplicas": 3, "duration": "5m"}
        ],
    ),
    "schedules[].cron": "*/20 * * * *",
    "schedules[].minReplicas": 4,
    "schedules[].duration": "7m",
    "report.windows[].name": "doors",
    "report.windows[].start": "00:20",
    "report.windows[].duration": "20m",
    "asRun.nodes": "nodes2.csv",
    "asRun.pods": "pods.csv",
}


def _cron_first(spec: dict[str, Any]) -> None:
    spec["manifests"] = [*spec["manifests"], "cron.yaml"]
    spec["workloads"] = [{"cronJob": "default/nightly", "runFor": "5m"}, *spec["workloads"]]


def _manifest_hpa(spec: dict[str, Any]) -> None:
    """The seed's Deployment scaled by a manifest HPA fed by ``traffic``."""
    spec["manifests"] = [*spec["manifests"], "hpa.yaml"]
    spec["workloads"] = [{"deployment": "default/web", "traffic": {"file": "traffic.csv"}}]


def _as_run_compared(spec: dict[str, Any]) -> None:
    """``spec.asRun`` is read only with ``as-run`` in ``spec.compare``."""
    spec["compare"] = ["as-run", "joiner"]


#: What a field needs in place before and after its mutation (beyond ``ITEMS``).
PRE: dict[str, Any] = {
    "workloads[].runFor": _cron_first,
    "asRun.nodes": _as_run_compared,
    "asRun.pods": _as_run_compared,
    **{
        f: _manifest_hpa
        for f in FIELDS
        if f.startswith("workloads[].traffic") or f == "workloads[].cpuPerRequest"
    },
}


def test_every_field_has_a_mutation():
    assert walk(ScenarioSpec) == set(FIELDS)


def _files(tmp_path: Path) -> None:
    for name in ("provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml"):
        shutil.copy(SEED / name, tmp_path / name)
    fis = json.loads((SEED / "fis-spot-interruption.json").read_text())
    (tmp_path / "fis.json").write_text(json.dumps(fis))
    fis["actions"]["rbr_node"]["parameters"]["durationBeforeInterruption"] = "PT5M"
    (tmp_path / "fis2.json").write_text(json.dumps(fis))
    event_file = ROOT / "examples" / "spot-interruptions" / "spot-itn-sample.json"
    event = json.loads(event_file.read_text())
    (tmp_path / "event.json").write_text(json.dumps(event))
    event["detail"]["instance-id"] = "i-0000000000000000f"
    (tmp_path / "event2.json").write_text(json.dumps(event))
    trace = (ROOT / "examples" / "broad-bursty" / "traffic.csv").read_text()
    (tmp_path / "traffic.csv").write_text(trace)
    (tmp_path / "traffic2.csv").write_text("minute,value\n0,500\n1,20\n")
    (tmp_path / "cron.yaml").write_text(CRONJOB)
    (tmp_path / "hpa.yaml").write_text(HPA)
    (tmp_path / "buffer.yaml").write_text(BUFFER)
    (tmp_path / "history.json").write_text(json.dumps(HISTORY))
    (tmp_path / "scores.json").write_text(json.dumps(SCORES))
    scores2 = json.loads(json.dumps(SCORES))
    scores2["SpotPlacementScores"][0]["Score"] = 9
    (tmp_path / "scores2.json").write_text(json.dumps(scores2))
    header = "node,instanceType,capacityType,zone,nodePool,startSeconds,endSeconds\n"
    (tmp_path / "nodes.csv").write_text(header + "a,c5.xlarge,spot,us-east-1a,,0,\n")
    (tmp_path / "nodes2.csv").write_text(header + "a,c5.xlarge,on-demand,us-east-1a,,0,\n")
    pods = "namespace,pod,createdSeconds,scheduledSeconds\ndefault,web-1,0,5\n"
    (tmp_path / "pods.csv").write_text(pods)


def _parents(spec: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The mapping that holds ``path``'s leaf (created with ``ITEMS`` as needed), and the leaf."""
    *parents, leaf = path.split(".")
    target = spec
    walked: list[str] = []
    for part in parents:
        name, many = part.removesuffix("[]"), part.endswith("[]")
        walked.append(name)
        key = ".".join(walked)
        if many:
            items = target.setdefault(name, [])
            if not items:
                items.append(json.loads(json.dumps(ITEMS[key])))
            target = items[0]
            walked[-1] = part
        else:
            if name not in target:
                target[name] = json.loads(json.dumps(ITEMS.get(key, {})))
            target = target[name]
    return target, leaf


def _load(tmp_path: Path, doc: dict[str, Any]) -> str:
    """The loaded Scenario's repr; asserts that every file the load read is the scenario or
    one ``referenced_files`` names (what a sweep cell ships with it)."""
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=True))
    with recording() as read:
        loaded = repr(load_scenario(path))
    named = {os.path.realpath(tmp_path / f) for f in referenced_files(ScenarioFile(**doc))}
    unnamed = {os.path.realpath(p) for p in read.values()} - named - {os.path.realpath(path)}
    assert not unnamed, f"read but not a FILE field of the schema: {sorted(unnamed)}"
    return loaded


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_scenario_field_changes_the_loaded_scenario(tmp_path, field):
    _files(tmp_path)
    value = FIELDS[field]
    before = json.loads(json.dumps(BASE))
    spec = before["spec"]
    if field.startswith("workloads[].") and field.split(".")[1] in ("trace", "hpa"):
        spec["workloads"][0].pop("replicas", None)
    if field in PRE:
        PRE[field](spec)
    target, leaf = _parents(spec, field)
    if leaf in ("file", "template") and field.count("[]") and leaf not in target:
        target[leaf] = ITEMS[field.rsplit("[]", 1)[0]][leaf]
    after = json.loads(json.dumps(before))
    if callable(value):
        value(after["spec"])
    else:
        target_after, _ = _parents(after["spec"], field)
        target_after[leaf] = value.value if isinstance(value, Err) else value
    loaded = _load(tmp_path, before)
    if isinstance(value, Err):
        with pytest.raises(InputError, match=value.field):
            _load(tmp_path, after)
        return
    assert _load(tmp_path, after) != loaded, f"{field}: no effect"


# -- NTH Helm values ---------------------------------------------------------------------------


NTH_KEYS = sorted(
    set(nth._KNOWN_BOOLS) | {"nodeSelector"} | nth.NOT_MODELLED | nth.DEPLOYMENT_VALUES
)


def test_nth_value_classes_are_disjoint():
    known = set(nth._KNOWN_BOOLS) | {"nodeSelector"}
    assert not known & nth.NOT_MODELLED
    assert not known & nth.DEPLOYMENT_VALUES
    assert not nth.NOT_MODELLED & nth.DEPLOYMENT_VALUES


@pytest.mark.parametrize("key", NTH_KEYS)
def test_nth_value_has_its_meaning_or_warns(key):
    """Node-handling values change the settings (NTH's meaning) or draw the grouped warning;
    values about NTH's own deployment stay silent; a key the chart lacks is warned."""
    base = nth.InterruptionSettings.from_helm_values({})
    if key in nth._KNOWN_BOOLS:
        default = getattr(base, nth._KNOWN_BOOLS[key])
        got = nth.InterruptionSettings.from_helm_values({key: not default})
        assert got != base and not got.warnings
    elif key == "nodeSelector":
        got = nth.InterruptionSettings.from_helm_values({key: {"a": "b"}})
        assert got.node_selector == (("a", "b"),) and not got.warnings
    elif key in nth.NOT_MODELLED:
        got = nth.InterruptionSettings.from_helm_values({key: "x"})
        assert any("not modelled" in w and key in w for w in got.warnings), got.warnings
    else:
        got = nth.InterruptionSettings.from_helm_values({key: {"x": 1}})
        assert got == base


def test_nth_unknown_value_warns():
    got = nth.InterruptionSettings.from_helm_values({"enableSpotDraining": True})
    assert any("enableSpotDraining" in w for w in got.warnings)
