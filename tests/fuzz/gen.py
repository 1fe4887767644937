"""Structure-aware mutations shared by the fuzz tests: a document (as parsed from YAML,
JSON or TOML) with a few values replaced by hostile ones, deleted, renamed or wrapped, and
text cut or corrupted. ``DEEP`` in a value becomes, once the document is written as text,
a list nested far beyond any parser's recursion limit (``deepen``)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.api.test_bad_input import _paths

FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)
#: Replaced by ``deepen`` with a list nested ``DEPTH`` deep (beyond any parser's limit),
#: ``NEARLY_DEEP`` with one nested ``NEARLY_DEPTH`` deep (a parser may read it; what walks
#: the value after it must not overflow either).
DEEP = "DEEPNESTINGHERE"
DEPTH = 20_000
NEARLY_DEEP = "NEARLYDEEPHERE"
NEARLY_DEPTH = 900

#: Text the issue's hostile inputs were made of: numbers beyond int32 and int64, signs and
#: strings where numbers go, non-ASCII digits and underscores, non-DNS names, terminal
#: escapes and bidirectional overrides, a CronJob ``@every``, 40 KB of text.
WEIRD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "٣",  # an Arabic-Indic digit: isdigit() but not ASCII
        "１０m",  # full-width digits
        "0.1_2",
        "1_000",
        "٠.٠٥",
        "1e400",
        "-1",
        "3",
        "99999999999999999999999",
        "NaN",
        "inf",
        "\x1b[31mred\x1b[0m",
        "\x1b]0;title\x07",
        "\x9b2J",
        "evil\u202etxt.exe",
        ":x: :rocket:",
        "[bold]markup[/bold]",
        "a\nb",
        "Not_A.DNS..name",
        "UPPER",
        "x" * 300,
        "*",
        "500m",
        "1h",
        "P1D",
        "@every 5m",
        "@hourly",
        "TZ=UTC 0 * * * *",
        "true",
        "null",
        "us-east-1",
        "0 * * * *",
        "x" * 40_000,
        DEEP,
        NEARLY_DEEP,
    ]
)
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31, 2**31 - 1, 2**63, 100_000, 10**9, 10**12]),
    st.floats(allow_nan=True, allow_infinity=True),
    WEIRD_TEXT,
    st.text(max_size=12),
    st.lists(st.integers(min_value=-3, max_value=3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(max_value=3), max_size=2),
)


def mutate(doc: Any, data: st.DataObject, values: st.SearchStrategy[Any] = VALUES) -> Any:
    """A copy of ``doc`` with one to three of its values replaced, deleted, renamed (the
    key gains an ``x``) or wrapped in a list."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3), label="mutations")):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return data.draw(values)
        path = data.draw(st.sampled_from(paths), label="path")
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        key = path[-1]
        how = data.draw(st.sampled_from(["replace", "delete", "rename", "wrap"]), label="how")
        if how == "replace" or (how in ("delete", "rename") and isinstance(parent, list)):
            parent[key] = data.draw(values, label="value")
        elif how == "delete":
            del parent[key]
        elif how == "rename":
            parent[f"{key}x"] = parent.pop(key)
        else:
            parent[key] = [parent[key]]
    return doc


def deepen(text: str) -> str:
    """``text`` with each quoted or bare ``DEEP`` a list nested ``DEPTH`` deep, and each
    ``NEARLY_DEEP`` one nested ``NEARLY_DEPTH`` deep."""
    for token, depth in ((DEEP, DEPTH), (NEARLY_DEEP, NEARLY_DEPTH)):
        deep = "[" * depth + "]" * depth
        text = text.replace(f'"{token}"', deep).replace(f"'{token}'", deep).replace(token, deep)
    return text


def corrupt(text: str, data: st.DataObject) -> str:
    """``text`` cut somewhere, with a piece of syntax or a bad character put in."""
    at = data.draw(st.integers(min_value=0, max_value=len(text)), label="at")
    junk = data.draw(
        st.sampled_from(
            ["", "\t", ": :", "- [", "&a", "*a", "<<: *a", "\x00", "'", "{", "%", ",", "\udcff"]
        ),
        label="junk",
    )
    return text[:at] + junk + text[at + data.draw(st.integers(0, 20), label="cut") :]


def write(path: Any, text: str) -> Any:
    """Write ``text`` to ``path`` as UTF-8; a ``\\udcff`` from ``corrupt`` is the invalid
    byte 0xff. Returns ``path``."""
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return path
