"""The Prometheus HTTP client against a fake ``/api/v1/query_range`` (no network).

The fake answers as prometheus/prometheus web/api/v1/api.go ``queryRange`` does: it
evaluates at start, start + step, ... up to end, and refuses ``(end - start) / step >
11000`` with HTTP 400 bad_data.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import certifi
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joiner.api.errors import InputError
from joiner.history.files import FileSource
from joiner.history.prometheus import MAX_POINTS, PrometheusSource, chunk_ranges
from joiner.history.series import QueryRange

URL = "http://prometheus.example:9090"
START = 1_700_000_000.0
WEEK = 7 * 86400.0


class FakePrometheus:
    """A range-query endpoint over ``series``: labels -> value at t (None: no sample)."""

    def __init__(self, series: dict[tuple[tuple[str, str], ...], Callable[[float], float | None]]):
        self.series = series
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        assert request.method == "GET"
        assert request.url.path == "/api/v1/query_range"
        p = request.url.params
        start, end, step = (round(float(p[k]) * 1000) for k in ("start", "end", "step"))
        if (end - start) // step > 11000:
            return httpx2.Response(
                400,
                json={
                    "status": "error",
                    "errorType": "bad_data",
                    "error": "exceeded maximum resolution of 11,000 points per timeseries. "
                    "Try decreasing the query resolution (?step=XX)",
                },
            )
        result = []
        for labels, fn in self.series.items():
            values = []
            for t_ms in range(start, end + 1, step):
                v = fn(t_ms / 1000)
                if v is not None:
                    values.append([t_ms / 1000, f"{v:g}"])
            if values:
                result.append({"metric": {"__name__": "m", **dict(labels)}, "values": values})
        body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        return httpx2.Response(200, json=body)


def _source(
    handler: Callable[[httpx2.Request], httpx2.Response], window: QueryRange, **kw: object
) -> PrometheusSource:
    return PrometheusSource(URL, window, transport=httpx2.MockTransport(handler), **kw)  # type: ignore[arg-type]


def test_a_week_at_10s_is_split_into_six_chunks_without_duplicate_or_missing_steps() -> None:
    window = QueryRange(START, START + WEEK, 10.0)
    chunks = chunk_ranges(window)
    assert window.steps() == 60481
    assert [c.steps() for c in chunks] == [11000] * 5 + [5481]
    assert chunks[0].start_s == START
    assert chunks[-1].end_s == START + WEEK
    for before, after in pairwise(chunks):
        assert after.start_s == before.end_s + 10.0
    # Each chunk is within the API's bound on (end - start) / step.
    assert all((c.end_s - c.start_s) / c.step_s <= 11000 for c in chunks)


def test_chunk_edges() -> None:
    assert len(chunk_ranges(QueryRange(0.0, (MAX_POINTS - 1) * 60.0, 60.0))) == 1
    two = chunk_ranges(QueryRange(0.0, MAX_POINTS * 60.0, 60.0))
    assert [c.steps() for c in two] == [MAX_POINTS, 1]
    # An end off the step grid: the last step is the one before it.
    (only,) = chunk_ranges(QueryRange(0.0, 605.0, 60.0))
    assert only.end_s == 600.0
    # Sub-second steps stay on the millisecond grid.
    fine = chunk_ranges(QueryRange(0.1, 0.1 + 0.25 * 20000, 0.25))
    assert sum(c.steps() for c in fine) == 20001
    assert fine[1].start_s == pytest.approx(fine[0].end_s + 0.25)


def test_fetch_reads_a_week_in_chunks_and_joins_series_by_labels() -> None:
    window = QueryRange(START, START + WEEK, 10.0)
    fake = FakePrometheus(
        {
            (("node", "a"),): lambda t: t - START,
            # Appears only in the last chunk.
            (("node", "b"),): lambda t: 1.0 if t >= START + WEEK - 100 else None,
        }
    )
    got = _source(fake, window).fetch("nodes", "kube_node_info")
    assert len(fake.requests) == 6
    a, b = got
    assert dict(a.labels) == {"node": "a"}  # __name__ removed
    assert len(a.times_s) == 60481
    assert a.times_s == tuple(START + 10.0 * k for k in range(60481))
    assert a.values[-1] == WEEK
    assert b.times_s == tuple(START + WEEK - 100 + 10.0 * k for k in range(11))


def test_the_fake_refuses_what_prometheus_refuses() -> None:
    fake = FakePrometheus({})
    client = httpx2.Client(transport=httpx2.MockTransport(fake))
    params = {"query": "up", "start": "0", "end": "11001", "step": "1"}
    assert client.get(URL + "/api/v1/query_range", params=params).status_code == 400
    params["end"] = "11000"
    assert client.get(URL + "/api/v1/query_range", params=params).status_code == 200


def test_url_path_prefix_and_query_parameters() -> None:
    fake = FakePrometheus({})
    window = QueryRange(START, START + 600, 60.0)
    src = PrometheusSource(
        URL + "/prom/", window, transport=httpx2.MockTransport(lambda r: _prefixed(r, fake))
    )
    src.fetch("q", 'sum by (node) (kube_node_info{job="ksm"})')
    (request,) = fake.requests
    assert request.url.params["query"] == 'sum by (node) (kube_node_info{job="ksm"})'
    assert request.url.params["start"] == f"{START:.3f}"
    assert request.url.params["step"] == "60.000"


def _prefixed(request: httpx2.Request, fake: FakePrometheus) -> httpx2.Response:
    assert request.url.path == "/prom/api/v1/query_range"
    return fake(httpx2.Request("GET", request.url.copy_with(path="/api/v1/query_range")))


def test_bearer_token_from_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    fake = FakePrometheus({})
    _source(fake, QueryRange(0, 60, 60), bearer_token_file=token).fetch("q", "up")
    assert fake.requests[0].headers["authorization"] == "Bearer s3cret"


def test_basic_auth() -> None:
    fake = FakePrometheus({})
    _source(fake, QueryRange(0, 60, 60), basic_auth=("me", "pw")).fetch("q", "up")
    expected = base64.b64encode(b"me:pw").decode()
    assert fake.requests[0].headers["authorization"] == f"Basic {expected}"


def test_unreadable_token_file_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing: field --bearer-token-file: cannot read"):
        _source(FakePrometheus({}), QueryRange(0, 60, 60), bearer_token_file=tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(InputError, match="is empty"):
        _source(FakePrometheus({}), QueryRange(0, 60, 60), bearer_token_file=empty)


def test_ca_file_verifies_the_server() -> None:
    src = PrometheusSource(URL, QueryRange(0, 60, 60), ca_file=certifi.where())
    assert isinstance(src.verify, ssl.SSLContext)
    assert src.verify.get_ca_certs()
    assert src.verify.verify_mode == ssl.CERT_REQUIRED
    assert PrometheusSource(URL, QueryRange(0, 60, 60)).verify is True


def test_bad_ca_file_names_it(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(InputError, match=r"ca\.pem: field --ca-file: not a PEM CA"):
        PrometheusSource(URL, QueryRange(0, 60, 60), ca_file=bad)
    with pytest.raises(InputError, match=r"nope\.pem: field --ca-file: no such file"):
        PrometheusSource(URL, QueryRange(0, 60, 60), ca_file=tmp_path / "nope.pem")


def _raising(exc: Exception) -> Callable[[httpx2.Request], httpx2.Response]:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise exc

    return handler


def _connect_error(cause: BaseException) -> httpx2.ConnectError:
    try:
        raise httpx2.ConnectError("connect failed") from cause
    except httpx2.ConnectError as exc:
        return exc


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        (
            _raising(_connect_error(ConnectionRefusedError(111, "refused"))),
            "connection was refused",
        ),
        (
            _raising(_connect_error(socket.gaierror(-2, "Name or service not known"))),
            "host name does not resolve",
        ),
        (
            _raising(_connect_error(ssl.SSLCertVerificationError(1, "certificate verify failed"))),
            "TLS handshake failed; check --ca-file",
        ),
        (
            lambda r: httpx2.Response(401, text="Unauthorized"),
            "HTTP 401: the credentials were refused",
        ),
        (
            lambda r: httpx2.Response(403, text="Forbidden"),
            "HTTP 403: the credentials were refused",
        ),
        (
            lambda r: httpx2.Response(404, text="404 page not found"),
            "HTTP 404: no /api/v1/query_range here",
        ),
        (
            lambda r: httpx2.Response(302, headers={"location": "https://sso.example/login"}),
            "HTTP 302 redirects to https://sso.example/login",
        ),
        (
            lambda r: httpx2.Response(200, html="<html>Grafana</html>"),
            "HTTP 200 answered text/html; charset=utf-8, not JSON",
        ),
        (
            lambda r: httpx2.Response(
                400,
                json={"status": "error", "errorType": "bad_data", "error": "parse error at char 5"},
            ),
            "HTTP 400: Prometheus answered bad_data: parse error at char 5; check the query",
        ),
        (
            lambda r: httpx2.Response(
                422, json={"status": "error", "errorType": "execution", "error": "too many samples"}
            ),
            "HTTP 422: Prometheus answered execution: too many samples; ask for less",
        ),
    ],
)
def test_each_error_names_the_url_and_the_query(
    handler: Callable[[httpx2.Request], httpx2.Response], expected: str
) -> None:
    sleeps: list[float] = []
    src = _source(handler, QueryRange(0, 60, 60), sleep=sleeps.append)
    with pytest.raises(InputError) as caught:
        src.fetch("node_info", "kube_node_info")
    message = str(caught.value)
    assert message.startswith(f"{URL}: query node_info: ")
    assert expected in message
    assert sleeps == []  # none of these is retried


def test_invalid_url_is_an_input_error() -> None:
    src = PrometheusSource("prometheus:9090", QueryRange(0, 60, 60))
    with pytest.raises(InputError, match=r"prometheus:9090: query q: not a usable URL"):
        src.fetch("q", "up")


def test_server_errors_are_retried_with_backoff_then_succeed() -> None:
    fake = FakePrometheus({(("node", "a"),): lambda t: 1.0})
    answers = iter([503, 502])

    def flaky(request: httpx2.Request) -> httpx2.Response:
        status = next(answers, None)
        if status is not None:
            fake.requests.append(request)
            return httpx2.Response(status, text="busy")
        return fake(request)

    sleeps: list[float] = []
    got = _source(flaky, QueryRange(0, 120, 60), sleep=sleeps.append).fetch("q", "up")
    assert len(got[0].times_s) == 3
    assert len(fake.requests) == 3
    assert sleeps == [1.0, 2.0]


def test_retries_are_bounded_and_the_last_failure_is_named() -> None:
    calls: list[httpx2.Request] = []

    def down(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        return httpx2.Response(
            503, json={"status": "error", "errorType": "unavailable", "error": "shutting down"}
        )

    sleeps: list[float] = []
    src = _source(down, QueryRange(0, 60, 60), sleep=sleeps.append, attempts=4, backoff_s=0.5)
    with pytest.raises(
        InputError,
        match=r"query q: gave up after 4 tries: HTTP 503: Prometheus answered unavailable: shut",
    ):
        src.fetch("q", "up")
    assert len(calls) == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_timeouts_are_retried() -> None:
    calls: list[httpx2.Request] = []

    def slow(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        raise httpx2.ReadTimeout("timed out", request=request)

    sleeps: list[float] = []
    src = _source(slow, QueryRange(0, 60, 60), sleep=sleeps.append, attempts=2)
    with pytest.raises(InputError, match=r"gave up after 2 tries: timed out \(ReadTimeout\)"):
        src.fetch("q", "up")
    assert len(calls) == 2
    assert sleeps == [1.0]


def test_saved_responses_load_back_equal_to_the_live_result(tmp_path: Path) -> None:
    # A day at 5 s: 17,281 steps, two chunks.
    window = QueryRange(START, START + 86400, 5.0)
    fake = FakePrometheus(
        {
            (("node", "a"),): lambda t: (t - START) % 7,
            (("node", "b"),): lambda t: None if START + 3600 < t < START + 7200 else 2.5,
        }
    )
    live = _source(fake, window, save_dir=tmp_path / "saved")
    single = QueryRange(START, START + 600, 60.0)
    live_nodes = live.fetch("nodes", "kube_node_info")
    small = _source(fake, single, save_dir=tmp_path / "one").fetch("small", "up")
    assert live.fetch("other", "up") is not None  # a second query of one source: one index
    saved = sorted(p.name for p in (tmp_path / "saved").iterdir())
    assert saved == ["nodes.0.json", "nodes.1.json", "other.0.json", "other.1.json", "queries.json"]
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["queries.json", "small.json"]
    index = json.loads((tmp_path / "saved" / "queries.json").read_text())
    assert index["queries"]["nodes"] == {
        "promql": "kube_node_info",
        "files": ["nodes.0.json", "nodes.1.json"],
        "step_s": window.step_s,
    }
    offline = FileSource(tmp_path / "saved", window)
    assert offline.fetch("nodes", "kube_node_info") == live_nodes
    assert FileSource(tmp_path / "one", single).fetch("small", "up") == small
    assert not offline.warnings


def test_saving_again_in_the_other_layout_replaces_the_earlier_files(tmp_path: Path) -> None:
    fake = FakePrometheus({(("node", "a"),): lambda t: 1.0})
    save = tmp_path / "saved"
    _source(fake, QueryRange(START, START + 86400, 5.0), save_dir=save).fetch("q", "up")
    _source(fake, QueryRange(START, START + 600, 60.0), save_dir=save).fetch("q", "up")
    assert sorted(p.name for p in save.iterdir()) == ["q.json", "queries.json"]
    _source(fake, QueryRange(START, START + 86400, 5.0), save_dir=save).fetch("q", "up")
    assert sorted(p.name for p in save.iterdir()) == ["q.0.json", "q.1.json", "queries.json"]


def test_prometheus_warnings_are_counted() -> None:
    def warned(request: httpx2.Request) -> httpx2.Response:
        body = {
            "status": "success",
            "warnings": ["PromQL info: metric might not be a counter"],
            "data": {"resultType": "matrix", "result": []},
        }
        return httpx2.Response(200, json=body)

    src = _source(warned, QueryRange(0, 60, 60))
    assert src.fetch("q", "up") == []
    assert src.warnings.count("Prometheus warning") == 1


def test_sources_saving_one_range_into_one_directory_share_the_index(tmp_path: Path) -> None:
    fake = FakePrometheus({(("node", "a"),): lambda t: 1.0})
    window = QueryRange(START, START + 600, 60.0)
    _source(fake, window, save_dir=tmp_path).fetch("a", "up")
    _source(fake, window, save_dir=tmp_path).fetch("b", "up")
    index = json.loads((tmp_path / "queries.json").read_text())
    assert sorted(index["queries"]) == ["a", "b"]
    # Another range starts a new index.
    _source(fake, QueryRange(START, START + 1200, 60.0), save_dir=tmp_path).fetch("c", "up")
    index = json.loads((tmp_path / "queries.json").read_text())
    assert sorted(index["queries"]) == ["c"]


def test_retry_after_is_honoured_up_to_a_minute() -> None:
    fake = FakePrometheus({})
    answers = iter(
        [
            httpx2.Response(429, headers={"retry-after": "7"}),
            httpx2.Response(503, headers={"retry-after": "3600"}),
            httpx2.Response(503, headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        ]
    )

    def limited(request: httpx2.Request) -> httpx2.Response:
        return next(answers, None) or fake(request)

    sleeps: list[float] = []
    _source(limited, QueryRange(0, 60, 60), sleep=sleeps.append).fetch("q", "up")
    assert sleeps == [7.0, 60.0, 4.0]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    start_ms=st.integers(min_value=0, max_value=2_000_000_000_000),
    length_ms=st.integers(min_value=0, max_value=100_000),
    step_ms=st.integers(min_value=10, max_value=100_000),
    max_points=st.integers(min_value=1, max_value=50),
)
def test_chunks_cover_every_step_once(
    start_ms: int, length_ms: int, step_ms: int, max_points: int
) -> None:
    window = QueryRange(start_ms / 1000, (start_ms + length_ms) / 1000, step_ms / 1000)
    steps = length_ms // step_ms + 1
    chunks = chunk_ranges(window, max_points)
    seen = [
        round(c.start_s * 1000) + k * step_ms
        for c in chunks
        for k in range((round(c.end_s * 1000) - round(c.start_s * 1000)) // step_ms + 1)
    ]
    assert seen == [start_ms + k * step_ms for k in range(steps)]
    assert all(
        (round(c.end_s * 1000) - round(c.start_s * 1000)) // step_ms + 1 <= max_points
        for c in chunks
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"abc\xff\n", "not UTF-8 text"),
        ("tok\u00e9n".encode(), "character 4 of the token"),
        (b"abc\ndef\n", "character 4 of the token"),
        (b"ab\x00c", "character 3 of the token"),
        (b"ab c", "character 3 of the token"),
    ],
)
def test_a_token_no_header_can_carry_is_named_not_echoed(
    tmp_path: Path, content: bytes, message: str
) -> None:
    # Non-UTF-8 and non-ASCII tokens were tracebacks; an inner newline or NUL read as
    # "cannot connect (LocalProtocolError)".
    token = tmp_path / "token"
    token.write_bytes(content)
    with pytest.raises(InputError, match=message) as caught:
        _source(FakePrometheus({}), QueryRange(0, 60, 60), bearer_token_file=token)
    assert "field --bearer-token-file" in str(caught.value) and "def" not in str(caught.value)


def test_a_fifo_or_directory_as_token_or_ca_file_is_named(tmp_path: Path) -> None:
    # A FIFO as --bearer-token-file or --ca-file blocked the import forever.
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(InputError, match="--bearer-token-file: is not a regular file"):
            _source(FakePrometheus({}), QueryRange(0, 60, 60), bearer_token_file=path)
        with pytest.raises(InputError, match="--ca-file: is not a regular file"):
            _source(FakePrometheus({}), QueryRange(0, 60, 60), ca_file=path)


@pytest.mark.parametrize(
    "body", [b'{"a": ' + b"[" * 100_000, b'{"a": ' + b"9" * 5000 + b"}", b"{\xff"]
)
@pytest.mark.parametrize("status", [400, 503])
def test_an_error_body_that_does_not_decode_is_still_the_http_error(
    body: bytes, status: int
) -> None:
    # A deeply nested or 5,000-digit error body was a RecursionError/ValueError traceback.
    src = _source(
        lambda _: httpx2.Response(status, content=body),
        QueryRange(0, 60, 60),
        attempts=1,
    )
    with pytest.raises(InputError, match=f"HTTP {status}"):
        src.fetch("q", "up")


def _ok_body(pieces: int) -> list[bytes]:
    """A valid empty range answer, padded with spaces into ``pieces`` pieces."""
    head = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
    return [head] + [b" " * 1024] * (pieces - 1)


def test_an_answer_over_the_size_bound_is_named_not_read_whole() -> None:
    def huge(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=iter(_ok_body(100)))

    src = _source(huge, QueryRange(0, 60, 60), max_response_bytes=10_000)
    with pytest.raises(InputError, match=r"answered more than 10,000 bytes; ask for less"):
        src.fetch("q", "up")
    small = _source(huge, QueryRange(0, 60, 60), max_response_bytes=200_000)
    assert small.fetch("q", "up") == []


def test_an_answer_trickling_past_the_deadline_is_a_timeout_retried_then_given_up() -> None:
    now = [0.0]

    def tick() -> float:
        now[0] += 1.0
        return now[0]

    def trickle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=iter(_ok_body(50)))

    sleeps: list[float] = []
    src = _source(
        trickle,
        QueryRange(0, 60, 60),
        deadline_s=10.0,
        monotonic=tick,
        sleep=sleeps.append,
        attempts=2,
    )
    with pytest.raises(InputError, match=r"gave up after 2 tries: timed out \(ReadTimeout\)"):
        src.fetch("q", "up")
    assert sleeps == [1.0]
