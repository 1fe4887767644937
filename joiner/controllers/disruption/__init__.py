"""Disruption: emptiness, drift and consolidation within budgets (Karpenter ``disruption``)."""

from joiner.controllers.disruption.controller import DisruptionController, DisruptionStats
from joiner.controllers.disruption.methods import Command, Replacement

__all__ = ["Command", "DisruptionController", "DisruptionStats", "Replacement"]
