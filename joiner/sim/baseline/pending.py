"""Which unschedulable pods a Cluster Autoscaler loop acts on, by their age.

Upstream (cluster-autoscaler 1.36, ``core/static_autoscaler.go``): pods younger than
``--new-pod-scale-up-delay`` are left out (``filterOutYoungPods``), and a loop whose
remaining unschedulable pods are all younger than 2 s (30 s for the oldest one requesting a
GPU) scales nothing up and removes nothing, waiting for more pods to come
(``allPodsAreNew``, ``unschedulablePodTimeBuffer``, ``unschedulablePodWithGpuTimeBuffer``).
"""

from __future__ import annotations

from collections.abc import Callable

from joiner.cloudprovider.instancetype import NVIDIA_GPU
from joiner.scheduling import PodRequest
from joiner.state.cluster import ClusterState

UNSCHEDULABLE_POD_BUFFER_S = 2.0
UNSCHEDULABLE_GPU_POD_BUFFER_S = 30.0


def old_enough(
    state: ClusterState,
    requests: tuple[PodRequest, ...],
    now_s: float,
    delay_s: float,
    wake: Callable[[float], None],
) -> tuple[PodRequest, ...]:
    """The pods at least ``delay_s`` old at ``now_s`` (a pod exactly that old counts, so a
    delay of 0 keeps pods made this instant in virtual time); ``wake(t)`` is called with
    the time each younger pod comes of age, so the loop scans then."""
    if delay_s <= 0:
        return requests
    out = []
    for r in requests:
        born = state.pods[r.uid].created_at_s
        if now_s - born >= delay_s:
            out.append(r)
        else:
            wake(born + delay_s)
    return tuple(out)


def all_new(state: ClusterState, requests: tuple[PodRequest, ...], now_s: float) -> bool:
    """Whether the oldest of ``requests`` (non-empty) is younger than 2 s, or the oldest one
    requesting a GPU younger than 30 s."""
    born = [state.pods[r.uid].created_at_s for r in requests]
    if min(born) + UNSCHEDULABLE_POD_BUFFER_S > now_s:
        return True
    gpu = [
        b for r, b in zip(requests, born, strict=True) if r.template.requests.get(NVIDIA_GPU, 0) > 0
    ]
    return bool(gpu) and min(gpu) + UNSCHEDULABLE_GPU_POD_BUFFER_S > now_s
