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

from joiner.api.manifests import models as m

#: Kubernetes' default ``terminationGracePeriodSeconds``.
DEFAULT_GRACE_S = 30.0

_SLEEP = re.compile(r"(?:^|[\s;&|])sleep\s+(\d+(?:\.\d+)?)")


def grace_seconds(spec: m.PodSpec) -> float:
    """``terminationGracePeriodSeconds`` (30 when unset); a bad value is taken as unset."""
    value: Any = spec.terminationGracePeriodSeconds
    try:
        return max(0.0, float(value)) if value is not None else DEFAULT_GRACE_S
    except (TypeError, ValueError):
        return DEFAULT_GRACE_S


def _hook_seconds(hook: Any, grace: float) -> float:
    if not isinstance(hook, dict):
        return 0.0
    sleep = hook.get("sleep")
    if isinstance(sleep, dict):
        try:
            return float(sleep.get("seconds", 0))
        except (TypeError, ValueError):
            return grace
    command = hook.get("exec", {}).get("command") if isinstance(hook.get("exec"), dict) else None
    if isinstance(command, list):
        found = _SLEEP.search(" ".join(str(c) for c in command))
        return float(found.group(1)) if found else grace
    return grace


def shutdown_seconds(spec: m.PodSpec) -> float:
    """Seconds from eviction until the pod is gone (module docstring)."""
    grace = grace_seconds(spec)
    longest = 0.0
    for c in spec.containers:
        lifecycle = c.lifecycle if isinstance(c.lifecycle, dict) else {}
        if "preStop" in lifecycle:
            longest = max(longest, _hook_seconds(lifecycle["preStop"], grace))
    return min(longest, grace)
