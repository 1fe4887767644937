"""The CreateFleet strategies Karpenter-AWS asks for when a NodeOverlay priced an option
(``pkg/providers/instance/types.go`` ``WithOverlay``)."""

from __future__ import annotations

from joiner.cloudprovider.aws.fleet import fleet_request


def test_an_overlaid_launch_asks_for_the_prioritized_strategies():
    assert fleet_request([], "spot", ())["SpotOptions"] == {
        "AllocationStrategy": "price-capacity-optimized"
    }
    assert fleet_request([], "spot", (), prioritized=True)["SpotOptions"] == {
        "AllocationStrategy": "capacity-optimized-prioritized"
    }
    assert fleet_request([], "on-demand", ())["OnDemandOptions"] == {
        "AllocationStrategy": "lowest-price"
    }
    assert fleet_request([], "on-demand", (), prioritized=True)["OnDemandOptions"] == {
        "AllocationStrategy": "prioritized"
    }
