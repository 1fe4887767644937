"""Static capacity: static NodePools keep ``spec.replicas`` NodeClaims (Karpenter
``pkg/controllers/static``, behind the ``StaticCapacity`` gate)."""

from joiner.controllers.static.controller import StaticCapacityController

__all__ = ["StaticCapacityController"]
