"""Controllers: read ``state``, act through the CloudProvider, never sleep, never import ``sim``.

``provisioning`` turns pending pods into NodeClaims; ``nodeclaim`` drives each NodeClaim
through launch, registration and initialization.
"""
