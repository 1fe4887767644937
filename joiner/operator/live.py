"""Reading a live cluster as manifests: ``joiner plan --kubeconfig`` and
``joiner disrupt --kubeconfig`` list the objects they read from files
(``cluster.kube.client.PLAN_KINDS``) and feed them through the same loader."""

from __future__ import annotations

from pathlib import Path

from joiner.api.manifests import ManifestSet, load_documents
from joiner.cluster.kube import client as kube


def read_cluster(kubeconfig: Path, *, kwok: bool = False) -> ManifestSet:
    """Every NodePool, EC2NodeClass, Node, Pod, workload, DaemonSet, PDB and volume object of
    the cluster, loaded as ``load_files`` loads a dump of them (``kind`` of a CRD the cluster
    does not serve becomes a warning). ``kwok``: KWOKNodeClasses too (Karpenter-kwok).

    Raises:
        InputError: the kubeconfig is unusable, listing failed (403: missing RBAC), or an
            object does not load (named).
    """
    client = kube.connect(kubeconfig)
    kinds = (*kube.PLAN_KINDS, kube.KWOKNODECLASS) if kwok else kube.PLAN_KINDS
    docs, warnings = kube.list_documents(client, kinds)
    ms = load_documents(docs, f"kube:{kubeconfig}")
    ms.warnings[:0] = warnings
    return ms
