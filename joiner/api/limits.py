"""Joiner's own limits on what it simulates (not API rules), shared by the manifest models
and the messages that explain them (``joiner.api.validation``)."""

from __future__ import annotations

#: Kubernetes caps replica counts at int32; Joiner simulates at most this many pods per workload.
MAX_REPLICAS = 100_000
#: Joiner creates at most this many NodeClaims for one static NodePool (``spec.replicas``
#: within ``limits.nodes``): each is planned one by one, and the CRD takes any int64.
MAX_STATIC_NODECLAIMS = 10_000
