"""Fenced writes: no write to the API server or the cloud unless this process still leads.

A leader paused past its lease (SIGSTOP, a long GC pause, a frozen VM) resumes with its
timers overdue and its informers' sockets full: without a fence it acts on stale state in
the instant before its renewal thread notices that another replica leads (measured on the
test stack: 3 of 14 trials drained nodes and evicted pods). So every write goes through a
``Fence`` first:

* ``Fence.check(what)`` asks the leader elector (``LeaderElector.may_write``: led at the
  last successful renewal, which started less than the renew deadline ago by this
  process's monotonic clock). When the answer is no, the write is dropped (``check``
  raises ``LeaseLostError``, which no adapter catches), the fence trips for good, and
  ``on_tripped`` runs once: the composition root stops the process, as a lost lease does.
* ``fenced(target, fence, writes)`` wraps a client (the lightkube ``Client``, a
  ``CloudProvider``) so that each method named in ``writes`` checks the fence first;
  every other attribute (reads) passes through unchanged.

* ``client.guard_writes(client, fence.check)`` checks once more as each request to the API
  server leaves (an httpx request hook, after lightkube has built the request): a pause
  between the call's check and the send (serialising the object, another thread holding
  the GIL) would otherwise let that one write reach the API server after the hand-over
  (seen once in CI: a Node patch). What is left is the time between that hook and the
  bytes on the socket, within httpcore; as with client-go's leader election
  (``k8s.io/client-go/tools/leaderelection``, "does not guarantee that only one client is
  acting as a leader"), no client-side check closes it entirely.

Without leader election (``--dry-run``, or ``leaderElection.enabled: false``) the fence
is open: ``may_write`` is None.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)

#: lightkube ``Client`` methods that write.
KUBE_WRITES = frozenset({"create", "replace", "patch", "delete", "deletecollection", "apply"})
#: ``CloudProvider`` methods that write (the AWS adapter's launch templates are made
#: inside ``create``).
CLOUD_WRITES = frozenset({"create", "delete"})


class LeaseLostError(RuntimeError):
    """A write was attempted after this process lost (or could not confirm) its lease;
    the write was not made. Controllers must not catch it."""


class Fence:
    """Checks the lease before each write (module docstring). Thread-safe.

    ``may_write`` None: always open. ``on_tripped(what)`` runs once, at the first refused
    write; ``on_dropped()`` at every refused write (a metric)."""

    def __init__(
        self,
        may_write: Callable[[], bool] | None,
        on_tripped: Callable[[str], None] | None = None,
        *,
        on_dropped: Callable[[], None] | None = None,
    ) -> None:
        self._may_write = may_write
        self._on_tripped = on_tripped
        self._on_dropped = on_dropped
        self._lock = threading.Lock()
        #: The first write refused (None while the fence is open).
        self.tripped_by: str | None = None
        #: Writes dropped since the fence tripped, the first included.
        self.dropped = 0

    @property
    def tripped(self) -> bool:
        """True once a write has been refused; it never resets."""
        return self.tripped_by is not None

    def check(self, what: str) -> None:
        """Allow the write ``what`` (a short description, for the log) or drop it.

        Raises:
            LeaseLostError: the lease is not (or no longer provably) held; the fence has
                tripped (now or before) and the write must not be made.
        """
        with self._lock:
            if self.tripped_by is None:
                if self._may_write is None or self._may_write():
                    return
                self.tripped_by = what
                first = True
            else:
                first = False
            self.dropped += 1
        if self._on_dropped is not None:
            self._on_dropped()
        if first:
            log.error(
                "fenced: the lease is no longer held; dropped %s and stopping all writes", what
            )
            if self._on_tripped is not None:
                self._on_tripped(what)
        else:
            log.info("fenced: dropped %s", what)
        raise LeaseLostError(f"lease lost: {what} dropped")


def fenced(target: Any, fence: Fence, writes: Iterable[str]) -> Any:
    """``target`` with each method named in ``writes`` checking ``fence`` first."""
    return _Fenced(target, fence, frozenset(writes))


class _Fenced:
    def __init__(self, target: Any, fence: Fence, writes: frozenset[str]) -> None:
        self._target = target
        self._fence = fence
        self._writes = writes

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name not in self._writes or not callable(attr):
            return attr

        @functools.wraps(attr)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            self._fence.check(_describe(name, args, kwargs))
            return attr(*args, **kwargs)

        return guarded

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._target, name, value)


def _describe(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """``create Node c-1`` style description of a call, for the log."""
    parts = [method]
    for a in args[:2]:
        if isinstance(a, type):
            parts.append(a.__name__)
        elif isinstance(a, str):
            parts.append(a)
        else:
            kind = getattr(a, "kind", None) or type(a).__name__
            meta = getattr(a, "metadata", None)
            name = getattr(meta, "name", None) if meta is not None else None
            parts.append(f"{kind} {name}" if name else str(kind))
    if "name" in kwargs:
        parts.append(str(kwargs["name"]))
    return " ".join(parts)
