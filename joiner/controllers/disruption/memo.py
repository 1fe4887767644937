"""Consolidation verdicts kept across passes while nothing they read has changed.

Karpenter re-runs a pass whenever its cluster state changes and also on a timer; each pass
simulates every consolidation candidate again. Joiner runs the extra passes too (a node whose
``consolidateAfter`` just passed wakes the controller while the cluster is otherwise the
same), but a candidate's simulation is a pure function of what it reads, so when all of that
is unchanged the earlier answer is the answer. Only the work is saved: the decision, its
order and its reasons are the ones re-simulating would give.

What a consolidation simulation (``command.simulate``, ``methods._consolidate``) and the room
pre-check (``room.Room``) read, and how ``World`` tells that it is unchanged:

* pods, nodes and NodeClaims (bound, pending, deleting, terminating, their free room and
  the candidates' pods): ``ClusterState.change_key`` and ``generation``;
* the NodePools and what their NodeClasses offer (instance types, offerings' availability
  and prices): the provisioner's templates, compared by object identity (the cloud hands
  out new objects whenever availability or a price changes) and the limits left;
* DaemonSets and CapacityBuffer virtual pods: by identity;
* the spot-to-spot setting.

Only failures are kept (a ``Verdict``): a command ends the pass and is validated by a fresh
simulation anyway. A candidate is named by its NodeClaim: its launched instance (whose
offering gives its price and capacity type) and its pods are part of the world.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.verdicts import Verdict
from joiner.controllers.provisioning.provisioner import Provisioner
from joiner.state.cluster import ClusterState

#: What a memoised computation gives besides a failure (a command).
T = TypeVar("T")


class World:
    """What a pass's consolidation simulations read, compared by value or object identity.

    ``same(other)`` is true only when every input listed in the module docstring is the
    same object (or equal value) in both.
    """

    __slots__ = ("_objects", "_values")

    def __init__(self, state: ClusterState, provisioner: Provisioner, spot_to_spot: bool) -> None:
        templates = provisioner.templates()
        buffers = provisioner.buffers
        virtual = buffers.virtual_pods() if buffers is not None else []
        daemonsets = sorted(state.daemonsets.items())
        self._values: tuple[object, ...] = (
            state.change_key(),
            state.generation,
            spot_to_spot,
            tuple(k for k, _ in daemonsets),
            tuple((t.nodepool.name, t.remaining) for t in templates),
        )
        self._objects: tuple[object, ...] = (
            *(t.nodepool for t in templates),
            *(t.instance_types for t in templates),
            *(ds for _, ds in daemonsets),
            *virtual,
        )

    def same(self, other: World) -> bool:
        """Every input is equal (values) or the very same object (objects)."""
        return (
            self._values == other._values
            and len(self._objects) == len(other._objects)
            and all(a is b for a, b in zip(self._objects, other._objects, strict=True))
        )


class VerdictMemo:
    """Why consolidating a set of candidates failed, per candidate set, valid for one
    ``World``; ``begin`` starts a pass and forgets everything when the world changed."""

    def __init__(self) -> None:
        self._world: World | None = None
        self._next: Callable[[], World] | None = None
        self._failed: dict[tuple[str, ...], Verdict] = {}
        self.hits = 0

    def begin(self, world: Callable[[], World]) -> None:
        """Start a pass whose world ``world()`` gives: the verdicts are kept only if it is
        the same as the last pass's. It is called when the pass first asks or tells the
        memo anything (a pass without consolidation candidates never builds it; nothing a
        pass does before executing its command changes the cluster)."""
        self._next = world

    def _sync(self) -> None:
        if self._next is None:
            return
        world, self._next = self._next(), None
        if self._world is None or not self._world.same(world):
            self._failed.clear()
        self._world = world

    @staticmethod
    def _key(method: str, cands: Sequence[Candidate]) -> tuple[str, ...]:
        return (method, *(c.claim.name for c in cands))

    def verdict(
        self, method: str, cands: Sequence[Candidate], compute: Callable[[], T]
    ) -> T | Verdict:
        """The failure kept for ``cands`` under ``method``, else ``compute()``, whose
        failure (a ``Verdict``) is kept for later passes in the same world."""
        why = self.failed(method, cands)
        if why is not None:
            return why
        got = compute()
        if isinstance(got, Verdict):
            self.remember(method, cands, got)
        return got

    def failed(self, method: str, cands: Sequence[Candidate]) -> Verdict | None:
        """The reason an earlier pass in the same world gave for ``cands`` under ``method``,
        or None when it has none."""
        self._sync()
        why = self._failed.get(self._key(method, cands))
        if why is not None:
            self.hits += 1
        return why

    def remember(self, method: str, cands: Sequence[Candidate], why: Verdict) -> None:
        """Keep the failure ``why`` for ``cands`` under ``method``."""
        self._sync()
        self._failed[self._key(method, cands)] = why
