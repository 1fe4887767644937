"""A null-valued field of a Kubernetes object reads as the field left out, as the API
server reads it (structural defaulting drops nulls of custom resources; encoding/json
decodes a null into the zero value of a built-in kind's field)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from joiner.api.errors import InputError
from joiner.api.manifests import load_documents, load_text
from joiner.api.manifests.nulls import drop_nulls

CORPUS = Path(__file__).parents[1] / "fuzz" / "corpus" / "manifests"
NULLS = CORPUS / "reads-nulls-as-absent.yaml"


def _without_null_keys(text: str) -> str:
    docs = [drop_nulls(d) for d in yaml.safe_load_all(text)]
    return yaml.safe_dump_all(docs, sort_keys=False)


def test_drop_nulls_removes_null_keys_at_every_depth() -> None:
    doc = {"a": None, "b": {"c": None, "d": [{"e": None, "f": 1}, None]}, "g": 0}
    assert drop_nulls(doc) == {"b": {"d": [{"f": 1}, None]}, "g": 0}


def test_nulls_load_as_if_the_keys_were_left_out() -> None:
    text = NULLS.read_text()
    with_nulls = load_text(text, "nulls.yaml")
    without = load_text(_without_null_keys(text), "nulls.yaml")
    (pool,) = with_nulls.nodepools
    assert pool.taints == () or not pool.taints
    assert [w.replicas for w in with_nulls.workloads] == [1]  # replicas: null defaults to 1
    assert with_nulls.nodepools == without.nodepools
    assert with_nulls.nodeclasses == without.nodeclasses
    assert with_nulls.workloads == without.workloads


def test_a_helm_rendered_null_taints_list_reads(tmp_path: Path) -> None:
    """The tester's NodePool: ``taints: null`` was refused as "must be a list"."""
    doc = yaml.safe_load(NULLS.read_text().split("\n---\n")[0])
    assert doc["spec"]["template"]["spec"]["taints"] is None
    ms = load_text(NULLS.read_text(), "nulls.yaml")
    assert [p.name for p in ms.nodepools] == ["default"]


def test_documents_from_an_api_server_drop_nulls_too() -> None:
    docs = list(yaml.safe_load_all(NULLS.read_text()))
    assert (
        load_documents(docs, "kube:test").workloads
        == load_text(NULLS.read_text(), "kube:test").workloads
    )


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("karpenter.sh/v1", "NodePool"), ("apps/v1", "Deployment")],
)
def test_a_null_name_is_a_missing_name(api_version: str, kind: str) -> None:
    text = f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: null}}\nspec: {{}}\n"
    with pytest.raises(InputError) as info:
        load_text(text, "n.yaml")
    assert info.value.field == "metadata.name"
    assert "required" in info.value.detail
    assert "leave the key out" not in str(info.value)


def test_convert_reads_nulls_as_absent_and_writes_none() -> None:
    """``joiner convert`` works on the raw documents too: they are read without nulls."""
    from joiner.api.manifests.to_v1 import convert_files

    out = convert_files([NULLS])
    assert [d["kind"] for d in out.documents] == ["NodePool", "EC2NodeClass", "Deployment"]
    text = yaml.safe_dump_all(out.documents)
    assert "null" not in text


def test_an_import_dump_reads_nulls_as_absent() -> None:
    """``joiner import`` keeps the raw documents of a dump beside the loaded ones."""
    from joiner.history.translate import objects_from_files

    objs = objects_from_files([NULLS])
    assert [w.name for w in objs.manifests.workloads] == ["web"]
    assert all(drop_nulls(d) == d for d in objs.documents)
    assert "tolerations" not in objs.documents[2]["spec"]["template"]["spec"]


def test_no_vendored_schema_marks_a_field_nullable() -> None:
    """``drop_nulls`` drops every null because no vendored schema says ``nullable: true``;
    a schema refresh that adds one must make the loader keep that field's null."""
    import gzip

    schemas = Path(__file__).parents[2] / "joiner" / "api" / "schemas"
    texts = [p.read_text() for p in schemas.glob("*.yaml")]
    texts += [gzip.decompress(p.read_bytes()).decode() for p in schemas.glob("*.json.gz")]
    assert len(texts) >= 6
    assert not [t for t in texts if "nullable" in t]
