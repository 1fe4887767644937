"""Cloud events -> cordon, replace, drain: Karpenter's interruption handling plus NTH's
rebalance options, in one controller."""
