"""Wording shared by every message a person reads: plurals and grouped warnings.

A warning about many objects of one kind ("14 pods on nodes outside any NodePool") is one
line, not fourteen. Its full text names every object (``summary.json`` and ``-o json`` keep
it, and ``-v`` prints it); without ``-v`` a terminal shows the first few
(``short_form``).
"""

from __future__ import annotations

from collections.abc import Sequence

#: How many objects a grouped warning names without ``-v``.
SHOWN = 3

# Full text -> short text of the grouped warnings made in this process. The mapping is a
# pure function of the text, so it never changes an output; it only lets the command line
# print the short form of a warning that went through a JSON model as a plain string.
_SHORT: dict[str, str] = {}


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """``"1 node"``, ``"2 nodes"``, ``"0 nodes"``; ``plural_form`` for irregular nouns."""
    return f"{n} {singular if n == 1 else plural_form or singular + 's'}"


def grouped(head: str, items: Sequence[str]) -> str:
    """One warning naming every item: ``"<head>: a, b, c"``.

    ``head`` already holds the count and the noun (use ``plural``). The short form, which
    ``short_form`` returns, names the first ``SHOWN`` items and how many more ``-v`` lists.
    """
    text = f"{head}: {', '.join(items)}"
    if len(items) > SHOWN:
        rest = len(items) - SHOWN
        _SHORT[text] = f"{head}: {', '.join(items[:SHOWN])} and {rest} more (-v lists them all)"
    return text


def short_form(text: str) -> str:
    """The short form of a grouped warning, or ``text`` itself."""
    return _SHORT.get(text, text)
