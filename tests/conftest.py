"""Fixtures for every test."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """The root logger's level and handlers as they were before the test: a CLI test that
    configures logging (``cli.common.configure_logging`` sets the root level to ERROR
    without ``-v``) would otherwise leave later tests' WARNING records unseen by
    ``caplog``."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers
