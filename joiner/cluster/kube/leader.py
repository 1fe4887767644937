"""Lease-based leader election (``coordination.k8s.io/v1`` Lease), as client-go's
leaderelection does it:

* A candidate reads the Lease. It takes it when it does not exist (create), when it holds
  it already, or when the holder's ``renewTime + leaseDurationSeconds`` has passed
  (update with the read ``resourceVersion``: optimistic concurrency, so two candidates
  cannot both win; the loser gets 409 and tries again after ``retry_s``).
* The leader renews every ``retry_s``; if it cannot renew within ``renew_deadline_s`` of
  its last renewal (or finds another holder), it has lost the lease: ``on_lost`` runs
  (the composition root exits, as controller-runtime does, so a stale leader never acts).
* A standby takes over at the earliest ``leaseDurationSeconds`` after the last renewal.
* ``may_write()`` is the fence every write checks first (``fence.py``, through
  ``write_allowed``, which waits for a renewal attempt in flight that would decide): this
  process led at its last successful renewal, and less than ``renew_deadline_s`` has
  passed since that renewal *started*, by this process's own monotonic clock. A process
  paused (SIGSTOP, a long GC, a frozen VM) past its lease therefore fails the check the
  moment it resumes, before its renewal thread has even noticed (an attempt it started
  before the pause is too old to count); the margin ``leaseDurationSeconds -
  renewDeadlineSeconds`` covers a write already on the wire when the check passed.
  (client-go's ``LeaderElector.IsLeader`` answers from the last observed record instead,
  which is what lets a resumed leader act until its next renewal fails.)
* An API server outage shorter than ``renew_deadline_s`` costs nothing: renewals fail,
  are retried every ``retry_s`` (and once more just before the deadline), and the first
  one that succeeds keeps the lease; a write meanwhile waits for the attempt in flight
  (``write_allowed``) instead of being refused. Lost is one ERROR line; the composition
  root then exits with code 1, as Karpenter exits when client-go's leader election stops
  leading. Each renewal attempt's requests time out after ``renew_deadline_s`` (the
  elector's client),
  as client-go bounds ``tryAcquireOrRenew`` by the renew deadline.

A refusal that waiting will not fix (the Lease's namespace does not exist, 403: no RBAC,
credentials the kubeconfig cannot produce: an exec plugin that fails) is logged once as an
ERROR saying how to fix it, and kept in ``problem`` (``/readyz``
fails meanwhile); the candidate keeps retrying, so creating the namespace is enough.

Times in the Lease are the wall clock (``MicroTime``, UTC); replicas compare them with
their own clocks, so clock skew between machines shortens or lengthens the takeover.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx2 as httpx
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

from joiner.api.errors import InputError
from joiner.cluster.kube.client import ApiReachability

log = logging.getLogger(__name__)

#: After a failed renewal, one more attempt starts this long before the renew deadline
#: (seconds; a quarter of the retry period when that is shorter).
FINAL_ATTEMPT_S = 0.25


def _micro(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


class LeaderElector:
    """Acquires and keeps one Lease (module docstring)."""

    def __init__(
        self,
        client: Client,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration_s: float = 15.0,
        renew_deadline_s: float = 10.0,
        retry_s: float = 2.0,
        on_lost: Callable[[], None] | None = None,
        reachability: ApiReachability | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not retry_s < renew_deadline_s < lease_duration_s:
            raise ValueError(
                "leader election needs retryPeriod < renewDeadline < leaseDuration, got "
                f"{retry_s} s, {renew_deadline_s} s, {lease_duration_s} s"
            )
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration_s = lease_duration_s
        self.renew_deadline_s = renew_deadline_s
        self.retry_s = retry_s
        self._on_lost = on_lost
        self.leader = False
        self.transitions = 0
        self._reachability = reachability or ApiReachability()
        self._monotonic = monotonic
        #: Monotonic time at which the last successful acquire or renewal started.
        self.renewed_at: float | None = None
        #: Why the Lease cannot be taken (logged once), None when nothing stands in the way.
        self.problem: str | None = None
        #: Start (monotonic) of the renewal attempt in flight, None between attempts;
        #: guarded by ``_attempts``, which is notified when an attempt ends.
        self._inflight: float | None = None
        self._attempts = threading.Condition()

    def may_write(self) -> bool:
        """The fence (module docstring): True while this process leads and its last
        successful renewal started less than ``renew_deadline_s`` ago (monotonic)."""
        renewed = self.renewed_at
        return (
            self.leader
            and renewed is not None
            and self._monotonic() - renewed < self.renew_deadline_s
        )

    def write_allowed(self) -> bool:
        """The fence's question: ``may_write``, except that while a renewal attempt is in
        flight whose success would make it true (it started less than
        ``renew_deadline_s`` ago), the answer waits for that attempt, at most until its
        deadline. A renewal caught by a short outage (a request the API server answers
        when it comes back) thus decides, and a write made meanwhile is neither refused
        nor made on a lease not yet renewed. Blocks the caller for at most
        ``renew_deadline_s``."""
        if self.may_write():
            return True
        with self._attempts:
            while self.leader and self._inflight is not None:
                left = self._inflight + self.renew_deadline_s - self._monotonic()
                if left <= 0:
                    break
                self._attempts.wait(left)
        return self.may_write()

    def _attempt(self) -> bool:
        """``try_acquire_or_renew``, recording when a successful attempt started (and,
        while it runs, that one is in flight: ``write_allowed``)."""
        started = self._monotonic()
        with self._attempts:
            self._inflight = started
        ok = False
        try:
            ok = self.try_acquire_or_renew(deadline=started + self.renew_deadline_s)
        finally:
            with self._attempts:
                if ok:
                    self.renewed_at = started
                self._inflight = None
                self._attempts.notify_all()
        return ok

    def try_acquire_or_renew(self, deadline: float | None = None) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards.

        ``deadline`` (this process's monotonic clock, seconds) bounds the attempt as
        client-go's ``LeaderElector.renew`` bounds ``tryAcquireOrRenew`` with a
        ``RenewDeadline`` context: when it has passed by the time the Lease has been read
        (the process was paused between the read and the write), the attempt ends without
        writing, since the read is stale. A pause after this check still reaches the API
        server, whose optimistic concurrency (409 on the read ``resourceVersion``) refuses
        the write.

        Raises:
            ApiError: the API refused for a reason other than a conflict (403: no RBAC).
        """
        now = datetime.now(UTC)
        try:
            lease = self._client.get(Lease, self.name, namespace=self.namespace)
        except ApiError as exc:
            if exc.status.code != 404:
                raise
            if self._past(deadline):
                return False
            spec = LeaseSpec(
                holderIdentity=self.identity,
                leaseDurationSeconds=round(self.lease_duration_s),
                acquireTime=_micro(now),  # type: ignore[arg-type]
                renewTime=_micro(now),  # type: ignore[arg-type]
                leaseTransitions=0,
            )
            try:
                self._client.create(
                    Lease(metadata=ObjectMeta(name=self.name, namespace=self.namespace), spec=spec)
                )
            except ApiError as create_exc:
                if create_exc.status.code == 409:
                    return False
                raise
            return True
        if self._past(deadline):
            return False
        spec = lease.spec or LeaseSpec()
        holder = spec.holderIdentity
        renewed = _parse(spec.renewTime)
        duration = spec.leaseDurationSeconds or round(self.lease_duration_s)
        expired = renewed is None or (now - renewed).total_seconds() > duration
        if holder not in (None, "", self.identity) and not expired:
            return False
        if holder != self.identity:
            spec.acquireTime = _micro(now)  # type: ignore[assignment]
            spec.leaseTransitions = (spec.leaseTransitions or 0) + 1
        spec.holderIdentity = self.identity
        spec.renewTime = _micro(now)  # type: ignore[assignment]
        spec.leaseDurationSeconds = round(self.lease_duration_s)
        lease.spec = spec
        try:
            self._client.replace(lease)
        except ApiError as exc:
            if exc.status.code == 409:
                return False
            raise
        return True

    def _past(self, deadline: float | None) -> bool:
        """True (logged) when the attempt's ``deadline`` has passed: write nothing."""
        if deadline is None or self._monotonic() < deadline:
            return False
        log.info(
            "lease %s/%s: the read is older than the renew deadline; not written",
            self.namespace,
            self.name,
        )
        return True

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or ``stop`` is set (False)."""
        while not stop.is_set():
            try:
                acquired = self._attempt()
                self._reachability.ok()
                if self.problem is not None:
                    log.info("lease %s/%s: no longer refused", self.namespace, self.name)
                    self.problem = None
                if acquired:
                    self.leader = True
                    log.info("became leader lease=%s/%s", self.namespace, self.name)
                    return True
            except ApiError as exc:
                self._reachability.ok()  # the server answered
                self._refused(exc)
            except httpx.HTTPError as exc:  # the API server is unreachable: keep trying
                self._reachability.failed(exc)
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            except InputError as exc:  # the kubeconfig's credentials (an exec plugin failed)
                self._report(
                    f"cannot ask for the Lease {self.namespace}/{self.name}: {exc}. "
                    "Fix the credentials (a new login, for an exec plugin); retrying "
                    f"every {self.retry_s:g} s."
                )
            except Exception as exc:  # an answer lightkube cannot read (client.garbled)
                log.warning(
                    "lease %s/%s: %s: %s", self.namespace, self.name, type(exc).__name__, exc
                )
            stop.wait(self.retry_s)
        return False

    def _refused(self, exc: ApiError) -> None:
        """Log a refusal: once as an ERROR with the fix when it is new, then at DEBUG."""
        message = str(exc.status.message)
        if exc.status.code == 404 and "namespace" in message:
            problem = (
                f"cannot create the Lease {self.namespace}/{self.name}: namespace "
                f"{self.namespace!r} does not exist ({message}). Create it (kubectl create "
                f"namespace {self.namespace}, or helm install joiner deploy/chart -n "
                f"{self.namespace} --create-namespace), or "
                "set leaderElection.namespace in the --settings file to an existing "
                "namespace. Waiting for it."
            )
        elif exc.status.code == 403:
            problem = (
                f"the API server forbids the Lease {self.namespace}/{self.name}: {message}. "
                "Grant get/create/update on coordination.k8s.io leases in that namespace "
                "(the chart's Role, deploy/chart/templates/rbac.yaml). Waiting."
            )
        else:
            log.warning("lease %s/%s: %s", self.namespace, self.name, message)
            return
        self._report(problem)

    def _report(self, problem: str) -> None:
        """A problem waiting will not fix by itself: logged once as an ERROR while it stays
        the same (then at DEBUG), and kept in ``problem`` (``/readyz`` fails meanwhile)."""
        if problem != self.problem:
            log.error("%s", problem)
        else:
            log.debug("%s", problem)
        self.problem = problem

    def keep(self, stop: threading.Event) -> None:
        """Renew until ``stop`` or until the lease is lost (then ``on_lost``). Runs in a
        daemon thread started by ``start_renewing``.

        Lost means: no renewal succeeded within ``renew_deadline_s`` of the start of the
        last successful one (client-go's ``renew``), or the Lease names another holder.
        Attempts are ``retry_s`` apart; after a failure the next one waits at most until
        just before the deadline (``next_attempt_in``), so an outage shorter than the renew
        deadline always meets one attempt after it ends. Any error is a failed attempt,
        logged as a warning (no traceback), so the thread never dies while the process
        believes it leads. Lost is logged once, as an ERROR; it is not reported when
        ``stop`` was set meanwhile (the process is already stopping)."""
        if self.renewed_at is None:
            self.renewed_at = self._monotonic()
        wait_s = self.retry_s
        while not stop.wait(wait_s):
            ok = self._renew_once()
            if ok:
                wait_s = self.retry_s
                continue
            assert self.renewed_at is not None
            expired = self._monotonic() - self.renewed_at >= self.renew_deadline_s
            if not expired and self._holder_is_me():
                wait_s = self.next_attempt_in()
                continue
            self.leader = False
            if stop.is_set():
                return
            log.error(
                "lost the lease %s/%s (%s)",
                self.namespace,
                self.name,
                f"not renewed within {self.renew_deadline_s:g} s" if expired else "another holder",
            )
            if self._on_lost is not None:
                self._on_lost()
            return

    def next_attempt_in(self) -> float:
        """Seconds until the next renewal attempt after a failed one: ``retry_s``, or less
        so that one attempt starts a margin before the renew deadline (``FINAL_ATTEMPT_S``,
        at most a quarter of ``retry_s``); never less than that margin, so attempts never
        follow each other without a pause."""
        assert self.renewed_at is not None
        margin = min(FINAL_ATTEMPT_S, self.retry_s / 4)
        left = self.renewed_at + self.renew_deadline_s - self._monotonic()
        return max(min(self.retry_s, left - margin), margin)

    def _renew_once(self) -> bool:
        """One renewal attempt; False (logged as a warning) on any failure."""
        try:
            ok = self._attempt()
            self._reachability.ok()
            return ok
        except ApiError as exc:
            self._reachability.ok()
            log.warning("lease renewal failed: %s %s", exc.status.code, exc.status.message)
        except httpx.HTTPError as exc:  # transport errors: keep trying until the deadline
            self._reachability.failed(exc)
            log.warning("lease renewal failed: %s", exc)
        except Exception as exc:  # an answer lightkube cannot read (client.garbled)
            log.warning("lease renewal failed: %s: %s", type(exc).__name__, exc)
        return False

    def _holder_is_me(self) -> bool:
        try:
            lease = self._client.get(Lease, self.name, namespace=self.namespace)
        except ApiError as exc:
            if exc.status.code == 404:
                return False
            log.warning("lease read failed: %s", exc.status.message)
            return True  # cannot tell: still ours until the renew deadline says otherwise
        except Exception as exc:  # transport errors, or an answer lightkube cannot parse
            log.warning("lease read failed: %s", exc)
            return True
        return bool(lease.spec and lease.spec.holderIdentity == self.identity)

    def start_renewing(self, stop: threading.Event) -> threading.Thread:
        """Run ``keep`` in a daemon thread."""
        t = threading.Thread(target=self.keep, args=(stop,), name="lease-renew", daemon=True)
        t.start()
        return t

    def release(self) -> None:
        """Give the lease up at a clean shutdown (renewTime in the past), so a standby need
        not wait for it to expire."""
        if not self.leader:
            return
        try:
            lease = self._client.get(Lease, self.name, namespace=self.namespace)
            if lease.spec and lease.spec.holderIdentity == self.identity:
                lease.spec.holderIdentity = ""
                lease.spec.renewTime = _micro(datetime(1970, 1, 1, tzinfo=UTC))  # type: ignore[assignment]
                self._client.replace(lease)
        except ApiError as exc:
            log.warning("lease release failed: %s", exc.status.message)
        except Exception as exc:  # transport errors, or an answer lightkube cannot read
            log.warning(
                "lease release failed (the standby waits for it to expire): %s: %s",
                type(exc).__name__,
                exc,
            )
        self.leader = False
