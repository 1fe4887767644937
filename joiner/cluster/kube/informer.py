"""Informers: list, then watch from the list's resourceVersion; re-list on 410 Gone.

Each ``Informer`` runs in its own daemon thread with its own lightkube client and hands
what it sees to ``deliver`` (the composition root forwards it to the asyncio loop with
``call_soon_threadsafe``, so state is only ever touched on the loop's thread):

* ``deliver(kind, "SYNC", docs)`` after every (re-)list: the complete set of objects,
  which replaces whatever the consumer had for that kind (objects gone while the watch was
  broken disappear);
* ``deliver(kind, "ADDED" | "MODIFIED" | "DELETED", [doc])`` for each watch event.

Every list, watch event or API error counts as the server being reachable, every transport
error as it being unreachable (``ApiReachability``: logged once, and ``/healthz``).

This is client-go's reflector reduced to what Joiner needs (reference kube-test-stack.md
§6): a watch that ends normally is resumed from the last resourceVersion seen; a 410 Gone
(the version was compacted away) re-lists at once; any other error (a refusal, a
transport error, an answer lightkube cannot read) re-lists after ``retry_s``, doubling
after each failure in a row up to ``max_retry_s``. No error ends the thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import httpx2 as httpx
from lightkube import Client
from lightkube.core.exceptions import ApiError

from joiner.cluster.kube.client import ApiReachability, Kind, as_document, namespace_arg

log = logging.getLogger(__name__)

Deliver = Callable[[Kind, str, list[dict[str, Any]]], None]


class Informer:
    """List+watch of one kind (module docstring). ``relists`` counts lists after the first."""

    def __init__(
        self,
        client_factory: Callable[[], Client],
        kind: Kind,
        deliver: Deliver,
        stop: threading.Event,
        *,
        retry_s: float = 1.0,
        max_retry_s: float = 4.0,
        server_timeout_s: int = 240,
        reachability: ApiReachability | None = None,
    ) -> None:
        self._client_factory = client_factory
        self.kind = kind
        self._deliver = deliver
        self._stop = stop
        self.retry_s = retry_s
        self.max_retry_s = max_retry_s
        self.server_timeout_s = server_timeout_s
        self.relists = 0
        self._reachability = reachability or ApiReachability()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"informer-{self.kind.kind}", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        client: Any = self._client_factory()
        first = True
        failures = 0
        while not self._stop.is_set():
            try:
                listing = client.list(self.kind.resource, **namespace_arg(self.kind))
                docs = [as_document(o, self.kind) for o in listing]  # the request runs here
                self._reachability.ok()
                failures = 0
                version = listing.resourceVersion
                if not first:
                    self.relists += 1
                first = False
                self._deliver(self.kind, "SYNC", docs)
                self._watch(client, version)
                continue
            except ApiError as exc:
                self._reachability.ok()  # the server answered
                if exc.status.code == 410:
                    log.info("watch expired kind=%s: re-listing", self.kind.kind)
                    continue
                failures += 1
                log.warning(
                    "list/watch failed kind=%s code=%s: %s; retrying in %.1f s",
                    self.kind.kind,
                    exc.status.code,
                    exc.status.message,
                    self.backoff_s(failures),
                )
            except httpx.HTTPError as exc:
                self._reachability.failed(exc)  # logged once there, as an ERROR
                failures += 1
                log.debug(
                    "list/watch failed kind=%s: %s; retrying in %.1f s",
                    self.kind.kind,
                    exc,
                    self.backoff_s(failures),
                )
            except Exception as exc:
                # An answer lightkube could not read (``client.garbled``: a restarting
                # server's plain-text error, a watch line cut off) or a bug: the thread
                # must not die, or the kind would never be watched again.
                failures += 1
                log.warning(
                    "list/watch failed kind=%s: %s: %s; re-listing in %.1f s",
                    self.kind.kind,
                    type(exc).__name__,
                    exc,
                    self.backoff_s(failures),
                )
            self._stop.wait(self.backoff_s(failures))

    def backoff_s(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failed attempts in a row: ``retry_s``,
        doubling each time, at most ``max_retry_s`` (client-go's reflector backs off the
        same way between failed lists)."""
        return float(min(self.retry_s * 2 ** max(failures - 1, 0), self.max_retry_s))

    def _watch(self, client: Any, version: str) -> None:
        """Watch from ``version`` until stopped; raises ApiError (410 included) and
        transport errors to the caller, which re-lists."""
        while not self._stop.is_set():
            for event, obj in client.watch(
                self.kind.resource,
                **namespace_arg(self.kind),
                resource_version=version,
                server_timeout=self.server_timeout_s,
            ):
                if self._stop.is_set():
                    return
                self._reachability.ok()
                doc = as_document(obj, self.kind)
                version = str(doc.get("metadata", {}).get("resourceVersion") or version)
                self._deliver(self.kind, event, [doc])
