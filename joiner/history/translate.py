"""From kube-state-metrics series and the cluster's objects to an imported Scenario.

``translate`` runs every query of ``joiner.history.queries`` through a ``SeriesSource`` and
turns the answers into an ``Imported``: per workload its replica history per minute (a
trace the Scenario replays with ``targetPerReplica: 1``), the CronJobs' observed run times,
the objects to simulate (a copy of the cluster's, cleaned of its current state), the
as-run record (the nodes that really ran, the pods' creation and scheduling times) and
the cluster at the range's start (``joiner.history.start``).

Resampling to minutes: minute ``m`` covers ``[start + 60 m, start + 60 (m + 1))``; its value
is the largest sample in it; a minute without a sample holds the previous one while the
samples around it are at most two steps apart. A longer silence is a scrape gap (held,
counted); before a series' first sample the value is 0 (the object did not exist yet) and
after its last it is 0 when the series is absent at the range's last step (the object was
deleted; ``ended_before_end``); both are counted. An as-run node ends at its last sample by
the same rule.

Every case Joiner has to assume something about goes to ``HistoryWarnings`` with what was
assumed; nothing is filled silently.
"""

from __future__ import annotations

import copy
import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from joiner.api import objects as o
from joiner.api import quantity
from joiner.api.errors import InputError
from joiner.api.manifests import load_documents
from joiner.api.manifests.loader import HANDLERS
from joiner.api.manifests.manifestset import ManifestSet
from joiner.api.manifests.models_base import MAX_REPLICAS
from joiner.api.manifests.nulls import drop_nulls
from joiner.api.manifests.yamlio import read_documents
from joiner.history.clean import series_subject
from joiner.history.queries import NODE_LABELS, QUERIES, query_step
from joiner.history.series import HistoryWarnings, QueryRange, Series, SeriesSource
from joiner.history.start import StartNode, start_objects
from joiner.sim.asrun_files import AsRunNode, AsRunPod

#: Kinds left out of the copied objects: the cluster's state at the time of the dump
#: (nodes, NodeClaims, pods) is not the state at the start of the range (which
#: ``joiner.history.start`` reads from the history), and an HPA's decisions are replayed
#: as its target's replicas.
DROPPED_KINDS = frozenset({"Node", "NodeClaim", "Pod", "HorizontalPodAutoscaler"})

#: Workload kinds whose replica history is replayed.
SCALED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job")

_PROVIDER_ZONE = re.compile(r"^aws:///([a-z0-9-]+)/")
_EKS_CAPACITY = {"ON_DEMAND": "on-demand", "SPOT": "spot", "CAPACITY_BLOCK": "reserved"}
_KARPENTER_CAPACITY = frozenset({"spot", "on-demand", "reserved"})


@dataclass(frozen=True, slots=True)
class ClusterObjects:
    """The cluster's objects: the raw documents (``kind: List`` flattened, in input order),
    the loaded ``ManifestSet`` and where they came from (a file list or ``kube:<config>``)."""

    documents: tuple[dict[str, Any], ...]
    manifests: ManifestSet
    source: str


def objects_from_documents(docs: Iterable[Any], source: str) -> ClusterObjects:
    """Load already-parsed documents (a live cluster's list) as ``ClusterObjects``.

    Raises:
        InputError: a document does not load (as ``joiner.api.manifests.load_documents``).
    """
    flat = _flatten(docs)
    return ClusterObjects(tuple(flat), load_documents(flat, source), source)


def objects_from_files(paths: Sequence[Path]) -> ClusterObjects:
    """Load ``kubectl get -o yaml`` dumps (any number of files) as ``ClusterObjects``.

    Raises:
        InputError: a file is unreadable or an object does not load (named).
    """
    flat: list[dict[str, Any]] = []
    for p in paths:
        flat += _flatten(read_documents(p))
    return objects_from_documents(flat, ", ".join(str(p) for p in paths))


def _flatten(docs: Iterable[Any]) -> list[dict[str, Any]]:
    """Documents with each ``kind: List`` replaced by its items (non-mappings kept as they
    are, so the loader names them)."""
    out: list[dict[str, Any]] = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), list):
            out += _flatten(d["items"])
        elif d is not None:
            out.append(drop_nulls(d))  # a null reads as absent, as the loader reads it
    return out


@dataclass(frozen=True, slots=True)
class WorkloadTrace:
    """One workload's replicas per minute: ``kind`` and ``key`` (``namespace/name``) of the
    object, ``values[m]`` the replicas at minute ``m``; ``hpa`` names the HPA whose desired
    replicas they are, if any."""

    kind: str
    key: str
    values: tuple[float, ...]
    hpa: str | None = None


@dataclass(frozen=True)
class Imported:
    """What ``translate`` made of a history: ready for ``joiner.history.writer``."""

    range: QueryRange
    documents: tuple[dict[str, Any], ...]
    traces: tuple[WorkloadTrace, ...]
    #: CronJob key -> its runs' median run time in seconds (runs seen completing).
    cron_run_s: Mapping[str, float]
    nodes: tuple[AsRunNode, ...]
    pods: tuple[AsRunPod, ...]
    region: str | None
    warnings: HistoryWarnings = field(default_factory=HistoryWarnings)
    #: ``spec.cloud`` subnets and security groups the EC2NodeClasses' selectors match, or
    #: None (the simulation's default VPC).
    cloud: Mapping[str, Any] | None = None
    #: The cluster at the range's start (``joiner.history.start``): v1 Nodes then Pods;
    #: empty for an empty start.
    start: tuple[dict[str, Any], ...] = ()


def minutes_of(rng: QueryRange) -> int:
    """How many whole or partial minutes the range covers (at least 1)."""
    return max(1, math.ceil((rng.end_s - rng.start_s) / 60.0 - 1e-9))


def ended_before_end(last_s: float, rng: QueryRange) -> bool:
    """Whether a series whose last sample is at ``last_s`` ended inside the range: it is
    absent at the range's last evaluation time (``start + (steps - 1) * step``; half a
    step of tolerance). A live Prometheus writes a staleness marker at the first scrape
    that no longer exports a series (prometheus/prometheus scrape/scrape.go, staleness
    handling), so a range query stops returning it at the next evaluation: a node deleted
    before the last step is absent there. Backfilled data has no staleness markers: a
    series stays visible for the lookback delta (5 minutes by default) after its last
    sample, so an object deleted within the last 5 minutes reads as still present."""
    last_step = rng.start_s + (rng.steps() - 1) * rng.step_s
    return last_s < last_step - rng.step_s / 2


def resample(
    s: Series, rng: QueryRange, subject: str, warnings: HistoryWarnings
) -> tuple[float, ...]:
    """The series per minute of ``rng`` (module docstring: max per minute, held between
    samples, 0 before the first and after a last sample well before the end); scrape
    gaps, late starts and early ends are counted in ``warnings`` under ``subject``."""
    n = minutes_of(rng)
    if not s.times_s:
        return (0.0,) * n
    times = np.asarray(s.times_s, dtype=np.float64)
    minute = np.floor((times - rng.start_s) / 60.0).astype(np.int64)
    inside = (minute >= 0) & (minute < n)
    out = np.full(n, np.nan)
    np.fmax.at(out, minute[inside], np.asarray(s.values, dtype=np.float64)[inside])
    first, last = s.times_s[0], s.times_s[-1]
    gap_s = 2 * rng.step_s
    if first - rng.start_s > gap_s:
        warnings.add("late series start", subject, "0 before its first sample")
    ended = ended_before_end(last, rng)
    if ended:
        warnings.add("early series end", subject, "0 after its last sample")
    if np.any(np.diff(times) > max(gap_s, 60.0)):
        warnings.add("scrape gap", subject, "the last value held through the gap")
    # Hold each value through the minutes without a sample (a forward fill).
    index = np.where(np.isnan(out), 0, np.arange(n))
    np.maximum.accumulate(index, out=index)
    out = out[index]
    starts = rng.start_s + 60.0 * np.arange(n)
    out[starts + 60.0 <= first] = 0.0
    if ended:
        out[starts > last] = 0.0
    out[np.isnan(out)] = 0.0
    return tuple(out.tolist())


#: The queries whose series the translation reads only at their ends: their labels, their
#: first and last sample times and their last value (a Job's start time, a node's life, a
#: pod's requests). Every other query's series (the replica counts resampled per minute,
#: and any query not listed) is kept whole.
ENDS_ONLY = frozenset(
    {
        "replicaset_owner",
        "hpa_info",
        "job_start_time",
        "job_completion_time",
        "job_parallelism",
        "job_owner",
        "pod_container_requests",
        "pod_init_container_requests",
        "pod_init_container_info",
        "pod_owner",
        "pod_created",
        "pod_scheduled_time",
        "node_info",
        "node_labels",
        "node_created",
    }
)


#: The labels that name the object a series is about (a pod's node is not one: a
#: pending pod's is empty).
_NAMING = frozenset(
    {"namespace", "pod", "deployment", "statefulset", "replicaset", "job_name"}
    | {"horizontalpodautoscaler"}
)


def _naming_labels(name: str, promql: str) -> tuple[str, ...]:
    """The labels of query ``name`` (its PromQL's first ``by (...)``) that name its
    object: each series must hold them, not empty."""
    found = re.search(r"by \(([^)]*)\)", promql)
    by = [label.strip() for label in found.group(1).split(",")] if found else []
    return tuple(
        label for label in by if label in _NAMING or (label == "node" and name.startswith("node_"))
    )


def with_names(
    name: str, labels: Sequence[str], series: list[Series], warnings: HistoryWarnings
) -> list[Series]:
    """``series`` without the series that lack one of ``labels`` (or hold it empty), each
    counted in ``warnings``: a node or pod without a name cannot be replayed, and the
    files written would refuse it (an as-run row's node is never empty)."""
    kept = []
    for s in series:
        if all(s.labels.get(label) for label in labels):
            kept.append(s)
        else:
            warnings.add(
                "nameless result",
                series_subject(name, s.labels),
                f"left it out (no {' or '.join(labels)} label to name what it is about)",
            )
    return kept


def with_samples(name: str, series: list[Series], warnings: HistoryWarnings) -> list[Series]:
    """``series`` without the series that hold no sample, each counted in ``warnings``.

    A series with ``"values": []``, or whose every sample was NaN or infinite (left out
    by the readers), says nothing at any time: no count, no timestamp, no request. Every
    reading of an answer may then assume at least one sample."""
    kept = [s for s in series if s.times_s]
    if len(kept) < len(series):
        for s in series:
            if not s.times_s:
                warnings.add(
                    "sample-less result",
                    series_subject(name, s.labels),
                    "left it out (no value at any step)",
                )
    return kept


def kept_samples(name: str, series: list[Series]) -> list[Series]:
    """What the translation keeps of query ``name``'s ``series``: for an ``ENDS_ONLY``
    query each series' first and last samples (a series of one or two samples as it is),
    else ``series`` itself. A week at one minute is 10,080 samples a series; the ends are
    all ``_History`` reads of these, so the import holds two."""
    if name not in ENDS_ONLY:
        return series
    return [
        s
        if len(s.times_s) <= 2
        else Series(s.labels, (s.times_s[0], s.times_s[-1]), (s.values[0], s.values[-1]))
        for s in series
    ]


def check_replicas(traces: Iterable[WorkloadTrace], rng: QueryRange, source_name: str) -> None:
    """Raise ``InputError`` for the first trace with a replica count that no cluster
    records: below 0 or above ``MAX_REPLICAS`` (kube-state-metrics reports neither; a
    hand-edited or corrupted history may). Names the source, the workload (and its HPA)
    and the minute.
    """
    for tr in traces:
        values = np.asarray(tr.values, dtype=np.float64)
        bad = np.flatnonzero((values < 0) | (values > MAX_REPLICAS))
        if not bad.size:
            continue
        minute = int(bad[0])
        at = datetime.fromtimestamp(rng.start_s + 60.0 * minute, UTC).isoformat()
        hpa = f" (HPA {tr.hpa})" if tr.hpa else ""
        raise InputError(
            f"{values[minute]:g} replicas at minute {minute} ({at.replace('+00:00', 'Z')}); "
            f"a replica count is 0 to {MAX_REPLICAS}",
            file=source_name,
            field=f"{tr.kind}/{tr.key}{hpa}",
        )


def translate(
    source: SeriesSource,
    source_name: str,
    rng: QueryRange,
    objects: ClusterObjects,
    *,
    region: str | None = None,
    progress: Callable[[str], None] | None = None,
    warnings: HistoryWarnings | None = None,
    empty_start: bool = False,
) -> Imported:
    """Read every query of the catalog from ``source`` and translate the answers.

    ``source_name`` names the source in errors (the URL or the saved file). ``region``
    overrides the one derived from the nodes' zones. ``progress`` receives one line per
    query read. ``warnings``: the collector to add to (the source's own, so one list
    holds reading and translation); a new one when omitted. ``empty_start``: leave the
    cluster at the start (``Imported.start``) empty, as before it was read.

    Raises:
        InputError: no query returned a single series (no kube-state-metrics history),
            naming the source and the series looked for; a replica count outside 0 to
            ``MAX_REPLICAS`` (``check_replicas``); or the source's own errors.
    """
    warnings = warnings if warnings is not None else HistoryWarnings()
    answers: dict[str, list[Series]] = {}
    for i, q in enumerate(QUERIES, start=1):
        fetched = source.fetch(q.name, q.promql, query_step(q, rng))
        named = with_names(q.name, _naming_labels(q.name, q.promql), fetched, warnings)
        answers[q.name] = kept_samples(q.name, with_samples(q.name, named, warnings))
        if progress is not None:
            progress(f"[{i}/{len(QUERIES)}] {q.name}: {len(answers[q.name])} series")
    if not any(answers.values()):
        wanted = sorted({q.metric for q in QUERIES})
        raise InputError(
            f"no kube-state-metrics series in the range (looked for {', '.join(wanted)}); "
            "is kube-state-metrics scraped by this Prometheus, and is the range right?",
            file=source_name,
        )
    if not objects.manifests.nodepools:
        warnings.add(
            "cluster without a NodePool",
            objects.source,
            "Joiner and the Cluster Autoscaler baseline have nothing to launch: add the "
            "NodePools and EC2NodeClasses you would deploy to the dump (-f nodepools.yaml) "
            "and import again (added to objects.yaml afterwards, an EC2NodeClass's subnets "
            "are missing from spec.cloud)",
        )
    h = _History(answers, rng, objects.manifests, warnings, source_name)
    traces, skip_jobs = h.traces()
    check_replicas(traces, rng, source_name)
    nodes = h.nodes()
    region = region or region_of(nodes)
    documents = h.documents(objects.documents, skip_jobs)
    return Imported(
        range=rng,
        documents=documents,
        traces=traces,
        cron_run_s=h.cron_runs(),
        nodes=nodes,
        pods=h.pods(),
        region=region,
        warnings=warnings,
        cloud=vpc_for(objects.manifests, _zones(nodes, region), warnings),
        start=() if empty_start else h.start(documents, region),
    )


def _zones(nodes: Iterable[AsRunNode], region: str | None) -> list[str]:
    """The zones of ``region`` (None: us-east-1, the simulation's default) the nodes ran
    in, else every zone of the region in the packaged catalog, sorted."""
    from joiner.cloudprovider.catalog import Catalog

    where = region or "us-east-1"
    seen = sorted({n.zone for n in nodes if n.zone and region_of([n]) == where})
    if seen:
        return seen
    catalog = Catalog.load()
    return [z for z, _ in catalog.zones(where)] if where in catalog.regions() else []


def vpc_for(
    manifests: ManifestSet, zones: Sequence[str], warnings: HistoryWarnings
) -> dict[str, Any] | None:
    """``spec.cloud.subnets`` and ``securityGroups`` that every EC2NodeClass selector term
    matches: the subnets and groups of the NodeClass's ``status`` (the ones the cluster
    resolved), else one subnet per zone of ``zones`` (counted in ``warnings``), each
    carrying the tags (``*``: the value ``imported``) and ``Name`` its terms select by, and
    a subnet or group for each term by id. None without NodeClasses or zones to place
    subnets in."""
    subnets: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    for nc in manifests.nodeclasses:
        if nc.source.kind != "EC2NodeClass":
            continue
        base = list(nc.status_subnets)
        if not base and zones:
            base = [(f"subnet-{z}", z) for z in zones]
            warnings.add(
                "NodeClass VPC assumption",
                nc.name,
                "one subnet in each zone the nodes ran in (else each zone of the region)",
            )
        if not base:
            continue
        for sid, zone in base:
            subnets.setdefault(sid, {"id": sid, "zone": zone, "tags": {}})
        _select(nc.subnet_selector_terms, [sid for sid, _ in base], subnets, base[0][1])
        gbase = list(nc.status_security_groups) or [("sg-imported", "imported")]
        for gid, name in gbase:
            groups.setdefault(gid, {"id": gid, "name": name, "tags": {}})
        _select(nc.security_group_selector_terms, [g for g, _ in gbase], groups, None)
    if not subnets:
        return None
    return {
        "subnets": [subnets[k] for k in sorted(subnets)],
        "securityGroups": [groups[k] for k in sorted(groups)],
    }


def _select(
    terms: Iterable[Any], base: Sequence[str], found: dict[str, dict[str, Any]], zone: str | None
) -> None:
    """Make every selector term match: an id term gets its own subnet (in ``zone``) or
    group; a name or tags term tags the ``base`` ones."""
    for t in terms:
        if t.id:
            entry: dict[str, Any] = {"id": t.id, "tags": {}}
            if zone is None:
                entry["name"] = t.id
            else:
                entry["zone"] = zone
            found.setdefault(t.id, entry)
            continue
        for key in base:
            item = found[key]
            if t.name and zone is None:
                item["name"] = t.name
            elif t.name:
                item["tags"]["Name"] = t.name
            for k, v in t.tags:
                item["tags"][k] = "imported" if v == "*" else v


def region_of(nodes: Iterable[AsRunNode]) -> str | None:
    """The AWS region most nodes' zones are in (``us-east-1a`` -> ``us-east-1``; a tie goes
    to the first in name order), or None without zones."""
    counts: dict[str, int] = {}
    for n in nodes:
        found = re.match(r"^([a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-[0-9]+)", n.zone)
        if found:
            counts[found.group(1)] = counts.get(found.group(1), 0) + 1
    if not counts:
        return None
    return min(counts, key=lambda r: (-counts[r], r))


def _key(labels: Mapping[str, str], name_label: str) -> str:
    return f"{labels.get('namespace', '')}/{labels.get(name_label, '')}"


def _last(s: Series) -> float:
    return s.values[-1]


#: The largest request read (cores, bytes or units): 2^60, an exbibyte of memory; above
#: it (or below 0) a request is corrupt, not a workload's.
MAX_REQUEST = 2.0**60


def _request(s: Series, query: str, source: str) -> float:
    """A request series' latest value.

    Raises:
        InputError: below 0 or above ``MAX_REQUEST``, naming the source and the series.
    """
    value = _last(s)
    if not 0 <= value <= MAX_REQUEST:
        raise InputError(
            f"request {value:g} is not 0 to {MAX_REQUEST:g} (cores, bytes or units)",
            file=source,
            field=series_subject(query, s.labels),
        )
    return value


class _History:
    """The answers of one import, read per concern."""

    def __init__(
        self,
        answers: Mapping[str, list[Series]],
        rng: QueryRange,
        manifests: ManifestSet,
        warnings: HistoryWarnings,
        source: str = "",
    ) -> None:
        self.a = answers
        #: The source's name, for errors.
        self.source = source
        self.rng = rng
        self.ms = manifests
        self.w = warnings
        self.dropped_jobs: set[str] = set()
        #: The as-run nodes with their labels and provider IDs (filled by ``nodes``).
        self.start_nodes: list[StartNode] = []

    # -- workloads ----------------------------------------------------------------------

    def _replica_series(self) -> dict[tuple[str, str], Series]:
        """(kind, key) -> the desired-replicas series of each Deployment, StatefulSet and
        ReplicaSet without an owner."""
        owned = {
            _key(s.labels, "replicaset")
            for s in self.a["replicaset_owner"]
            if s.labels.get("owner_kind", "<none>") not in ("", "<none>")
        }
        out: dict[tuple[str, str], Series] = {}
        for s in self.a["deployment_replicas"]:
            out["Deployment", _key(s.labels, "deployment")] = s
        for s in self.a["statefulset_replicas"]:
            out["StatefulSet", _key(s.labels, "statefulset")] = s
        for s in self.a["replicaset_replicas"]:
            key = _key(s.labels, "replicaset")
            if key not in owned:
                out["ReplicaSet", key] = s
        return out

    def _hpa_series(self) -> dict[tuple[str, str], tuple[str, Series]]:
        """(target kind, target key) -> (HPA key, its desired-replicas series)."""
        targets = {
            _key(s.labels, "horizontalpodautoscaler"): (
                s.labels.get("scaletargetref_kind", ""),
                f"{s.labels.get('namespace', '')}/{s.labels.get('scaletargetref_name', '')}",
            )
            for s in self.a["hpa_info"]
        }
        out: dict[tuple[str, str], tuple[str, Series]] = {}
        for s in self.a["hpa_desired_replicas"]:
            hpa = _key(s.labels, "horizontalpodautoscaler")
            if hpa not in targets:
                self.w.add(
                    "untargeted HPA",
                    hpa,
                    "its target's own replica history replayed",
                )
                continue
            out[targets[hpa]] = (hpa, s)
        return out

    def _jobs(self) -> dict[str, tuple[float, float | None, float | None]]:
        """Job key -> (start, completion or None, parallelism or None), unix seconds."""
        start = {_key(s.labels, "job_name"): _last(s) for s in self.a["job_start_time"]}
        done = {_key(s.labels, "job_name"): _last(s) for s in self.a["job_completion_time"]}
        par = {_key(s.labels, "job_name"): _last(s) for s in self.a["job_parallelism"]}
        return {k: (t, done.get(k), par.get(k)) for k, t in start.items()}

    def _job_owners(self) -> dict[str, str]:
        """Job key -> the key of the CronJob that created it."""
        return {
            _key(s.labels, "job_name"): f"{s.labels.get('namespace', '')}/"
            f"{s.labels.get('owner_name', '')}"
            for s in self.a["job_owner"]
            if s.labels.get("owner_kind") == "CronJob"
        }

    def traces(self) -> tuple[tuple[WorkloadTrace, ...], set[str]]:
        """Every replayable workload's trace (sorted by kind and key), and the Jobs left
        out of the objects (no run in the range)."""
        kinds = {w.key: w.kind for w in self.ms.workloads}
        hpas = self._hpa_series()
        found: dict[tuple[str, str], Callable[[], WorkloadTrace]] = {}
        for (kind, key), s in self._replica_series().items():
            found[kind, key] = partial(self._trace, kind, key, None, s)
        for (kind, key), (hpa, s) in hpas.items():
            found[kind, key] = partial(self._trace, kind, key, hpa, s)
        owners = self._job_owners()
        for key, (start, done, par) in self._jobs().items():
            if key not in owners:
                found["Job", key] = partial(self._job_trace, key, start, done, par)
        kept: list[WorkloadTrace] = []
        for (kind, key), make in sorted(found.items()):
            if kinds.get(key) != kind:
                self.w.add(
                    "history-only workload",
                    f"{kind}/{key}",
                    "left out, no pod template to replay: renamed or deleted",
                )
                continue
            kept.append(make())
        self._objects_without_history({(t.kind, t.key) for t in kept})
        return tuple(kept), self.dropped_jobs

    def _trace(self, kind: str, key: str, hpa: str | None, s: Series) -> WorkloadTrace:
        """A replica series resampled (``hpa``: the HPA whose desired replicas it is)."""
        return WorkloadTrace(kind, key, resample(s, self.rng, hpa or key, self.w), hpa)

    def _job_trace(
        self, key: str, start: float, done: float | None, par: float | None
    ) -> WorkloadTrace:
        """A Job run as a trace: its parallelism (else the object's) while it ran."""
        wl = self.ms.deployment(key)
        width = par if par is not None else (wl.replicas if wl is not None else 1)
        return WorkloadTrace("Job", key, self._job_values(start, done, width))

    def _job_values(self, start: float, done: float | None, width: float) -> tuple[float, ...]:
        """A Job run as replicas per minute: ``width`` pods from its start to its completion
        (or the range's end), 0 otherwise."""
        starts = self.rng.start_s + 60.0 * np.arange(minutes_of(self.rng))
        end = done if done is not None else math.inf
        running = (start < starts + 60.0) & (end > starts)
        return tuple(np.where(running, float(width), 0.0).tolist())

    def _objects_without_history(self, replayed: set[tuple[str, str]]) -> None:
        """Warn for every workload object with no replica history; unowned Jobs without a
        run in the range are left out of the objects (they did not run)."""
        for wl in sorted(self.ms.workloads, key=lambda w: (w.kind, w.key)):
            if (wl.kind, wl.key) in replayed:
                continue
            if wl.kind == "Job":
                self.dropped_jobs.add(wl.key)
                self.w.add(
                    "idle Job",
                    wl.key,
                    "left out of the objects",
                )
                continue
            self.w.add(
                "unrecorded workload",
                f"{wl.kind}/{wl.key}",
                "kept at the object's replicas for the whole range",
            )

    def cron_runs(self) -> dict[str, float]:
        """CronJob key -> median run time (seconds) of its Jobs that completed, for the
        CronJobs in the objects; runs of CronJobs without an object are counted."""
        owners = self._job_owners()
        runs: dict[str, list[float]] = {}
        for key, (start, done, _par) in self._jobs().items():
            cron = owners.get(key)
            if cron is None:
                continue
            if done is not None and done > start:
                runs.setdefault(cron, []).append(done - start)
            else:
                runs.setdefault(cron, [])
        have = {c.key for c in self.ms.cronjobs}
        for key in sorted(have - set(runs)):
            runs[key] = []
        out: dict[str, float] = {}
        for cron, times in sorted(runs.items()):
            if cron not in have:
                self.w.add(
                    "history-only CronJob",
                    cron,
                    "its runs left out: no pod template to replay",
                )
            elif not times:
                self.w.add(
                    "unmeasured CronJob",
                    cron,
                    "no run completed in the range: each run lasts the simulation's default",
                )
            else:
                out[cron] = max(1.0, round(statistics.median(times)))
        return out

    # -- requests -----------------------------------------------------------------------

    def pod_requests(self) -> dict[str, tuple[float, dict[str, dict[str, float]]]]:
        """Pod key -> (time of its latest request sample, per-container requests
        ``{container: {cpu: cores, memory: bytes}}``, init containers prefixed ``init:``
        and sidecars ``sidecar:``)."""
        sidecars = {
            (_key(s.labels, "pod"), s.labels.get("container", ""))
            for s in self.a["pod_init_container_info"]
            if s.labels.get("restart_policy") == "Always"
        }
        out: dict[str, tuple[float, dict[str, dict[str, float]]]] = {}
        for query, prefix in (("pod_container_requests", ""), ("pod_init_container_requests", "i")):
            for s in self.a[query]:
                pod = _key(s.labels, "pod")
                container = s.labels.get("container", "")
                if prefix:
                    kind = "sidecar" if (pod, container) in sidecars else "init"
                    container = f"{kind}:{container}"
                seen, containers = out.get(pod, (-math.inf, {}))
                value = _request(s, query, self.source)
                containers.setdefault(container, {})[s.labels.get("resource", "")] = value
                out[pod] = (max(seen, s.times_s[-1]), containers)
        return out

    def pod_workloads(self) -> dict[str, str]:
        """Pod key -> the key of the workload that runs it (a ReplicaSet's Deployment, a
        Job's CronJob), for pods with a known owner."""
        rs_owner = {
            _key(s.labels, "replicaset"): f"{s.labels.get('namespace', '')}/"
            f"{s.labels.get('owner_name', '')}"
            for s in self.a["replicaset_owner"]
            if s.labels.get("owner_kind") == "Deployment"
        }
        job_owner = self._job_owners()
        out: dict[str, str] = {}
        for s in self.a["pod_owner"]:
            kind = s.labels.get("owner_kind", "")
            owner = f"{s.labels.get('namespace', '')}/{s.labels.get('owner_name', '')}"
            if kind == "ReplicaSet":
                out[_key(s.labels, "pod")] = rs_owner.get(owner, owner)
            elif kind == "Job":
                out[_key(s.labels, "pod")] = job_owner.get(owner, owner)
            elif kind in ("StatefulSet", "DaemonSet"):
                out[_key(s.labels, "pod")] = owner
        return out

    def documents(
        self, documents: Sequence[dict[str, Any]], skip_jobs: set[str]
    ) -> tuple[dict[str, Any], ...]:
        """The objects to simulate: the cluster's, without ``DROPPED_KINDS``, kinds Joiner
        does not read and Jobs that did not run, with each workload's requests set to its
        latest pod's in the history where they differ from the object's."""
        latest = self._latest_requests()
        kept: list[dict[str, Any]] = []
        for doc in documents:
            kind = str(doc.get("kind", ""))
            meta = doc.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
            if kind in DROPPED_KINDS or (kind == "Job" and key in skip_jobs):
                continue
            if (str(doc.get("apiVersion", "")), kind) not in HANDLERS:
                self.w.add(
                    "unmodelled object left out",
                    f"{kind}/{meta.get('name', '')}",
                    "not copied: Joiner does not read its kind (Secrets and the like stay out)",
                )
                continue
            if kind in (*SCALED_KINDS, "CronJob", "DaemonSet") and key in latest:
                doc = self._with_requests(doc, kind, key, latest[key])
            kept.append(doc)
        left_out = [d for d in documents if str(d.get("kind", "")) in DROPPED_KINDS]
        for d in left_out:
            meta = d.get("metadata") or {}
            self.w.add(
                "dropped current-state object",
                f"{d.get('kind')}/{meta.get('name', '')}",
                "the dump's state is today's, not the range's start (start.yaml holds the "
                "history's); HPAs replayed as their targets' replicas",
            )
        return tuple(kept)

    def _latest_requests(self) -> dict[str, tuple[str, dict[str, dict[str, float]]]]:
        """Workload key -> (its latest pod, that pod's per-container requests); pods without
        any request series are counted."""
        requests = self.pod_requests()
        latest: dict[str, tuple[float, str]] = {}
        for pod, owner in sorted(self.pod_workloads().items()):
            if pod not in requests:
                self.w.add(
                    "request-less pod",
                    pod,
                    "its workload's requests taken from the object",
                )
                continue
            seen = requests[pod][0]
            if owner not in latest or seen >= latest[owner][0]:
                latest[owner] = (seen, pod)
        return {owner: (pod, requests[pod][1]) for owner, (_t, pod) in latest.items()}

    def _with_requests(
        self,
        doc: dict[str, Any],
        kind: str,
        key: str,
        latest: tuple[str, dict[str, dict[str, float]]],
    ) -> dict[str, Any]:
        """``doc`` with its pod template's container requests set to ``latest``'s when the
        Kubernetes sum of the two differs (warned); else ``doc`` itself."""
        pod, containers = latest
        template = self._template(key, kind)
        if template is None:
            return doc
        cpu_m, mem = pod_requests(containers)
        have_cpu = template.requests.get("cpu", 0)
        have_mem = template.requests.get("memory", 0)
        if abs(cpu_m - have_cpu) < 1 and abs(mem - have_mem) < 1:
            return doc
        new, added = _patched(doc, kind, containers)
        old_text = quantity.format_resources({"cpu": have_cpu, "memory": have_mem})
        new_text = quantity.format_resources({"cpu": round(cpu_m), "memory": round(mem)})
        subject = f"{kind}/{key} (pod {pod}: {old_text} -> {new_text}"
        if added:
            subject += f"; containers not in the template added: {', '.join(added)}"
        self.w.add(
            "request change",
            subject + ")",
            "the requests of its latest pod in the history used, containers the template "
            "lacks (injected sidecars) added",
        )
        return new

    def _template(self, key: str, kind: str) -> o.PodTemplate | None:
        if kind == "CronJob":
            return next((c.template for c in self.ms.cronjobs if c.key == key), None)
        if kind == "DaemonSet":
            return next(
                (d.template for d in self.ms.daemonsets if f"{d.namespace}/{d.name}" == key),
                None,
            )
        found = self.ms.deployment(key)
        return found.template if found is not None and found.kind == kind else None

    # -- as-run -------------------------------------------------------------------------

    def nodes(self) -> tuple[AsRunNode, ...]:
        """The as-run nodes: every node ``kube_node_info`` shows in the range, by name."""
        # A node whose labels changed has one series per label set: the latest wins, each
        # label taken from the latest series that has it.
        labels: dict[str, dict[str, str]] = {}
        for s in sorted(self.a["node_labels"], key=lambda s: s.times_s[-1]):
            merged = labels.setdefault(s.labels.get("node", ""), {})
            merged.update({k: v for k, v in s.labels.items() if v})
        created = {s.labels.get("node", ""): _last(s) for s in self.a["node_created"]}
        seen: dict[str, tuple[float, float, str]] = {}
        for s in self.a["node_info"]:
            name = s.labels.get("node", "")
            first, last, provider = s.times_s[0], s.times_s[-1], s.labels.get("provider_id", "")
            if name in seen:  # a provider ID set after the node registered: two series
                before = seen[name]
                first, last, provider = (
                    min(first, before[0]),
                    max(last, before[1]),
                    (provider or before[2]),
                )
            seen[name] = (first, last, provider)
        dumped = {n.name: dict(n.labels) for n in self.ms.nodes}
        out = []
        for name, (first, last, provider) in sorted(seen.items()):
            ended = ended_before_end(last, self.rng)
            if ended and last <= self.rng.start_s:
                self.w.add(
                    "gone-at-start node",
                    name,
                    "left out: seen only at the range's first evaluation (deleted before "
                    "the start, or within a step of it)",
                )
                continue
            node_labels = self._node_labels(name, labels.get(name, {}), dumped.get(name, {}))
            start = created.get(name, first) - self.rng.start_s
            out.append(
                AsRunNode(
                    node=name,
                    instance_type=self._instance_type(name, node_labels),
                    capacity_type=self._capacity_type(name, node_labels),
                    zone=self._zone(name, node_labels, provider),
                    node_pool=_label(node_labels, "karpenter.sh/nodepool")
                    or _label(node_labels, "eks.amazonaws.com/nodegroup"),
                    start_s=max(0.0, start),
                    end_s=max(0.0, last - self.rng.start_s) if ended else None,
                )
            )
            kube_labels = {k: node_labels[n] for k, n in NODE_LABELS.items() if node_labels.get(n)}
            self.start_nodes.append(StartNode(out[-1], kube_labels, provider))
        return tuple(out)

    def start(
        self, documents: Sequence[Mapping[str, Any]], region: str | None
    ) -> tuple[dict[str, Any], ...]:
        """The cluster at the range's start (``joiner.history.start``), after ``nodes``."""
        kinds = {_key(s.labels, "pod"): s.labels.get("owner_kind", "") for s in self.a["pod_owner"]}
        owners = {pod: (kinds.get(pod, ""), key) for pod, key in self.pod_workloads().items()}
        return start_objects(
            self.start_nodes, self.a["pod_node"], owners, documents, self.rng, region, self.w
        )

    def _node_labels(
        self, node: str, history: Mapping[str, str], dumped: Mapping[str, str]
    ) -> dict[str, str]:
        """``kube_node_labels``' labels of ``node``, with each label Joiner reads that the
        history hides taken from the dump's Node of that name when it has it (counted)."""
        merged = dict(history)
        taken = False
        for key, name in NODE_LABELS.items():
            if not merged.get(name) and dumped.get(key):
                merged[name] = dumped[key]
                taken = True
        if taken:
            self.w.add(
                "dump-labelled node",
                node,
                "labels the history hides taken from the dump's Node of that name",
            )
        return merged

    def _instance_type(self, node: str, labels: Mapping[str, str]) -> str:
        found = _label(labels, "node.kubernetes.io/instance-type") or _label(
            labels, "beta.kubernetes.io/instance-type"
        )
        if not found:
            self.w.add(
                "untyped node",
                node,
                "instance type left empty: kube-state-metrics' --metric-labels-allowlist "
                "hides node.kubernetes.io/instance-type",
            )
        return found

    def _capacity_type(self, node: str, labels: Mapping[str, str]) -> str:
        karpenter = _label(labels, "karpenter.sh/capacity-type")
        if karpenter in _KARPENTER_CAPACITY:
            return karpenter
        eks = _label(labels, "eks.amazonaws.com/capacityType")
        if eks in _EKS_CAPACITY:
            return _EKS_CAPACITY[eks]
        self.w.add("capacity-unknown node", node, "capacity type left empty (unknown)")
        return ""

    def _zone(self, node: str, labels: Mapping[str, str], provider_id: str) -> str:
        found = _label(labels, "topology.kubernetes.io/zone") or _label(
            labels, "failure-domain.beta.kubernetes.io/zone"
        )
        if found:
            return found
        by_id = _PROVIDER_ZONE.match(provider_id)
        if by_id:
            return by_id.group(1)
        self.w.add("zoneless node", node, "zone left empty")
        return ""

    def pods(self) -> tuple[AsRunPod, ...]:
        """The as-run pods: creation and scheduling times of every pod in the range.

        A pod seen only at the range's start is left out: there ``pod_created``'s
        ``last_over_time`` window reaches back an hour (``queries.PER_OBJECT_STEP_S``), to
        pods that ended before the range; a pod running after the start has a sample in
        the window of the next evaluation too."""
        scheduled = {_key(s.labels, "pod"): _last(s) for s in self.a["pod_scheduled_time"]}
        out = []
        for s in self.a["pod_created"]:
            if s.times_s[-1] <= self.rng.start_s:
                continue
            key = _key(s.labels, "pod")
            when = scheduled.get(key)
            out.append(
                AsRunPod(
                    namespace=s.labels.get("namespace", ""),
                    pod=s.labels.get("pod", ""),
                    created_s=_last(s) - self.rng.start_s,
                    scheduled_s=None if when is None else when - self.rng.start_s,
                )
            )
        return tuple(sorted(out, key=lambda p: (p.namespace, p.pod)))


def _label(labels: Mapping[str, str], key: str) -> str:
    """A node label's value from ``kube_node_labels`` (``NODE_LABELS`` names), or ''."""
    return labels.get(NODE_LABELS[key], "")


def pod_requests(containers: Mapping[str, Mapping[str, float]]) -> tuple[float, float]:
    """A pod's effective (cpu millicores, memory bytes) from per-container requests in cores
    and bytes, as Kubernetes sums them (kubernetes/kubernetes
    staging/src/k8s.io/component-helpers/resource/helpers.go, ``PodRequests``): the larger
    of the app containers' sum plus every sidecar's and each regular init container's plus
    the sidecars started before it. kube-state-metrics does not give the init containers'
    order, so every sidecar is taken as started before each regular init container (the
    larger figure when they are not).

    ``containers`` keys: app containers by name, ``init:<name>`` and ``sidecar:<name>``.
    """
    totals = []
    for res in ("cpu", "memory"):
        app = sum(v.get(res, 0.0) for k, v in containers.items() if ":" not in k)
        side = sum(v.get(res, 0.0) for k, v in containers.items() if k.startswith("sidecar:"))
        init = max(
            (v.get(res, 0.0) + side for k, v in containers.items() if k.startswith("init:")),
            default=0.0,
        )
        totals.append(max(app + side, init))
    return totals[0] * 1000.0, totals[1]


def _pod_spec(doc: dict[str, Any], kind: str) -> dict[str, Any] | None:
    spec = doc.get("spec") or {}
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template") or {}
    found = template.get("spec")
    return found if isinstance(found, dict) else None


def _patched(
    doc: dict[str, Any], kind: str, containers: Mapping[str, Mapping[str, float]]
) -> tuple[dict[str, Any], list[str]]:
    """A deep copy of ``doc`` whose containers (matched by name) request what
    ``containers`` gives (cpu as millicores, memory as bytes), and the history's containers
    the template lacks (a webhook-injected sidecar such as Istio's or Linkerd's proxy)
    added, so the pod requests what the history says (``pod_requests``): an app container
    to ``containers``, a sidecar (``sidecar:``) as a restartable init container before the
    others (every sidecar started before each regular init container, as ``pod_requests``
    assumes), a regular init container (``init:``) after them. Returns the copy and the
    added containers' history names (``doc`` itself and ``[]`` without a pod template)."""
    new = copy.deepcopy(doc)
    spec = _pod_spec(new, kind)
    if spec is None:
        return doc, []
    matched: set[str] = set()
    for field_name, prefixes in (("containers", ("",)), ("initContainers", ("init:", "sidecar:"))):
        for c in spec.get(field_name) or []:
            if not isinstance(c, dict):
                continue
            names = [p + str(c.get("name")) for p in prefixes]
            found = next((n for n in names if n in containers), None)
            if found is not None:
                matched.add(found)
                _set_requests(c, containers[found])
    added = [n for n in containers if n not in matched]
    for name in added:
        prefix, _, bare = name.rpartition(":")
        c = {"name": bare, "image": "injected", "resources": {}}
        _set_requests(c, containers[name])
        if not prefix:
            spec["containers"] = [*(spec.get("containers") or []), c]
        elif prefix == "sidecar":
            spec["initContainers"] = [{**c, "restartPolicy": "Always"}, *_inits(spec)]
        else:
            spec["initContainers"] = [*_inits(spec), c]
    return new, added


def _inits(spec: Mapping[str, Any]) -> list[Any]:
    found = spec.get("initContainers")
    return list(found) if isinstance(found, list) else []


def _set_requests(c: dict[str, Any], given: Mapping[str, float]) -> None:
    """Set container ``c``'s cpu and memory requests exactly as the history has them
    (absent there: no request), raising a limit below a new request."""
    resources = c.get("resources") or {}
    requests = dict(resources.get("requests") or {})
    requests.pop("cpu", None)
    requests.pop("memory", None)
    if "cpu" in given:
        requests["cpu"] = f"{round(given['cpu'] * 1000)}m"
    if "memory" in given:
        requests["memory"] = str(round(given["memory"]))
    c["resources"] = {**resources, "requests": requests}
    if resources.get("limits"):
        c["resources"]["limits"] = _raised(dict(resources["limits"]), requests)


def _raised(limits: dict[str, Any], requests: Mapping[str, str]) -> dict[str, Any]:
    """``limits`` with a cpu or memory limit below the new request raised to it (the
    history's pod ran with both, so its limit was at least its request; a request above the
    limit would not load)."""
    for res in ("cpu", "memory"):
        if res in limits and res in requests:
            limit = quantity.parse(limits[res], resource=res)
            if quantity.parse(requests[res], resource=res) > limit:
                limits[res] = requests[res]
    return limits
