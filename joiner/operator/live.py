"""Reading a live cluster as manifests: ``joiner plan``, ``advise`` and ``disrupt`` without
``-f`` list the objects they read from files
(``cluster.kube.client.PLAN_KINDS``) and feed them through the same loader."""

from __future__ import annotations

from pathlib import Path

from joiner.api.manifests import ManifestSet, load_documents
from joiner.cluster.kube import client as kube


def read_cluster(
    kubeconfig: Path | None,
    *,
    context: str | None = None,
    namespace: str | None = None,
    kwok: bool = False,
) -> ManifestSet:
    """Every NodePool, EC2NodeClass, NodeClaim, Node, Pod, workload, DaemonSet, PDB and volume
    object of the cluster kubectl would talk to (``kube.connect``: ``kubeconfig``, else
    ``$KUBECONFIG``, ``~/.kube/config``, in-cluster; ``context``), loaded as ``load_files``
    loads a dump of them (``kind`` of a CRD the cluster does not serve becomes a warning).
    ``namespace``: namespaced kinds of that namespace only, with a warning that the other
    namespaces' pods are not seen. ``kwok``: KWOKNodeClasses too (Karpenter-kwok).

    Raises:
        InputError: no kubeconfig found or it is unusable, listing failed (403: missing
            RBAC), or an object does not load (named).
    """
    client = kube.connect(kubeconfig, context=context)
    kinds = (*kube.PLAN_KINDS, kube.KWOKNODECLASS) if kwok else kube.PLAN_KINDS
    docs, warnings = kube.list_documents(client, kinds, namespace=namespace)
    ms = load_documents(docs, cluster_source(kubeconfig, context))
    if namespace is not None:
        warnings.append(
            f"read namespace {namespace} only (--namespace): pods, workloads, DaemonSets and "
            "PodDisruptionBudgets of other namespaces are not seen, so existing nodes may "
            "look emptier than they are"
        )
    ms.warnings[:0] = warnings
    return ms


def cluster_source(kubeconfig: Path | None, context: str | None) -> str:
    """The name a live cluster's objects are loaded under, for messages:
    ``kube:PATH`` (``kube:default`` when kubectl's rules found the kubeconfig), and the
    context when one was named."""
    where = f"kube:{kubeconfig if kubeconfig is not None else 'default'}"
    return where if context is None else f"{where} (context {context})"
