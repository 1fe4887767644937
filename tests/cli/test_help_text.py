"""``joiner --help`` lists each command's first help paragraph as one paragraph (the
new-user trial found typer's rich mode printing the docstrings' line breaks mid-sentence)."""

from __future__ import annotations

import typer

from joiner.cli.main import app


def test_every_command_in_the_list_has_a_one_paragraph_summary() -> None:
    group = typer.main.get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    assert {"simulate", "plan", "run", "lint"} <= set(commands)
    for name, command in commands.items():
        if not command.help:
            continue
        assert command.short_help, name
        assert "\n" not in command.short_help, name
        first = command.help.split("\n\n")[0]
        assert command.short_help == " ".join(first.split()), name
