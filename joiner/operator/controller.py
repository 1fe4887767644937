"""Controller mode's runtime (``joiner run``): the simulation's controllers on a
real Kubernetes API server, on an asyncio loop with the wall clock.

Reading this file shows the whole running system:

* ``WallClock`` implements the Clock port with ``loop.call_later``; time is seconds since
  the controller started (``time.monotonic``).
* Informers (``cluster/kube/informer.py``, one thread per kind) list and watch NodePools,
  EC2NodeClasses, NodeClaims, Nodes, Pods, DaemonSets, PDBs, PersistentVolumeClaims,
  PersistentVolumes and StorageClasses (volume topology, as ``joiner plan``), and
  NodeOverlays with the ``NodeOverlay`` gate on; their deliveries are
  forwarded to the loop (``call_soon_threadsafe``), where ``ClusterFeed`` turns them into
  ``ClusterState``. Every controller runs on the loop's thread only.
* The controllers are the simulation's, from the same ``operator/composition.py``
  ``new_controllers``: Lifecycle, Batcher + Provisioner, Terminator (with the Eviction
  port), InterruptionController, DisruptionController, ExpirationController, and the two
  only a real cluster needs, LivenessController and GarbageCollector.
* After every loop turn that ran a controller or applied a delivery, ``KubeActuator.sync``
  writes what changed (NodeClaims, kwok Nodes, taints, deletions); a 5 s resync retries
  failed writes and re-triggers provisioning for pods still pending. What each event
  triggers (the event flow) is ``operator/controller_reactions.py``, which
  ``ControllerRuntime`` inherits; this file builds and hooks it up.
* Leader election (a Lease) gates everything but the HTTP endpoints: a standby waits, then
  builds its state from the API like a restart does. Losing the lease exits the process.
  An API server outage shorter than the renew deadline is ridden out: renewals retry,
  informers re-list and resume their watches.
* Fenced writes (``cluster/kube/fence.py``): every write to the API server and to the
  cloud checks first that the lease is held and unexpired by this process's monotonic
  clock since its last successful renewal; a write that fails the check is dropped and
  the process stops at once (exit 1), so a leader paused past its lease never acts.
* Interruption messages come from an SQS queue (``interruptionQueue`` in the settings,
  ``--cloud aws`` or simulated: EventBridge messages as AWS delivers them; a moto server
  in the tests), polled in a thread.
* ``--dry-run`` (shadow mode): the same informers and controllers, no Lease, and an
  actuator and Event recorder that write nothing but log and report each write they would
  make (``--report FILE``: JSON lines). With ``--cloud aws`` the provider reads EC2 and
  plans launches without calling CreateFleet or any other write (its clients refuse them),
  no launch template is collected, and interruption messages stay on the queue.

Writes are made with lightkube's synchronous client on the loop's thread; each is one
HTTP request to the API server, which is what bounds a turn's duration.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from joiner.api.errors import InputError
from joiner.api.jsontext import json_text
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.events import CloudEvent
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.actuator import KubeActuator
from joiner.cluster.kube.configstatus import ConfigStatus
from joiner.cluster.kube.events import KarpenterEvents
from joiner.cluster.kube.feed import ClusterFeed
from joiner.cluster.kube.fence import CLOUD_WRITES, KUBE_WRITES, Fence, LeaseLostError, fenced
from joiner.cluster.kube.informer import Informer
from joiner.cluster.kube.leader import LeaderElector
from joiner.cluster.kube.metrics import MeteredCloudProvider, Metrics, message_type, serve
from joiner.cluster.kube.timeline import KubeTimeline
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.operator.composition import (
    ControllerHost,
    Evict,
    GarbageCollection,
    Hooks,
    Options,
    Ports,
    new_controllers,
)
from joiner.operator.controller_reactions import RESYNC_S, ControllerReactions
from joiner.operator.controller_settings import (
    ControllerSettings,
    cloud_provider,
    interruption_settings,
    repair_policies,
)
from joiner.operator.kube_metrics import MetricsWiring
from joiner.operator.live import cluster_source
from joiner.operator.safety import check_simulated_cluster
from joiner.operator.wallclock import WallClock
from joiner.state.cluster import ClusterState

log = logging.getLogger(__name__)

#: ``/healthz`` fails once the API server has been unreachable this long.
API_UNREACHABLE_UNHEALTHY_S = 30.0
WATCHED = (
    kube.NODEPOOL,
    kube.EC2NODECLASS,
    kube.NODECLAIM,
    kube.NODE,
    kube.POD,
    kube.DAEMONSET,
    kube.PDB,
    kube.PVC,
    kube.PV,
    kube.STORAGECLASS,
)


class ControllerRuntime(ControllerReactions, ControllerHost):
    """``joiner run``: builds everything (module docstring) and runs until SIGTERM/SIGINT
    or a lost lease. One instance runs once."""

    def __init__(
        self,
        kubeconfig: Path | None,
        *,
        context: str | None = None,
        cloud: str = "simulated",
        settings: ControllerSettings | None = None,
        dry_run: bool = False,
        metrics_port: int | None = 8080,
        health_port: int | None = 8081,
        report: TextIO | None = None,
        identity: str | None = None,
        unhealthy_after_s: float = API_UNREACHABLE_UNHEALTHY_S,
        allow_simulated_nodes: bool = False,
    ) -> None:
        if cloud not in ("simulated", "aws"):
            raise InputError(f"unknown cloud {cloud!r}; use simulated or aws", field="--cloud")
        self.kubeconfig = kubeconfig
        #: ``--context``: the kubeconfig context every client of this run uses.
        self.context = context
        self.cloud_name = cloud
        self.settings = settings or ControllerSettings()
        #: What the informers list and watch: with kwokInstanceTypes KWOKNodeClasses instead
        #: of EC2NodeClasses (a Karpenter-kwok cluster serves no EC2NodeClass).
        self.watched = (
            tuple(kube.KWOKNODECLASS if k is kube.EC2NODECLASS else k for k in WATCHED)
            if self.settings.kwokInstanceTypes
            else WATCHED
        )
        if self.settings.featureGates.nodeOverlay:  # as Karpenter: watched only when gated on
            self.watched = (*self.watched, kube.NODEOVERLAY)
        self.dry_run = dry_run
        #: ``--cloud simulated`` on a cluster with Nodes kwok does not manage: refused at
        #: start (``operator/safety.py``) unless this is set or it is a dry run.
        self.check_nodes = cloud == "simulated" and not dry_run and not allow_simulated_nodes
        #: The start-up refusal ``run`` raises once stopped (None: none).
        self.refusal: InputError | None = None
        self.metrics_port = metrics_port
        self.health_port = health_port
        self._report_file = report
        self.identity = identity or f"{socket.gethostname()}-{os.getpid()}"
        self.metrics = Metrics()
        self.reachability = kube.ApiReachability(unhealthy_after_s)
        self.elector: LeaderElector | None = None
        self.fence = Fence(None)
        self.ready = False
        self.exit_code = 0
        #: Why the process exits with ``exit_code`` 1 (logged once, at the end).
        self._why = ""
        self._stop = threading.Event()
        self._sync_scheduled = False
        self.servers: list[Any] = []

    # -- report (dry-run) -------------------------------------------------------------------

    def _report(self, entry: dict[str, Any]) -> None:
        if self._report_file is not None:
            self._report_file.write(json_text(entry, sort_keys=True) + "\n")
            self._report_file.flush()

    # -- entry point --------------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; returns the exit code (0 clean stop, 1 lost lease or fatal).

        Raises:
            InputError: a port cannot be bound (named by its flag); ``--cloud simulated``
                on a cluster whose Nodes kwok does not manage (``operator/safety.py``).
        """
        for port in sorted({p for p in (self.metrics_port, self.health_port) if p is not None}):
            try:
                server = serve(
                    port,
                    metrics=self.metrics if port == self.metrics_port else None,
                    ready=self._is_ready,
                    healthy=self.reachability.healthy,
                )
            except OSError as exc:
                for started in self.servers:
                    started.shutdown()
                    started.server_close()
                flag = "--metrics-port" if port == self.metrics_port else "--health-port"
                raise InputError(
                    f"cannot listen on port {port}: {exc.strerror or exc}", field=flag
                ) from exc
            self.servers.append(server)
        code = asyncio.run(self._main())
        if self.refusal is not None:
            raise self.refusal
        return code

    def _is_ready(self) -> bool:
        """``/readyz``: informers synced (a standby: waiting), and nothing refusing the
        Lease (its namespace missing, no RBAC)."""
        return self.ready and (self.elector is None or self.elector.problem is None)

    def stop(self) -> None:
        """Ask the runtime to stop (thread-safe)."""
        self._stop.set()

    async def _main(self) -> int:
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._signalled, stopped)
            except (NotImplementedError, RuntimeError, ValueError):
                log.debug("no handler for %s (not the main thread)", sig)
        threading.Thread(
            target=lambda: (self._stop.wait(), loop.call_soon_threadsafe(stopped.set)),
            daemon=True,
        ).start()
        self.client = kube.connect(
            self.kubeconfig, context=self.context, user_agent=self.user_agent
        )
        elector: LeaderElector | None = None
        le = self.settings.leaderElection
        if not self.dry_run and le.enabled:
            elector = self.elector = LeaderElector(
                # Its own client: a renewal attempt times out at the renew deadline.
                kube.connect(
                    self.kubeconfig,
                    context=self.context,
                    timeout_s=le.renewDeadlineSeconds,
                    user_agent=self.user_agent,
                ),
                le.namespace,
                le.name,
                self.identity,
                lease_duration_s=le.leaseDurationSeconds,
                renew_deadline_s=le.renewDeadlineSeconds,
                retry_s=le.retryPeriodSeconds,
                on_lost=lambda: self._call_soon(
                    loop, self._lost, stopped, "the lease is no longer held"
                ),
                reachability=self.reachability,
            )
            self.fence = Fence(
                elector.write_allowed,
                lambda _what: self._fenced(loop, stopped),
                on_dropped=self.metrics.fenced_writes.inc,
            )
            log.info("waiting for the lease %s/%s as %s", le.namespace, le.name, self.identity)
            # A standby is ready (it serves its purpose by waiting); the leader is ready
            # once its informers have synced and its controllers run.
            self.ready = True
            acquired = await loop.run_in_executor(None, elector.acquire, self._stop)
            if not acquired:
                return 0
            self.ready = False
            elector.start_renewing(self._stop)
        self._build(loop)
        if await self._start_informers(loop, stopped):
            self.metrics.leader.set(0 if self.dry_run else 1)
            log.info("controller running (cloud=%s, dry-run=%s)", self.cloud_name, self.dry_run)
            await stopped.wait()
        self._stop.set()
        if elector is not None and self.exit_code == 0:
            elector.release()
        for server in self.servers:
            server.shutdown()
        if self.exit_code != 0:
            # The one line that says why the process ends (no traceback): a restart (the
            # Deployment's) makes it a standby, or the leader again.
            log.error("stopped leading: exiting with code %d (%s)", self.exit_code, self._why)
        return self.exit_code

    def _signalled(self, stopped: asyncio.Event) -> None:
        log.info("stopping")
        self._stop.set()
        stopped.set()

    @staticmethod
    def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
        loop.call_soon_threadsafe(fn, *args)

    def _lost(self, stopped: asyncio.Event, why: str) -> None:
        if self.exit_code == 0:
            self.exit_code = 1
            self._why = why
        self._stop.set()
        stopped.set()

    def _fenced(self, loop: asyncio.AbstractEventLoop, stopped: asyncio.Event) -> None:
        """The fence refused a write (any thread): stop acting and exit 1."""
        self._stop.set()
        if self.elector is not None:
            self.elector.leader = False
        self._call_soon(loop, self._lost, stopped, "a write was fenced")

    @property
    def user_agent(self) -> str:
        """``joiner/<version> (<identity>)``: the API server's audit log names the replica."""
        from joiner import __version__

        return f"joiner/{__version__} ({self.identity})"

    # -- wiring ---------------------------------------------------------------------------

    def _build(self, loop: asyncio.AbstractEventLoop) -> None:
        s = self.settings
        self.clock = WallClock(
            loop,
            self._schedule_sync,
            lambda where: self.metrics.reconcile_errors.labels(where=where).inc(),
        )
        self.state = ClusterState()
        self.catalog = Catalog.load()
        self.cloud = cloud_provider(
            self.settings, self.cloud_name, self.clock, self.catalog, dry_run=self.dry_run
        )
        #: What the controllers get: the cloud with every write fenced, and metered.
        cloud: Any = MeteredCloudProvider(
            fenced(self.cloud, self.fence, CLOUD_WRITES), self.metrics, self.cloud_name
        )
        # Writes: fenced first; a transient failure answers as a 503 refusal, which the
        # actuator and the Event sink retry on their next pass (client.Answering).
        writer = None
        if not self.dry_run:
            writer = fenced(kube.Answering(self.client, self.reachability), self.fence, KUBE_WRITES)
            # The last gate, as the request leaves: a pause between the call's check and
            # the send must not carry a write past the hand-over to another replica.
            kube.guard_writes(self.client, self.fence.check)
        self.timeline = KubeTimeline(
            writer,
            self.state,
            dry_run=self.dry_run,
            report=self._report,
            namespace=s.eventNamespace,
        )
        built = new_controllers(
            Ports(
                self.state,
                cloud,
                self.clock,
                self.timeline,
                s.region,
                random.Random(int.from_bytes(os.urandom(8), "big")),
                self.cloud.get_instance_types,
                self.cloud.is_drifted,
            ),
            Options(
                packing=s.packing,
                interruption=interruption_settings(self.settings, None),
                spot_to_spot=s.featureGates.spotToSpotConsolidation,
                epoch=datetime.now(UTC),
                batch_idle_s=s.batchIdleDuration,
                batch_max_s=s.batchMaxDuration,
                #: Node repair (Karpenter's ``NodeRepair`` feature gate, off by default).
                repair=repair_policies(s, None) if s.featureGates.nodeRepair else None,
                registration_timeout_s=s.registrationTimeoutSeconds,
                garbage_collection=GarbageCollection(
                    s.garbageCollectionIntervalSeconds, s.orphanInstanceGraceSeconds
                ),
                static_capacity=s.featureGates.staticCapacity,
            ),
            Hooks(
                flush=self._provision,
                unschedulable=self._retry_later,
                launched=self._launched,
                changed=self._changed,
                cluster=lambda lifecycle: self._cluster(writer, lifecycle),
            ),
        )
        self.take(built)
        # Karpenter's provisioner skips NodePools that are not Ready.
        self.provisioner.pool_ready = self.config_status.pool_ready
        assert built.liveness is not None and built.gc is not None
        self.liveness = built.liveness
        self.gc = built.gc
        # Event flow (new_controllers hooks the controllers; here the API's feed).
        self.feed.on_config.append(self._config)
        self.feed.on_pending.append(lambda _p: self._pod_pending())
        self.feed.on_bound.append(lambda _p: self.disruption.kick())
        self.feed.on_pod_gone.append(lambda _p: self.disruption.kick())
        self.feed.on_running.append(self._running)
        self.feed.on_ready.append(self._node_ready)
        self.feed.on_node_gone.append(lambda _n: self._node_gone())
        self.feed.on_claim_deleted.append(self._claim_deleted)
        self.events = KarpenterEvents(
            self.timeline, self.state, self.clock.now, lambda: datetime.now(UTC)
        )
        self._post_events()
        self.wiring = MetricsWiring(self.metrics, self.state)
        self.timeline.listeners.append(self.wiring.timeline)
        self.disruption.command_listeners.append(self.wiring.command)
        self.disruption.pass_listeners.append(self.wiring.disruption_pass)
        self.feed.on_seen_unbound.append(self.wiring.pending)
        self.feed.on_bound.append(self.wiring.bound)
        self.feed.on_pod_gone.append(self.wiring.gone)

    def _post_events(self) -> None:
        """Karpenter's Events (``cluster/kube/events.py``) where each decision is made: the
        provisioner's, the NodeClaim lifecycle's, the disruption orchestration's, the
        termination controller's and the Eviction port's typed listeners."""
        ev = self.events
        self.lifecycle.launch_listeners.append(ev.nominated)
        self.lifecycle.failed_listeners.append(ev.launch_failed)
        self.provisioner.nominated_listeners.append(ev.nominated_existing)
        self.provisioner.unschedulable_listeners.append(ev.failed_scheduling)
        self.provisioner.incompatible_listeners.append(ev.no_compatible_instance_types)
        self.feed.on_registered.append(lambda c: ev.condition(c, "Registered"))
        self.disruption.pass_listeners.append(
            lambda ctx, cands: ev.disruption_pass(ctx.reasons, cands)
        )
        self.disruption.pass_listeners.append(
            lambda ctx, _c: ev.budgets_blocked(ctx.budgets.blocked)
        )
        self.disruption.waiting_listeners.append(ev.disruption_waiting)
        self.disruption.terminating_listeners.append(ev.disruption_terminating)
        self.terminator.deadline_listeners.append(
            lambda node, deadline_s, first: ev.grace_period_expiring(node, deadline_s, claim=first)
        )
        self.terminator.forced_listeners.append(ev.disrupted)
        self.terminator.pdb_listeners.append(
            lambda node, pod: ev.eviction_refused(pod.namespace, pod.name, node)
        )
        self.terminator.waiting_listeners.append(ev.drain_waiting)
        self.actuator.evicted_listeners.append(ev.evicted)
        self.actuator.refused_listeners.append(ev.eviction_refused)

    def _cluster(self, writer: Any, lifecycle: Lifecycle) -> Evict:
        """The cluster adapter: the informers' feed into the state and the actuator that
        writes it back (``writer`` None: a dry run); returns the Eviction port."""
        self.feed = ClusterFeed(
            self.state,
            self.clock,
            lifecycle,
            self._adopt_instance,
            source=cluster_source(self.kubeconfig, self.context),
            wall_now=lambda: datetime.now(UTC),
        )
        self.feed.static_capacity = self.settings.featureGates.staticCapacity
        self.actuator = KubeActuator(
            writer,
            self.state,
            self.feed,
            lifecycle,
            self.metrics,
            create_nodes=self.cloud_name == "simulated",
            dry_run=self.dry_run,
            report=self._report,
        )
        status_source = getattr(self.cloud, "node_class_status", None)
        self.config_status = ConfigStatus(
            writer,
            self.state,
            self.feed,
            self.metrics,
            node_class_status=status_source,
            dry_run=self.dry_run,
        )
        return self.actuator.evict

    async def _start_informers(
        self, loop: asyncio.AbstractEventLoop, stopped: asyncio.Event
    ) -> bool:
        """Start the informers and, once every kind has synced, the controllers; False
        when stopped first (SIGTERM while the API server cannot be reached)."""
        synced = asyncio.Event()

        def deliver_on_loop(kind: kube.Kind, event: str, docs: list[dict[str, Any]]) -> None:
            try:
                self.feed.deliver(kind, event, docs)
            except LeaseLostError:
                log.debug("applying %s %s stopped by the fence", event, kind.kind)
            except Exception:
                log.exception("applying %s %s failed", event, kind.kind)
                self.metrics.reconcile_errors.labels(where=f"feed {kind.kind}").inc()
            if not self.feed.started and all(k.kind in self.feed.synced for k in self.watched):
                synced.set()
            if self.feed.started:
                self._schedule_sync()

        def deliver(kind: kube.Kind, event: str, docs: list[dict[str, Any]]) -> None:
            loop.call_soon_threadsafe(deliver_on_loop, kind, event, docs)

        self.informers = [
            Informer(
                lambda: kube.connect(self.kubeconfig, context=self.context),
                kind,
                deliver,
                self._stop,
                reachability=self.reachability,
            )
            for kind in self.watched
        ]
        for informer in self.informers:
            informer.start()
        waits = [asyncio.ensure_future(synced.wait()), asyncio.ensure_future(stopped.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        if not synced.is_set():
            log.info("stopped before the informers synced")
            return False
        if self.check_nodes:
            try:
                check_simulated_cluster(self.feed.of(kube.NODE).values())
            except InputError as exc:
                self.refusal = exc
                return False
        self.clock.run(self._start_controllers, "start")
        self.ready = True
        return True

    def _start_controllers(self) -> None:
        self.feed.start()
        self.actuator.adopt()
        for claim in self.state.live_nodeclaims():
            self.expiration.watch(claim)
            self.liveness.watch(claim)
        for name in self.feed.deleting_claims:
            # Deleted while no controller ran: drain within PDBs now (the finalizer held it).
            self._claim_deleted(self.state.nodeclaims[name])
        for name in self.feed.unclaimed_nodes:
            # Its NodeClaim went while no controller ran: drained before the finalizer goes.
            doc = self.feed.of(kube.NODE)[name]
            self._unclaimed_node(self.state.nodes[name], str(doc["spec"]["providerID"]))
        self.gc.start()
        if self.health is not None:
            health = self.health
            self.feed.on_conditions.append(
                lambda _n: self.clock.after(0.0, health.reconcile, label="node-health")
            )
            health.start()
        self._start_launch_template_gc()
        self.disruption.start()
        if self.static is not None:
            self.static.start()
        if self.state.pending_pods():
            self.batcher.trigger()
        self.clock.after(RESYNC_S, self._resync, label="resync")
        if self.settings.interruptionQueue:
            self._start_queue(self.settings.interruptionQueue)

    def _start_launch_template_gc(self) -> None:
        """Once leading: cache the cluster's existing launch templates (AWS), then delete the
        expired ones every ``launchTemplateCleanupIntervalSeconds`` (Karpenter-AWS's
        ``hydrateCache`` and the cache janitor; ``cloudprovider/launchtemplates.py``)."""
        templates = getattr(self.cloud, "launch_templates", None)
        if templates is None or self.dry_run:
            return
        hydrate = getattr(templates, "hydrate", None)
        if hydrate is not None:
            try:
                hydrate()
            except Exception as exc:  # an AWSError: Karpenter logs it and carries on
                log.error("unable to hydrate the launch template cache: %s", exc)
        interval_s = self.settings.launchTemplateCleanupIntervalSeconds

        def collect() -> None:
            try:
                self.fence.check("delete expired launch templates")
                templates.collect()
            finally:
                self.clock.after(interval_s, collect, label="launch-template-gc")

        self.clock.after(interval_s, collect, label="launch-template-gc")

    def _start_queue(self, queue: str) -> None:
        from joiner.cloudprovider.aws import InterruptionQueue, RetrySettings, new_clients

        loop = self.clock.loop
        clients = new_clients(
            self.settings.region,
            endpoint_url=self.settings.awsEndpointURL,
            retries=RetrySettings(self.settings.awsRetryMode, self.settings.awsMaxAttempts),
            read_only=self.dry_run,
        )

        def handle(event: CloudEvent) -> None:
            # Raises while fenced: the message stays on the queue for the leader.
            self.fence.check(f"handle interruption message {event.kind}")
            self.metrics.interruption_messages.labels(message_type=message_type(event)).inc()
            loop.call_soon_threadsafe(
                self.clock.run, lambda: self.interruption.handle(event), "interruption"
            )

        # A URL, or a queue name as Karpenter's INTERRUPTION_QUEUE takes it (GetQueueUrl).
        is_url = queue.startswith(("https://", "http://"))
        new_queue: Any = InterruptionQueue if is_url else InterruptionQueue.from_name
        poller = new_queue(
            clients.sqs,
            queue,
            handle,
            sleep=time.sleep,
            wait_time_s=2,
            on_deleted=self.metrics.interruption_deleted.inc,
            on_queued_s=self.metrics.interruption_queue_duration.observe,
            wall_now_s=time.time,
            dry_run=self.dry_run,
        )
        threading.Thread(
            target=poller.run,
            args=(lambda: self._stop.is_set() or self.fence.tripped,),
            name="interruption-queue",
            daemon=True,
        ).start()
        log.info("polling interruption queue %s", poller.queue_url)


def install_crds(kubeconfig: Path | None, context: str | None = None) -> list[tuple[str, bool]]:
    """Server-side apply the CRDs to the cluster kubectl would talk to (``kube.connect``:
    ``kubeconfig``, else ``$KUBECONFIG``, ``~/.kube/config``, in-cluster; ``context``);
    returns each one's name and whether it was applied (``kube.apply_crds``).

    Raises:
        InputError: no kubeconfig found or it is unusable, or the API server refused a CRD.
    """
    return kube.apply_crds(kube.connect(kubeconfig, context=context))
