"""The disruption controller: one command per pass, validated, then orchestrated.

Karpenter's ``disruption.Controller`` and orchestration queue (karpenter
``pkg/controllers/disruption/controller.go`` ``Controller.Reconcile`` and ``disrupt``,
``validation.go`` ``Validate``, ``queue.go`` ``Queue.StartCommand`` and ``Queue.Reconcile``):

* A pass collects candidates, builds the budget mapping and tries the methods in order
  (``methods.ORDER``); the first command ends it. With no command the controller sleeps
  until the cluster changes (``kick``) or until a node's ``consolidateAfter`` or a budget
  window passes, so long simulations skip idle passes (Karpenter keeps a cluster-state
  generation for the same purpose).
* Emptiness and consolidation commands wait ``validation_delay_s`` (15 s) and are checked
  again: the candidates must still be candidates within budget, and re-simulating must give
  the same kind of command (a Replace may only widen its instance types). Drift is not
  validated.
* Executing: taint the candidates ``karpenter.sh/disrupted:NoSchedule``, launch the
  replacements (a failed launch drops the command and un-taints), mark the candidates for
  deletion, wait until every replacement is initialized, then drain the candidates through
  the termination controller (PDBs respected). A replacement that disappears before it is
  initialized fails the command: the candidates are un-tainted and kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from joiner.api import timeline
from joiner.api.clock import Clock
from joiner.api.logkeys import ref
from joiner.api.timeline import Timeline
from joiner.controllers.disruption import methods as m
from joiner.controllers.disruption.budgets import BudgetMapping, next_change
from joiner.controllers.disruption.candidates import Candidate, collect, consolidatable_at
from joiner.controllers.disruption.command import Command, Context, Replacement
from joiner.controllers.disruption.drift import CloudDrift, TypesOf
from joiner.controllers.disruption.history import VerdictHistory
from joiner.controllers.disruption.memo import VerdictMemo, World
from joiner.controllers.disruption.verdicts import DisruptionMethod, Reason, Verdict
from joiner.controllers.provisioning.provisioner import Provisioner
from joiner.controllers.termination.controller import DISRUPTED_TAINT, Terminator, cordon
from joiner.state.cluster import ClusterState, NodeClaim

log = logging.getLogger(__name__)

#: Karpenter ``commandValidationDelay``.
VALIDATION_DELAY_S = 15.0
#: Karpenter's ``pollingPeriod`` when a pass found nothing to do.
POLL_S = 10.0
#: Run time 0 is this UTC instant unless the scenario says otherwise (budget schedules are
#: cron expressions in UTC): a Monday midnight.
DEFAULT_EPOCH = datetime(2025, 1, 6, tzinfo=UTC)


@dataclass
class DisruptionStats:
    """Totals for the summary's ``disruptions``.

    Attributes:
        by_method: commands executed per method.
        pods_evicted: pods on candidates when their drain started.
        savings_per_hour: the executed commands' summed savings, USD per hour.
        commands: a record per executed command (method, action, nodes, replacements, at).
        rejected: commands dropped at validation or by a failed replacement.
    """

    by_method: dict[str, int] = field(default_factory=dict)
    pods_evicted: int = 0
    savings_per_hour: float = 0.0
    commands: list[dict[str, object]] = field(default_factory=list)
    rejected: int = 0


@dataclass
class _Running:
    command: Command
    replacements: list[NodeClaim]


class DisruptionController:
    """Emptiness, drift and consolidation for the NodePools in ``state``.

    ``trigger`` asks the provisioner for a pass (pods on nodes marked for deletion are
    demand). Time comes from ``clock``; ``epoch`` is the UTC instant of run time 0.
    """

    def __init__(
        self,
        state: ClusterState,
        provisioner: Provisioner,
        terminator: Terminator,
        types_of: TypesOf,
        clock: Clock,
        timeline_: Timeline,
        *,
        trigger: Callable[[], None] | None = None,
        spot_to_spot: bool = False,
        cloud_drift: CloudDrift | None = None,
        epoch: datetime = DEFAULT_EPOCH,
        validation_delay_s: float = VALIDATION_DELAY_S,
        poll_s: float = POLL_S,
    ) -> None:
        self._state = state
        self._provisioner = provisioner
        self._terminator = terminator
        self._types_of = types_of
        self._clock = clock
        self._timeline = timeline_
        self._trigger = trigger
        self.spot_to_spot = spot_to_spot
        self._cloud_drift = cloud_drift
        self.epoch = epoch
        self.validation_delay_s = validation_delay_s
        self.poll_s = poll_s
        self.stats = DisruptionStats()
        #: Called with each command once it is under way (its replacements launched).
        self.command_listeners: list[Callable[[Command], None]] = []
        self.pass_listeners: list[Callable[[Context, list[Candidate]], None]] = []
        #: Called with a running command's reason and replacements each time the
        #: orchestration looks at a command still waiting for them (Karpenter ``queue.go``
        #: waitOrTerminate's look at each replacement).
        self.waiting_listeners: list[Callable[[Reason, list[NodeClaim]], None]] = []
        #: Called with a command's reason, a candidate's node and NodeClaim names when its
        #: drain starts (Karpenter ``queue.go`` waitOrTerminate's NodeClaim delete).
        self.terminating_listeners: list[Callable[[Reason, str, str], None]] = []
        self._running: list[_Running] = []
        self._validating = False
        self._pass_at: float | None = None
        self._idle_generation: int | None = None
        self.passes = 0
        #: Consolidation failures kept while the world is unchanged (``memo``).
        self._memo = VerdictMemo()
        #: Each node's verdict changes, when asked for (``--explain``); None records nothing.
        self.history: VerdictHistory | None = None

    # -- scheduling of passes -------------------------------------------------------------

    def start(self) -> None:
        """Schedule the first pass."""
        self._schedule(self.poll_s)

    def kick(self) -> None:
        """The cluster changed: run a pass within ``poll_s`` and check running commands."""
        self._advance_running()
        self._schedule(self.poll_s)

    def _schedule(self, delay_s: float) -> None:
        at = self._clock.now() + delay_s
        if self._pass_at is not None and self._pass_at <= at:
            return
        self._pass_at = at
        self._clock.after(delay_s, lambda: self._run(at), label="disruption-pass")

    def _run(self, at: float) -> None:
        if self._pass_at != at:
            return  # superseded by an earlier pass
        self._pass_at = None
        if self._validating:
            return
        if self._idle_generation == self._state.generation:
            self._sleep()
            return
        command = self.reconcile()
        if command is None:
            self._idle_generation = self._state.generation
            self._sleep()

    def _sleep(self) -> None:
        """Wake when a node's consolidateAfter or a budget window passes."""
        now_s = self._clock.now()
        wake: float | None = None
        for node in self._state.live_nodes():
            if node.deleting:
                continue
            claim = self._state.claim_of(node)
            pool = self._state.nodepools.get(claim.nodepool) if claim is not None else None
            if pool is None:
                continue
            at = consolidatable_at(node, pool)
            if at is not None and at > now_s and (wake is None or at < wake):
                wake = at
        now = self.now()
        for pool in self._state.nodepools.values():
            change = next_change(pool.budgets, now)
            if change is not None:
                at = now_s + (change - now).total_seconds()
                if at > now_s and (wake is None or at < wake):
                    wake = at
        if wake is not None:
            # Time alone changes the answer then: that pass must not be skipped.
            self._idle_generation = None
            self._schedule(max(wake - now_s, 0.0) + 1e-6)

    def now(self) -> datetime:
        """The UTC instant of the clock's current run time."""
        return self.epoch + timedelta(seconds=self._clock.now())

    # -- a pass ---------------------------------------------------------------------------

    def context(self, *, elapsed: bool = False) -> tuple[Context, list[Candidate]]:
        """A fresh pass context and the candidates (``elapsed``: consolidateAfter passed)."""
        now = self.now()
        ctx = Context(
            state=self._state,
            provisioner=self._provisioner,
            types_of=self._types_of,
            now_s=self._clock.now(),
            now=now,
            budgets=BudgetMapping.build(self._state, now),
            spot_to_spot=self.spot_to_spot,
            cloud_drift=self._cloud_drift,
            scheduler=self._provisioner.scheduler,
        )
        self._memo.begin(lambda: World(self._state, self._provisioner, self.spot_to_spot))
        ctx.memo = self._memo
        ctx.pending = self.pending_disruption()
        found = collect(self._state, self._clock.now(), elapsed=elapsed)
        ctx.reasons.update(found.excluded)
        return ctx, found.candidates

    def compute(self, *, elapsed: bool = False) -> tuple[Command | None, Context]:
        """The first command the methods produce now, with the pass context (its
        ``reasons`` say why other nodes were left alone); ``pass_listeners`` hear of the
        context and the candidates (controller mode's Events); ``history``, when set,
        records every node's verdict."""
        ctx, candidates = self.context(elapsed=elapsed)
        if self.history is not None:
            ctx.reason_methods = {}
        command = _first_command(ctx, candidates)
        for listener in self.pass_listeners:
            listener(ctx, candidates)
        if self.history is not None:
            self._record_pass(ctx, candidates, command)
        return command, ctx

    def _record_pass(
        self, ctx: Context, candidates: list[Candidate], command: Command | None
    ) -> None:
        """The pass's verdicts into ``history``: every live node with a NodeClaim the pass
        saw (candidates and the nodes candidate selection left out)."""
        assert self.history is not None
        seen = [c.name for c in candidates]
        names = set(seen)
        seen += sorted(n for n in ctx.reasons if n not in names)
        self.history.record_pass(ctx.now_s, ctx.reasons, ctx.reason_methods or {}, seen, command)

    def reconcile(self) -> Command | None:
        """One pass: compute a command and validate (after the delay) or execute it."""
        self.passes += 1
        command, _ctx = self.compute()
        if command is None:
            return None
        if command.method == m.DRIFT:
            self.execute(command)
            self._schedule(1.0)
        else:
            self._validating = True
            self._clock.after(
                self.validation_delay_s, lambda: self._validate(command), label="validation"
            )
        return command

    def _validate(self, command: Command) -> None:
        self._validating = False
        fresh = self.revalidate(command)
        if fresh is None:
            self.stats.rejected += 1
            log.info("disruption command dropped at validation nodes=%s", command.names)
        else:
            self.execute(fresh)
        self._schedule(1.0)

    def revalidate(self, command: Command) -> Command | None:
        """``command`` as it stands now, or None when it is no longer valid."""
        ctx, candidates = self.context()
        by_name = {c.name: c for c in candidates}
        now_cands = [by_name.get(c.name) for c in command.candidates]
        if command.method == m.EMPTINESS:
            return _still_empty(ctx, now_cands)
        valid = [c for c in now_cands if c is not None]
        if len(valid) != len(now_cands) or not _still_consolidatable(ctx, valid):
            return None
        again = m.consolidate(ctx, valid, command.method)
        if not isinstance(again, Command) or again.action != command.action:
            return None
        if command.replacements:
            before = {it.name for it in command.replacements[0].instance_types}
            after = {it.name for it in again.replacements[0].instance_types}
            if not before <= after:
                return None
        return again

    # -- orchestration --------------------------------------------------------------------

    def execute(self, command: Command) -> None:
        """Taint, launch replacements, mark for deletion; drain once replacements are up."""
        now = self._clock.now()
        for c in command.candidates:
            cordon(c.node)
            c.claim.disruption_reason = command.reason.value
        claims: list[NodeClaim] = []
        names = tuple(command.names)
        for rep in command.replacements:
            claim = self._provisioner.create_nodeclaim(
                rep.new,
                capacity_types=rep.capacity_types,
                instance_types=rep.instance_types,
                replaces=names,
            )
            claims.append(claim)
            if claim.deleted_at_s is not None:
                self._abort(command, "replacement launch failed")
                return
        for c in command.candidates:
            c.node.deleting = True
            self._timeline.record(
                timeline.DISRUPTION,
                node=c.name,
                detail=f"{command.method} {command.action} ({command.reason})"
                + (f" -> {', '.join(x.name for x in claims)}" if claims else ""),
            )
        method = command.method.value
        self.stats.by_method[method] = self.stats.by_method.get(method, 0) + 1
        self.stats.savings_per_hour += command.savings_per_hour
        self.stats.commands.append(
            {
                "atSeconds": round(now, 3),
                "method": method,
                "action": command.action,
                "nodes": list(names),
                "replacements": [
                    _launched(c, r) for c, r in zip(claims, command.replacements, strict=True)
                ],
                "savingsPerHour": round(command.savings_per_hour, 6),
            }
        )
        log.info(
            "disruption method=%s action=%s nodes=%s savings-per-hour=%.4f",
            command.method,
            command.action,
            ",".join(names),
            command.savings_per_hour,
            extra=_disrupted_nodes(command),
        )
        if self.history is not None:
            self.history.record_command(now, command)
        for listener in self.command_listeners:
            listener(command)
        self._state.touch()
        self._running.append(_Running(command, claims))
        self._advance_running()
        if self._trigger is not None:
            self._trigger()

    def _abort(self, command: Command, why: str) -> None:
        self.stats.rejected += 1
        log.info(
            "disruption command failed nodes=%s reason=%s",
            command.names,
            why,
            extra=_disrupted_nodes(command),
        )
        for c in command.candidates:
            c.node.taints = tuple(t for t in c.node.taints if t != DISRUPTED_TAINT)
            c.node.deleting = False
            c.claim.disruption_reason = None
        self._state.touch()

    def _advance_running(self) -> None:
        # Classify first and store what is left before acting: a drain evicts pods, whose
        # listeners call ``kick`` and so come back here re-entrantly.
        failed: list[_Running] = []
        ready: list[_Running] = []
        still: list[_Running] = []
        for run in self._running:
            if any(r.deleted_at_s is not None for r in run.replacements):
                failed.append(run)
            elif all(r.initialized_at_s is not None for r in run.replacements):
                ready.append(run)
            else:
                still.append(run)
        self._running = still
        for run in still:
            for listener in self.waiting_listeners:
                listener(run.command.reason, run.replacements)
        for run in failed:
            self._abort(run.command, "a replacement disappeared before it was initialized")
        for run in ready:
            for c in run.command.candidates:
                if c.node.deleted_at_s is None and not c.node.draining:
                    self.stats.pods_evicted += sum(
                        1 for p in self._state.pods_on(c.name) if not p.daemon
                    )
                    for terminating in self.terminating_listeners:
                        terminating(run.command.reason, c.name, c.claim.name)
                    self._terminator.drain(c.node, f"disruption: {run.command.reason}")

    def pending_disruption(self) -> frozenset[str]:
        """The NodeClaims of commands waiting for their replacements: not deleted yet
        (Karpenter ``queue.go`` marks them pending disruption in ``NodePoolState``)."""
        return frozenset(c.claim.name for run in self._running for c in run.command.candidates)

    @property
    def busy(self) -> bool:
        """A command is being validated or waits for its replacements."""
        return self._validating or bool(self._running)


def _still_empty(ctx: Context, now_cands: list[Candidate | None]) -> Command | None:
    """An emptiness command revalidated: the candidates (as they are now, None for one that
    is gone) still empty, consolidatable, not blocked and within the ``Empty`` budget."""
    keep = []
    for c in now_cands:
        if c is None or not c.empty or not c.consolidatable or c.blocked is not None:
            continue
        if ctx.budgets.left(c.pool.name, m.EMPTY) < 1:
            continue
        ctx.budgets.take(c.pool.name, m.EMPTY)
        keep.append(c)
    return Command(m.EMPTINESS, keep) if keep else None


def _still_consolidatable(ctx: Context, cands: list[Candidate]) -> bool:
    """Every candidate is still unblocked, consolidatable and not empty, and each pool's
    ``Underutilized`` budget still allows its candidates."""
    if any(c.blocked is not None or not c.consolidatable or c.empty for c in cands):
        return False
    per_pool: dict[str, int] = {}
    for c in cands:
        per_pool[c.pool.name] = per_pool.get(c.pool.name, 0) + 1
    return all(ctx.budgets.left(pool, m.UNDERUTILIZED) >= n for pool, n in per_pool.items())


def _first_command(ctx: Context, candidates: list[Candidate]) -> Command | None:
    """The first command the methods produce, in Karpenter's order (``m.ORDER``; karpenter
    ``controller.go`` ``Controller.disrupt``). With ``ctx.reason_methods`` set, each reason
    a method gives or replaces is put down to that method."""
    for name, method in m.ORDER:
        before = dict(ctx.reasons) if ctx.reason_methods is not None else None
        command = method(ctx, candidates)
        if before is not None:
            _attribute(ctx, before, name)
        if command is not None:
            return command
    return None


def _attribute(ctx: Context, before: dict[str, Verdict], method: DisruptionMethod) -> None:
    """Put the reasons ``method`` set (new or replaced since ``before``) down to it."""
    assert ctx.reason_methods is not None
    for node, verdict in ctx.reasons.items():
        if before.get(node) is not verdict:
            ctx.reason_methods[node] = method


def _launched(claim: NodeClaim, expected: Replacement) -> str:
    """``instanceType/zone/capacityType`` where the replacement launched: the fleet may pick
    another zone or type among the options than the cheapest one the command expected; the
    expected offering until the cloud has launched it (controller mode launches apart)."""
    if claim.instance is not None:
        it, offering = claim.instance.instance_type, claim.instance.offering
    else:
        it, offering = expected.instance_type, expected.offering
    return f"{it.name}/{offering.zone}/{offering.capacity_type}"


def _disrupted_nodes(command: Command) -> dict[str, list[dict[str, dict[str, str]]]]:
    """The ``extra=`` of a command's log line: its candidates as Karpenter's
    ``disrupted-nodes`` key lists them, each ``{"Node": ref, "NodeClaim": ref}`` (Karpenter
    pkg/controllers/disruption/types.go ``Command.LogValues``)."""
    return {
        "disrupted-nodes": [
            {"Node": ref(c.name), "NodeClaim": ref(c.claim.name)} for c in command.candidates
        ]
    }
