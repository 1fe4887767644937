"""Joiner: just-in-time, Spot-first node provisioning for Kubernetes.

The sub-packages are the layers of ``docs/architecture.md``; imports go downward only
(checked by import-linter, see ``.importlinter``).
"""

__version__ = "0.1.0"
