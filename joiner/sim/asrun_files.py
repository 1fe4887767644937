"""The as-run record's files (``spec.asRun``): the nodes a cluster really ran and, optionally,
its pods' creation and scheduling times, as CSV files beside the Scenario.

``nodes.csv``: header ``node,instanceType,capacityType,zone,nodePool,startSeconds,endSeconds``.
Seconds count from the Scenario's start (``spec.startTime``) and are never negative (a node
that was already running at the start starts at 0); ``endSeconds`` empty: still running at
the end of the range. ``instanceType``, ``zone`` and ``nodePool`` may be empty when the
history did not show them; ``capacityType`` is ``spot``, ``on-demand``, ``reserved`` or empty
(unknown).

``pods.csv``: header ``namespace,pod,createdSeconds,scheduledSeconds``; seconds may be
negative (a pod created before the start); ``scheduledSeconds`` empty: never scheduled within
the range.

Both are read as the trace files are (``joiner.sim.workloads.load_trace``): UTF-8 text
through ``read_text``, the header exactly as above (cells stripped of spaces and tabs; a
quoted cell may hold a comma, a line break or a control character), blank lines skipped,
and each bad row an ``InputError`` naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from joiner.api.errors import InputError
from joiner.api.manifests.yamlio import read_text

NODES_HEADER = (
    "node",
    "instanceType",
    "capacityType",
    "zone",
    "nodePool",
    "startSeconds",
    "endSeconds",
)
PODS_HEADER = ("namespace", "pod", "createdSeconds", "scheduledSeconds")
#: ``capacityType`` values; the empty string is an unknown capacity type.
CAPACITY_TYPES = ("spot", "on-demand", "reserved")

#: What is stripped around a cell: spaces and tabs only, so a name ending in another
#: character Python counts as white space (a separator control, NEL) reads back as written.
_BLANKS = " \t"
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class AsRunNode:
    """One node the cluster ran: seconds from the Scenario's start; ``end_s`` None while it
    still ran at the end of the range; empty strings where the history did not say."""

    node: str
    instance_type: str
    capacity_type: str
    zone: str
    node_pool: str
    start_s: float
    end_s: float | None


@dataclass(frozen=True, slots=True)
class AsRunPod:
    """One pod: created (possibly before the start: negative) and first scheduled (None:
    never within the range), in seconds from the Scenario's start."""

    namespace: str
    pod: str
    created_s: float
    scheduled_s: float | None


@dataclass(frozen=True, slots=True)
class AsRunRecord:
    """``spec.asRun`` loaded: the nodes in file order and the pods (None without
    ``pods``), with the files they came from (``named``: as the Scenario names them,
    relative to it)."""

    nodes_file: str
    nodes: tuple[AsRunNode, ...]
    pods_file: str | None = None
    pods: tuple[AsRunPod, ...] | None = None
    named: tuple[str, str | None] = ("", None)


class _Rows:
    """A CSV file's data rows after its header was checked: ``(line, cells)`` with the cells
    stripped; errors name the file, the line and the column."""

    def __init__(self, path: Path, header: tuple[str, ...], what: str) -> None:
        self.file = str(path)
        self.header = header
        self._text = read_text(path, what=what)

    def fail(self, line: int, column: str | None, message: str) -> InputError:
        """An error at ``line`` (and ``column``) of the file."""
        where = f"line {line}, column {column}" if column else f"line {line}"
        return InputError(f"{where}: {message}", file=self.file)

    def __iter__(self) -> Iterator[tuple[int, dict[str, str]]]:
        reader = csv.reader(io.StringIO(self._text, newline=""))
        try:
            first = next(reader, None)
            if first is None or tuple(c.strip() for c in first) != self.header:
                got = ",".join(first or [])[:120]
                raise InputError(
                    f"header must be {','.join(self.header)!r}, got {got!r}", file=self.file
                )
            for line, row in enumerate(reader, start=2):
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != len(self.header):
                    raise self.fail(
                        line, None, f"expected {len(self.header)} columns, got {len(row)}"
                    )
                yield line, {k: c.strip(_BLANKS) for k, c in zip(self.header, row, strict=True)}
        except csv.Error as exc:
            raise InputError(f"not a CSV file: {exc}", file=self.file) from exc

    def seconds(
        self, line: int, cells: dict[str, str], column: str, *, negative: bool = False
    ) -> float | None:
        """``column``'s seconds, or None when empty.

        Raises:
            InputError: not a finite decimal number, or negative where ``negative`` is False.
        """
        text = cells[column]
        if not text:
            return None
        if not _NUMBER.fullmatch(text):
            raise self.fail(line, column, f"{text[:40]!r} is not a number of seconds")
        value = float(text)
        if not math.isfinite(value):
            raise self.fail(line, column, f"{text[:40]!r} is too large")
        if value < 0 and not negative:
            raise self.fail(
                line, column, f"{text} is negative (seconds count from the Scenario's start)"
            )
        return value


def load_nodes(path: Path) -> tuple[AsRunNode, ...]:
    """The nodes of a ``nodes.csv`` file, in file order.

    Raises:
        InputError: a missing or unreadable file, a wrong header, or a bad row (named by line
            and column): an empty node name, a repeated one, an unknown capacity type, an empty,
            negative or non-finite ``startSeconds``, a bad ``endSeconds`` or one before
            ``startSeconds``.
    """
    rows = _Rows(path, NODES_HEADER, "as-run nodes")
    out: list[AsRunNode] = []
    seen: dict[str, int] = {}
    for line, cells in rows:
        name = cells["node"]
        if not name:
            raise rows.fail(line, "node", "the node name is empty")
        if name in seen:
            raise rows.fail(line, "node", f"node {name!r} is already listed on line {seen[name]}")
        seen[name] = line
        capacity = cells["capacityType"]
        if capacity and capacity not in CAPACITY_TYPES:
            raise rows.fail(
                line,
                "capacityType",
                f"{capacity[:40]!r} is not a capacity type (spot, on-demand, reserved, or "
                "empty for unknown)",
            )
        start = rows.seconds(line, cells, "startSeconds")
        if start is None:
            raise rows.fail(line, "startSeconds", "empty (when the node started is required)")
        end = rows.seconds(line, cells, "endSeconds")
        if end is not None and end < start:
            raise rows.fail(
                line, "endSeconds", f"{cells['endSeconds']} is before startSeconds {start:g}"
            )
        out.append(
            AsRunNode(
                name,
                cells["instanceType"],
                capacity,
                cells["zone"],
                cells["nodePool"],
                start,
                end,
            )
        )
    return tuple(out)


def load_pods(path: Path) -> tuple[AsRunPod, ...]:
    """The pods of a ``pods.csv`` file, in file order.

    Raises:
        InputError: a missing or unreadable file, a wrong header, or a bad row (named by line
            and column): an empty namespace or pod name, a pod listed twice, an empty or
            non-finite ``createdSeconds``, a bad ``scheduledSeconds`` or one before
            ``createdSeconds``.
    """
    rows = _Rows(path, PODS_HEADER, "as-run pods")
    out: list[AsRunPod] = []
    seen: dict[tuple[str, str], int] = {}
    for line, cells in rows:
        for column in ("namespace", "pod"):
            if not cells[column]:
                raise rows.fail(line, column, "empty")
        key = (cells["namespace"], cells["pod"])
        if key in seen:
            raise rows.fail(
                line, "pod", f"pod {'/'.join(key)!r} is already listed on line {seen[key]}"
            )
        seen[key] = line
        created = rows.seconds(line, cells, "createdSeconds", negative=True)
        if created is None:
            raise rows.fail(line, "createdSeconds", "empty (when the pod was created is required)")
        scheduled = rows.seconds(line, cells, "scheduledSeconds", negative=True)
        if scheduled is not None and scheduled < created:
            raise rows.fail(
                line,
                "scheduledSeconds",
                f"{cells['scheduledSeconds']} is before createdSeconds {created:g}",
            )
        out.append(AsRunPod(key[0], key[1], created, scheduled))
    return tuple(out)
