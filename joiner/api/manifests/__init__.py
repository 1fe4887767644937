"""Manifest loading: YAML/JSON documents -> the domain objects of ``joiner.api.objects``.

``load_files(paths)`` reads multi-document YAML (JSON is YAML), dispatches each document on
``apiVersion``/``kind`` and returns a ``ManifestSet``. Pydantic models in ``models`` check
shapes at this edge only; the converters (``karpenter``, ``legacy``, ``core``) build frozen
domain values. Every error is an ``InputError`` naming file, object and field.
"""

from joiner.api.manifests.loader import load_documents, load_files, load_text
from joiner.api.manifests.manifestset import ManifestSet

__all__ = ["ManifestSet", "load_documents", "load_files", "load_text"]
