"""The OpenAPI validator (``joiner.api.openapi``): each keyword on a small schema, the
vendored schemas themselves, and no refusal of a valid manifest Joiner ships or reads."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from joiner.api import k8snames, openapi
from joiner.api.errors import InputError
from joiner.api.manifests import load_files, load_text
from joiner.api.manifests.yamlio import read_documents
from joiner.api.openapi import Schema, problem

ROOT = Path(__file__).parents[2]
SCHEMAS = ROOT / "joiner" / "api" / "schemas"


def _at(value: Any, schema: dict[str, Any], **defs: Any) -> str | None:
    """The problem of ``{"v": value}`` under ``{"v": schema}``, as ``path: message``."""
    root = {"type": "object", "properties": {"v": schema}}
    found = problem({"v": value}, Schema(root, defs))
    return None if found is None else f"{found.path}: {found.message}"


@pytest.mark.parametrize(
    ("kind", "good", "bad", "says"),
    [
        ("integer", 3, "3", "must be a whole number, not a string '3'"),
        ("integer", 3.0, 1.5, "must be a whole number, not float 1.5"),
        ("integer", 0, True, "must be a whole number"),
        ("number", 1.5, "1.5", "must be a number"),
        ("string", "x", 1, "must be a string, not int 1"),
        ("boolean", False, "yes", "must be true or false"),
        ("array", [], {}, "must be a list"),
        ("object", {}, [], "must be a mapping"),
    ],
)
def test_type(kind, good, bad, says):
    assert _at(good, {"type": kind}) is None
    found = _at(bad, {"type": kind})
    assert found is not None and found.startswith(f"v: {says}"), found


def test_int_or_string():
    schema = {
        "x-kubernetes-int-or-string": True,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
    }
    assert _at(3, schema) is None
    assert _at("30%", schema) is None
    assert "must be a whole number or a string, not float 1.5" in str(_at(1.5, schema))


def test_one_of_reports_every_branch_type():
    schema = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    assert _at(1.5, schema) is None
    assert _at([1], schema) == "v: must be a string or a number, not a list [1]"


@pytest.mark.parametrize(
    ("fmt", "low", "high"), [("int32", -(2**31), 2**31 - 1), ("int64", -(2**63), 2**63 - 1)]
)
def test_integer_formats(fmt, low, high):
    schema = {"type": "integer", "format": fmt}
    assert _at(low, schema) is None
    assert _at(high, schema) is None
    assert f"{high + 1} is outside the range of an {fmt}" in str(_at(high + 1, schema))
    assert f"{low - 1} is outside the range of an {fmt}" in str(_at(low - 1, schema))


def test_minimum_and_maximum():
    schema = {"type": "integer", "minimum": 0, "maximum": 100}
    assert _at(0, schema) is None
    assert _at(100, schema) is None
    assert _at(-1, schema) == "v: -1 is less than the minimum 0"
    assert _at(101, schema) == "v: 101 is more than the maximum 100"


def test_exclusive_minimum_and_maximum():
    schema = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    assert _at(0.5, schema) is None
    assert _at(0, schema) == "v: 0 is not more than the exclusive minimum 0"
    schema = {"type": "number", "maximum": 1, "exclusiveMaximum": True}
    assert _at(0.5, schema) is None
    assert _at(1, schema) == "v: 1 is not less than the exclusive maximum 1"


def test_enum():
    schema = {"type": "string", "enum": ["a", "b"]}
    assert _at("a", schema) is None
    assert _at("c", schema) == "v: 'c' is not one of the allowed values ('a', 'b')"


def test_pattern_is_searched_as_go_does():
    schema = {"type": "string", "pattern": "^[a-z]+$"}
    assert _at("abc", schema) is None
    assert _at("aBc", schema) == "v: 'aBc' does not match the pattern ^[a-z]+$"
    assert _at("xx-abc", {"type": "string", "pattern": "abc"}) is None  # unanchored


def test_string_lengths():
    schema = {"type": "string", "minLength": 2, "maxLength": 3}
    assert _at("ab", schema) is None
    assert _at("a", schema) == "v: has 1 characters, fewer than the minimum 2"
    assert _at("abcd", schema) == "v: has 4 characters, more than the maximum 3"


def test_item_counts_and_items():
    schema = {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}}
    assert _at([1], schema) is None
    assert _at([], schema) == "v: has 0 items, fewer than the minimum 1"
    assert _at([1, 2, 3], schema) == "v: has 3 items, more than the maximum 2"
    assert _at([1, "x"], schema) == "v[1]: must be a whole number, not a string 'x'"


def test_property_counts_and_map_values():
    schema = {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}
    assert _at({"a": "b"}, schema) is None
    assert _at({"a": "b", "c": "d"}, schema) == "v: has 2 fields, more than the maximum 1"
    assert _at({"a": 1}, schema) == "v.a: must be a string, not int 1"
    assert (
        _at({}, {"type": "object", "minProperties": 1})
        == "v: has 0 fields, fewer than the minimum 1"
    )


def test_required_and_null_as_absent():
    schema = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    assert _at({"name": "x"}, schema) is None
    assert _at({}, schema) == "v.name: required field is missing"
    assert _at({"name": None}, schema) == "v.name: required field is missing"
    assert _at(None, {"type": "string"}) is None  # a null value is dropped, not checked
    loose = Schema({"type": "object", "properties": {"v": schema}}, {}, required=False)
    assert problem({"v": {}}, loose) is None


def test_refs_and_all_of():
    defs = {"Small": {"type": "integer", "maximum": 5}}
    schema = {"allOf": [{"$ref": "#/components/schemas/Small"}]}
    assert _at(5, schema, **defs) is None
    assert _at(6, schema, **defs) == "v: 6 is more than the maximum 5"


def test_status_is_not_checked():
    root = {"type": "object", "properties": {"status": {"type": "string"}}}
    assert problem({"status": 1}, Schema(root, {})) is None


def test_cel_rules_are_not_evaluated_and_do_not_crash():
    schema = {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'a'"}]}
    assert _at("b", schema) is None


def test_every_vendored_pattern_compiles():
    patterns: list[str] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                patterns.append(node["pattern"])
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    for name in openapi.CRD_FILES:
        collect(yaml.safe_load((SCHEMAS / name).read_text()))
    collect(openapi._core_schemas())
    assert len(patterns) > 20
    for pattern in patterns:
        re.compile(pattern)


def test_kinds_with_a_schema():
    kinds = set(openapi.vendored_kinds())
    for expected in [
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.sh/v1", "NodeClaim"),
        ("karpenter.sh/v1alpha1", "NodeOverlay"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        ("karpenter.kwok.sh/v1alpha1", "KWOKNodeClass"),
        ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("policy/v1", "PodDisruptionBudget"),
        ("v1", "Node"),
        ("v1", "PersistentVolume"),
        ("v1", "PersistentVolumeClaim"),
        ("storage.k8s.io/v1", "StorageClass"),
    ]:
        assert expected in kinds, expected
    assert openapi.schema_for("karpenter.sh/v1beta1", "NodePool") is None


def test_recorded_versions_are_the_test_stacks():
    """The vendored schemas are of the Karpenter the differential tests build
    (``tools/kube-stack/karpenter/go.mod``) and the Kubernetes the stack runs
    (``tools/kube-stack/versions.env``)."""
    go_mod = (ROOT / "tools" / "kube-stack" / "karpenter" / "go.mod").read_text()
    karpenter = re.search(r"^require sigs\.k8s\.io/karpenter (\S+)$", go_mod, re.M)
    env = (ROOT / "tools" / "kube-stack" / "versions.env").read_text()
    kube = re.search(r"^KUBE_VERSION=(\S+)$", env, re.M)
    assert karpenter is not None and kube is not None
    sources = json.loads((SCHEMAS / "sources.json").read_text())
    files = {s["file"] for s in sources}
    assert files == {*openapi.CRD_FILES, openapi.CORE_FILE}
    for source in sources:
        want = kube.group(1) if source["module"] == "k8s.io/kubernetes" else karpenter.group(1)
        assert source["version"] == want, source
        assert (SCHEMAS / source["file"]).is_file()
        assert f"`{source['file']}`" in (SCHEMAS / "SOURCES.md").read_text()
    assert (SCHEMAS / openapi.CORE_FILE).stat().st_size < 1_000_000


def test_a_schema_error_names_file_object_field_rule_and_limit():
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  minReadySeconds: 2147483648
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"""
    with pytest.raises(InputError) as info:
        load_text(text, "web.yaml")
    assert str(info.value) == (
        "web.yaml: Deployment/web: field spec.minReadySeconds: 2147483648 is outside the range "
        "of an int32 (-2147483648 to 2147483647)"
    )


def test_when_the_model_refuses_too_its_words_are_shown():
    """A NodePool's expireAfter breaks the CRD's pattern; the model says what to write."""
    text = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      expireAfter: 30 days
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: c}
      requirements: []
---
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: c}
"""
    with pytest.raises(InputError) as info:
        load_text(text, "np.yaml")
    assert info.value.field == "spec.template.spec.expireAfter"
    assert "is not a Go duration" in info.value.detail
    assert "pattern" not in info.value.detail


def _manifest_files() -> list[Path]:
    roots = [ROOT / "examples", ROOT / "tests" / "fixtures", ROOT.parent / "shared" / "examples"]
    files = [p for r in roots if r.is_dir() for p in sorted(r.rglob("*.yaml"))]
    return [p for p in files if "refused" not in p.name]


@pytest.mark.parametrize("path", _manifest_files(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_no_valid_manifest_is_refused(path):
    """Every object of every example, seed and fixture manifest passes the schema and the
    name rules (a false refusal would stop a user's valid cluster from loading)."""
    for doc in read_documents(path):
        if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
            continue
        docs = doc.get("items") if doc.get("kind") == "List" else [doc]
        for item in docs or []:
            api_version, kind = str(item.get("apiVersion")), str(item.get("kind"))
            schema = openapi.schema_for(api_version, kind)
            if schema is not None:
                assert problem(item, schema) is None, (path, kind)
            if not api_version.startswith("joiner.dev/"):
                k8snames.check_object(item, kind, str(path), kind)


def _scenarios() -> list[Path]:
    return sorted((ROOT / "examples").glob("*/scenario.yaml"))


@pytest.mark.parametrize("path", _scenarios(), ids=lambda p: p.parent.name)
def test_every_example_loads(path):
    """The whole loader (schema, names, models, cross-references) over each example."""
    from joiner.sim.scenario import load_scenario

    assert load_scenario(path).manifests.nodepools


SEED = ROOT.parent / "shared" / "examples" / "seed"


@pytest.mark.skipif(not SEED.is_dir(), reason="the shared seed set is not beside the checkout")
def test_the_seed_set_loads():
    manifests = load_files([SEED / "awsnodetemplate.yaml", SEED / "provisioner.yaml"])
    assert [p.name for p in manifests.nodepools] == ["my-provisioner"]


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain")
def test_the_refresh_tool_writes_exactly_the_vendored_files(tmp_path):
    """``tools/refresh_schemas.py`` run again gives the same bytes (nothing edited by hand,
    and its output is deterministic)."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "refresh_schemas.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    written = sorted(p.name for p in tmp_path.iterdir())
    vendored = sorted(
        p.name for p in SCHEMAS.iterdir() if p.name not in ("__init__.py", "__pycache__")
    )
    assert written == vendored
    for name in written:
        assert (tmp_path / name).read_bytes() == (SCHEMAS / name).read_bytes(), name


def test_date_time_format():
    # metav1.Time: an RFC 3339 string (Go time.RFC3339), as the API server reads one.
    schema = {"type": "string", "format": "date-time"}
    for good in ("2025-01-07T21:00:00Z", "2025-01-07T21:00:00.123+05:30"):
        assert _at(good, schema) is None
    for bad in ("soon", "", "\x07", "2025-01-07", "2025-01-07 21:00:00Z", "2025-13-01T00:00:00Z"):
        assert _at(bad, schema) is not None, bad
    assert "out of range" in str(_at("2025-01-07T21:00:00+25:00", schema))
