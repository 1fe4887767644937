"""The CustomResourceDefinitions Joiner installs: Karpenter's own, unchanged.

NodePool and NodeClaim are ``sigs.k8s.io/karpenter`` ``pkg/apis/crds/karpenter.sh_nodepools.yaml``
and ``karpenter.sh_nodeclaims.yaml``; EC2NodeClass is ``github.com/aws/karpenter-provider-aws``
``pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml``, at the versions
``joiner/api/schemas/sources.json`` records. They are the files vendored byte for byte in
``joiner/api/schemas`` (``tools/refresh_schemas.py``), so the API server validates and prints
Joiner's objects exactly as it does Karpenter's: descriptions (``kubectl explain``), CEL rules
(``x-kubernetes-validations``), defaults and Karpenter's printer columns.

``crd_file_text(kind)`` is one CRD as ``deploy/chart/crds/<CRD_FILES[kind]>`` holds it: a
comment line naming the source module, version and path, then the vendored text;
``crds_yaml()`` (``joiner install-crds --print``) is the three files' text, one after the
other; ``crd_documents()`` the three CRDs as dicts. A test keeps all three equal.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: The file of each CRD Joiner installs, by kind, in ``joiner/api/schemas`` and the chart's
#: ``crds/`` (the names Karpenter's chart uses), in install order.
CRD_FILES = {
    "NodePool": "karpenter.sh_nodepools.yaml",
    "NodeClaim": "karpenter.sh_nodeclaims.yaml",
    "EC2NodeClass": "karpenter.k8s.aws_ec2nodeclasses.yaml",
}

_SCHEMAS = "joiner.api.schemas"


def _read(name: str) -> str:
    return resources.files(_SCHEMAS).joinpath(name).read_text(encoding="utf-8")


@cache
def _sources() -> dict[str, dict[str, str]]:
    """``sources.json`` by file name: each vendored file's module, version and path."""
    return {s["file"]: s for s in json.loads(_read("sources.json"))}


def crd_file_text(kind: str) -> str:
    """The CRD of ``kind`` (a key of ``CRD_FILES``) as the chart's ``crds/`` file holds it:
    ``# Source: <module> <version> <path>, unchanged.`` then the vendored file's text.

    Raises:
        KeyError: ``kind`` is not one of ``CRD_FILES``.
    """
    name = CRD_FILES[kind]
    src = _sources()[name]
    header = f"# Source: {src['module']} {src['version']} {src['path']}, unchanged.\n"
    return header + _read(name)


def crds_yaml() -> str:
    """The three CRDs as one multi-document YAML (``joiner install-crds --print``): each
    ``crd_file_text`` in ``CRD_FILES`` order (each vendored file starts with ``---``)."""
    return "".join(crd_file_text(kind) for kind in CRD_FILES)


def crd_documents() -> list[dict[str, Any]]:
    """The three CRDs (NodePool, NodeClaim: ``karpenter.sh``; EC2NodeClass:
    ``karpenter.k8s.aws``), in ``CRD_FILES`` order, as apiextensions.k8s.io/v1 documents
    (fresh dicts: a caller may change them)."""
    docs = []
    for kind in CRD_FILES:
        found = [d for d in yaml.safe_load_all(_read(CRD_FILES[kind])) if d]
        docs.extend(found)
    return docs
