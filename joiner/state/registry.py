"""Name -> object dicts for ``ClusterState``'s pods, NodeClaims and Nodes, and the names of
the live NodeClaims and Nodes kept without walking them (the pods' caches read the same log,
``ClusterState._refresh``).

A ``ClusterState`` keeps every NodeClaim and Node it has seen (a deleted one keeps its record
for the summary and the timeline), so over a simulated week the dicts hold thousands of
objects of which a few hundred live, and a query that sorted the whole dict on each change
grew with the run's history. ``Registry`` is a dict that logs every key written (an object
added, or made anew under a known name, as the API feed does when a deleted node's name
comes back) or removed; ``LiveNames`` follows that log and the node revision to keep the
names of the objects not deleted. An object whose ``deleted_at_s`` is set back to None (a
test or a controller undoing a deletion) is in neither, so the state counts such changes
(``cluster._rereads``) and a change of that count makes ``refresh`` walk the whole
registry once. A copy (``copy.deepcopy``, pickle) of a ``LiveNames`` starts afresh, since
the copied registry's log is rebuilt shorter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar


class _Deletable(Protocol):
    deleted_at_s: float | None


V = TypeVar("V", bound=_Deletable)


class Registry(dict[str, V]):
    """A dict whose every key written or removed is appended to ``log``; ``seq`` numbers each
    key in the order it was first added (the dict's own order, which a rewrite keeps).

    Supports the dict API; ``pop``, ``setdefault``, ``update``, ``clear`` and ``popitem``
    go through the logged paths.
    """

    __slots__ = ("_next", "changes", "log", "seq")

    def __init__(self, items: Mapping[str, V] | Iterable[tuple[str, V]] = ()) -> None:
        super().__init__()
        #: Every key written or removed, in order (it only grows).
        self.log: list[str] = []
        #: Each present key's position among first additions.
        self.seq: dict[str, int] = {}
        #: How many writes were not first additions (a known key written again, or removed):
        #: while it stands still, every key the log gained is a new one, logged once.
        self.changes = 0
        self._next = 0
        pairs = items.items() if isinstance(items, Mapping) else items
        for key, value in pairs:
            self[key] = value

    def __setitem__(self, key: str, value: V) -> None:
        if key not in self:
            self.seq[key] = self._next
            self._next += 1
        else:
            self.changes += 1
        super().__setitem__(key, value)
        self.log.append(key)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        del self.seq[key]
        self.changes += 1
        self.log.append(key)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            value = self[key]
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, V]:
        if not self:
            raise KeyError("popitem(): registry is empty")
        key = next(reversed(self))
        value = self[key]
        del self[key]
        return key, value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        for key in list(self):
            del self[key]

    def __ior__(self, other: Any) -> Registry[V]:  # type: ignore[override,misc]
        self.update(other)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt through ``__init__`` (a dict subclass's default pickling would set its
        # items before its slots exist).
        return (Registry, (list(self.items()),))


class LiveNames:
    """The names in a ``Registry`` whose objects are not deleted, brought up to date by
    ``refresh`` from the keys logged since and the names already known, never by walking
    the whole registry."""

    __slots__ = ("_pos", "_rereads", "_revision", "names")

    def __init__(self) -> None:
        self.names: set[str] = set()
        self._pos = 0
        self._revision = -1
        self._rereads = 0

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy starts afresh: the copied registry's log is rebuilt (``Registry.__reduce__``)
        # and no position in the old one means anything there.
        return (LiveNames, ())

    def refresh(self, registry: Registry[Any], revision: int, rereads: int = 0) -> bool:
        """Bring ``names`` up to date; ``revision`` must change whenever an object's
        ``deleted_at_s`` is set (``cluster._node_revision``), ``rereads`` whenever one
        is set back to None (then every key is looked at again). True when anything may
        have changed since the last call (callers then rebuild what they derive), False
        when neither the log nor the revision moved."""
        log = registry.log
        if self._pos == len(log) and self._revision == revision:
            return False
        if rereads != self._rereads:
            self._rereads = rereads
            candidates = set(registry)
        else:
            candidates = self.names.union(log[self._pos :])
        self.names = {
            k
            for k in candidates
            if (obj := registry.get(k)) is not None and obj.deleted_at_s is None
        }
        self._pos, self._revision = len(log), revision
        return True
