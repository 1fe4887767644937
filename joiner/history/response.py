"""One ``/api/v1/query_range`` response read into series.

The format is the Prometheus HTTP API's (prometheus/prometheus web/api/v1/api.go,
``queryRange`` and ``apiFuncResult``; docs/querying/api.md, "Range vectors"):
``{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...},
"values": [[<unix seconds>, "<value>"], ...]}, ...]}, "warnings": [...]}``, or
``{"status": "error", "errorType": ..., "error": ...}``.

``parse_text`` reads the response text one series at a time (``json.JSONDecoder.
raw_decode`` on each value), so a response of hundreds of megabytes is never held decoded
whole; ``parse_response`` reads a response already decoded (the single-file layout).
Both give the same ``Parsed``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from joiner.api.errors import InputError
from joiner.history.series import HistoryWarnings, Series

__all__ = ["Parsed", "note_parsed", "parse_response", "parse_text"]

_WHITESPACE = frozenset(" \t\n\r")
_DECODER = json.JSONDecoder()


class _Floats(dict[object, float]):
    """The float of each raw time or value (a JSON number, or the string Prometheus writes
    a value as) met in one response, made once and shared by every sample that repeats it.

    A response's series share their evaluation times, and a series' value seldom changes
    (a replica count, a start time), so a shared float object per distinct raw sample
    keeps the samples at a pointer each (8 bytes) rather than a float each (32 bytes).
    Raises as ``float`` does for a raw sample it cannot convert.
    """

    def __missing__(self, raw: object) -> float:
        value = self[raw] = float(raw)  # type: ignore[arg-type]
        return value

    def column(self, raw: tuple[Any, ...], kinds: set[type]) -> tuple[float, ...]:
        """``raw`` converted, equal raw samples sharing one float. A numeric zero turns the
        sharing off for the column: ``0 == -0.0`` as keys, but their floats differ in sign."""
        if (int in kinds or float in kinds) and 0 in raw:
            return tuple(map(float, raw))
        return tuple(map(self.__getitem__, raw))


@dataclass(slots=True)
class Parsed:
    """One response's series, the warnings Prometheus attached, and what was left out:
    ``dropped_nan`` NaN and infinite samples (stale markers, NaN results, +Inf) and
    ``histograms`` native-histogram series (only float samples are read). ``floats``: the
    response's shared sample floats (``_Floats``), not part of what it says."""

    series: list[Series] = field(default_factory=list)
    prometheus_warnings: list[str] = field(default_factory=list)
    dropped_nan: int = 0
    histograms: int = 0
    floats: _Floats = field(default_factory=_Floats, repr=False, compare=False)

    def add(self, entry: object, where: str, index: int) -> None:
        """Read ``data.result[index]`` into ``series`` (or count it as left out)."""
        one, nan, histogram = _one_series(entry, where, index, self.floats)
        self.dropped_nan += nan
        self.histograms += histogram
        if one is not None:
            self.series.append(one)


def note_parsed(parsed: Parsed, name: str, warnings: HistoryWarnings) -> None:
    """Count what a response left out or Prometheus warned about, under query ``name``."""
    for note in parsed.prometheus_warnings:
        warnings.add("Prometheus warning", f"{name}: {note}", "used the result as returned")
    for _ in range(parsed.dropped_nan):
        warnings.add("NaN or infinite sample", name, "left the sample out (no value at that step)")
    for _ in range(parsed.histograms):
        warnings.add("native histogram series", name, "left it out (only float samples count)")


def _float(raw: object, where: str, field: str) -> float:
    if isinstance(raw, str | int | float) and not isinstance(raw, bool):
        try:
            return float(raw)
        except ValueError:
            pass
    raise InputError(f"{raw!r} is not a number", file=where, field=field)


def _checked_samples(
    raw: list[Any], where: str, field: str
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Each ``[time, value]`` checked, naming the first bad one."""
    times: list[float] = []
    values: list[float] = []
    for k, pair in enumerate(raw):
        at = f"{field}.values[{k}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise InputError("expected [time, value]", file=where, field=at)
        times.append(_float(pair[0], where, at))
        values.append(_float(pair[1], where, at))
    return tuple(times), tuple(values)


def _samples(
    raw: list[Any], where: str, field: str, floats: _Floats
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    try:
        # The common case, at C speed: well-formed pairs; anything else goes through the
        # checking loop, which names the first bad sample.
        if set(map(type, raw)) != {list} or set(map(len, raw)) != {2}:
            raise TypeError
        time_column, value_column = zip(*raw, strict=True)
        time_kinds, value_kinds = set(map(type, time_column)), set(map(type, value_column))
        if bool in time_kinds | value_kinds:
            raise TypeError  # float() would take true and false as 1 and 0
        return floats.column(time_column, time_kinds), floats.column(value_column, value_kinds)
    except (TypeError, ValueError):  # an unhashable sample is a TypeError too
        return _checked_samples(raw, where, field)


def _check_times(times: tuple[float, ...], where: str, field: str) -> None:
    """Raise ``InputError`` naming the first sample whose time is not a finite number
    (Prometheus never returns one; a hand-edited file may)."""
    if all(map(math.isfinite, times)):
        return
    k = next(i for i, t in enumerate(times) if not math.isfinite(t))
    raise InputError(
        f"time {times[k]!r} is not a finite unix time", file=where, field=f"{field}.values[{k}]"
    )


def _one_series(
    entry: object, where: str, index: int, floats: _Floats
) -> tuple[Series | None, int, bool]:
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
    if not raw:
        return Series(labels, (), ()), 0, False
    times, values = _samples(raw, where, field, floats)
    _check_times(times, where, field)
    if not all(map(math.isfinite, values)):
        # NaN (stale markers, NaN results) and +Inf/-Inf (a division by zero, a
        # hand-edited file) are no value at that step: neither is a count or a time.
        kept = [i for i, v in enumerate(values) if math.isfinite(v)]
        dropped = len(values) - len(kept)
        times = tuple(times[i] for i in kept)
        values = tuple(values[i] for i in kept)
        return Series(labels, times, values), dropped, False
    return Series(labels, times, values), 0, False


def _check_status(status: object, error_type: object, error: object, where: str) -> None:
    if status is None:
        raise InputError("not a Prometheus API response (no status field)", file=where)
    if status != "success":
        raise InputError(f"Prometheus answered {error_type or 'error'}: {error or ''}", file=where)


def _check_result_type(result_type: object, where: str) -> None:
    if result_type != "matrix":
        raise InputError(
            f"expected a range query's matrix, got {result_type!r}",
            file=where,
            field="data.resultType",
        )


def parse_response(body: Any, where: str) -> Parsed:
    """Read one decoded response.

    ``where`` names its origin (a file, or a URL and query) for messages. NaN and infinite
    samples are dropped and counted, native-histogram series left out and counted. Raises
    ``InputError`` naming ``where`` and the field for ``status: error`` or a shape that is
    not a matrix.
    """
    if not isinstance(body, dict):
        raise InputError("not a Prometheus API response (no status field)", file=where)
    _check_status(body.get("status"), body.get("errorType"), body.get("error"), where)
    data = body.get("data")
    if not isinstance(data, dict):
        raise InputError("missing", file=where, field="data")
    _check_result_type(data.get("resultType"), where)
    result = data.get("result")
    if not isinstance(result, list):
        raise InputError("expected a list", file=where, field="data.result")
    notes = body.get("warnings")
    parsed = Parsed(prometheus_warnings=[str(n) for n in notes] if isinstance(notes, list) else [])
    for index, entry in enumerate(result):
        parsed.add(entry, where, index)
    return parsed


class _Reader:
    """Walks JSON text value by value (objects and arrays by hand, leaves decoded)."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.pos = 0

    def _skip(self) -> str:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos
        return text[pos] if pos < len(text) else ""

    def malformed(self, message: str, pos: int | None = None) -> InputError:
        at = self.pos if pos is None else pos
        line = self.text.count("\n", 0, at) + 1
        column = at - self.text.rfind("\n", 0, at)
        return InputError(
            f"malformed JSON at line {line} column {column} (char {at}): {message}",
            file=self.where,
        )

    def value(self) -> Any:
        self._skip()
        try:
            value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            raise self.malformed(exc.msg, exc.pos) from exc
        except RecursionError as exc:
            raise self.malformed("nested too deeply") from exc
        except ValueError as exc:  # an integer of more digits than Python converts
            raise self.malformed(str(exc)) from exc
        return value

    def is_next(self, char: str) -> bool:
        return self._skip() == char

    def _take(self, char: str) -> bool:
        if self._skip() == char:
            self.pos += 1
            return True
        return False

    def _items(self, opening: str, closing: str) -> Iterator[None]:
        if not self._take(opening):
            raise self.malformed(f"expected {opening!r}")
        if self._take(closing):
            return
        while True:
            yield
            if self._take(","):
                continue
            if self._take(closing):
                return
            raise self.malformed(f"expected ',' or {closing!r}")

    def members(self) -> Iterator[str]:
        """Each key of the object here; the caller reads its value before the next."""
        for _ in self._items("{", "}"):
            key = self.value()
            if not isinstance(key, str):
                raise self.malformed("expected a string key")
            if not self._take(":"):
                raise self.malformed("expected ':'")
            yield key

    def elements(self) -> Iterator[None]:
        """Once per element of the array here; the caller reads each."""
        return self._items("[", "]")

    def end(self) -> None:
        if self._skip():
            raise self.malformed("extra data after the response")


def _read_data(reader: _Reader, parsed: Parsed) -> tuple[object, bool]:
    """Read ``data``'s members, streaming ``result``; return ``resultType`` and whether
    ``result`` was there."""
    result_type: object = None
    has_result = False
    for key in reader.members():
        if key == "resultType":
            result_type = reader.value()
        elif key == "result" and reader.is_next("["):
            has_result = True
            if result_type is not None:
                _check_result_type(result_type, reader.where)
            for index, _ in enumerate(reader.elements()):
                parsed.add(reader.value(), reader.where, index)
        else:
            reader.value()
    return result_type, has_result


def parse_text(text: str, where: str) -> Parsed:
    """Read one response from its JSON text, one series at a time (see the module doc).

    For well-formed JSON, gives what ``parse_response(json.loads(text), where)`` gives,
    with the same errors. Malformed JSON is named by line, column and character; it is
    read in document order, so a bad series before the bad syntax is named first.
    """
    reader = _Reader(text, where)
    parsed = Parsed()
    top: dict[str, object] = {}
    data: tuple[object, bool] | None = None
    if not reader.is_next("{"):
        reader.value()  # malformed JSON is named as such
        reader.end()
        raise InputError("not a Prometheus API response (no status field)", file=where)
    for key in reader.members():
        if key == "data" and reader.is_next("{"):
            data = _read_data(reader, parsed)
        else:
            top[key] = reader.value()
    reader.end()
    _check_status(top.get("status"), top.get("errorType"), top.get("error"), where)
    if data is None:
        raise InputError("missing", file=where, field="data")
    result_type, has_result = data
    _check_result_type(result_type, where)
    if not has_result:
        raise InputError("expected a list", file=where, field="data.result")
    notes = top.get("warnings")
    parsed.prometheus_warnings = [str(n) for n in notes] if isinstance(notes, list) else []
    return parsed
