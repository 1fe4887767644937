"""JSON and TOML text parsed into Python values with every failure an ``InputError``: a
syntax error (with line and column), nesting deeper than the parser can follow (the
"billion brackets" file, a ``RecursionError`` otherwise), and values JSON cannot hold
(integers of more than 4,300 digits). Every reader of a JSON or TOML input goes through it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from joiner.api.errors import InputError


def parse_json(
    text: str,
    *,
    what: str = "JSON",
    file: str | None = None,
    obj: str | None = None,
    field: str | None = None,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """``json.loads(text)``; ``what`` names the text in messages (e.g. "the Spot price
    history").

    Raises:
        InputError: not JSON, nested too deeply, or a value that cannot be read; located
            by ``file``, ``obj`` and ``field``.
    """
    where = {"file": file, "obj": obj, "field": field}
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}", **where
        ) from exc
    except RecursionError as exc:
        raise InputError(f"{what} is nested too deeply", **where) from exc
    except ValueError as exc:  # integers past Python's digit limit, a hook's refusal
        raise InputError(f"{what} holds a value that cannot be read: {exc}", **where) from exc


def parse_toml(
    text: str, *, what: str = "TOML", file: str | None = None, field: str | None = None
) -> dict[str, Any]:
    """``tomllib.loads(text)``.

    Raises:
        InputError: not valid TOML (the parser's message, with line and column), nested too
            deeply, or a value that cannot be read.
    """
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{what} is not valid TOML: {exc}", file=file, field=field) from exc
    except RecursionError as exc:
        raise InputError(f"{what} is nested too deeply", file=file, field=field) from exc
    except ValueError as exc:
        raise InputError(
            f"{what} holds a value that cannot be read: {exc}", file=file, field=field
        ) from exc
