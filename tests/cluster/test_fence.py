"""Fenced writes and riding out API server outages (issue 18): the leader elector's
``may_write`` by its own monotonic clock, the renewal thread's deadline, and the ``Fence``
that drops writes and trips once."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import Status
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Node

from joiner.cluster.kube import client as kube
from joiner.cluster.kube.fence import CLOUD_WRITES, KUBE_WRITES, Fence, LeaseLostError, fenced
from joiner.cluster.kube.leader import LeaderElector


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class LeaseApi:
    """An in-memory Lease API; ``down`` makes every call a transport error, ``holder``
    hands the Lease to someone else."""

    def __init__(self) -> None:
        self.lease: Lease | None = None
        self.down = False
        self.calls = 0
        self.on_call: Any = None

    def _enter(self) -> None:
        self.calls += 1
        if self.on_call is not None:
            self.on_call()
        if self.down:
            raise httpx.ConnectError("connection refused")

    def get(self, _res: Any, _name: str, namespace: str) -> Lease:
        self._enter()
        if self.lease is None:
            raise ApiError(status=Status(code=404, message="not found"))
        return Lease(metadata=self.lease.metadata, spec=LeaseSpec(**self.lease.spec.to_dict()))

    def create(self, obj: Lease) -> Lease:
        self._enter()
        self.lease = obj
        return obj

    def replace(self, obj: Lease) -> Lease:
        self._enter()
        self.lease = obj
        return obj

    def give_to(self, holder: str) -> None:
        from datetime import UTC, datetime

        assert self.lease is not None and self.lease.spec is not None
        self.lease.spec.holderIdentity = holder
        self.lease.spec.renewTime = datetime.now(UTC).strftime(  # type: ignore[assignment]
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )


def _elector(api: LeaseApi, clock: FakeClock, **kw: Any) -> LeaderElector:
    return LeaderElector(
        api,  # type: ignore[arg-type]
        "ns",
        "lease",
        "me",
        lease_duration_s=15,
        renew_deadline_s=10,
        retry_s=2,
        monotonic=clock,
        **kw,
    )


def test_may_write_only_within_the_renew_deadline_of_the_last_successful_renewal() -> None:
    api, clock = LeaseApi(), FakeClock()
    elector = _elector(api, clock)
    assert not elector.may_write()  # not leading yet
    assert elector.acquire(threading.Event())
    assert elector.may_write()
    clock.t += 9.9
    assert elector.may_write()
    clock.t += 0.1  # 10 s since the renewal started: as if paused (SIGSTOP) that long
    assert not elector.may_write()
    # A renewal counts from when it started: one that took 3 s leaves 7 s.
    api.on_call = lambda: setattr(clock, "t", clock.t + 1.5)  # get + replace
    assert elector._attempt()
    api.on_call = None
    assert elector.may_write()
    clock.t += 6.9
    assert elector.may_write()
    clock.t += 0.1
    assert not elector.may_write()


def _keep_in_steps(elector: LeaderElector, clock: FakeClock, api: LeaseApi, steps: int) -> None:
    """Run ``keep`` with a stop event whose waits advance the fake clock by retry_s."""

    class Steps(threading.Event):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def wait(self, timeout: float | None = None) -> bool:
            self.n += 1
            if self.n > steps:
                return True
            clock.t += timeout or 0.0
            return False

    elector.keep(Steps())


def test_an_outage_shorter_than_the_renew_deadline_keeps_the_lease() -> None:
    api, clock = LeaseApi(), FakeClock()
    lost: list[bool] = []
    elector = _elector(api, clock, on_lost=lambda: lost.append(True))
    assert elector.acquire(threading.Event())
    down_until = clock.t + 8.5  # 8.5 s outage, deadline 10 s

    def outage() -> None:
        api.down = clock.t < down_until

    api.on_call = outage
    _keep_in_steps(elector, clock, api, steps=10)
    assert not lost and elector.leader and elector.may_write()


def test_an_outage_past_the_renew_deadline_gives_the_lease_up_and_closes_the_fence(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, clock = LeaseApi(), FakeClock()
    lost: list[bool] = []
    elector = _elector(api, clock, on_lost=lambda: lost.append(True))
    assert elector.acquire(threading.Event())
    api.down = True
    with caplog.at_level(logging.ERROR, logger="joiner.cluster.kube.leader"):
        _keep_in_steps(elector, clock, api, steps=20)
    assert lost == [True] and not elector.leader and not elector.may_write()
    assert "not renewed within 10 s" in caplog.text
    # Gave up after the fifth failed 2 s retry (10 s), as client-go's renew loop would.
    assert clock.t == pytest.approx(100.0 + 10.0)


def test_another_holder_is_a_lost_lease_at_once() -> None:
    api, clock = LeaseApi(), FakeClock()
    lost: list[bool] = []
    elector = _elector(api, clock, on_lost=lambda: lost.append(True))
    assert elector.acquire(threading.Event())
    api.give_to("other")
    _keep_in_steps(elector, clock, api, steps=5)
    assert lost == [True] and not elector.may_write()
    assert clock.t == pytest.approx(102.0)


def test_an_unexpected_error_does_not_kill_the_renewal_thread() -> None:
    api, clock = LeaseApi(), FakeClock()
    elector = _elector(api, clock, on_lost=lambda: None)
    assert elector.acquire(threading.Event())
    failures = iter([KeyError("content-type"), None, None])

    def flaky() -> None:
        exc = next(failures, None)
        if exc is not None:
            raise exc

    api.on_call = flaky
    _keep_in_steps(elector, clock, api, steps=4)
    assert elector.leader and elector.may_write()


# -- the Fence ------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def create(self, obj: Any, name: str | None = None) -> str:
        self.calls.append(f"create {obj}")
        return "created"

    def delete(self, res: Any, name: str) -> None:
        self.calls.append(f"delete {name}")

    def get(self, res: Any, name: str) -> str:
        self.calls.append(f"get {name}")
        return "got"


def test_a_fenced_write_is_dropped_the_fence_trips_once_and_stays_shut() -> None:
    allowed = [True]
    tripped: list[str] = []
    dropped: list[int] = []
    fence = Fence(lambda: allowed[0], tripped.append, on_dropped=lambda: dropped.append(1))
    api = Recorder()
    client = fenced(api, fence, KUBE_WRITES)
    assert client.create("a") == "created"
    allowed[0] = False
    with pytest.raises(LeaseLostError):
        client.create("b")
    with pytest.raises(LeaseLostError):
        client.delete(object, "n")
    assert client.get(object, "r") == "got"  # reads pass
    allowed[0] = True  # a renewal succeeding afterwards does not reopen it
    with pytest.raises(LeaseLostError):
        client.create("c")
    assert api.calls == ["create a", "get r"]
    assert tripped == ["create b"] and fence.tripped and fence.dropped == 3
    assert len(dropped) == 3


def test_without_leader_election_the_fence_is_open() -> None:
    api = Recorder()
    client = fenced(api, Fence(None), CLOUD_WRITES)
    client.create("x")
    client.delete(object, "y")
    assert api.calls == ["create x", "delete y"]


def test_a_paused_leader_writes_nothing_before_its_renewal_thread_notices() -> None:
    """The race of the issue: the process resumes after its lease expired, and the loop's
    overdue timers run before the renewal thread's next attempt. The fence, by the
    monotonic clock alone, refuses the first write."""
    api, clock = LeaseApi(), FakeClock()
    elector = _elector(api, clock)
    assert elector.acquire(threading.Event())
    cloud = Recorder()
    fence = Fence(elector.may_write)
    guarded_cloud = fenced(cloud, fence, CLOUD_WRITES)
    guarded_api = fenced(Recorder(), fence, KUBE_WRITES)
    guarded_cloud.create("launch")
    clock.t += 20  # SIGSTOP for 20 s, then SIGCONT; elector.leader is still True
    assert elector.leader
    with pytest.raises(LeaseLostError):
        guarded_api.create("Eviction pod-1")
    with pytest.raises(LeaseLostError):
        guarded_cloud.delete(object, "i-1")
    assert cloud.calls == ["create launch"]


def _recording_client(tmp_path: Path) -> tuple[Any, list[str]]:
    """A lightkube client from ``kube.connect`` whose transport records each request
    (``METHOD path``) and answers an empty 200 instead of sending it."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n"
    )
    client = kube.connect(kubeconfig)
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(f"{request.method} {request.url.path}")
        body = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n-1"}}
        if request.method == "GET" and request.url.path.endswith("/nodes"):
            body = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []}
        return httpx.Response(200, json=body)

    client._client._client._transport = httpx.MockTransport(answer)
    return client, sent


def test_a_pause_between_the_calls_check_and_the_send_writes_nothing(tmp_path: Path) -> None:
    """The race left after the call's check (the CI failure of a paused leader's Node
    patch reaching the API server after the hand-over): the lease was proven when the
    call was checked, the process was paused before the request left, and resumed past
    its lease. ``guard_writes`` checks again as the request leaves: it is not sent."""
    client, sent = _recording_client(tmp_path)
    answers = iter([True, False])  # proven at the call; not any more at the send
    fence = Fence(lambda: next(answers))
    kube.guard_writes(client, fence.check)
    writer = fenced(client, fence, KUBE_WRITES)
    with pytest.raises(LeaseLostError):
        writer.patch(Node, "n-1", {"spec": {"unschedulable": True}})
    assert sent == []
    assert fence.tripped_by == "PATCH /api/v1/nodes/n-1"
    # Reads still pass; writes stay refused.
    assert list(writer.list(Node)) == []
    with pytest.raises(LeaseLostError):
        writer.delete(Node, "n-1")
    assert sent == ["GET /api/v1/nodes"]


def test_guard_writes_lets_writes_through_while_the_lease_is_held(tmp_path: Path) -> None:
    client, sent = _recording_client(tmp_path)
    checked: list[str] = []
    kube.guard_writes(client, checked.append)
    client.patch(Node, "n-1", {"spec": {"unschedulable": True}})
    client.get(Node, "n-1")
    client.delete(Node, "n-1")
    assert sent == ["PATCH /api/v1/nodes/n-1", "GET /api/v1/nodes/n-1", "DELETE /api/v1/nodes/n-1"]
    assert checked == ["PATCH /api/v1/nodes/n-1", "DELETE /api/v1/nodes/n-1"]


def test_the_controller_runtime_wires_the_fence_into_every_writer(tmp_path: Path) -> None:
    """Every writer the runtime builds (actuator, Events, the cloud the controllers use)
    goes through the fence, and its API client checks it again as each write leaves:
    tripping it drops their writes."""
    from joiner.operator.controller import ControllerRuntime

    runtime = ControllerRuntime(None, metrics_port=None, health_port=None)
    runtime.client, sent = _recording_client(tmp_path)
    runtime.fence = Fence(lambda: False)
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        runtime._build(loop)
        with pytest.raises(LeaseLostError):
            runtime.actuator._api().create("NodeClaim")
        with pytest.raises(LeaseLostError):
            runtime.lifecycle._cloud.create(object())
        with pytest.raises(LeaseLostError):
            runtime.terminator._cloud.delete("aws:///us-east-1a/i-1")
        with pytest.raises(LeaseLostError):
            runtime.timeline._client.create("Event")
        # A write made on the runtime's client itself, past every wrapper, is stopped too.
        with pytest.raises(LeaseLostError):
            runtime.client.patch(Node, "n-1", {"spec": {"unschedulable": True}})
    finally:
        loop.close()
    assert sent == []


def test_an_attempt_paused_past_its_deadline_between_read_and_write_writes_nothing() -> None:
    """A process paused after reading the Lease and before writing it (the stop-27 CI
    failure: the resumed leader's lease update reached the API server after the hand-over)
    drops the attempt, as client-go's RenewDeadline context would."""
    api, clock = LeaseApi(), FakeClock()
    elector = _elector(api, clock)
    assert elector.acquire(threading.Event())
    writes: list[object] = []
    real_replace = api.replace

    def replace(obj: Lease) -> Lease:
        writes.append(obj)
        return real_replace(obj)

    api.replace = replace  # type: ignore[method-assign]
    assert elector._attempt()  # a timely renewal writes
    assert len(writes) == 1
    calls = api.calls
    # Paused 10 s (the renew deadline) during the read.
    api.on_call = lambda: setattr(clock, "t", clock.t + 10.0)
    assert not elector._attempt()
    assert api.calls == calls + 1  # read, not written
    assert len(writes) == 1
    api.on_call = None
    # Paused 9.9 s: within the deadline, the renewal goes through.
    read = api.calls + 1
    api.on_call = lambda: setattr(clock, "t", clock.t + 9.9) if api.calls == read else None
    assert elector._attempt()
    assert len(writes) == 2
