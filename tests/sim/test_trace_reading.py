"""Reading a trace: the plain form (``workloads._clean_values``, one pattern over the text)
gives the values the row-by-row CSV reading gives, and any other text is read row by row,
so every error names the same line and says the same thing."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.sim.workloads import _clean_values, _values_by_row, load_trace


def _outcome(read: Callable[[], tuple[float, ...]]) -> tuple[float, ...] | str:
    try:
        return read()
    except InputError as exc:
        return f"error: {exc}"


#: Cells the plain form takes, and some it refuses (each read row by row instead).
_PLAIN_VALUES = ["0", "3", "12.5", "7.", "1e3", "2.5E-2", "00", "123456789"]
_OTHER_VALUES = ["-1", " 4", "4 ", '"4"', ".5", "nan", "inf", "1_0", "+2", "0x1", "", "1,2"]


def _mutate(rng: random.Random, rows: list[list[str]]) -> None:
    """One change of the kind a hand-written or foreign trace has."""
    kind = rng.randrange(8)
    i = rng.randrange(len(rows))
    if kind == 0:
        rows[i][1] = rng.choice(_OTHER_VALUES)
    elif kind == 1:
        rows[i][0] = rng.choice(["-1", "01", "1234567890", " 0", "a", str(i + 1), ""])
    elif kind == 2:
        del rows[i]
    elif kind == 3:
        rows.insert(i, [])
    elif kind == 4:
        rows[i].append("x")
    elif kind == 5:
        rows[i][1] = rng.choice(["1e400", "1e308", "9" * 400])
    elif kind == 6:
        rows[i] = [rows[i][0]]
    else:
        rows[i][0] = f"{i:02d}"


def _text(rng: random.Random, rows: list[list[str]]) -> str:
    newline = rng.choice(["\n"] * 9 + ["\r\n"])
    header = rng.choice(["minute,value"] * 12 + ["minute, value", "time,value", ""])
    text = newline.join([header, *(",".join(r) for r in rows)])
    return text + rng.choice(["", newline, newline * 2])


@pytest.mark.parametrize("seed", range(300))
def test_plain_form_reads_as_row_by_row(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    rows = [[str(m), rng.choice(_PLAIN_VALUES)] for m in range(rng.randint(0, 30))]
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        if rows:
            _mutate(rng, rows)
    path = tmp_path / "t.csv"
    path.write_bytes(_text(rng, rows).encode())
    text = path.read_bytes().decode()
    expected = _outcome(lambda: _values_by_row(text, path))
    got = _outcome(
        lambda: load_trace(path, target_per_replica=1, min_replicas=0, max_replicas=9).values
    )
    assert got == expected
    fast = _clean_values(text)
    assert fast is None or fast == expected


def test_a_plain_trace_takes_one_pass() -> None:
    text = "minute,value\n" + "".join(f"{m},{m % 7}.5\n" for m in range(10_080))
    assert _clean_values(text) == tuple(m % 7 + 0.5 for m in range(10_080))
    # The last row may lack its newline.
    assert _clean_values("minute,value\n0,1\n1,2e1") == (1.0, 20.0)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("0,1\n2,5\n", "line 3: minute 2 out of sequence (expected 1)"),
        ("0,1\n1,1e400\n", "line 3: value '1e400' is too large"),
        ("0,1\n1,-4\n", "line 3: value -4 is negative"),
        ("0,1\n\n1,x\n", "line 4: expected two numbers 'minute,value', got '1,x'"),
        ("", "trace has no rows"),
    ],
)
def test_bad_rows_are_named_by_line(body: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("minute,value\n" + body)
    with pytest.raises(InputError, match=re.escape(message)):
        load_trace(path, target_per_replica=1, min_replicas=0, max_replicas=9)
