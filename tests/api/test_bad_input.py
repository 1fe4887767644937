"""Bad input: every class exits through ``InputError`` naming file, object and field.

The fuzz test mutates the seed manifests at random (structure and text) and requires that
each mutation either loads or fails with ``InputError``: never another exception.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from joiner.api.errors import InputError
from joiner.api.manifests import load_text

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
SEED_TEXT = "\n---\n".join(
    (SEED / f).read_text() for f in ("provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml")
)
SEED_DOCS = list(yaml.safe_load_all(SEED_TEXT))

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: np}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [REQ]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: R
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{id: sg-1}]
"""


def _pool(req: str) -> str:
    return NODEPOOL.replace("REQ", req)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"apiVersion": "v1", "kind": "Pod",\n "metadata": {"name": "x"},,}', "line 2, column"),
        (
            _pool("{key: a, operator: In, values: [x]}").replace("role: R", "role: [R]"),
            "EC2NodeClass/default: field spec.role: must be a string, not a list",
        ),
        (
            _pool("{key: a, operator: Within, values: [x]}"),
            "NodePool/np: field spec.template.spec.requirements[0].operator: must be one of",
        ),
        (
            _pool("{key: a, operator: In}"),
            "field spec.template.spec.requirements[0].values: operator In needs at least one",
        ),
        (
            _pool("{key: a, operator: Gt, values: ['1.5']}"),
            "operator Gt on 'a' needs exactly one integer value",
        ),
        (
            _pool("{key: a, operator: In, values: [x], minValues: 2}"),
            "field spec.template.spec.requirements[0].minValues: minValues 2 exceeds the 1",
        ),
        (
            _pool("{key: a, operator: In, values: [x]}").replace(
                "name: default}\n", "name: gone}\n", 1
            ),
            "NodePool/np: field spec.template.spec.nodeClassRef.name: references EC2NodeClass",
        ),
        (
            _pool("{key: a, operator: In, values: [x]}")
            + "---\n"
            + _pool("{key: a, operator: Exists}"),
            "field metadata.name: duplicate NodePool name 'np'",
        ),
        (
            _pool("{key: a, operator: In, values: [x]}").replace("[{id: subnet-1}]", "[{}]"),
            "EC2NodeClass/default: field spec.subnetSelectorTerms[0]: term selects nothing",
        ),
        (
            SEED_TEXT.replace("aws-ids: subnet-123455,subnet-123456", "{}"),
            "AWSNodeTemplate/default: field spec.subnetSelector",
        ),
        (
            _pool("{key: a, operator: In, values: [x]}").replace(
                "spec:\n  template:", "spec:\n  limits: {cpu: many}\n  template:"
            ),
            "NodePool/np: field spec.limits.cpu: 'many' is not a Kubernetes quantity",
        ),
    ],
)
def test_each_bad_input_names_its_place(text, expected):
    with pytest.raises(InputError) as err:
        load_text(text, "in.yaml")
    message = str(err.value)
    assert message.startswith("in.yaml"), message
    assert expected in message, message


# -- fuzzing ---------------------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["In", "NotIn", "Gt", "1Gi", "-1", "Never", "720h", "1e400", "0.5Ki", "%"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(docs: list[Any], path: tuple[Any, ...], op: str, value: Any) -> list[Any]:
    docs = copy.deepcopy(docs)
    if not path:
        return docs
    parent: Any = docs
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if op == "delete" and isinstance(parent, dict):
        del parent[last]
    elif op == "delete" and isinstance(parent, list):
        parent.pop(last)
    elif op == "rename" and isinstance(parent, dict):
        parent[str(value)] = parent.pop(last)
    else:
        parent[last] = value
    return docs


ALL_PATHS = [p for p in _paths(SEED_DOCS) if p]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mutations=st.lists(
        st.tuples(
            st.sampled_from(ALL_PATHS),
            st.sampled_from(["delete", "replace", "rename"]),
            _VALUES,
        ),
        min_size=1,
        max_size=3,
    )
)
def test_structural_mutations_load_or_fail_cleanly(mutations):
    docs = SEED_DOCS
    for path, op, value in mutations:
        try:
            docs = _mutate(docs, path, op, value)
        except (KeyError, IndexError, TypeError):
            continue  # the path vanished after an earlier mutation
    text = yaml.safe_dump_all(docs)
    try:
        load_text(text, "fuzz.yaml")
    except InputError as exc:
        assert str(exc).startswith("fuzz.yaml")


@settings(max_examples=300, deadline=None)
@given(
    position=st.integers(min_value=0, max_value=len(SEED_TEXT)),
    cut=st.integers(min_value=0, max_value=20),
    insert=st.text(alphabet=" \t\n:-[]{}'\"#&*!|>%@`,?abc019", max_size=8),
)
def test_text_mutations_load_or_fail_cleanly(position, cut, insert):
    text = SEED_TEXT[:position] + insert + SEED_TEXT[position + cut :]
    with contextlib.suppress(InputError):
        load_text(text, "fuzz.yaml")


POD = """
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec:
  containers:
CONTAINERS
"""


def _pod(*containers: dict[str, str]) -> str:
    rows = ""
    for i, c in enumerate(containers):
        requests = ", ".join(f"{k}: {v!r}" for k, v in c.items())
        rows += f"    - {{name: c{i}, image: x, resources: {{requests: {{{requests}}}}}}}\n"
    return POD.replace("CONTAINERS\n", rows)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 2P cores is 2 * 10^18 millicores, beyond 2^60: the scheduler's 64-bit sums would
        # overflow (the breaker's crash), so it is refused where it is read.
        (
            _pod({"cpu": "2P"}),
            "Pod/big: field spec.containers[0].resources.requests.cpu: quantity '2P' is "
            "implausibly large (at most 2^60 millicores of cpu)",
        ),
        (_pod({"cpu": "1E"}), "quantity '1E' is implausibly large"),
        # Each container's 1Ei is allowed; eight of them add up to 2^63 bytes.
        (
            _pod(*[{"memory": "1Ei"}] * 8),
            "Pod/big: field spec: the memory requests add up to memory=8Ei, implausibly large",
        ),
    ],
)
def test_amounts_beyond_what_the_scheduler_sums_are_refused(text, expected):
    with pytest.raises(InputError) as err:
        load_text(text, "in.yaml")
    assert expected in str(err.value), str(err.value)


def test_messages_write_amounts_in_the_largest_whole_binary_unit():
    from joiner.api.quantity import GIB, MIB, format_resources

    assert format_resources({"memory": 2 * GIB, "cpu": 1500, "pods": 1}) == (
        "cpu=1500m memory=2Gi pods=1"
    )
    assert format_resources({"memory": 1536 * MIB}) == "memory=1536Mi"
    assert format_resources({"ephemeral-storage": 3 << 40}) == "ephemeral-storage=3Ti"
    assert format_resources({"memory": 8 << 60}) == "memory=8Ei"
    assert format_resources({"memory": 1000}) == "memory=1000"  # not whole Mi: bytes
    assert format_resources({"memory": 0}) == "memory=0"


def test_the_largest_plausible_amounts_still_load():
    load_text(_pod({"cpu": "1P", "memory": "1Ei"}), "in.yaml")


def test_a_manifest_file_over_the_cap_says_how_to_split_it(tmp_path: Path) -> None:
    from joiner.api.manifests import load_files
    from joiner.api.manifests.yamlio import MAX_FILE_BYTES

    dump = tmp_path / "dump.yaml"
    with dump.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk written
    with pytest.raises(InputError) as exc:
        load_files([dump])
    assert exc.value.file == str(dump)
    assert "larger than 64 MiB" in str(exc.value)
    assert "one `kubectl get -o yaml` per kind or namespace" in str(exc.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\n"
            "spec:\n  tempalte:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, "
            "kind: EC2NodeClass, name: default}\n      requirements: []\n",
            "field spec.tempalte: unknown field 'tempalte'; did you mean 'template'?",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
            "  selector: {matchLabels: {app: web}}\n  template:\n"
            "    metadata: {labels: {app: web}}\n    spec:\n"
            "      contianers: [{name: web, image: nginx}]\n",
            "unknown field 'contianers'; did you mean 'containers'?",
        ),
    ],
)
def test_a_misspelt_required_field_is_named_with_its_hint(text: str, says: str) -> None:
    """The typo explains the missing field: it is the error shown, with its "did you mean"."""
    with pytest.raises(InputError) as exc:
        load_text(text, "typo.yaml")
    assert says in str(exc.value)


def test_a_misspelt_kind_is_skipped_with_a_hint() -> None:
    out = load_text(
        "apiVersion: apps/v1\nkind: Deployement\nmetadata: {name: web}\nspec: {}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
        "kinds.yaml",
    )
    (warning,) = out.warnings
    assert "Deployement 1 (did you mean 'Deployment'?)" in warning
    assert "Service 1," not in warning and "Service 1)" in warning  # no hint for a real kind


def test_a_bare_array_of_objects_is_told_to_be_a_list():
    """A JSON array of objects (what a script, not kubectl, writes) is named with the List
    kubectl writes instead; an array of anything else stays "not a mapping"."""
    pod = (
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, '
        '"spec": {"containers": [{"name": "c", "image": "i"}]}}'
    )
    with pytest.raises(InputError) as err:
        load_text(f"[{pod}]", "dump.json")
    message = str(err.value)
    assert message.startswith("dump.json") and "document 1" in message, message
    assert '"kind": "List"' in message and "kubectl never writes" in message, message
    with pytest.raises(InputError, match="is not a mapping"):
        load_text("[1, 2]", "numbers.json")
    assert len(load_text(f'{{"apiVersion": "v1", "kind": "List", "items": [{pod}]}}').pods) == 1


def test_an_error_inside_a_nested_list_names_the_item_by_its_path():
    """A List inside a List (kubectl reads both levels): the bad item is named by its path
    from the document, not as the outer List's item (which is a mapping)."""
    text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: [5]\n"
    with pytest.raises(InputError) as err:
        load_text(text, "nested.yaml")
    assert str(err.value).startswith("nested.yaml: document 1 items[0].items[0]: is not a mapping")
    nested = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: 5}\n"
    with pytest.raises(InputError, match=r"document 1 items\[0\] \(kind: List\): field items"):
        load_text(nested, "nested.yaml")


@pytest.mark.parametrize(
    ("item", "where"),
    [
        ("{kind: Pod, metadata: {namespace: d}}", "items[1] (Pod): field apiVersion"),
        ("{apiVersion: v1, kind: Pod, metadata: null, spec: {}}", "items[1] (Pod): field metadata"),
        ("{apiVersion: v1, kind: Pod, metadata: {namespace: d}}", "items[1] (Pod): field metadata"),
        ("{kind: Pod, metadata: {name: p}}", "Pod/p: field apiVersion"),
    ],
)
def test_an_unnamed_bad_object_is_named_by_its_place(item: str, where: str):
    """An object without a name is located by document and item, not by its kind alone
    (a dump holds many Pods); a named one keeps its Kind/name."""
    good = "{apiVersion: v1, kind: Pod, metadata: {name: ok}, spec: {containers: [{name: c}]}}"
    text = f"apiVersion: v1\nkind: List\nitems:\n- {good}\n- {item}\n"
    with pytest.raises(InputError) as err:
        load_text(text, "dump.yaml")
    prefix = "dump.yaml: " + ("" if where.startswith("Pod/") else "document 1 ")
    assert str(err.value).startswith(prefix + where), str(err.value)


def test_a_typed_list_is_read_item_by_item():
    """What the API server answers a list request with (``PodList``: items without their
    own apiVersion and kind) is read as kubectl reads it, not skipped as an unknown kind;
    an item's own apiVersion and kind win, and a bad item is named by its place."""
    pod = '{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}'
    loaded = load_text(f'{{"apiVersion": "v1", "kind": "PodList", "items": [{pod}]}}', "pods.json")
    assert [p.name for p in loaded.pods] == ["p"]
    with pytest.raises(InputError) as err:
        load_text('{"apiVersion": "v1", "kind": "PodList", "items": [{"spec": {}}]}', "pods.json")
    assert "document 1 items[0]" in str(err.value), str(err.value)
