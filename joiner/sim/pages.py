"""The HTML pages' shared parts: matplotlib figures as embedded PNGs and Jinja2 rendering.

Two pages use this module: ``joiner simulate --report`` (``joiner.sim.htmlreport``) and
``joiner sweep report --html`` (``joiner.operator.sweep.report``). Their templates live in
``joiner/templates/`` (package data). Escaping happens in one place, the Jinja2
environment's autoescape; values are spelled as :func:`html.escape` spells them (``&quot;``
and ``&#x27;`` for quotes), so the pages are byte-identical to the ones assembled by hand
before the templates existed.

matplotlib and Jinja2 are imported on first use: only the report code paths draw or render,
and both imports cost start-up time on every other command.
"""

from __future__ import annotations

import base64
import html
import io
from functools import cache
from typing import TYPE_CHECKING, Any

from joiner.api.extras import require
from joiner.api.printable import printable

if TYPE_CHECKING:
    import jinja2


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display needed), imported on first use:
    only the HTML pages draw, and importing matplotlib costs most of a second of start-up.

    Raises:
        MissingExtraError: matplotlib (the ``report`` extra) is not installed.
    """
    matplotlib = require("matplotlib", "report", "The HTML report")
    matplotlib.use("Agg")
    # No text of a plot is mathtext: a name such as ``$\\frobnicate$`` is drawn as written,
    # not parsed (an unknown command was a ValueError, a traceback).
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def plot_label(text: str) -> str:
    """A name from an input as a plot's label, title, tick or legend entry: on one line,
    each character that is not printable as ``?`` (``api.printable``), so matplotlib neither
    draws a control character nor warns about its missing glyph."""
    return printable(text, keep_newlines=False)


def figure_png(fig: Any) -> bytes:
    """``fig`` (a matplotlib Figure) as PNG bytes at 100 dpi, then closed.

    The PNG carries no ``Software`` metadata, so the bytes depend on the figure alone and
    not on the matplotlib version string.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    pyplot().close(fig)
    return buf.getvalue()


def png_data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,...`` URI embedding ``png``: the page needs no other file."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _finalize(value: object) -> object:
    """Every ``{{ value }}`` of a template, ``printable`` and escaped as
    :func:`html.escape` does (markup already marked safe passes as it is)."""
    import markupsafe

    if isinstance(value, markupsafe.Markup):
        return value
    return markupsafe.Markup(html.escape(printable(str(value))))


@cache
def _environment() -> jinja2.Environment:
    """The one Jinja2 environment of the HTML pages.

    Raises:
        MissingExtraError: Jinja2 (the ``report`` extra) is not installed.
    """
    require("jinja2", "report", "The HTML report")
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("joiner", "templates"),
        autoescape=True,
        finalize=_finalize,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def render_page(template: str, **context: object) -> str:
    """Render ``joiner/templates/<template>`` with ``context``; every value is HTML-escaped.

    Raises:
        jinja2.TemplateNotFound: no such template (a packaging error).
        jinja2.UndefinedError: the template names a value ``context`` lacks.
    """
    return _environment().get_template(template).render(**context)
