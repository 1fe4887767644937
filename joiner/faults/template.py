"""AWS FIS experiment templates: parsing and validation, every problem reported at once.

The schema is CreateExperimentTemplate's (AWS FIS API Reference, "CreateExperimentTemplate"
and "CreateExperimentTemplateTargetInput"): top-level named ``targets``
(``resourceType``, ``resourceArns`` or ``resourceTags``, ``filters``, ``selectionMode``
``ALL`` | ``COUNT(n)`` | ``PERCENT(n)``, ``parameters``), named ``actions`` (``actionId``,
``parameters``, ``targets`` mapping the action's target key to a target name,
``startAfter``), ``stopConditions``, ``roleArn`` (an IAM role ARN with a 12-digit account),
``tags``. Durations are ISO 8601 (``PT2M``). An action's targets only *reference* top-level
targets; a template that defines them inline, or references an undefined one, is rejected
before anything runs, with the shape it should have.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import isodate

from joiner.api.errors import InputError
from joiner.api.manifests.yamlio import read_text

SPOT_INTERRUPTIONS = "aws:ec2:send-spot-instance-interruptions"
TERMINATE = "aws:ec2:terminate-instances"
STOP = "aws:ec2:stop-instances"
ICE = "aws:ec2:api-insufficient-instance-capacity-error"
DISRUPT = "aws:network:disrupt-connectivity"
WAIT = "aws:fis:wait"


@dataclass(frozen=True)
class ActionSpec:
    """What an action may take: its target key and resource type, and its parameters."""

    target_key: str | None
    resource_type: str | None
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


#: The supported actions (AWS's documented semantics; others are rejected).
ACTIONS: dict[str, ActionSpec] = {
    SPOT_INTERRUPTIONS: ActionSpec(
        "SpotInstances", "aws:ec2:spot-instance", ("durationBeforeInterruption",)
    ),
    TERMINATE: ActionSpec("Instances", "aws:ec2:instance"),
    STOP: ActionSpec(
        "Instances",
        "aws:ec2:instance",
        optional=("startInstancesAfterDuration", "completeIfInstancesTerminated"),
    ),
    ICE: ActionSpec(
        "Roles", "aws:iam:role", ("duration",), ("availabilityZoneIdentifiers", "percentage")
    ),
    DISRUPT: ActionSpec("Subnets", "aws:ec2:subnet", ("duration",), ("scope",)),
    WAIT: ActionSpec(None, None, ("duration",)),
}
RESOURCE_TYPES = ("aws:ec2:spot-instance", "aws:ec2:instance", "aws:iam:role", "aws:ec2:subnet")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_SELECTION = re.compile(r"^(ALL|COUNT\(([0-9]{1,9})\)|PERCENT\(([0-9]{1,3})\))$")
_TARGET_SHAPE = (
    '{"<name>": {"resourceType": "aws:ec2:spot-instance", "resourceTags": {"Name": "my-node"}, '
    '"selectionMode": "ALL"}}'
)
_TOP_KEYS = {
    "description",
    "targets",
    "actions",
    "stopConditions",
    "roleArn",
    "tags",
    "clientToken",
    "logConfiguration",
    "experimentOptions",
    "experimentReportConfiguration",
}
#: Top-level fields with no effect on what the experiment does to the cluster (bookkeeping:
#: logs, reports, tags, idempotency): accepted silently.
SILENT_TOP_KEYS = frozenset(
    {"description", "tags", "clientToken", "logConfiguration", "experimentReportConfiguration"}
)
#: Fields of a target and of an action (CreateExperimentTemplate's
#: ``CreateExperimentTemplateTargetInput`` and ``...ActionInput``).
TARGET_KEYS = frozenset(
    {"resourceType", "resourceArns", "resourceTags", "filters", "selectionMode", "parameters"}
)
ACTION_KEYS = frozenset({"actionId", "description", "parameters", "targets", "startAfter"})
#: ``aws:network:disrupt-connectivity`` ``scope`` values Joiner models: ``all`` (the default)
#: cuts the subnets off, which is what a zone outage does to the nodes; the narrower scopes
#: (``availability-zone``, ``dynamodb``, ``prefix-list``, ``s3``...) block only some traffic.
MODELLED_SCOPES = ("all",)


@dataclass(frozen=True)
class Target:
    """A named target: which resources, how many of them."""

    name: str
    resource_type: str
    arns: tuple[str, ...]
    tags: tuple[tuple[str, str], ...]
    filters: tuple[tuple[str, tuple[str, ...]], ...]
    #: ("ALL", 0), ("COUNT", n) or ("PERCENT", n).
    selection: tuple[str, int]
    #: ``parameters`` selecting resources instead of ARNs or tags (a subnet's
    #: ``availabilityZoneIdentifier`` and ``vpc``, as AWS's AZ-outage scenarios write them).
    parameters: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Action:
    """A named action, its parameters (seconds already parsed), targets and dependencies."""

    name: str
    action_id: str
    parameters: tuple[tuple[str, str], ...]
    target: str | None
    start_after: tuple[str, ...]

    def param(self, key: str) -> str | None:
        return dict(self.parameters).get(key)

    def seconds(self, key: str) -> float | None:
        value = self.param(key)
        return None if value is None else iso_seconds(value)


@dataclass(frozen=True)
class Template:
    """A validated experiment template."""

    file: str
    description: str
    targets: dict[str, Target]
    actions: dict[str, Action]
    role_arn: str
    #: Fields the template sets that Joiner does not model, one message each.
    warnings: tuple[str, ...] = ()

    def order(self) -> list[str]:
        """Action names in an order that respects ``startAfter`` (ties by name)."""
        return _topological({n: a.start_after for n, a in self.actions.items()})[0]


def _topological(after: Mapping[str, Iterable[str]]) -> tuple[list[str], list[str]]:
    """Kahn's order over ``startAfter`` (``after``: action -> the actions it starts after;
    the smallest ready name first), in O((actions + edges) log actions); returns the order
    and the actions left in a cycle."""
    import heapq

    deps = {n: {d for d in ds if d in after} for n, ds in after.items()}
    waiting = {n: len(ds) for n, ds in deps.items()}
    dependents: dict[str, list[str]] = {}
    for n, ds in deps.items():
        for d in ds:
            dependents.setdefault(d, []).append(n)
    ready = [n for n, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        n = heapq.heappop(ready)
        order.append(n)
        for other in dependents.get(n, ()):
            waiting[other] -= 1
            if waiting[other] == 0:
                heapq.heappush(ready, other)
    placed = set(order)
    return order, sorted(n for n in after if n not in placed)


def iso_seconds(value: str) -> float:
    """An ISO 8601 duration (``PT2M``, ``PT135S``) in seconds.

    Raises:
        ValueError: not an ISO 8601 duration, or one with years or months.
    """
    text = value.strip()
    if text.upper() in ("P", "PT") or text.upper().endswith("T"):
        raise ValueError("no amount given")
    try:
        parsed = isodate.parse_duration(text)
    except (isodate.ISO8601Error, OverflowError, ArithmeticError) as exc:
        raise ValueError(str(exc)) from exc
    if isinstance(parsed, isodate.Duration) and (parsed.years or parsed.months):
        raise ValueError("years and months are not allowed")
    try:
        return float(parsed.total_seconds())
    except (OverflowError, ArithmeticError) as exc:
        raise ValueError(str(exc)) from exc


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


_ARN = re.compile(r"^arn:aws[a-z-]*:(ec2|iam):[a-z0-9-]*:\d{12}:[a-z-]+/[\w+=,.@/-]+$")
FILTER_PATHS = ("State.Name", "Placement.AvailabilityZone")
#: Filter paths of ``aws:ec2:subnet`` targets (DescribeSubnets' fields).
SUBNET_FILTER_PATHS = ("AvailabilityZone", "AvailabilityZoneId", "SubnetId")
#: Target ``parameters`` by resource type (FIS "Targets: resource type parameters").
TARGET_PARAMETERS = {"aws:ec2:subnet": ("availabilityZoneIdentifier", "vpc")}


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, field: str, message: str) -> None:
        self.items.append(f"field {field}: {message}")


def parse_template(text: str, file: str) -> Template:
    """Parse and validate; every schema problem is reported in one ``InputError``.

    Raises:
        InputError: invalid JSON (with line and column) or any schema problem.
    """
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", file=file
        ) from exc
    except RecursionError as exc:
        raise InputError("JSON is nested too deeply", file=file) from exc
    except ValueError as exc:  # huge integers, duplicate keys
        raise InputError(f"JSON value cannot be read: {exc}", file=file) from exc
    if not isinstance(doc, dict):
        raise InputError("an experiment template must be a JSON object", file=file)
    p = _Problems()
    for key in sorted(set(doc) - _TOP_KEYS):
        p.add(key, "unknown field")
    role = doc.get("roleArn")
    if not isinstance(role, str) or not _ROLE_ARN.match(role):
        p.add("roleArn", f"{role!r} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)")
    targets = _targets(doc.get("targets"), p)
    actions = _actions(doc.get("actions"), targets, p)
    stops = doc.get("stopConditions", [])
    if not isinstance(stops, list) or not all(
        isinstance(s, dict) and s.get("source") in ("none", "aws:cloudwatch:alarm") for s in stops
    ):
        p.add("stopConditions", "must be a list of {source: none | aws:cloudwatch:alarm, value}")
        stops = []
    if p.items:
        count = len(p.items)
        raise InputError(
            f"{count} problem{'s' if count > 1 else ''}:\n  " + "\n  ".join(p.items), file=file
        )
    warnings = _not_modelled(doc, stops, actions)
    return Template(
        file,
        str(doc.get("description", "")),
        targets,
        actions,
        str(role),
        tuple(f"{file}: {w}" for w in warnings),
    )


def _not_modelled(doc: dict[str, Any], stops: list[Any], actions: dict[str, Action]) -> list[str]:
    """Warnings for the fields FIS acts on that the simulation does not: CloudWatch-alarm
    stop conditions (FIS stops the experiment when the alarm fires), ``experimentOptions``
    (account targeting, ``emptyTargetResolutionMode``: FIS fails an action whose targets
    resolve to nothing unless ``skip``), and a ``disrupt-connectivity`` ``scope`` narrower
    than ``all``."""
    out = []
    alarms = [s for s in stops if s.get("source") == "aws:cloudwatch:alarm"]
    if alarms:
        out.append(
            "not modelled: field stopConditions (FIS stops the experiment when a CloudWatch "
            "alarm fires); Joiner runs every action to its end"
        )
    if doc.get("experimentOptions"):
        out.append(
            "not modelled: field experimentOptions (account targeting, empty target "
            "resolution); Joiner acts as if it were unset"
        )
    for name, a in sorted(actions.items()):
        scope = a.param("scope")
        if a.action_id == DISRUPT and scope is not None and scope not in MODELLED_SCOPES:
            out.append(
                f"not modelled: field actions.{name}.parameters.scope {scope!r} (only that "
                "traffic is blocked); Joiner cuts the subnets off entirely (scope all)"
            )
    return out


def _targets(raw: Any, p: _Problems) -> dict[str, Target]:
    """The template's named targets, in name order; problems are added to ``p`` (a target
    that is not an object is left out)."""
    out: dict[str, Target] = {}
    if not isinstance(raw, dict):
        p.add("targets", f"must map target names to targets, shaped {_TARGET_SHAPE}")
        return out
    if "resourceType" in raw and not isinstance(raw.get("resourceType"), dict):
        p.add(
            "targets",
            "holds one target's fields directly; targets must be named, shaped " + _TARGET_SHAPE,
        )
        return out
    for name, t in sorted(raw.items()):
        if not isinstance(t, dict):
            p.add(f"targets.{name}", f"must be a target object, shaped {_TARGET_SHAPE}")
            continue
        out[name] = _target(name, t, p)
    return out


def _target(name: str, t: dict[str, Any], p: _Problems) -> Target:
    """One target object (FIS ``CreateExperimentTemplateTargetInput``); problems are added
    to ``p`` and the faulty part is left empty."""
    f = f"targets.{name}"
    for key in sorted(set(t) - TARGET_KEYS):
        p.add(f"{f}.{key}", "unknown field")
    rtype = t.get("resourceType")
    if rtype not in RESOURCE_TYPES:
        p.add(f"{f}.resourceType", f"{rtype!r} is not one of {', '.join(RESOURCE_TYPES)}")
    arns = _target_arns(t, f, p)
    tags = t.get("resourceTags") or {}
    if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
        p.add(f"{f}.resourceTags", "must map tag keys to string values")
        tags = {}
    tparams = _target_parameters(t, f, rtype, p)
    if sum(map(bool, (arns, tags, tparams))) != 1:
        p.add(f, "give exactly one of resourceArns, resourceTags or parameters")
    selection = _selection(t.get("selectionMode"), f, p)
    filters = _filters(t, f, rtype, p)
    if rtype == "aws:iam:role" and (tags or filters):
        p.add(f, "aws:iam:role targets take resourceArns only")
    return Target(
        name,
        str(rtype),
        tuple(arns),
        tuple(sorted(tags.items())),
        tuple(filters),
        selection,
        tuple(sorted(tparams.items())),
    )


def _target_arns(t: dict[str, Any], f: str, p: _Problems) -> list[str]:
    """The target's ``resourceArns`` (empty when not a list of strings); each must be an
    EC2 or IAM ARN."""
    arns = t.get("resourceArns") or []
    if not isinstance(arns, list) or not all(isinstance(a, str) for a in arns):
        p.add(f"{f}.resourceArns", "must be a list of ARNs")
        arns = []
    for i, arn in enumerate(arns):
        if not _ARN.match(arn):
            p.add(f"{f}.resourceArns[{i}]", f"{arn!r} is not an EC2 or IAM ARN")
    return arns


def _target_parameters(t: dict[str, Any], f: str, rtype: Any, p: _Problems) -> dict[str, str]:
    """The target's ``parameters`` (empty when not a map of strings), checked against the
    names ``TARGET_PARAMETERS`` allows for its resource type; a subnet target's need
    ``availabilityZoneIdentifier``."""
    tparams = t.get("parameters") or {}
    if not isinstance(tparams, dict) or not all(isinstance(v, str) for v in tparams.values()):
        p.add(f"{f}.parameters", "must map parameter names to strings")
        tparams = {}
    allowed = TARGET_PARAMETERS.get(str(rtype), ())
    for key in sorted(set(tparams) - set(allowed)):
        p.add(
            f"{f}.parameters.{key}",
            f"not a parameter of {rtype} targets"
            + (f" (have: {', '.join(allowed)})" if allowed else ""),
        )
    if rtype == "aws:ec2:subnet" and tparams and "availabilityZoneIdentifier" not in tparams:
        p.add(f"{f}.parameters", "needs availabilityZoneIdentifier")
    return tparams


def _selection(mode: Any, f: str, p: _Problems) -> tuple[str, int]:
    """``selectionMode`` as ``("ALL", 0)``, ``("COUNT", n)`` or ``("PERCENT", n)``
    (``ALL`` when it does not parse)."""
    m = _SELECTION.match(mode) if isinstance(mode, str) else None
    selection = ("ALL", 0)
    if m is None:
        p.add(f"{f}.selectionMode", f"{mode!r} is not ALL, COUNT(n) or PERCENT(n)")
    elif m.group(2) is not None:
        selection = ("COUNT", int(m.group(2)))
        if selection[1] < 1:
            p.add(f"{f}.selectionMode", "COUNT(n) needs n >= 1")
    elif m.group(3) is not None:
        selection = ("PERCENT", int(m.group(3)))
        if not 0 < selection[1] <= 100:
            p.add(f"{f}.selectionMode", "PERCENT(n) needs 1 <= n <= 100")
    return selection


def _filters(
    t: dict[str, Any], f: str, rtype: Any, p: _Problems
) -> list[tuple[str, tuple[str, ...]]]:
    """The target's ``filters`` as ``(path, values)``, keeping those on a path Joiner
    filters on (``SUBNET_FILTER_PATHS`` for subnets, else ``FILTER_PATHS``)."""
    filters = []
    raw = t.get("filters") or []
    if not isinstance(raw, list):
        p.add(f"{f}.filters", "must be a list of {path, values: [...]}")
        raw = []
    for i, flt in enumerate(raw):
        if (
            not isinstance(flt, dict)
            or not isinstance(flt.get("path"), str)
            or not isinstance(flt.get("values"), list)
        ):
            p.add(f"{f}.filters[{i}]", "must be {path, values: [...]}")
            continue
        paths = SUBNET_FILTER_PATHS if rtype == "aws:ec2:subnet" else FILTER_PATHS
        if flt["path"] not in paths:
            p.add(
                f"{f}.filters[{i}].path",
                f"{flt['path']!r} is not supported for {rtype} targets "
                f"(Joiner filters on {', '.join(paths)})",
            )
            continue
        filters.append((flt["path"], tuple(str(v) for v in flt["values"])))
    return filters


def _actions(raw: Any, targets: dict[str, Target], p: _Problems) -> dict[str, Action]:
    """The template's named actions, in name order; problems are added to ``p`` (an action
    that is not an object or whose ``actionId`` Joiner does not run is left out), and so is
    a cycle of ``startAfter``."""
    out: dict[str, Action] = {}
    if not isinstance(raw, dict) or not raw:
        p.add("actions", "must map action names to at least one action")
        return out
    for name, a in sorted(raw.items()):
        action = _action(name, a, raw, targets, p)
        if action is not None:
            out[name] = action
    # Over every named action, valid or not: a cycle through an action that has another
    # problem is still a cycle (FIS rejects the template for both).
    _check_cycles(
        {
            name: [d for d in (a.get("startAfter") or []) if isinstance(d, str)]
            if isinstance(a, dict) and isinstance(a.get("startAfter") or [], list)
            else []
            for name, a in raw.items()
        },
        p,
    )
    return out


def _action(
    name: str, a: Any, raw: dict[str, Any], targets: dict[str, Target], p: _Problems
) -> Action | None:
    """One action object (FIS ``CreateExperimentTemplateActionInput``), or None when it is
    not an object or its ``actionId`` is not one of ``ACTIONS``; ``raw`` holds every action,
    for ``startAfter``."""
    f = f"actions.{name}"
    if not isinstance(a, dict):
        p.add(f, "must be an action object")
        return None
    for key in sorted(set(a) - ACTION_KEYS):
        p.add(f"{f}.{key}", "unknown field")
    raw_id = a.get("actionId")
    action_id = raw_id if isinstance(raw_id, str) else repr(raw_id)
    spec = ACTIONS.get(action_id)
    if spec is None:
        p.add(
            f"{f}.actionId",
            f"{action_id!r} is not supported; Joiner runs: {', '.join(ACTIONS)}",
        )
        return None
    params = _action_parameters(a, f, action_id, spec, p)
    target_name = _action_target(a, f, action_id, spec, targets, p)
    after = a.get("startAfter") or []
    if not isinstance(after, list) or not all(isinstance(x, str) for x in after):
        p.add(f"{f}.startAfter", "must be a list of action names")
        after = []
    for dep in after:
        if dep not in raw:
            p.add(f"{f}.startAfter", f"names action {dep!r}, which is not defined")
    return Action(name, action_id, tuple(sorted(params.items())), target_name, tuple(after))


def _action_parameters(
    a: dict[str, Any], f: str, action_id: str, spec: ActionSpec, p: _Problems
) -> dict[str, str]:
    """The action's ``parameters`` (empty when not a map of strings): the required ones
    present, no others than ``spec`` names, each value checked by ``_check_params``."""
    params = a.get("parameters") or {}
    if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
        p.add(f"{f}.parameters", "must map parameter names to strings")
        params = {}
    for key in spec.required:
        if key not in params:
            p.add(f"{f}.parameters.{key}", "required parameter is missing")
    for key in sorted(set(params) - set(spec.required) - set(spec.optional)):
        p.add(f"{f}.parameters.{key}", f"not a parameter of {action_id}")
    _check_params(action_id, params, f, p)
    return params


def _action_target(
    a: dict[str, Any],
    f: str,
    action_id: str,
    spec: ActionSpec,
    targets: dict[str, Target],
    p: _Problems,
) -> str | None:
    """The name of the target the action's ``targets`` names under ``spec.target_key``
    (None when it names none that is defined); the target must be of ``spec``'s resource
    type, and an action that needs a target and has no other target problem is told so."""
    target_name: str | None = None
    refs = a.get("targets") or {}
    if not isinstance(refs, dict):
        p.add(f"{f}.targets", "must map the target key to a target name")
        refs = {}
    for key, ref in refs.items():
        if not isinstance(ref, str):
            p.add(
                f"{f}.targets.{key}",
                "must name a top-level target (a string); target definitions belong under "
                "the template's targets",
            )
            continue
        if key != spec.target_key:
            p.add(f"{f}.targets.{key}", f"{action_id} takes target key {spec.target_key!r}")
            continue
        target = targets.get(ref)
        if target is None:
            p.add(
                f"{f}.targets.{key}",
                f"names target {ref!r}, which is not defined under targets; define it as "
                + _TARGET_SHAPE.replace("<name>", ref),
            )
            continue
        if target.resource_type != spec.resource_type:
            p.add(
                f"{f}.targets.{key}",
                f"target {ref!r} is {target.resource_type}; {action_id} takes {spec.resource_type}",
            )
        target_name = ref
    if (
        spec.target_key is not None
        and target_name is None
        and not any(it.startswith(f"field {f}.targets") for it in p.items)
    ):
        p.add(f"{f}.targets", f"{action_id} needs targets.{spec.target_key}")
    return target_name


def _check_params(action_id: str, params: dict[str, str], f: str, p: _Problems) -> None:
    bounds = {
        "durationBeforeInterruption": (120.0, 900.0),
        "duration": (1.0, 12 * 3600.0),
        "startInstancesAfterDuration": (60.0, 12 * 3600.0),
    }
    for key, (low, high) in bounds.items():
        if key not in params:
            continue
        try:
            seconds = iso_seconds(params[key])
        except ValueError as exc:
            p.add(f"{f}.parameters.{key}", f"{params[key]!r} is not an ISO 8601 duration ({exc})")
            continue
        if not low <= seconds <= high:
            p.add(
                f"{f}.parameters.{key}",
                f"{params[key]} is out of range ({_iso(low)} to {_iso(high)})",
            )
    if "percentage" in params:
        value = params["percentage"]
        if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 100:
            p.add(f"{f}.parameters.percentage", f"{value!r} must be a whole number from 1 to 100")


def _iso(seconds: float) -> str:
    return "PT" + (f"{int(seconds // 60)}M" if seconds % 60 == 0 else f"{int(seconds)}S")


def _check_cycles(after: dict[str, list[str]], p: _Problems) -> None:
    """Report the actions caught in ``startAfter`` cycles (``after``: action -> the actions
    it starts after), in near-linear time (Kahn's algorithm, no recursion)."""
    stuck = _topological(after)[1]
    if stuck:
        shown = ", ".join(stuck[:5]) + (f" and {len(stuck) - 5} more" if len(stuck) > 5 else "")
        p.add(f"actions.{stuck[0]}.startAfter", f"circular startAfter among {shown}")


def load_template(path: Path | str) -> Template:
    """Read and validate a template file (see ``parse_template``)."""
    path = Path(path)
    return parse_template(read_text(path, what="experiment template"), str(path))
