"""Null-valued fields of Kubernetes objects read as absent, as the API server reads them.

A manifest may hold ``key: null`` (Helm renders ``tolerations: null`` for an empty value).
The API server never refuses such an object for the null alone:

- custom resources (NodePool, EC2NodeClass, ...): structural defaulting drops a null on
  a field that is not ``nullable: true`` and has no default before validation
  (k8s.io/apiextensions-apiserver pkg/apiserver/schema/defaulting/prunenulls.go,
  ``PruneNonNullableNullsWithoutDefaults``); a null on a field with a default is replaced
  by the default, which is what the models give an absent field;
- built-in kinds (Deployment, Pod, ...): Go's encoding/json decodes ``null`` into the zero
  value of the field (a nil slice, map or pointer, an empty string, zero), which is what
  the field holds when the key is absent.

No schema vendored under ``joiner/api/schemas/`` marks a field ``nullable: true``, so every
null-valued mapping key is dropped. This applies to Kubernetes objects only: Joiner's own
Scenario and Sweep files refuse a null on purpose.
"""

from __future__ import annotations

from typing import Any


def drop_nulls(value: Any) -> Any:
    """A copy of ``value`` (a parsed YAML/JSON document) with every mapping key whose value
    is ``None`` removed, at every depth (inside lists too). Scalars are returned as they
    are; a ``None`` list element is kept (only mapping keys are dropped)."""
    # Scalars are taken as they are without a call: they are most of a dump's values.
    if isinstance(value, dict):
        return {
            k: drop_nulls(v) if isinstance(v, dict | list) else v
            for k, v in value.items()
            if v is not None
        }
    if isinstance(value, list):
        return [drop_nulls(v) if isinstance(v, dict | list) else v for v in value]
    return value
