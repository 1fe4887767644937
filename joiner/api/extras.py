"""Optional dependencies: import one where it is used, or say which extra to install.

``pip install joiner`` brings what controller mode, ``plan`` and ``simulate`` need. The rest
are extras declared in ``pyproject.toml``: ``report`` (matplotlib and Jinja2 for the HTML
reports), ``lp`` (highspy, for ``packing: cost-optimal``), ``aws`` (boto3 and tomli-w, for
``--cloud aws``) and ``ray`` (sweeps on a Ray cluster). A module that needs one calls
``require`` in the function that uses it, never at import time, so the base install imports
none of them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from joiner.api.errors import InputError


class MissingExtraError(InputError):
    """An optional dependency is not installed; the message names the extra that brings it
    (``pip install 'joiner[report]'``). An ``InputError``: the CLI exits 2 and nothing runs."""


def require(module: str, extra: str, needed_for: str) -> ModuleType:
    """The imported ``module`` (e.g. ``"highspy"``), brought by the extra ``extra``.

    ``needed_for`` names the feature in the message (``"packing: cost-optimal"``).

    Raises:
        MissingExtraError: ``module`` (or a package it is inside) is not installed.
        ImportError: ``module`` is installed but fails to import for another missing
            module (a broken install is not hidden behind the extra's advice).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name not in (module, top):
            raise
        raise MissingExtraError(
            f"{needed_for} needs {top}, which is not installed: pip install 'joiner[{extra}]'"
        ) from exc


__all__ = ["MissingExtraError", "require"]
