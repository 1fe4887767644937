"""Controller mode beside Karpenter-kwok (settings ``kwokInstanceTypes``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.cluster.kube import client as kube
from joiner.operator.controller import ControllerRuntime, ControllerSettings
from joiner.operator.controller_settings import load_settings


def test_kwok_settings_watch_kwoknodeclasses_not_ec2nodeclasses(tmp_path: Path) -> None:
    """A Karpenter-kwok cluster serves no EC2NodeClass: listing it would 404 forever."""
    runtime = ControllerRuntime(
        None,
        settings=ControllerSettings(kwokInstanceTypes=str(tmp_path / "types.json")),
        dry_run=True,
        metrics_port=None,
        health_port=None,
    )
    kinds = {k.kind for k in runtime.watched}
    assert "KWOKNodeClass" in kinds and "EC2NodeClass" not in kinds
    plain = ControllerRuntime(None, dry_run=True, metrics_port=None, health_port=None)
    assert kube.EC2NODECLASS in plain.watched and kube.KWOKNODECLASS not in plain.watched


def test_kwok_setting_is_validated(tmp_path: Path) -> None:
    bad = tmp_path / "settings.yaml"
    bad.write_text("kwokInstanceTypes: [1]\n")
    with pytest.raises(InputError, match="kwokInstanceTypes"):
        load_settings(bad)
