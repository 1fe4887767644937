"""Running an experiment template against the simulated cloud.

Each action starts when the actions in its ``startAfter`` have ended (time 0 for none), and
resolves its target then: instances by ``resourceTags`` (the NodeClass ``tags``, including
``Name``) or ``resourceArns``, narrowed by ``filters`` (``State.Name``,
``Placement.AvailabilityZone``), then ``selectionMode`` (``COUNT``/``PERCENT`` draw from the
seeded RNG); subnets by id or tags; roles by ARN (Joiner's own launches).

Effects, with AWS's documented timing:

* ``send-spot-instance-interruptions`` (D = durationBeforeInterruption): rebalance
  recommendation at once, the 2-minute warning at D - 2 min (the action ends then), reclaim
  at D;
* ``terminate-instances``: a shutting-down state change, the instance gone 5 s later;
* ``stop-instances``: a stopping state change, the instance stopped 30 s later: its node
  is NotReady; with ``startInstancesAfterDuration`` FIS starts it again then (the action
  ends at the restart) and its node comes back, unless a controller terminated it first
  (Karpenter does on the stopping event), which fails the action unless
  ``completeIfInstancesTerminated`` is true; without it the instance stays stopped and EC2
  keeps it out of service (gone, for the simulation);
* ``api-insufficient-instance-capacity-error``: for ``duration``, ``percentage`` % of
  Joiner's launches in the given zones (default all) fail with ICE;
* ``disrupt-connectivity``: for ``duration``, the subnets' zones are out: their nodes are
  unreachable (NotReady) and launches there fail;
* ``wait``: nothing, for ``duration``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from joiner.api import labels
from joiner.api.clock import Clock
from joiner.api.timeline import Timeline
from joiner.cloudprovider.events import (
    REBALANCE_RECOMMENDATION,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    CloudEvent,
)
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.types import Instance
from joiner.faults.template import (
    DISRUPT,
    ICE,
    SPOT_INTERRUPTIONS,
    STOP,
    TERMINATE,
    WAIT,
    Action,
    Target,
    Template,
)

FAULT = "faultInjected"
#: How long a terminate or stop takes to finish on EC2 (the node's last moments).
TERMINATE_S = 5.0
STOP_S = 30.0

ZoneOutage = Callable[[frozenset[str], float], None]
#: Take one instance's node out of service (NotReady) until a time, or for good (None).
InstanceOutage = Callable[[Instance, float | None], None]
RESTARTED = "instanceRestarted"


def action_duration_s(action: Action) -> float:
    """How long an action runs (what ``startAfter`` waits for)."""
    if action.action_id == STOP:
        return action.seconds("startInstancesAfterDuration") or 0.0
    if action.action_id == SPOT_INTERRUPTIONS:
        # It completes when the 2-minute interruption notice goes out.
        return (action.seconds("durationBeforeInterruption") or 120.0) - 120.0
    if action.action_id in (ICE, DISRUPT, WAIT):
        return action.seconds("duration") or 0.0
    return 0.0


def schedule(template: Template) -> dict[str, tuple[float, float]]:
    """Each action's (start, end) in seconds from the experiment's start."""
    out: dict[str, tuple[float, float]] = {}
    for name in template.order():
        a = template.actions[name]
        start = max((out[d][1] for d in a.start_after), default=0.0)
        out[name] = (start, start + action_duration_s(a))
    return out


def experiment_length_s(template: Template) -> float:
    """When the last action ends, plus the final reclaim of a spot interruption."""
    times = schedule(template)
    end = max((e for _, e in times.values()), default=0.0)
    for name, (start, _) in times.items():
        a = template.actions[name]
        if a.action_id == SPOT_INTERRUPTIONS:
            end = max(end, start + (a.seconds("durationBeforeInterruption") or 120.0))
        if a.action_id == TERMINATE:
            end = max(end, start + TERMINATE_S)
        if a.action_id == STOP:
            end = max(end, start + max(STOP_S, action_duration_s(a)))
    return end


@dataclass
class Experiment:
    """One template run from ``start_s``; ``targets`` collects what its actions resolved."""

    template: Template
    cloud: SimulatedCloudProvider
    clock: Clock
    rng: random.Random
    timeline: Timeline
    zone_outage: ZoneOutage
    region: str
    start_s: float = 0.0
    #: How a stopped instance that FIS restarts is kept (NotReady until the restart); None:
    #: stopped instances are reclaimed.
    instance_outage: InstanceOutage | None = None
    targets: set[str] = field(default_factory=set)
    #: Targets that resolved to nothing: FIS fails such an experiment.
    empty: list[str] = field(default_factory=list)

    def start(self, at_s: float) -> None:
        """Schedule every action relative to ``at_s``."""
        self.start_s = at_s
        for name, (start, _) in sorted(
            schedule(self.template).items(), key=lambda kv: (kv[1][0], kv[0])
        ):
            self.clock.after(
                max(0.0, at_s + start - self.clock.now()),
                partial(self._run, self.template.actions[name]),
                label=f"fis-{name}",
            )

    # -- targets ----------------------------------------------------------------------

    def _select(self, target: Target, found: list[str]) -> list[str]:
        mode, n = target.selection
        if mode == "ALL":
            return found
        count = min(n, len(found)) if mode == "COUNT" else math.floor(len(found) * n / 100)
        return sorted(self.rng.sample(found, count))

    def _instances(self, target: Target) -> list[Instance]:
        running = self.cloud.list()
        by_id = {i.instance_id: i for i in running}
        if target.arns:
            ids = [a.rsplit("/", 1)[-1] for a in target.arns]
            found = [by_id[i] for i in ids if i in by_id]
        else:
            want = dict(target.tags)
            found = [i for i in running if all(dict(i.tags).get(k) == v for k, v in want.items())]
        if target.resource_type == "aws:ec2:spot-instance":
            found = [i for i in found if i.offering.capacity_type == labels.CAPACITY_TYPE_SPOT]
        for path, values in target.filters:
            if path == "State.Name":
                found = [i for i in found if "running" in values]
            elif path == "Placement.AvailabilityZone":
                found = [i for i in found if i.offering.zone in values]
        ids = self._select(target, sorted(i.instance_id for i in found))
        chosen = [by_id[i] for i in ids]
        self.targets |= {i.instance_id for i in chosen}
        if not chosen:
            self.empty.append(f"target {target.name} resolved to no instance")
        return chosen

    def _zone_names(self, values: tuple[str, ...] | list[str]) -> set[str]:
        """Zone names for zone names or zone IDs (``use1-az1``) of the region."""
        region_zones = self.cloud.catalog.zones(self.region)
        by_id = {zid: z for z, zid in region_zones}
        return {by_id.get(v, v) for v in values}

    def _zones(self, target: Target) -> frozenset[str]:
        subnets = self.cloud.subnets
        params = dict(target.parameters)
        if target.arns:
            ids = {a.rsplit("/", 1)[-1] for a in target.arns}
            found = [s for s in subnets if s.id in ids]
        elif params:
            # AWS's AZ-outage scenarios: every subnet of the VPC in that zone (the
            # simulation has one VPC, so ``vpc`` selects it).
            zones = self._zone_names([params["availabilityZoneIdentifier"]])
            found = [s for s in subnets if s.zone in zones]
        else:
            want = dict(target.tags)
            found = [s for s in subnets if all(dict(s.tags).get(k) == v for k, v in want.items())]
        for path, values in target.filters:
            if path in ("AvailabilityZone", "AvailabilityZoneId"):
                zones = self._zone_names(values)
                found = [s for s in found if s.zone in zones]
            elif path == "SubnetId":
                found = [s for s in found if s.id in values]
        chosen = self._select(target, sorted(s.id for s in found))
        self.targets |= set(chosen)
        if not chosen:
            self.empty.append(f"target {target.name} resolved to no subnet")
        return frozenset(s.zone for s in subnets if s.id in chosen)

    # -- actions ----------------------------------------------------------------------

    def _stop_and_restart(self, action: Action, target: Target) -> None:
        """``stop-instances`` with ``startInstancesAfterDuration`` (module docstring)."""
        chosen = self._instances(target)
        restart_s = action.seconds("startInstancesAfterDuration") or 0.0
        self.timeline.record(
            FAULT,
            detail=f"{action.name}: {STOP} on {len(chosen)} instances, restart after "
            f"{restart_s:g} s",
        )
        for inst in chosen:
            self.cloud.inject(
                CloudEvent(
                    STATE_CHANGE, (inst.instance_id,), f"fis-{action.name}", state="stopping"
                )
            )
            if self.instance_outage is None:
                self.clock.after(STOP_S, partial(self.cloud.reclaim, inst.provider_id))
                continue
            self.clock.after(
                STOP_S,
                partial(self.instance_outage, inst, self.clock.now() + restart_s),
                label="fis-stopped",
            )
        complete_if_gone = (action.param("completeIfInstancesTerminated") or "").lower() == "true"

        def restart() -> None:
            alive = {i.instance_id for i in self.cloud.list()}
            for inst in chosen:
                if inst.instance_id in alive:
                    self.timeline.record(RESTARTED, detail=f"{action.name}: {inst.instance_id}")
                elif not complete_if_gone:
                    self.empty.append(
                        f"{action.name}: instance {inst.instance_id} was terminated before "
                        "its restart (completeIfInstancesTerminated is not true)"
                    )

        self.clock.after(max(restart_s, STOP_S), restart, label="fis-restart")

    def _run(self, action: Action) -> None:
        target = self.template.targets.get(action.target) if action.target else None
        now = self.clock.now()
        aid = action.action_id
        if aid == SPOT_INTERRUPTIONS and target is not None:
            lead = action.seconds("durationBeforeInterruption") or 120.0
            chosen = self._instances(target)
            self.timeline.record(FAULT, detail=f"{action.name}: {aid} on {len(chosen)} instances")
            for inst in chosen:
                iid = inst.instance_id
                self.cloud.inject(
                    CloudEvent(REBALANCE_RECOMMENDATION, (iid,), f"fis-{action.name}-{iid}")
                )
                self.clock.after(
                    lead - 120.0,
                    partial(
                        self.cloud.inject,
                        CloudEvent(
                            SPOT_INTERRUPTION,
                            (iid,),
                            f"fis-{action.name}-{iid}",
                            action="terminate",
                        ),
                    ),
                    label="fis-itn",
                )
        elif aid == STOP and target is not None and action.param("startInstancesAfterDuration"):
            self._stop_and_restart(action, target)
        elif aid in (TERMINATE, STOP) and target is not None:
            chosen = self._instances(target)
            state, delay = (
                ("shutting-down", TERMINATE_S) if aid == TERMINATE else ("stopping", STOP_S)
            )
            self.timeline.record(FAULT, detail=f"{action.name}: {aid} on {len(chosen)} instances")
            for inst in chosen:
                self.cloud.inject(
                    CloudEvent(STATE_CHANGE, (inst.instance_id,), f"fis-{action.name}", state=state)
                )
                self.clock.after(
                    delay, partial(self.cloud.reclaim, inst.provider_id), label="fis-end"
                )
        elif aid == ICE and target is not None:
            self.targets |= set(target.arns)
            zones_param = action.param("availabilityZoneIdentifiers")
            zones = None
            if zones_param:
                ids = {z.strip() for z in zones_param.split(",") if z.strip()}
                region_zones = self.cloud.catalog.zones(self.region)
                by_id = {zid: z for z, zid in region_zones}
                zones = frozenset(z for z, _ in region_zones if z in ids) | frozenset(
                    by_id[z] for z in ids if z in by_id
                )
                if not zones:
                    self.empty.append(f"{action.name}: no zone of {self.region} in {zones_param!r}")
            pct = int(action.param("percentage") or "100")
            until = now + (action.seconds("duration") or 0.0)
            self.cloud.add_launch_failures(zones, pct, until)
            self.timeline.record(
                FAULT, detail=f"{action.name}: {aid} in {sorted(zones) if zones else 'all zones'}"
            )
        elif aid == DISRUPT and target is not None:
            zones = self._zones(target)
            until = now + (action.seconds("duration") or 0.0)
            self.cloud.add_launch_failures(zones, 100, until)
            self.zone_outage(zones, until)
            self.timeline.record(FAULT, detail=f"{action.name}: {aid} in {sorted(zones)}")
        elif aid == WAIT:
            self.timeline.record(FAULT, detail=f"{action.name}: wait")
