"""Each node's disruption verdicts over time: why it was kept, pass after pass, or the
command that took it.

Karpenter decides afresh on every disruption pass (kubernetes-sigs/karpenter
``pkg/controllers/disruption/controller.go`` ``Controller.disrupt``: candidates, then the
methods in order) and tells why a node stays only through that pass's Events and logs.
``VerdictHistory`` keeps those answers: a pass records, for every node it saw, the method
that gave the verdict and the ``Verdict`` itself (``verdicts.VerdictKind``), or that the node
was chosen for the pass's command; an executed command records its nodes as disrupted.

Memory stays bounded on a long run: a node gets a new entry only when its verdict differs
from its last one (same outcome, method, verdict and action is the same entry), and only
its ``MAX_ENTRIES_PER_NODE`` most recent changes are kept (``omitted`` counts the others).
Time is the run's virtual time; nothing here reads a clock or a random stream.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from joiner.api.errors import InputError
from joiner.controllers.disruption.verdicts import DisruptionMethod, Verdict, VerdictKind

if TYPE_CHECKING:
    from joiner.controllers.disruption.command import Command

#: The most recent verdict changes kept per node.
MAX_ENTRIES_PER_NODE = 200

#: ``--explain`` value asking for every node (no Kubernetes node name contains ``*``).
ALL_NODES = "*"
#: Node names an unknown-node error lists at most.
NAMES_LISTED = 20


def explain_names(explain: str | Sequence[str]) -> tuple[str, ...]:
    """The nodes ``--explain`` asks for: one name or several (the option repeated, or
    names joined by commas, which no Kubernetes node name contains), each once, in the
    order given; ``(ALL_NODES,)`` when any of them is ``ALL_NODES``.

    Raises:
        InputError: no name given (empty, or only commas), or ``ALL_NODES`` beside names
            (a misspelt one would go unnoticed).
    """
    given = [explain] if isinstance(explain, str) else list(explain)
    names = tuple(dict.fromkeys(n.strip() for text in given for n in text.split(",")))
    names = tuple(n for n in names if n)
    if not names:
        raise InputError(
            "names no node (give a node name, or '*' for every node)", field="--explain"
        )
    if ALL_NODES in names and len(names) > 1:
        others = ", ".join(repr(n) for n in names if n != ALL_NODES)
        raise InputError(
            f"'*' already gives every node; give it alone, or name the nodes ({others}) without it",
            field="--explain",
        )
    return names


#: Where a verdict came from when no method gave it (``candidates.collect``).
CANDIDATE_SELECTION = "Candidates"
#: The ``method`` of an ``Outcome.EXPIRED`` entry.
EXPIRATION = "Expiration"


class Outcome(StrEnum):
    """What a pass did with a node."""

    #: A verdict kept it (``HistoryEntry.verdict`` says why).
    KEPT = "kept"
    #: The pass's command takes it; Emptiness and consolidation commands are validated
    #: ``VALIDATION_DELAY_S`` later (Karpenter ``validation.go`` ``Validate``) first.
    CHOSEN = "chosen"
    #: A command taking it was executed (its replacements launched, the node tainted).
    DISRUPTED = "disrupted"
    #: Its NodeClaim passed ``expireAfter`` and expiration deleted it: not a disruption
    #: method, it heeds no budget (Karpenter ``nodeclaim/expiration/controller.go``
    #: ``Controller.Reconcile``).
    EXPIRED = "expired"


@dataclass(frozen=True)
class HistoryEntry:
    """One change of a node's verdict.

    Attributes:
        at_s: run time of the pass (or of the command's execution), seconds.
        pass_number: the pass that recorded it, counted from 1 over the run.
        outcome: kept, chosen or disrupted.
        method: the method that gave the verdict or made the command (for ``NOT_REACHED``,
            the method whose command ended the pass); None for a node candidate selection
            left out (``candidates.collect``).
        verdict: why it was kept (``Outcome.KEPT`` only).
        action: ``Delete`` or ``Replace`` (a command's outcomes only).
        replacements: the command's expected replacements, ``instanceType/zone/capacityType``.
    """

    at_s: float
    pass_number: int
    outcome: Outcome
    method: DisruptionMethod | None = None
    verdict: Verdict | None = None
    action: str = ""
    replacements: tuple[str, ...] = ()

    def same_verdict(self, other: HistoryEntry) -> bool:
        """Both say the same thing (times and pass numbers aside)."""
        return (self.outcome, self.method, self.verdict, self.action, self.replacements) == (
            other.outcome,
            other.method,
            other.verdict,
            other.action,
            other.replacements,
        )

    @property
    def method_name(self) -> str:
        """The method's name, ``Expiration`` for an expiry, or ``Candidates`` for candidate
        selection."""
        if self.outcome is Outcome.EXPIRED:
            return EXPIRATION
        return self.method.value if self.method is not None else CANDIDATE_SELECTION

    def message(self) -> str:
        """The entry in English, for people."""
        if self.outcome is Outcome.KEPT:
            return self.verdict.message() if self.verdict is not None else ""
        if self.outcome is Outcome.EXPIRED:
            return "expired: expireAfter passed, so it is drained and deleted"
        verb = "chosen" if self.outcome is Outcome.CHOSEN else "disrupted"
        text = f"{verb}: {self.action}"
        if self.replacements:
            text += f" with {', '.join(self.replacements)}"
        return text

    def to_json(self) -> dict[str, object]:
        """The entry as the ``explain`` documents carry it (``api.outputs.VerdictEntry``)."""
        verdict = self.verdict
        return {
            "atSeconds": round(self.at_s, 3),
            "passNumber": self.pass_number,
            "outcome": self.outcome.value,
            "method": self.method_name,
            "kind": verdict.kind.value if verdict is not None else "",
            "fields": verdict_fields(verdict) if verdict is not None else {},
            "action": self.action,
            "replacements": list(self.replacements),
            "message": self.message(),
        }


def verdict_fields(verdict: Verdict) -> dict[str, object]:
    """The fields of ``verdict`` its kind set (those that differ from their defaults), by
    name; a nested ``cause`` is given as its kind."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(verdict):
        if f.name == "kind":
            continue
        value = getattr(verdict, f.name)
        if value == f.default:
            continue
        if isinstance(value, Verdict):
            value = value.kind.value
        elif isinstance(value, float):
            value = round(value, 6)
        out[f.name] = value
    return out


#: A node the pass saw that no method gave a verdict and the command did not take: an
#: earlier command ended the pass first.
NOT_REACHED = Verdict(VerdictKind.NOT_REACHED)


@dataclass
class NodeHistory:
    """One node's verdict changes, oldest first, and how many older ones were dropped."""

    entries: deque[HistoryEntry]
    omitted: int = 0

    def add(self, entry: HistoryEntry) -> None:
        """Append ``entry`` unless it says what the last one says."""
        if self.entries and self.entries[-1].same_verdict(entry):
            return
        if len(self.entries) == self.entries.maxlen:
            self.omitted += 1
        self.entries.append(entry)

    def to_json(self) -> dict[str, object]:
        """``{"omitted": n, "entries": [...]}`` (``api.outputs.NodeVerdictHistory``)."""
        return {"omitted": self.omitted, "entries": [e.to_json() for e in self.entries]}


class VerdictHistory:
    """Per node, the changes of its disruption verdict over a run (see the module)."""

    def __init__(self, max_entries_per_node: int = MAX_ENTRIES_PER_NODE) -> None:
        self._max = max_entries_per_node
        self._nodes: dict[str, NodeHistory] = {}
        self.passes = 0

    def nodes(self) -> list[str]:
        """The names of the nodes any pass saw, sorted."""
        return sorted(self._nodes)

    def of(self, node: str) -> NodeHistory | None:
        """``node``'s history, or None when no pass saw it."""
        return self._nodes.get(node)

    def _add(self, node: str, entry: HistoryEntry) -> None:
        got = self._nodes.get(node)
        if got is None:
            got = self._nodes[node] = NodeHistory(deque(maxlen=self._max))
        got.add(entry)

    def record_pass(
        self,
        now_s: float,
        reasons: Mapping[str, Verdict],
        methods: Mapping[str, DisruptionMethod],
        seen: Iterable[str],
        command: Command | None,
    ) -> None:
        """One pass at ``now_s``: ``reasons`` (node -> verdict) and the method that gave
        each (``methods``; none for candidate selection's), every node name the pass saw
        (``seen``, in a stable order) and its command, if any."""
        self.passes += 1
        chosen = set(command.names) if command is not None else set()
        for name in seen:
            if name in chosen:
                assert command is not None
                self._add(name, self._command_entry(now_s, command, Outcome.CHOSEN))
                continue
            verdict = reasons.get(name)
            if verdict is None:  # the command's method ended the pass first
                verdict = NOT_REACHED
                method = command.method if command is not None else None
            else:
                method = methods.get(name)
            self._add(name, HistoryEntry(now_s, self.passes, Outcome.KEPT, method, verdict))

    def record_command(self, now_s: float, command: Command) -> None:
        """``command`` was executed at ``now_s``: its nodes are disrupted. An entry of the
        same instant saying they were chosen is replaced (a command executed in its pass)."""
        entry = self._command_entry(now_s, command, Outcome.DISRUPTED)
        for name in command.names:
            got = self._nodes.get(name)
            if got is not None and got.entries:
                last = got.entries[-1]
                if last.outcome is Outcome.CHOSEN and last.at_s == now_s:
                    got.entries.pop()
            self._add(name, entry)

    def record_expired(self, now_s: float, node: str) -> None:
        """Expiration started deleting ``node`` at ``now_s``."""
        self._add(node, HistoryEntry(now_s, self.passes, Outcome.EXPIRED))

    def _command_entry(self, now_s: float, command: Command, outcome: Outcome) -> HistoryEntry:
        reps = tuple(
            f"{r.instance_type.name}/{r.offering.zone}/{r.offering.capacity_type}"
            for r in command.replacements
        )
        return HistoryEntry(
            now_s, self.passes, outcome, command.method, action=command.action, replacements=reps
        )

    def to_json(self, names: Iterable[str]) -> dict[str, dict[str, object]]:
        """The histories of ``names`` (those a pass saw), by node name."""
        return {n: self._nodes[n].to_json() for n in names if n in self._nodes}


def unknown_node(name: str, known: Iterable[str], *, field: str = "--explain") -> InputError:
    """The error for ``--explain NAME`` naming a node no pass saw: it lists the nodes that
    exist (the first ``NAMES_LISTED``, sorted) and says how to ask for all of them."""
    names = sorted(known)
    if not names:
        return InputError(f"no node named {name!r}: no disruption pass saw any node", field=field)
    shown = ", ".join(names[:NAMES_LISTED])
    more = len(names) - NAMES_LISTED
    tail = f" and {more} more" if more > 0 else ""
    return InputError(
        f"no node named {name!r}; the nodes it can explain are {shown}{tail} "
        f"(--explain '{ALL_NODES}' gives them all)",
        field=field,
    )
