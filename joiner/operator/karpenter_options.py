"""Karpenter's operator options as ``joiner run`` reads them: the settings-file key (as in
Karpenter's Helm chart, ``settings.*``), the environment variable and the flag of each, and
how their text is parsed (sigs.k8s.io/karpenter ``pkg/operator/options/options.go``
``AddFlags`` and karpenter-provider-aws ``pkg/operator/options/options.go`` ``AddFlags``).

Precedence is Karpenter's, with the file under it: a flag over its environment variable
(``env.WithDefault*`` makes the variable the flag's default), the variable over the
settings file, the file over the default. ``layers`` turns the flags and the environment
into partial settings documents that ``controller_settings.load_settings`` lays over the
file's before validating the whole once, so each value is checked by the one model.

Text values are parsed as Go parses them: durations by ``time.ParseDuration``'s grammar
(``1s``, ``500ms``, ``1m30s``; ``joiner.api.durations``), booleans by ``strconv.ParseBool``,
``FEATURE_GATES`` as component-base's ``MapStringBool`` (``Name=true,Other=false``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joiner.api.durations import parse_required_seconds
from joiner.api.errors import InputError
from joiner.api.featuregates import PARSE_BOOL

#: Karpenter's gate names -> the ``featureGates`` keys of its Helm chart.
GATES = {
    "NodeRepair": "nodeRepair",
    "ReservedCapacity": "reservedCapacity",
    "SpotToSpotConsolidation": "spotToSpotConsolidation",
    "NodeOverlay": "nodeOverlay",
    "StaticCapacity": "staticCapacity",
    "CapacityBuffer": "capacityBuffer",
}


def go_duration_seconds(text: str) -> float:
    """Seconds in a Go duration string (``1s``, ``500ms``, ``1h2m``).

    The grammar is Go's ``time.ParseDuration`` (units ns, us, µs, ms, s, m, h only: ``1d``
    and ``2w`` are refused as Go refuses them), checked by ``joiner.api.durations``, the
    parser the manifests use.

    Raises:
        ValueError: not a Go duration (a bare number included: Go wants a unit), negative,
            or longer than Go's largest duration.
    """
    try:
        return parse_required_seconds(text)
    except InputError as exc:
        raise ValueError(exc.detail) from exc


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``.

    Raises:
        ValueError: any other spelling (``yes``, ``tRuE``).
    """
    value = PARSE_BOOL.get(text.strip())
    if value is None:
        raise ValueError(f"{text!r} is not a boolean (true, false, 1, 0, t, f)")
    return value


def parse_gates(text: str) -> dict[str, bool]:
    """``Name=true,Other=false`` as the ``featureGates`` keys it sets.

    Raises:
        ValueError: a pair without ``=``, an unknown gate, or a value ParseBool rejects.
    """
    out: dict[str, bool] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, raw = part.partition("=")
        key = GATES.get(name.strip())
        if not sep or key is None:
            raise ValueError(
                f"{part!r}: want Name=true|false with a Name of {', '.join(sorted(GATES))}"
            )
        out[key] = parse_bool(raw)
    return out


@dataclass(frozen=True, slots=True)
class Option:
    """One setting: its key path in the settings file, its variable, its flag, and the
    parser of its text (to the file's value)."""

    path: tuple[str, ...]
    env: str
    flag: str
    parse: Callable[[str], Any]

    @property
    def key(self) -> str:
        """The dotted settings-file key (``featureGates``, ``leaderElection.name``)."""
        return ".".join(self.path)


def _go_duration_text(text: str) -> str:
    go_duration_seconds(text)  # checked here, so the error names the variable or flag
    return text.strip()


def _not(text: str) -> bool:
    return not parse_bool(text)


#: Every option ``joiner run`` reads from a flag or the environment.
OPTIONS: tuple[Option, ...] = (
    Option(
        ("batchIdleDuration",), "BATCH_IDLE_DURATION", "--batch-idle-duration", _go_duration_text
    ),
    Option(("batchMaxDuration",), "BATCH_MAX_DURATION", "--batch-max-duration", _go_duration_text),
    Option(("featureGates",), "FEATURE_GATES", "--feature-gates", parse_gates),
    Option(("clusterName",), "CLUSTER_NAME", "--cluster-name", str.strip),
    Option(("clusterEndpoint",), "CLUSTER_ENDPOINT", "--cluster-endpoint", str.strip),
    Option(("interruptionQueue",), "INTERRUPTION_QUEUE", "--interruption-queue", str.strip),
    Option(("logLevel",), "LOG_LEVEL", "--log-level", str.strip),
    Option(("leaderElection", "name"), "LEADER_ELECTION_NAME", "--leader-election-name", str.strip),
    Option(
        ("leaderElection", "namespace"),
        "LEADER_ELECTION_NAMESPACE",
        "--leader-election-namespace",
        str.strip,
    ),
    Option(
        ("leaderElection", "enabled"),
        "DISABLE_LEADER_ELECTION",
        "--disable-leader-election",
        _not,
    ),
)


def layer(
    values: Mapping[str, str], *, by_flag: bool
) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The partial settings document given by ``values`` (flag -> text when ``by_flag``,
    else the environment: variable -> text), and, per key path set, the name it came from
    (for errors). Unset and empty variables are skipped (Go's ``env.WithDefault*``).

    Raises:
        InputError: a value that does not parse, naming the flag or variable.
    """
    doc: dict[str, Any] = {}
    origin: dict[tuple[str, ...], str] = {}
    for opt in OPTIONS:
        name = opt.flag if by_flag else opt.env
        text = values.get(name)
        if text is None or (not by_flag and text == ""):
            continue
        try:
            value = opt.parse(text)
        except ValueError as exc:
            obj = None if by_flag else "environment"
            raise InputError(str(exc), obj=obj, field=name) from exc
        node = doc
        for part in opt.path[:-1]:
            node = node.setdefault(part, {})
        node[opt.path[-1]] = value
        origin[opt.path] = name
    return doc, origin


def merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` laid on it, mappings merged key by key (a new dict)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(dict(out[key]), value)
        else:
            out[key] = value
    return out
