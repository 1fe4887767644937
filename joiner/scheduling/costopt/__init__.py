"""Joiner's own packing policy (``packing: cost-optimal``) and the cost lower bound.

``CostOptimalScheduler`` (``solver``) is a ``Scheduler`` that minimises the hourly price of a
launch with the faithful scheduler's predicates; ``lower_bound`` (``lp``) is the LP bound
any plan's cost is at least. ``scheduler_for`` maps a ``packing`` setting to its scheduler.
"""

from joiner.api.extras import require
from joiner.scheduling.costopt.lp import lower_bound
from joiner.scheduling.costopt.solver import CostOptimalScheduler, plan_cost
from joiner.scheduling.scheduler import Scheduler

#: ``packing`` values: Karpenter's algorithm (the default) and Joiner's own.
KARPENTER = "karpenter"
COST_OPTIMAL = "cost-optimal"
PACKINGS = (KARPENTER, COST_OPTIMAL)


def scheduler_for(packing: str) -> Scheduler:
    """The scheduler of a ``packing`` setting.

    ``cost-optimal`` solves LPs with highspy (the ``lp`` extra); it is checked here, so a
    missing solver stops a run before its first launch rather than at it.

    Raises:
        ValueError: ``packing`` is not one of ``PACKINGS`` (settings validate it first).
        MissingExtraError: ``cost-optimal`` without highspy installed.
    """
    if packing == KARPENTER:
        return Scheduler()
    if packing == COST_OPTIMAL:
        require("highspy", "lp", "packing: cost-optimal")
        return CostOptimalScheduler()
    raise ValueError(f"unknown packing {packing!r}; known: {', '.join(PACKINGS)}")


__all__ = [
    "COST_OPTIMAL",
    "KARPENTER",
    "PACKINGS",
    "CostOptimalScheduler",
    "lower_bound",
    "plan_cost",
    "scheduler_for",
]
