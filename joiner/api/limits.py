"""Joiner's own limits on what it simulates (not API rules), shared by the manifest models
and the messages that explain them (``joiner.api.validation``)."""

from __future__ import annotations

#: Kubernetes caps replica counts at int32; Joiner simulates at most this many pods per workload.
MAX_REPLICAS = 100_000
