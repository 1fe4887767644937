"""Disruption: emptiness, drift and consolidation within budgets (Karpenter ``disruption``)."""

from joiner.controllers.disruption.command import Command, Replacement
from joiner.controllers.disruption.controller import DisruptionController, DisruptionStats

__all__ = ["Command", "DisruptionController", "DisruptionStats", "Replacement"]
