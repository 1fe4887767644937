"""Manifest loading: legacy defaults and semantics, v1 kinds, and bad input naming its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.api.manifests import load_files, load_text
from tests.manifests import EC2NODECLASS

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"

NODECLASS_V1 = "\n" + EC2NODECLASS

TEMPLATE = """
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: default}
spec:
  subnetSelector: {aws-ids: "subnet-1,subnet-2"}
  securityGroupSelector: {karpenter.sh/discovery: demo}
"""


def provisioner(spec: str) -> str:
    return f"""
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {{name: p}}
spec:
  providerRef: {{name: default}}
{spec}
---
{TEMPLATE}
"""


def test_seed_manifests_load_with_legacy_defaults():
    m = load_files([SEED / "provisioner.yaml", SEED / "awsnodetemplate.yaml"])
    (pool,) = m.nodepools
    reqs = pool.requirements
    assert reqs[labels.ARCH].values == {"amd64"}
    assert reqs[labels.OS].values == {"linux"}
    # The user set capacity type and instance type: those defaults are not applied.
    assert reqs[labels.CAPACITY_TYPE].values == {"spot", "on-demand"}
    assert labels.INSTANCE_CATEGORY not in reqs and labels.INSTANCE_GENERATION not in reqs
    assert pool.defaulted == ("kubernetes.io/os In [linux]", "kubernetes.io/arch In [amd64]")
    assert pool.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert pool.expire_after_s is None  # v1alpha5 had no expiry unless ttlSecondsUntilExpired
    (nc,) = m.nodeclasses
    assert [t.id for t in nc.subnet_selector_terms] == ["subnet-123455", "subnet-123456"]
    assert [t.id for t in nc.security_group_selector_terms] == ["sg-123456", "sg-123455"]
    assert nc.ami_family == "AL2"
    assert nc.root_volume_bytes == 100 * 1024**3
    assert dict(nc.tags) == {"Name": "my-node"}


def test_provisioner_without_requirements_gets_every_default():
    (pool,) = load_text(provisioner("")).nodepools
    reqs = pool.requirements
    assert reqs[labels.CAPACITY_TYPE].values == {"on-demand"}
    assert reqs[labels.INSTANCE_CATEGORY].values == {"c", "m", "r"}
    gen = reqs[labels.INSTANCE_GENERATION]
    assert not gen.has("2") and gen.has("3")
    assert reqs[labels.ARCH].values == {"amd64"} and reqs[labels.OS].values == {"linux"}


@pytest.mark.parametrize(
    "key",
    [labels.INSTANCE_FAMILY, labels.INSTANCE_CATEGORY, labels.INSTANCE_GENERATION],
)
def test_any_instance_shape_requirement_suppresses_category_default(key):
    value = "3" if key == labels.INSTANCE_GENERATION else "m"
    op = "Gt" if key == labels.INSTANCE_GENERATION else "In"
    spec = f"  requirements:\n    - {{key: {key}, operator: {op}, values: ['{value}']}}"
    (pool,) = load_text(provisioner(spec)).nodepools
    assert (labels.INSTANCE_CATEGORY in pool.requirements) == (key == labels.INSTANCE_CATEGORY)


def test_user_arch_is_kept_and_beta_alias_normalised():
    spec = "  requirements:\n    - {key: beta.kubernetes.io/arch, operator: In, values: [arm64]}"
    (pool,) = load_text(provisioner(spec)).nodepools
    assert pool.requirements[labels.ARCH].values == {"arm64"}


def test_ttl_seconds_after_empty_and_until_expired():
    (pool,) = load_text(
        provisioner("  ttlSecondsAfterEmpty: 30\n  ttlSecondsUntilExpired: 3600")
    ).nodepools
    assert pool.consolidation_policy == "WhenEmpty"
    assert pool.consolidate_after_s == 30.0
    assert pool.expire_after_s == 3600.0


def test_consolidation_and_ttl_after_empty_are_exclusive():
    with pytest.raises(InputError, match="mutually exclusive"):
        load_text(provisioner("  consolidation: {enabled: true}\n  ttlSecondsAfterEmpty: 30"))


def test_v1_nodepool_and_ec2nodeclass():
    text = f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: general}}
spec:
  weight: 10
  limits: {{cpu: "100", memory: 400Gi}}
  disruption: {{consolidateAfter: Never}}
  template:
    metadata: {{labels: {{team: a}}}}
    spec:
      expireAfter: 720h
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      taints: [{{key: dedicated, value: a, effect: NoSchedule}}]
      requirements:
        - {{key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["5"]}}
---
{NODECLASS_V1}
"""
    m = load_text(text)
    (pool,) = m.nodepools
    assert pool.weight == 10
    assert dict(pool.limits) == {"cpu": 100_000, "memory": 400 * 1024**3}
    assert pool.consolidate_after_s is None
    assert pool.expire_after_s == 720 * 3600
    assert pool.requirements["team"].values == {"a"}
    gen = pool.requirements[labels.INSTANCE_GENERATION]
    assert gen.has("5") and not gen.has("4")
    assert m.nodeclasses[0].ami_family == "AL2023"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [1, 2\n", "line 2, column 1"),
        (
            "apiVersion: karpenter.sh/v1beta2\nkind: NodePool\nmetadata: {name: s}\n",
            "NodePool/s: field apiVersion: unsupported apiVersion 'karpenter.sh/v1beta2'",
        ),
        ("kind: Pod\nmetadata: {name: x}\n", "field apiVersion: required field is missing"),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n"
            "    spec:\n      containers: [{name: c, resources: {requests: {cpu: lots}}}]\n",
            "field spec.template.spec.containers[0].resources.requests.cpu: 'lots' is not a",
        ),
        (
            "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\n"
            "spec: {providerRef: {name: missing}}\n",
            "Provisioner/p: field spec.providerRef.name: references AWSNodeTemplate 'missing'",
        ),
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n"
            "  template:\n    spec:\n      expireAfter: 30 days\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n",
            "NodePool/np: field spec.template.spec.expireAfter: '30 days' is not a Go duration",
        ),
        (
            # Go's time.ParseDuration refuses durations past int64 nanoseconds.
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n"
            "  template:\n    spec:\n      expireAfter: 2562048h\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n",
            "NodePool/np: field spec.template.spec.expireAfter: duration '2562048h' is longer "
            "than Go's largest",
        ),
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n"
            "  template:\n    spec: {}\n",
            "NodePool/np: field spec.template.spec.nodeClassRef: required field is missing",
        ),
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n"
            "  template:\n    spec:\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
            "      requirements: [{key: a, operator: Gt, values: [x]}]\n",
            "field spec.template.spec.requirements[0]: operator Gt on 'a' needs exactly one",
        ),
    ],
)
def test_bad_input_names_file_object_and_field(text, expected):
    with pytest.raises(InputError) as err:
        load_text(text, "bad.yaml")
    assert str(err.value).startswith("bad.yaml")
    assert expected in str(err.value)


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_files([tmp_path / "nope.yaml"])


def test_pod_requests_follow_init_container_and_limit_rules():
    text = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers: [{name: init, resources: {requests: {cpu: "3", memory: 1Gi}}}]
  containers:
    - {name: a, resources: {requests: {cpu: 500m, memory: 2Gi}}}
    - {name: b, resources: {limits: {cpu: "1", memory: 1Gi}}}
  overhead: {cpu: 100m}
"""
    (pod,) = load_text(text).pods
    r = pod.template.requests
    # cpu: max(3000 init, 1500 containers) + 100 overhead; memory: max(1Gi, 3Gi).
    assert r == {"cpu": 3100, "memory": 3 * 1024**3, "pods": 1}


def test_unknown_kinds_are_skipped_with_a_warning():
    m = load_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", "dump.yaml")
    assert m.warnings == [
        "dump.yaml: 1 object of kinds Joiner does not model (Service 1) is skipped: Service/s"
    ]


def test_go_s_largest_duration_is_accepted_and_one_hour_more_is_not():
    from joiner.api.durations import parse_seconds

    assert parse_seconds("2562047h47m16.854775807s") == pytest.approx(9223372036.854776)
    assert parse_seconds("9223372036854775807ns") == pytest.approx(9223372036.854776)
    # One nanosecond more, however written (durationpy rounds to microseconds, and a float
    # cannot tell them apart at this size): the breaker's inputs.
    for text in (
        "2562048h",
        "2562047h47m16.854775808s",
        "2562047h47m16.854776s",
        "9223372036854775808ns",
        "9223372036854776us",
    ):
        with pytest.raises(InputError, match="longer than Go's largest"):
            parse_seconds(text)


@pytest.mark.parametrize(
    ("doc", "field", "says"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {'bad key': v}}\n"
            "spec: {containers: [{name: c, image: i}]}\n",
            "metadata.labels.bad key",
            "label key 'bad key' is not a qualified name",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {app: 'a b'}}\n"
            "spec: {containers: [{name: c, image: i}]}\n",
            "metadata.labels.app",
            "label value 'a b' is not valid",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
            "spec: {nodeSelector: {a/b/c: x}, containers: [{name: c, image: i}]}\n",
            "spec.nodeSelector.a/b/c",
            "has more than one '/'",
        ),
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n"
            "  template:\n    spec:\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
            "      requirements: [{key: Bad Key, operator: Exists}]\n",
            "spec.template.spec.requirements[0].key",
            "label key 'Bad Key' is not a qualified name",
        ),
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n"
            "  template:\n    spec:\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
            "      taints: [{key: 'Example.com/x', effect: NoSchedule}]\n",
            "spec.template.spec.taints[0].key",
            "is not a DNS subdomain",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
            "spec: {tolerations: [{key: Bad Key, operator: Exists}], "
            "containers: [{name: c, image: i}]}\n",
            "spec.tolerations[0].key",
            "label key 'Bad Key' is not a qualified name",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {a: b}}\n"
            "spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: a/b/c, "
            "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: "
            "[{key: a, operator: In, values: [b]}]}}], containers: [{name: c, image: i}]}\n",
            "spec.topologySpreadConstraints[0].topologyKey",
            "has more than one '/'",
        ),
        (
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
            "spec: {maxUnavailable: 1, selector: {matchExpressions: "
            "[{key: app, operator: In, values: [bad value]}]}}\n",
            "spec.selector.matchExpressions[0].values[0]",
            "label value 'bad value' is not valid",
        ),
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n"
            "  template:\n    spec:\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
            "      taints: [{key: example.com/t, value: bad value, effect: NoSchedule}]\n",
            "spec.template.spec.taints[0].value",
            "label value 'bad value' is not valid",
        ),
    ],
)
def test_label_keys_and_values_are_validated_as_the_api_server_does(doc, field, says):
    """A label key or value the API server refuses (ValidateLabelName, IsValidLabelValue)
    was accepted and then matched nothing; it is an input error naming the field."""
    with pytest.raises(InputError) as err:
        load_text(doc, "bad.yaml")
    assert f"field {field}: " in str(err.value)
    assert says in str(err.value)


def test_valid_label_keys_and_values_are_accepted():
    load_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: {app: web, "
        "example.com/team: a-b_c.d, k8s.io/empty: ''}\n"
        "spec: {nodeSelector: {topology.kubernetes.io/zone: us-east-1a}, "
        "containers: [{name: c, image: i}]}\n",
        "ok.yaml",
    )


def test_plain_scalars_are_read_as_kubectl_reads_them():
    """go-yaml v2 (kubectl, sigs.k8s.io/yaml) resolves no timestamps and no base-60 numbers:
    an unquoted ``2024-01-01`` label or ``1:20`` annotation is a string the API server takes,
    which PyYAML's YAML 1.1 read as a date and as 80 (the breaker's input)."""
    m = load_text(
        "apiVersion: apps/v1\nkind: Deployment\n"
        "metadata: {name: d, namespace: default, annotations: {window: 1:20}}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: d}}\n  template:\n"
        "    metadata: {labels: {app: d, release: 2024-01-01}}\n"
        "    spec: {containers: [{name: c, image: x}]}\n",
        "ann.yaml",
    )
    (w,) = m.workloads
    assert dict(w.template.labels)["release"] == "2024-01-01"
    from joiner.api.manifests.yamlio import parse_documents

    (doc,) = parse_documents(
        "a: 1:20\nb: 2024-01-01T00:00:00Z\nc: 010\nd: yes\ne: 1_000\nf: 1.5e+3\n", "x.yaml"
    )
    # Only the timestamp and base-60 rules differ; the rest is YAML 1.1 in go-yaml v2 too.
    assert doc == {
        "a": "1:20",
        "b": "2024-01-01T00:00:00Z",
        "c": 8,
        "d": True,
        "e": 1000,
        "f": 1500.0,
    }
