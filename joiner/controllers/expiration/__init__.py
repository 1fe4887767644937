"""Expiration: NodeClaims past ``expireAfter`` are deleted (Karpenter ``nodeclaim/expiration``)."""

from joiner.controllers.expiration.controller import ExpirationController

__all__ = ["ExpirationController"]
