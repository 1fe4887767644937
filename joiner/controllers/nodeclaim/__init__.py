"""NodeClaim lifecycle phases: launch, registration, initialization (Karpenter ``nodeclaim/lifecycle``)."""
