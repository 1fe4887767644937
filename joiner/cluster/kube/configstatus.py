"""NodePool and EC2NodeClass ``status`` in controller mode, as Karpenter v1 writes them.

**NodePool** (karpenter ``pkg/apis/v1/nodepool_status.go``):

* ``resources``: the capacity of the pool's launched NodeClaims not marked for deletion,
  summed, over Karpenter's base of zero ``cpu``, ``memory``, ``pods``,
  ``ephemeral-storage`` and ``nodes``; ``nodes``: their count (karpenter
  ``pkg/controllers/nodepool/counter/controller.go`` ``Reconcile`` over ``state.Cluster``
  ``updateNodePoolResources``: a NodeClaim without capacity counts nothing). Quantities in
  Kubernetes' canonical form (``4`` CPUs, ``16Gi``).
* ``nodeClassObservedGeneration``: the NodeClass's ``metadata.generation``
  (``pkg/controllers/nodepool/registrationhealth/controller.go``; its
  ``NodeRegistrationHealthy`` condition is not written, and one already there is kept).
* ``ValidationSucceeded`` (``pkg/controllers/nodepool/validation/controller.go``): True when
  Joiner's loader accepts the NodePool, else False ``NodePoolValidationFailed`` with the
  error. A NodePool skipped only because its NodeClass is missing or did not load counts as
  valid: that is ``NodeClassReady``'s business, as ``RuntimeValidate`` never looks at it.
* ``NodeClassReady`` (``pkg/controllers/nodepool/readiness/controller.go``): False
  ``NodeClassNotFound`` ("NodeClass not found on cluster"), False ``NodeClassTerminating``,
  False ``NodeClassReadinessUnknown`` while the NodeClass's ``Ready`` is Unknown, False with
  the NodeClass's own reason and message while it is False, else True. A KWOKNodeClass
  (Joiner writes no status for it) is Ready when it exists.
* ``Ready``: the root of the two (operatorpkg ``status/condition_set.go``).

The provisioner skips a NodePool that is not Ready (``pool_ready``; karpenter
``pkg/controllers/provisioning/provisioner.go`` ``NewScheduler``). Karpenter v1.14 defines
a ``NodeClassNotReady`` Event (``pkg/controllers/nodeclaim/lifecycle/events.go``) but never
publishes it, so none is posted.

**EC2NodeClass** (karpenter-provider-aws ``pkg/apis/v1/ec2nodeclass_status.go``):
``subnets``, ``securityGroups``, ``amis``, ``instanceProfile`` and the part conditions, from
the cloud provider's ``node_class_status`` (``cloudprovider/nodeclass_status.py``); a field
the cloud does not report is left as it is. Joiner writes no ``capacityReservations``.

Conditions follow operatorpkg's ``ConditionSet.Set``: ``observedGeneration`` is the
object's generation, ``lastTransitionTime`` changes only with the status (a condition first
set takes the object's ``creationTimestamp``), and the root is True when every dependent is
True, False (``UnhealthyDependents``) when one is False, else Unknown
(``ReconcilingDependents``), its message naming them (``SubnetsReady=False, ...``).
Conditions of other types already on the object are kept.

Writes go through the status subresource as a JSON merge patch, only when what Joiner owns
differs from the object (and not again while the informer has not yet seen the last
write); a failed patch is counted (``joiner_reconcile_errors_total``) and logged, and
retried on the next sync. In dry-run nothing is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.types import PatchType

from joiner.api import quantity
from joiner.api.errors import InputError
from joiner.cloudprovider import nodeclass_status as ncs
from joiner.cluster.kube.client import (
    EC2NODECLASS,
    KWOKNODECLASS,
    NODEPOOL,
    EC2NodeClassResource,
    NodePoolResource,
)
from joiner.cluster.kube.feed import ClusterFeed
from joiner.cluster.kube.metrics import Metrics
from joiner.cluster.kube.timeline import now_rfc3339
from joiner.state.cluster import ClusterState

log = logging.getLogger(__name__)

READY = "Ready"
VALIDATION_SUCCEEDED = "ValidationSucceeded"
NODECLASS_READY = "NodeClassReady"
#: ``Ready``'s dependents on a NodePool (karpenter ``nodepool_status.go`` StatusConditions).
NODEPOOL_DEPENDENTS = (VALIDATION_SUCCEEDED, NODECLASS_READY)
#: Karpenter's ``counter.BaseResources``.
BASE_RESOURCES = (quantity.CPU, quantity.MEMORY, quantity.PODS, quantity.EPHEMERAL_STORAGE, "nodes")
#: The field Joiner's loader names when a NodePool's NodeClass is not loaded.
NODECLASS_REF_FIELD = "spec.template.spec.nodeClassRef.name"
#: Binary suffixes, largest first (Kubernetes' canonical form of a BinarySI quantity).
_BINARY = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)

#: ``(kind, name)`` -> the object's ``resourceVersion`` when Joiner wrote, and what it wrote
#: (``lastTransitionTime`` left out).
Written = dict[tuple[str, str], tuple[str, Any]]


def canonical(name: str, amount: int) -> str:
    """A resource amount (millicores for cpu, bytes, counts) in Kubernetes' canonical
    quantity form: whole CPUs without a suffix (``1500m`` otherwise), memory and ephemeral
    storage in the largest binary unit that keeps them whole (bytes when none does)."""
    if name == quantity.CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if name in (quantity.MEMORY, quantity.EPHEMERAL_STORAGE) and amount:
        for suffix, size in _BINARY:
            if amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


def pool_resources(state: ClusterState, pool: str) -> dict[str, int]:
    """The NodePool's ``status.resources`` as amounts (module docstring): Karpenter's base
    of zeros plus each launched, live NodeClaim's capacity whose node is not marked for
    deletion, and ``nodes``."""
    total: dict[str, int] = dict.fromkeys(BASE_RESOURCES, 0)
    for claim in state.live_nodeclaims():
        if claim.nodepool != pool or claim.instance is None:
            continue
        node = state.node_of_claim(claim)
        if node is not None and node.deleting:
            continue
        total = quantity.add(total, claim.instance.instance_type.capacity)
        total["nodes"] += 1
    return total


def _condition(kind: str, c: ncs.Condition, generation: int, when: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": c.status,
        "reason": c.reason,
        "message": c.message,
        "observedGeneration": generation,
        "lastTransitionTime": when,
    }


def merge_conditions(
    existing: list[dict[str, Any]],
    wanted: Mapping[str, ncs.Condition],
    dependents: tuple[str, ...],
    *,
    generation: int,
    created: str,
    now: str,
) -> list[dict[str, Any]]:
    """``existing`` conditions with ``wanted`` set and ``Ready`` recomputed, as operatorpkg
    ``status/condition_set.go`` ``ConditionSet.Set`` and ``recomputeRootCondition`` do (module
    docstring); a dependent neither existing nor wanted is Unknown
    ``AwaitingReconciliation``. Sorted by ``lastTransitionTime`` (then type), Ready last."""
    out = {str(c.get("type")): dict(c) for c in existing}
    awaiting = ncs.Condition(
        ncs.UNKNOWN, "AwaitingReconciliation", "object is awaiting reconciliation"
    )

    def put(kind: str, c: ncs.Condition) -> None:
        prev = out.get(kind)
        if prev is None:
            when = created
        elif prev.get("status") == c.status:
            when = str(prev.get("lastTransitionTime") or now)
        else:
            when = now
        out[kind] = _condition(kind, c, generation, when)

    for kind in dependents:
        if kind in wanted:
            put(kind, wanted[kind])
        elif kind not in out:
            put(kind, awaiting)
    put(READY, _root(out, dependents, generation))
    return sorted(
        out.values(),
        key=lambda c: (c["type"] == READY, str(c.get("lastTransitionTime")), str(c["type"])),
    )


def _root(
    conditions: dict[str, dict[str, Any]], dependents: tuple[str, ...], generation: int
) -> ncs.Condition:
    """operatorpkg ``recomputeRootCondition`` over ``findUnhealthyDependents`` (newest
    transition first)."""
    unhealthy = [
        conditions[k]
        for k in dependents
        if conditions[k].get("status") != ncs.TRUE
        or conditions[k].get("observedGeneration") != generation
    ]
    if not unhealthy:
        return ncs.ready(READY)
    unhealthy.sort(key=lambda c: str(c["type"]))
    unhealthy.sort(key=lambda c: str(c.get("lastTransitionTime")), reverse=True)
    message = ", ".join(f"{c['type']}={c.get('status')}" for c in unhealthy)
    if any(
        c.get("status") == ncs.FALSE and c.get("observedGeneration") == generation
        for c in unhealthy
    ):
        return ncs.Condition(ncs.FALSE, "UnhealthyDependents", message)
    return ncs.Condition(ncs.UNKNOWN, "ReconcilingDependents", message)


def _meta(doc: Mapping[str, Any]) -> dict[str, Any]:
    return dict(doc.get("metadata") or {})


def _status(doc: Mapping[str, Any]) -> dict[str, Any]:
    return dict(doc.get("status") or {})


def _comparable(value: Any) -> Any:
    """A status value to compare: empty is absent; conditions by type, transition times
    left out (a condition's time moves only with its status)."""
    if value in (None, [], "", {}):
        return None
    if isinstance(value, list) and value and isinstance(value[0], dict) and "type" in value[0]:
        return {
            str(c["type"]): {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in value
        }
    return value


def _nodeclass_fields(st: ncs.NodeClassStatus) -> dict[str, Any]:
    """The EC2NodeClass status fields ``st`` reports (None clears one: Karpenter sets an
    empty list to nil, which ``omitempty`` drops)."""
    out: dict[str, Any] = {}
    if st.subnets is not None:
        out["subnets"] = [
            {"id": i, "zone": z, **({"zoneID": zid} if zid else {})} for i, z, zid in st.subnets
        ] or None
    if st.security_groups is not None:
        out["securityGroups"] = [
            {"id": i, **({"name": n} if n else {})} for i, n in st.security_groups
        ] or None
    if st.amis is not None:
        out["amis"] = [_ami(a) for a in st.amis] or None
    if st.instance_profile is not None:
        out["instanceProfile"] = st.instance_profile or None
    return out


def _ami(a: ncs.AMIStatus) -> dict[str, Any]:
    reqs = [
        {"key": k, "operator": op, **({"values": list(vals)} if vals else {})}
        for k, op, vals in a.requirements
    ]
    out: dict[str, Any] = {"id": a.id, "name": a.name, "requirements": reqs}
    if a.deprecated:
        out["deprecated"] = True
    if not a.name:
        del out["name"]
    return out


class ConfigStatus:
    """Writes NodePool and EC2NodeClass status (module docstring). ``node_class_status`` is
    the cloud's (None: the cloud reports none, and EC2NodeClass status is not written);
    ``now`` gives RFC 3339 timestamps for condition transitions."""

    def __init__(
        self,
        client: Client | None,
        state: ClusterState,
        feed: ClusterFeed,
        metrics: Metrics,
        *,
        node_class_status: Callable[[str], ncs.NodeClassStatus | None] | None,
        dry_run: bool,
        now: Callable[[], str] = now_rfc3339,
    ) -> None:
        if client is None and not dry_run:
            raise ValueError("ConfigStatus needs a client unless dry_run")
        self._client = client
        self._state = state
        self._feed = feed
        self._metrics = metrics
        self._node_class_status = node_class_status
        self.dry_run = dry_run
        self._now = now
        self._written: Written = {}

    # -- what the status should be --------------------------------------------------------

    def nodeclass_status(self, doc: Mapping[str, Any]) -> dict[str, Any] | None:
        """The EC2NodeClass status fields and conditions Joiner owns for ``doc``, or None
        when the cloud reports nothing for it."""
        if self._node_class_status is None:
            return None
        meta = _meta(doc)
        st = self._node_class_status(str(meta.get("name")))
        if st is None:
            return None
        return {
            **_nodeclass_fields(st),
            "conditions": self._conditions(doc, st.conditions, ncs.DEPENDENTS),
        }

    def nodepool_status(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """The NodePool status Joiner owns for ``doc`` (module docstring)."""
        meta = _meta(doc)
        name = str(meta.get("name"))
        ref = ((doc.get("spec") or {}).get("template") or {}).get("spec", {}).get(
            "nodeClassRef"
        ) or {}
        resources = pool_resources(self._state, name)
        out: dict[str, Any] = {
            "resources": {k: canonical(k, v) for k, v in sorted(resources.items())},
            "nodes": resources["nodes"],
        }
        class_doc = self._class_doc(ref)
        class_generation = int(_meta(class_doc or {}).get("generation") or 0)
        if class_generation:
            out["nodeClassObservedGeneration"] = class_generation
        wanted = {VALIDATION_SUCCEEDED: self._validation(name)}
        class_ready = self._class_ready(ref, class_doc)
        if class_ready is not None:
            wanted[NODECLASS_READY] = class_ready
        out["conditions"] = self._conditions(doc, wanted, NODEPOOL_DEPENDENTS)
        return out

    def pool_ready(self, name: str) -> bool:
        """True when NodePool ``name``'s ``Ready`` is True as Joiner would write it (a
        NodePool not in the cache counts as Ready)."""
        doc = self._feed.of(NODEPOOL).get(name)
        if doc is None:
            return True
        return _ready_of(self.nodepool_status(doc)["conditions"]) == ncs.TRUE

    def _conditions(
        self,
        doc: Mapping[str, Any],
        wanted: Mapping[str, ncs.Condition],
        dependents: tuple[str, ...],
    ) -> list[dict[str, Any]]:
        meta = _meta(doc)
        now = self._now()
        return merge_conditions(
            list(_status(doc).get("conditions") or []),
            wanted,
            dependents,
            generation=int(meta.get("generation") or 0),
            created=str(meta.get("creationTimestamp") or now),
            now=now,
        )

    def _validation(self, name: str) -> ncs.Condition:
        """karpenter ``nodepool/validation`` ``Reconcile`` with Joiner's loader as
        ``RuntimeValidate``."""
        err: InputError | None = self._feed.pool_errors.get(name)
        if err is None or name in self._state.nodepools or err.field == NODECLASS_REF_FIELD:
            return ncs.ready(VALIDATION_SUCCEEDED)
        return ncs.Condition(ncs.FALSE, "NodePoolValidationFailed", str(err))

    def _class_doc(self, ref: Mapping[str, Any]) -> dict[str, Any] | None:
        kind = {EC2NODECLASS.kind: EC2NODECLASS, KWOKNODECLASS.kind: KWOKNODECLASS}.get(
            str(ref.get("kind"))
        )
        return self._feed.of(kind).get(str(ref.get("name"))) if kind is not None else None

    def _class_ready(
        self, ref: Mapping[str, Any], class_doc: Mapping[str, Any] | None
    ) -> ncs.Condition | None:
        """karpenter ``nodepool/readiness`` ``Reconcile`` and ``setReadyCondition``; None for
        a NodeClass kind Joiner does not support (left alone, as Karpenter ignores it)."""
        if str(ref.get("kind")) not in (EC2NODECLASS.kind, KWOKNODECLASS.kind):
            return None
        if class_doc is None:
            return ncs.Condition(ncs.FALSE, "NodeClassNotFound", "NodeClass not found on cluster")
        if _meta(class_doc).get("deletionTimestamp"):
            return ncs.Condition(ncs.FALSE, "NodeClassTerminating", "NodeClass is Terminating")
        if ref.get("kind") == KWOKNODECLASS.kind:
            return ncs.ready(NODECLASS_READY)
        own = self.nodeclass_status(class_doc)
        conditions = own["conditions"] if own is not None else _status(class_doc).get("conditions")
        ready = next((c for c in conditions or [] if c.get("type") == READY), None)
        if ready is None or ready.get("status") not in (ncs.TRUE, ncs.FALSE):
            return ncs.Condition(
                ncs.FALSE, "NodeClassReadinessUnknown", "Node Class Readiness Unknown"
            )
        if ready.get("status") == ncs.FALSE:
            return ncs.Condition(
                ncs.FALSE, str(ready.get("reason")), str(ready.get("message") or "")
            )
        return ncs.ready(NODECLASS_READY)

    # -- writing --------------------------------------------------------------------------

    def sync(self) -> None:
        """Patch every EC2NodeClass's and NodePool's status that differs from what Joiner
        would write (module docstring). Nothing before the feed has started, or in dry-run."""
        if self.dry_run or not self._feed.started:
            return
        for name, doc in sorted(self._feed.of(EC2NODECLASS).items()):
            status = self.nodeclass_status(doc)
            if status is not None:
                self._write(EC2NodeClassResource, EC2NODECLASS.kind, name, doc, status)
        for name, doc in sorted(self._feed.of(NODEPOOL).items()):
            self._write(NodePoolResource, NODEPOOL.kind, name, doc, self.nodepool_status(doc))

    def _write(
        self, res: Any, kind: str, name: str, doc: Mapping[str, Any], status: dict[str, Any]
    ) -> None:
        current = _status(doc)
        key = {k: _comparable(v) for k, v in status.items()}
        if all(_comparable(current.get(k)) == v for k, v in key.items()):
            return
        version = str(_meta(doc).get("resourceVersion") or "")
        if self._written.get((kind, name)) == (version, key):
            return  # written; the informer has not delivered it yet
        try:
            self._api().patch(res.Status, name, {"status": status}, patch_type=PatchType.MERGE)
        except ApiError as exc:
            self._metrics.reconcile_errors.labels(where=f"patch {kind} status").inc()
            log.warning(
                "patch %s status failed for %s: %s %s",
                kind,
                name,
                exc.status.code,
                exc.status.message,
            )
            return
        self._written[(kind, name)] = (version, key)

    def _api(self) -> Any:
        """The client, typed loosely: lightkube's overloads do not cover generic resources."""
        assert self._client is not None
        return self._client


def _ready_of(conditions: list[dict[str, Any]]) -> str | None:
    return next((str(c.get("status")) for c in conditions if c.get("type") == READY), None)
