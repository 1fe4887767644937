"""The simulated Spot market's price memory does not grow with the run's length (a 100-year
run once grew its per-epoch caches until memory ran out), and forgetting changes no price."""

from __future__ import annotations

from joiner.cloudprovider.simulated import market as mk


def test_a_century_of_prices_keeps_memory_bounded_and_prices_unchanged(monkeypatch):
    monkeypatch.setattr(mk, "FACTOR_CACHE_SIZE", 1000)
    pool = ("c5.xlarge", "us-east-1a")
    m = mk.SpotMarket(seed=7)
    first = [m.price(pool, 0.1, e * mk.PRICE_EPOCH_S)[0] for e in range(50)]
    century_epochs = int(100 * 365 * 86400 / mk.PRICE_EPOCH_S)
    for e in range(50, century_epochs, 7):
        m.price(pool, 0.1, e * mk.PRICE_EPOCH_S)
    assert len(m._factor) <= 1000 and len(m._drift) == 1
    # Back to the start: the same prices, drawn again from the same seeded walk.
    again = [m.price(pool, 0.1, e * mk.PRICE_EPOCH_S)[0] for e in range(50)]
    assert again == first
    fresh = mk.SpotMarket(seed=7)
    assert [fresh.price(pool, 0.1, e * mk.PRICE_EPOCH_S)[0] for e in range(50)] == first
    assert len(set(first)) > 40  # the walk moves: not a constant
