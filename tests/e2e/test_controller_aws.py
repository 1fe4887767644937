"""Controller mode on AWS's APIs end to end (issue 23): ``joiner run --cloud aws`` against a
moto server on loopback (EC2, SQS), on the real Kubernetes test stack with kwok.

The controller is a subprocess started with the rendered Helm chart's container arguments,
environment and settings (``helm template``), authenticated with its ServiceAccount's token
(TokenRequest API: there is no container engine here), and pointed at moto by
``AWS_ENDPOINT_URL`` (boto3's standard variable). Two settings are added to the chart's for
the test's time budget: a 5 s garbage-collection interval and a 5 s orphan-instance grace
(Karpenter: 2 min and 30 s).

The test plays kubelet (``Kubelet``): for every running moto instance tagged for the
cluster it creates the Node an EKS node would register, named by the instance's private
DNS name, with its providerID, the labels and taints of the user data's kubelet flags and
the instance type's resources; kwok then keeps it Ready and runs its pods.

Scenarios, one after another on the same cluster (each needs the one before):

1. Pending pods -> CreateFleet on moto -> Nodes register -> pods Running.
2. The instance terminated behind Joiner's back -> its NodeClaim is garbage-collected and
   the pods are provisioned again on a new instance.
3. The controller SIGKILLed mid-launch (as soon as moto holds the new instance) and
   restarted -> no instance leaks (every running instance of the cluster has a NodeClaim)
   and no NodeClaim is duplicated.
4. A Spot interruption warning (EventBridge's message shape) on the moto SQS queue -> a
   replacement is launched and the interrupted node drained and terminated.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from joinerctl import (
    REPO,
    Cluster,
    ControllerProcess,
    NodeClaimRes,
    deployment_doc,
    metric,
    nodepool_doc,
    service_account_token,
    token_kubeconfig,
    wait_for,
)
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from moto.server import DomainDispatcherApplication, create_backend_app
from test_chart import APPLIED_KINDS, render
from werkzeug.serving import make_server

from joiner.api.manifests.userdata import mime_parts

pytestmark = pytest.mark.e2e

REGION = "us-east-1"
CLUSTER = "e2e-aws"
NAMESPACE = "joiner-aws"
RELEASE = "joiner-aws"
NODECLASS = "e2e-aws"
#: Spot c6a with 4 vCPUs: every launch is one spot instance (moto prices spot at 0.00001).
REQUIREMENTS = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c6a"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": ["4"]},
]
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
}


class MotoAccount:
    """A moto server on loopback laid out like an EKS cluster's account: a VPC, two subnets
    and a security group (the VPC's default) tagged ``karpenter.sh/discovery``, an AMI
    tagged for the NodeClass, and the interruption queue named after the cluster."""

    def __init__(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        #: Called with no argument after moto has carried out a CreateFleet and before its
        #: answer is sent (once; None: nothing).
        self.on_create_fleet: Callable[[], None] | None = None
        self.server = make_server(
            "127.0.0.1", 0, self._app(DomainDispatcherApplication(create_backend_app)), True
        )
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        host, port = self.server.server_address[:2]
        self.endpoint = f"http://{host}:{port}"
        # moto's backends are global to the process: start from an empty account, not with
        # what the CloudProvider tests' moto server left (their launch templates made the
        # kubelet here find two templates for one instance).
        reset = urllib.request.Request(self.endpoint + "/moto-api/reset", method="POST")
        with urllib.request.urlopen(reset, timeout=30) as resp:
            assert resp.status == 200
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        self.ec2 = session.client("ec2", endpoint_url=self.endpoint)
        self.sqs = session.client("sqs", endpoint_url=self.endpoint)
        # The nodes live in the account's default VPC and use its default security group.
        # moto's CreateFleet ignores the launch template's security groups: an on-demand
        # instance gets its VPC's default group, a Spot one the first group named
        # "default" moto finds, which is the default VPC's. In any other VPC, Spot nodes
        # would carry another VPC's group and be replaced for SecurityGroupDrift
        # (Karpenter-AWS's check, which Joiner's is_drifted reproduces). EC2 applies the
        # template's groups, so this is moto's limit, not a rule Joiner relaxes.
        default_vpc = [{"Name": "is-default", "Values": ["true"]}]
        vpc = self.ec2.describe_vpcs(Filters=default_vpc)["Vpcs"][0]["VpcId"]
        tag = [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]
        for i, zone in enumerate(("us-east-1a", "us-east-1b"), start=1):
            sid = self.ec2.create_subnet(
                VpcId=vpc, CidrBlock=f"172.31.{200 + i}.0/24", AvailabilityZone=zone
            )["Subnet"]["SubnetId"]
            self.ec2.create_tags(Resources=[sid], Tags=tag)
        default_sg = self.ec2.describe_security_groups(
            Filters=[
                {"Name": "vpc-id", "Values": [vpc]},
                {"Name": "group-name", "Values": ["default"]},
            ]
        )["SecurityGroups"][0]["GroupId"]
        self.ec2.create_tags(Resources=[default_sg], Tags=tag)
        images = self.ec2.describe_images(
            Owners=["amazon"],
            Filters=[
                {"Name": "architecture", "Values": ["x86_64"]},
                {"Name": "name", "Values": ["al2023-ami-*"]},
            ],
        )["Images"]
        self.ami = sorted(images, key=lambda i: i["ImageId"])[0]["ImageId"]
        self.ec2.create_tags(Resources=[self.ami], Tags=tag)
        self.queue_url = self.sqs.create_queue(QueueName=CLUSTER)["QueueUrl"]

    def instances(self, *states: str) -> list[dict[str, Any]]:
        """The cluster's instances (tag ``kubernetes.io/cluster/<cluster>``) in ``states``
        (all when none given)."""
        filters = [{"Name": f"tag:kubernetes.io/cluster/{CLUSTER}", "Values": ["owned"]}]
        if states:
            filters.append({"Name": "instance-state-name", "Values": list(states)})
        out = []
        for page in self.ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                out.extend(reservation["Instances"])
        return out

    def _app(self, app: Any) -> Any:
        """moto's WSGI app, with ``on_create_fleet`` run between an EC2 CreateFleet and
        its answer."""

        def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            out = list(app(environ, start_response))
            hook = self.on_create_fleet
            if hook is not None and b"Action=CreateFleet" in body:
                self.on_create_fleet = None
                hook()
            return out

        return wrapped

    def stop(self) -> None:
        self.server.shutdown()
        self._thread.join(timeout=10)


def provider_id(instance: dict[str, Any]) -> str:
    return f"aws:///{instance['Placement']['AvailabilityZone']}/{instance['InstanceId']}"


def tags(instance: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags", [])}


class Kubelet:
    """Plays the kubelet of every running instance of the cluster: creates its Node once
    (as ``--register-node`` does) and never deletes it (the Node of a terminated instance
    stays until someone deletes it, as with no cloud-controller-manager).

    Labels and taints are the user data's ``--node-labels`` and ``--register-with-taints``
    (AL2023 NodeConfig ``kubelet.flags``) plus the well-known labels the kubelet sets; the
    capacity and allocatable are the instance type's as Joiner predicted them on the
    NodeClaim (the kubelet reports the machine's resources)."""

    def __init__(self, aws: MotoAccount, admin: Client) -> None:
        self.aws = aws
        self.admin = admin
        self.registered: dict[str, str] = {}  # instance id -> Node name
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet", daemon=True)

    def start(self) -> Kubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self.sync()
            except Exception as exc:  # reported by the test (assert_ok)
                self.errors.append(repr(exc))

    def assert_ok(self) -> None:
        assert not self.errors, self.errors[:5]

    def sync(self) -> None:
        for inst in self.aws.instances("running"):
            if inst["InstanceId"] in self.registered:
                continue
            claim_name = tags(inst).get("karpenter.sh/nodeclaim")
            try:
                claim = self.admin.get(NodeClaimRes, claim_name) if claim_name else None
            except ApiError as exc:
                if exc.status.code != 404:
                    raise
                claim = None
            status = (claim.get("status") or {}) if claim is not None else {}
            if not status.get("allocatable"):
                # A real instance boots for tens of seconds; this one waits until Joiner
                # recorded what it launched (an orphan of a crash never registers).
                continue
            self._register(inst, status)

    def _register(self, inst: dict[str, Any], status: dict[str, Any]) -> None:
        kubelet = self._kubelet(inst)
        labels_flag = _flag(kubelet.get("flags") or [], "--node-labels").strip('"')
        node_labels = dict(kv.split("=", 1) for kv in labels_flag.split(",") if kv)
        taints = [
            {"key": t["key"], "value": t.get("value"), "effect": t["effect"]}
            for t in kubelet["config"].get("registerWithTaints") or []
        ]
        name = inst["PrivateDnsName"]
        zone = inst["Placement"]["AvailabilityZone"]
        node_labels.update(
            {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": inst["InstanceType"],
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": REGION,
            }
        )
        doc = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": node_labels,
                "annotations": {"kwok.x-k8s.io/node": "fake"},
            },
            "spec": {"providerID": provider_id(inst), "taints": taints},
            "status": {
                "capacity": status["capacity"],
                "allocatable": status["allocatable"],
                "phase": "Pending",
            },
        }
        try:
            self.admin.create(from_dict(doc))
        except ApiError as exc:
            if exc.status.code != 409:
                raise
        self.registered[inst["InstanceId"]] = name

    def _kubelet(self, inst: dict[str, Any]) -> dict[str, Any]:
        """``spec.kubelet`` of Karpenter's NodeConfig (the last MIME part) in the instance's
        user data (its launch template's)."""
        lt_id = tags(inst).get("aws:ec2launchtemplate:id")
        if lt_id:
            templates = [lt_id]
        else:  # moto may not tag fleet instances with their template: one template per test
            templates = [
                t["LaunchTemplateId"]
                for t in self.aws.ec2.describe_launch_templates()["LaunchTemplates"]
            ]
            assert len(templates) == 1, templates
        data = self.aws.ec2.describe_launch_template_versions(LaunchTemplateId=templates[0])[
            "LaunchTemplateVersions"
        ][0]["LaunchTemplateData"]
        user_data = base64.b64decode(data["UserData"]).decode()
        config = yaml.safe_load(mime_parts(user_data)[-1].body)
        return dict(config["spec"]["kubelet"])


def _flag(flags: list[str], name: str) -> str:
    for f in flags:
        if f.startswith(name + "="):
            return f.split("=", 1)[1]
    return ""


class ChartController(ControllerProcess):
    """``joiner run`` with the rendered chart's container args, env and settings, as its
    ServiceAccount (token kubeconfig), pointed at moto."""

    def __init__(
        self, workdir: Path, name: str, kubeconfig: Path, docs: list[dict[str, Any]], endpoint: str
    ) -> None:
        cm = next(d for d in docs if d["kind"] == "ConfigMap")
        settings = yaml.safe_load(cm["data"]["settings.yaml"])
        settings["garbageCollectionIntervalSeconds"] = 5
        settings["orphanInstanceGraceSeconds"] = 5
        # The tests read launch templates after the launch: keep them for the whole test.
        settings["launchTemplateTTLSeconds"] = 3600
        super().__init__(kubeconfig, workdir, name, settings)
        container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"][
            "containers"
        ][0]
        self.chart_args = [str(a) for a in container["args"]]
        env = {e["name"]: str(e["value"]) for e in container["env"] if "value" in e}
        self.env = {**env, **AWS_ENV, "AWS_ENDPOINT_URL": endpoint, "POD_NAME": name}

    def start(self) -> ChartController:
        args = list(self.chart_args)
        replace = {
            "--settings": str(self.settings_file),
            "--metrics-port": str(self.metrics_port),
            "--health-port": str(self.health_port),
            "--identity": self.env["POD_NAME"],  # $(POD_NAME), as the kubelet expands it
        }
        for flag, value in replace.items():
            args[args.index(flag) + 1] = value
        argv = [sys.executable, "-c", "from joiner.cli.main import main; main()", *args]
        argv += ["--kubeconfig", str(self.kubeconfig)]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env}, cwd=REPO
            )
        return self

    def wait_leading(self) -> None:
        wait_for(
            f"{self.name} leading", lambda: self.leading() or (not self.alive() and self.tail()), 90
        )
        assert self.alive(), self.tail()


@pytest.fixture(scope="module")
def _aws_starting() -> Iterator[Future[MotoAccount]]:
    """The moto account, laid out in a thread: moto's EC2 backend takes seconds to load
    (its AMIs and instance types), which overlaps the test stack's start-up (``aws`` asks
    for ``admin`` after this)."""
    with ThreadPoolExecutor(1, thread_name_prefix="moto-account") as pool:
        starting = pool.submit(MotoAccount)
        try:
            yield starting
        finally:
            if starting.exception() is None:
                starting.result().stop()


@pytest.fixture(scope="module")
def aws(_aws_starting: Future[MotoAccount], admin: Client) -> MotoAccount:
    return _aws_starting.result(timeout=300)


def _install_chart(admin: Client, aws: MotoAccount, tmp_path: Path, kubeconfig: Path):
    """Apply the rendered chart's ServiceAccount, RBAC and settings; returns the rendered
    documents and a kubeconfig with the ServiceAccount's token."""
    try:
        admin.create(Namespace(metadata=ObjectMeta(name=NAMESPACE)))
    except ApiError as exc:
        if exc.status.code != 409:
            raise
    docs = render(
        f"settings.clusterName={CLUSTER}",
        f"settings.interruptionQueue={aws.queue_url}",
        release=RELEASE,
        namespace=NAMESPACE,
    )
    for doc in docs:
        if doc["kind"] in APPLIED_KINDS:
            admin.apply(from_dict(doc), force=True)
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    token = service_account_token(admin, sa, NAMESPACE)
    return docs, token_kubeconfig(kubeconfig, token, tmp_path / "joiner-sa.kubeconfig")


def _nodeclass(aws: MotoAccount) -> dict[str, Any]:
    selector = [{"tags": {"karpenter.sh/discovery": CLUSTER}}]
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": NODECLASS},
        "spec": {
            "role": "KarpenterNodeRole-e2e-aws",
            "amiFamily": "AL2023",
            # moto refuses SSM parameters under /aws/, so no alias: the AMI by its tag.
            "amiSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "subnetSelectorTerms": selector,
            "securityGroupSelectorTerms": selector,
        },
    }


def _claims_by_instance(cluster: Cluster) -> dict[str, list[str]]:
    """Instance id -> the names of the live NodeClaims whose providerID is it."""
    out: dict[str, list[str]] = {}
    for c in cluster.nodeclaims():
        if c.metadata.deletionTimestamp:
            continue
        pid = (c.get("status") or {}).get("providerID")
        if pid:
            out.setdefault(pid.rsplit("/", 1)[-1], []).append(c.metadata.name)
    return out


def _settled(aws: MotoAccount, cluster: Cluster, app: str, replicas: int) -> object:
    """Pods running on the pool's Nodes, NodeClaims and Nodes consistent, and the running
    instances exactly the NodeClaims' (none leaked, none shared)."""
    pods = cluster.running(app, replicas)
    consistent = cluster.consistent()
    if not pods or not consistent:
        return None
    if any(p.spec.nodeName not in consistent[1] for p in pods):
        return None  # on a deleted Node, until kube-controller-manager's pod GC deletes it
    running = {i["InstanceId"] for i in aws.instances("running", "pending")}
    claims = _claims_by_instance(cluster)
    if not running or running != set(claims) or any(len(v) != 1 for v in claims.values()):
        return None
    return running


# Hang guards, not speed targets: under a load of 10 on 2 cores one launch-and-register
# cycle has taken over 180 s (it takes about 30 s on a quiet machine).
@pytest.mark.timeout(1500)
def test_controller_on_aws_apis_end_to_end(
    aws: MotoAccount,
    admin: Client,
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    controllers: list[ControllerProcess],
) -> None:
    docs, sa_kubeconfig = _install_chart(admin, aws, tmp_path, kubeconfig)
    Cluster(admin, "-").apply(_nodeclass(aws))
    pool = nodepool_doc(cluster.name, requirements=REQUIREMENTS)
    pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = NODECLASS
    cluster.apply(pool)
    kubelet = Kubelet(aws, admin).start()
    try:
        _scenarios(aws, admin, tmp_path, cluster, controllers, docs, sa_kubeconfig, kubelet)
    finally:
        kubelet.stop()  # Cluster.cleanup deletes its Nodes (they carry the NodePool label)


@dataclass(frozen=True)
class _Run:
    """What the scenarios share: the account, the cluster, the fake kubelet, and how to
    start (or restart) a controller pod of the chart by name."""

    aws: MotoAccount
    cluster: Cluster
    kubelet: Kubelet
    start: Callable[[str], ChartController]


def _scenarios(
    aws: MotoAccount,
    admin: Client,
    tmp_path: Path,
    cluster: Cluster,
    controllers: list[ControllerProcess],
    docs: list[dict[str, Any]],
    sa_kubeconfig: Path,
    kubelet: Kubelet,
) -> None:
    def controller(name: str) -> ChartController:
        ctl = ChartController(tmp_path, name, sa_kubeconfig, docs, aws.endpoint)
        controllers.append(ctl.start())
        ctl.wait_leading()
        return ctl

    run = _Run(aws, cluster, kubelet, controller)
    _shadow(run, ChartController(tmp_path, "joiner-shadow", sa_kubeconfig, docs, aws.endpoint))
    ctl, first = _launch(run)
    second = _terminated_outside(run, ctl, first)
    ctl, third = _killed_in_create_fleet(run, ctl, second)
    _spot_interruption(run, ctl, third)
    kubelet.assert_ok()


def _shadow(run: _Run, shadow: ChartController) -> None:
    """0. ``--dry-run`` with the chart's ``--cloud aws``: it reads EC2 and reports the launch
    for the pending pods, and writes nothing to AWS (no instance, no launch template)."""
    aws, cluster = run.aws, run.cluster
    report = shadow.log.with_name("shadow-report.jsonl")
    shadow.chart_args += ["--dry-run", "--report", str(report)]
    shadow.start()
    try:
        wait_for(
            "the shadow ready", lambda: shadow.ready() or (not shadow.alive() and shadow.tail())
        )
        assert shadow.alive(), shadow.tail()
        cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=2, cpu="1"))

        def launches() -> list[dict[str, Any]] | None:
            lines = report.read_text().splitlines() if report.exists() else []
            found = [json.loads(line) for line in lines]
            return [e for e in found if e["action"] == "launch"] or None

        planned = wait_for("the shadow's launch report", launches, 300)
        assert all(e["nodepool"] == cluster.name for e in planned), planned
    finally:
        assert shadow.stop() == 0, shadow.tail()
    assert aws.instances("pending", "running") == []
    assert aws.ec2.describe_launch_templates()["LaunchTemplates"] == []
    assert "dry run: would launch" in shadow.tail(400)
    print(f"0. the shadow planned {len(planned)} launch(es), wrote nothing to AWS")


def _launch(run: _Run) -> tuple[ChartController, set[str]]:
    """1. Pending pods -> CreateFleet -> Nodes register -> pods Running."""
    aws, cluster, kubelet = run.aws, run.cluster, run.kubelet
    ctl = run.start("joiner-aws-0")
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=2, cpu="1"))
    first = wait_for(
        "web on a moto instance",
        lambda: kubelet.assert_ok() or _settled(aws, cluster, "web", 2),
        400,
    )
    kubelet.assert_ok()
    assert len(first) == 1, first
    (instance,) = aws.instances("running")
    assert tags(instance)["karpenter.sh/nodepool"] == cluster.name
    assert instance.get("InstanceLifecycle") == "spot"
    body = ctl.http("/metrics")[1]
    assert metric(body, "karpenter_nodeclaims_created_total") >= 1
    _assert_nodeclass_status(aws, cluster)
    print(f"1. launched {instance['InstanceId']} ({instance['InstanceType']})")
    return ctl, first


def _assert_nodeclass_status(aws: MotoAccount, cluster: Cluster) -> None:
    """The EC2NodeClass's status as Karpenter-AWS writes it, from what Joiner resolved in
    EC2: the tagged subnets and security group, the tagged AMI, the role as instance
    profile, every part Ready."""
    from joinerctl import EC2NodeClassRes

    tagged = [{"Name": "tag:karpenter.sh/discovery", "Values": [CLUSTER]}]
    subnets = {s["SubnetId"] for s in aws.ec2.describe_subnets(Filters=tagged)["Subnets"]}
    groups = aws.ec2.describe_security_groups(Filters=tagged)["SecurityGroups"]

    def written() -> dict[str, Any] | None:
        got = cluster.client.get(EC2NodeClassRes, NODECLASS).get("status") or {}
        return got if got.get("subnets") else None

    status = wait_for("the EC2NodeClass status", written, 60)
    assert {s["id"] for s in status["subnets"]} == subnets
    assert status["securityGroups"] == [
        {"id": g["GroupId"], "name": g["GroupName"]} for g in groups
    ]
    assert [a["id"] for a in status["amis"]] == [aws.ami]
    assert status["instanceProfile"] == "KarpenterNodeRole-e2e-aws"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == dict.fromkeys(
        (
            "AMIsReady",
            "SubnetsReady",
            "SecurityGroupsReady",
            "InstanceProfileReady",
            "ValidationSucceeded",
            "PlacementGroupReady",
            "Ready",
        ),
        "True",
    )


def _terminated_outside(run: _Run, ctl: ChartController, first: set[str]) -> set[str]:
    """2. Terminated behind Joiner's back: the NodeClaim is collected, pods provisioned again."""
    aws, cluster = run.aws, run.cluster
    aws.ec2.terminate_instances(InstanceIds=list(first))
    second = wait_for(
        "web on a new instance",
        lambda: (s := _settled(aws, cluster, "web", 2)) and s.isdisjoint(first) and s,
        400,
    )
    assert not _claims_by_instance(cluster).keys() & first
    assert _drift_decisions(ctl) == 0, ctl.tail()  # the instances match their NodeClass
    gone_node = run.kubelet.registered[next(iter(first))]
    assert gone_node not in {n.metadata.name for n in cluster.nodes()}
    pods = cluster.running("web", 2)
    assert pods and all(p.spec.nodeName != gone_node for p in pods)
    print(f"2. {sorted(first)} terminated outside Joiner, replaced by {sorted(second)}")
    return second


def _killed_in_create_fleet(
    run: _Run, ctl: ChartController, second: set[str]
) -> tuple[ChartController, set[str]]:
    """3. SIGKILL mid-launch: moto has carried out the CreateFleet, the controller never gets
    the answer. Restarted, it neither leaks that instance nor duplicates a NodeClaim."""
    aws, cluster = run.aws, run.cluster
    aws.on_create_fleet = ctl.kill
    cluster.scale("web", 6)  # 4 more 1-CPU pods: at least one more 4-vCPU instance
    wait_for("the kill in CreateFleet", lambda: not ctl.alive() and aws.on_create_fleet is None)
    orphans = {i["InstanceId"] for i in aws.instances("pending", "running")} - second
    assert orphans and not orphans & set(_claims_by_instance(cluster)), orphans
    print(f"3. killed in CreateFleet: {sorted(orphans)} launched, no NodeClaim knows it")
    ctl = run.start("joiner-aws-0")  # the same pod name: a container restart
    third = wait_for("web settled after the restart", lambda: _settled(aws, cluster, "web", 6), 400)
    claims = _claims_by_instance(cluster)
    assert set(claims) == third and all(len(v) == 1 for v in claims.values()), claims
    names = [n for v in claims.values() for n in v]
    assert len(names) == len(set(names)) == len(cluster.nodeclaims()), cluster.nodeclaims()
    gone = {i["InstanceId"] for i in aws.instances("shutting-down", "terminated")}
    assert orphans <= gone, (orphans, gone)
    print(f"   after the restart: orphans {sorted(orphans)} terminated; NodeClaims {claims}")
    return ctl, third


def _spot_interruption(run: _Run, ctl: ChartController, third: set[str]) -> None:
    """4. A Spot interruption warning on the queue: a replacement, then the node drained."""
    aws, cluster = run.aws, run.cluster
    victim = sorted(third)[0]
    victim_node = run.kubelet.registered[victim]
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=json.dumps(_spot_warning(victim)))

    def replaced() -> object:
        s = _settled(aws, cluster, "web", 6)
        return s and victim not in s and s

    fourth = wait_for("the interrupted instance replaced and drained", replaced, 400)
    pods = cluster.running("web", 6)
    assert pods and all(p.spec.nodeName != victim_node for p in pods)
    assert {i["InstanceId"] for i in aws.instances("shutting-down", "terminated")} >= {victim}
    body = ctl.http("/metrics")[1]
    assert metric(body, "karpenter_interruption_received_messages_total") >= 1
    assert metric(body, "karpenter_interruption_deleted_messages_total") >= 1
    assert _drift_decisions(ctl) == 0, ctl.tail()
    print(f"4. {victim} interrupted, instances now {sorted(fourth)}")


def _drift_decisions(ctl: ControllerProcess) -> float:
    """``karpenter_voluntary_disruption_decisions_total`` samples with ``reason="drifted"``."""
    total = 0.0
    for line in ctl.http("/metrics")[1].splitlines():
        if line.startswith("karpenter_voluntary_disruption_decisions_total{") and (
            'reason="drifted"' in line
        ):
            total += float(line.rpartition(" ")[2])
    return total


def _spot_warning(instance_id: str) -> dict[str, Any]:
    """An "EC2 Spot Instance Interruption Warning" as EventBridge delivers it to SQS."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "EC2 Spot Instance Interruption Warning",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": now,
        "region": REGION,
        "resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/{instance_id}"],
        "detail": {"instance-id": instance_id, "instance-action": "terminate"},
    }
