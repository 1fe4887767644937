"""Controller mode through API server outages, with fake clients: what counts as worth a
retry, writes that answer a lost connection as a 503 refusal, informers that never die,
lease renewals that meet the end of an outage shorter than the renew deadline, and
nominated capacity that disruption leaves alone."""

from __future__ import annotations

import logging
import threading
from typing import Any

import httpx2 as httpx
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from joiner.cluster.kube import client as kube
from joiner.cluster.kube.informer import Informer
from joiner.cluster.kube.leader import LeaderElector
from tests.cluster.test_fence import FakeClock, LeaseApi, _elector
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pod

REQUEST = httpx.Request("GET", "https://127.0.0.1:6443/api/v1/pods")


def _api_error(code: int) -> ApiError:
    return ApiError(status=Status(code=code, message=f"status {code}"))


@pytest.mark.parametrize(
    ("exc", "retry"),
    [
        (httpx.ConnectError("connection refused", request=REQUEST), True),
        (httpx.ReadError("connection reset", request=REQUEST), True),
        (httpx.RemoteProtocolError("peer closed connection", request=REQUEST), True),
        (httpx.ReadTimeout("timed out", request=REQUEST), True),
        (_api_error(429), True),
        (_api_error(503), True),
        (_api_error(500), True),
        (_api_error(409), False),
        (_api_error(403), False),
        (_api_error(404), False),
        # lightkube on an error answer without Content-Type (a restarting server's).
        (KeyError("Content-Type"), True),
        (RuntimeError("a bug"), False),
    ],
)
def test_what_a_retry_may_fix(exc: BaseException, retry: bool) -> None:
    assert kube.transient(exc) is retry


class Flaky:
    """A client whose ``create`` raises each of ``errors`` in turn, then answers."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.created: list[str] = []

    def create(self, obj: str) -> str:
        if self.errors:
            raise self.errors.pop(0)
        self.created.append(obj)
        return obj


def test_a_lost_connection_answers_as_a_503_refusal_and_is_reported() -> None:
    reach = kube.ApiReachability(30.0)
    api: Any = kube.Answering(
        Flaky(httpx.ConnectError("connection refused", request=REQUEST), KeyError("x")), reach
    )
    with pytest.raises(ApiError) as raised:
        api.create("NodeClaim a")
    assert raised.value.status.code == 503
    assert "https://127.0.0.1:6443" in str(raised.value.status.message)
    assert "ConnectError" in str(raised.value.status.message)
    assert reach.failing_since is not None
    with pytest.raises(ApiError) as garbled:
        api.create("NodeClaim a")
    assert garbled.value.status.code == 503
    assert api.create("NodeClaim a") == "NodeClaim a"
    assert reach.failing_since is None  # the answer counts as reachable again


def test_refusals_and_bugs_pass_unchanged() -> None:
    reach = kube.ApiReachability(30.0)
    api: Any = kube.Answering(Flaky(_api_error(409), RuntimeError("a bug")), reach)
    with pytest.raises(ApiError) as refused:
        api.create("x")
    assert refused.value.status.code == 409
    with pytest.raises(RuntimeError, match="a bug"):
        api.create("x")


class ListApi:
    """A list that fails with each of ``errors`` in turn, then lists nothing; a watch that
    blocks until ``stop``."""

    def __init__(self, stop: threading.Event, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.stop = stop
        self.lists = 0

    def list(self, _res: Any, **_kw: Any) -> Any:
        self.lists += 1
        if self.errors:
            raise self.errors.pop(0)

        class Listing(list[Any]):
            resourceVersion = "7"

        return Listing()

    def watch(self, _res: Any, **_kw: Any) -> Any:
        self.stop.wait(30)
        return iter(())


def test_an_informer_survives_answers_it_cannot_read_and_backs_off() -> None:
    stop = threading.Event()
    api = ListApi(
        stop,
        KeyError("Content-Type"),
        ValueError("truncated JSON"),
        httpx.ConnectError("connection refused", request=REQUEST),
        _api_error(429),
    )
    synced = threading.Event()
    informer = Informer(
        lambda: api,  # type: ignore[arg-type,return-value]
        kube.POD,
        lambda _k, event, _d: synced.set() if event == "SYNC" else None,
        stop,
        retry_s=0.01,
        max_retry_s=0.04,
    )
    informer.start()
    try:
        assert synced.wait(30), "the informer died instead of re-listing"
    finally:
        stop.set()
    assert api.lists == 5
    assert [informer.backoff_s(n) for n in (1, 2, 3, 4, 10)] == [0.01, 0.02, 0.04, 0.04, 0.04]


def test_an_outage_ending_just_before_the_renew_deadline_never_closes_the_fence() -> None:
    """9.6 s down with a 10 s renew deadline and 2 s retries: the attempts at 2, 4, 6 and
    8 s fail, and the one at 10 s would come too late (the fence shuts at 10 s); one
    attempt starts just before the deadline instead, and the fence stays open at every
    instant a write could be made."""
    api, clock = LeaseApi(), FakeClock()
    lost: list[bool] = []
    elector = _elector(api, clock, on_lost=lambda: lost.append(True))
    assert elector.acquire(threading.Event())
    down_until = clock.t + 9.6
    api.on_call = lambda: setattr(api, "down", clock.t < down_until)
    fence_open: list[tuple[float, bool]] = []

    class Steps(threading.Event):
        n = 0

        def wait(self, timeout: float | None = None) -> bool:
            self.n += 1
            if self.n > 12:
                return True
            clock.t += timeout or 0.0
            fence_open.append((clock.t, elector.may_write()))
            return False

    elector.keep(Steps())
    assert not lost and elector.leader
    assert all(ok for _t, ok in fence_open), fence_open


def test_attempts_near_the_deadline_keep_a_pause_between_them() -> None:
    api, clock = LeaseApi(), FakeClock()
    elector = _elector(api, clock)
    assert elector.acquire(threading.Event())
    assert elector.next_attempt_in() == 2.0
    clock.t += 8.0
    assert elector.next_attempt_in() == pytest.approx(1.75)
    clock.t += 1.75
    assert elector.next_attempt_in() == pytest.approx(0.25)
    clock.t += 5.0  # past the deadline: still a pause, never a busy loop
    assert elector.next_attempt_in() == pytest.approx(0.25)


def test_a_lost_lease_is_reported_once_and_not_while_stopping() -> None:
    api, clock = LeaseApi(), FakeClock()
    lost: list[bool] = []
    elector = _elector(api, clock, on_lost=lambda: lost.append(True))
    assert elector.acquire(threading.Event())
    api.down = True

    class StopDuringAttempt(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            if self.is_set():
                return True
            clock.t += 20.0  # past the deadline
            self.set()  # SIGTERM while the attempt runs
            return False

    elector.keep(StopDuringAttempt())
    assert lost == [] and not elector.leader and not elector.may_write()


# -- nominations: capacity pending pods are on their way to -----------------------------------


def test_a_node_pending_pods_are_nominated_to_is_not_disrupted_until_the_window_ends(
    tmp_path: Any,
) -> None:
    """kube-scheduler has not bound a pod that fits an empty node (frozen, or slow): the
    provisioner places it there (no new NodeClaim) and nominates the node, and emptiness
    leaves the node alone for the nomination window (Karpenter ``StateNode.Nominated``)."""
    dr = dry_run(tmp_path, nodepool(), node("idle", "m5.xlarge"), pod("web-1", "idle"))
    (web,) = dr.state.pods.values()
    web.node_name = None  # not bound yet
    # Karpenter ``nominationWindow``: twice the batch's 10 s maximum.
    assert dr.provisioner.nomination_window_s == 20.0
    dr.provisioner.reconcile()
    claims = list(dr.state.nodeclaims.values())
    assert len(claims) == 1 and claims[0].nominated_until_s == pytest.approx(
        dr.clock.now() + dr.provisioner.nomination_window_s
    )
    command, ctx = dr.controller.compute(elapsed=True)
    assert command is None
    assert ctx.reasons["idle"].message() == "nominated for a pending pod"
    dr.clock.run_until(dr.clock.now() + dr.provisioner.nomination_window_s + 1)
    command, _ctx = dr.controller.compute(elapsed=True)
    assert command is not None and command.names == ["idle"]


def _renewal_answered_late(
    elector: LeaderElector, api: LeaseApi, clock: FakeClock, ok: bool
) -> bool:
    """A renewal starts 8 s after the last one and the server answers it 3 s later (past
    the old deadline; ``ok``: with success); what ``write_allowed`` answers meanwhile."""
    release, on_wire = threading.Event(), threading.Event()

    def frozen() -> None:
        on_wire.set()
        release.wait(30)
        api.down = not ok

    api.on_call = frozen
    clock.t += 8.0
    attempt = threading.Thread(target=elector._renew_once)
    attempt.start()
    assert on_wire.wait(30)
    clock.t += 3.0
    assert not elector.may_write()
    threading.Timer(0.2, release.set).start()
    allowed = elector.write_allowed()
    attempt.join(30)
    api.on_call, api.down = None, False
    return allowed


def test_a_write_waits_for_the_renewal_in_flight_instead_of_being_refused() -> None:
    """The API server froze with a renewal on the wire: a write that came meanwhile is
    allowed by that renewal when it succeeds, and refused when it fails."""
    api, clock = LeaseApi(), FakeClock()
    elector = _elector(api, clock)
    assert elector.acquire(threading.Event())
    assert _renewal_answered_late(elector, api, clock, ok=True)
    assert elector.may_write()
    assert not _renewal_answered_late(elector, api, clock, ok=False)
    assert not elector.may_write()


def test_a_starting_node_tainted_not_ready_still_takes_the_pods_nominated_to_it(
    tmp_path: Any,
) -> None:
    """The node lifecycle controller taints a Node ``not-ready`` until it is Ready (longer
    while the API server restarts): a node not initialized yet is placed on without the
    known ephemeral taints (Karpenter ``StateNode.Taints``), so its pending pod launches no
    second NodeClaim; a lasting taint still keeps the pod off it."""
    from joiner.api.objects import Taint

    dr = dry_run(tmp_path, nodepool(), node("starting", "m5.xlarge"), pod("web-1", "starting"))
    (web,) = dr.state.pods.values()
    web.node_name = None
    (claim,) = dr.state.nodeclaims.values()
    claim.initialized_at_s = None
    starting = dr.state.nodes["starting"]
    starting.taints = (*starting.taints, Taint("node.kubernetes.io/not-ready", "NoSchedule", ""))
    dr.provisioner.reconcile()
    assert list(dr.state.nodeclaims) == [claim.name]
    assert claim.nominated_until_s is not None
    starting.taints = (*starting.taints, Taint("dedicated", "NoSchedule", "gpu"))
    dr.provisioner.reconcile()
    assert len(dr.state.nodeclaims) == 2


def test_releasing_the_lease_on_a_garbled_answer_logs_and_gives_it_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, clock = LeaseApi(), FakeClock()
    elector = _elector(api, clock)
    assert elector.acquire(threading.Event())

    def garbled() -> None:
        raise KeyError("Content-Type")

    api.on_call = garbled
    with caplog.at_level(logging.WARNING, logger="joiner.cluster.kube.leader"):
        elector.release()  # SIGTERM while the API server restarts: no traceback
    assert not elector.leader
    assert "lease release failed" in caplog.text and "KeyError" in caplog.text


def test_a_ready_node_still_tainted_not_ready_is_not_initialized_yet() -> None:
    """kube-controller-manager removes ``node.kubernetes.io/not-ready`` once the Node is
    Ready, and cannot while the API server restarts: Karpenter initializes a NodeClaim only
    once its Node is Ready *and* the known ephemeral taints are gone (initialization.go
    ``KnownEphemeralTaintsRemoved``), so meanwhile the node is placed on as a starting one."""
    from tests.cluster.test_kube_adapter import Harness, _doc

    h = Harness()
    claim = h.launched_claim()
    assert claim.instance is not None
    node: dict[str, Any] = {
        "metadata": {"name": "pool-abcde"},
        "spec": {
            "providerID": claim.instance.provider_id,
            "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    h.feed.deliver(kube.NODE, "ADDED", [_doc(kube.NODE, node)])
    assert claim.registered_at_s is not None and claim.initialized_at_s is None
    node["spec"]["taints"] = []
    h.feed.deliver(kube.NODE, "MODIFIED", [_doc(kube.NODE, node)])
    assert claim.initialized_at_s is not None


def test_the_first_reason_to_stop_leading_is_the_one_the_exit_line_gives() -> None:
    """A lost lease and a fenced write racing each other end the process once, with exit
    code 1 and the first reason (the one ``stopped leading`` line logs)."""
    import asyncio

    from joiner.operator.controller import ControllerRuntime

    runtime = ControllerRuntime(None, metrics_port=None, health_port=None)
    stopped = asyncio.Event()
    runtime._lost(stopped, "the lease is no longer held")
    runtime._lost(stopped, "a write was fenced")
    assert runtime.exit_code == 1 and runtime._why == "the lease is no longer held"
    assert stopped.is_set() and runtime._stop.is_set()
