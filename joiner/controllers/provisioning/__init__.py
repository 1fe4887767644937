"""Pending pods -> NodeClaims: the batcher and the provisioner (Karpenter ``provisioning``)."""
