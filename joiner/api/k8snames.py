"""Object names, namespaces, label keys and values as the API server checks them.

The rules are apimachinery's (``k8s.io/apimachinery`` ``pkg/util/validation/validation.go``
``IsDNS1123Label``, ``IsDNS1123Subdomain``; ``pkg/api/validate/content/kube.go``
``IsLabelKey`` (``IsQualifiedName``) and ``IsLabelValue`` (``IsValidLabelValue``);
``pkg/api/validation/objectmeta.go`` ``ValidateAnnotations``, 256 KiB of annotations at
most), lengths counted in bytes as Go counts them. Which name rule a kind uses is its
``ValidateObjectMeta`` name function in ``k8s.io/kubernetes`` ``pkg/apis/*/validation``:
a DNS-1123 subdomain for most kinds (custom resources too, apiextensions-apiserver), a
DNS-1123 label for Namespace and StatefulSet (``ValidateNamespaceName``,
``ValidateStatefulSetName``).

``check`` applies them to a manifest: ``metadata.name`` and ``metadata.namespace``, the
labels and annotations of every ``metadata`` (templates too), every ``nodeSelector`` and
``matchLabels`` (``ValidateLabels``), the keys of node affinity ``matchExpressions``
(``ValidateLabelName``) and the keys and values of Karpenter ``requirements`` (Karpenter
``pkg/apis/v1/nodeclaim_validation.go`` ``ValidateRequirement``: key a qualified name,
every value a label value).
"""

from __future__ import annotations

import re
from typing import Any

from joiner.api.errors import InputError
from joiner.api.resourcenames import qualified_name_problem
from joiner.api.validation import shown

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
#: apimachinery ``TotalAnnotationSizeLimitB``.
ANNOTATIONS_MAX_BYTES = 256 * 1024

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL, re.ASCII)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*", re.ASCII)
_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = re.compile(f"({_KEY})?", re.ASCII)

#: Kinds whose ``metadata.name`` is a DNS-1123 label; every other kind's is a subdomain.
LABEL_NAMED_KINDS = frozenset({"Namespace", "StatefulSet"})
#: Deeper than this the walk stops (the YAML reader already refuses deeper documents).
_MAX_DEPTH = 64


def _size(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def dns1123_label(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Label``: what is wrong with ``value`` (empty when valid)."""
    errs = []
    if _size(value) > DNS1123_LABEL_MAX:
        errs.append(f"must be no more than {DNS1123_LABEL_MAX} bytes")
    if not _DNS1123_LABEL.fullmatch(value):
        if _DNS1123_SUBDOMAIN.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(
                "must be a lowercase RFC 1123 label: lower case alphanumeric characters or "
                "'-', starting and ending with an alphanumeric character (e.g. 'my-name')"
            )
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Subdomain``: what is wrong with ``value`` (empty when valid)."""
    errs = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} bytes")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(
            "must be a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' "
            "or '.', starting and ending with an alphanumeric character (e.g. 'example.com')"
        )
    return errs


def label_key_error(value: str) -> str | None:
    """Why ``value`` is not a label key (apimachinery ``IsQualifiedName``: an optional
    DNS-1123 subdomain prefix and ``/``, then a name of at most 63 characters), or None."""
    problem = qualified_name_problem(value)
    if problem is None:
        return None
    return (
        f"label key {shown(value)} is not a qualified name: it {problem} (the API server's "
        "ValidateLabelName / IsQualifiedName; e.g. app, example.com/team)"
    )


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a label value (apimachinery ``IsValidLabelValue``), or None."""
    if _size(value) <= LABEL_VALUE_MAX and _LABEL_VALUE.fullmatch(value):
        return None
    return (
        f"label value {shown(value)} is not valid: at most 63 letters, digits, '-', '_' and "
        "'.', starting and ending with a letter or digit, or empty (the API server's "
        "IsValidLabelValue)"
    )


def name_rule(kind: str) -> str:
    """``"label"`` or ``"subdomain"``: the DNS-1123 rule ``kind``'s names follow."""
    return "label" if kind in LABEL_NAMED_KINDS else "subdomain"


class _Checker:
    def __init__(self, file: str, obj: str) -> None:
        self.file = file
        self.obj = obj

    def fail(self, field: str, message: str) -> None:
        raise InputError(message, file=self.file, obj=self.obj, field=field)

    def key(self, key: Any, field: str) -> None:
        error = label_key_error(key) if isinstance(key, str) else None
        if error is not None:
            self.fail(field, error)

    def value(self, value: Any, field: str) -> None:
        error = label_value_error(value) if isinstance(value, str) else None
        if error is not None:
            self.fail(field, error)

    def labels(self, labels: Any, field: str) -> None:
        if not isinstance(labels, dict):
            return
        for key, value in labels.items():
            self.key(key, f"{field}.{key}")
            self.value(value, f"{field}.{key}")

    def annotations(self, annotations: Any, field: str) -> None:
        if not isinstance(annotations, dict):
            return
        total = 0
        for key, value in annotations.items():
            if isinstance(key, str):
                error = qualified_name_problem(key.lower())
                if error is not None:
                    self.fail(
                        f"{field}.{key}",
                        f"annotation key {shown(key)} is not a qualified name: it {error} (the "
                        "API server's ValidateAnnotations; e.g. example.com/note)",
                    )
                total += _size(key)
            if isinstance(value, str):
                total += _size(value)
        if total > ANNOTATIONS_MAX_BYTES:
            raise InputError(
                f"annotations take {total:,} bytes, more than the API server's "
                f"{ANNOTATIONS_MAX_BYTES:,}",
                file=self.file,
                obj=self.obj,
                field=field,
            )

    def metadata(self, meta: dict[str, Any], field: str) -> None:
        self.labels(meta.get("labels"), f"{field}.labels")
        self.annotations(meta.get("annotations"), f"{field}.annotations")

    def requirement(self, req: Any, field: str, *, values: bool) -> None:
        if not isinstance(req, dict):
            return
        self.key(req.get("key"), f"{field}.key")
        given = req.get("values")
        if values and isinstance(given, list):
            for i, value in enumerate(given):
                self.value(value, f"{field}.values[{i}]")

    def walk(self, node: Any, field: str, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            return
        if isinstance(node, list):
            for i, item in enumerate(node):
                self.walk(item, f"{field}[{i}]", depth + 1)
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if not isinstance(value, dict | list):
                continue  # nothing below a scalar, and ``entry`` reads only containers
            path = f"{field}.{key}" if field else str(key)
            self.entry(str(key), value, path)
            self.walk(value, path, depth + 1)

    def entry(self, key: str, value: Any, path: str) -> None:
        if key == "metadata" and isinstance(value, dict):
            self.metadata(value, path)
        elif key in ("nodeSelector", "matchLabels"):
            self.labels(value, path)
        elif key in ("requirements", "matchExpressions") and isinstance(value, list):
            for i, req in enumerate(value):
                self.requirement(req, f"{path}[{i}]", values=key == "requirements")


def check_object(doc: dict[str, Any], kind: str, file: str, obj: str) -> None:
    """Check the names, namespace, labels, annotations, node selectors and requirement
    keys of one manifest as the API server (and Karpenter's validation) would.

    Raises:
        InputError: naming ``file``, ``obj``, the field path and the rule broken.
    """
    checker = _Checker(file, obj)
    meta = doc.get("metadata")
    if isinstance(meta, dict):
        name = meta.get("name")
        if isinstance(name, str):
            rule = name_rule(kind)
            errs = dns1123_label(name) if rule == "label" else dns1123_subdomain(name)
            if errs:
                checker.fail(
                    "metadata.name",
                    f"{shown(name)} is not a valid {kind} name: it {'; it '.join(errs)} (the API "
                    f"server's DNS-1123 {rule} rule for {kind} names)",
                )
        namespace = meta.get("namespace")
        if isinstance(namespace, str):
            errs = dns1123_label(namespace)
            if errs:
                checker.fail(
                    "metadata.namespace",
                    f"{shown(namespace)} is not a valid namespace name: it {'; it '.join(errs)} "
                    "(the API server's DNS-1123 label rule for namespaces)",
                )
    checker.walk(doc, "")
