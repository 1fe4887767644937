"""Node repair: Karpenter's node health controller (``NodeRepair`` feature gate)."""
