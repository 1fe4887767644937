"""The Helm chart (deploy/chart): Helm built from Go modules lints and renders it, the default
renders ``--cloud aws``, the simulated cloud only when a value asks, and the rendered
ServiceAccount, RBAC and settings apply to the test stack and grant what the controller
needs and nothing more (issue 23)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from joinerctl import REPO, service_account_token, token_kubeconfig
from lightkube import Client, KubeConfig
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Namespace, Secret

from joiner.operator.controller_settings import load_settings

CHART = REPO / "deploy" / "chart"
NAMESPACE = "joiner-chart"
#: What the tests apply of the rendered chart: all but the Deployment (no container engine
#: here; tests/e2e/test_controller_aws.py runs its container's command as a subprocess).
APPLIED_KINDS = (
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
)


def _helm() -> Path:
    subprocess.run(["bash", str(REPO / "tools/kube-stack/build-helm.sh")], check=True)
    out = subprocess.run(
        ["bash", str(REPO / "tools/kube-stack/build-helm.sh"), "--print-bin-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip()) / "helm"


def render(*sets: str, release: str = "joiner", namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """``helm template <release> deploy/chart`` with ``--set`` values, as documents."""
    args = [str(_helm()), "template", release, str(CHART), "--namespace", namespace]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _container_args(docs: list[dict[str, Any]]) -> list[str]:
    dep = next(d for d in docs if d["kind"] == "Deployment")
    return [str(a) for a in dep["spec"]["template"]["spec"]["containers"][0]["args"]]


@pytest.mark.e2e
def test_chart_renders_aws_by_default_and_simulated_only_when_asked() -> None:
    subprocess.run(
        [str(_helm()), "lint", str(CHART), "--set", "settings.clusterName=c"], check=True
    )
    aws = _container_args(render("settings.clusterName=c"))
    assert aws[aws.index("--cloud") + 1] == "aws"
    assert "--dry-run" not in aws
    sim = _container_args(render("cloud=simulated"))
    assert sim[sim.index("--cloud") + 1] == "simulated"
    shadow = _container_args(render("cloud=simulated", "dryRun=true"))
    assert "--dry-run" in shadow
    # A dry run on AWS is allowed: it makes no AWS call that writes.
    aws_shadow = _container_args(render("settings.clusterName=c", "dryRun=true"))
    assert "--dry-run" in aws_shadow and aws_shadow[aws_shadow.index("--cloud") + 1] == "aws"
    # AWS without a cluster name, or an unknown cloud, is refused with the value named.
    for bad, field in (
        ((), "settings.clusterName"),
        (("cloud=gcp",), "cloud"),
    ):
        args = [str(_helm()), "template", "joiner", str(CHART)]
        for s in bad:
            args += ["--set", s]
        proc = subprocess.run(args, capture_output=True, text=True)
        assert proc.returncode != 0 and field in proc.stderr, proc.stderr
    irsa = "arn:aws:iam::111122223333:role/joiner"
    docs = render(
        "settings.clusterName=c",
        f"serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn={irsa}",
    )
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")
    assert sa["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": irsa}


#: A values file in the shape Karpenter's chart documents (charts/karpenter/values.yaml keys).
KARPENTER_VALUES = """
logLevel: debug
additionalLabels: {team: platform}
additionalAnnotations: {owner: sre}
imagePullSecrets: [{name: regcred}]
strategy: {rollingUpdate: {maxUnavailable: 1}}
podDisruptionBudget: {name: karpenter, maxUnavailable: 1}
podSecurityContext: {fsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
service: {annotations: {scrape: "yes"}}
serviceMonitor:
  enabled: true
  additionalLabels: {release: prometheus}
  endpointConfig: {interval: 30s}
controller:
  env:
    - {name: HTTPS_PROXY, value: "http://proxy:3128"}
  resources:
    requests: {cpu: 500m, memory: 512Mi}
    limits: {memory: 512Mi}
settings:
  batchMaxDuration: 20s
  batchIdleDuration: 2s
  clusterName: my-cluster
  clusterEndpoint: https://ABC.gr7.us-east-1.eks.amazonaws.com
  interruptionQueue: my-cluster
  featureGates:
    nodeRepair: true
    nodeOverlay: false
    reservedCapacity: false
    spotToSpotConsolidation: true
    staticCapacity: false
    capacityBuffer: false
"""


def _by_kind(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in docs}


@pytest.mark.e2e
def test_karpenter_shaped_values_render_and_their_settings_reach_the_controller(
    tmp_path: Path,
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(KARPENTER_VALUES)
    helm = str(_helm())
    subprocess.run([helm, "lint", str(CHART), "-f", str(values)], check=True)
    out = subprocess.run(
        [helm, "template", "joiner", str(CHART), "-n", NAMESPACE, "-f", str(values)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = _by_kind(docs)
    for doc in docs:  # additionalLabels/additionalAnnotations on every object
        assert doc["metadata"]["labels"]["team"] == "platform", doc["kind"]
        assert doc["metadata"]["annotations"]["owner"] == "sre", doc["kind"]
    dep = kinds["Deployment"]
    pod = dep["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert dep["spec"]["strategy"] == {"rollingUpdate": {"maxUnavailable": 1}}
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    # Helm merges the file's map over the chart's default (which also runs as non-root).
    assert pod["securityContext"] == {
        "fsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": True,
        "runAsUser": 65532,
    }
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "512Mi"}
    assert [c["whenUnsatisfiable"] for c in pod["topologySpreadConstraints"]] == ["DoNotSchedule"]
    pdb = kinds["PodDisruptionBudget"]
    assert (pdb["metadata"]["name"], pdb["spec"]["maxUnavailable"]) == ("karpenter", 1)
    svc = kinds["Service"]
    assert svc["spec"]["ports"] == [
        {"name": "http-metrics", "protocol": "TCP", "port": 8080, "targetPort": "http-metrics"}
    ]
    assert svc["metadata"]["annotations"]["scrape"] == "yes"
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    monitor = kinds["ServiceMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["endpoints"] == [
        {"port": "http-metrics", "path": "/metrics", "interval": "30s"}
    ]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    assert env["HTTPS_PROXY"] == "http://proxy:3128"  # controller.env
    assert env["LOG_LEVEL"] == "debug" and env["BATCH_IDLE_DURATION"] == "2s"
    # The settings reach the controller: its settings file and environment, as it reads them.
    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text(kinds["ConfigMap"]["data"]["settings.yaml"])
    s = load_settings(settings_file, env=env)
    assert (s.batchIdleDuration, s.batchMaxDuration, s.logLevel) == (2.0, 20.0, "debug")
    assert (s.clusterName, s.interruptionQueue) == ("my-cluster", "my-cluster")
    assert s.clusterEndpoint == "https://ABC.gr7.us-east-1.eks.amazonaws.com"
    gates = s.featureGates
    assert gates.spotToSpotConsolidation and gates.nodeRepair and not gates.reservedCapacity


@pytest.mark.e2e
def test_chart_defaults_match_karpenters_and_renamed_keys_fail_naming_the_new_one() -> None:
    docs = render("settings.clusterName=c")
    kinds = _by_kind(docs)
    assert "ServiceMonitor" not in kinds  # off unless asked
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["BATCH_IDLE_DURATION"] == "1s" and env["BATCH_MAX_DURATION"] == "10s"
    assert env["FEATURE_GATES"] == (
        "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,"
        "NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"
    )
    assert "INTERRUPTION_QUEUE" not in env and env["LOG_LEVEL"] == "info"
    assert pod["topologySpreadConstraints"][0]["whenUnsatisfiable"] == "DoNotSchedule"
    for old, new in (
        ("settings.batchIdleSeconds=1", "settings.batchIdleDuration"),
        ("settings.batchMaxSeconds=10", "settings.batchMaxDuration"),
        ("settings.spotToSpotConsolidation=true", "settings.featureGates.spotToSpotConsolidation"),
        ("batchIdleSeconds=1", "settings.batchIdleDuration"),
    ):
        args = [str(_helm()), "template", "joiner", str(CHART), "--set", "settings.clusterName=c"]
        proc = subprocess.run([*args, "--set", old], capture_output=True, text=True)
        assert proc.returncode != 0, old
        assert f"renamed to {new}" in proc.stderr, proc.stderr


@pytest.mark.e2e
def test_rendered_rbac_and_settings_apply_and_grant_only_what_joiner_needs(
    kubeconfig: Path, tmp_path: Path
) -> None:
    admin = Client(KubeConfig.from_file(kubeconfig), field_manager="joiner-e2e-chart")
    # The chart's crds/ as Helm installs them (applied as they are, not templated).
    from joinerctl import NodeClaimRes, NodePoolRes, wait_for
    from lightkube.codecs import load_all_yaml

    for crd_file in sorted((CHART / "crds").glob("*.yaml")):
        for obj in load_all_yaml(crd_file.read_text()):
            admin.apply(obj, force=True)

    def served() -> bool:
        try:
            list(admin.list(NodePoolRes))
            list(admin.list(NodeClaimRes))
        except Exception as exc:  # 404 (ApiError, or a bare HTTP error) until served
            code = exc.status.code if isinstance(exc, ApiError) else None
            if code in (404, 429) or "404 Not Found" in str(exc):
                return False
            raise
        return True

    wait_for("the chart's CRDs served", served, 60)
    admin.apply(Namespace(metadata=ObjectMeta(name=NAMESPACE)), force=True)
    docs = render("settings.clusterName=e2e", "settings.interruptionQueue=https://q.example/q")
    applied = []
    for doc in docs:
        if doc["kind"] in APPLIED_KINDS:
            admin.apply(from_dict(doc), force=True)
            applied.append(doc["kind"])
    assert sorted(applied) == sorted(APPLIED_KINDS)
    # The settings the chart renders (file and environment) are ones the controller accepts.
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    path = tmp_path / "settings.yaml"
    path.write_text(cm["data"]["settings.yaml"])
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    settings = load_settings(path, env=env)
    assert settings.clusterName == "e2e"
    assert settings.interruptionQueue == "https://q.example/q"
    assert settings.leaderElection.namespace == NAMESPACE

    sa = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    token = service_account_token(admin, sa, NAMESPACE)
    as_joiner = Client(KubeConfig.from_file(token_kubeconfig(kubeconfig, token, tmp_path / "sa")))

    list(as_joiner.list(NodePoolRes))  # reads what it plans over
    list(as_joiner.list(NodeClaimRes))
    lease = Lease(metadata=ObjectMeta(name="chart-probe", namespace=NAMESPACE))
    as_joiner.create(lease)  # its leader-election Lease
    admin.create(Secret(metadata=ObjectMeta(name="s", namespace=NAMESPACE), stringData={"k": "v"}))
    with pytest.raises(ApiError) as refused:
        as_joiner.get(Secret, "s", namespace=NAMESPACE)
    assert refused.value.status.code == 403
    with pytest.raises(ApiError) as refused_lease:
        as_joiner.create(Lease(metadata=ObjectMeta(name="x", namespace="default")))
    assert refused_lease.value.status.code == 403
    # Status: it patches NodePool and EC2NodeClass status (as Karpenter writes it), never
    # their spec, and does not update status wholesale.
    assert _may(as_joiner, "patch", "karpenter.sh", "nodepools", "status")
    assert _may(as_joiner, "patch", "karpenter.k8s.aws", "ec2nodeclasses", "status")
    assert not _may(as_joiner, "patch", "karpenter.sh", "nodepools")
    assert not _may(as_joiner, "patch", "karpenter.k8s.aws", "ec2nodeclasses")
    assert not _may(as_joiner, "update", "karpenter.sh", "nodepools", "status")


#: The CRDs Joiner installs, by their vendored file: (group/version, plural, kind).
INSTALLED = {
    "karpenter.sh_nodepools.yaml": ("karpenter.sh/v1", "nodepools", "NodePool"),
    "karpenter.sh_nodeclaims.yaml": ("karpenter.sh/v1", "nodeclaims", "NodeClaim"),
    "karpenter.k8s.aws_ec2nodeclasses.yaml": (
        "karpenter.k8s.aws/v1",
        "ec2nodeclasses",
        "EC2NodeClass",
    ),
}


def _api(kubeconfig: Path) -> Any:
    """An HTTP client (httpx, lightkube's transport) for the API server of ``kubeconfig``."""
    from lightkube.config import client_adapter

    return client_adapter.Client(
        KubeConfig.from_file(kubeconfig).get(), client_adapter.ConnectionParams()
    )


@pytest.mark.e2e
def test_kubectl_get_and_explain_show_karpenters_columns_and_descriptions(
    admin: Client, kubeconfig: Path
) -> None:
    """With the CRDs ``joiner install-crds`` installed, the API server answers ``kubectl
    get``'s Table request with Karpenter's printer columns and ``kubectl explain``'s OpenAPI
    v3 request with Karpenter's field descriptions."""
    http = _api(kubeconfig)
    table = "application/json;as=Table;g=meta.k8s.io;v=v1"
    schemas = REPO / "joiner" / "api" / "schemas"
    for name, (group_version, plural, kind) in INSTALLED.items():
        crd = yaml.safe_load((schemas / name).read_text())
        columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
        resp = http.get(f"/apis/{group_version}/{plural}", headers={"Accept": table})
        resp.raise_for_status()
        body = resp.json()
        assert body["kind"] == "Table", body
        got = [(c["name"], c.get("priority", 0)) for c in body["columnDefinitions"]]
        assert got == [("Name", 0)] + [(c["name"], c.get("priority", 0)) for c in columns], kind
    resp = http.get("/apis/karpenter.sh/v1/nodepools", headers={"Accept": table})
    default = [c["name"] for c in resp.json()["columnDefinitions"] if not c.get("priority")]
    assert default == ["Name", "NodeClass", "Nodes", "Ready", "Age"]  # kubectl get nodepools
    resp = http.get("/apis/karpenter.k8s.aws/v1/ec2nodeclasses", headers={"Accept": table})
    rows = {r["cells"][0]: r["cells"] for r in resp.json()["rows"]}
    assert "e2e" in rows  # the shared EC2NodeClass, as kubectl get lists it

    for group_version, kind in (
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.sh/v1", "NodeClaim"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
    ):
        spec = _openapi_kind(http, group_version, kind)["properties"]["spec"]
        assert spec.get("description"), kind  # kubectl explain <kind>.spec
        fields = spec["properties"]
        assert fields and all(f.get("description") for f in fields.values()), kind
    pool = _openapi_kind(http, "karpenter.sh/v1", "NodePool")["properties"]["spec"]
    policy = pool["properties"]["disruption"]["properties"]["consolidationPolicy"]
    assert "consolidat" in policy["description"]

    # Karpenter's CEL rules are enforced: a NodeClaim requiring the hostname is refused.
    from joinerctl import NodeClaimRes

    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "cel-probe"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "e2e"},
            "requirements": [
                {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["x"]}
            ],
        },
    }
    with pytest.raises(ApiError) as refused:
        admin.create(NodeClaimRes.from_dict(claim), dry_run=True)
    assert refused.value.status.code == 422
    assert 'label "kubernetes.io/hostname" is restricted' in str(refused.value.status.message)
    claim["spec"]["requirements"][0]["key"] = "topology.kubernetes.io/zone"
    admin.create(NodeClaimRes.from_dict(claim), dry_run=True)  # the same claim otherwise


def _openapi_kind(http: Any, group_version: str, kind: str) -> dict[str, Any]:
    """The schema of ``kind`` in the API server's OpenAPI v3 document of ``group_version``,
    once published (the API server builds a new CRD's document after it is served)."""
    from joinerctl import wait_for

    def published() -> dict[str, Any] | None:
        resp = http.get(f"/openapi/v3/apis/{group_version}")
        if resp.status_code in (404, 503) or (resp.is_success and not resp.content):
            return None  # not published yet
        resp.raise_for_status()
        return next(
            (
                s
                for s in resp.json()["components"]["schemas"].values()
                if any(g["kind"] == kind for g in s.get("x-kubernetes-group-version-kind", []))
            ),
            None,
        )

    return wait_for(f"the OpenAPI v3 schema of {kind}", published, 60)


def _may(client: Client, verb: str, group: str, resource: str, subresource: str = "") -> bool:
    """What the API server's authorizer answers a SelfSubjectAccessReview for ``client``."""
    from lightkube.models.authorization_v1 import ResourceAttributes, SelfSubjectAccessReviewSpec
    from lightkube.resources.authorization_v1 import SelfSubjectAccessReview

    review = client.create(
        SelfSubjectAccessReview(
            spec=SelfSubjectAccessReviewSpec(
                resourceAttributes=ResourceAttributes(
                    verb=verb, group=group, resource=resource, subresource=subresource or None
                )
            )
        )
    )
    assert review.status is not None
    return bool(review.status.allowed)
