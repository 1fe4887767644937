"""cluster-proportional-autoscaler sizing placeholder pods (issue 20): its linear and ladder
rules, how it is read from a Deployment's flags and a ConfigMap, and a run."""

from __future__ import annotations

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.manifests.proportional import Ladder, Linear, expected_replicas
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.proportional import cluster_size
from joiner.sim.scenario import load_scenario

from .test_baseline import APP, _write

CPA = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: overprovisioning-autoscaler, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: cpa}}
  template:
    metadata: {labels: {app: cpa}}
    spec:
      containers:
        - name: autoscaler
          image: registry.k8s.io/cpa/cluster-proportional-autoscaler:v1.8.9
          command: [/cluster-proportional-autoscaler]
          args:
            - --namespace=default
            - --configmap=overprovisioning-autoscaler
            - --target=deployment/overprovisioning
            - DEFAULT
            - --logtostderr=true
          resources: {requests: {cpu: 20m, memory: 10Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: overprovisioning, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: overprovisioning}}
  template:
    metadata: {labels: {app: overprovisioning}}
    spec:
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.10
          resources: {requests: {cpu: 500m, memory: 256Mi}}
"""

CONFIGMAP = """\
---
apiVersion: v1
kind: ConfigMap
metadata: {name: overprovisioning-autoscaler, namespace: default}
data:
  KEY: 'PARAMS'
"""


def _manifests(params: str | None = '{"coresPerReplica": 4}', default: str = "") -> str:
    text = CPA.replace("DEFAULT", f"--default-params={default}" if default else "--v=2")
    if params is not None:
        key, _, value = params.partition("=") if "=" in params[:8] else ("linear", "", params)
        text += CONFIGMAP.replace("KEY", key).replace("PARAMS", value)
    return text


def test_linear_rules():
    p = Linear(cores_per_replica=10, nodes_per_replica=2)
    assert expected_replicas(p, nodes=5, cores=37) == 4  # max(ceil(3.7), ceil(2.5))
    assert expected_replicas(Linear(10, 2, max=3), 5, 37) == 3
    assert expected_replicas(Linear(10, 2, min=5), 5, 37) == 5
    # A side whose per-replica value is 0 gives 1; preventSinglePointFailure makes the node
    # side 2 when there is more than one node.
    assert expected_replicas(Linear(cores_per_replica=100), 3, 8) == 1
    assert expected_replicas(Linear(100, prevent_single_point_failure=True), 3, 8) == 2
    assert expected_replicas(Linear(100, prevent_single_point_failure=True), 1, 8) == 1


def test_ladder_rules():
    p = Ladder(((1, 1), (64, 3), (512, 5)), ((1, 1), (2, 2)))
    assert expected_replicas(p, nodes=1, cores=100) == 3
    assert expected_replicas(p, nodes=3, cores=600) == 5
    assert expected_replicas(p, nodes=0, cores=0) == 1  # below every step: the first
    assert expected_replicas(Ladder(), 10, 10) == 1


def test_the_configmap_wins_over_default_params():
    m = load_text(APP + "---\n" + _manifests(default='{"linear":{"coresPerReplica":1}}'))
    (cpa,) = m.proportional
    assert cpa.target_key == "default/overprovisioning"
    assert cpa.params == Linear(cores_per_replica=4.0)
    # Without the ConfigMap CPA creates it from --default-params.
    m = load_text(
        APP + "---\n" + _manifests(None, default='{"ladder":{"nodesToReplicas":[[1,2]]}}')
    )
    assert m.proportional[0].params == Ladder((), ((1, 2),))
    # With neither it scales nothing (warned).
    m = load_text(APP + "---\n" + _manifests(None))
    assert m.proportional[0].params is None
    assert any("no ConfigMap" in w for w in m.warnings)


def test_an_unrelated_configmap_is_still_skipped():
    extra = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config}\ndata: {a: b}\n"
    m = load_text(APP + extra)
    assert any("ConfigMap/app-config" in w and "skipped" in w for w in m.warnings)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (_manifests("linear={not json"), r"ConfigMap/overprovisioning-autoscaler.*data.linear"),
        (_manifests('linear={"min": 3, "max": 2, "coresPerReplica": 1}'), "below min"),
        (_manifests('linear={"min": 1}'), "coresPerReplica or nodesPerReplica"),
        (_manifests('ladder={"coresToReplicas": [[1]]}'), r"data.ladder.*threshold"),
        (_manifests(None, default="[1]"), "--default-params"),
        (
            _manifests().replace("--target=deployment/overprovisioning", "--target=daemonset/x"),
            r"containers\[0\].args.*--target",
        ),
        (
            _manifests().replace("            - --configmap=overprovisioning-autoscaler\n", ""),
            "--configmap is required",
        ),
    ],
)
def test_bad_cpa_input_names_the_field(text, match):
    with pytest.raises(InputError, match=match):
        load_text(APP + "---\n" + text, "cpa.yaml")


def test_placeholders_grow_with_the_cluster(tmp_path):
    app = APP.replace("replicas: 1", "replicas: 12", 1) + "---\n" + _manifests()
    path = _write(
        tmp_path, workloads="    - {deployment: default/web, replicas: 12}", duration="20m", app=app
    )
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    (cpa,) = rt.workloads.proportional
    nodes, cores = cluster_size(rt.state, include_unschedulable=False)
    # One placeholder per 4 cores of the cluster as it ended (12 web cores and the
    # placeholders' own nodes included); the run started from 1 (no nodes at time 0).
    assert cpa.replicas == expected_replicas(Linear(cores_per_replica=4.0), nodes, cores)
    assert cpa.replicas is not None and cpa.replicas >= 4
    live = [p for p in rt.state.live_pods() if p.owner == "default/overprovisioning"]
    assert len(live) == cpa.replicas
