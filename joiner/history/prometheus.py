"""Series read from a live Prometheus through its HTTP API (read only).

``PrometheusSource.fetch`` runs one PromQL expression through ``GET /api/v1/query_range``
(prometheus/prometheus web/api/v1/api.go, ``queryRange``). That handler refuses a query
whose ``(end - start) / step`` exceeds 11,000 ("exceeded maximum resolution of 11,000
points per timeseries"), so a longer range is read in chunks of at most ``MAX_POINTS``
evaluation steps (``chunk_ranges``): each chunk starts one step after the previous one's
last step, so the joined result has every step of the range once. The chunks' series are
joined by their labels.

Only GET requests are sent. Timeouts and answers 429/500/502/503/504 are retried a bounded
number of times with doubling waits, or the server's ``Retry-After`` when longer (at most
a minute; the ``sleep`` is injected); every other failure is an
``InputError`` naming the URL, the query name and what to check.

An answer is read in pieces and bounded: more than ``max_response_bytes`` is an
``InputError`` (ask for less), and one that trickles in past ``deadline_s`` in total
(httpx's timeout bounds each read, not the whole answer) counts as a timeout.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from joiner.api.errors import InputError
from joiner.api.grouping import plural
from joiner.api.inputfiles import check_not_input, check_output
from joiner.history.files import (
    INDEX_FILE,
    MAX_RESPONSE_BYTES,
    join_chunks,
    response_file_name,
)
from joiner.history.response import note_parsed, parse_text
from joiner.history.series import HistoryWarnings, QueryRange, Series

__all__ = ["MAX_POINTS", "PrometheusSource", "chunk_ranges", "redact_url"]

#: Evaluation steps per request. prometheus/prometheus web/api/v1/api.go ``queryRange``
#: refuses ``end.Sub(start)/step > 11000``; 11,000 steps span 10,999 intervals.
MAX_POINTS = 11_000

#: Answers worth another try: rate limiting and the server side's transient failures.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

#: The longest ``Retry-After`` (in seconds) honoured between two tries.
MAX_RETRY_AFTER_S = 60.0

#: The longest one answer may take to arrive in full, in seconds.
RESPONSE_DEADLINE_S = 600.0

_PATH = "/api/v1/query_range"


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def chunk_ranges(window: QueryRange, max_points: int = MAX_POINTS) -> list[QueryRange]:
    """``window`` split into consecutive ranges of at most ``max_points`` evaluation steps.

    Times are computed in whole milliseconds (Prometheus's resolution) from the range's
    start, so every chunk's start and end fall on the range's step grid: chunk k covers
    steps ``k * max_points`` to ``min((k + 1) * max_points, n) - 1`` of the ``n`` steps.
    Raises ``ValueError`` when the step is not positive or ``end`` is before ``start``.
    """
    start, end, step = _ms(window.start_s), _ms(window.end_s), _ms(window.step_s)
    if step <= 0:
        raise ValueError(f"step {window.step_s}s: must be at least 1ms")
    if end < start:
        raise ValueError("end is before start")
    n = (end - start) // step + 1
    chunks = []
    for first in range(0, n, max_points):
        last = min(first + max_points, n) - 1
        chunks.append(
            QueryRange(
                (start + first * step) / 1000,
                (start + last * step) / 1000,
                step / 1000,
            )
        )
    return chunks


def _caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kinds):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _check_regular(path: Path | str, flag: str) -> None:
    """Raise ``InputError`` when ``path`` exists but is not a regular file (reading a FIFO
    blocks until something writes to it; a directory is not a file)."""
    if Path(path).exists() and not Path(path).is_file():
        raise InputError("is not a regular file", file=str(path), field=flag)


def _ssl_context(ca_file: Path | str) -> ssl.SSLContext:
    _check_regular(ca_file, "--ca-file")
    try:
        return ssl.create_default_context(cafile=str(ca_file))
    except FileNotFoundError as exc:
        raise InputError("no such file", file=str(ca_file), field="--ca-file") from exc
    except (ssl.SSLError, OSError) as exc:
        raise InputError(
            f"not a PEM CA certificate file: {exc}", file=str(ca_file), field="--ca-file"
        ) from exc


def _read_secret(path: Path | str, flag: str) -> str:
    """A bearer token file's token: its text stripped, printable ASCII without spaces
    (what an ``Authorization`` header carries, RFC 6750 ``b64token``).

    Raises:
        InputError: unreadable, not UTF-8, empty, or with another character (named by
            position, never echoed); not a regular file.
    """
    _check_regular(path, flag)
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file=str(path), field=flag) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=str(path), field=flag) from exc
    if not text:
        raise InputError("is empty", file=str(path), field=flag)
    bad = next((k for k, c in enumerate(text) if not 33 <= ord(c) <= 126), None)
    if bad is not None:
        raise InputError(
            f"character {bad + 1} of the token is a space, a control character or not "
            "ASCII; a bearer token is one line of printable ASCII",
            file=str(path),
            field=flag,
        )
    return text


def redact_url(url: str) -> str:
    """``url`` as messages show it: a password in it (``http://user:secret@host``) as
    ``***``, the query string and fragment (where a token may ride) left out. A URL that
    does not parse is shown without anything before an ``@``."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError:
        return url.rpartition("@")[2]
    user = parts.netloc.rpartition("@")[0].partition(":")
    if user[0] or user[1]:
        host = f"{user[0]}{':***' if user[1] else ''}@{host}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


class PrometheusSource:
    """A ``SeriesSource`` reading ``url``'s ``/api/v1/query_range`` over ``range``.

    ``url``: the Prometheus base URL (a path prefix such as ``/prometheus`` is kept).
    ``bearer_token_file``: a file whose (stripped) text is sent as ``Authorization:
    Bearer``. ``basic_auth``: ``(user, password)`` for HTTP basic auth. ``ca_file``: PEM
    CA certificates that verify the server's TLS certificate (else the system's).
    ``timeout_s``: per read of the connection. ``max_response_bytes``,
    ``deadline_s``: the largest answer and the longest one may take in full (``monotonic``
    measures it; tests inject it). ``attempts``: tries per request (at least 1), waiting
    ``backoff_s``, then twice that, ... between them through ``sleep``. ``save_dir``:
    every raw response is written there in ``files.FileSource``'s layout, with a
    ``queries.json`` index (each query's PromQL, files and step). ``transport``: an
    httpx2 transport (tests pass
    ``httpx2.MockTransport``). ``warnings``: the collector for messy cases (``.warnings``).
    Raises ``InputError`` for an unreadable token, password or CA file.
    """

    def __init__(
        self,
        url: str,
        range: QueryRange,  # the shared contract names it so; the attribute is .window
        *,
        bearer_token_file: Path | str | None = None,
        basic_auth: tuple[str, str] | None = None,
        ca_file: Path | str | None = None,
        timeout_s: float = 60.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        deadline_s: float = RESPONSE_DEADLINE_S,
        monotonic: Callable[[], float] = time.monotonic,
        attempts: int = 4,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        save_dir: Path | str | None = None,
        transport: httpx2.BaseTransport | None = None,
        warnings: HistoryWarnings | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.url = url.rstrip("/")
        #: The URL as messages show it (``redact_url``: no password, no query string).
        self.shown = redact_url(self.url)
        self.window = range
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.warnings = warnings if warnings is not None else HistoryWarnings()
        self._sleep = sleep
        self.max_response_bytes = max_response_bytes
        self.deadline_s = deadline_s
        self._monotonic = monotonic
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self._saved: dict[str, dict[str, Any]] = {}
        # Uncompressed: the installed httpx2 (2.17.0) fails to inflate a gzip answer read
        # in pieces ("incorrect header check"), and the size bound is on the bytes read.
        headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        if bearer_token_file is not None:
            token = _read_secret(bearer_token_file, "--bearer-token-file")
            headers["Authorization"] = f"Bearer {token}"
        #: What verifies the server's certificate: the CA file's context, or the default.
        self.verify: ssl.SSLContext | bool = _ssl_context(ca_file) if ca_file else True
        self._client = httpx2.Client(
            headers=headers,
            auth=httpx2.BasicAuth(*basic_auth) if basic_auth else None,
            verify=self.verify,
            timeout=timeout_s,
            transport=transport,
            trust_env=transport is None,
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def __enter__(self) -> PrometheusSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fetch(self, name: str, promql: str, step_s: float | None = None) -> list[Series]:
        """The series ``promql`` gives over the range at ``step_s`` (the range's when
        ``None``), read in chunks and joined.

        Raises ``InputError`` naming the URL and ``name`` when Prometheus cannot be
        reached, refuses the credentials, answers something other than a range query's
        JSON, or reports an error.
        """
        step_s = self.window.step_s if step_s is None else step_s
        chunks = chunk_ranges(QueryRange(self.window.start_s, self.window.end_s, step_s))
        results = []
        files = []
        for k, chunk in enumerate(chunks):
            text, raw = self._get(name, promql, chunk)
            if self.save_dir is not None:
                files.append(self._save(name, None if len(chunks) == 1 else k, raw))
            del raw
            parsed = parse_text(text, f"{self.shown}{_PATH}: query {name}")
            del text
            note_parsed(parsed, name, self.warnings)
            results.append(parsed.series)
        if self.save_dir is not None:
            self._save_index(name, promql, files, step_s)
        return join_chunks(results, name, self.warnings)

    def _get(self, name: str, promql: str, chunk: QueryRange) -> tuple[str, bytes]:
        """One chunk's answer: its text (checked to be a JSON object) and raw bytes."""
        params = {
            "query": promql,
            "start": f"{chunk.start_s:.3f}",
            "end": f"{chunk.end_s:.3f}",
            "step": f"{chunk.step_s:.3f}",
        }
        failure = ""
        asked_wait = 0.0
        for attempt in range(self.attempts):
            if attempt:
                self._sleep(max(self.backoff_s * 2 ** (attempt - 1), asked_wait))
            try:
                response = self._read(name, params)
            except httpx2.TimeoutException as exc:
                failure = f"timed out ({type(exc).__name__})"
                continue
            except (httpx2.TransportError, httpx2.InvalidURL) as exc:
                raise self._unreachable(name, exc) from exc
            if response.status_code in RETRY_STATUSES:
                failure = f"HTTP {response.status_code}{_api_error(response.content)}"
                asked_wait = _retry_after(response)
                continue
            return self._decode(name, response), response.content
        raise self._error(
            name,
            f"gave up after {plural(self.attempts, 'try', 'tries')}: {failure}; check that "
            "Prometheus is healthy, or ask for less (a larger --step, a shorter range)",
        )

    def _read(self, name: str, params: dict[str, str]) -> httpx2.Response:
        """One GET, its body read in pieces up to ``max_response_bytes`` and ``deadline_s``.

        Raises ``InputError`` for an answer over the size bound, and
        ``httpx2.ReadTimeout`` (retried as a timeout) past the deadline.
        """
        deadline = self._monotonic() + self.deadline_s
        body = bytearray()
        with self._client.stream("GET", self.url + _PATH, params=params) as streamed:
            for piece in streamed.iter_bytes():
                body += piece
                if len(body) > self.max_response_bytes:
                    raise self._error(
                        name,
                        f"answered more than {self.max_response_bytes:,} bytes; ask for less "
                        "(a larger --step or a shorter range)",
                    )
                if self._monotonic() > deadline:
                    raise httpx2.ReadTimeout(f"the answer took over {self.deadline_s:g} s")
            return httpx2.Response(
                streamed.status_code, headers=streamed.headers, content=bytes(body)
            )

    def _decode(self, name: str, response: httpx2.Response) -> str:
        """The text of an answer that can be a range query's; else the error to raise."""
        status = response.status_code
        if status in (401, 403):
            raise self._error(
                name,
                f"HTTP {status}: the credentials were refused; check --bearer-token-file or "
                "--basic-auth-user/--basic-auth-password-file",
            )
        if 300 <= status < 400:
            where = redact_url(response.headers.get("location", "elsewhere"))
            raise self._error(
                name,
                f"HTTP {status} redirects to {where}; give the URL Prometheus answers at "
                "(a login proxy in front needs its own credentials)",
            )
        if status == 404:
            raise self._error(
                name,
                f"HTTP 404: no {_PATH} here; check that the URL is Prometheus's base URL "
                "(with its path prefix, if any)",
            )
        try:
            text = response.content.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if not text.lstrip().startswith("{"):
            kind = response.headers.get("content-type", "no content type")
            raise self._error(
                name,
                f"HTTP {status} answered {kind}, not JSON; check that the URL is the "
                "Prometheus server's (not a UI or a login page)",
            )
        if status >= 400:
            hint = (
                "; ask for less (a larger --step or a shorter range)"
                if status == 422
                else "; check the query (--print-queries lists it)"
            )
            raise self._error(name, f"HTTP {status}{_api_error(response.content)}{hint}")
        return text

    def _unreachable(self, name: str, exc: Exception) -> InputError:
        if _caused_by(exc, (ssl.SSLError,)):
            what = (
                "the TLS handshake failed; check --ca-file (the CA that signed the "
                "server's certificate) and the host name in the URL"
            )
        elif _caused_by(exc, (socket.gaierror,)):
            what = "the host name does not resolve; check the URL"
        elif _caused_by(exc, (ConnectionRefusedError,)):
            what = (
                "the connection was refused; check the URL's host and port (and any port-forward)"
            )
        elif isinstance(exc, httpx2.InvalidURL | httpx2.UnsupportedProtocol):
            what = "not a usable URL; give http(s)://host:port"
        else:
            what = f"cannot connect ({type(exc).__name__}); check the URL and the network"
        return self._error(name, what)

    def _error(self, name: str, message: str) -> InputError:
        return InputError(message, file=self.shown, obj=f"query {name}")

    def _save(self, name: str, chunk: int | None, raw: bytes) -> str:
        assert self.save_dir is not None
        file_name = response_file_name(name, chunk)
        check_output(self.save_dir / file_name, field="--save-responses")
        try:
            self.save_dir.mkdir(parents=True, exist_ok=True)
            if chunk in (None, 0):
                self._remove_stale(name, whole=chunk is None)
            (self.save_dir / file_name).write_bytes(raw)
        except OSError as exc:
            raise InputError(
                f"cannot write: {exc.strerror or exc}",
                file=str(self.save_dir / file_name),
                field="--save-responses",
            ) from exc
        return file_name

    def _remove_stale(self, name: str, *, whole: bool) -> None:
        """Remove an earlier save of ``name`` in the other layout (whole or chunked)."""
        assert self.save_dir is not None
        if not whole:
            stale = self.save_dir / response_file_name(name)
            check_not_input(stale, field="--save-responses")
            stale.unlink(missing_ok=True)
            return
        k = 0
        while (part := self.save_dir / response_file_name(name, k)).is_file():
            check_not_input(part, field="--save-responses")
            part.unlink()
            k += 1

    def _save_index(self, name: str, promql: str, files: list[str], step_s: float) -> None:
        assert self.save_dir is not None
        path = self.save_dir / INDEX_FILE
        window = {
            "start_s": self.window.start_s,
            "end_s": self.window.end_s,
            "step_s": self.window.step_s,
        }
        if not self._saved:
            self._saved = _earlier_queries(path, window)
        self._saved[name] = {"promql": promql, "files": files, "step_s": step_s}
        index = {"range": window, "queries": self._saved}
        check_output(path, field="--save-responses")
        try:
            path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot write: {exc.strerror or exc}", file=str(path), field="--save-responses"
            ) from exc


def _retry_after(response: httpx2.Response) -> float:
    """The wait a ``Retry-After: <seconds>`` header asks for, at most
    ``MAX_RETRY_AFTER_S``; 0 without one (an HTTP date is not read: no wall clock here)."""
    raw = response.headers.get("retry-after", "")
    try:
        seconds = float(raw)
    except ValueError:
        return 0.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S) if seconds == seconds else 0.0


def _api_error(content: bytes) -> str:
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, too deep or too long
        return ""
    if isinstance(body, dict) and body.get("status") == "error":
        return f": Prometheus answered {body.get('errorType', 'error')}: {body.get('error', '')}"
    return ""


def _earlier_queries(path: Path, window: dict[str, float]) -> dict[str, dict[str, Any]]:
    """The queries an earlier save of the same range listed in ``path`` (else none).

    A directory saved query by query (several imports of one range) keeps one index; an
    index of another range is replaced, since its files answer another question.
    """
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot read the earlier index: {exc}", file=str(path), field="--save-responses"
        ) from exc
    if not isinstance(earlier, dict) or earlier.get("range") != window:
        return {}
    queries = earlier.get("queries")
    return dict(queries) if isinstance(queries, dict) else {}
