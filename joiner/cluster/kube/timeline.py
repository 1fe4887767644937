"""The Timeline port in controller mode: timeline records become Kubernetes Events.

``KubeTimeline.record`` logs each record of the controllers' timeline (``joiner.api.timeline``
kinds: drainStarted, eviction, terminated, ...) and posts it as a ``core/v1`` Event on the pod
it names, or else on the NodeClaim of the node it names; ``post`` is the Event sink
``cluster/kube/events.py`` (Karpenter's own Events) writes through. Events are best effort,
as client-go's recorder makes them: a refused write is logged, never raised.

In dry-run (shadow mode) nothing is written: each Event is handed to ``report`` as a dict
(``{"action": "event", ...}``) instead.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Event

from joiner.api.logkeys import log_keys
from joiner.state.cluster import ClusterState

log = logging.getLogger(__name__)

#: Where shadow mode's would-be writes go: one dict per write (``--report FILE``).
Report = Callable[[dict[str, Any]], None]


def now_rfc3339() -> str:
    """The wall clock in UTC as an RFC 3339 timestamp to the second (Events, conditions)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubeTimeline:
    """The Timeline port in controller mode: each record is logged and becomes a
    Kubernetes Event (``core/v1``, source component ``joiner``) on the pod it names, or
    else on the NodeClaim of the node it names."""

    def __init__(
        self,
        client: Client | None,
        state: ClusterState,
        *,
        dry_run: bool,
        report: Report | None = None,
        namespace: str = "default",
    ) -> None:
        self._client = client
        self._state = state
        self.dry_run = dry_run
        self._report = report
        self.namespace = namespace
        self.listeners: list[Callable[[str, str | None, str | None, str], None]] = []

    def _keys(self, node: str | None, pod: str | None) -> dict[str, dict[str, str]]:
        """The log keys of a record: its pod, and its node with the node's NodeClaim (a
        record of a NodeClaim that has no node names the NodeClaim)."""
        st_node = self._state.nodes.get(node) if node is not None else None
        if node is not None and st_node is None and node in self._state.nodeclaims:
            return log_keys(NodeClaim=node, Pod=pod)
        claim = st_node.nodeclaim if st_node is not None else None
        return log_keys(Node=node, NodeClaim=claim, Pod=pod)

    def record(
        self, kind: str, *, node: str | None = None, pod: str | None = None, detail: str = ""
    ) -> None:
        """Log ``kind`` and post it as an Event (dry-run: report it instead)."""
        log.info("%s node=%s pod=%s %s", kind, node, pod, detail, extra=self._keys(node, pod))
        for listener in self.listeners:
            listener(kind, node, pod, detail)
        if self.dry_run:
            if self._report is not None:
                self._report(
                    {"action": "event", "reason": kind, "node": node, "pod": pod, "detail": detail}
                )
            return
        involved: dict[str, Any]
        if pod is not None:
            ns, _, name = pod.partition("/")
            involved = {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name}
        elif node is not None:
            st_node = self._state.nodes.get(node)
            if st_node is not None and st_node.nodeclaim is None:
                # A Node without a NodeClaim (its NodeClaim is gone): the Event is the Node's.
                involved = {"apiVersion": "v1", "kind": "Node", "name": node}
            else:
                claim = st_node.nodeclaim if st_node is not None and st_node.nodeclaim else node
                involved = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": claim}
        else:
            return
        reason = kind[:1].upper() + kind[1:]
        warning = kind in ("evictionBlocked", "podLost", "nodeRepairBlocked")
        self.post(involved, reason, detail or reason, warning=warning)

    def post(
        self, involved: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None:
        """Create one core/v1 Event about ``involved`` (an ObjectReference: apiVersion,
        kind, name, and namespace for a namespaced object), in its namespace or else the
        event namespace; source component ``joiner``. A refused write is logged, never
        raised (Events are best effort, as client-go's recorder). Dry run: reported."""
        if self.dry_run:
            if self._report is not None:
                self._report(
                    {"action": "event", "reason": reason, "involved": involved, "message": message}
                )
            return
        if self._client is None:
            return
        event_ns = involved.get("namespace") or self.namespace
        now = now_rfc3339()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved['name']}.{secrets.token_hex(8)}",
                "namespace": event_ns,
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": "Warning" if warning else "Normal",
            "source": {"component": "joiner"},
            "reportingComponent": "joiner",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        api: Any = self._client
        try:
            api.create(Event.from_dict(event), namespace=event_ns)
        except ApiError as exc:
            log.warning(
                "event %s on %s not posted: %s %s",
                reason,
                involved["name"],
                exc.status.code,
                exc.status.message,
            )
