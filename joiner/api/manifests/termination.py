"""How long a pod takes to stop once evicted: its preStop hooks, bounded by
``terminationGracePeriodSeconds``.

Kubernetes (kubelet ``killContainer``): on deletion the kubelet runs each container's
``lifecycle.preStop`` hook, then sends SIGTERM, and kills whatever still runs when
``terminationGracePeriodSeconds`` (default 30) has passed since the deletion; containers
stop in parallel. Joiner takes the pod's shutdown to be its longest preStop hook (a
``sleep`` action's ``seconds``, or an ``exec`` of ``sleep N``), capped by the grace period;
a hook whose length it cannot read (``httpGet``, another command) is taken to use the whole
grace period; a container without a hook is taken to exit at once on SIGTERM.
"""

from __future__ import annotations

import re
from typing import Any

from joiner.api.errors import InputError
from joiner.api.manifests import models as m
from joiner.api.pods import DEFAULT_TERMINATION_GRACE_PERIOD_S

#: Kubernetes' default ``terminationGracePeriodSeconds``.
DEFAULT_GRACE_S = DEFAULT_TERMINATION_GRACE_PERIOD_S

_SLEEP = re.compile(r"(?:^|[\s;&|])sleep\s+(\d+(?:\.\d+)?)")


def grace_seconds(spec: m.PodSpec) -> float:
    """``terminationGracePeriodSeconds`` (30 when unset; a negative value counts as 0)."""
    value = spec.terminationGracePeriodSeconds
    return max(0.0, float(value)) if value is not None else DEFAULT_GRACE_S


def _hook_seconds(hook: Any, grace: float, field: str) -> float:
    """Seconds a ``preStop`` hook runs (module docstring).

    Raises:
        InputError: a ``sleep`` action whose ``seconds`` is not a whole number (the API
            server's decoding rejects it: ``SleepAction.seconds`` is an int64).
    """
    if not isinstance(hook, dict):
        return 0.0
    sleep = hook.get("sleep")
    if isinstance(sleep, dict):
        seconds = sleep.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            raise InputError(
                f"must be a whole number of seconds, got {seconds!r}", field=f"{field}.seconds"
            )
        return float(seconds)
    command = hook.get("exec", {}).get("command") if isinstance(hook.get("exec"), dict) else None
    if isinstance(command, list):
        found = _SLEEP.search(" ".join(str(c) for c in command))
        return float(found.group(1)) if found else grace
    return grace


def shutdown_seconds(spec: m.PodSpec, field: str = "spec") -> float:
    """Seconds from eviction until the pod is gone (module docstring); ``field`` is the pod
    spec's path, for errors.

    Raises:
        InputError: as ``_hook_seconds``.
    """
    grace = grace_seconds(spec)
    longest = 0.0
    for i, c in enumerate(spec.containers):
        lifecycle = c.lifecycle if isinstance(c.lifecycle, dict) else {}
        if "preStop" in lifecycle:
            where = f"{field}.containers[{i}].lifecycle.preStop.sleep"
            longest = max(longest, _hook_seconds(lifecycle["preStop"], grace, where))
    return min(longest, grace)
