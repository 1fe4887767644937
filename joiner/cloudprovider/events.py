"""Cloud events that can end an instance, and the EventBridge messages that carry them.

The kinds Karpenter's interruption controller reads from its SQS queue (karpenter-provider-aws
``pkg/controllers/interruption/parser.go`` ``EventParser.Parse`` and ``messages/*/parser.go``):
Spot Instance Interruption Warning, Instance Rebalance Recommendation, AWS Health scheduled
change (service EC2, category scheduledChange), and instance state changes (stopping,
stopped, shutting-down, terminated). ``parse_message`` accepts the EventBridge envelope as
delivered to SQS, or an SQS message whose ``Body`` holds it, so a captured message can be
fed to the simulation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from joiner.api.errors import InputError

SPOT_INTERRUPTION = "spotInterruption"
REBALANCE_RECOMMENDATION = "rebalanceRecommendation"
SCHEDULED_CHANGE = "scheduledChange"
STATE_CHANGE = "stateChange"

#: State changes that end an instance (others, such as "running", are ignored).
ENDING_STATES = ("stopping", "stopped", "shutting-down", "terminated")


class MessageKind(StrEnum):
    """karpenter-provider-aws's interruption message kinds (``pkg/controllers/interruption/
    messages/types.go`` ``Kind``), which Karpenter's interruption controller uses as the
    ``reason`` of ``karpenter_nodeclaims_disrupted_total`` when a message deletes a
    NodeClaim."""

    SPOT_INTERRUPTED = "spot_interrupted"
    REBALANCE_RECOMMENDATION = "rebalance_recommendation"
    SCHEDULED_CHANGE = "scheduled_change"
    INSTANCE_STOPPED = "instance_stopped"
    INSTANCE_TERMINATED = "instance_terminated"


def message_kind(event: CloudEvent) -> MessageKind:
    """The message kind of ``event``: a state change to ``stopping`` or ``stopped`` is
    ``instance_stopped``, any other ending state ``instance_terminated``
    (karpenter-provider-aws ``messages/statechange/model.go`` ``Message.Kind``).

    Raises:
        ValueError: for a kind this module does not define.
    """
    if event.kind == STATE_CHANGE:
        if event.state in ("stopping", "stopped"):
            return MessageKind.INSTANCE_STOPPED
        return MessageKind.INSTANCE_TERMINATED
    by_kind = {
        SPOT_INTERRUPTION: MessageKind.SPOT_INTERRUPTED,
        REBALANCE_RECOMMENDATION: MessageKind.REBALANCE_RECOMMENDATION,
        SCHEDULED_CHANGE: MessageKind.SCHEDULED_CHANGE,
    }
    if event.kind not in by_kind:
        raise ValueError(f"unknown cloud event kind {event.kind!r}")
    return by_kind[event.kind]


@dataclass(frozen=True, slots=True)
class CloudEvent:
    """One event about one or more instances.

    Attributes:
        kind: one of the module constants.
        instance_ids: EC2 instance ids it concerns.
        event_id: the EventBridge ``id`` (or a generated one).
        state: for state changes, the new state.
        action: for spot interruptions, ``terminate``, ``stop`` or ``hibernate``.
    """

    kind: str
    instance_ids: tuple[str, ...]
    event_id: str = ""
    state: str | None = None
    action: str | None = None


def _need(doc: dict[str, Any], key: str, where: str) -> Any:
    if key not in doc or doc[key] is None:
        raise InputError(f"EventBridge message has no {key!r}", field=where + key)
    value = doc[key]
    if key == "instance-id" and not isinstance(value, str):
        raise InputError("must be a string", field=where + key)
    return value


def _decode(raw: str | dict[str, Any], file: str | None) -> Any:
    """The EventBridge document of ``raw`` (JSON text or a parsed dict), unwrapped from an
    SQS message's ``Body`` when it is one.

    Raises:
        InputError: not JSON, nested too deeply, or a value JSON cannot hold.
    """
    try:
        doc = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(doc, dict) and "Body" in doc and "detail-type" not in doc:
            body = doc["Body"]
            doc = json.loads(body) if isinstance(body, str) else body
    except (json.JSONDecodeError, TypeError) as exc:
        raise InputError(f"not a JSON EventBridge message: {exc}", file=file) from exc
    except RecursionError as exc:
        raise InputError("JSON is nested too deeply", file=file) from exc
    except ValueError as exc:
        raise InputError(f"JSON value cannot be read: {exc}", file=file) from exc
    return doc


def _ec2_event(detail_type: str, detail: dict[str, Any], event_id: str) -> CloudEvent | None:
    """An ``aws.ec2`` event of a type Karpenter reads, or None (karpenter-provider-aws,
    ``pkg/controllers/interruption/messages``: spotinterruption, rebalancerecommendation,
    statechange).

    Raises:
        InputError: the detail lacks ``instance-id`` or ``state``.
    """
    if detail_type == "EC2 Spot Instance Interruption Warning":
        return CloudEvent(
            SPOT_INTERRUPTION,
            (str(_need(detail, "instance-id", "detail.")),),
            event_id,
            action=str(detail.get("instance-action", "terminate")),
        )
    if detail_type == "EC2 Instance Rebalance Recommendation":
        return CloudEvent(
            REBALANCE_RECOMMENDATION, (str(_need(detail, "instance-id", "detail.")),), event_id
        )
    if detail_type == "EC2 Instance State-change Notification":
        state = str(_need(detail, "state", "detail."))
        if state not in ENDING_STATES:
            return None
        return CloudEvent(
            STATE_CHANGE, (str(_need(detail, "instance-id", "detail.")),), event_id, state=state
        )
    return None


def _health_event(detail: dict[str, Any], event_id: str) -> CloudEvent | None:
    """An AWS Health event: a scheduled change of EC2 instances, or None for any other
    service or category.

    Raises:
        InputError: a scheduled change lists no affected instance.
    """
    if detail.get("service") != "EC2" or detail.get("eventTypeCategory") != "scheduledChange":
        return None
    entities = detail.get("affectedEntities") or []
    ids = tuple(
        e["entityValue"]
        for e in entities
        if isinstance(e, dict) and isinstance(e.get("entityValue"), str)
    )
    if not ids:
        raise InputError(
            "a scheduled change lists no affected instance", field="detail.affectedEntities"
        )
    return CloudEvent(SCHEDULED_CHANGE, ids, event_id)


def _event(doc: dict[str, Any]) -> CloudEvent | None:
    """The event an EventBridge document carries, or None for one Joiner ignores.

    Raises:
        InputError: a field the event needs is missing or malformed (not yet located).
    """
    detail_type = _need(doc, "detail-type", "")
    source = _need(doc, "source", "")
    detail = _need(doc, "detail", "")
    if not isinstance(detail, dict):
        raise InputError("'detail' must be an object", field="detail")
    event_id = str(doc.get("id", ""))
    if source == "aws.ec2":
        return _ec2_event(detail_type, detail, event_id)
    if source == "aws.health" and detail_type == "AWS Health Event":
        return _health_event(detail, event_id)
    return None


def parse_message(raw: str | dict[str, Any], *, file: str | None = None) -> CloudEvent | None:
    """Parse one EventBridge event (or an SQS message wrapping it in ``Body``).

    Returns None for events Joiner ignores (unknown types, non-EC2 health events, states
    that do not end an instance), as Karpenter does.

    Raises:
        InputError: not JSON, or a known event type missing a field it needs.
    """
    doc = _decode(raw, file)
    if not isinstance(doc, dict):
        raise InputError("an EventBridge message must be a JSON object", file=file)
    try:
        return _event(doc)
    except InputError as exc:
        raise exc.located(file=file) from exc
