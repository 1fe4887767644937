"""``require``: an optional dependency imported on use, or an error naming its extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.extras import MissingExtraError, require


def test_an_installed_module_is_returned() -> None:
    assert require("json", "report", "test") is sys.modules["json"]


def test_a_missing_module_names_the_extra_to_install() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'joiner\[lp\]'") as exc:
        require("joiner_no_such_solver", "lp", "packing: cost-optimal")
    assert isinstance(exc.value, InputError)
    assert str(exc.value).startswith("packing: cost-optimal needs joiner_no_such_solver")


def test_a_broken_install_is_not_blamed_on_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module is there but imports one that is not: that error is raised as it is."""
    (tmp_path / "joiner_broken_dep.py").write_text("import joiner_missing_inner\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as exc:
        require("joiner_broken_dep", "report", "test")
    assert not isinstance(exc.value, MissingExtraError)
    assert exc.value.name == "joiner_missing_inner"
