"""The one cleaning of text from an input before it is shown: on a terminal
(``joiner.cli.safeconsole``), in an HTML page or a plot (``joiner.sim.pages``). A name or
label value from the user's files or a cluster may hold ESC, BEL, a CSI, C1 controls or a
bidirectional override; shown raw, they recolour or rewrite the terminal, or reorder a
report's text. Data files keep the value exact instead (CSV quoted, JSON escaped).
"""

from __future__ import annotations

#: Line feeds and tabs, deleted by ``str.translate`` to test the rest of a text at C speed.
_BREAKS = str.maketrans("", "", "\n\t")


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with each character that is not printable (``str.isprintable``: C0 and C1
    controls, DEL, bidirectional embeddings, overrides and isolates, line and paragraph
    separators) replaced by ``?``; line feeds and tabs are kept unless ``keep_newlines`` is
    False (one-line places: a table cell, a plot label)."""
    if text.isprintable() or (keep_newlines and text.translate(_BREAKS).isprintable()):
        return text
    keep = "\n\t" if keep_newlines else ""
    return "".join(ch if ch.isprintable() or ch in keep else "?" for ch in text)
