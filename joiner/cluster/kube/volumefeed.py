"""Controller mode's volume objects: the PersistentVolumeClaims, PersistentVolumes and
StorageClasses the informers list and watch, read through the manifest loader, and the node
requirements they give a pod (``scheduling.volumes.volume_terms``, the rule ``joiner plan``
applies; Karpenter ``pkg/controllers/provisioning/scheduling/volumetopology.go``).

Each object is loaded on its own as it arrives; one that does not load is logged and left
out, so a pod using it waits as if it did not exist. ``ClusterFeed`` asks ``terms`` for a
pod's template and keeps pods whose volumes cannot be used yet out of the demand.
"""

from __future__ import annotations

import logging
from typing import Any

from joiner.api.errors import InputError
from joiner.api.manifests import load_documents
from joiner.api.objects import PersistentVolume, PersistentVolumeClaim, PodTemplate, StorageClass
from joiner.api.requirements import Requirements
from joiner.cluster.kube.client import PV, PVC, STORAGECLASS
from joiner.scheduling.volumes import volume_terms

log = logging.getLogger(__name__)

#: The kinds this cache follows (``kind`` field of ``client.Kind``).
VOLUME_KINDS = (PVC.kind, PV.kind, STORAGECLASS.kind)


class VolumeCache:
    """The cluster's claims (by ``namespace/name``), volumes and classes (by name), as the
    loader reads them."""

    def __init__(self, source: str) -> None:
        self._source = source
        #: Per kind (``VOLUME_KINDS``): the loaded objects by key.
        self._by_kind: dict[str, dict[str, Any]] = {kind: {} for kind in VOLUME_KINDS}

    def apply(self, kind: str, event: str, key: str, doc: dict[str, Any]) -> None:
        """One change of the object ``key`` (``namespace/name``, or ``name``) of ``kind``
        (``ADDED``, ``MODIFIED`` or ``DELETED``): it is loaded and kept (what loading warns
        about is logged), or dropped when deleted or unreadable (logged with its key)."""
        store = self._by_kind[kind]
        store.pop(key, None)
        if event == "DELETED":
            return
        try:
            loaded = load_documents([doc], self._source)
        except InputError as exc:
            log.warning("%s %s not read: %s; pods using it wait", kind, key, exc)
            return
        for warning in loaded.warnings:
            log.warning("%s %s: %s", kind, key, warning)
        for obj in (*loaded.pvcs, *loaded.pvs, *loaded.storageclasses):
            store[key] = obj

    def terms(self, t: PodTemplate) -> tuple[Requirements, ...]:
        """``volume_terms`` of ``t`` over its own claims, their volumes and classes.

        Raises:
            MissingVolumeError: a claim cannot be used yet (``scheduling.volumes``).
        """
        if not t.volume_claims:
            return ()
        known_claims = self._by_kind[PVC.kind]
        known_volumes = self._by_kind[PV.kind]
        known_classes = self._by_kind[STORAGECLASS.kind]
        claims: list[PersistentVolumeClaim] = [
            c for c in (known_claims.get(f"{t.namespace}/{n}") for n in t.volume_claims) if c
        ]
        volumes: list[PersistentVolume] = [
            v for v in (known_volumes.get(c.volume_name or "") for c in claims) if v
        ]
        classes: list[StorageClass] = [
            s for s in (known_classes.get(c.storage_class or "") for c in claims) if s
        ]
        return volume_terms(t, claims, volumes, classes)
