"""A printed next step names the program as the user can run it again from the same shell
(``cli.common.program``): ``joiner`` when that is on PATH, else the path Joiner was started
by, such as ``.venv/bin/joiner`` before the virtual environment is activated."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from joiner.cli.common import program


def _script(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_script_not_on_path_is_named_by_its_path(tmp_path, monkeypatch) -> None:
    script = _script(tmp_path / ".venv/bin/joiner")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [".venv/bin/joiner", "import"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert program() == ".venv/bin/joiner"
    assert Path(program()).resolve() == script.resolve()


def test_the_script_on_path_is_named_joiner(tmp_path, monkeypatch) -> None:
    script = _script(tmp_path / "venv/bin/joiner")
    monkeypatch.setattr(sys, "argv", [str(script), "import"])
    monkeypatch.setenv("PATH", os.pathsep.join([str(script.parent), "/usr/bin"]))
    assert program() == "joiner"


@pytest.mark.parametrize("argv0", ["/x/joiner/__main__.py", "", "pytest"])
def test_python_m_joiner_and_tests_print_joiner(monkeypatch, argv0: str) -> None:
    monkeypatch.setattr(sys, "argv", [argv0])
    assert program() == "joiner"


def test_a_relative_start_keeps_its_dot(tmp_path, monkeypatch) -> None:
    _script(tmp_path / "joiner")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["./joiner"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert program() == "./joiner"


def test_a_symlink_of_another_name_is_named_by_its_path(tmp_path, monkeypatch) -> None:
    script = _script(tmp_path / "venv/bin/joiner")
    link = tmp_path / "dir with space" / "jnr"
    link.parent.mkdir()
    link.symlink_to(script)
    monkeypatch.setattr(sys, "argv", [str(link)])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert program() == f"'{link}'"  # quoted for the shell: the path has a space
    monkeypatch.setenv("PATH", str(link.parent))
    assert program() == "jnr"
