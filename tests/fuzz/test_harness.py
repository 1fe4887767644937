"""The fuzz harness itself: a busy loop past the CPU budget is a hang, and the control
characters a command must never print are the ones the pattern finds."""

from __future__ import annotations

import pytest

from tests.fuzz.harness import CONTROL, Hang, cpu_budget


def test_a_busy_loop_past_the_cpu_budget_is_a_hang() -> None:
    with pytest.raises(Hang), cpu_budget(0.2):
        while True:
            pass


def test_a_case_within_the_budget_ends_normally() -> None:
    with cpu_budget(5):
        total = sum(range(1000))
    assert total == 499500


@pytest.mark.parametrize("ch", ["\x1b", "\x07", "\x00", "\x7f", "\x85", "\x9b", "\u202e", "\u2066"])
def test_control_characters_are_found(ch: str) -> None:
    assert CONTROL.search(f"name{ch}x")


def test_line_breaks_tabs_and_text_are_not_control_characters() -> None:
    assert not CONTROL.search("a\tb\nc ✓ é ü 日本 ?")
