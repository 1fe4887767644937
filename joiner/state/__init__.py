"""Cluster state: the one view of nodes, NodeClaims and pods that controllers read and write.

In simulation the state *is* the cluster (an in-memory store); in controller mode an
informer cache will fill it. Iteration is always in a stable order (by name or uid).
"""
