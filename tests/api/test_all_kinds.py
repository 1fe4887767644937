"""Every kind and version users carry, cluster dumps, and the legacy annotations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.api.manifests import load_files, load_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_kubectl_dump_loads_with_warnings_only_for_skipped_kinds():
    m = load_files([FIXTURES / "cluster-dump.yaml"])
    assert [w.split(": ", 1)[1] for w in m.warnings] == [
        "2 objects of kinds Joiner does not model (ConfigMap 1, Service 1) are skipped: "
        "Service/api, ConfigMap/api-config",
    ]
    (node,) = m.nodes
    assert node.nodepool == "general"
    assert dict(node.allocatable)["cpu"] == 1930
    assert [w.key for w in m.workloads] == ["shop/api"]
    assert [w.name for w in m.owned_workloads] == ["api-7d9f8c6b5"]
    (pod,) = m.pods
    assert pod.node_name == "ip-10-0-1-23.ec2.internal"
    assert pod.owner == "ReplicaSet/api-7d9f8c6b5"
    (pdb,) = m.pdbs
    assert pdb.min_available == 1
    assert m.daemonsets[0].template.requests["cpu"] == 50


def test_the_same_dump_as_json_loads_identically(tmp_path):
    docs = list(yaml.safe_load_all((FIXTURES / "cluster-dump.yaml").read_text()))
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(docs[0]))
    m = load_files([path])
    assert len(m.nodes) == 1 and len(m.workloads) == 1 and len(m.pdbs) == 1


V1BETA1 = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: old}
spec:
  disruption: {consolidationPolicy: WhenUnderutilized, expireAfter: 168h}
  template:
    spec:
      nodeClassRef: {name: old}
      kubelet: {maxPods: 20}
      requirements: [{key: karpenter.k8s.aws/instance-category, operator: In, values: [m]}]
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: old}
spec:
  amiFamily: Bottlerocket
  role: NodeRole
  subnetSelectorTerms: [{tags: {env: prod}}]
  securityGroupSelectorTerms: [{tags: {env: prod}}]
"""


def test_v1beta1_nodepool_and_nodeclass():
    m = load_text(V1BETA1)
    (pool,) = m.nodepools
    assert pool.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert pool.expire_after_s == 168 * 3600
    (nc,) = m.nodeclasses
    # v1 moved kubelet settings to the NodeClass; loading does the same.
    assert nc.kubelet.max_pods == 20
    assert nc.ami_family == "Bottlerocket"


INLINE = """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: inline}
spec:
  provider:
    subnetSelector: {karpenter.sh/discovery: demo}
    securityGroupSelector: {karpenter.sh/discovery: demo}
    tags: {team: a}
  kubeletConfiguration: {maxPods: 50}
"""


def test_inline_provider_becomes_a_nodeclass_named_after_the_provisioner():
    m = load_text(INLINE)
    (pool,) = m.nodepools
    (nc,) = m.nodeclasses
    assert pool.node_class_ref.name == nc.name == "inline"
    assert dict(nc.tags) == {"team": "a"}
    assert nc.kubelet.max_pods == 50
    assert pool.requirements[labels.LEGACY_PROVISIONER_NAME].values == {"inline"}


def test_inline_provider_errors_name_the_provider_field():
    text = INLINE.replace("subnetSelector: {karpenter.sh/discovery: demo}", "subnetSelector: {}")
    with pytest.raises(InputError, match=r"field spec.provider.subnetSelector: selector is empty"):
        load_text(text)


WORKLOADS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, resources: {requests: {cpu: "2", memory: 8Gi}}}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: etl}
spec:
  parallelism: 4
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: etl, resources: {requests: {cpu: "1"}}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: n, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-0, namespace: data}
spec: {storageClassName: gp3, volumeName: pv-1, resources: {requests: {storage: 10Gi}}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  storageClassName: gp3
  capacity: {storage: 10Gi}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [us-east-1a, us-east-1b]}]
---
apiVersion: v1
kind: Namespace
metadata: {name: data}
"""


def test_workload_and_storage_kinds():
    m = load_text(WORKLOADS)
    kinds = {w.kind: w for w in m.workloads}
    assert kinds["StatefulSet"].replicas == 3
    assert kinds["Job"].replicas == 2  # parallelism capped by completions
    assert m.cronjobs[0].schedule == "0 2 * * *"
    assert m.pvcs[0].volume_name == "pv-1"
    assert m.pvs[0].node_affinity[0][labels.ZONE].values == {"us-east-1b"}
    assert m.storageclasses[0].allowed_topologies[0][labels.ZONE].values == {
        "us-east-1a",
        "us-east-1b",
    }
    assert m.namespaces == ["data"]


def test_selector_must_match_template_labels():
    text = WORKLOADS.replace(
        "selector: {matchLabels: {app: db}}", "selector: {matchLabels: {app: x}}"
    )
    with pytest.raises(InputError, match=r"StatefulSet/db: field spec\.selector"):
        load_text(text)
