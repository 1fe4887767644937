"""The Ray backend: each cell is a Ray task on a cluster (the only module importing Ray).

``--ray local`` starts a private single-node Ray for the sweep (``num_cpus`` = ``--workers``)
on loopback, with the dashboard off; ``--ray auto`` joins the cluster a ``ray start`` left on
this machine; ``--ray ADDRESS`` joins that cluster (``HOST:PORT`` of the GCS, or
``ray://HOST:10001`` through Ray Client). Usage statistics are off in every case
(``RAY_USAGE_STATS_ENABLED=0``); for ``local`` and loopback addresses the node's address is
kept at 127.0.0.1, so every Ray server listens on loopback only. Ray's token authentication
applies as Ray configures it (``RAY_AUTH_MODE``, ``RAY_AUTH_TOKEN``, ``~/.ray/auth_token``).
The cluster's nodes need Joiner installed (the same version): cells carry their input
files, so nothing else is shipped.

1. Put each variant's bundle in the object store once (``ray.put``).
2. Keep at most ``2 x`` the cluster's CPUs of tasks in flight (``num_cpus=1`` each), so a
   sweep of thousands of cells does not flood the scheduler, and yield each outcome as
   ``ray.wait`` returns it.
3. A task whose worker process dies is run again by Ray (``max_retries``); only that cell
   is run again. A task that still fails is reported as the cell's error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from joiner.operator.sweep.cell import CellOutcome, CellTask, run_cell
from joiner.operator.sweep.pool import Finished
from joiner.operator.sweep.spec import Bundle


def _loopback(address: str) -> bool:
    """True for ``local`` and addresses on this machine's loopback (``127.x``, ``::1``,
    ``localhost``, with or without ``ray://`` and a port)."""
    if address == "local":
        return True
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or host.startswith("127.") or host == "::1"


def _ray(address: str) -> Any:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if _loopback(address):
        # Ray otherwise replaces a loopback node address by the machine's routable one
        # (services.resolve_ip_for_localhost) and binds its servers there; this switch makes
        # it keep 127.0.0.1 for the node, so everything listens on loopback only.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError as exc:
        from joiner.api.errors import InputError

        raise InputError("Ray is not installed: pip install 'joiner[ray]'", field="--ray") from exc
    return ray


class RayBackend:
    """Run cells as Ray tasks; see the module doc.

    Args:
        address: ``local``, ``auto`` or a cluster address.
        num_cpus: CPUs of the private cluster ``local`` starts (ignored otherwise).
        retries: Ray's ``max_retries`` for a task whose worker died.
        temp_dir: Ray's session directory for ``local`` (default Ray's own).

    Raises:
        InputError: Ray is not installed, or the cluster cannot be reached (from ``run``).
    """

    def __init__(
        self, address: str, *, num_cpus: int, retries: int = 2, temp_dir: str | None = None
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.retries = retries
        self.temp_dir = temp_dir

    def _init(self, ray: Any) -> None:
        from joiner.api.errors import InputError

        common: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
        try:
            if self.address == "local":
                extra = {"_temp_dir": self.temp_dir} if self.temp_dir else {}
                ray.init(
                    num_cpus=self.num_cpus,
                    include_dashboard=False,
                    _node_ip_address="127.0.0.1",
                    **extra,
                    **common,
                )
            else:
                ray.init(address=self.address, **common)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(
                f"cannot start or join the Ray cluster {self.address!r}: {exc}", field="--ray"
            ) from exc

    def run(self, tasks: Sequence[CellTask], bundles: Mapping[str, Bundle]) -> Iterator[Finished]:
        """Yield each cell's outcome as it finishes (completion order)."""
        ray = _ray(self.address)
        self._init(ray)
        try:
            remote = ray.remote(num_cpus=1, max_retries=self.retries)(run_cell)
            refs = {name: ray.put(b) for name, b in bundles.items()}
            window = max(4, 2 * int(ray.cluster_resources().get("CPU", 1)))
            pending = list(reversed(tasks))
            running: dict[Any, CellTask] = {}
            while pending or running:
                while pending and len(running) < window:
                    task = pending.pop()
                    running[remote.remote(task, refs[task.cell.variant])] = task
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    task = running.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        outcome = CellOutcome(
                            task.cell.cell_id,
                            None,
                            None,
                            f"the Ray task failed after {self.retries} retries: {exc}",
                            0.0,
                            "ray",
                        )
                    yield Finished(task, outcome, None)
        finally:
            ray.shutdown()
