"""``joiner install-crds`` never overwrites CRDs another manager installed (issue 14).

Karpenter's own ``nodepools.karpenter.sh`` (from the pinned Karpenter module), installed the
way Helm does (field manager ``helm``, the release annotations and managed-by label), sits in
a fresh stack of its own; ``install-crds`` must refuse with exit 2, name the owner, and
change nothing: the CRD keeps its resourceVersion and no other Joiner CRD appears. The
chart's crds/, installed as Helm installs them (unlabelled, no release), are identical to
Joiner's and left as they are.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from karpenter import build_karpenter, karpenter_paths
from kubestack import KubeStack, stack_paths
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

#: ``karpenter``: Karpenter's CRDs are built on first use (``conftest`` gives the build time).
pytestmark = [pytest.mark.e2e, pytest.mark.karpenter]


@pytest.fixture(scope="module")
def own_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeStack]:
    """A stack of this module's own: the shared one holds Joiner's CRDs."""
    stack = KubeStack(stack_paths())
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def test_refuses_a_helm_owned_karpenter_crd(own_stack: KubeStack, tmp_path: Path) -> None:
    paths = karpenter_paths()
    if paths.missing():
        paths = build_karpenter(tmp_path / "karpenter-build.log")
    doc = yaml.safe_load((paths.crds / "karpenter.sh_nodepools.yaml").read_text())
    doc["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "Helm"
    doc["metadata"].setdefault("annotations", {}).update(
        {"meta.helm.sh/release-name": "karpenter", "meta.helm.sh/release-namespace": "kube-system"}
    )
    client = Client(KubeConfig.from_file(own_stack.kubeconfig))
    client.apply(CustomResourceDefinition.from_dict(doc), field_manager="helm", force=True)
    before = client.get(CustomResourceDefinition, "nodepools.karpenter.sh")
    deadline = time.monotonic() + 60
    while not any(
        c.type == "Established" and c.status == "True"
        for c in (before.status.conditions if before.status else None) or []
    ):  # the API server's own status updates come first, then nothing may change
        assert time.monotonic() < deadline, "the CRD was never Established"
        time.sleep(0.2)
        before = client.get(CustomResourceDefinition, "nodepools.karpenter.sh")
    time.sleep(1)
    before = client.get(CustomResourceDefinition, "nodepools.karpenter.sh")

    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from joiner.cli.main import main; main()",
            "install-crds",
            "--kubeconfig",
            str(own_stack.kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = " ".join(proc.stderr.split())
    assert "nodepools.karpenter.sh" in message
    assert "Helm release karpenter in namespace kube-system" in message
    after = client.get(CustomResourceDefinition, "nodepools.karpenter.sh")
    assert after.metadata.generation == before.metadata.generation
    assert after.metadata.resourceVersion == before.metadata.resourceVersion
    assert "joiner" not in {f.manager for f in after.metadata.managedFields or []}
    for name in ("nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"):
        with pytest.raises(ApiError) as missing:
            client.get(CustomResourceDefinition, name)
        assert missing.value.status.code == 404


def _established(client: Client, name: str) -> CustomResourceDefinition:
    """The CRD ``name`` once the API server has Established it (and a second has passed:
    its own status updates come first, then nothing may change)."""
    deadline = time.monotonic() + 60
    while True:
        crd = client.get(CustomResourceDefinition, name)
        conditions = (crd.status.conditions if crd.status else None) or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            break
        assert time.monotonic() < deadline, f"{name} was never Established"
        time.sleep(0.2)
    time.sleep(1)
    return client.get(CustomResourceDefinition, name)


def test_leaves_the_charts_crds_as_helm_installed_them(own_stack: KubeStack) -> None:
    """The chart's crds/ are Karpenter's CRDs, unlabelled; Helm installs them as field
    manager ``helm`` without release annotations. ``install-crds`` then finds each one
    identical to its own: exit 0, each reported unchanged, nothing written."""
    from lightkube.codecs import load_all_yaml

    client = Client(KubeConfig.from_file(own_stack.kubeconfig))
    try:  # the previous test's Helm-release CRD
        client.delete(CustomResourceDefinition, "nodepools.karpenter.sh")
    except ApiError as exc:
        assert exc.status.code == 404
    deadline = time.monotonic() + 60
    while True:
        try:
            client.get(CustomResourceDefinition, "nodepools.karpenter.sh")
        except ApiError as exc:
            assert exc.status.code == 404
            break
        assert time.monotonic() < deadline, "the CRD was never deleted"
        time.sleep(0.2)
    chart = Path(__file__).resolve().parents[2] / "deploy" / "chart" / "crds"
    names = []
    for path in sorted(chart.glob("*.yaml")):
        for obj in load_all_yaml(path.read_text()):
            client.apply(obj, field_manager="helm", force=True)
            names.append(obj.metadata.name)
    assert len(names) == 3
    before = {n: _established(client, n).metadata.resourceVersion for n in names}

    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from joiner.cli.main import main; main()",
            "install-crds",
            "--kubeconfig",
            str(own_stack.kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    for name in names:
        assert f"customresourcedefinition {name} unchanged" in out, out
        after = client.get(CustomResourceDefinition, name)
        assert after.metadata.resourceVersion == before[name], name
        assert "joiner" not in {f.manager for f in after.metadata.managedFields or []}
