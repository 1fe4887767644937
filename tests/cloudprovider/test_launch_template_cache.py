"""The launch-template cache both clouds share (go-cache semantics, Karpenter-AWS's TTL and
janitor) and the simulated cloud's templates behind it."""

from __future__ import annotations

import pytest

from joiner.cloudprovider.launchtemplates import (
    LAUNCH_TEMPLATE_CLEANUP_INTERVAL_S,
    LAUNCH_TEMPLATE_TTL_S,
    LaunchTemplateCache,
    SimulatedLaunchTemplates,
)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def now(self) -> float:
        return self.t


def test_upstream_defaults():
    assert LAUNCH_TEMPLATE_TTL_S == 60.0  # Karpenter-AWS cache.DefaultTTL
    assert LAUNCH_TEMPLATE_CLEANUP_INTERVAL_S == 60.0  # cache.DefaultCleanupInterval


def test_get_refreshes_and_expired_entries_are_missing_until_evicted():
    clock = Clock()
    cache = LaunchTemplateCache(clock.now, ttl_s=10)
    cache.put("a", "lt-a", "default")
    cache.put("b", "lt-b", "other")
    clock.t += 9
    assert cache.get("a") is not None  # refreshed to t + 10
    clock.t += 2
    assert cache.get("b") is None  # expired: missing, still held for the janitor
    assert cache.names() == ["a", "b"]
    assert [e.name for e in cache.evict_expired()] == ["b"]
    assert cache.names() == ["a"]
    clock.t += 7  # 118: one second left
    assert cache.evict_expired() == []
    clock.t += 1
    assert [(e.name, e.template_id, e.node_class) for e in cache.evict_expired()] == [
        ("a", "lt-a", "default")
    ]


def test_drop_node_class_and_drop():
    cache = LaunchTemplateCache(Clock().now)
    cache.put("a", "1", "x")
    cache.put("b", "2", "y")
    cache.put("c", "3", "x")
    assert sorted(e.name for e in cache.drop_node_class("x")) == ["a", "c"]
    cache.drop("b")
    cache.drop("missing")
    assert cache.names() == []


def test_ttl_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        LaunchTemplateCache(Clock().now, ttl_s=0)


def test_simulated_templates_reused_collected_and_deleted_with_their_nodeclass():
    clock = Clock()
    lts = SimulatedLaunchTemplates(clock.now, ttl_s=10)
    a = lts.ensure("default", ["hash-1", "general", "amd64"])
    assert lts.ensure("default", ["hash-1", "general", "amd64"]) == a
    b = lts.ensure("other", ["hash-1", "general", "amd64"])  # same content, other NodeClass
    assert a != b and lts.created == 2
    clock.t += 5
    lts.ensure("default", ["hash-1", "general", "amd64"])
    clock.t += 5
    assert lts.collect() == [b]  # unused for 10 s
    assert set(lts.templates) == {a}
    assert lts.delete_all("default") == [a]
    assert lts.templates == {} and lts.deleted == 2
    clock.t += 100
    assert lts.collect() == []


def test_controller_mode_hydrates_once_then_collects_every_cleanup_interval():
    """``ControllerRuntime._start_launch_template_gc``: hydration when leading, then the
    janitor every ``launchTemplateCleanupIntervalSeconds``."""
    from types import SimpleNamespace

    from joiner.cluster.kube.fence import Fence
    from joiner.operator.controller import ControllerRuntime
    from joiner.operator.controller_settings import ControllerSettings
    from joiner.sim.clock import SimClock

    calls: list[tuple[str, float]] = []
    clock = SimClock()

    class Templates:
        def hydrate(self) -> int:
            calls.append(("hydrate", clock.now()))
            return 0

        def collect(self) -> list[str]:
            calls.append(("collect", clock.now()))
            return []

    runtime = SimpleNamespace(
        fence=Fence(None),
        cloud=SimpleNamespace(launch_templates=Templates()),
        settings=ControllerSettings(launchTemplateCleanupIntervalSeconds=5),
        clock=clock,
        dry_run=False,
    )
    ControllerRuntime._start_launch_template_gc(runtime)  # type: ignore[arg-type]
    clock.run_until(16.0)
    assert calls == [("hydrate", 0.0), ("collect", 5.0), ("collect", 10.0), ("collect", 15.0)]
    # A dry run deletes no launch template: nothing is hydrated or collected.
    touched: list[str] = []
    dry = SimpleNamespace(
        fence=runtime.fence,
        cloud=SimpleNamespace(
            launch_templates=SimpleNamespace(
                hydrate=lambda: touched.append("hydrate"),
                collect=lambda: touched.append("collect"),
            )
        ),
        settings=runtime.settings,
        clock=clock,
        dry_run=True,
    )
    ControllerRuntime._start_launch_template_gc(dry)  # type: ignore[arg-type]
    clock.run_until(40.0)
    assert touched == []
    # A cloud without launch templates (kwok) is left alone.
    ControllerRuntime._start_launch_template_gc(  # type: ignore[arg-type]
        SimpleNamespace(  # no hydrate, no collect: nothing is scheduled
            fence=runtime.fence,
            cloud=SimpleNamespace(),
            settings=runtime.settings,
            clock=clock,
            dry_run=False,
        )
    )


def test_a_paused_leader_deletes_no_launch_template():
    """The janitor's deletions are cloud writes: fenced like every other."""
    from types import SimpleNamespace

    from joiner.cluster.kube.fence import Fence, LeaseLostError
    from joiner.operator.controller import ControllerRuntime
    from joiner.operator.controller_settings import ControllerSettings
    from joiner.sim.clock import SimClock

    clock = SimClock()
    collected: list[float] = []
    templates = SimpleNamespace(collect=lambda: collected.append(clock.now()))
    fence = Fence(lambda: False)
    runtime = SimpleNamespace(
        fence=fence,
        cloud=SimpleNamespace(launch_templates=templates),
        settings=ControllerSettings(launchTemplateCleanupIntervalSeconds=5),
        clock=clock,
        dry_run=False,
    )
    ControllerRuntime._start_launch_template_gc(runtime)  # type: ignore[arg-type]
    with pytest.raises(LeaseLostError):
        clock.run_until(6.0)
    assert collected == [] and fence.tripped
