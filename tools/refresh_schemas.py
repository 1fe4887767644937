"""Refresh the vendored OpenAPI schemas (``joiner/api/schemas``) from the Go module cache.

Joiner validates manifests against the schemas the API server uses (``joiner.api.openapi``);
it reads only the files this script writes, never the module cache. Usage::

    .venv/bin/python tools/refresh_schemas.py [--out DIR]

The versions are the ones the test stack pins, so the schemas match the binaries the
differential and end-to-end tests run:

* Karpenter: ``sigs.k8s.io/karpenter`` at the version ``tools/kube-stack/karpenter/go.mod``
  requires. Its CRDs (``pkg/apis/crds``: NodePool, NodeClaim, NodeOverlay, CapacityBuffer;
  ``kwok/apis/crds``: KWOKNodeClass) are copied as they are.
* The AWS provider: ``github.com/aws/karpenter-provider-aws`` at the same version; its
  EC2NodeClass CRD (``pkg/apis/crds``) is copied as it is.
* Kubernetes: ``k8s.io/kubernetes`` at ``KUBE_VERSION`` of ``tools/kube-stack/versions.env``;
  from ``api/openapi-spec/v3`` only the definitions reachable from the kinds Joiner reads
  (``CORE_KINDS``), with the keywords validation uses (descriptions and defaults dropped),
  as one gzip-compressed JSON file (``mtime=0``, sorted keys: rebuilding gives the same
  bytes).
* ``sources.json`` records module, version and file of each; ``SOURCES.md`` says the same
  for people.
* The Helm chart's ``deploy/chart/crds/`` (the CRDs ``joiner install-crds`` installs:
  NodePool, NodeClaim, EC2NodeClass): each vendored file after one line naming its module,
  version and path (``joiner.cluster.kube.crds.crd_file_text``; a test keeps them equal).
  Written only when ``--out`` is the package's own directory.

Modules are located with ``go mod download -json`` (a warm module cache needs no network).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "joiner" / "api" / "schemas"

KARPENTER = "sigs.k8s.io/karpenter"
KARPENTER_AWS = "github.com/aws/karpenter-provider-aws"
KUBERNETES = "k8s.io/kubernetes"

#: (module, file inside the module) of each vendored CRD.
CRDS = (
    (KARPENTER, "pkg/apis/crds/karpenter.sh_nodepools.yaml"),
    (KARPENTER, "pkg/apis/crds/karpenter.sh_nodeclaims.yaml"),
    (KARPENTER, "pkg/apis/crds/karpenter.sh_nodeoverlays.yaml"),
    (KARPENTER, "pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml"),
    (KARPENTER, "kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml"),
    (KARPENTER_AWS, "pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml"),
)

#: The Helm chart's CRD directory and the vendored CRDs it holds (``joiner install-crds``).
CHART_CRDS = ROOT / "deploy" / "chart" / "crds"
INSTALLED = (
    "karpenter.sh_nodepools.yaml",
    "karpenter.sh_nodeclaims.yaml",
    "karpenter.k8s.aws_ec2nodeclasses.yaml",
)

#: (apiVersion, kind, OpenAPI v3 file of k8s.io/kubernetes) of each core kind Joiner reads.
CORE_KINDS = (
    ("v1", "Pod", "api__v1_openapi.json"),
    ("v1", "Node", "api__v1_openapi.json"),
    ("v1", "PersistentVolume", "api__v1_openapi.json"),
    ("v1", "PersistentVolumeClaim", "api__v1_openapi.json"),
    ("v1", "Namespace", "api__v1_openapi.json"),
    ("v1", "PodTemplate", "api__v1_openapi.json"),
    ("v1", "ConfigMap", "api__v1_openapi.json"),
    ("apps/v1", "Deployment", "apis__apps__v1_openapi.json"),
    ("apps/v1", "ReplicaSet", "apis__apps__v1_openapi.json"),
    ("apps/v1", "StatefulSet", "apis__apps__v1_openapi.json"),
    ("apps/v1", "DaemonSet", "apis__apps__v1_openapi.json"),
    ("batch/v1", "Job", "apis__batch__v1_openapi.json"),
    ("batch/v1", "CronJob", "apis__batch__v1_openapi.json"),
    ("policy/v1", "PodDisruptionBudget", "apis__policy__v1_openapi.json"),
    ("storage.k8s.io/v1", "StorageClass", "apis__storage.k8s.io__v1_openapi.json"),
    ("node.k8s.io/v1", "RuntimeClass", "apis__node.k8s.io__v1_openapi.json"),
    ("scheduling.k8s.io/v1", "PriorityClass", "apis__scheduling.k8s.io__v1_openapi.json"),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "apis__autoscaling__v2_openapi.json"),
)

#: The keywords kept from Kubernetes' definitions (what ``joiner.api.openapi`` reads).
KEPT = frozenset(
    {
        "type",
        "format",
        "properties",
        "items",
        "additionalProperties",
        "required",
        "enum",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "pattern",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "maxProperties",
        "allOf",
        "oneOf",
        "anyOf",
        "$ref",
        "nullable",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
    }
)

REF = "#/components/schemas/"


def module_version(go_mod: Path, module: str) -> str:
    """The version ``go_mod`` requires of ``module``.

    Raises:
        SystemExit: the module is not required there.
    """
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.M)
    if found is None:
        raise SystemExit(f"{go_mod}: does not require {module}")
    return found.group(1)


def kube_version() -> str:
    """``KUBE_VERSION`` of ``tools/kube-stack/versions.env``."""
    text = (ROOT / "tools" / "kube-stack" / "versions.env").read_text()
    found = re.search(r"^KUBE_VERSION=(\S+)$", text, re.M)
    if found is None:
        raise SystemExit("tools/kube-stack/versions.env: no KUBE_VERSION")
    return found.group(1)


def module_dir(module: str, version: str) -> Path:
    """The module cache directory of ``module@version`` (``go mod download -json``)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["go", "mod", "init", "x"], cwd=tmp, check=True, capture_output=True)
        out = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return Path(json.loads(out)["Dir"])


def _trim(node: Any) -> Any:
    if isinstance(node, list):
        return [_trim(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _trim(sub) for name, sub in value.items()}
        elif key in KEPT:
            out[key] = _trim(value)
    return out


def _refs(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*(_refs(n) for n in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {node["$ref"].removeprefix(REF)} if "$ref" in node else set()
    for value in node.values():
        found |= _refs(value)
    return found


def _root(schemas: dict[str, Any], api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    for name, schema in schemas.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if (gvk["group"], gvk["version"], gvk["kind"]) == (group, version, kind):
                return name
    raise SystemExit(f"no definition of {api_version} {kind}")


def core_schemas(spec_dir: Path) -> dict[str, Any]:
    """``{"kinds": {"apiVersion/kind": definition}, "schemas": {definition: schema}}``
    holding only what the kinds in ``CORE_KINDS`` reach, trimmed to ``KEPT``."""
    kinds: dict[str, str] = {}
    kept: dict[str, Any] = {}
    for api_version, kind, file in CORE_KINDS:
        schemas = json.loads((spec_dir / file).read_text())["components"]["schemas"]
        root = _root(schemas, api_version, kind)
        kinds[f"{api_version}/{kind}"] = root
        todo = [root]
        while todo:
            name = todo.pop()
            if name in kept:
                continue
            kept[name] = _trim(schemas[name])
            todo.extend(_refs(kept[name]) - set(kept))
    return {"kinds": kinds, "schemas": kept}


def write_chart_crds(out: Path, sources: list[dict[str, str]]) -> None:
    """Write ``CHART_CRDS``: each of ``INSTALLED`` from ``out`` after its source line."""
    for s in sources:
        if s["file"] in INSTALLED:
            header = f"# Source: {s['module']} {s['version']} {s['path']}, unchanged.\n"
            (CHART_CRDS / s["file"]).write_text(header + (out / s["file"]).read_text())


def main() -> None:
    """Write the vendored schemas, ``sources.json`` and ``SOURCES.md`` to ``--out`` (and,
    when that is the package's directory, the chart's CRDs)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    go_mod = ROOT / "tools" / "kube-stack" / "karpenter" / "go.mod"
    versions = {KARPENTER: module_version(go_mod, KARPENTER), KUBERNETES: kube_version()}
    versions[KARPENTER_AWS] = versions[KARPENTER]
    sources: list[dict[str, str]] = []
    for module, file in CRDS:
        src = module_dir(module, versions[module]) / file
        shutil.copyfile(src, out / Path(file).name)
        sources.append(
            {"file": Path(file).name, "module": module, "version": versions[module], "path": file}
        )
    spec_dir = module_dir(KUBERNETES, versions[KUBERNETES]) / "api" / "openapi-spec" / "v3"
    core = core_schemas(spec_dir)
    name = "kubernetes-openapi.json.gz"
    body = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    with (out / name).open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(body)
    sources.append(
        {
            "file": name,
            "module": KUBERNETES,
            "version": versions[KUBERNETES],
            "path": "api/openapi-spec/v3 (trimmed: definitions reachable from "
            + ", ".join(f"{v} {k}" for v, k, _ in CORE_KINDS)
            + ")",
        }
    )
    (out / "sources.json").write_text(json.dumps(sources, indent=2) + "\n")
    lines = [
        "# Vendored OpenAPI schemas: provenance",
        "",
        "Written by `tools/refresh_schemas.py` from the Go module cache; do not edit by hand,",
        "rerun the script. `joiner.api.openapi` validates manifests against them (see",
        "docs/reference/validation.md). `sources.json` holds the same facts for the tests.",
        "",
        "| file | module | version | path in the module |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{s['file']}` | `{s['module']}` | {s['version']} | {s['path']} |" for s in sources
    ]
    (out / "SOURCES.md").write_text("\n".join(lines) + "\n")
    if out.resolve() == OUT.resolve():
        write_chart_crds(out, sources)


if __name__ == "__main__":
    main()
