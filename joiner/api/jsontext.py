"""JSON and TOML text parsed into Python values with every failure an ``InputError``: a
syntax error (with line and column), nesting deeper than the parser can follow (the
"billion brackets" file, a ``RecursionError`` otherwise), and values JSON cannot hold
(integers of more than 4,300 digits). Every reader of a JSON or TOML input goes through it.

And the JSON Joiner writes (``json_text``, ``escape_controls``): a string from an input
keeps its value but no raw control character reaches the file or the terminal.
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


def _utf16(ch: str) -> tuple[int, ...]:
    """``ch``'s UTF-16 code units (a surrogate pair above U+FFFF), as JSON escapes them."""
    data = ch.encode("utf-16-be")
    return tuple(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))


def escape_controls(text: str) -> str:
    """JSON ``text`` with each non-printable character (DEL, C1 controls, bidirectional
    overrides, line separators: RFC 8259 allows them raw inside strings) written as its
    ``\\uXXXX`` escape. The value read back is the same; only strings can hold such a
    character in JSON text, so nothing else changes."""
    if text.isascii() and "\x7f" not in text:
        return text
    # Raw C0 controls in JSON text are its white space (strings escape theirs): kept.
    table = {
        ord(ch): "".join(f"\\u{unit:04x}" for unit in _utf16(ch))
        for ch in set(text)
        if not ch.isprintable() and ch not in "\n\r\t"
    }
    return text.translate(table) if table else text


def json_text(value: Any, **dumps: Any) -> str:
    """``json.dumps(value, **dumps)`` without a raw control character (``escape_controls``):
    the text every JSON output file and document of Joiner is written as."""
    return escape_controls(json.dumps(value, **dumps))
