"""Decimal numbers written as text, as AWS and Go read them: ASCII digits only, an optional
sign, fraction and exponent. Python's ``float`` also takes ``1_000``, non-ASCII digits
(``٠.٥``, fullwidth ``０.５``), surrounding spaces, ``inf`` and ``nan``: an AWS price or a
kubelet percentage written so would be refused upstream (Go ``strconv.ParseFloat`` takes
underscores only after a base prefix, and only ASCII digits), so Joiner refuses it too.
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def ascii_decimal(text: str) -> float | None:
    """``text`` as a float when it is a plain ASCII decimal (``0.0346``, ``1e-3``, ``-2``),
    else None (the caller names the field in its error)."""
    return float(text) if _DECIMAL.fullmatch(text) else None


#: The range of an hourly instance price Joiner accepts, in USD per hour. AWS prints Spot
#: and on-demand prices with at most 6 decimals (``describe-spot-price-history``'s
#: ``SpotPrice`` such as ``0.003400``), so a positive price below 0.00001 USD/h is a typing
#: error, not a price; the dearest EC2 instance costs a few hundred USD per hour on demand,
#: and a Spot price never exceeds its on-demand price, so 10,000 USD/h bounds every real
#: one while keeping sums of thousands of nodes finite (``1e308`` would add up to infinity).
MIN_PRICE_PER_HOUR = 0.00001
MAX_PRICE_PER_HOUR = 10_000.0


def price_per_hour(text: str) -> float | None:
    """``text`` as a USD-per-hour price: an ASCII decimal (``ascii_decimal``) within
    ``MIN_PRICE_PER_HOUR``..``MAX_PRICE_PER_HOUR``, else None (the caller names the field
    and says the range in its error)."""
    value = ascii_decimal(text)
    if value is None or not MIN_PRICE_PER_HOUR <= value <= MAX_PRICE_PER_HOUR:
        return None
    return value
