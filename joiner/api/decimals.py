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
