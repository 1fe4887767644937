"""The simulated cloud: the default CloudProvider, on the packaged EC2 catalog."""

from joiner.cloudprovider.simulated.provider import SimulatedCloudProvider, default_subnets

__all__ = ["SimulatedCloudProvider", "default_subnets"]
