"""Node termination: taint, drain through eviction within PodDisruptionBudgets, delete."""
