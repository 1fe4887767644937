"""Adapters between Joiner's cluster state and a real cluster (``kube/``: the Kubernetes API).

Below ``operator`` (the composition roots build them) and above ``controllers`` and
``state``: controllers never import this package; the composition root connects its
informers, actuator and ports to them.
"""
