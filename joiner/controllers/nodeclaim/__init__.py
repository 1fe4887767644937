"""NodeClaim lifecycle: launch, registration, initialization (Karpenter ``nodeclaim/lifecycle``)."""
