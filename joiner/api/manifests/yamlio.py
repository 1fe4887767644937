"""YAML reading with positions in errors (the only place PyYAML is called for manifests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from joiner.api.errors import InputError


def read_documents(path: Path) -> list[Any]:
    """All documents of a multi-document YAML (or JSON) file, empty documents dropped.

    Raises:
        InputError: the file is missing or unreadable, or not valid YAML (with line and column).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError("file not found", file=str(path)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=str(path)) from exc
    return parse_documents(text, str(path))


def parse_documents(text: str, name: str) -> list[Any]:
    """Parse YAML text; ``name`` is used in error messages."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"YAML syntax error at {where}{problem}", file=name) from exc
    except yaml.YAMLError as exc:
        raise InputError(f"YAML syntax error: {exc}", file=name) from exc
    return [d for d in docs if d is not None]
