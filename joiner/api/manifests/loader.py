"""Dispatch of manifest documents by ``apiVersion`` and ``kind``, and cross-reference checks."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from joiner.api import corevalidation, k8snames, labels, openapi
from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.grouping import grouped, plural
from joiner.api.manifests import (
    capacitybuffer,
    convert,
    hpa,
    input_notes,
    legacy,
    nodeoverlay,
    pods,
    priority,
    proportional,
    runtimeclass,
    unmodelled,
)
from joiner.api.manifests import models as m
from joiner.api.manifests.manifestset import ManifestSet
from joiner.api.manifests.nulls import drop_nulls
from joiner.api.manifests.yamlio import parse_documents, read_documents
from joiner.api.validation import describe, field_path

M = TypeVar("M", bound=BaseModel)


def _first_error(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error to show first: an unknown field close to a missing one in the same mapping
    (``spec.tempalte`` beside a missing ``spec.template``: the typo explains the missing
    field, and its message carries the "did you mean"), else pydantic's first."""
    missing: dict[tuple[Any, ...], list[str]] = {}
    for e in errors:
        if e["type"] == "missing":
            missing.setdefault(tuple(e["loc"][:-1]), []).append(str(e["loc"][-1]))
    for e in errors:
        names = missing.get(tuple(e["loc"][:-1])) if e["type"] == "extra_forbidden" else None
        if names and difflib.get_close_matches(str(e["loc"][-1]), names, n=1):
            return e
    return errors[0]


def _validate(model: type[M], doc: dict[str, Any], file: str, obj: str) -> M:
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors()
        err = _first_error(errors)
        path = field_path(tuple(err["loc"]))
        more = f" (and {plural(len(errors) - 1, 'more problem')})" if len(errors) > 1 else ""
        raise InputError(
            f"{describe(err, model)}{more}", file=file, obj=obj, field=path or None
        ) from exc


_Handler = Callable[[dict[str, Any], str, str, ManifestSet], None]


def _note_spec(kind: str, spec: BaseModel, file: str, obj: str, out: ManifestSet) -> None:
    """Record the Karpenter fields ``spec`` sets that Joiner does not model (``unmodelled``)."""
    for path, why in unmodelled.unmodelled_spec_fields(kind, spec):
        out.unmodelled.setdefault((f"spec.{path}", why), []).append(f"{file}: {obj}")


def _nodepool(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.NodePool, doc, file, obj)
    # A static pool (spec.replicas) is kept; with the StaticCapacity gate off each is
    # warned about (``scheduling.static.gate_warnings``) by the command that knows the gates.
    out.nodepools.append(convert.nodepool(parsed, file))


def _nodeoverlay(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    """``karpenter.sh/v1alpha1`` NodeOverlay (alpha, behind Karpenter's ``NodeOverlay``
    feature gate): kept for ``cloudprovider.overlay``; with the gate off each is warned about
    (``overlays.gate_warnings``) by the command that knows the gates."""
    parsed = _validate(nodeoverlay.NodeOverlayModel, doc, file, obj)
    out.nodeoverlays.append(nodeoverlay.node_overlay(parsed, file, obj))


def _nodepool_v1beta1(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.V1Beta1NodePool, doc, file, obj)
    _note_spec("NodePool/v1beta1", parsed.spec, file, obj, out)
    out.nodepools.append(convert.nodepool_v1beta1(parsed, file))


def _provisioner(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    model = _validate(m.Provisioner, doc, file, obj)
    _note_spec("Provisioner", model.spec, file, obj, out)
    out.nodepools.append(legacy.provisioner(model, file))
    inline = legacy.inline_provider(model, file)
    if inline is not None:
        out.nodeclasses.append(inline)


def _ec2nodeclass(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.EC2NodeClass, doc, file, obj)
    _note_spec("EC2NodeClass/v1", parsed.spec, file, obj, out)
    out.nodeclasses.append(convert.ec2nodeclass(parsed, file))


def _kwoknodeclass(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.KWOKNodeClass, doc, file, obj)
    _note_spec("KWOKNodeClass", parsed.spec, file, obj, out)
    out.nodeclasses.append(convert.kwoknodeclass(parsed, file))


def _ec2nodeclass_v1beta1(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.V1Beta1EC2NodeClass, doc, file, obj)
    _note_spec("EC2NodeClass/v1beta1", parsed.spec, file, obj, out)
    out.nodeclasses.append(convert.ec2nodeclass_v1beta1(parsed, file))


def _awsnodetemplate(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.AWSNodeTemplate, doc, file, obj)
    _note_spec("AWSNodeTemplate", parsed.spec, file, obj, out)
    out.nodeclasses.append(legacy.awsnodetemplate(parsed, file))


def _workload_handler(model: type[m.Deployment | m.ReplicaSet | m.StatefulSet | m.Job]) -> _Handler:
    def handle(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
        parsed = _validate(model, doc, file, obj)
        tmpl = parsed.spec.template
        input_notes.note_unmodelled(
            tmpl.spec, "spec.template.spec", file, obj, out, annotations=tmpl.metadata.annotations
        )
        w = pods.workload(parsed, file)
        cpa = proportional.detect(parsed.spec.template.spec, w, file, obj, out.warnings)
        if cpa is not None:
            out.proportional.append(cpa)
        owners = {r.kind for r in parsed.metadata.ownerReferences}
        if owners & {"Deployment", "CronJob"}:
            out.owned_workloads.append(w)
        else:
            out.workloads.append(w)

    return handle


def _cronjob(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.CronJob, doc, file, obj)
    base = "spec.jobTemplate.spec.template.spec"
    tmpl = parsed.spec.jobTemplate.spec.template
    input_notes.note_unmodelled(
        tmpl.spec, base, file, obj, out, annotations=tmpl.metadata.annotations
    )
    out.cronjobs.append(pods.cronjob(parsed, file))


def _daemonset(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.DaemonSet, doc, file, obj)
    tmpl = parsed.spec.template
    input_notes.note_unmodelled(
        tmpl.spec, "spec.template.spec", file, obj, out, annotations=tmpl.metadata.annotations
    )
    out.daemonsets.append(pods.daemonset(parsed, file))


def _pod(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.Pod, doc, file, obj)
    input_notes.note_unmodelled(
        parsed.spec, "spec", file, obj, out, annotations=parsed.metadata.annotations, template=False
    )
    input_notes.note_pod_scheduled(parsed, file, obj, out)
    out.pods.append(pods.pod(parsed, file))


def _pdb(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.pdbs.append(pods.pdb(_validate(m.PodDisruptionBudget, doc, file, obj), file))


def _node(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(m.Node, doc, file, obj)
    input_notes.note_odd_conditions(parsed, file, obj, out)
    value = parsed.metadata.annotations.get(labels.DO_NOT_DISRUPT)
    if value not in (None, "true", "false"):
        # Karpenter pkg/controllers/state/statenode.go ``ValidateNodeDisruptable``: a
        # Node's annotation counts only when it is "true" (no duration, unlike a pod's).
        out.warnings.append(
            f"{file}: {obj}: field metadata.annotations.{labels.DO_NOT_DISRUPT}: {value!r} "
            'is not "true", the only value Karpenter honours on a Node (a duration is for '
            "pods): the node does not block disruption"
        )
    out.nodes.append(pods.node(parsed, file))


def _pvc(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.pvcs.append(pods.pvc(_validate(m.PersistentVolumeClaim, doc, file, obj), file))


def _pv(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.pvs.append(pods.pv(_validate(m.PersistentVolume, doc, file, obj), file, out.warnings))


def _storageclass(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.storageclasses.append(pods.storageclass(_validate(m.StorageClass, doc, file, obj), file))


#: Why a dump's ``Drifted`` NodeClaim condition has no effect (``_nodeclaim``).
_DRIFTED_WHY = (
    "Joiner works drift out itself from the manifests (the NodePool, its NodeClass and the "
    "Node), as Karpenter's drift check does; a drift they do not show is not replaced"
)


def _nodeclaim(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    """A dump's NodeClaim; a ``Drifted`` condition that is True is recorded as not
    modelled (Joiner recomputes drift, ``controllers.disruption.drift``)."""
    parsed = _validate(m.NodeClaim, doc, file, obj)
    out.nodeclaims.append(convert.nodeclaim(parsed, file))
    kinds = convert.first_by_type((c.type, c.status) for c in parsed.status.conditions)
    if dict(kinds).get("Drifted") == "True":
        key = ("status.conditions[Drifted]", _DRIFTED_WHY)
        out.unmodelled.setdefault(key, []).append(f"{file}: {obj}")


def _namespace(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.namespaces.append(_validate(m.Namespace, doc, file, obj).metadata.name)


def _runtimeclass(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(runtimeclass.RuntimeClassModel, doc, file, obj)
    out.runtimeclasses.append(runtimeclass.runtimeclass(parsed, file))


def _priorityclass(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    if priority.is_builtin(doc):
        return  # the API server's own system-* classes, as a live cluster or a dump lists them
    parsed = _validate(priority.PriorityClassModel, doc, file, obj)
    out.priorityclasses.append(priority.priority_class(parsed, file))


def _capacitybuffer(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(capacitybuffer.CapacityBufferModel, doc, file, obj)
    out.capacitybuffers.append(capacitybuffer.capacity_buffer(parsed, file))


def _hpa(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(hpa.HorizontalPodAutoscalerModel, doc, file, obj)
    out.hpas.append(hpa.horizontal_pod_autoscaler(parsed, file, obj, out.warnings))


def _configmap(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(proportional.ConfigMapModel, doc, file, obj)
    key = f"{parsed.metadata.namespace or 'default'}/{parsed.metadata.name}"
    out.configmaps[key] = (parsed.data or {}, file, obj)


def _hpa_other(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    out.warnings.append(hpa.other_version(str(doc.get("apiVersion")), file, obj))


def _podtemplate(doc: dict[str, Any], file: str, obj: str, out: ManifestSet) -> None:
    parsed = _validate(capacitybuffer.PodTemplateModel, doc, file, obj)
    input_notes.note_unmodelled(
        parsed.template.spec,
        "template.spec",
        file,
        obj,
        out,
        annotations=parsed.template.metadata.annotations,
    )
    key, template = capacitybuffer.pod_template(parsed)
    out.podtemplates[key] = template


#: (apiVersion, kind) -> handler.
HANDLERS: dict[tuple[str, str], _Handler] = {
    ("karpenter.sh/v1", "NodePool"): _nodepool,
    ("karpenter.sh/v1beta1", "NodePool"): _nodepool_v1beta1,
    ("karpenter.sh/v1alpha1", "NodeOverlay"): _nodeoverlay,
    ("karpenter.sh/v1", "NodeClaim"): _nodeclaim,
    ("karpenter.sh/v1alpha5", "Provisioner"): _provisioner,
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): _ec2nodeclass,
    ("karpenter.k8s.aws/v1beta1", "EC2NodeClass"): _ec2nodeclass_v1beta1,
    ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate"): _awsnodetemplate,
    ("karpenter.kwok.sh/v1alpha1", "KWOKNodeClass"): _kwoknodeclass,
    ("apps/v1", "Deployment"): _workload_handler(m.Deployment),
    ("apps/v1", "ReplicaSet"): _workload_handler(m.ReplicaSet),
    ("apps/v1", "StatefulSet"): _workload_handler(m.StatefulSet),
    ("apps/v1", "DaemonSet"): _daemonset,
    ("batch/v1", "Job"): _workload_handler(m.Job),
    ("batch/v1", "CronJob"): _cronjob,
    ("batch/v1beta1", "CronJob"): _cronjob,
    ("policy/v1", "PodDisruptionBudget"): _pdb,
    ("policy/v1beta1", "PodDisruptionBudget"): _pdb,
    ("v1", "Pod"): _pod,
    ("v1", "Node"): _node,
    ("v1", "PersistentVolumeClaim"): _pvc,
    ("v1", "PersistentVolume"): _pv,
    ("v1", "Namespace"): _namespace,
    ("storage.k8s.io/v1", "StorageClass"): _storageclass,
    ("node.k8s.io/v1", "RuntimeClass"): _runtimeclass,
    ("scheduling.k8s.io/v1", "PriorityClass"): _priorityclass,
    ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer"): _capacitybuffer,
    ("v1", "PodTemplate"): _podtemplate,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): _hpa,
    ("autoscaling/v1", "HorizontalPodAutoscaler"): _hpa_other,
    ("v1", "ConfigMap"): _configmap,
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): _hpa_other,
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler"): _hpa_other,
}

#: Older Karpenter kinds a cluster dump may hold that Joiner does not read: skipped with a
#: warning (their nodes are still read as Nodes of their NodePool).
_DERIVED = {
    ("karpenter.sh/v1beta1", "NodeClaim"),
    ("karpenter.sh/v1alpha5", "Machine"),
}

#: API groups whose unknown versions are errors, not warnings: Joiner must not silently
#: drop a NodePool or NodeClass it cannot read.
_STRICT_GROUPS = ("karpenter.sh", "karpenter.k8s.aws", "karpenter.kwok.sh")


def _describe(doc: dict[str, Any]) -> str:
    kind = doc.get("kind") or "<no kind>"
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str):
        name = None
    return f"{kind}/{name}" if name else str(kind)


def _located_name(doc: dict[str, Any], where: str) -> str:
    """``doc`` as errors name it: ``Kind/name``, or for an object without a name its place
    and kind (``document 2 items[3] (Pod)``), so the file's other unnamed objects of that
    kind are not suspected."""
    described = _describe(doc)
    return described if "/" in described else f"{where} ({described})"


def _load_list(doc: dict[str, Any], file: str, index: int, out: ManifestSet, where: str) -> None:
    """Load each item of a ``v1`` List (``kubectl get -o yaml|json``) found at ``where``; an
    error about an item names it by its path (``document N items[i]``, a List nested in a
    List ``document N items[i].items[j]``), not the List.

    Raises:
        InputError: ``items`` is not a list, or an item does not load.
    """
    # ``items`` may be empty, null or absent (no objects).
    items = doc.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        raise InputError(
            f"must be a list of objects, not {type(items).__name__}",
            file=file,
            obj=f"{where} (kind: List)",
            field="items",
        )
    sep = "." if " items[" in where else " "
    typed = _typed_list_item(doc)
    for i, item in enumerate(items):
        if typed and isinstance(item, dict):
            item = {**typed, **item}  # the item's own apiVersion and kind, when it has them
        _load_document(item, file, index, out, nulls_dropped=True, where=f"{where}{sep}items[{i}]")


def _is_list(doc: dict[str, Any]) -> bool:
    """``doc`` is a list of objects: a ``v1`` List (what kubectl writes), or a typed list
    such as ``PodList`` or ``NodePoolList`` (what the API server answers a list request
    with) carrying ``items``; kubectl reads both as lists (k8s.io/apimachinery
    ``meta.IsListType``: an object with an ``items`` field)."""
    if doc.get("kind") == "List" and doc.get("apiVersion") == "v1":
        return True
    kind = doc.get("kind")
    return (
        isinstance(kind, str)
        and len(kind) > 4
        and kind.endswith("List")
        and isinstance(doc.get("apiVersion"), str)
        and isinstance(doc.get("items"), list)
    )


def _typed_list_item(doc: dict[str, Any]) -> dict[str, str]:
    """The ``apiVersion`` and ``kind`` of a typed list's items (the API server leaves them
    out of each item: ``PodList`` of ``v1`` holds ``v1`` ``Pod`` objects); empty for a
    ``v1`` List, whose items name their own."""
    kind = str(doc.get("kind"))
    if kind == "List":
        return {}
    return {"apiVersion": str(doc["apiVersion"]), "kind": kind.removesuffix("List")}


def _check_type_fields(doc: dict[str, Any], file: str, where: str) -> None:
    """Check that ``apiVersion`` and ``kind`` are present strings.

    Raises:
        InputError: either is not a string, or is missing or empty.
    """
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    for fname, value in (("apiVersion", api_version), ("kind", kind)):
        if value is not None and not isinstance(value, str):
            raise InputError(
                f"must be a string, got {type(value).__name__}", file=file, obj=where, field=fname
            )
    if not api_version:
        raise InputError(
            "required field is missing" + ("" if kind else _values_file_hint(doc)),
            file=file,
            obj=_located_name(doc, where) if kind else where,
            field="apiVersion",
        )
    if not kind:
        raise InputError(
            "required field is missing" + _chart_file_hint(doc), file=file, obj=where, field="kind"
        )


#: Top-level keys of Karpenter's chart values (``charts/karpenter/values.yaml``) that no
#: Kubernetes object has.
_KARPENTER_VALUES_KEYS = frozenset(
    {
        "settings",
        "controller",
        "serviceAccount",
        "serviceMonitor",
        "podDisruptionBudget",
        "webhook",
        "logLevel",
        "dnsPolicy",
        "priorityClassName",
        "additionalLabels",
    }
)


_KARPENTER_VALUES_HINT = (
    " (this looks like Karpenter's Helm values, not a Kubernetes object: give its "
    "settings.featureGates with --feature-gates, or its settings under a Scenario's "
    "spec.settings; the controller reads them with --settings)"
)
_NTH_VALUES_HINT = (
    " (this looks like the AWS Node Termination Handler's Helm values, not a "
    "Kubernetes object: give them in a Scenario's spec.interruption)"
)
_BOTH_VALUES_HINT = (
    " (this looks like Helm values of Karpenter and the AWS Node Termination Handler, not "
    "a Kubernetes object: give Karpenter's settings.featureGates with --feature-gates, or "
    "its settings under a Scenario's spec.settings, and the handler's values in a "
    "Scenario's spec.interruption)"
)
_FIS_TEMPLATE_HINT = (
    " (this looks like an AWS FIS experiment template, not a Kubernetes object: run it "
    "against a Scenario with joiner chaos run)"
)


def _values_file_hint(doc: dict[str, Any]) -> str:
    """A hint when a document without ``apiVersion`` and ``kind`` looks like a Helm values
    file ("" otherwise): Karpenter's chart values (settings and feature gates) or the AWS
    Node Termination Handler's (``enable...`` keys), or an umbrella chart's values holding
    either or both under the chart's name (``karpenter:``, ``aws-node-termination-handler:``,
    whatever their value); or like an AWS FIS experiment template (``actions`` and
    ``targets``)."""
    keys = {k for k in doc if isinstance(k, str)}
    if {"actions", "targets"} <= keys:
        return _FIS_TEMPLATE_HINT
    umbrella = keys & {"karpenter", "aws-node-termination-handler"}
    if len(umbrella) == 2:
        return _BOTH_VALUES_HINT
    if "karpenter" in umbrella or keys & _KARPENTER_VALUES_KEYS:
        return _KARPENTER_VALUES_HINT
    if umbrella or any(k.startswith("enable") for k in keys):
        return _NTH_VALUES_HINT
    return ""


def _chart_file_hint(doc: dict[str, Any]) -> str:
    """A hint when a document with ``apiVersion`` but no ``kind`` looks like a Helm chart's
    ``Chart.yaml`` (``apiVersion`` v1 or v2, ``name`` and ``version``); "" otherwise."""
    if doc.get("apiVersion") in ("v1", "v2") and {"name", "version"} <= doc.keys():
        return (
            " (this looks like a Helm chart's Chart.yaml, not a Kubernetes object: give the "
            "manifests the chart renders, as helm template prints them)"
        )
    return ""


def _unread_error(api_version: str, kind: str, file: str, obj: str) -> InputError | None:
    """The error for an ``apiVersion``/``kind`` no handler reads, or None when the object is
    only skipped: a Karpenter group's unknown kind (with a "did you mean" hint), or an
    unknown version of a Karpenter group or of a kind Joiner reads in another version."""
    group = api_version.rpartition("/")[0]
    known = sorted(v for v, k in HANDLERS if k == kind)
    kinds_in_group = sorted({k for v, k in HANDLERS if v.startswith(group + "/")})
    if group in _STRICT_GROUPS and kind not in {k for _, k in HANDLERS}:
        close = difflib.get_close_matches(kind, kinds_in_group, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return InputError(
            f"unknown kind {kind!r} in {group}{hint} (Joiner reads: {', '.join(kinds_in_group)})",
            file=file,
            obj=obj,
            field="kind",
        )
    if group in _STRICT_GROUPS or known:
        reads = ", ".join(
            f"{v} {k}" for v, k in sorted(HANDLERS) if k == kind or v.startswith(group + "/")
        )
        return InputError(
            f"unsupported apiVersion {api_version!r} for kind {kind!r}; Joiner reads: "
            f"{reads or 'none of this group'}",
            file=file,
            obj=obj,
            field="apiVersion",
        )
    return None


def _check_as_api_server(
    doc: dict[str, Any], api_version: str, kind: str, file: str, obj: str, handler: _Handler
) -> None:
    """Check ``doc`` as the API server would before its model reads it: against the
    vendored OpenAPI schema of its kind (``openapi``), apimachinery's name and label rules
    (``k8snames``) and, for core, apps and batch kinds, the Go validation rules the schema
    does not carry (``corevalidation``). When the model refuses the object too, its error is
    raised instead: it says what to write in Joiner's words ("is not a Go duration") where
    the schema can only quote a pattern.

    Raises:
        InputError: the object breaks a rule, naming the field, the rule and the limit.
    """
    try:
        openapi.check(doc, api_version, kind, file, obj)
        k8snames.check_object(doc, kind, file, obj)
        if "/" not in api_version or api_version.startswith(("apps/", "batch/")):
            corevalidation.check_object(doc, kind, file, obj)
    except InputError:
        handler(doc, file, obj, ManifestSet())  # raises the model's own error, if it has one
        raise


def _load_document(
    doc: Any,
    file: str,
    index: int,
    out: ManifestSet,
    *,
    nulls_dropped: bool = False,
    where: str | None = None,
) -> None:
    """Load one parsed document (a ``v1`` List item by item) into ``out``; ``nulls_dropped``:
    ``doc`` was read without its nulls, or is an item of a List whose nulls were dropped;
    ``where`` names it in errors (default ``document N``; a List's item, its path).

    Raises:
        InputError: the document is not a mapping, lacks ``apiVersion`` or ``kind``, is a
            Scenario, is of a Karpenter kind or version Joiner does not read, or its handler
            rejects it (located at ``file`` and the object).
    """
    where = where or f"document {index + 1}"
    if isinstance(doc, list) and doc and all(isinstance(d, dict) and "kind" in d for d in doc):
        raise InputError(
            "is an array of objects, which kubectl never writes: give them as a List "
            '({"apiVersion": "v1", "kind": "List", "items": [...]}, what kubectl get -o json '
            "writes) or as YAML documents separated by ---",
            file=file,
            obj=where,
        )
    if not isinstance(doc, dict):
        raise InputError(f"is not a mapping (got {type(doc).__name__})", file=file, obj=where)
    if not nulls_dropped:
        doc = drop_nulls(doc)  # a null reads as absent, as the API server reads it
    if _is_list(doc):
        _load_list(doc, file, index, out, where)
        return
    _check_type_fields(doc, file, where)
    api_version, kind = str(doc["apiVersion"]), str(doc["kind"])
    obj = _describe(doc)
    if kind == "Scenario" and api_version.startswith("joiner.dev/"):
        raise InputError(
            "a Joiner Scenario cannot be mixed with manifests: give it on its own (it names "
            "its manifests under spec.manifests)",
            file=file,
            obj=obj,
            field="kind",
        )
    if (api_version, kind) in _DERIVED:
        out.skipped.append((f"{obj} ({api_version})", file))
        return
    handler = HANDLERS.get((api_version, kind))
    if handler is None:
        error = _unread_error(api_version, kind, file, obj)
        if error is not None:
            raise error
        out.skipped.append((obj, file))
        return
    named = _located_name(doc, where)  # ``obj``, or where an unnamed object is
    try:
        _check_as_api_server(doc, api_version, kind, file, named, handler)
        handler(doc, file, named, out)
    except InputError as exc:
        hint = _version_hint(doc, api_version, kind)
        located = exc.located(file=file, obj=named)
        if hint:
            located = InputError(
                f"{located.detail}; {hint}",
                file=located.file,
                obj=located.obj,
                field=located.field,
            )
        raise located from exc


#: Karpenter kinds read in two versions whose shapes differ: an object of one version's shape
#: under the other's ``apiVersion`` is the commonest upgrade slip.
_SIBLING_VERSIONS: dict[str, tuple[str, str]] = {
    "NodePool": ("karpenter.sh/v1", "karpenter.sh/v1beta1"),
    "EC2NodeClass": ("karpenter.k8s.aws/v1", "karpenter.k8s.aws/v1beta1"),
}


def _version_hint(doc: dict[str, Any], api_version: str, kind: str) -> str:
    """When ``doc`` (refused under ``api_version``) loads cleanly under its kind's other
    version, a sentence saying so ("" otherwise): a v1-shaped NodePool marked v1beta1 fails
    on ``nodeClassRef.group``, which says nothing about the apiVersion."""
    versions = _SIBLING_VERSIONS.get(kind)
    if versions is None or api_version not in versions:
        return ""
    other = versions[1] if api_version == versions[0] else versions[0]
    try:
        _check_as_api_server(doc, other, kind, "", "", HANDLERS[(other, kind)])
        HANDLERS[(other, kind)](doc, "", "", ManifestSet())
    except InputError:
        return ""
    if other.endswith("/v1"):
        return f"the object has the {other} shape: set apiVersion: {other}"
    return (
        f"the object has the {other} shape: set apiVersion: {other}, or rewrite it as "
        f"{api_version} with `joiner convert`"
    )


def _check_unique(out: ManifestSet) -> None:
    """Two objects of one kind and namespace may not share a name."""
    groups: list[tuple[str, list[tuple[str, o.Source]]]] = [
        ("NodePool", [(p.name, p.source) for p in out.nodepools]),
        ("NodeClass", [(n.name, n.source) for n in out.nodeclasses]),
        ("workload", [(f"{w.kind}/{w.key}", w.source) for w in out.workloads]),
        ("DaemonSet", [(f"{d.namespace}/{d.name}", d.source) for d in out.daemonsets]),
        ("Pod", [(p.key, p.source) for p in out.pods]),
        ("Node", [(n.name, n.source) for n in out.nodes]),
        ("PodDisruptionBudget", [(f"{p.namespace}/{p.name}", p.source) for p in out.pdbs]),
        ("HorizontalPodAutoscaler", [(h.key, h.source) for h in out.hpas]),
    ]
    for what, items in groups:
        seen: dict[str, o.Source] = {}
        for name, source in items:
            if name in seen:
                raise InputError(
                    f"duplicate {what} name {name!r} (also defined in {seen[name].file} as "
                    f"{seen[name].ref})",
                    file=source.file,
                    obj=source.ref,
                    field="metadata.name",
                )
            seen[name] = source


def _merge_pool_kubelet(out: ManifestSet) -> None:
    """Move pool-level kubelet settings (v1beta1, v1alpha5) to the NodeClass, as v1 did."""
    for i, nc in enumerate(out.nodeclasses):
        pools = [p for p in out.nodepools if p.node_class_ref.name == nc.name and p.kubelet]
        if not pools:
            continue
        settings = {p.kubelet for p in pools}
        if nc.kubelet != o.KubeletConfig():
            out.warnings.append(
                f"{nc.source.file}: {nc.source.ref}: has its own kubelet settings; those of "
                f"{', '.join(p.source.ref for p in pools)} are ignored"
            )
            continue
        first = pools[0]
        if len(settings) > 1:
            raise InputError(
                f"NodePools sharing {nc.source.ref} set different kubelet settings; v1 keeps "
                "kubelet settings on the NodeClass, so give each its own NodeClass",
                file=first.source.file,
                obj=first.source.ref,
                field="spec.kubeletConfiguration"
                if first.source.kind == "Provisioner"
                else "spec.template.spec.kubelet",
            )
        assert first.kubelet is not None
        out.nodeclasses[i] = replace(nc, kubelet=first.kubelet)


def _group_skipped(out: ManifestSet) -> None:
    """One warning for every object of a kind Joiner does not model."""
    if not out.skipped:
        return
    files = sorted({f for _, f in out.skipped})
    kinds: dict[str, int] = {}
    for obj, _ in out.skipped:
        kind = obj.split("/", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    where = f"{files[0]}: " if len(files) == 1 else ""
    read = sorted({k for _, k in HANDLERS})

    def counted(kind: str, n: int) -> str:
        close = [k for k in difflib.get_close_matches(kind, read, n=2, cutoff=0.8) if k != kind]
        return f"{kind} {n}" + (f" (did you mean {close[0]!r}?)" if close else "")

    head = (
        f"{where}{plural(len(out.skipped), 'object')} of kinds Joiner does not model "
        f"({', '.join(counted(k, n) for k, n in sorted(kinds.items()))}) "
        f"{'is' if len(out.skipped) == 1 else 'are'} skipped"
    )
    items = [obj if len(files) == 1 else f"{obj} ({f})" for obj, f in out.skipped]
    out.warnings.append(grouped(head, items))
    out.skipped.clear()


def _deleting_claims(out: ManifestSet) -> None:
    """A Node whose NodeClaim is being deleted (its ``deletionTimestamp``, or
    ``InstanceTerminating``) is being deleted too: Karpenter's cluster state reads a
    managed node's deletion from its NodeClaim (``StateNode.Deleted``,
    pkg/controllers/state/statenode.go), and its node termination follows."""
    names = {c.node_name for c in out.nodeclaims if c.deleting and c.node_name}
    providers = {c.provider_id for c in out.nodeclaims if c.deleting and c.provider_id}
    out.nodes = [
        replace(n, deleting=True)
        if not n.deleting and (n.name in names or (n.provider_id and n.provider_id in providers))
        else n
        for n in out.nodes
    ]


def _check_references(out: ManifestSet) -> None:
    proportional.resolve(out)
    _group_skipped(out)
    _check_unique(out)
    priority.admit(out)
    capacitybuffer.resolve(out)
    classes = {n.name: n for n in out.nodeclasses}
    for pool in out.nodepools:
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
        allowed = {
            (convert.EC2NODECLASS_GROUP, convert.EC2NODECLASS_KIND),
            (convert.KWOKNODECLASS_GROUP, convert.KWOKNODECLASS_KIND),
        }
        if pool.source.kind == "NodePool" and (ref.group, ref.kind) not in allowed:
            raise InputError(
                f"nodeClassRef must be group {convert.EC2NODECLASS_GROUP}, kind "
                f"{convert.EC2NODECLASS_KIND} (or {convert.KWOKNODECLASS_GROUP}, "
                f"{convert.KWOKNODECLASS_KIND}) (got {ref.group}/{ref.kind})",
                file=pool.source.file,
                obj=pool.source.ref,
                field="spec.template.spec.nodeClassRef",
            )
        kwok = convert.KWOKNODECLASS_KIND
        if pool.source.kind == "NodePool" and (ref.kind == kwok) != (target.source.kind == kwok):
            raise InputError(
                f"references {ref.kind} {ref.name!r}, but {ref.name!r} is a {target.source.kind}",
                file=pool.source.file,
                obj=pool.source.ref,
                field="spec.template.spec.nodeClassRef.kind",
            )
    _merge_pool_kubelet(out)
    _deleting_claims(out)
    runtimeclass.apply_all(out, out.runtimeclasses)
    out.warnings += unmodelled.grouped_warnings(out.unmodelled)


def load_documents(docs: Iterable[Any], name: str) -> ManifestSet:
    """Load already-parsed documents (objects listed or watched from an API server, as
    dicts with ``apiVersion`` and ``kind``); ``name`` stands for the file in messages
    (``kube:https://...``). Same rules and errors as ``load_files``.

    Raises:
        InputError: as ``load_files``.
    """
    out = ManifestSet()
    for i, doc in enumerate(docs):
        _load_document(doc, name, i, out)
    _check_references(out)
    return out


def load_text(text: str, name: str = "<text>") -> ManifestSet:
    """Load manifests from a string (tests, stdin)."""
    out = ManifestSet()
    for i, doc in enumerate(parse_documents(text, name, drop_nulls=True)):
        _load_document(doc, name, i, out, nulls_dropped=True)
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
        docs = read_documents(p, drop_nulls=True)
        if not docs:
            out.warnings.append(f"{p}: holds no objects (empty, or only comments and ---)")
        for i, doc in enumerate(docs):
            _load_document(doc, str(p), i, out, nulls_dropped=True)
    _check_references(out)
    return out
