"""A synthetic week of a cluster in a real Prometheus, imported and replayed (``make bench``).

The benchmark of ``joiner import``: a seeded generator writes the kube-state-metrics series of
a synthetic cluster (by default a week at 1-minute resolution, 500 workloads, 300 nodes at
the peak) in the OpenMetrics text format, and its objects as a ``kubectl get -o yaml`` dump;
the real ``promtool tsdb create-blocks-from openmetrics`` backfills the series into a TSDB; the
real ``prometheus`` serves it; then ``joiner import --prometheus URL ... -f dump --out DIR``
and ``joiner simulate DIR/scenario.yaml`` run as child processes whose CPU seconds (user +
system, ``os.wait4``) and peak memory (max RSS) are measured. Targets: import under 60 CPU s
and 1 GiB, the simulation of the imported week with its three rows (as-run, Joiner, Cluster
Autoscaler) under 120 CPU s. Prints one JSON document with the machine's
``calibrationCpuSeconds`` beside the figures (see ``benchmarks/realistic.py``).

The synthetic cluster (``Cluster``, all from ``--seed``):

* workloads in 20 team namespaces: Deployments (about a third behind a
  HorizontalPodAutoscaler following a diurnal cycle with weekends at 60 %, the rest at fixed
  replicas with a few manual scalings and rollouts, each rollout a new ReplicaSet),
  StatefulSets, and CronJobs whose runs are Jobs named as the CronJob controller names them
  (``<cronjob>-<scheduled unix minutes>``), each with its pods;
* nodes: three on-demand nodes of an EKS managed node group ``system``
  (``eks.amazonaws.com/nodegroup``, ``eks.amazonaws.com/capacityType: ON_DEMAND``), and
  Karpenter NodePools ``general`` (spot and on-demand c/m/r instances of generation 6 and 7,
  ``xlarge`` to ``4xlarge``) and ``stateful`` (on-demand r instances): a base running the whole
  week, nodes launched every weekday morning and removed every evening, and Spot nodes living
  a few hours to a day each (interrupted and replaced); instance types, their vCPUs and memory
  from the packaged us-east-1 catalog, zones us-east-1a to c;
* a pod whose node goes away ends there and is replaced on another node.

The series are those kube-state-metrics v2 writes (names and labels as in its
``docs/metrics``; node labels through ``--metric-labels-allowlist``, so ``kube_node_labels``
carries ``label_node_kubernetes_io_instance_type``, ``label_karpenter_sh_capacity_type``,
``label_eks_amazonaws_com_capacity_type`` and so on, as KSM's ``internal/store/utils.go``
``labelName`` sanitises and snake-cases them), each with the ``job`` label a scrape adds
(its ``instance`` label is left out, a sixth of the bytes). Objects that exist before the
range start have samples from 15 minutes before it. A backfilled TSDB has no staleness
markers (a real Prometheus writes one when a series disappears from a scrape), so Prometheus
runs with ``--query.lookback-delta=1m``: at 1-minute samples a series then ends where its
samples end, as it would with the markers. DaemonSets are in the dump and their
``kube_daemonset_status_desired_number_scheduled`` series, without their pods (Joiner
derives a DaemonSet's pods from the nodes).

The OpenMetrics file is streamed series by series (a family's series together, each series'
samples in time order), never held whole: memory is the object model (tens of thousands of
pods), not the samples.

Usage: ``.venv/bin/python benchmarks/history_week.py [--days D] [--workloads W] [--nodes N]
[--seed S] [--keep DIR] [--generate-only DIR]``. The binaries are ``~/.cache/joiner/kube-
stack/<version>/bin/{prometheus,promtool}``, built by ``tools/kube-stack/build-
prometheus.sh`` (``--bin DIR`` to use others). ``--generate-only DIR`` writes ``DIR/series-
NNN.om`` (``PartFiles``) and ``DIR/dump.yaml`` and exits; ``--keep DIR`` keeps the TSDB, the
dump and the imported Scenario there, and a later run with the same cluster options reuses
that TSDB (the backfill of the week takes minutes). ``--record DIR [--step S]`` records an
import fixture from the real Prometheus instead (``record_fixture``: the dump, the raw
responses of ``joiner import --save-responses`` at step S seconds, and ``import.json``);
``tests/fixtures/history/day`` is ``--record tests/fixtures/history/day --seed 13
--workloads 20 --nodes 6 --days 1 --step 300``.
"""

from __future__ import annotations

import bisect
import calendar
import contextlib
import itertools
import json
import math
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import realistic  # benchmarks/realistic.py: measure, simulate, calibration
import yaml

REPO = Path(__file__).resolve().parents[1]
GIB = 1 << 30
MIB = 1 << 20

#: The default range's start: a Monday, midnight UTC.
DEFAULT_START = "2026-11-23T00:00:00Z"
#: Scrape interval and the import's step, seconds.
STEP_S = 60
#: Objects that exist before the range have samples from this long before its start.
LEAD_S = 15 * 60
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
#: The label every series gets from the scrape (its job; the instance is left out, as a
#: recording or federation of KSM's series often drops it, to save a sixth of the bytes).
SCRAPE_LABELS = 'job="kube-state-metrics"'
NAMESPACES = tuple(f"team-{i:02d}" for i in range(20))
WORDS = (
    "api",
    "web",
    "checkout",
    "search",
    "ledger",
    "ingest",
    "render",
    "auth",
    "billing",
    "catalog",
    "notify",
    "report",
    "media",
    "quote",
    "stream",
    "graph",
)
CPU_M = (100, 250, 250, 500, 500, 500, 1000, 1000, 2000)
MEM_MIB = (256, 512, 512, 1024, 1024, 2048, 2048, 4096)
GENERAL_TYPES = tuple(
    f"{family}.{size}"
    for family in ("c6i", "c7i", "m6i", "m7i", "m6a", "r6i", "r7i", "c6g", "m6g", "m7g")
    for size in ("xlarge", "2xlarge", "4xlarge")
)
STATEFUL_TYPES = ("r6i.xlarge", "r6i.2xlarge", "r7i.2xlarge")
SYSTEM_TYPE = "m6i.large"
ALNUM = "bcdfghjklmnpqrstvwxz2456789"


def parse_time(text: str) -> int:
    """Unix seconds of an RFC 3339 UTC time such as ``2026-11-23T00:00:00Z``."""
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


def rfc3339(unix_s: int) -> str:
    """``unix_s`` as an RFC 3339 UTC time."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_s))


# --- the object model ---------------------------------------------------------------------


@dataclass
class Node:
    """One node's life: ``start_s`` (creation, unix s) to ``end_s`` (None: beyond the range)."""

    name: str
    instance_type: str
    zone: str
    capacity_type: str  # spot or on-demand
    nodepool: str  # Karpenter NodePool, or "" for the EKS node group
    nodegroup: str  # EKS managed node group, or ""
    start_s: int
    end_s: int | None
    vcpu: int
    memory_mib: int
    instance_id: str
    internal_ip: str


@dataclass
class Pod:
    """One pod's life, from creation to deletion (``end_s`` None: beyond the range)."""

    namespace: str
    name: str
    uid: str
    owner_kind: str
    owner_name: str
    node: str
    created_s: int
    scheduled_s: int
    end_s: int | None
    cpu_m: int
    memory_mib: int
    container: str
    sidecar: bool


@dataclass
class Job:
    """One CronJob run: created and started at ``start_s``, done at ``completion_s``; the Job
    object (and its series) lasts until ``gone_s`` (the CronJob's history limit)."""

    namespace: str
    name: str
    cronjob: str
    start_s: int
    completion_s: int
    gone_s: int | None
    parallelism: int


@dataclass
class Workload:
    """A Deployment, StatefulSet or CronJob: its requests and its replica history as change
    points ``(unix s, replicas)`` (for a CronJob, the runs' parallelism)."""

    kind: str
    namespace: str
    name: str
    cpu_m: int
    memory_mib: int
    changes: list[tuple[int, int]]
    created_s: int
    hpa: tuple[int, int] | None = None  # (min, max)
    #: ReplicaSets of a Deployment: (name, from unix s), the last one current.
    replicasets: list[tuple[str, int]] = field(default_factory=list)
    schedule: str = ""
    run_minutes: int = 0
    parallelism: int = 1
    #: The pods have a sidecar (a restartable init container).
    sidecar: bool = False


@dataclass
class Cluster:
    """The synthetic cluster over ``[start_s, end_s]``."""

    start_s: int
    end_s: int
    nodes: list[Node]
    workloads: list[Workload]
    pods: list[Pod]
    jobs: list[Job]


def _suffix(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALNUM) for _ in range(n))


def _uid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _catalog_sizes(types: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    from joiner.cloudprovider.catalog import Catalog

    catalog = Catalog.load()
    offered = set(catalog.offered_types("us-east-1"))
    sizes = {}
    for name in types:
        if name in offered:
            info = catalog.info(name)
            sizes[name] = (info.vcpu, info.memory_mib)
    return sizes


class _NodeMaker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.count = 0
        self.sizes = _catalog_sizes((*GENERAL_TYPES, *STATEFUL_TYPES, SYSTEM_TYPE))
        self.general = [t for t in GENERAL_TYPES if t in self.sizes]

    def make(
        self, pool: str, capacity: str, start_s: int, end_s: int | None, itype: str = ""
    ) -> Node:
        self.count += 1
        rng = self.rng
        if not itype:
            itype = rng.choice(self.general if pool == "general" else list(STATEFUL_TYPES))
        zone = ZONES[self.count % 3]
        a, b = 16 + self.count // 250, self.count % 250 + 1
        ip = f"10.{a}.{rng.randrange(0, 64) * 4 + self.count % 4}.{b}"
        vcpu, mem = self.sizes[itype]
        return Node(
            name=f"ip-{ip.replace('.', '-')}.ec2.internal",
            instance_type=itype,
            zone=zone,
            capacity_type=capacity,
            nodepool="" if pool == "system" else pool,
            nodegroup="system" if pool == "system" else "",
            start_s=start_s,
            end_s=end_s,
            vcpu=vcpu,
            memory_mib=mem,
            instance_id=f"i-0{rng.getrandbits(64):016x}",
            internal_ip=ip,
        )


def make_nodes(rng: random.Random, peak: int, start_s: int, end_s: int) -> list[Node]:
    """The nodes of the range: 3 of the EKS node group, then (of ``peak``) 55 % a base
    living all week (a tenth of them in the ``stateful`` pool), 25 % launched every weekday
    morning and removed in the evening, 20 % Spot nodes living 2 to 30 hours each, replaced
    when they go; the ``general`` pool's base is 40 % on-demand."""
    maker = _NodeMaker(rng)
    nodes = [
        maker.make("system", "on-demand", start_s - 40 * 86400, None, SYSTEM_TYPE) for _ in range(3)
    ]
    base = int(peak * 0.55)
    for i in range(base):
        pool = "stateful" if i % 10 == 0 else "general"
        capacity = "on-demand" if pool == "stateful" or i % 5 < 2 else "spot"
        created = start_s - rng.randrange(3600, 30 * 86400)
        nodes.append(maker.make(pool, capacity, created, None))
    days = (end_s - start_s) // 86400 + 1
    for day in range(days):
        if (day % 7) >= 5:
            continue
        for _ in range(int(peak * 0.25)):
            up = start_s + day * 86400 + rng.randrange(6 * 3600, 9 * 3600)
            down = start_s + day * 86400 + rng.randrange(18 * 3600, 23 * 3600)
            if up < end_s:
                nodes.append(maker.make("general", "spot", up, down if down < end_s else None))
    for _ in range(int(peak * 0.20)):
        t = start_s - rng.randrange(0, 6 * 3600)
        while t < end_s:
            life = rng.randrange(2 * 3600, 30 * 3600)
            down = t + life
            nodes.append(maker.make("general", "spot", t, down if down < end_s else None))
            t = down + rng.randrange(30, 240)
    return nodes


def _diurnal(t_s: int, start_s: int) -> float:
    day, second = divmod(t_s - start_s, 86400)
    level = 0.55 - 0.45 * math.cos(2 * math.pi * (second - 7200) / 86400)
    return level * (0.6 if day % 7 >= 5 else 1.0)


def _hpa_changes(
    rng: random.Random, lo: int, hi: int, start_s: int, end_s: int
) -> list[tuple[int, int]]:
    changes: list[tuple[int, int]] = []
    t = start_s - LEAD_S
    jitter = rng.uniform(0.85, 1.15)
    while t <= end_s:
        want = lo + (hi - lo) * _diurnal(t, start_s) * jitter * rng.uniform(0.97, 1.03)
        value = max(lo, min(hi, round(want)))
        if not changes or changes[-1][1] != value:
            changes.append((t, value))
        t += rng.randrange(5, 21) * 60
    return changes


def _fixed_changes(
    rng: random.Random, replicas: int, start_s: int, end_s: int
) -> list[tuple[int, int]]:
    changes = [(start_s - LEAD_S, replicas)]
    for _ in range(rng.choice((0, 0, 1, 2))):
        changes.append((rng.randrange(start_s, end_s), max(1, replicas + rng.choice((-1, 1, 2)))))
    changes.sort()
    return changes


def make_workloads(rng: random.Random, count: int, start_s: int, end_s: int) -> list[Workload]:
    """``count`` workloads: 80 % Deployments (35 % of them behind an HPA), 10 %
    StatefulSets, 10 % CronJobs (module docstring)."""
    workloads = []
    for i in range(count):
        ns = NAMESPACES[i % len(NAMESPACES)]
        word = WORDS[i % len(WORDS)]
        cpu, mem = rng.choice(CPU_M), rng.choice(MEM_MIB)
        created = start_s - rng.randrange(86400, 200 * 86400)
        r = rng.random()
        if r < 0.8:
            name = f"{word}-{i:03d}"
            w = Workload("Deployment", ns, name, cpu, mem, [], created)
            if rng.random() < 0.35:
                lo = rng.randrange(1, 4)
                w.hpa = (lo, lo + rng.randrange(3, 14))
                w.changes = _hpa_changes(rng, *w.hpa, start_s, end_s)
            else:
                w.changes = _fixed_changes(rng, rng.randrange(1, 5), start_s, end_s)
            w.replicasets = [(f"{name}-{_hash(rng)}", created)]
            w.sidecar = rng.random() < 0.05
            if rng.random() < 0.15:
                w.replicasets.append((f"{name}-{_hash(rng)}", rng.randrange(start_s, end_s)))
        elif r < 0.9:
            w = Workload("StatefulSet", ns, f"{word}-db-{i:03d}", cpu, max(mem, 2048), [], created)
            w.changes = [(start_s - LEAD_S, rng.randrange(1, 4))]
        else:
            hours = rng.choice((1, 2, 4, 6, 24))
            minute = rng.randrange(0, 60)
            w = Workload("CronJob", ns, f"{word}-batch-{i:03d}", cpu, mem, [], created)
            w.schedule = f"{minute} */{hours} * * *" if hours < 24 else f"{minute} 2 * * *"
            w.run_minutes = rng.randrange(3, 40)
            w.parallelism = rng.randrange(1, 5)
            w.changes = [(start_s - LEAD_S, 0)]
        workloads.append(w)
    return workloads


def _hash(rng: random.Random) -> str:
    return "".join(rng.choice(ALNUM) for _ in range(rng.choice((9, 10))))


def _cron_runs(w: Workload, start_s: int, end_s: int) -> list[int]:
    minute_s, hours_s = w.schedule.split()[:2]
    minute = int(minute_s)
    every_h = 24 if hours_s == "2" else int(hours_s.split("/")[1])
    first_hour = 2 if every_h == 24 else 0
    runs = []
    day0 = start_s - start_s % 86400 - 86400
    t = day0 + first_hour * 3600 + minute * 60
    while t <= end_s:
        if t >= start_s - 3 * every_h * 3600:
            runs.append(t)
        t += every_h * 3600
    return runs


class _Placer:
    """Picks a live node for a pod, and says when that node goes."""

    def __init__(self, rng: random.Random, nodes: list[Node]) -> None:
        self.rng = rng
        self.general = [n for n in nodes if n.nodepool == "general"]
        self.stateful = [n for n in nodes if n.nodepool == "stateful"]
        self.starts = {id(n): n.start_s for n in nodes}

    def pick(self, t: int, stateful: bool) -> Node:
        pool = self.stateful if stateful else self.general
        for _ in range(200):
            node = self.rng.choice(pool)
            if node.start_s <= t and (node.end_s is None or node.end_s > t + 60):
                return node
        return next(n for n in pool if n.end_s is None)


def _slot_intervals(changes: list[tuple[int, int]], end_s: int) -> list[list[tuple[int, int]]]:
    """For replica slot k, the intervals [from, to) in which replicas > k (to = end_s + 1
    when it lasts beyond the range)."""
    top = max(v for _, v in changes)
    slots: list[list[tuple[int, int]]] = [[] for _ in range(top)]
    bounds = [*changes[1:], (end_s + 1, 0)]
    for (t, value), (t_next, _) in zip(changes, bounds, strict=True):
        for k in range(value):
            runs = slots[k]
            if runs and runs[-1][1] == t:
                runs[-1] = (runs[-1][0], t_next)
            else:
                runs.append((t, t_next))
    return slots


def make_pods(
    rng: random.Random, workloads: list[Workload], nodes: list[Node], start_s: int, end_s: int
) -> tuple[list[Pod], list[Job]]:
    """Every pod of the workloads' histories (module docstring), and the CronJobs' Jobs."""
    placer = _Placer(rng, nodes)
    pods: list[Pod] = []
    jobs: list[Job] = []
    for w in workloads:
        if w.kind == "CronJob":
            runs = _cron_runs(w, start_s, end_s)
            for i, t in enumerate(runs):
                job = Job(
                    w.namespace,
                    f"{w.name}-{t // 60}",
                    w.name,
                    t + rng.randrange(0, 3),
                    t + w.run_minutes * 60 + rng.randrange(0, 50),
                    runs[i + 3] + 5 if i + 3 < len(runs) else None,
                    w.parallelism,
                )
                jobs.append(job)
                for _ in range(w.parallelism):
                    _add_pods(rng, placer, pods, w, job.name, "Job", job.start_s, job.completion_s)
            continue
        for k, runs in enumerate(_slot_intervals(w.changes, end_s)):
            for t0, t1 in runs:
                _slot_pods(rng, placer, pods, w, k, t0, t1 if t1 <= end_s else None)
    return pods, jobs


def _slot_pods(
    rng: random.Random,
    placer: _Placer,
    pods: list[Pod],
    w: Workload,
    k: int,
    t0: int,
    t1: int | None,
) -> None:
    """The pods of a Deployment's or StatefulSet's replica slot ``k`` over [t0, t1): split at
    each rollout (a new ReplicaSet's pod replaces it)."""
    if w.kind == "StatefulSet":
        _add_pods(rng, placer, pods, w, w.name, "StatefulSet", t0, t1, name=f"{w.name}-{k}")
        return
    cuts = [t for _, t in w.replicasets[1:] if t0 < t and (t1 is None or t < t1)]
    edges = [t0, *cuts, t1]
    for a, b in itertools.pairwise(edges):
        assert a is not None
        rs = w.replicasets[bisect.bisect_right([t for _, t in w.replicasets], a) - 1][0]
        _add_pods(rng, placer, pods, w, rs, "ReplicaSet", a, b)


def _add_pods(
    rng: random.Random,
    placer: _Placer,
    pods: list[Pod],
    w: Workload,
    owner: str,
    owner_kind: str,
    t0: int,
    t1: int | None,
    name: str = "",
) -> None:
    """Pods over [t0, t1): one while its node lives, then a replacement on another."""
    t = t0 + rng.randrange(0, 60)
    while t1 is None or t < t1:
        node = placer.pick(t, w.kind == "StatefulSet")
        end = t1
        if node.end_s is not None and (t1 is None or node.end_s < t1):
            end = node.end_s
        pending = rng.randrange(1, 6) if rng.random() < 0.8 else rng.randrange(20, 120)
        pods.append(
            Pod(
                w.namespace,
                name or f"{owner}-{_suffix(rng, 5)}",
                _uid(rng),
                owner_kind,
                owner,
                node.name,
                t,
                t + pending,
                end,
                w.cpu_m,
                w.memory_mib,
                w.name.rsplit("-", 1)[0],
                w.sidecar,
            )
        )
        if end is None:
            return
        t = end + rng.randrange(1, 5)


def make_cluster(
    seed: int = 7,
    workloads: int = 500,
    nodes: int = 300,
    start: str = DEFAULT_START,
    days: float = 7.0,
) -> Cluster:
    """The synthetic cluster (module docstring), the same for the same arguments."""
    rng = random.Random(seed)
    start_s = parse_time(start)
    end_s = start_s + int(days * 86400)
    node_list = make_nodes(rng, nodes, start_s, end_s)
    wls = make_workloads(rng, workloads, start_s, end_s)
    pods, jobs = make_pods(rng, wls, node_list, start_s, end_s)
    return Cluster(start_s, end_s, node_list, wls, pods, jobs)


# --- OpenMetrics ----------------------------------------------------------------------------


def _labels(**labels: str) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _grid(cluster: Cluster, from_s: int, to_s: int | None) -> range:
    """The scrape times (unix s) at which an object living [from_s, to_s) is seen."""
    first = cluster.start_s - LEAD_S
    lo = max(first, first + math.ceil((from_s - first) / STEP_S) * STEP_S)
    hi = cluster.end_s if to_s is None else min(cluster.end_s, to_s - 1)
    return range(lo, hi + 1, STEP_S)


class OpenMetricsWriter:
    """Writes families of gauge series to ``out``, one series' samples at a time, on the
    scrape grid from ``first_s`` (unix s, every ``STEP_S``).

    A series' lines differ only in their value and timestamp, so each run of equal values is
    one ``str.join`` of the grid's timestamp strings with the series' prefix (the writer's
    speed is the disk's, not Python's loop's)."""

    def __init__(self, out: TextIO | PartFiles, first_s: int, last_s: int) -> None:
        self.out = out
        self.family_name = ""
        self.first_s = first_s
        self.stamps = [f"{t}\n" for t in range(first_s, last_s + 1, STEP_S)]
        self.samples = 0
        self.series = 0

    def family(self, name: str) -> None:
        """Start the family ``name`` (a gauge)."""
        self.family_name = name
        self.out.write(f"# TYPE {name} gauge\n")

    def _done(self) -> None:
        """A series ended: a boundary where ``PartFiles`` may start its next file."""
        self.series += 1
        if isinstance(self.out, PartFiles):
            self.out.boundary(self.family_name)

    def _run(self, prefix: str, lo_s: int, hi_s: int) -> None:
        """``prefix`` (series, labels and value) at every grid time in [lo_s, hi_s)."""
        lo = max(0, -(-(lo_s - self.first_s) // STEP_S))
        hi = max(lo, -(-(hi_s - self.first_s) // STEP_S))
        if hi > lo:
            self.out.write(prefix + prefix.join(self.stamps[lo:hi]))
            self.samples += hi - lo

    def constant(self, name: str, labels: str, value: str | float, times: range) -> None:
        """One series holding ``value`` at every time of ``times`` (grid times, unix s)."""
        if not times:
            return
        self._run(f"{name}{{{labels},{SCRAPE_LABELS}}} {value} ", times[0], times[-1] + 1)
        self._done()

    def stepwise(
        self, name: str, labels: str, changes: list[tuple[int, int]], times: range
    ) -> None:
        """One series whose value at a time of ``times`` is that of the last change
        ``(unix s, value)`` at or before it (the first change's before it)."""
        if not times:
            return
        head = f"{name}{{{labels},{SCRAPE_LABELS}}} "
        lo_s, end_s = times[0], times[-1] + 1
        for i, (t, value) in enumerate(changes):
            nxt = changes[i + 1][0] if i + 1 < len(changes) else end_s
            a, b = (lo_s if i == 0 else max(t, lo_s)), min(nxt, end_s)
            if b > a:
                self._run(f"{head}{value} ", a, b)
        self._done()

    def end(self) -> None:
        """The OpenMetrics end marker."""
        self.out.write("# EOF\n")


def _node_labels(n: Node) -> str:
    labels = {
        "node": n.name,
        "label_kubernetes_io_arch": "arm64" if n.instance_type[2] == "g" else "amd64",
        "label_kubernetes_io_os": "linux",
        "label_node_kubernetes_io_instance_type": n.instance_type,
        "label_topology_kubernetes_io_zone": n.zone,
        "label_topology_kubernetes_io_region": "us-east-1",
    }
    if n.nodepool:
        labels["label_karpenter_sh_nodepool"] = n.nodepool
        labels["label_karpenter_sh_capacity_type"] = n.capacity_type
        labels["label_karpenter_k8s_aws_ec2nodeclass"] = "default"
    else:
        labels["label_eks_amazonaws_com_nodegroup"] = n.nodegroup
        labels["label_eks_amazonaws_com_capacity_type"] = n.capacity_type.upper().replace("-", "_")
    return _labels(**labels)


def write_node_series(cluster: Cluster, w: OpenMetricsWriter) -> None:
    """``kube_node_info``, ``kube_node_labels``, ``kube_node_created`` and
    ``kube_node_status_capacity`` (cpu, memory, pods) of every node."""
    nodes = cluster.nodes
    w.family("kube_node_info")
    for n in nodes:
        labels = _labels(
            node=n.name,
            kernel_version="6.1.158-180.294.amzn2023.x86_64",
            os_image="Amazon Linux 2023.9.20251117",
            container_runtime_version="containerd://2.1.4",
            kubelet_version="v1.34.2-eks-113cf36",
            kubeproxy_version="deprecated",
            provider_id=f"aws:///{n.zone}/{n.instance_id}",
            pod_cidr="",
            system_uuid=f"ec2{n.instance_id[2:10]}-0000-0000-0000-000000000000",
            internal_ip=n.internal_ip,
        )
        w.constant("kube_node_info", labels, 1, _grid(cluster, n.start_s, n.end_s))
    w.family("kube_node_labels")
    for n in nodes:
        w.constant("kube_node_labels", _node_labels(n), 1, _grid(cluster, n.start_s, n.end_s))
    w.family("kube_node_created")
    for n in nodes:
        grid = _grid(cluster, n.start_s, n.end_s)
        w.constant("kube_node_created", _labels(node=n.name), n.start_s, grid)
    for family in ("kube_node_status_capacity",):
        w.family(family)
        for n in nodes:
            grid = _grid(cluster, n.start_s, n.end_s)
            for resource, unit, value in (
                ("cpu", "core", str(n.vcpu)),
                ("memory", "byte", str(n.memory_mib * MIB)),
                ("pods", "integer", "58"),
            ):
                labels = _labels(node=n.name, resource=resource, unit=unit)
                w.constant(family, labels, value, grid)


def _object_grid(cluster: Cluster, wl: Workload) -> range:
    return _grid(cluster, wl.created_s, None)


def write_workload_series(cluster: Cluster, w: OpenMetricsWriter) -> None:
    """Deployments, ReplicaSets, StatefulSets, HPAs, CronJobs, DaemonSets and Jobs."""
    deps = [x for x in cluster.workloads if x.kind == "Deployment"]
    w.family("kube_deployment_spec_replicas")
    for d in deps:
        labels = _labels(namespace=d.namespace, deployment=d.name)
        w.stepwise("kube_deployment_spec_replicas", labels, d.changes, _object_grid(cluster, d))
    write_replicaset_series(cluster, w, deps)
    stss = [x for x in cluster.workloads if x.kind == "StatefulSet"]
    w.family("kube_statefulset_replicas")
    for s in stss:
        labels = _labels(namespace=s.namespace, statefulset=s.name)
        w.stepwise("kube_statefulset_replicas", labels, s.changes, _object_grid(cluster, s))
    write_hpa_series(cluster, w, [d for d in deps if d.hpa])
    crons = [x for x in cluster.workloads if x.kind == "CronJob"]
    w.family("kube_cronjob_info")
    for c in crons:
        labels = _labels(
            namespace=c.namespace, cronjob=c.name, schedule=c.schedule, concurrency_policy="Forbid"
        )
        w.constant("kube_cronjob_info", labels, 1, _object_grid(cluster, c))
    w.family("kube_daemonset_status_desired_number_scheduled")
    for ds in ("node-exporter", "fluent-bit"):
        labels = _labels(namespace="monitoring", daemonset=ds)
        changes = _live_node_counts(cluster)
        grid = _grid(cluster, cluster.start_s - LEAD_S, None)
        w.stepwise("kube_daemonset_status_desired_number_scheduled", labels, changes, grid)
    write_job_series(cluster, w)


def _live_node_counts(cluster: Cluster) -> list[tuple[int, int]]:
    events = sorted(
        [(n.start_s, 1) for n in cluster.nodes]
        + [(n.end_s, -1) for n in cluster.nodes if n.end_s is not None]
    )
    live, changes = 0, []
    for t, delta in events:
        live += delta
        changes.append((t, live))
    return changes


def write_replicaset_series(cluster: Cluster, w: OpenMetricsWriter, deps: list[Workload]) -> None:
    """``kube_replicaset_spec_replicas`` (the Deployment's replicas while current, then 0)
    and ``kube_replicaset_owner`` of every Deployment's ReplicaSets."""
    w.family("kube_replicaset_spec_replicas")
    for d in deps:
        for i, (rs, since) in enumerate(d.replicasets):
            until = d.replicasets[i + 1][1] if i + 1 < len(d.replicasets) else None
            grid = _grid(cluster, since, None)
            labels = _labels(namespace=d.namespace, replicaset=rs)
            w.stepwise("kube_replicaset_spec_replicas", labels, _at_since(d, since, until), grid)
    w.family("kube_replicaset_owner")
    for d in deps:
        for rs, since in d.replicasets:
            labels = _labels(
                namespace=d.namespace,
                replicaset=rs,
                owner_kind="Deployment",
                owner_name=d.name,
                owner_is_controller="true",
            )
            w.constant("kube_replicaset_owner", labels, 1, _grid(cluster, since, None))


def _at_since(d: Workload, since: int, until: int | None) -> list[tuple[int, int]]:
    """The Deployment's replica changes as its ReplicaSet current over [since, until) sees
    them, then 0."""
    keys = [t for t, _ in d.changes]
    i = max(bisect.bisect_right(keys, since) - 1, 0)
    out = [(since, d.changes[i][1])]
    out += [c for c in d.changes if since < c[0] and (until is None or c[0] < until)]
    if until is not None:
        out.append((until, 0))
    return out


def write_hpa_series(cluster: Cluster, w: OpenMetricsWriter, hpas: list[Workload]) -> None:
    """``kube_horizontalpodautoscaler_info``, ``_spec_min_replicas``, ``_spec_max_replicas``,
    ``_status_desired_replicas`` and ``_status_current_replicas``."""
    w.family("kube_horizontalpodautoscaler_info")
    for d in hpas:
        labels = _labels(
            namespace=d.namespace,
            horizontalpodautoscaler=d.name,
            scaletargetref_api_version="apps/v1",
            scaletargetref_kind="Deployment",
            scaletargetref_name=d.name,
        )
        w.constant("kube_horizontalpodautoscaler_info", labels, 1, _object_grid(cluster, d))
    for family, index in (("spec_min_replicas", 0), ("spec_max_replicas", 1)):
        name = f"kube_horizontalpodautoscaler_{family}"
        w.family(name)
        for d in hpas:
            assert d.hpa is not None
            labels = _labels(namespace=d.namespace, horizontalpodautoscaler=d.name)
            w.constant(name, labels, d.hpa[index], _object_grid(cluster, d))
    name = "kube_horizontalpodautoscaler_status_desired_replicas"
    w.family(name)
    for d in hpas:
        labels = _labels(namespace=d.namespace, horizontalpodautoscaler=d.name)
        w.stepwise(name, labels, d.changes, _object_grid(cluster, d))


def write_job_series(cluster: Cluster, w: OpenMetricsWriter) -> None:
    """``kube_job_owner``, ``kube_job_spec_parallelism``, ``kube_job_status_start_time`` and
    ``kube_job_status_completion_time`` (from completion) of every Job while it exists."""
    jobs = cluster.jobs

    def job_labels(j: Job) -> str:
        return _labels(namespace=j.namespace, job_name=j.name)

    w.family("kube_job_owner")
    for j in jobs:
        labels = _labels(
            namespace=j.namespace,
            job_name=j.name,
            owner_kind="CronJob",
            owner_name=j.cronjob,
            owner_is_controller="true",
        )
        w.constant("kube_job_owner", labels, 1, _grid(cluster, j.start_s, j.gone_s))
    for family, attr in (
        ("kube_job_status_start_time", "start_s"),
        ("kube_job_spec_parallelism", "parallelism"),
    ):
        w.family(family)
        for j in jobs:
            w.constant(family, job_labels(j), getattr(j, attr), _grid(cluster, j.start_s, j.gone_s))
    w.family("kube_job_status_completion_time")
    for j in jobs:
        grid = _grid(cluster, j.completion_s, j.gone_s)
        w.constant("kube_job_status_completion_time", job_labels(j), j.completion_s, grid)


def write_pod_series(cluster: Cluster, w: OpenMetricsWriter) -> None:
    """``kube_pod_owner``, ``kube_pod_created``, ``kube_pod_status_scheduled_time`` and
    ``kube_pod_info`` (its ``node``; both from scheduling) and
    ``kube_pod_container_resource_requests`` (cpu in cores, memory in bytes;
    the ``node`` label once scheduled), and for pods with a sidecar its
    ``kube_pod_init_container_info`` (``restart_policy="Always"``) and
    ``kube_pod_init_container_resource_requests``. ``kube_pod_status_phase`` (five series
    per pod) is left out: Joiner reads pending time from the created and scheduled times, and
    it would double the samples."""
    pods = cluster.pods

    def ident(p: Pod) -> dict[str, str]:
        return {"namespace": p.namespace, "pod": p.name, "uid": p.uid}

    w.family("kube_pod_owner")
    for p in pods:
        labels = _labels(
            **ident(p), owner_kind=p.owner_kind, owner_name=p.owner_name, owner_is_controller="true"
        )
        w.constant("kube_pod_owner", labels, 1, _grid(cluster, p.created_s, p.end_s))
    w.family("kube_pod_created")
    for p in pods:
        grid = _grid(cluster, p.created_s, p.end_s)
        w.constant("kube_pod_created", _labels(**ident(p)), p.created_s, grid)
    w.family("kube_pod_status_scheduled_time")
    for p in pods:
        grid = _grid(cluster, p.scheduled_s, p.end_s)
        w.constant("kube_pod_status_scheduled_time", _labels(**ident(p)), p.scheduled_s, grid)
    w.family("kube_pod_info")
    for p in pods:
        grid = _grid(cluster, p.scheduled_s, p.end_s)
        w.constant("kube_pod_info", _labels(**ident(p), node=p.node), 1, grid)
    w.family("kube_pod_container_resource_requests")
    for p in pods:
        grid = _grid(cluster, p.scheduled_s, p.end_s)
        for resource, unit, value in (
            ("cpu", "core", f"{p.cpu_m / 1000:g}"),
            ("memory", "byte", str(p.memory_mib * MIB)),
        ):
            labels = _labels(
                **ident(p), container=p.container, node=p.node, resource=resource, unit=unit
            )
            w.constant("kube_pod_container_resource_requests", labels, value, grid)
    write_sidecar_series(cluster, w, [p for p in pods if p.sidecar])


def write_sidecar_series(cluster: Cluster, w: OpenMetricsWriter, pods: list[Pod]) -> None:
    """A sidecar (a restartable init container, ``proxy``: 100m, 128 MiB) of each pod."""
    w.family("kube_pod_init_container_info")
    for p in pods:
        labels = _labels(
            namespace=p.namespace,
            pod=p.name,
            uid=p.uid,
            container="proxy",
            image_spec="registry.example.com/proxy:1.0",
            image="registry.example.com/proxy:1.0",
            image_id="",
            container_id="",
            restart_policy="Always",
        )
        w.constant("kube_pod_init_container_info", labels, 1, _grid(cluster, p.created_s, p.end_s))
    w.family("kube_pod_init_container_resource_requests")
    for p in pods:
        grid = _grid(cluster, p.scheduled_s, p.end_s)
        for resource, unit, value in (("cpu", "core", "0.1"), ("memory", "byte", str(128 * MIB))):
            labels = _labels(
                namespace=p.namespace,
                pod=p.name,
                uid=p.uid,
                container="proxy",
                node=p.node,
                resource=resource,
                unit=unit,
            )
            w.constant("kube_pod_init_container_resource_requests", labels, value, grid)


class PartFiles:
    """The OpenMetrics text as files ``series-NNN.om`` in ``directory``, each a valid
    document (its family's ``# TYPE`` line first, ``# EOF`` last) of about ``part_bytes``:
    at the first series boundary past that size the file is closed and handed to
    ``on_part`` (which may backfill and delete it) before the next one starts. A week is
    tens of GB; parts that fit the page cache let promtool's two passes over each (its time
    range, then the samples) read memory, not disk, and keep the disk use to one part."""

    def __init__(
        self, directory: Path, part_bytes: int, on_part: Callable[[Path], None] | None = None
    ) -> None:
        self.directory = directory
        self.part_bytes = part_bytes
        self.on_part = on_part
        self.paths: list[Path] = []
        self.bytes = 0
        self._open()

    def _open(self) -> None:
        path = self.directory / f"series-{len(self.paths):03d}.om"
        self.paths.append(path)
        self.file = path.open("w", encoding="utf-8", buffering=1 << 20)
        self.size = 0

    def write(self, text: str) -> None:
        """Append ``text`` to the current file."""
        self.file.write(text)
        self.size += len(text)

    def boundary(self, family: str) -> None:
        """A series ended (of ``family``): past the size, end this file, start the next."""
        if self.size >= self.part_bytes:
            self.close()
            self._open()
            self.write(f"# TYPE {family} gauge\n")

    def close(self) -> None:
        """End the current file (``# EOF``) and hand it to ``on_part``."""
        self.write("# EOF\n")
        self.file.close()
        self.bytes += self.size
        if self.on_part is not None:
            self.on_part(self.paths[-1])


def write_openmetrics(cluster: Cluster, out: TextIO | PartFiles) -> dict[str, int]:
    """Every series of the cluster to ``out`` (OpenMetrics text, ending ``# EOF``; for
    ``PartFiles``, each part ending so); the number of series and samples written."""
    w = OpenMetricsWriter(out, cluster.start_s - LEAD_S, cluster.end_s)
    write_node_series(cluster, w)
    write_workload_series(cluster, w)
    write_pod_series(cluster, w)
    if not isinstance(out, PartFiles):
        w.end()  # PartFiles.close ends each part
    return {"series": w.series, "samples": w.samples}


# --- the object dump ------------------------------------------------------------------------


NODEPOOLS: list[dict[str, Any]] = [
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-category",
                            "operator": "In",
                            "values": ["c", "m", "r"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-generation",
                            "operator": "Gt",
                            "values": ["5"],
                        },
                        {
                            "key": "kubernetes.io/arch",
                            "operator": "In",
                            "values": ["amd64", "arm64"],
                        },
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["spot", "on-demand"],
                        },
                    ],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "1m",
            },
        },
    },
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "stateful"},
        "spec": {
            "weight": 10,
            "template": {
                "metadata": {"labels": {"workload-class": "stateful"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["r6i", "r7i"],
                        },
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                    ],
                    "taints": [
                        {"key": "workload-class", "value": "stateful", "effect": "NoSchedule"}
                    ],
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
        },
    },
    {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-bench",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        },
    },
]


def _pod_spec(w: Workload) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": w.name.rsplit("-", 1)[0],
                "image": f"registry.example.com/{w.name.rsplit('-', 1)[0]}:1.0",
                "resources": {"requests": {"cpu": f"{w.cpu_m}m", "memory": f"{w.memory_mib}Mi"}},
            }
        ]
    }
    if w.sidecar:
        spec["initContainers"] = [
            {
                "name": "proxy",
                "image": "registry.example.com/proxy:1.0",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ]
    if w.kind == "StatefulSet":
        spec["nodeSelector"] = {"workload-class": "stateful"}
        spec["tolerations"] = [
            {
                "key": "workload-class",
                "operator": "Equal",
                "value": "stateful",
                "effect": "NoSchedule",
            }
        ]
    if w.kind == "CronJob":
        spec["restartPolicy"] = "Never"
    return spec


def _meta(w: Workload, start_s: int) -> dict[str, Any]:
    return {
        "name": w.name,
        "namespace": w.namespace,
        "creationTimestamp": rfc3339(min(w.created_s, start_s)),
        "labels": {"app.kubernetes.io/name": w.name},
    }


def _workload_object(w: Workload, cluster: Cluster) -> dict[str, Any]:
    selector = {"matchLabels": {"app.kubernetes.io/name": w.name}}
    template = {"metadata": {"labels": {"app.kubernetes.io/name": w.name}}, "spec": _pod_spec(w)}
    if w.kind == "CronJob":
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": _meta(w, cluster.start_s),
            "spec": {
                "schedule": w.schedule,
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {
                    "spec": {
                        "parallelism": w.parallelism,
                        "completions": w.parallelism,
                        "template": template,
                    }
                },
            },
        }
    spec: dict[str, Any] = {
        "replicas": w.changes[-1][1],
        "selector": selector,
        "template": template,
    }
    if w.kind == "StatefulSet":
        spec["serviceName"] = w.name
    return {
        "apiVersion": "apps/v1",
        "kind": w.kind,
        "metadata": _meta(w, cluster.start_s),
        "spec": spec,
    }


def _hpa_object(w: Workload, cluster: Cluster) -> dict[str, Any]:
    assert w.hpa is not None
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": w.name, "namespace": w.namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name},
            "minReplicas": w.hpa[0],
            "maxReplicas": w.hpa[1],
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 70},
                    },
                }
            ],
        },
    }


def _daemonset(name: str, cpu: str, memory: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": name,
                            "image": f"registry.example.com/{name}:1.0",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                        }
                    ],
                },
            },
        },
    }


def dump_objects(cluster: Cluster) -> dict[str, Any]:
    """The cluster's objects as ``kubectl get nodepools,ec2nodeclasses,deployments,
    statefulsets,cronjobs,hpa,daemonsets,pdb -A -o yaml`` would list them at the range's
    end: the two NodePools and their EC2NodeClass, every workload with its requests, the HPAs,
    two DaemonSets and a PodDisruptionBudget per StatefulSet."""
    items: list[dict[str, Any]] = [dict(o) for o in NODEPOOLS]
    items += [_daemonset("node-exporter", "50m", "64Mi"), _daemonset("fluent-bit", "100m", "128Mi")]
    for w in cluster.workloads:
        items.append(_workload_object(w, cluster))
        if w.hpa:
            items.append(_hpa_object(w, cluster))
        if w.kind == "StatefulSet":
            items.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": w.name, "namespace": w.namespace},
                    "spec": {
                        "maxUnavailable": 1,
                        "selector": {"matchLabels": {"app.kubernetes.io/name": w.name}},
                    },
                }
            )
    return {"apiVersion": "v1", "kind": "List", "items": items}


#: The size of one OpenMetrics part file (``PartFiles``).
PART_BYTES = 2 * GIB


def generate(
    cluster: Cluster, out_dir: Path, on_part: Callable[[Path], None] | None = None
) -> dict[str, Any]:
    """``out_dir/series-NNN.om`` (the OpenMetrics series, streamed in ``PartFiles``, each
    handed to ``on_part`` when complete) and ``out_dir/dump.yaml``; what was written, with
    the generator's own CPU seconds (``on_part``'s children not included)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cpu0 = time.process_time()
    parts = PartFiles(out_dir, PART_BYTES, on_part)
    counts = write_openmetrics(cluster, parts)
    parts.close()
    (out_dir / "dump.yaml").write_text(
        yaml.safe_dump(dump_objects(cluster), sort_keys=False), encoding="utf-8"
    )
    return {
        **counts,
        "bytes": parts.bytes,
        "files": len(parts.paths),
        "nodes": len(cluster.nodes),
        "workloads": len(cluster.workloads),
        "pods": len(cluster.pods),
        "jobs": len(cluster.jobs),
        "peakLiveNodes": max(v for _, v in _live_node_counts(cluster)),
        "cpuSeconds": round(time.process_time() - cpu0, 3),
    }


# --- the real Prometheus ----------------------------------------------------------------------

#: Where ``tools/kube-stack`` builds the binaries (its ``versions.env`` names the version).
DEFAULT_BIN = Path.home() / ".cache" / "joiner" / "kube-stack" / "v1.36.3" / "bin"


class Backfill:
    """``promtool tsdb create-blocks-from openmetrics`` of each part into ``tsdb`` as it is
    complete (``PartFiles.on_part``), then the part deleted; the runs' summed CPU and wall
    seconds and their peak memory. Blocks span up to 486 h (promtool's hidden
    ``--max-block-duration``; its default 2 h blocks would re-read a part once per block);
    the parts' blocks overlap in time, which Prometheus merges at query time and compacts.

    Raises (from ``__call__``):
        RuntimeError: promtool failed (its output is included).
    """

    def __init__(self, promtool: Path, tsdb: Path) -> None:
        self.promtool = promtool
        self.tsdb = tsdb
        self.row: dict[str, Any] = {"cpuSeconds": 0.0, "wallSeconds": 0.0, "peakMemoryBytes": 0}

    def __call__(self, part: Path) -> None:
        """Backfill ``part`` and delete it."""
        cmd = [
            str(self.promtool),
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--max-block-duration=486h",
            "--quiet",
            str(part),
            str(self.tsdb),
        ]
        run = realistic.measure(cmd, REPO)
        part.unlink()
        row = self.row
        row["cpuSeconds"] = round(row["cpuSeconds"] + run["cpuSeconds"], 3)
        row["wallSeconds"] = round(row["wallSeconds"] + run["wallSeconds"], 3)
        row["peakMemoryBytes"] = max(row["peakMemoryBytes"], run["peakMemoryBytes"])


def generate_and_backfill(cluster: Cluster, work: Path, promtool: Path) -> dict[str, Any]:
    """Generate the cluster's series into ``work`` and backfill each part into
    ``work/tsdb`` as it completes; the generator's and the backfill's figures."""
    fill = Backfill(promtool, work / "tsdb")
    generated = generate(cluster, work, fill)
    return {"generate": generated, "backfill": fill.row}


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def prometheus(binary: Path, tsdb: Path, work: Path) -> Iterator[str]:
    """The real Prometheus serving ``tsdb`` (no scrapes) on a free port; yields its URL and
    stops it on exit. ``--query.lookback-delta=1m`` stands in for the staleness markers a
    backfill lacks (module docstring); ``--query.max-samples`` is raised for the per-pod
    queries of a week.

    Raises:
        RuntimeError: it did not become ready within 120 s (its log is included).
    """
    config = work / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n", encoding="utf-8")
    port = free_port()
    log = (work / "prometheus.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(
        [
            str(binary),
            f"--config.file={config}",
            f"--storage.tsdb.path={tsdb}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            "--query.lookback-delta=1m",
            "--query.max-samples=500000000",
            "--query.timeout=10m",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc, work / "prometheus.log")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    raise RuntimeError(f"prometheus at {url} not ready in 120 s: {log.read_text()[-2000:]}")


def query_count(url: str, promql: str, at_s: int) -> float:
    """The instant query ``promql`` at ``at_s`` (a scalar-valued vector's first value)."""
    query = urllib.parse.urlencode({"query": promql, "time": str(at_s)})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=60) as r:
        body = json.loads(r.read())
    result = body["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def import_command(
    url: str, cluster: Cluster, dump: Path, out: Path, step_s: int = STEP_S
) -> list[str]:
    """The ``joiner import --prometheus URL`` command of the cluster's range."""
    return [
        *realistic.JOINER,
        "import",
        "--prometheus",
        url,
        "--start",
        rfc3339(cluster.start_s),
        "--end",
        rfc3339(cluster.end_s),
        "--step",
        f"{step_s}s",
        "-f",
        str(dump),
        "--out",
        str(out),
    ]


def run_import(url: str, cluster: Cluster, dump: Path, out: Path) -> dict[str, Any]:
    """``joiner import --prometheus URL`` of the cluster's range, measured."""
    row = realistic.measure(import_command(url, cluster, dump, out), REPO)
    row["traceFiles"] = len(list(out.rglob("traces/**/*.csv")))
    row["outputBytes"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return row


# --- the command line ---------------------------------------------------------------------


@dataclass
class Options:
    """The command line (module docstring)."""

    days: float = 7.0
    workloads: int = 500
    nodes: int = 300
    seed: int = 7
    bin: Path = DEFAULT_BIN
    keep: Path | None = None
    generate_only: Path | None = None
    record: Path | None = None
    step: int = STEP_S


def parse_args(argv: list[str]) -> Options | str:
    """The options of ``argv``, or the message for the first bad one."""
    opts = Options()
    convert = {
        "--days": ("days", float),
        "--workloads": ("workloads", int),
        "--nodes": ("nodes", int),
        "--seed": ("seed", int),
        "--bin": ("bin", Path),
        "--keep": ("keep", Path),
        "--generate-only": ("generate_only", Path),
        "--record": ("record", Path),
        "--step": ("step", int),
    }
    while argv:
        if argv[0] not in convert or len(argv) < 2:
            return f"bad argument {argv[0]!r} (--help for usage)"
        attr, kind = convert[argv[0]]
        try:
            setattr(opts, attr, kind(argv[1]))
        except ValueError:
            return f"{argv[0]} {argv[1]}: not a {kind.__name__}"
        argv = argv[2:]
    return opts


def run(opts: Options, work: Path) -> dict[str, Any]:
    """Generate, backfill, serve, import and simulate in ``work``: the JSON report."""
    cluster = make_cluster(opts.seed, opts.workloads, opts.nodes, days=opts.days)
    doc: dict[str, Any] = {
        "benchmark": "history_week",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpuCount": os.cpu_count(),
        "measure": "CPU seconds = user + system of the child process (os.wait4)",
        "calibrationCpuSeconds": realistic.calibration_cpu_s(),
        "range": {"start": rfc3339(cluster.start_s), "end": rfc3339(cluster.end_s)},
    }
    params = {
        "seed": opts.seed,
        "workloads": opts.workloads,
        "nodes": opts.nodes,
        "days": opts.days,
    }
    stamp = work / "params.json"
    if (work / "tsdb").is_dir() and stamp.is_file() and json.loads(stamp.read_text()) == params:
        doc["generate"] = doc["backfill"] = f"reused {work / 'tsdb'}"
    else:
        shutil.rmtree(work / "tsdb", ignore_errors=True)
        doc.update(generate_and_backfill(cluster, work, opts.bin / "promtool"))
        _echo("generate", doc["generate"])
        _echo("backfill", doc["backfill"])
        stamp.write_text(json.dumps(params), encoding="utf-8")
    for old in ("imported", "sim"):
        shutil.rmtree(work / old, ignore_errors=True)
    with prometheus(opts.bin / "prometheus", work / "tsdb", work) as url:
        doc["seenByPrometheus"] = {
            "nodesAtEnd": query_count(url, "count(kube_node_info)", cluster.end_s),
            "podsAtEnd": query_count(url, "count(kube_pod_created)", cluster.end_s),
        }
        doc["import"] = _step(
            lambda: run_import(url, cluster, work / "dump.yaml", work / "imported")
        )
    if "error" not in doc["import"]:
        realistic._verdict(doc["import"], 60.0, GIB)
    _echo("import", doc["import"])
    duration = float(cluster.end_s - cluster.start_s)
    scenario = work / "imported" / "scenario.yaml"
    doc["simulate"] = (
        _step(lambda: realistic.simulate(scenario, duration, 3, work / "sim"))
        if scenario.is_file()
        else {"error": "no imported Scenario to simulate"}
    )
    if "error" not in doc["simulate"]:
        realistic._verdict(doc["simulate"], 120.0)
    _echo("simulate", doc["simulate"])
    full = opts.days == 7.0 and opts.workloads == 500 and opts.nodes == 300
    met = all(doc[k].get("met", False) for k in ("import", "simulate"))
    doc["met"] = met if full else None
    return doc


def _step(measured: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``measured()``'s row, or for a command that failed its error (the end of its stderr)
    in place of the figures, so the report still shows the steps that ran."""
    try:
        return measured()
    except RuntimeError as e:
        return {"error": str(e)[-4000:], "met": False}


def _echo(step: str, row: dict[str, Any]) -> None:
    print(f"{step}: {json.dumps(row)}", file=sys.stderr, flush=True)


def record_fixture(opts: Options, work: Path, fixture: Path) -> None:
    """Record an import fixture in ``fixture`` from the real Prometheus: the synthetic
    cluster's dump (``dump.yaml``), every raw API response ``joiner import --save-responses``
    writes (``responses/``, the layout ``--from-file`` reads) and the range
    (``import.json``: start, end, step), the TSDB and the import's own output left in
    ``work``.

    Raises:
        RuntimeError: promtool, prometheus or the import failed.
    """
    cluster = make_cluster(opts.seed, opts.workloads, opts.nodes, days=opts.days)
    generate_and_backfill(cluster, work, opts.bin / "promtool")
    if fixture.exists():
        shutil.rmtree(fixture)
    fixture.mkdir(parents=True)
    shutil.copy(work / "dump.yaml", fixture / "dump.yaml")
    with prometheus(opts.bin / "prometheus", work / "tsdb", work) as url:
        cmd = import_command(url, cluster, fixture / "dump.yaml", work / "imported", opts.step)
        cmd += ["--save-responses", str(fixture / "responses")]
        realistic.measure(cmd, REPO)
    spec = {
        "start": rfc3339(cluster.start_s),
        "end": rfc3339(cluster.end_s),
        "step": f"{opts.step}s",
        "recordedWith": (
            "benchmarks/history_week.py --record DIR"
            f" --seed {opts.seed} --workloads {opts.workloads} --nodes {opts.nodes}"
            f" --days {opts.days:g} --step {opts.step}"
        ),
    }
    (fixture / "import.json").write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    """Run the benchmark (module docstring) and print its JSON report; 0, or 2 for a bad
    command line or missing binaries."""
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    opts = parse_args(argv)
    if isinstance(opts, str):
        print(opts, file=sys.stderr)
        return 2
    if opts.generate_only is not None:
        cluster = make_cluster(opts.seed, opts.workloads, opts.nodes, days=opts.days)
        print(json.dumps(generate(cluster, opts.generate_only), indent=2))
        return 0
    missing = [b for b in ("prometheus", "promtool") if not (opts.bin / b).is_file()]
    if missing:
        print(
            f"{', '.join(missing)} not in {opts.bin}: run tools/kube-stack/build-prometheus.sh",
            file=sys.stderr,
        )
        return 2
    if opts.record is not None:
        with tempfile.TemporaryDirectory(prefix="joiner-history-record-") as tmp:
            record_fixture(opts, Path(tmp), opts.record)
        return 0
    if opts.keep is not None:
        opts.keep.mkdir(parents=True, exist_ok=True)
        doc = run(opts, opts.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="joiner-history-week-") as tmp:
            doc = run(opts, Path(tmp))
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
