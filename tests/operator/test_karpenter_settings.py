"""``joiner run``'s settings under Karpenter's names: flags, environment variables and the
settings file, one model, precedence flag > variable > file > default
(``operator/karpenter_options.py``, ``operator/controller_settings.py``)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.cli.main import app
from joiner.operator.controller_settings import load_settings
from joiner.operator.karpenter_options import OPTIONS, go_duration_seconds, parse_gates


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    return path


def test_precedence_is_flag_then_environment_then_file_then_default(tmp_path: Path) -> None:
    path = _file(tmp_path, "batchIdleDuration: 2s\nbatchMaxDuration: 1m\nclusterName: file\n")
    assert load_settings(None).batchIdleDuration == 1.0  # Karpenter's default
    assert load_settings(path).batchIdleDuration == 2.0
    env = {"BATCH_IDLE_DURATION": "3s", "CLUSTER_NAME": "env"}
    s = load_settings(path, env=env)
    assert (s.batchIdleDuration, s.batchMaxDuration, s.clusterName) == (3.0, 60.0, "env")
    flags = {"--batch-idle-duration": "500ms", "--cluster-name": "flag"}
    s = load_settings(path, env=env, flags=flags)
    assert (s.batchIdleDuration, s.clusterName) == (0.5, "flag")
    # An empty variable is unset, as Go's env.WithDefault* reads it.
    assert load_settings(path, env={"BATCH_IDLE_DURATION": ""}).batchIdleDuration == 2.0


def test_karpenter_variables_set_the_settings_they_name() -> None:
    env = {
        "BATCH_MAX_DURATION": "1m30s",
        "FEATURE_GATES": "SpotToSpotConsolidation=true,NodeRepair=T,NodeOverlay=false",
        "CLUSTER_ENDPOINT": "https://api.example",
        "INTERRUPTION_QUEUE": "my-cluster",
        "LOG_LEVEL": "debug",
        "LEADER_ELECTION_NAME": "karpenter-leader-election",
        "LEADER_ELECTION_NAMESPACE": "kube-system",
        "DISABLE_LEADER_ELECTION": "true",
        "REGION": "mars-1",  # not one of Karpenter's variables: ignored
    }
    s = load_settings(None, env=env)
    assert s.batchMaxDuration == 90.0
    assert s.featureGates.spotToSpotConsolidation and s.featureGates.nodeRepair
    assert s.featureGates.reservedCapacity  # a gate not named keeps its value
    assert (s.clusterEndpoint, s.interruptionQueue, s.logLevel) == (
        "https://api.example",
        "my-cluster",
        "debug",
    )
    le = s.leaderElection
    assert (le.name, le.namespace, le.enabled) == (
        "karpenter-leader-election",
        "kube-system",
        False,
    )


def test_feature_gates_from_the_environment_lay_over_the_files_gate_by_gate(
    tmp_path: Path,
) -> None:
    path = _file(tmp_path, "featureGates: {nodeRepair: true, reservedCapacity: false}\n")
    s = load_settings(path, env={"FEATURE_GATES": "SpotToSpotConsolidation=true"})
    gates = s.featureGates
    assert (gates.spotToSpotConsolidation, gates.nodeRepair, gates.reservedCapacity) == (
        True,
        True,
        False,
    )
    s = load_settings(path, flags={"--feature-gates": "NodeRepair=false"}, env={})
    assert not s.featureGates.nodeRepair and not s.featureGates.reservedCapacity


@pytest.mark.parametrize(
    ("env", "flags", "where", "words"),
    [
        ({"BATCH_IDLE_DURATION": "1"}, {}, "environment: field BATCH_IDLE_DURATION", "Go duration"),
        ({}, {"--batch-max-duration": "ten"}, "field --batch-max-duration", "Go duration"),
        ({"FEATURE_GATES": "Drift=true"}, {}, "field FEATURE_GATES", "SpotToSpotConsolidation"),
        ({"FEATURE_GATES": "NodeRepair=yes"}, {}, "field FEATURE_GATES", "not a boolean"),
        ({"FEATURE_GATES": "CapacityBuffer=true"}, {}, "field FEATURE_GATES", "does not implement"),
        ({"LOG_LEVEL": "warn"}, {}, "environment: field LOG_LEVEL", "'debug', 'info'"),
        ({"DISABLE_LEADER_ELECTION": "yes"}, {}, "field DISABLE_LEADER_ELECTION", "boolean"),
        ({"BATCH_IDLE_DURATION": "20s"}, {}, "field BATCH_IDLE_DURATION", "must not exceed"),
    ],
)
def test_a_bad_variable_or_flag_is_an_error_naming_it(
    env: dict[str, str], flags: dict[str, str], where: str, words: str
) -> None:
    with pytest.raises(InputError) as info:
        load_settings(None, env=env, flags=flags)
    assert where in str(info.value) and words in str(info.value), str(info.value)


def test_an_unknown_key_in_the_file_is_an_error_naming_it(tmp_path: Path) -> None:
    for text, field in (
        ("batchIdleDurations: 1s\n", "batchIdleDurations"),
        ("featureGates: {drift: true}\n", "featureGates.drift"),
        ("leaderElection: {lease: 1}\n", "leaderElection.lease"),
    ):
        path = _file(tmp_path, text)
        with pytest.raises(InputError) as info:
            load_settings(path)
        assert (info.value.file, info.value.field) == (str(path), field)
        assert "unknown field" in str(info.value)


def test_deprecated_keys_still_load_with_a_warning_naming_the_new_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _file(
        tmp_path,
        "batchIdleSeconds: 0.5\nbatchMaxSeconds: 20\nspotToSpotConsolidation: true\n"
        "nodeRepair: true\nreservedCapacity: false\n",
    )
    with caplog.at_level(logging.WARNING):
        s = load_settings(path)
    assert (s.batchIdleDuration, s.batchMaxDuration) == (0.5, 20.0)
    gates = s.featureGates
    assert gates.spotToSpotConsolidation and gates.nodeRepair and not gates.reservedCapacity
    for old, new in (
        ("batchIdleSeconds", "batchIdleDuration"),
        ("batchMaxSeconds", "batchMaxDuration"),
        ("spotToSpotConsolidation", "featureGates.spotToSpotConsolidation"),
        ("nodeRepair", "featureGates.nodeRepair"),
        ("reservedCapacity", "featureGates.reservedCapacity"),
    ):
        assert f"{old} is deprecated; use {new}" in caplog.text
    # A deprecated key beside its new one is ambiguous: refused, naming both.
    both = _file(tmp_path, "batchIdleSeconds: 1\nbatchIdleDuration: 1s\n")
    with pytest.raises(InputError, match="give batchIdleDuration only; batchIdleSeconds"):
        load_settings(both)


def test_go_durations_and_gates_parse_as_go_does() -> None:
    assert go_duration_seconds("1m30s") == 90.0 and go_duration_seconds("250ms") == 0.25
    for bad in ("10", "1x", ""):
        with pytest.raises(ValueError, match="Go duration"):
            go_duration_seconds(bad)
    assert parse_gates(" NodeRepair = 1 , ReservedCapacity=F ") == {
        "nodeRepair": True,
        "reservedCapacity": False,
    }
    # Karpenter's own default FEATURE_GATES value is accepted as is.
    default = (
        "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,"
        "NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"
    )
    assert load_settings(None, env={"FEATURE_GATES": default}).featureGates.reservedCapacity


def test_every_option_has_a_run_flag_and_the_flags_reach_the_settings(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"  # never read: the settings fail first
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    help_text = " ".join(CliRunner().invoke(app, ["run", "--help"]).output.split())
    for opt in OPTIONS:
        assert opt.flag in help_text and opt.env in help_text, opt
    # A flag's bad value stops the run before it connects, naming the flag.
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--cloud",
            "simulated",
            "--batch-idle-duration",
            "5",
        ],
        env={"BATCH_IDLE_DURATION": "1s"},
    )
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert "field --batch-idle-duration: '5' is not a Go duration" in flat, flat


KARPENTER_OPTIONS = (
    "sigs.k8s.io/karpenter@v1.14.0/pkg/operator/options/options.go",
    "github.com/aws/karpenter-provider-aws@v1.14.0/pkg/operator/options/options.go",
)


def test_every_option_is_named_as_karpenters_source_names_it() -> None:
    """Each variable and flag in ``OPTIONS`` appears, as a pair, in Karpenter v1.14's
    ``AddFlags`` (core or AWS provider), read from the Go module cache when it is there."""
    mod = Path.home() / "go" / "pkg" / "mod"
    sources = [mod / p for p in KARPENTER_OPTIONS]
    if not all(p.exists() for p in sources):
        pytest.skip("Karpenter v1.14.0 is not in the Go module cache")
    text = "\n".join(p.read_text() for p in sources)
    lines = [line for line in text.splitlines() if "fs." in line]
    for opt in OPTIONS:
        flag = opt.flag.removeprefix("--")
        assert any(f'"{flag}"' in line and f'"{opt.env}"' in line for line in lines), opt


@pytest.mark.parametrize("env", [{}, {"CLUSTER_NAME": ""}, {"CLUSTER_NAME": " "}])
def test_cloud_aws_without_a_cluster_name_exits_2_before_connecting(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Karpenter-AWS refuses a missing cluster name (``validateRequiredFields``): instances
    are garbage-collected by ``kubernetes.io/cluster/<name>``, so no shared default. The
    kubeconfig does not exist: the refusal comes before any connection."""
    args = ["run", "--cloud", "aws", "--kubeconfig", str(tmp_path / "absent")]
    result = CliRunner().invoke(app, args, env={"CLUSTER_NAME": None} | env)
    assert result.exit_code == 2, result.output
    for name in ("--cluster-name", "CLUSTER_NAME", "clusterName"):
        assert name in result.output


def test_cluster_name_is_required_with_aws_only(tmp_path: Path) -> None:
    blank = _file(tmp_path, "clusterName: ' '\n")
    with pytest.raises(InputError) as info:
        load_settings(blank, env={}, cloud="aws")
    assert (info.value.file, info.value.field) == (str(blank), "clusterName")
    with pytest.raises(InputError) as info:
        load_settings(None, env={}, flags={"--cluster-name": "  "}, cloud="aws")
    assert info.value.field == "--cluster-name"
    assert load_settings(None, env={"CLUSTER_NAME": "prod"}, cloud="aws").clusterName == "prod"
    assert load_settings(None, env={}, cloud="simulated").clusterName == ""


@pytest.mark.parametrize(
    ("env", "flags"),
    [
        ({"BATCH_IDLE_DURATION": "1d"}, {}),
        ({"BATCH_MAX_DURATION": "2w"}, {}),
        ({}, {"--batch-max-duration": "1d"}),
        ({}, {"--batch-idle-duration": "-1s"}),
    ],
)
def test_durations_go_refuses_are_refused(env: dict[str, str], flags: dict[str, str]) -> None:
    """Go's time.ParseDuration knows ns, us, ms, s, m and h only; durationpy reads d and w."""
    with pytest.raises(InputError) as info:
        load_settings(None, env=env, flags=flags)
    assert info.value.field == next(iter(env or flags))


def test_durations_go_refuses_are_refused_in_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "batchMaxDuration: 2w\n")
    with pytest.raises(InputError) as info:
        load_settings(path, env={})
    assert (info.value.file, info.value.field) == (str(path), "batchMaxDuration")
    assert "not a Go duration" in str(info.value)


@pytest.mark.parametrize(
    ("gate", "key"),
    [("CapacityBuffer", "capacityBuffer")],
)
def test_an_unimplemented_gate_on_says_so(tmp_path: Path, gate: str, key: str) -> None:
    with pytest.raises(InputError) as info:
        load_settings(None, env={"FEATURE_GATES": f"{gate}=true"})
    assert "does not implement" in str(info.value) and gate in str(info.value)
    path = _file(tmp_path, f"featureGates: {{{key}: true}}\n")
    with pytest.raises(InputError) as info:
        load_settings(path, env={})
    assert info.value.field == f"featureGates.{key}" and "does not implement" in str(info.value)
    assert load_settings(None, env={"FEATURE_GATES": f"{gate}=false"})


def test_a_helm_values_file_as_settings_gets_a_hint(tmp_path: Path) -> None:
    path = _file(tmp_path, "settings:\n  clusterName: prod\n")
    with pytest.raises(InputError) as info:
        load_settings(path, env={})
    assert info.value.field == "settings" and "under the chart's settings:" in str(info.value)


@pytest.mark.parametrize("bad", ["Bad_NS", "a.b", "-x", "x" * 64])
def test_the_leader_election_namespace_is_a_dns1123_label(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InputError) as info:
        load_settings(None, env={"LEADER_ELECTION_NAMESPACE": bad})
    assert info.value.field == "LEADER_ELECTION_NAMESPACE"
    path = _file(tmp_path, f"leaderElection: {{namespace: '{bad}'}}\n")
    with pytest.raises(InputError) as info:
        load_settings(path, env={})
    assert info.value.field == "leaderElection.namespace"
    assert load_settings(None, env={"LEADER_ELECTION_NAMESPACE": "kube-system"})


def test_the_static_capacity_gate_turns_on_from_the_environment_or_the_file(
    tmp_path: Path,
) -> None:
    gates = load_settings(None, env={"FEATURE_GATES": "StaticCapacity=true"}).featureGates
    assert gates.staticCapacity
    path = _file(tmp_path, "featureGates: {staticCapacity: true}\n")
    assert load_settings(path, env={}).featureGates.staticCapacity
    assert not load_settings(None, env={}).featureGates.staticCapacity


def test_the_node_overlay_gate_turns_on_from_the_environment_or_the_file(tmp_path: Path) -> None:
    assert load_settings(None, env={"FEATURE_GATES": "NodeOverlay=true"}).featureGates.nodeOverlay
    path = tmp_path / "settings.yaml"
    path.write_text("featureGates: {nodeOverlay: true}\n")
    assert load_settings(path, env={}).featureGates.nodeOverlay
    assert not load_settings(None, env={}).featureGates.nodeOverlay
