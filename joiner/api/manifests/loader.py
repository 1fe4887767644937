"""Dispatch of manifest documents by ``apiVersion`` and ``kind``, and cross-reference checks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.manifests import convert, legacy
from joiner.api.manifests import models as m
from joiner.api.manifests.yamlio import parse_documents, read_documents


@dataclass
class ManifestSet:
    """Everything loaded from a set of manifest files, in file order."""

    nodepools: list[o.NodePool] = field(default_factory=list)
    nodeclasses: list[o.NodeClass] = field(default_factory=list)
    deployments: list[o.Deployment] = field(default_factory=list)
    daemonsets: list[o.DaemonSet] = field(default_factory=list)
    pods: list[o.StandalonePod] = field(default_factory=list)

    def nodeclass(self, name: str) -> o.NodeClass | None:
        """The NodeClass named ``name``, or None."""
        return next((n for n in self.nodeclasses if n.name == name), None)

    def deployment(self, key: str) -> o.Deployment | None:
        """The Deployment ``namespace/name`` (or ``name`` in ``default``), or None."""
        if "/" not in key:
            key = f"default/{key}"
        return next((d for d in self.deployments if d.key == key), None)


M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], doc: dict[str, Any], file: str, obj: str) -> M:
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in err["loc"]).replace(
            ".[", "["
        )
        msg = err["msg"]
        if err["type"] == "missing":
            msg = "required field is missing"
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise InputError(f"{msg}{more}", file=file, obj=obj, field=loc or None) from exc


_Handler = Callable[[dict[str, Any], str, str, ManifestSet], None]


def _nodepool(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.nodepools.append(convert.nodepool(_validate(m.NodePool, doc, file, obj), file))


def _provisioner(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.nodepools.append(legacy.provisioner(_validate(m.Provisioner, doc, file, obj), file))


def _ec2nodeclass(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.nodeclasses.append(convert.ec2nodeclass(_validate(m.EC2NodeClass, doc, file, obj), file))


def _awsnodetemplate(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.nodeclasses.append(
        legacy.awsnodetemplate(_validate(m.AWSNodeTemplate, doc, file, obj), file)
    )


def _deployment(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.deployments.append(convert.deployment(_validate(m.Deployment, doc, file, obj), file))


def _daemonset(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.daemonsets.append(convert.daemonset(_validate(m.DaemonSet, doc, file, obj), file))


def _pod(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.pods.append(convert.pod(_validate(m.Pod, doc, file, obj), file))


#: (apiVersion, kind) -> handler. More kinds and versions arrive with the ``convert`` issue.
HANDLERS: dict[tuple[str, str], _Handler] = {
    ("karpenter.sh/v1", "NodePool"): _nodepool,
    ("karpenter.sh/v1alpha5", "Provisioner"): _provisioner,
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): _ec2nodeclass,
    ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate"): _awsnodetemplate,
    ("apps/v1", "Deployment"): _deployment,
    ("apps/v1", "DaemonSet"): _daemonset,
    ("v1", "Pod"): _pod,
}


def _describe(doc: dict[str, Any]) -> str:
    kind = doc.get("kind") or "<no kind>"
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{kind}/{name}" if name else str(kind)


def _load_document(doc: Any, file: str, index: int, out: ManifestSet) -> None:
    where = f"document {index + 1}"
    if not isinstance(doc, dict):
        raise InputError(f"{where} is not a mapping (got {type(doc).__name__})", file=file)
    if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            _load_document(item, file, index, out)
        return
    obj = _describe(doc)
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not api_version:
        raise InputError(
            "required field is missing", file=file, obj=obj or where, field="apiVersion"
        )
    if not kind:
        raise InputError("required field is missing", file=file, obj=where, field="kind")
    handler = HANDLERS.get((str(api_version), str(kind)))
    if handler is None:
        known = ", ".join(f"{v} {k}" for v, k in sorted(HANDLERS))
        raise InputError(
            f"unknown kind {kind!r} in apiVersion {api_version!r}; Joiner reads: {known}",
            file=file,
            obj=obj,
            field="kind",
        )
    try:
        handler(doc, file, obj, out)
    except InputError as exc:
        raise exc.located(file=file, obj=obj) from exc


def _check_references(out: ManifestSet) -> None:
    classes = {n.name: n for n in out.nodeclasses}
    seen: dict[str, o.NodePool] = {}
    for pool in out.nodepools:
        if pool.name in seen:
            raise InputError(
                f"duplicate NodePool name (also defined in {seen[pool.name].source.file})",
                file=pool.source.file,
                obj=pool.source.ref,
                field="metadata.name",
            )
        seen[pool.name] = pool
        ref = pool.node_class_ref
        target = classes.get(ref.name)
        field_name = (
            "spec.providerRef.name"
            if pool.source.kind == "Provisioner"
            else "spec.template.spec.nodeClassRef.name"
        )
        if target is None:
            have = ", ".join(sorted(classes)) or "none"
            raise InputError(
                f"references {ref.kind} {ref.name!r}, which is not in the manifests "
                f"(NodeClasses loaded: {have})",
                file=pool.source.file,
                obj=pool.source.ref,
                field=field_name,
            )
        if pool.source.kind == "NodePool" and (
            ref.group != convert.EC2NODECLASS_GROUP or ref.kind != convert.EC2NODECLASS_KIND
        ):
            raise InputError(
                f"nodeClassRef must be group {convert.EC2NODECLASS_GROUP}, kind "
                f"{convert.EC2NODECLASS_KIND} (got {ref.group}/{ref.kind})",
                file=pool.source.file,
                obj=pool.source.ref,
                field="spec.template.spec.nodeClassRef",
            )


def load_text(text: str, name: str = "<text>") -> ManifestSet:
    """Load manifests from a string (tests, stdin)."""
    out = ManifestSet()
    for i, doc in enumerate(parse_documents(text, name)):
        _load_document(doc, name, i, out)
    _check_references(out)
    return out


def load_files(paths: Iterable[Path | str]) -> ManifestSet:
    """Load every document of every file; cross-references are checked across all files.

    Raises:
        InputError: a file is unreadable or malformed, a kind is unknown, a field is missing or
            invalid, or a NodePool/Provisioner references a NodeClass that is not loaded.
    """
    out = ManifestSet()
    for path in paths:
        p = Path(path)
        for i, doc in enumerate(read_documents(p)):
            _load_document(doc, str(p), i, out)
    _check_references(out)
    return out
