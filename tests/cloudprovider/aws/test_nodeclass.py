"""EC2NodeClass fields the AWS provider uses, from manifest to launch template content."""

from __future__ import annotations

import base64
import tomllib
from dataclasses import replace

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests.loader import load_text
from joiner.api.objects import AMISelectorTerm, BlockDevice, MetadataOptions
from joiner.api.quantity import GIB
from joiner.cloudprovider.aws.launchtemplates import launch_template_name
from joiner.cloudprovider.aws.nodeclass import (
    AMI,
    ClusterInfo,
    ResolvedNodeClass,
    launch_template_data,
    user_data,
)
from joiner.cloudprovider.types import Subnet

NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: bottlerocket@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{id: sg-1}]
  blockDeviceMappings:
    - deviceName: /dev/xvdb
      rootVolume: true
      ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 4000, encrypted: true}
  metadataOptions: {httpPutResponseHopLimit: 2, httpTokens: required}
  detailedMonitoring: true
  userData: |
    [settings.kernel]
    lockdown = "integrity"
"""

CLUSTER = ClusterInfo("demo", "https://api.demo", "Q0E=", "10.100.0.0/16", "1.31")
RESOLVED = ResolvedNodeClass(
    name="default",
    subnets=(Subnet("subnet-a", "us-east-1a", "use1-az6"),),
    free_ips=(("subnet-a", 100),),
    security_group_ids=("sg-1",),
    amis=(AMI("ami-br", "amd64"),),
    resolved_at_s=0.0,
)
LABELS = (("karpenter.sh/nodepool", "general"),)


def test_ec2nodeclass_fields_load():
    nc = load_text(NODECLASS).nodeclasses[0]
    assert nc.ami_family == "Bottlerocket"
    assert nc.ami_selector_terms == (AMISelectorTerm(alias="bottlerocket@latest"),)
    assert nc.block_device_mappings == (
        BlockDevice(
            "/dev/xvdb",
            root_volume=True,
            volume_size_bytes=100 * GIB,
            volume_type="gp3",
            iops=4000,
            encrypted=True,
        ),
    )
    assert nc.metadata_options == MetadataOptions(http_put_response_hop_limit=2)
    assert nc.detailed_monitoring is True


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ("{httpTokens: maybe}", "spec.metadataOptions.httpTokens"),
        ("{httpPutResponseHopLimit: 0}", "spec.metadataOptions.httpPutResponseHopLimit"),
        ("{httpTokenz: required}", "spec.metadataOptions.httpTokenz"),
    ],
)
def test_bad_metadata_options_are_located(options, field):
    text = NODECLASS.replace(
        "metadataOptions: {httpPutResponseHopLimit: 2, httpTokens: required}",
        f"metadataOptions: {options}",
    )
    with pytest.raises(InputError) as err:
        load_text(text)
    assert err.value.field == field


def test_launch_template_for_bottlerocket():
    nc = load_text(NODECLASS).nodeclasses[0]
    data = launch_template_data(nc, RESOLVED, RESOLVED.amis[0], CLUSTER, LABELS)
    assert data["ImageId"] == "ami-br"
    assert data["IamInstanceProfile"] == {"Name": "KarpenterNodeRole"}
    assert data["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvdb",
            "Ebs": {"VolumeSize": 100, "VolumeType": "gp3", "Iops": 4000, "Encrypted": True},
        }
    ]
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpProtocolIpv6": "disabled",
        "HttpPutResponseHopLimit": 2,
        "HttpTokens": "required",
    }
    assert data["Monitoring"] == {"Enabled": True}
    settings = tomllib.loads(base64.b64decode(data["UserData"]).decode())["settings"]
    assert settings["kernel"] == {"lockdown": "integrity"}  # the user's settings are kept
    k8s = settings["kubernetes"]
    assert k8s["cluster-name"] == "demo" and k8s["api-server"] == "https://api.demo"
    assert k8s["node-labels"] == {"karpenter.sh/nodepool": "general"}
    assert k8s["node-taints"] == {"karpenter.sh/unregistered": [":NoExecute"]}


def test_default_block_devices_and_user_data_per_family():
    nc = replace(
        load_text(NODECLASS).nodeclasses[0],
        ami_family="AL2023",
        block_device_mappings=(),
        user_data="#!/bin/bash\necho hi\n",
    )
    data = launch_template_data(nc, RESOLVED, RESOLVED.amis[0], CLUSTER, LABELS)
    assert data["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True},
        }
    ]
    mime = user_data(nc, CLUSTER, LABELS)
    # The NodeClass's script runs first, then nodeadm's NodeConfig.
    assert mime.index("text/x-shellscript") < mime.index("application/node.eks.aws")
    assert "apiServerEndpoint: https://api.demo" in mime and "cidr: 10.100.0.0/16" in mime
    al2 = user_data(replace(nc, ami_family="AL2"), CLUSTER, LABELS)
    assert "/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://api.demo'" in al2
    assert user_data(replace(nc, ami_family="Custom"), CLUSTER, LABELS) == "#!/bin/bash\necho hi\n"
    windows = launch_template_data(
        replace(nc, ami_family="Windows2022"), RESOLVED, RESOLVED.amis[0], CLUSTER, LABELS
    )
    assert windows["BlockDeviceMappings"][0]["DeviceName"] == "/dev/sda1"


def test_launch_template_name_is_a_content_hash():
    nc = load_text(NODECLASS).nodeclasses[0]
    a = launch_template_data(nc, RESOLVED, RESOLVED.amis[0], CLUSTER, LABELS)
    b = launch_template_data(nc, RESOLVED, RESOLVED.amis[0], CLUSTER, LABELS)
    c = launch_template_data(
        nc, RESOLVED, RESOLVED.amis[0], CLUSTER, (("karpenter.sh/nodepool", "x"),)
    )
    assert launch_template_name(a) == launch_template_name(b)
    assert launch_template_name(a) != launch_template_name(c)
    assert launch_template_name(a).startswith("joiner.dev/") and len(launch_template_name(a)) == 43
