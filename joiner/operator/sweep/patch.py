"""JSON merge patches (RFC 7396) and the manifest documents a sweep variant addresses.

A variant patches the scenario document and/or manifest documents named by ``kind``,
``name`` and (for namespaced kinds) ``namespace``, as ``kubectl patch --type merge`` does:
objects merge key by key, ``null`` deletes a key, anything else (lists included) replaces.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch (RFC 7396 section 2, ``MergePatch``) and return the result.

    Neither argument is modified. A non-object patch replaces the target; in an object patch
    a ``None`` value removes the key and any other value is merged recursively.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@dataclass(frozen=True, slots=True)
class DocumentRef:
    """A manifest document addressed by kind, name and namespace (``None``: any/none)."""

    kind: str
    name: str
    namespace: str | None = None

    def matches(self, doc: Any) -> bool:
        """True when ``doc`` is a mapping of this kind and name (and namespace, when given;
        a namespaced document without ``metadata.namespace`` is in ``default``)."""
        if not isinstance(doc, dict) or doc.get("kind") != self.kind:
            return False
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or meta.get("name") != self.name:
            return False
        if self.namespace is None:
            return True
        return (meta.get("namespace") or "default") == self.namespace

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}"


def describe(doc: Any) -> str | None:
    """``Kind/[namespace/]name`` of a manifest document, or ``None`` when it has no name."""
    if not isinstance(doc, dict):
        return None
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return None
    ns = meta.get("namespace")
    return f"{doc.get('kind')}/{ns + '/' if isinstance(ns, str) else ''}{meta['name']}"


def patch_documents(docs: list[Any], ref: DocumentRef, patch: dict[str, Any]) -> int:
    """Merge ``patch`` into every document of ``docs`` (and every item of a ``kind: List``)
    that ``ref`` matches, in place. Returns how many documents were patched."""
    hits = 0
    for i, doc in enumerate(docs):
        if ref.matches(doc):
            docs[i] = merge_patch(doc, patch)
            hits += 1
        elif isinstance(doc, dict) and doc.get("kind") == "List":
            items = doc.get("items")
            if isinstance(items, list):
                hits += patch_documents(items, ref, patch)
    return hits
