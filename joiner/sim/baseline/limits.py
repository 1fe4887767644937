"""Cluster Autoscaler's cluster-wide limits: ``--max-nodes-total``, ``--cores-total`` and
``--memory-total``.

Upstream (cluster-autoscaler 1.36, ``core/scaleup/orchestrator/orchestrator.go`` and
``resourcequotas/``): a node counts with its *capacity* in whole cores (rounded up) and
bytes of memory, and 1 as a node (``totalNodeResources``, ``utils.GetNodeCoresAndMemory``);
usage is summed over every node in the loop's snapshot, the upcoming ones included
(``calculateUsages``). Before a scale-up, no scale-up at all when the Ready nodes already
number ``max_nodes_total`` (``StaticAutoscaler.RunOnce``); a group one more node of which
would exceed a limit is skipped (``filterValidScaleUpNodeGroups``,
``IsNodeGroupResourceExceeded``); the binpacking estimate stops at the node total
(``EstimationContext``); the chosen option's count is capped by the node total
(``GetCappedNewNodeCount``) and by what each limit has left over the group's per-node
amount (``applyLimits``, ``Tracker.checkQuota``). Scale-down never takes the cluster below
the minimums (``scaledown/resource``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from joiner.api import quantity
from joiner.api.quantity import Resources

#: CA's defaults (``config.DefaultMaxClusterCores``, ``DefaultMaxClusterMemory`` in GiB).
DEFAULT_MAX_CORES = 5000 * 64
DEFAULT_MAX_MEMORY_GIB = 5000 * 64 * 20
GIB = 1024**3


@dataclass(frozen=True, slots=True)
class ClusterLimits:
    """The three flags. ``max_nodes_total`` 0 is no limit; cores and memory are (min, max)
    in cores and GiB, as the flags write them (``<min>:<max>``)."""

    max_nodes_total: int = 0
    cores: tuple[int, int] = (0, DEFAULT_MAX_CORES)
    memory_gib: tuple[int, int] = (0, DEFAULT_MAX_MEMORY_GIB)

    @property
    def bounded(self) -> bool:
        """Whether any limit differs from CA's defaults (the defaults bind no real cluster,
        so usage need not be counted for them)."""
        return self != ClusterLimits()

    def parameters(self) -> dict[str, object]:
        """The report's form (flag names in camelCase)."""
        return {
            "maxNodesTotal": self.max_nodes_total,
            "coresTotal": f"{self.cores[0]}:{self.cores[1]}",
            "memoryTotal": f"{self.memory_gib[0]}:{self.memory_gib[1]}",
        }


@dataclass(frozen=True, slots=True)
class Usage:
    """Nodes, cores and memory bytes of a set of nodes."""

    nodes: int = 0
    cores: int = 0
    memory: int = 0

    def plus(self, capacity: Resources, count: int = 1) -> Usage:
        """This usage with ``count`` more nodes of ``capacity``."""
        cores, memory = node_size(capacity)
        return Usage(self.nodes + count, self.cores + cores * count, self.memory + memory * count)


def describe(limits: ClusterLimits) -> str:
    """The limits in force as CA's flags, e.g. ``--max-nodes-total=3, --cores-total=0:6``."""
    parts = []
    if limits.max_nodes_total:
        parts.append(f"--max-nodes-total={limits.max_nodes_total}")
    if limits.cores != (0, DEFAULT_MAX_CORES):
        parts.append(f"--cores-total={limits.cores[0]}:{limits.cores[1]}")
    if limits.memory_gib != (0, DEFAULT_MAX_MEMORY_GIB):
        parts.append(f"--memory-total={limits.memory_gib[0]}:{limits.memory_gib[1]}")
    return ", ".join(parts) or "defaults"


def node_size(capacity: Resources) -> tuple[int, int]:
    """(cores rounded up, memory bytes) of a node's capacity (``GetNodeCoresAndMemory``)."""
    return math.ceil(capacity.get(quantity.CPU, 0) / 1000), capacity.get(quantity.MEMORY, 0)


#: The flags' values are Go ints (``strconv.Atoi`` of each side of ``<min>:<max>``).
INT64_MAX = 2**63 - 1
_MIN_MAX = re.compile(r"([0-9]+):([0-9]+)", re.ASCII)


def parse_min_max(text: str) -> tuple[int, int]:
    """``"<min>:<max>"`` as CA's ``--cores-total``/``--memory-total`` take it: two ASCII
    decimal integers, each at most 2^63-1, min not above max (``config/flags``
    ``parseMinMaxFlag``).

    Raises:
        ValueError: anything else, with one message naming the value.
    """
    match = _MIN_MAX.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not <min>:<max> (two non-negative decimal integers)")
    low, high = int(match.group(1)), int(match.group(2))
    if high > INT64_MAX:
        raise ValueError(f"{text!r}: {high} is above 2^63-1")
    if low > high:
        raise ValueError(f"{text!r}: min {low} exceeds max {high}")
    return low, high


def allowed_nodes(limits: ClusterLimits, usage: Usage, capacity: Resources, wanted: int) -> int:
    """How many of ``wanted`` new nodes of ``capacity`` the limits allow on top of ``usage``
    (0 when none; ``GetCappedNewNodeCount`` then ``Tracker.checkQuota``)."""
    out = wanted
    if limits.max_nodes_total > 0:
        out = min(out, limits.max_nodes_total - usage.nodes)
    cores, memory = node_size(capacity)
    if cores > 0:
        out = min(out, (limits.cores[1] - usage.cores) // cores)
    if memory > 0:
        out = min(out, (limits.memory_gib[1] * GIB - usage.memory) // memory)
    return max(0, out)


def removal_allowed(limits: ClusterLimits, usage: Usage, capacity: Resources) -> bool:
    """Whether removing a node of ``capacity`` keeps the cluster at or above the minimums."""
    if limits.cores[0] == 0 and limits.memory_gib[0] == 0:
        return True
    cores, memory = node_size(capacity)
    return (
        usage.cores - cores >= limits.cores[0]
        and usage.memory - memory >= limits.memory_gib[0] * GIB
    )
