"""User data as Karpenter-AWS builds it: the whole kubelet block per AMI family, and the
NodeClass's own user data merged (not concatenated) the way upstream merges it."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import pytest
import yaml

from joiner.api.errors import InputError
from joiner.api.manifests.loader import load_text
from joiner.api.manifests.userdata import NODE_CONFIG, SHELL_SCRIPT, mime_parts
from joiner.cloudprovider.aws.bootstrap import go_duration, user_data
from joiner.cloudprovider.aws.nodeclass import ClusterInfo

CLUSTER = ClusterInfo("demo", "https://api.demo", "Q0E=", "10.100.0.0/16", "1.31")
LABELS = (("karpenter.sh/nodepool", "general"),)

KUBELET = """
  kubelet:
    maxPods: 110
    podsPerCore: 2
    systemReserved: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi}
    kubeReserved: {cpu: 200m, memory: 100Mi}
    evictionHard: {memory.available: 5%, nodefs.available: 10%}
    evictionSoft: {memory.available: 500Mi}
    evictionSoftGracePeriod: {memory.available: 1m}
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: false
    clusterDNS: [10.0.1.100]
"""


def nodeclass(user_data_text: str | None = None, alias: str = "al2023@latest", kubelet=KUBELET):
    text = f"""
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: gpu}}
spec:
  role: R
  amiSelectorTerms: [{{alias: {alias}}}]
  subnetSelectorTerms: [{{tags: {{a: b}}}}]
  securityGroupSelectorTerms: [{{id: sg-1}}]
{kubelet}
"""
    if user_data_text is not None:
        text += "  userData: |\n" + "".join(f"    {line}\n" for line in user_data_text.splitlines())
    return load_text(text, "nc.yaml").nodeclasses[0]


def test_al2023_node_config_carries_the_whole_kubelet_block():
    parts = mime_parts(user_data(nodeclass(), CLUSTER, LABELS))
    assert [p.content_type for p in parts] == [NODE_CONFIG]
    assert parts[0].body.startswith("# Karpenter Generated NodeConfig\n")
    config = yaml.safe_load(parts[0].body)
    assert config["spec"]["cluster"] == {
        "name": "demo",
        "apiServerEndpoint": "https://api.demo",
        "certificateAuthority": "Q0E=",
        "cidr": "10.100.0.0/16",
    }
    assert config["spec"]["kubelet"] == {
        "config": {
            "clusterDNS": ["10.0.1.100"],
            "maxPods": 110,
            "podsPerCore": 2,
            "systemReserved": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"},
            "kubeReserved": {"cpu": "200m", "memory": "100Mi"},
            "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": "1m0s"},
            "evictionMaxPodGracePeriod": 60,
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80,
            "cpuCFSQuota": False,
            "registerWithTaints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
        },
        "flags": ['--node-labels="karpenter.sh/nodepool=general"'],
    }


USER_MIME = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 42
      shutdownGracePeriod: 30s
--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "Hello, AL2023!"
--BOUNDARY--
"""


def test_al2023_user_mime_parts_are_kept_and_karpenters_node_config_comes_last():
    """The breaker's input: a MIME user data used to be pasted whole into one shell part
    (a nested archive nodeadm ignores). Its parts must be top-level parts, in order, and
    Karpenter's NodeConfig last so nodeadm lets Karpenter's values win."""
    out = user_data(nodeclass(USER_MIME), CLUSTER, LABELS)
    parts = mime_parts(out)
    assert [p.content_type for p in parts] == [
        NODE_CONFIG,
        'text/x-shellscript; charset="us-ascii"',
        NODE_CONFIG,
    ]
    assert yaml.safe_load(parts[0].body)["spec"]["kubelet"]["config"]["maxPods"] == 42
    assert parts[1].body.rstrip("\n") == '#!/bin/bash\necho "Hello, AL2023!"'
    assert yaml.safe_load(parts[2].body)["spec"]["kubelet"]["config"]["maxPods"] == 110
    assert out.count("MIME-Version") == 1  # no nested archive
    assert out.startswith(
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n'
    )


@pytest.mark.parametrize(
    ("text", "content_type"),
    [
        ("#!/bin/bash\necho hi", SHELL_SCRIPT),
        ("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}", NODE_CONFIG),
    ],
)
def test_al2023_plain_user_data_becomes_one_part_of_its_detected_type(text, content_type):
    parts = mime_parts(user_data(nodeclass(text), CLUSTER, LABELS))
    assert [p.content_type for p in parts] == [content_type, NODE_CONFIG]
    assert parts[0].body.rstrip("\n") == text


def test_al2_bootstrap_script_comes_after_the_users_parts_with_every_kubelet_flag():
    nc = replace(
        nodeclass(USER_MIME.replace("application/node.eks.aws", "text/cloud-config")),
        ami_family="AL2",
    )
    parts = mime_parts(user_data(nc, CLUSTER, LABELS))
    assert [p.content_type for p in parts] == [
        "text/cloud-config",
        'text/x-shellscript; charset="us-ascii"',
        'text/x-shellscript; charset="us-ascii"',
    ]
    script = parts[-1].body
    assert script.splitlines()[2:] == [
        "/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://api.demo' "
        "--b64-cluster-ca 'Q0E=' \\",
        "--dns-cluster-ip '10.0.1.100' \\",
        "--use-max-pods false \\",
        "--kubelet-extra-args '"
        '--node-labels="karpenter.sh/nodepool=general" '
        '--register-with-taints="karpenter.sh/unregistered:NoExecute" '
        "--max-pods=110 --pods-per-core=2 "
        '--system-reserved="cpu=100m,ephemeral-storage=1Gi,memory=100Mi" '
        '--kube-reserved="cpu=200m,memory=100Mi" '
        '--eviction-hard="memory.available<5%,nodefs.available<10%" '
        '--eviction-soft="memory.available<500Mi" '
        '--eviction-soft-grace-period="memory.available=1m0s" '
        "--eviction-max-pod-grace-period=60 --image-gc-high-threshold=85 "
        "--image-gc-low-threshold=80 --cpu-cfs-quota=false'",
    ]


def test_al2_plain_script_and_ipv6_cluster_dns():
    nc = replace(
        nodeclass("#!/bin/bash\necho first", kubelet="  kubelet: {clusterDNS: ['fd00::a']}"),
        ami_family="AL2",
    )
    parts = mime_parts(user_data(nc, CLUSTER, LABELS))
    assert parts[0].body.splitlines()[1] == "echo first"
    assert "--ip-family ipv6 \\\n--dns-cluster-ip 'fd00::a'" in parts[1].body
    assert "--use-max-pods" not in parts[1].body  # maxPods unset: the AMI's ENI-limited value


BR_USER = """
[settings.kubernetes]
cluster-name = "wrong"
max-pods = 7
not-a-bottlerocket-key = true
[settings.kubernetes.node-labels]
custom = "yes"
"karpenter.sh/nodepool" = "users-value"
[settings.kubernetes.node-taints]
dedicated = ["gpu:NoSchedule"]
[settings.ntp]
time-servers = ["169.254.169.123"]
[settings.autoscaling]
should-wait = true
[not-settings]
x = 1
"""


def test_bottlerocket_toml_merged_with_karpenters_keys_winning():
    nc = nodeclass(BR_USER, alias="bottlerocket@latest")
    doc = tomllib.loads(user_data(nc, CLUSTER, LABELS))
    assert set(doc) == {"settings"}  # only [settings] survives, as upstream
    settings = doc["settings"]
    assert settings["ntp"] == {"time-servers": ["169.254.169.123"]}
    assert settings["autoscaling"] == {"should-wait": False}
    k8s = settings["kubernetes"]
    assert "not-a-bottlerocket-key" not in k8s
    assert k8s["cluster-name"] == "demo" and k8s["api-server"] == "https://api.demo"
    assert k8s["cluster-certificate"] == "Q0E="
    assert k8s["node-labels"] == {"custom": "yes", "karpenter.sh/nodepool": "general"}
    assert k8s["node-taints"] == {"karpenter.sh/unregistered": [":NoExecute"]}  # replaced
    assert k8s["max-pods"] == 110
    assert k8s["cluster-dns-ip"] == "10.0.1.100"
    assert k8s["system-reserved"] == {"cpu": "100m", "ephemeral-storage": "1Gi", "memory": "100Mi"}
    assert k8s["kube-reserved"] == {"cpu": "200m", "memory": "100Mi"}
    assert k8s["eviction-hard"] == {"memory.available": "5%", "nodefs.available": "10%"}
    assert k8s["eviction-soft"] == {"memory.available": "500Mi"}
    assert k8s["eviction-soft-grace-period"] == {"memory.available": "1m0s"}
    assert k8s["eviction-max-pod-grace-period"] == 60
    assert k8s["image-gc-high-threshold-percent"] == "85"
    assert k8s["image-gc-low-threshold-percent"] == "80"
    assert k8s["cpu-cfs-quota-enforced"] is False


def test_bottlerocket_keeps_the_users_max_pods_without_a_kubelet_value():
    nc = nodeclass(BR_USER, alias="bottlerocket@latest", kubelet="")
    k8s = tomllib.loads(user_data(nc, CLUSTER, LABELS))["settings"]["kubernetes"]
    assert k8s["max-pods"] == 7
    assert "cluster-dns-ip" not in k8s


@pytest.mark.parametrize(
    ("alias", "text", "message"),
    [
        ("bottlerocket@latest", "[settings.kubernetes\nmax-pods = 1", "not valid TOML"),
        ("al2023@latest", "MIME-Version: 1.0\nContent-Type: text/plain\n\nhi", "multipart"),
        (
            "al2023@latest",
            'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\nno part\n',
            "boundary",
        ),
        (
            "al2@latest",
            'Content-Type: multipart/mixed; boundary="B"\n\n'
            "--B\nContent-Type: text/x-shellscript\n\necho\n",
            "boundary",
        ),
    ],
)
def test_malformed_user_data_is_an_input_error_naming_the_nodeclass(alias, text, message):
    with pytest.raises(InputError) as err:
        nodeclass(text, alias=alias)
    assert err.value.obj == "EC2NodeClass/gpu" and err.value.field == "spec.userData"
    assert err.value.file == "nc.yaml"
    assert message in str(err.value)


def test_bootstrap_rejects_malformed_user_data_it_is_handed_directly():
    """A NodeClass built without the loader (controller mode reads the same loader, but the
    renderer does not rely on it)."""
    nc = replace(nodeclass(), ami_family="Bottlerocket", user_data="= nope")
    with pytest.raises(InputError) as err:
        user_data(nc, CLUSTER, LABELS)
    assert err.value.obj == "EC2NodeClass/gpu" and err.value.field == "spec.userData"


def test_custom_passes_user_data_through():
    nc = replace(nodeclass("#!/bin/bash\necho mine"), ami_family="Custom")
    assert user_data(nc, CLUSTER, LABELS) == "#!/bin/bash\necho mine\n"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.5, "500ms"), (45, "45s"), (60, "1m0s"), (90, "1m30s"), (3600, "1h0m0s")],
)
def test_go_duration(seconds, text):
    assert go_duration(seconds) == text


def test_kubelet_fields_that_reach_user_data_are_static_drift():
    """Karpenter hashes the whole ``kubelet`` block: a change to any field that reaches user
    data rolls the nodes; the hash of a NodeClass without them is what it was before they
    were modelled (so an upgrade does not drift every node)."""
    from joiner.cloudprovider.nodeclass_drift import nodeclass_hash

    base = nodeclass(kubelet="  kubelet: {maxPods: 20}")
    assert nodeclass_hash(base) == "62d124f50b630fa4"  # the value before this change
    for changed in (
        "  kubelet: {maxPods: 20, clusterDNS: [10.0.0.10]}",
        "  kubelet: {maxPods: 20, cpuCFSQuota: false}",
        "  kubelet: {maxPods: 20, imageGCHighThresholdPercent: 90}",
        "  kubelet: {maxPods: 20, evictionMaxPodGracePeriod: 30}",
    ):
        assert nodeclass_hash(nodeclass(kubelet=changed)) != nodeclass_hash(base), changed


def test_raid0_reaches_user_data_for_every_family():
    """``instanceStorePolicy: RAID0`` (Karpenter-AWS ``nodeadm.go``, ``eksbootstrap.go``,
    ``bottlerocket.go``)."""
    nc = replace(nodeclass(kubelet=""), instance_store_policy="RAID0")
    config = yaml.safe_load(mime_parts(user_data(nc, CLUSTER, LABELS))[-1].body)
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    al2 = mime_parts(user_data(replace(nc, ami_family="AL2"), CLUSTER, LABELS))[-1].body
    assert al2.endswith("\\\n--local-disks raid0")
    br = tomllib.loads(user_data(replace(nc, ami_family="Bottlerocket"), CLUSTER, LABELS))
    assert br["settings"]["bootstrap-commands"]["000-mount-instance-storage"] == {
        "commands": [
            ["apiclient", "ephemeral-storage", "init"],
            [
                "apiclient",
                "ephemeral-storage",
                "bind",
                "--dirs",
                "/var/lib/containerd",
                "/var/lib/kubelet",
                "/var/log/pods",
            ],
        ],
        "mode": "always",
        "essential": True,
    }
    plain = yaml.safe_load(mime_parts(user_data(nodeclass(kubelet=""), CLUSTER, LABELS))[-1].body)
    assert "instance" not in plain["spec"]


def test_raid0_makes_the_instance_store_the_ephemeral_storage():
    """Karpenter-AWS ``ephemeralStorage``: with RAID0, a type with an instance store has its
    total (decimal GB) as ephemeral-storage; a type without keeps the root volume's."""
    from joiner.cloudprovider.catalog import Catalog
    from joiner.cloudprovider.instancetype import build_instance_types

    catalog = Catalog.load()
    zones = catalog.zones("us-east-1")

    def storage(policy):
        built = build_instance_types(catalog, "us-east-1", zones, instance_store_policy=policy)
        return {it.name: it.capacity["ephemeral-storage"] for it in built}

    raid0, plain = storage("RAID0"), storage(None)
    assert raid0["m5d.large"] == 75 * 10**9
    assert plain["m5d.large"] == 20 * 2**30
    assert raid0["m5.large"] == plain["m5.large"] == 20 * 2**30


def test_raid0_loads_and_other_policies_are_rejected():
    nc = load_text(
        "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: a}\nspec:\n"
        "  role: R\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
        "  subnetSelectorTerms: [{tags: {a: b}}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
        "  instanceStorePolicy: RAID0\n"
    ).nodeclasses[0]
    assert nc.instance_store_policy == "RAID0"
    with pytest.raises(InputError):
        load_text(
            "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: a}\nspec:\n"
            "  role: R\n  amiSelectorTerms: [{alias: al2023@latest}]\n"
            "  subnetSelectorTerms: [{tags: {a: b}}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
            "  instanceStorePolicy: RAID5\n"
        )
