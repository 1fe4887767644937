"""Saved range-query responses: their layout on disk, their parsing, and ``FileSource``.

A saved history is what ``/api/v1/query_range`` returned, byte for byte (prometheus/
prometheus web/api/v1/api.go, ``queryRange``; the format is the HTTP API's "range
vectors" result: ``{"status": "success", "data": {"resultType": "matrix", "result":
[{"metric": {...}, "values": [[<unix seconds>, "<value>"], ...]}, ...]}}``). It is
either

- a directory holding one file per query name, ``<name>.json``, or, for a range that was
  read in chunks (``prometheus.chunk_ranges``), ``<name>.0.json``, ``<name>.1.json``, ...
  in time order; an optional ``queries.json`` index (written by ``--save-responses``)
  records each query's PromQL, its files and the range they were read for; or
- a single JSON file mapping each query name to its response, or to a list of chunk
  responses in time order.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joiner.api.errors import InputError
from joiner.history.clean import normalise, series_subject
from joiner.history.series import HistoryWarnings, QueryRange, Series

__all__ = [
    "INDEX_FILE",
    "FileSource",
    "Parsed",
    "check_query_name",
    "join_chunks",
    "parse_response",
    "response_file_name",
]

#: The index ``--save-responses`` writes beside the responses.
INDEX_FILE = "queries.json"

_HINT = "`joiner import --print-queries` lists each query's name and PromQL"


def check_query_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is usable as a file name stem.

    Query names are chosen by the code, not the user: letters, digits, ``_`` and ``-``.
    """
    if not name or not all(c.isascii() and (c.isalnum() or c in "_-") for c in name):
        raise ValueError(f"query name {name!r}: use letters, digits, '_' and '-' only")


def response_file_name(name: str, chunk: int | None = None) -> str:
    """``<name>.json`` for a whole range, ``<name>.<chunk>.json`` for chunk ``chunk``."""
    check_query_name(name)
    return f"{name}.json" if chunk is None else f"{name}.{chunk}.json"


@dataclass(frozen=True, slots=True)
class Parsed:
    """One response's series and the warnings Prometheus attached to it."""

    series: list[Series]
    prometheus_warnings: list[str]
    dropped_nan: int
    histograms: int


def _float(raw: object, where: str, field: str) -> float:
    if isinstance(raw, str | int | float) and not isinstance(raw, bool):
        try:
            return float(raw)
        except ValueError:
            pass
    raise InputError(f"{raw!r} is not a number", file=where, field=field)


def _one_series(entry: object, where: str, index: int) -> tuple[Series | None, int, bool]:
    field = f"data.result[{index}]"
    if not isinstance(entry, dict):
        raise InputError("expected an object with metric and values", file=where, field=field)
    metric = entry.get("metric", {})
    if not isinstance(metric, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metric.items()
    ):
        raise InputError("expected string labels", file=where, field=f"{field}.metric")
    labels = {k: v for k, v in metric.items() if k != "__name__"}
    raw = entry.get("values")
    if raw is None:
        if "histograms" in entry:
            return None, 0, True
        raise InputError("missing (an instant result? use query_range)", file=where, field=field)
    if not isinstance(raw, list):
        raise InputError("expected a list of [time, value]", file=where, field=f"{field}.values")
    times: list[float] = []
    values: list[float] = []
    dropped = 0
    for k, pair in enumerate(raw):
        at = f"{field}.values[{k}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise InputError("expected [time, value]", file=where, field=at)
        value = _float(pair[1], where, at)
        if math.isnan(value):
            dropped += 1
            continue
        times.append(_float(pair[0], where, at))
        values.append(value)
    return Series(labels, tuple(times), tuple(values)), dropped, False


def parse_response(body: Any, where: str) -> Parsed:
    """Read one decoded ``/api/v1/query_range`` response.

    ``body`` is the decoded JSON; ``where`` names its origin (a file, or a URL and query)
    for messages. NaN samples (stale markers and NaN results) are dropped and counted;
    native-histogram series are left out and counted. Raises ``InputError`` naming
    ``where`` and the field for ``status: error`` or a shape that is not a matrix.
    """
    if not isinstance(body, dict) or "status" not in body:
        raise InputError("not a Prometheus API response (no status field)", file=where)
    if body["status"] != "success":
        kind = body.get("errorType", "error")
        raise InputError(f"Prometheus answered {kind}: {body.get('error', '')}", file=where)
    data = body.get("data")
    if not isinstance(data, dict):
        raise InputError("missing", file=where, field="data")
    if data.get("resultType") != "matrix":
        raise InputError(
            f"expected a range query's matrix, got {data.get('resultType')!r}",
            file=where,
            field="data.resultType",
        )
    result = data.get("result")
    if not isinstance(result, list):
        raise InputError("expected a list", file=where, field="data.result")
    series: list[Series] = []
    dropped = histograms = 0
    for index, entry in enumerate(result):
        one, nan, histogram = _one_series(entry, where, index)
        dropped += nan
        histograms += histogram
        if one is not None:
            series.append(one)
    notes = body.get("warnings") or []
    return Parsed(series, [str(n) for n in notes], dropped, histograms)


def note_parsed(parsed: Parsed, name: str, warnings: HistoryWarnings) -> None:
    """Count what ``parse_response`` left out or Prometheus warned about, under ``name``."""
    for note in parsed.prometheus_warnings:
        warnings.add("Prometheus warning", f"{name}: {note}", "used the result as returned")
    for _ in range(parsed.dropped_nan):
        warnings.add("NaN sample", name, "left the sample out (no value at that step)")
    for _ in range(parsed.histograms):
        warnings.add("native histogram series", name, "left it out (only float samples count)")


def _key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def join_chunks(
    chunks: Iterable[Sequence[Series]], name: str, warnings: HistoryWarnings
) -> list[Series]:
    """Join the chunk results of one query into one series per label set.

    Series are matched by their labels; the result keeps the order in which each label set
    first appears. Chunks in time order concatenate as they are; samples that overlap or
    come out of order (chunks given out of order, a hand-made file) go through
    ``clean.normalise``, which counts them.
    """
    times: dict[tuple[tuple[str, str], ...], list[float]] = {}
    values: dict[tuple[tuple[str, str], ...], list[float]] = {}
    labels: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
    for chunk in chunks:
        for one in chunk:
            key = _key(one.labels)
            if key not in labels:
                labels[key], times[key], values[key] = one.labels, [], []
            times[key].extend(one.times_s)
            values[key].extend(one.values)
    joined = []
    for key, series_labels in labels.items():
        one = Series(series_labels, tuple(times[key]), tuple(values[key]))
        joined.append(normalise(one, series_subject(name, series_labels), warnings))
    return joined


def trim(
    series: list[Series], window: QueryRange, name: str, warnings: HistoryWarnings
) -> list[Series]:
    """Keep the samples inside ``window`` (both ends included); count the series trimmed.

    A saved file may hold a longer range than the one asked for; the samples outside are
    left out, and a series with none inside is dropped.
    """
    kept = []
    for one in series:
        inside = [i for i, t in enumerate(one.times_s) if window.start_s <= t <= window.end_s]
        if len(inside) != len(one.times_s):
            warnings.add(
                "saved series reaching outside the range",
                series_subject(name, one.labels),
                "left out its samples outside --start/--end",
            )
        if not inside:
            continue
        if len(inside) == len(one.times_s):
            kept.append(one)
            continue
        kept.append(
            Series(
                one.labels,
                tuple(one.times_s[i] for i in inside),
                tuple(one.values[i] for i in inside),
            )
        )
    return kept


def _load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=str(path)) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno} (char {exc.pos}): {exc.msg}",
            file=str(path),
        ) from exc


class FileSource:
    """Series read from saved ``/api/v1/query_range`` responses (see the module docstring).

    ``path``: a directory of ``<name>.json`` / ``<name>.<k>.json`` files or one JSON file
    mapping query names to responses. ``window``: the range asked for; samples outside it
    are left out (counted). ``warnings`` collects the messy cases (a new collector when
    omitted; read it as ``.warnings``). Raises ``InputError`` naming the path when it does
    not exist or a single file is not a mapping of query names.
    """

    def __init__(
        self,
        path: Path | str,
        window: QueryRange,
        *,
        warnings: HistoryWarnings | None = None,
    ) -> None:
        self.path = Path(path)
        self.window = window
        self.warnings = warnings if warnings is not None else HistoryWarnings()
        self._bundle: dict[str, Any] | None = None
        self._queries: dict[str, Any] = {}
        if self.path.is_dir():
            index = self.path / INDEX_FILE
            if index.is_file():
                self._queries, saved_range = _read_index(index)
                self._check_index_range(index, saved_range)
        elif self.path.is_file():
            self._bundle = _read_bundle(self.path)
        else:
            raise InputError(
                "no such file or directory (--from-file takes a directory of saved "
                "responses or one JSON file of them)",
                file=str(self.path),
            )

    def fetch(self, name: str, promql: str) -> list[Series]:
        """The saved series of query ``name``, joined across chunks and trimmed to the range.

        ``promql`` is compared with the index's, when there is one; a difference is counted
        (the saved answer is used as it is). Raises ``InputError`` naming the file expected
        and the query when the query was not saved, or naming the file, field or position
        when a response is malformed.
        """
        check_query_name(name)
        saved = self._queries.get(name)
        if isinstance(saved, dict) and saved.get("promql") not in (None, promql):
            self.warnings.add(
                "saved query with other PromQL",
                name,
                "read the saved result as it is (save the responses again to refresh it)",
            )
        chunks = []
        for where, body in self._responses(name):
            parsed = parse_response(body, where)
            note_parsed(parsed, name, self.warnings)
            chunks.append(parsed.series)
        return trim(join_chunks(chunks, name, self.warnings), self.window, name, self.warnings)

    def _responses(self, name: str) -> list[tuple[str, Any]]:
        if self._bundle is not None:
            return self._bundle_responses(name)
        whole = self.path / response_file_name(name)
        first = self.path / response_file_name(name, 0)
        if whole.is_file() and first.is_file():
            raise InputError(
                f"query {name} is saved both whole and in chunks ({first.name}): keep one",
                file=str(whole),
            )
        if whole.is_file():
            return [(str(whole), _load_json(whole))]
        if not first.is_file():
            raise InputError(
                f"no saved result for query {name} (nor {first.name} for a chunked range); "
                f"{_HINT}, so each can be saved as <name>.json",
                file=str(whole),
            )
        found = []
        k = 0
        while (part := self.path / response_file_name(name, k)).is_file():
            found.append((str(part), _load_json(part)))
            k += 1
        return found

    def _bundle_responses(self, name: str) -> list[tuple[str, Any]]:
        assert self._bundle is not None
        where = str(self.path)
        if name not in self._bundle:
            raise InputError(
                f"no saved result for query {name}; {_HINT}",
                file=where,
                field=name,
            )
        entry = self._bundle[name]
        if isinstance(entry, list):
            return [(f"{where}: {name}[{k}]", part) for k, part in enumerate(entry)]
        return [(f"{where}: {name}", entry)]

    def _check_index_range(self, index: Path, saved: object) -> None:
        if not isinstance(saved, dict):
            return
        start, end = saved.get("start_s"), saved.get("end_s")
        if not isinstance(start, int | float) or not isinstance(end, int | float):
            raise InputError("expected start_s and end_s numbers", file=str(index), field="range")
        if start > self.window.start_s or end < self.window.end_s:
            self.warnings.add(
                "saved range shorter than asked",
                f"{index.parent}: saved {start:g}..{end:g}",
                "series have no samples outside the saved range",
            )


def _read_index(path: Path) -> tuple[dict[str, Any], object]:
    body = _load_json(path)
    if not isinstance(body, dict):
        raise InputError("expected an object", file=str(path))
    queries = body.get("queries", {})
    if not isinstance(queries, dict):
        raise InputError("expected an object of query names", file=str(path), field="queries")
    return queries, body.get("range")


def _read_bundle(path: Path) -> dict[str, Any]:
    body = _load_json(path)
    if isinstance(body, dict) and "status" in body and "data" in body:
        raise InputError(
            "holds a single query's response; --from-file takes a directory with one "
            f"<name>.json per query, or one JSON object mapping query names to responses ({_HINT})",
            file=str(path),
        )
    if not isinstance(body, dict):
        raise InputError("expected a JSON object mapping query names to responses", file=str(path))
    return body
