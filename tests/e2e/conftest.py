"""Session fixtures for the end-to-end tests on the real Kubernetes test stack.

The tests are opt-in for now: they run only with ``JOINER_E2E=1`` and are skipped, with
that reason, otherwise. When enabled, a missing stack is built first (tools/kube-stack/
build.sh; a cold build takes tens of minutes, a warm one about a second), and a failed
build or start fails the tests: it never skips them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from joinerctl import NODECLASS, Cluster, ControllerProcess, joiner, new_name, wait_for
from karpenter import karpenter_paths
from kubestack import KubeStack, build_stack, stack_paths
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from promstack import MonitoringStack, build_monitoring, monitoring_paths

E2E_ENABLED = os.environ.get("JOINER_E2E") == "1"
# pytest-timeout counts fixture set-up, and the first e2e test's set-up may build the stack.
BUILD_TIMEOUT_S = 3600


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip e2e tests unless JOINER_E2E=1; give them room to build the stack when needed."""
    e2e_items = [item for item in items if item.get_closest_marker("e2e") is not None]
    if not e2e_items:
        return
    if not E2E_ENABLED:
        skip = pytest.mark.skip(
            reason="end-to-end tests on the real kube stack are opt-in: set JOINER_E2E=1 "
            "(the first run builds the stack, see tools/kube-stack/README.md)"
        )
        for item in e2e_items:
            item.add_marker(skip)
        return
    # Prepended, so that they win over a test's own (shorter) timeout marker.
    if stack_paths().missing():
        for item in e2e_items:
            item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT_S), append=False)
    # A test that builds Karpenter on first use (about 4 to 10 minutes cold on 2 cores) gets
    # the build's time too; ``make test`` builds it before the suite.
    needs_karpenter = [i for i in e2e_items if i.get_closest_marker("karpenter") is not None]
    if needs_karpenter and karpenter_paths().missing():
        for item in needs_karpenter:
            item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT_S), append=False)
    # Likewise Prometheus and kube-state-metrics (minutes cold); ``make test`` builds them.
    needs_monitoring = [i for i in e2e_items if i.get_closest_marker("monitoring") is not None]
    if needs_monitoring and monitoring_paths().missing():
        for item in needs_monitoring:
            item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT_S), append=False)


@pytest.fixture(scope="session")
def kube_stack() -> Iterator[KubeStack]:
    """The running stack: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok.

    Builds the binaries first when they are missing. ``JOINER_E2E_KEEP=1`` keeps the work
    directory (logs, certificates) after the session.

    Raises:
        KubeStackError: the build or the start-up failed.
    """
    paths = stack_paths()
    if paths.missing():
        paths = build_stack(paths.bin_dir.parent / "build.log", timeout_s=BUILD_TIMEOUT_S - 60)
    stack = KubeStack(paths, keep=os.environ.get("JOINER_E2E_KEEP") == "1")
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def monitoring(kube_stack: KubeStack) -> Iterator[MonitoringStack]:
    """kube-state-metrics watching the stack and Prometheus scraping it every 2 s (see
    tests/e2e/promstack.py). Builds both first when they are missing; started on first use
    and stopped at the end of the session. ``JOINER_E2E_KEEP=1`` keeps the TSDB and logs.

    Raises:
        KubeStackError: the build or the start-up failed.
    """
    paths = monitoring_paths()
    if paths.missing():
        paths = build_monitoring(kube_stack.paths.bin_dir.parent, timeout_s=BUILD_TIMEOUT_S - 60)
    monitoring = MonitoringStack(kube_stack, paths, keep=os.environ.get("JOINER_E2E_KEEP") == "1")
    monitoring.start()
    try:
        yield monitoring
    finally:
        monitoring.stop()


@pytest.fixture(scope="session")
def kubeconfig(kube_stack: KubeStack) -> Path:
    """Path of an admin (system:masters) kubeconfig for the running stack."""
    return kube_stack.kubeconfig


@pytest.fixture(scope="session")
def admin(kubeconfig: Path) -> Client:
    """Admin client; the CRDs installed by ``joiner install-crds`` and the shared
    EC2NodeClass ``e2e`` applied."""
    joiner("install-crds", "--kubeconfig", str(kubeconfig))
    client = Client(KubeConfig.from_file(kubeconfig), field_manager="joiner-e2e")
    from joinerctl import EC2NodeClassRes, NodeClaimRes, NodePoolRes

    def served() -> bool:
        try:
            for res in (NodePoolRes, NodeClaimRes, EC2NodeClassRes):
                list(client.list(res))
        except ApiError as exc:
            if exc.status.code in (404, 429):  # while the new CRDs' storage initializes
                return False
            raise
        return True

    wait_for("the CRDs served", served, 60)
    Cluster(client, "-").apply(NODECLASS)
    return client


@pytest.fixture
def cluster(admin: Client) -> Iterator[Cluster]:
    """A namespace and a NodePool of one fresh name; removed afterwards."""
    c = Cluster(admin, new_name())
    admin.create(Namespace(metadata=ObjectMeta(name=c.name)))
    yield c
    c.cleanup()


@pytest.fixture
def controllers(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster
) -> Iterator[list[ControllerProcess]]:
    """Controller processes a test starts (``start``); stopped afterwards, logs printed
    on failure (pytest shows captured output)."""
    started: list[ControllerProcess] = []
    yield started
    for c in started:
        c.stop()
        print(f"--- {c.name} log tail ---\n{c.tail()}")
