"""Domain types and manifest loading: the lowest layer, imported by every other one.

Holds the values every controller shares (quantities, durations, well-known labels, the
requirement algebra, NodePool/NodeClass/Pod views) and the edge that turns Kubernetes and
Karpenter manifests into them (``joiner.api.manifests``).
"""
