"""The Kubernetes adapter without an API server: the CRDs it installs, the state feed from
informer deliveries, the actuator's conversions, controller settings and the CLI's input
checks. The same code runs against the real stack in tests/e2e/test_controller.py."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.api.requirements import Requirement, Requirements
from joiner.cli.main import app
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.simulated import SimulatedCloudProvider, default_subnets
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.actuator import quantities, requirement_terms
from joiner.cluster.kube.crds import crd_documents
from joiner.cluster.kube.feed import ClusterFeed
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.operator.controller_settings import load_settings
from joiner.operator.wallclock import DEFAULT_SECURITY_GROUP, _fit_node_classes
from joiner.sim.clock import SimClock
from joiner.state.cluster import ClusterState, NodeClaim
from tests.manifests import unschedulable

REPO = Path(__file__).resolve().parents[2]


def _spec_schema(kind: str) -> dict[str, Any]:
    doc = next(d for d in crd_documents() if d["spec"]["names"]["kind"] == kind)
    return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "path",
    ["examples/nightly-consolidation/nodepool.yaml", "examples/spot-interruptions/nodepool.yaml"],
)
def test_example_karpenter_objects_fit_the_installed_schemas(path: str) -> None:
    docs = [d for d in yaml.safe_load_all((REPO / path).read_text()) if d]
    checked = 0
    for doc in docs:
        if doc.get("kind") in ("NodePool", "EC2NodeClass"):
            jsonschema.validate(doc, _spec_schema(doc["kind"]))
            checked += 1
    assert checked


def test_schema_rejects_a_wrong_shape_and_is_structural() -> None:
    schema = _spec_schema("NodePool")
    bad = {"spec": {"template": {"spec": {"nodeClassRef": {"group": "g", "kind": "k"}}}}}
    with pytest.raises(jsonschema.ValidationError, match="name"):
        jsonschema.validate(bad, schema)

    def walk(node: dict[str, Any], where: str) -> None:
        assert "$ref" not in node and "anyOf" not in node, where
        assert (
            "type" in node
            or node.get("x-kubernetes-preserve-unknown-fields")
            or node.get("x-kubernetes-int-or-string")
        ), where
        for k, v in (node.get("properties") or {}).items():
            walk(v, f"{where}.{k}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{where}[]")

    for doc in crd_documents():
        walk(doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"], doc["metadata"]["name"])


def test_requirement_terms_read_back_as_the_same_requirements() -> None:
    reqs = Requirements(
        [
            Requirement.in_("node.kubernetes.io/instance-type", "m5.large", "c5.large"),
            Requirement.new("karpenter.k8s.aws/instance-cpu", "Gt", ["3"]),
            Requirement.new("karpenter.k8s.aws/instance-generation", "Lt", ["9"]),
            Requirement.new("example.com/team", "NotIn", ["a"]),
            Requirement.new("example.com/gpu", "DoesNotExist"),
        ]
    )
    terms = requirement_terms(reqs)
    back = Requirements(Requirement.new(t["key"], t["operator"], t["values"]) for t in terms)
    assert back == reqs
    assert quantities({"cpu": 1500, "memory": 2**30, "pods": 110}) == {
        "cpu": "1500m",
        "memory": str(2**30),
        "pods": "110",
    }


def _doc(kind: kube.Kind, body: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": kind.api_version, "kind": kind.kind, **body}


NODEPOOL = _doc(
    kube.NODEPOOL,
    {
        "metadata": {"name": "pool", "generation": 1},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "nc",
                    },
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
                    ],
                }
            }
        },
    },
)
NODECLASS = _doc(
    kube.EC2NODECLASS,
    {
        "metadata": {"name": "nc", "generation": 1},
        "spec": {
            "role": "r",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"x": "y"}}],
            "securityGroupSelectorTerms": [{"tags": {"x": "y"}}],
        },
    },
)


def _pod(name: str, uid: str, node: str | None = None, **meta: Any) -> dict[str, Any]:
    return _doc(
        kube.POD,
        {
            "metadata": {"name": name, "namespace": "ns", "uid": uid, **meta},
            "spec": {
                "nodeName": node,
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}
                ],
            },
            "status": {"phase": "Running" if node else "Pending"},
        },
    )


class Harness:
    def __init__(self) -> None:
        self.clock = SimClock()
        self.state = ClusterState()
        catalog = Catalog.load()
        self.cloud = SimulatedCloudProvider(
            catalog,
            "us-east-1",
            self.clock,
            random.Random(1),
            subnets=default_subnets(catalog, "us-east-1"),
            security_groups=[DEFAULT_SECURITY_GROUP],
            node_classes=[],
        )
        self.lifecycle = Lifecycle(self.state, self.cloud, self.clock, "us-east-1")
        self.feed = ClusterFeed(
            self.state,
            self.clock,
            self.lifecycle,
            lambda *a: pytest.fail(f"unexpected adoption {a}"),
            source="kube:test",
            wall_now=lambda: datetime(2026, 1, 1, tzinfo=UTC),
        )
        self.feed.on_config.append(
            lambda ms: self.cloud.set_node_classes(_fit_node_classes(self.cloud, ms.nodeclasses))
        )
        self.pending: list[str] = []
        self.feed.on_pending.append(lambda p: self.pending.append(p.name))

    def sync(self, kind: kube.Kind, *docs: dict[str, Any]) -> None:
        self.feed.deliver(kind, "SYNC", list(docs))

    def launched_claim(self) -> NodeClaim:
        """Sync NodePool ``pool`` and its NodeClass, start the feed and launch NodeClaim
        ``pool-abcde`` on the class's first instance type (its Node not yet registered)."""
        self.sync(kube.NODEPOOL, NODEPOOL)
        self.sync(kube.EC2NODECLASS, NODECLASS)
        for kind in (kube.NODECLAIM, kube.NODE, kube.POD, kube.DAEMONSET, kube.PDB):
            self.sync(kind)
        self.feed.start()
        it = self.cloud.get_instance_types("nc")[0]
        claim = NodeClaim(
            name="pool-abcde",
            nodepool="pool",
            node_class="nc",
            requirements=Requirements(
                [Requirement.in_("node.kubernetes.io/instance-type", it.name)]
            ),
            requests={},
            instance_type_options=(it,),
            created_at_s=0.0,
        )
        self.state.nodeclaims[claim.name] = claim
        self.lifecycle.launch(claim)
        return claim


def test_feed_builds_state_binds_pods_and_never_resurrects_a_deleted_one() -> None:
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.sync(kube.POD, unschedulable(_pod("a", "u1")), unschedulable(_pod("b", "u2")))
    assert not h.state.pods  # nothing applied before start
    h.feed.start()
    assert set(h.state.nodepools) == {"pool"}
    assert h.cloud.get_instance_types("nc")  # the NodeClass reached the cloud
    assert h.pending == ["a", "b"]
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1", node="n1")])
    assert h.state.pods["u1"].node_name == "n1"
    h.feed.deliver(kube.POD, "DELETED", [_pod("a", "u1", node="n1")])
    assert h.state.pods["u1"].deleted_at_s is not None
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1", node="n1")])  # stale
    assert h.state.pods["u1"].deleted_at_s is not None
    # A relist without the pod deletes it.
    h.sync(kube.POD)
    assert h.state.pods["u2"].deleted_at_s is not None


def test_feed_registers_and_initializes_a_nodeclaim_from_its_node() -> None:
    h = Harness()
    claim = h.launched_claim()
    assert claim.instance is not None
    node = {
        "metadata": {"name": "pool-abcde"},
        "spec": {
            "providerID": claim.instance.provider_id,
            "taints": [
                {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
            ],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    h.feed.deliver(kube.NODE, "ADDED", [_doc(kube.NODE, node)])
    assert claim.registered_at_s is not None and claim.initialized_at_s is None
    st_node = h.state.nodes["pool-abcde"]
    assert [t.key for t in st_node.taints] == ["node.kubernetes.io/not-ready"]
    node["spec"]["taints"] = []
    node["status"]["conditions"][0]["status"] = "True"
    h.feed.deliver(kube.NODE, "MODIFIED", [_doc(kube.NODE, node)])
    assert claim.initialized_at_s is not None and st_node.ready
    h.feed.deliver(kube.NODE, "DELETED", [_doc(kube.NODE, node)])
    assert claim.deleted_at_s is not None and st_node.deleted_at_s is not None


def test_feed_keeps_nodes_outside_any_nodepool_as_static_capacity() -> None:
    """A managed node group's Node (no karpenter.sh/nodepool, no NodeClaim) is capacity the
    provisioner counts: a pod that fits it launches nothing."""
    from joiner.controllers.provisioning.provisioner import Provisioner

    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    mng = {
        "metadata": {
            "name": "ip-10-0-0-1.ec2.internal",
            "labels": {"eks.amazonaws.com/nodegroup": "system", "kubernetes.io/os": "linux"},
        },
        "spec": {"providerID": "aws:///us-east-1a/i-0aaaaaaaaaaaaaaa1"},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    for kind in (kube.NODECLAIM, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.sync(kube.NODE, _doc(kube.NODE, mng))
    h.sync(kube.POD, unschedulable(_pod("a", "u1")))  # before the node joined, say
    h.feed.start()
    node = h.state.nodes["ip-10-0-0-1.ec2.internal"]
    assert node.nodeclaim is None and node.ready and node.allocatable["cpu"] == 1930
    provisioner = Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(0))
    provisioner.reconcile()
    assert not h.state.nodeclaims  # the 1-CPU pod fits the static node
    mng["spec"]["unschedulable"] = True  # cordoned: no longer a target
    h.feed.deliver(kube.NODE, "MODIFIED", [_doc(kube.NODE, mng)])
    assert "node.kubernetes.io/unschedulable" in {t.key for t in node.taints}
    provisioner.reconcile()
    assert len(h.state.nodeclaims) == 1
    h.feed.deliver(kube.NODE, "DELETED", [_doc(kube.NODE, mng)])
    assert node.deleted_at_s is not None


def test_settings_errors_name_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("leaderElection: {leaseDurationSecond: 5}\n")
    with pytest.raises(InputError, match="leaseDurationSecond"):
        load_settings(bad)
    good = tmp_path / "g.yaml"
    good.write_text("interruptionQueue: http://q\nleaderElection: {namespace: x}\n")
    s = load_settings(good)
    assert s.interruptionQueue == "http://q" and s.leaderElection.namespace == "x"


def test_settings_packing_policy(tmp_path: Path) -> None:
    assert load_settings(None).packing == "karpenter"
    good = tmp_path / "p.yaml"
    good.write_text("packing: cost-optimal\n")
    assert load_settings(good).packing == "cost-optimal"
    bad = tmp_path / "b.yaml"
    bad.write_text("packing: cheapest\n")
    with pytest.raises(InputError, match="packing"):
        load_settings(bad)


def test_cli_prints_crds_and_checks_cluster_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No kubeconfig anywhere kubectl looks, and not in a pod.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    runner = CliRunner()
    printed = runner.invoke(app, ["install-crds", "--print"])
    assert printed.exit_code == 0
    kinds = [d["spec"]["names"]["kind"] for d in yaml.safe_load_all(printed.stdout) if d]
    assert kinds == ["NodePool", "NodeClaim", "EC2NodeClass"]
    bare = runner.invoke(app, ["plan"])
    assert bare.exit_code == 2
    flat = " ".join(bare.output.split())
    assert "give manifests with -f FILE, or a cluster: no kubeconfig found" in flat
    missing = runner.invoke(app, ["plan", "--kubeconfig", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "kubeconfig not found" in missing.output
    assert runner.invoke(app, ["install-crds"]).exit_code == 2


class _Listing(list[Any]):
    def __init__(self, items: list[Any], version: str) -> None:
        super().__init__(items)
        self.resourceVersion = version


class _FakeClient:
    """list/watch of a fake API: the first watch fails with 410 Gone (the version was
    compacted away), the second delivers one event, the third waits until stopped."""

    def __init__(self, stop: Any) -> None:
        self.stop = stop
        self.lists: list[str] = []
        self.watches: list[str | None] = []

    def list(self, _res: Any, **_kw: Any) -> _Listing:
        version = str(10 * (len(self.lists) + 1))
        self.lists.append(version)
        return _Listing([{"metadata": {"name": f"np-{len(self.lists)}"}}], version)

    def watch(self, _res: Any, **kw: Any) -> Any:
        from lightkube.core.exceptions import ApiError
        from lightkube.models.meta_v1 import Status

        self.watches.append(kw.get("resource_version"))
        if len(self.watches) == 1:
            raise ApiError(status=Status(code=410, message="too old resource version"))
        if len(self.watches) == 2:
            yield "ADDED", {"metadata": {"name": "np-new", "resourceVersion": "21"}}
        self.stop.wait(30)
        return


def test_informer_lists_watches_from_the_version_and_relists_on_410() -> None:
    import threading

    from joiner.cluster.kube.informer import Informer

    stop = threading.Event()
    fake = _FakeClient(stop)
    got: list[tuple[str, list[str]]] = []
    done = threading.Event()

    def deliver(_kind: kube.Kind, event: str, docs: list[dict[str, Any]]) -> None:
        got.append((event, [d["metadata"]["name"] for d in docs]))
        if event == "ADDED":
            done.set()

    informer = Informer(lambda: fake, kube.NODEPOOL, deliver, stop, retry_s=0.01)  # type: ignore[arg-type, return-value]
    informer.start()
    assert done.wait(30)
    stop.set()
    assert got == [("SYNC", ["np-1"]), ("SYNC", ["np-2"]), ("ADDED", ["np-new"])]
    assert fake.watches == ["10", "20"]  # each watch starts at its list's version
    assert informer.relists == 1


def _pdb(allowed: int | None) -> dict[str, Any]:
    status = {} if allowed is None else {"status": {"disruptionsAllowed": allowed}}
    return _doc(
        kube.PDB,
        {
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            **status,
        },
    )


@pytest.mark.parametrize(("allowed", "evicted"), [(0, False), (None, False), (1, True)])
def test_dry_run_eviction_follows_the_pdb_status_the_api_reports(
    allowed: int | None, evicted: bool
) -> None:
    from joiner.cluster.kube.actuator import KubeActuator
    from joiner.cluster.kube.metrics import Metrics

    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET):
        h.sync(kind)
    h.sync(kube.PDB, _pdb(allowed))
    h.sync(kube.POD, _pod("a", "u1", node="n1", labels={"app": "web"}), _pod("b", "u2", node="n1"))
    h.feed.start()
    report: list[dict[str, Any]] = []
    actuator = KubeActuator(
        None,
        h.state,
        h.feed,
        h.lifecycle,
        Metrics(),
        create_nodes=True,
        dry_run=True,
        report=report.append,
    )
    assert actuator.evict(h.state.pods["u1"], forced=False) is evicted
    if evicted:
        assert report == [{"action": "evict", "pod": "ns/a", "forced": False}]
    else:
        assert report == [
            {
                "action": "evictBlocked",
                "pod": "ns/a",
                "pdb": "PodDisruptionBudget ns/web allows no disruption",
            }
        ]
    # A pod no budget selects is evicted either way.
    assert actuator.evict(h.state.pods["u2"], forced=False)
    assert report[-1] == {"action": "evict", "pod": "ns/b", "forced": False}


def test_settings_aws_retry_policy_reaches_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``awsRetryMode``/``awsMaxAttempts`` become the AWS provider's botocore retry policy;
    a mode botocore does not have, or 0 attempts, is an error naming the field."""
    import joiner.cloudprovider.aws as aws
    from joiner.operator.controller_settings import cloud_provider

    assert (load_settings(None).awsRetryMode, load_settings(None).awsMaxAttempts) == (
        "standard",
        5,
    )
    good = tmp_path / "r.yaml"
    good.write_text("awsRetryMode: adaptive\nawsMaxAttempts: 3\nclusterName: c\n")
    seen: list[Any] = []
    monkeypatch.setattr(aws, "new_aws_provider", lambda s, *_a, **_k: seen.append(s))
    cloud_provider(load_settings(good), "aws", Any, Any)  # type: ignore[arg-type]
    assert (seen[0].retry_mode, seen[0].max_attempts) == ("adaptive", 3)
    for text, field in (
        ("awsRetryMode: jittered\n", "awsRetryMode"),
        ("awsMaxAttempts: 0\n", "awsMaxAttempts"),
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(InputError, match=field):
            load_settings(bad)


class _Created:
    """Records the objects the actuator creates; other writes are accepted and ignored."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def create(self, obj: Any, **_kw: Any) -> Any:
        self.created.append(obj.to_dict())
        return obj

    def patch(self, *_a: Any, **_kw: Any) -> None:
        return None


def _crd_accepts_requirement_key(key: str) -> bool:
    """The NodeClaim CRD's rules on ``spec.requirements[].key`` (karpenter
    ``pkg/apis/crds/karpenter.sh_nodeclaims.yaml``, ``x-kubernetes-validations``): no
    ``karpenter.sh`` label domain except capacity-type and nodepool; never the hostname."""
    domain = key.split("/", 1)[0]
    allowed_domain = key in (
        "karpenter.sh/capacity-type",
        "karpenter.sh/nodepool",
    ) or not domain.endswith("karpenter.sh")
    return allowed_domain and key != "kubernetes.io/hostname"


def test_a_new_nodeclaims_requirements_are_ones_karpenters_crd_accepts() -> None:
    """Regression: the scheduling-only keys (``kubernetes.io/hostname``,
    ``karpenter.sh/registered``, ``karpenter.sh/initialized``) reached a NodeClaim's
    ``spec.requirements``, and the API server with Karpenter's NodeClaim CRD refused the
    create (label "kubernetes.io/hostname" is restricted; label domain "karpenter.sh" is
    restricted). Karpenter drops them (``FinalizeScheduling``, ``ToNodeClaim``). A pod that
    requires one of them itself is ignored altogether (``Provisioner.Validate``;
    tests/scheduling/test_restricted_labels.py), so the one here requires a zone and the
    drop is checked on ``nodeclaim_requirements``."""
    from joiner.api import openapi
    from joiner.api.requirements import Requirement, Requirements
    from joiner.cluster.kube.actuator import KubeActuator
    from joiner.cluster.kube.metrics import Metrics
    from joiner.controllers.provisioning.provisioner import Provisioner, nodeclaim_requirements

    scheduling = Requirements(
        [
            Requirement.new("kubernetes.io/hostname", "In", ["hostname-placeholder-0001"]),
            Requirement.new("karpenter.sh/initialized", "DoesNotExist"),
            Requirement.new("karpenter.sh/registered", "DoesNotExist"),
            Requirement.new("topology.kubernetes.io/zone", "In", ["us-east-1a"]),
        ]
    )
    assert list(nodeclaim_requirements(scheduling)) == ["topology.kubernetes.io/zone"]
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    pod = unschedulable(_pod("a", "u1"))
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["us-east-1a"],
                            },
                        ]
                    }
                ]
            }
        }
    }
    h.sync(kube.POD, pod)
    h.feed.start()
    Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(0)).reconcile()
    (claim,) = h.state.nodeclaims.values()
    assert "kubernetes.io/hostname" not in claim.requirements
    assert "karpenter.sh/initialized" not in claim.requirements
    assert claim.requirements["topology.kubernetes.io/zone"].values == {"us-east-1a"}
    api = _Created()
    actuator = KubeActuator(
        api,  # type: ignore[arg-type]
        h.state,
        h.feed,
        h.lifecycle,
        Metrics(),
        create_nodes=True,
        dry_run=False,
    )
    actuator.sync()
    (doc,) = [d for d in api.created if d["kind"] == "NodeClaim"]
    keys = [t["key"] for t in doc["spec"]["requirements"]]
    assert "topology.kubernetes.io/zone" in keys and "karpenter.sh/capacity-type" in keys
    assert all(_crd_accepts_requirement_key(k) for k in keys), keys
    schema = openapi.schema_for("karpenter.sh/v1", "NodeClaim")
    assert schema is not None and openapi.problem(doc, schema) is None
