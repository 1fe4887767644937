"""autoscaling/v2 HorizontalPodAutoscaler objects in the manifests (issue 20): the HPA
controller's algorithm (``pkg/controller/podautoscaler/horizontal.go`` and
``replica_calculator.go``), the scenario's traffic feeding it, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.manifests.hpa import HorizontalPodAutoscaler
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.hpa import HpaRun, HpaState, ManifestHpaController, initial_replicas
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import Traffic

from .test_baseline import _write


def _hpa_doc(spec: dict[str, Any], name: str = "web") -> dict[str, Any]:
    base: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 100,
        "metrics": [
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "requests_per_second"},
                    "target": {"type": "AverageValue", "averageValue": "1"},
                },
            }
        ],
    }
    base.update(spec)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default"},
        "spec": base,
    }


def _hpa(spec: dict[str, Any] | None = None) -> HorizontalPodAutoscaler:
    m = load_text(yaml.safe_dump(_hpa_doc(spec or {})))
    (hpa,) = m.hpas
    return hpa


def _state(rates: list[float], spec: dict[str, Any] | None = None, **kw: Any) -> HpaState:
    return HpaState(HpaRun(_hpa(spec), Traffic(tuple(rates)), **kw))


def _run(state: HpaState, current: int, times: list[float]) -> list[int]:
    out = []
    for t in times:
        current = state.reconcile(t, current)
        out.append(current)
    return out


def test_default_behavior_is_filled_when_behavior_is_set():
    hpa = _hpa({"behavior": {"scaleUp": {"selectPolicy": "Min"}}})
    assert hpa.behavior is not None
    up, down = hpa.behavior.scale_up, hpa.behavior.scale_down
    assert (up.stabilization_s, up.select_policy) == (0, "Min")
    assert [(p.type, p.value, p.period_s) for p in up.policies] == [
        ("Pods", 4, 15),
        ("Percent", 100, 15),
    ]
    assert down.stabilization_s is None  # the controller's 300 s flag
    assert [(p.type, p.value, p.period_s) for p in down.policies] == [("Percent", 100, 15)]
    assert _hpa().behavior is None


def test_scale_up_is_limited_by_a_pods_policy_per_period():
    spec = {
        "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}}
    }
    state = _state([100.0], spec)
    # 2 pods per 60 s: +2 at 15 s, then nothing until that event leaves the period
    # (an event exactly periodSeconds old no longer counts), +2 at 75 s, +2 at 135 s.
    got = _run(state, 2, [15, 30, 45, 60, 75, 90, 135])
    assert got == [4, 4, 4, 4, 6, 6, 8]


def test_select_policy_min_and_max_pick_the_smallest_and_largest_change():
    def up(select: str) -> int:
        state = _state([100.0], {"behavior": {"scaleUp": {"selectPolicy": select}}})
        return state.reconcile(15.0, 10)

    # Default policies from 10 replicas: 4 Pods -> 14, 100 Percent -> 20.
    assert up("Max") == 20
    assert up("Min") == 14
    assert up("Disabled") == 10


def test_scale_down_stabilization_keeps_the_highest_recommendation_of_the_window():
    spec = {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}
    # 10 requests/s for the first minute, then 2.
    state = _state([10.0, 2.0, 2.0, 2.0], spec)
    got = _run(state, 10, [15, 30, 45, 60, 75, 90, 105])
    # The 45 s recommendation (10) is inside the 60 s window until 105 s.
    assert got == [10, 10, 10, 10, 10, 10, 2]


def test_scale_down_policy_and_disabled():
    percent = {
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 0,
                "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
            }
        }
    }
    state = _state([1.0], percent)
    # 50 % per 60 s from 40: 20 at 15 s, held until the event leaves the period, then 10.
    assert _run(state, 40, [15, 30, 75]) == [20, 20, 10]
    disabled = {"behavior": {"scaleDown": {"selectPolicy": "Disabled"}}}
    assert _run(_state([1.0], disabled), 40, [15, 400]) == [40, 40]


def test_without_behavior_the_older_rules_apply():
    # Scale-up limit max(2 x current, 4); scale-down after the 300 s window (start included).
    state = _state([100.0] * 5 + [1.0] * 10)
    assert _run(state, 1, [15, 30, 45, 60]) == [4, 8, 16, 32]
    state = _state([50.0] + [1.0] * 10)
    got = _run(state, 50, [i * 15.0 for i in range(1, 25)])
    # Recommendation 50 until 45 s, 1 from 60 s: the 45 s one holds through 345 s.
    assert got[:23] == [50] * 23 and got[23] == 1  # 50 through 345 s, 1 at 360 s


def test_tolerance_and_min_max():
    # 10.5 requests over 10 replicas at target 1: ratio 1.05, within 0.1.
    assert _state([10.5]).reconcile(15.0, 10) == 10
    # A per-direction tolerance (alpha field) of 0.01 scales.
    spec = {"behavior": {"scaleUp": {"tolerance": "0.01"}}}
    assert _state([10.5], spec).reconcile(15.0, 10) == 11
    # Below minReplicas: straight to min, no rate limit; a scheduled floor raises min.
    assert _state([1.0], {"minReplicas": 30}).reconcile(15.0, 2) == 30
    assert _state([1.0]).reconcile(15.0, 2, min_floor=25) == 25
    assert _state([1000.0], {"maxReplicas": 5}).reconcile(15.0, 4) == 5


def test_metric_kinds():
    cpu = {
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            }
        ]
    }
    # 100 req/s x 10m = 1 core over 2 pods of 250m: 200 % against 50 % -> ratio 4.
    state = _state([100.0], cpu, cpu_per_request=0.01, cpu_request_m=250)
    (metric,) = state.run.hpa.metrics
    assert state.proposal(metric, 0.0, 2) == 8
    value = {
        "metrics": [
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue"},
                    "target": {"type": "Value", "value": "50"},
                },
            }
        ]
    }
    state = _state([100.0], value)
    (metric,) = state.run.hpa.metrics
    assert state.proposal(metric, 0.0, 3) == 6  # ceil(3 x 100 / 50)
    avg = {
        "metrics": [
            {
                "type": "Object",
                "object": {
                    "describedObject": {"kind": "Ingress", "name": "web"},
                    "metric": {"name": "rps"},
                    "target": {"type": "AverageValue", "averageValue": "30"},
                },
            }
        ]
    }
    state = _state([100.0], avg)
    (metric,) = state.run.hpa.metrics
    assert state.proposal(metric, 0.0, 3) == 4  # ceil(100 / 30)
    assert _hpa({"metrics": None}).metrics[0].target == 80.0  # default: cpu 80 %


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"minReplicas": 5, "maxReplicas": 2}, "spec.minReplicas"),
        ({"minReplicas": 0}, "spec.minReplicas"),
        (
            {
                "metrics": [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": "x"},
                            "target": {"type": "Value", "value": "1"},
                        },
                    }
                ]
            },
            "spec.metrics[0].pods.target.type",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Pods",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ]
            },
            "spec.metrics[0]",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Utilization"}},
                    }
                ]
            },
            "averageUtilization",
        ),
        ({"behavior": {"scaleUp": {"policies": []}}}, "spec.behavior.scaleUp.policies"),
        ({"behavior": {"scaleDown": {"tolerance": "-0.1"}}}, "spec.behavior.scaleDown.tolerance"),
        (
            {
                "behavior": {
                    "scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}
                }
            },
            "value",
        ),
        ({"scaleTargetRef": {"kind": "DaemonSet", "name": "web"}}, "spec.scaleTargetRef.kind"),
    ],
)
def test_bad_hpa_names_the_field(spec, field):
    with pytest.raises(InputError) as err:
        load_text(yaml.safe_dump(_hpa_doc(spec)), "hpa.yaml")
    assert field in str(err.value) and "HorizontalPodAutoscaler/web" in str(err.value)


def test_unmodelled_metrics_and_older_versions_warn():
    mem = {
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "memory",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            }
        ]
    }
    m = load_text(yaml.safe_dump(_hpa_doc(mem)), "hpa.yaml")
    assert any("spec.metrics[0]" in w and "memory" in w and "not modelled" in w for w in m.warnings)
    old = _hpa_doc({})
    old["apiVersion"] = "autoscaling/v1"
    m = load_text(yaml.safe_dump(old), "hpa.yaml")
    assert not m.hpas and any("autoscaling/v1" in w for w in m.warnings)


# -- the scenario ----------------------------------------------------------------------------


def _scenario(tmp_path: Path, workloads: str, hpa: dict[str, Any] | None = None) -> Path:
    path = _write(tmp_path, workloads="    " + workloads, duration="10m")
    (tmp_path / "traffic.csv").write_text(
        "minute,value\n0,2\n" + "".join(f"{i},30\n" for i in range(1, 11))
    )
    docs = [hpa or _hpa_doc({"maxReplicas": 20})]
    (tmp_path / "hpa.yaml").write_text(yaml.safe_dump_all(docs))
    text = path.read_text().replace("[np.yaml, app.yaml]", "[np.yaml, app.yaml, hpa.yaml]")
    path.write_text(text)
    return path


def test_manifest_hpa_drives_its_deployment_from_the_traffic(tmp_path):
    path = _scenario(tmp_path, "- {deployment: web, traffic: {file: traffic.csv}}")
    sc = load_scenario(path)
    (w,) = [w for w in sc.workloads if w.manifest_hpa is not None]
    assert w.deployment == "default/web" and w.hpa is None
    rt = SimulationRuntime(sc)
    (ctl,) = [h for h in rt.hpas if isinstance(h, ManifestHpaController)]
    assert initial_replicas(ctl.run, 1) == 2  # minute 0: 2 requests at 1 per pod
    rt.run()
    # Minute 1: 30 requests; no behavior: max(2 x current, 4) per sync: 2 -> 4 -> 8 -> 16
    # -> 20 (maxReplicas).
    assert ctl.replicas == 20
    live = [p for p in rt.state.live_pods() if p.owner == "default/web"]
    assert len(live) == 20


def test_manifest_hpa_wins_over_the_shorthand_with_a_warning(tmp_path):
    path = _scenario(
        tmp_path,
        "- {deployment: web, hpa: {file: traffic.csv, targetPerReplica: 10, max: 3}}",
    )
    sc = load_scenario(path)
    (w,) = [w for w in sc.workloads if w.deployment == "default/web"]
    assert w.hpa is None and w.manifest_hpa is not None
    assert w.manifest_hpa.traffic is not None
    assert w.manifest_hpa.traffic.rate_at(90.0) == 30.0
    assert w.manifest_hpa.hpa.max_replicas == 20
    assert any("overrides the scenario's hpa shorthand" in x for x in sc.manifests.warnings)


def test_manifest_hpa_without_traffic_keeps_min_max_with_a_warning(tmp_path):
    path = _scenario(tmp_path, "- {deployment: web, replicas: 2}", _hpa_doc({"minReplicas": 3}))
    sc = load_scenario(path)
    assert any("no traffic for default/web" in x for x in sc.manifests.warnings)
    (w,) = [w for w in sc.workloads if w.manifest_hpa is not None]
    assert w.replicas == 2  # the scenario's replicas are the start, raised to minReplicas
    rt = SimulationRuntime(sc)
    rt.run()
    live = [p for p in rt.state.live_pods() if p.owner == "default/web"]
    assert len(live) == 3


def test_scenario_errors_name_the_field(tmp_path):
    path = _scenario(
        tmp_path, "- {deployment: web, trace: {file: traffic.csv, targetPerReplica: 1}}"
    )
    with pytest.raises(InputError, match=r"spec.workloads\[0\].trace"):
        load_scenario(path)
    cpu = _hpa_doc(
        {
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                }
            ]
        }
    )
    path = _scenario(tmp_path, "- {deployment: web, traffic: {file: traffic.csv}}", cpu)
    with pytest.raises(InputError, match=r"spec.workloads\[0\].cpuPerRequest"):
        load_scenario(path)
    path = _scenario(
        tmp_path, "- {deployment: web, traffic: {file: traffic.csv}, cpuPerRequest: lots}", cpu
    )
    with pytest.raises(InputError, match=r"cpuPerRequest"):
        load_scenario(path)
    path = _scenario(
        tmp_path,
        "- {deployment: web, traffic: {file: traffic.csv}}",
        {
            **_hpa_doc({}),
            "metadata": {"name": "other-target", "namespace": "default"},
            "spec": {
                **_hpa_doc({})["spec"],
                "scaleTargetRef": {"kind": "Deployment", "name": "nope"},
            },
        },
    )
    with pytest.raises(InputError, match=r"spec.workloads\[0\].traffic"):
        load_scenario(path)
    two = _scenario(tmp_path, "- {deployment: web, traffic: {file: traffic.csv}}")
    (tmp_path / "hpa.yaml").write_text(
        yaml.safe_dump_all([_hpa_doc({}), _hpa_doc({}, name="web2")])
    )
    with pytest.raises(InputError, match="also scaled by"):
        load_scenario(two)


def test_cpu_per_request_without_a_manifest_hpa_is_an_error(tmp_path):
    """The breaker's input: cpuPerRequest beside replicas or a trace, with no manifest HPA to
    read it, was accepted with no effect (traffic without one was already an error)."""
    for given in ("replicas: 3", "trace: {file: traffic.csv, targetPerReplica: 1}"):
        path = _scenario(tmp_path, "- {deployment: web, " + given + ", cpuPerRequest: 20m}")
        (tmp_path / "hpa.yaml").write_text(yaml.safe_dump_all([]))
        with pytest.raises(InputError, match=r"spec.workloads\[0\].cpuPerRequest: cpuPerRequest"):
            load_scenario(path)
