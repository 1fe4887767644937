"""Saved range-query responses: their layout on disk and ``FileSource``, which reads them
(each response through ``response.py``) and joins a query's chunks.

A saved history is what ``/api/v1/query_range`` returned, byte for byte (prometheus/
prometheus web/api/v1/api.go, ``queryRange``; the format is the HTTP API's "range
vectors" result: ``{"status": "success", "data": {"resultType": "matrix", "result":
[{"metric": {...}, "values": [[<unix seconds>, "<value>"], ...]}, ...]}}``). It is
either

- a directory holding one file per query name, ``<name>.json``, or, for a range that was
  read in chunks (``prometheus.chunk_ranges``), ``<name>.0.json``, ``<name>.1.json``, ...
  in time order; an optional ``queries.json`` index (written by ``--save-responses``)
  records each query's PromQL, its files and step (a per-pod query's coarse one,
  ``queries.query_step``) and the range they were read for; or
- a single JSON file mapping each query name to its response, or to a list of chunk
  responses in time order.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Any

from joiner.api.errors import InputError
from joiner.api.manifests.yamlio import read_text
from joiner.history.clean import normalise, series_subject
from joiner.history.response import Parsed, note_parsed, parse_response, parse_text
from joiner.history.series import HistoryWarnings, QueryRange, Series

__all__ = [
    "INDEX_FILE",
    "FileSource",
    "check_query_name",
    "join_chunks",
    "response_file_name",
    "trim",
]

#: The index ``--save-responses`` writes beside the responses.
INDEX_FILE = "queries.json"

_HINT = "`joiner import --print-queries` lists each query's name and PromQL"


#: The largest answer read, live or saved, in bytes. A week of 500 series at one minute is
#: about 100 MB.
MAX_RESPONSE_BYTES = 1 << 30


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
    parts: dict[tuple[tuple[str, str], ...], list[Series]] = {}
    for chunk in chunks:
        for one in chunk:
            parts.setdefault(_key(one.labels), []).append(one)
    joined = []
    for pieces in parts.values():
        one = pieces[0]
        if len(pieces) > 1:
            one = Series(
                one.labels,
                tuple(chain.from_iterable(piece.times_s for piece in pieces)),
                tuple(chain.from_iterable(piece.values for piece in pieces)),
            )
        joined.append(normalise(one, series_subject(name, one.labels), warnings))
    return joined


def trim(
    series: list[Series], window: QueryRange, name: str, warnings: HistoryWarnings
) -> list[Series]:
    """Keep the samples inside ``window`` (both ends included); count the series trimmed.

    ``series`` must be normalised (ascending times). A saved file may hold a longer range
    than the one asked for; the samples outside are left out, and a series with none
    inside is dropped.
    """
    kept = []
    for one in series:
        times = one.times_s
        first = bisect_left(times, window.start_s)
        last = bisect_right(times, window.end_s)
        if first == 0 and last == len(times):
            kept.append(one)
            continue
        warnings.add(
            "saved series reaching outside the range",
            series_subject(name, one.labels),
            "left out its samples outside --start/--end",
        )
        if first < last:
            kept.append(Series(one.labels, times[first:last], one.values[first:last]))
    return kept


def _read_text(path: Path) -> str:
    """A saved response's text, through the one reader, capped as a live answer is
    (``MAX_RESPONSE_BYTES``)."""
    return read_text(path, what="saved response", max_bytes=MAX_RESPONSE_BYTES)


def _load_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno} (char {exc.pos}): {exc.msg}",
            file=str(path),
        ) from exc
    except RecursionError as exc:
        raise InputError("malformed JSON: nested too deeply", file=str(path)) from exc
    except ValueError as exc:  # an integer of more digits than Python converts
        raise InputError(f"unreadable JSON: {exc}", file=str(path)) from exc


class FileSource:
    """Series read from saved ``/api/v1/query_range`` responses (see the module docstring).

    ``path``: a directory of ``<name>.json`` / ``<name>.<k>.json`` files or one JSON file
    mapping query names to responses. ``range``: the range asked for (kept as ``.window``);
    samples outside it are left out (counted). ``warnings`` collects the messy cases (a new
    collector when omitted; read it as ``.warnings``). Raises ``InputError`` naming the
    path when it does not exist or a single file is not a mapping of query names, and
    naming the saved range (RFC 3339) when the index's range does not cover ``range``.
    """

    def __init__(
        self,
        path: Path | str,
        range: QueryRange,  # the shared contract names it so; the attribute is .window
        *,
        warnings: HistoryWarnings | None = None,
    ) -> None:
        self.path = Path(path)
        self.window = range
        self.warnings = warnings if warnings is not None else HistoryWarnings()
        self._bundle: dict[str, Any] | None = None
        self._queries: dict[str, Any] = {}
        #: The saved set's step and the step asked, once their difference is counted
        #: (``_check_index_range``): a query saved at that same step is not counted again.
        self._set_step_noted: tuple[float, float] | None = None
        if self.path.is_dir():
            index = self.path / INDEX_FILE
            if index.is_file():
                self._queries, saved_range = _read_index(index)
                self._check_index_range(index, saved_range)
        elif self.path.is_file():
            self._bundle = _read_bundle(self.path)
        elif self.path.exists():
            raise InputError(
                "not a regular file or directory (a FIFO or a device is not read: it could "
                "block or never end)",
                file=str(self.path),
            )
        else:
            raise InputError(
                "no such file or directory (--from-file takes a directory of saved "
                "responses or one JSON file of them)",
                file=str(self.path),
            )

    def fetch(self, name: str, promql: str, step_s: float | None = None) -> list[Series]:
        """The saved series of query ``name``, joined across chunks and trimmed to the range.

        ``promql`` and ``step_s`` (the range's when ``None``) are compared with the index's,
        when there is one; a difference is counted (the saved answer is used as it is, its
        samples at their own times). Raises ``InputError`` naming the file expected
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
        self._check_step(name, saved, self.window.step_s if step_s is None else step_s)
        chunks = (self._noted(parsed, name) for parsed in self._responses(name))
        return trim(join_chunks(chunks, name, self.warnings), self.window, name, self.warnings)

    def _check_step(self, name: str, saved: object, step_s: float) -> None:
        """Count a query saved (per the index) at another step than ``step_s``, unless the
        whole saved set's step was already counted with the same two steps."""
        at = saved.get("step_s") if isinstance(saved, dict) else None
        if isinstance(at, int | float) and at != step_s and self._set_step_noted != (at, step_s):
            self.warnings.add(
                "saved step other than asked",
                f"query {name}: saved every {_seconds(at)}, asked every {_seconds(step_s)}",
                "used the saved samples at their own times",
            )

    def _noted(self, parsed: Parsed, name: str) -> list[Series]:
        note_parsed(parsed, name, self.warnings)
        return parsed.series

    def _responses(self, name: str) -> Iterator[Parsed]:
        """Each saved response of ``name`` in time order, read one at a time."""
        if self._bundle is not None:
            for where, body in self._bundle_responses(name):
                yield parse_response(body, where)
            return
        for part in self._files(name):
            yield parse_text(_read_text(part), str(part))

    def _files(self, name: str) -> list[Path]:
        whole = self.path / response_file_name(name)
        first = self.path / response_file_name(name, 0)
        for path in (whole, first):
            if path.exists() and not path.is_file():
                raise InputError(
                    "not a regular file (a FIFO, a device or a directory)", file=str(path)
                )
        if whole.is_file() and first.is_file():
            raise InputError(
                f"query {name} is saved both whole and in chunks ({first.name}): keep one",
                file=str(whole),
            )
        if whole.is_file():
            return [whole]
        if not first.is_file():
            raise InputError(
                f"no saved result for query {name} (nor {first.name} for a chunked range); "
                f"{_HINT}, so each can be saved as <name>.json",
                file=str(whole),
            )
        found = []
        k = 0
        while (part := self.path / response_file_name(name, k)).is_file():
            found.append(part)
            k += 1
        later = sorted(
            int(chunk)
            for p in self.path.glob(f"{name}.*.json")
            if (chunk := p.name[len(name) + 1 : -len(".json")]).isdigit() and int(chunk) > k
        )
        if later:
            # Reading up to the gap would leave out every later chunk's samples unsaid.
            raise InputError(
                f"query {name}: chunk {k} is missing before chunk {later[0]}; save the "
                "responses again, or renumber the chunks without a gap",
                file=str(self.path / response_file_name(name, k)),
            )
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
        if entry == []:
            raise InputError(
                "an empty list of chunk responses (a query with no series is a response "
                "with an empty data.result)",
                file=where,
                field=name,
            )
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
            # Read on, the missing stretch would replay as every object gone (a fake
            # scale-down to 0), so it is an error naming what the files do cover.
            raise InputError(
                f"the saved responses cover {_rfc3339(start)} to {_rfc3339(end)}, not the "
                f"range asked for ({_rfc3339(self.window.start_s)} to "
                f"{_rfc3339(self.window.end_s)}): give --start and --end within the saved "
                "range, or save the responses again for this range",
                file=str(index),
                field="--start" if start > self.window.start_s else "--end",
            )
        step = saved.get("step_s")
        if isinstance(step, int | float) and step != self.window.step_s:
            self._set_step_noted = (step, self.window.step_s)
            self.warnings.add(
                "saved step other than asked",
                f"{index.parent}: saved every {_seconds(step)}, asked every "
                f"{_seconds(self.window.step_s)}",
                "used the saved samples at their own times",
            )


def _seconds(value: float) -> str:
    """``value`` seconds as ``300s``, to as many digits as tell two steps apart."""
    return f"{value:.10g}s"


def _rfc3339(unix_s: float) -> str:
    """Unix seconds as an RFC 3339 UTC time (``2025-01-06T00:00:00Z``), as --start and --end
    take them."""
    return datetime.fromtimestamp(unix_s, UTC).isoformat().replace("+00:00", "Z")


def _read_index(path: Path) -> tuple[dict[str, Any], object]:
    body = _load_json(path)
    if not isinstance(body, dict):
        raise InputError("expected an object", file=str(path))
    queries = body.get("queries", {})
    if not isinstance(queries, dict):
        raise InputError("expected an object of query names", file=str(path), field="queries")
    saved_range = body.get("range")
    if isinstance(saved_range, dict):
        _check_saved_step(saved_range, path, "range.step_s")
    for name, query in queries.items():
        if isinstance(query, dict):
            _check_saved_step(query, path, f"queries.{name}.step_s")
    return queries, saved_range


def _check_saved_step(saved: Mapping[str, Any], path: Path, field: str) -> None:
    """A saved ``step_s``, when given, is a positive finite number of seconds.

    Raises:
        InputError: it is something else (naming ``path`` and ``field``).
    """
    if "step_s" not in saved:
        return
    step = saved["step_s"]
    if isinstance(step, bool) or not isinstance(step, int | float) or not 0 < step < math.inf:
        raise InputError(
            f"expected a positive number of seconds, got {json.dumps(step)}",
            file=str(path),
            field=field,
        )


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
