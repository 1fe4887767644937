"""Counts, numbers, flags and strings of the wrong type are input errors, as the Kubernetes
API server's decoding rejects them (``replicas: "3"``, ``value: "5"``, ``suspend: "yes"``, a
label value ``1`` unquoted).

The walk takes every pydantic model of Joiner's input files (manifests, scenario, controller
settings, sweep) and fails on an ``int``, ``float`` or ``bool`` that pydantic would coerce
from a string (lax mode); the examples below show the error a user gets, naming file, object
and field.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, Strict

import joiner.api.manifests as manifests_pkg
from joiner.api.errors import InputError
from joiner.api.featuregates import parse as parse_feature_gates
from joiner.api.manifests import load_text
from joiner.operator.controller_settings import load_settings
from joiner.sim.scenario import load_scenario

#: Modules whose pydantic models read a user's file, besides the manifest package: the
#: scenario, its report windows, the controller settings, the sweep file and Karpenter-kwok's
#: instance-types file.
INPUT_MODULES = (
    "joiner.sim.scenario_schema",
    "joiner.sim.windows",
    "joiner.operator.controller_settings",
    "joiner.operator.sweep.spec",
    "joiner.cloudprovider.kwok",
)
#: Modules whose pydantic models describe Joiner's output (summaries), not input.
OUTPUT_MODULES = ("joiner.api.outputs", "joiner.api.plan_output")


def _defines_models(mod: types.ModuleType) -> bool:
    return any(
        isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == mod.__name__
        for obj in vars(mod).values()
    )


def test_every_module_with_models_is_walked():
    """A new input model anywhere in Joiner is walked (or declared output)."""
    import joiner

    known = set(INPUT_MODULES) | set(OUTPUT_MODULES)
    missed = []
    for info in pkgutil.walk_packages(joiner.__path__, "joiner."):
        if info.name.startswith("joiner.api.manifests.") or info.name in known:
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:  # an optional extra (Ray) that is not installed
            continue
        if _defines_models(mod):
            missed.append(info.name)
    assert missed == []


def _models() -> list[type[BaseModel]]:
    mods = [
        importlib.import_module(f"joiner.api.manifests.{info.name}")
        for info in pkgutil.iter_modules(manifests_pkg.__path__)
    ]
    mods.extend(importlib.import_module(name) for name in INPUT_MODULES)
    found = {
        obj
        for mod in mods
        for obj in vars(mod).values()
        if isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == mod.__name__
    }
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _lax(annotation: object, strict: bool) -> bool:
    """True when ``annotation`` holds an int, float or bool pydantic checks laxly."""
    if annotation in (int, float, bool):
        return not strict
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        return _lax(base, strict or any(isinstance(x, Strict) and x.strict for x in meta))
    if origin in (typing.Union, types.UnionType, list, dict, tuple, set, typing.Literal):
        if origin is typing.Literal:
            return False
        return any(_lax(a, strict) for a in typing.get_args(annotation))
    return False


def test_no_input_field_coerces_a_string_to_a_number_or_flag():
    lax = []
    for model in _models():
        name = f"{model.__module__}.{model.__qualname__}"
        strict = bool(model.model_config.get("strict"))
        for field, info in model.model_fields.items():
            field_strict = strict
            for x in info.metadata:
                if isinstance(x, Strict):  # Field(strict=...)
                    field_strict = x.strict
            if _lax(info.annotation, field_strict):
                lax.append(f"{name}.{field}: {info.annotation}")
    assert lax == []


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: "1"}}
          lifecycle: {preStop: {sleep: {seconds: 5}}}
          ports: [{containerPort: 80}]
"""

PRIORITY_CLASS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: false
"""

PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
"""

EC2_NODE_CLASS = """\
apiVersion: karpenter.k8s.aws/{version}
kind: EC2NodeClass
metadata: {{name: default}}
spec:
  role: KarpenterNodeRole
  {ami}
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
"""

NODE_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
  disruption:
    consolidateAfter: 0s
    budgets:
      - nodes: "10"
---
""" + EC2_NODE_CLASS.format(version="v1", ami="amiSelectorTerms: [{alias: al2023@latest}]")

V1BETA1_NODE_POOL = """\
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: old}
spec:
  template:
    spec:
      nodeClassRef: {name: default}
  disruption:
    budgets:
      - nodes: "20%"
      - nodes: "10"
---
""" + EC2_NODE_CLASS.format(version="v1beta1", ami="amiFamily: AL2")

BUFFER = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: spare, namespace: default}
template:
  spec:
    containers: [{name: pause, image: pause, resources: {requests: {cpu: "1"}}}]
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: spare, namespace: default}
spec:
  podTemplateRef: {name: spare}
  replicas: 3
"""

NODE_CLASS_KUBELET = EC2_NODE_CLASS.format(
    version="v1",
    ami="amiSelectorTerms: [{alias: al2023@latest}]\n  kubelet: {maxPods: 110}\n"
    "  blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, "
    "ebs: {volumeSize: 20Gi, encrypted: true}}]",
)


@pytest.mark.parametrize(
    ("text", "old", "new", "obj", "field"),
    [
        (BUFFER, "replicas: 3", 'replicas: "3"', "CapacityBuffer/spare", "spec.replicas"),
        (
            NODE_CLASS_KUBELET,
            "maxPods: 110",
            'maxPods: "110"',
            "EC2NodeClass/default",
            "spec.kubelet.maxPods",
        ),
        (
            NODE_CLASS_KUBELET,
            "encrypted: true",
            "encrypted: 'yes'",
            "EC2NodeClass/default",
            "spec.blockDeviceMappings[0].ebs.encrypted",
        ),
        (
            NODE_CLASS_KUBELET,
            "rootVolume: true",
            "rootVolume: 'true'",
            "EC2NodeClass/default",
            "spec.blockDeviceMappings[0].rootVolume",
        ),
        # Karpenter's CRD types a budget's nodes as a string: a bare count is refused.
        (NODE_POOL, 'nodes: "10"', "nodes: 10", "NodePool/web", "spec.disruption.budgets[0].nodes"),
        (
            V1BETA1_NODE_POOL,
            'nodes: "10"',
            "nodes: 10",
            "NodePool/old",
            "spec.disruption.budgets[1].nodes",
        ),
        (DEPLOYMENT, "replicas: 3", 'replicas: "3"', "Deployment/web", "spec.replicas"),
        (
            DEPLOYMENT,
            "terminationGracePeriodSeconds: 30",
            'terminationGracePeriodSeconds: "30"',
            "Deployment/web",
            "spec.template.spec.terminationGracePeriodSeconds",
        ),
        (
            DEPLOYMENT,
            "{seconds: 5}",
            '{seconds: "5"}',
            "Deployment/web",
            "spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds",
        ),
        (
            DEPLOYMENT,
            "containerPort: 80}",
            'containerPort: "80"}',
            "Deployment/web",
            "spec.template.spec.containers[0].ports[0].containerPort",
        ),
        (
            DEPLOYMENT,
            "      terminationGracePeriodSeconds: 30\n",
            "      hostNetwork: 'yes'\n",
            "Deployment/web",
            "spec.template.spec.hostNetwork",
        ),
        (
            DEPLOYMENT,
            "labels: {app: web}}",
            "labels: {app: web, tier: 1}}",
            "Deployment/web",
            "spec.template.metadata.labels.tier",
        ),
        (
            DEPLOYMENT,
            "      terminationGracePeriodSeconds: 30\n",
            "      nodeSelector: {karpenter.k8s.aws/instance-generation: 5}\n",
            "Deployment/web",
            "spec.template.spec.nodeSelector.karpenter.k8s.aws/instance-generation",
        ),
        (PRIORITY_CLASS, "value: 1000", 'value: "1000"', "PriorityClass/high", "value"),
        (
            PRIORITY_CLASS,
            "globalDefault: false",
            "globalDefault: 'no'",
            "PriorityClass/high",
            "globalDefault",
        ),
        (
            PDB,
            "minAvailable: 1",
            'minAvailable: "1"',
            "PodDisruptionBudget/web",
            "spec.minAvailable",
        ),
    ],
)
def test_a_string_for_a_count_or_flag_is_an_input_error(text, old, new, obj, field):
    assert load_text(text, "m.yaml") is not None  # as written, it loads
    assert old in text
    with pytest.raises(InputError) as err:
        load_text(text.replace(old, new), "m.yaml")
    assert (err.value.file, err.value.field) == ("m.yaml", field)
    kind, name = obj.split("/")
    assert err.value.obj.startswith(f"{kind}/") and err.value.obj.endswith(f"/{name}")


def _after_seed(text: str, line: str) -> str:
    return text.replace("  seed: 42\n", f"  seed: 42\n  {line}\n")


def test_a_scenario_count_number_or_flag_of_the_wrong_type_is_an_input_error(tmp_path):
    seed = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
    for f in seed.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    text = (tmp_path / "scenario.yaml").read_text()
    cases = {
        "spec.workloads[0].replicas": text.replace("replicas: 20", 'replicas: "20"'),
        "spec.seed": text.replace("seed: 42", 'seed: "42"'),
        "spec.settings.featureGates.spotToSpotConsolidation": _after_seed(
            text, "settings: {featureGates: {spotToSpotConsolidation: 'yes'}}"
        ),
        "spec.settings.featureGates.capacityBuffer": _after_seed(
            text, "settings: {featureGates: {capacityBuffer: 1}}"
        ),
        "spec.cloud.interruptionRateMultiplier": text.replace(
            "  cloud:\n", "  cloud:\n    interruptionRateMultiplier: '2'\n"
        ),
    }
    path = tmp_path / "scenario.yaml"
    for field, bad in cases.items():
        path.write_text(bad)
        with pytest.raises(InputError) as err:
            load_scenario(path)
        assert err.value.field == field, str(err.value)
    # A quoted start time stays valid (JSON and quoted YAML give a string).
    path.write_text(_after_seed(text, 'startTime: "2025-01-06T18:00:00Z"'))
    assert load_scenario(path).start_time.hour == 18


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        (
            "featureGates: {spotToSpotConsolidation: 'yes'}",
            "featureGates.spotToSpotConsolidation",
            "true or false",
        ),
        ("featureGates: {nodeRepair: 1}", "featureGates.nodeRepair", "true or false"),
        (
            'featureGates: {spotToSpotConsolidation: "true"}',
            "featureGates.spotToSpotConsolidation",
            "true or false",
        ),
        ("featureGates: {capacityBuffer: true}", "featureGates.capacityBuffer", "=false only"),
        ("batchMaxDuration: 10", "batchMaxDuration", "Go duration with a unit (such as 10s)"),
        ("batchMaxDuration: 10x", "batchMaxDuration", "not a Go duration"),
        ("batchMaxDuration: 0s", "batchMaxDuration", "greater than 0"),
        ("logLevel: warn", "logLevel", "one of"),
        # The deprecated spellings are checked as strictly.
        ("spotToSpotConsolidation: 'yes'", "featureGates.spotToSpotConsolidation", "true or false"),
        ("batchMaxSeconds: '10'", "batchMaxSeconds", "a finite number of seconds"),
        ("batchMaxSeconds: .inf", "batchMaxSeconds", "finite"),
        ("registrationTimeoutSeconds: .nan", "registrationTimeoutSeconds", "finite"),
        ("garbageCollectionIntervalSeconds: true", "garbageCollectionIntervalSeconds", "number"),
        ("leaderElection: {enabled: 'no'}", "leaderElection.enabled", "true or false"),
        ("leaderElection: {leaseDurationSeconds: '15'}", "leaderElection.leaseDurationSeconds", ""),
        ("region: 1", "region", "a string"),
    ],
)
def test_a_controller_setting_of_the_wrong_type_is_an_input_error(tmp_path, line, field, words):
    path = tmp_path / "settings.yaml"
    path.write_text(f"{line}\n")
    with pytest.raises(InputError) as err:
        load_settings(path)
    assert (err.value.file, err.value.field) == (str(path), field)
    assert words in str(err.value) and "Input should" not in str(err.value)


def test_controller_settings_of_the_right_types_load(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text(
        "featureGates: {spotToSpotConsolidation: true}\nbatchMaxDuration: 1m\n"
        "batchIdleDuration: 500ms\nleaderElection: {enabled: false, leaseDurationSeconds: 20}\n"
    )
    s = load_settings(path)
    assert s.featureGates.spotToSpotConsolidation is True and s.batchMaxDuration == 60.0
    assert s.batchIdleDuration == 0.5
    assert s.leaderElection.enabled is False and s.leaderElection.leaseDurationSeconds == 20.0


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("SpotToSpotConsolidation=true", True),
        ("SpotToSpotConsolidation=1", True),
        ("SpotToSpotConsolidation=T", True),
        (" SpotToSpotConsolidation = True ,", True),
        ("SpotToSpotConsolidation=FALSE", False),
        ("SpotToSpotConsolidation=0", False),
        ("", False),
    ],
)
def test_the_feature_gates_flag_reads_booleans_as_go_parsebool(text, want):
    assert parse_feature_gates(text).spot_to_spot_consolidation is want


@pytest.mark.parametrize("value", ["yes", "tRuE", "on", "2", ""])
def test_the_feature_gates_flag_refuses_what_parsebool_refuses(value):
    with pytest.raises(InputError, match="is not a boolean"):
        parse_feature_gates(f"SpotToSpotConsolidation={value}")


def test_a_malformed_kwok_instance_types_file_fails_when_the_settings_load(tmp_path):
    types = tmp_path / "types.json"
    types.write_text('[{"name": "x", "resources": {"nvidia gpu": "1"}, "offerings": []}]')
    path = tmp_path / "settings.yaml"
    path.write_text(f"kwokInstanceTypes: {types}\n")
    with pytest.raises(InputError) as err:
        load_settings(path)
    assert (err.value.file, err.value.obj) == (str(types), "instance type x")
    assert err.value.field == "[0].resources.nvidia gpu"


def test_the_feature_gates_flag_keeps_the_gates_it_does_not_name():
    """The breaker's input: ``--feature-gates NodeRepair=true`` on a Scenario with
    ``reservedCapacity: false`` used to turn reserved capacity back on without a word."""
    from joiner.api.featuregates import FeatureGates

    base = FeatureGates(reserved_capacity=False, capacity_buffer=True)
    got = parse_feature_gates("NodeRepair=true", base=base)
    assert got == FeatureGates(reserved_capacity=False, capacity_buffer=True, node_repair=True)
    assert parse_feature_gates("CapacityBuffer=false", base=base).capacity_buffer is False
    assert parse_feature_gates("NodeRepair=true") == FeatureGates(node_repair=True)


@pytest.mark.parametrize("text", ["=true", " = 1"])
def test_the_feature_gates_flag_needs_a_name(text):
    with pytest.raises(InputError, match="must look like Name=true"):
        parse_feature_gates(text)
