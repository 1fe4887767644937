"""The sweep on a Ray head started here (loopback only, 2 CPUs): the same rows as the local
pool once sorted by cell id and stripped of timing fields."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from joiner.operator.sweep.pool import LocalPool
from joiner.operator.sweep.runner import run_sweep
from joiner.operator.sweep.spec import load_sweep
from tests.operator.sweeps import REPO, rows, small_sweep

pytest.importorskip("ray")

RAY = Path(sys.executable).parent / "ray"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _non_loopback_listeners(session: int) -> list[str]:
    """``ip:port`` of listening TCP sockets not on loopback owned by the session's processes."""
    inodes: dict[str, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A":  # LISTEN
                continue
            addr, port = f[1].rsplit(":", 1)
            loopback = addr in ("0100007F", "00000000000000000000000001000000") or (
                addr.endswith("0100007F") and addr.startswith("0000000000000000FFFF0000")
            )
            if not loopback:
                inodes[f[9]] = f"{addr}:{int(port, 16)}"
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(pid)) != session:
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    found.append(inodes[link[8:-1]])
        except (OSError, ProcessLookupError):
            continue
    return found


@pytest.fixture(scope="module")
def ray_head() -> Iterator[tuple[str, dict[str, str], int]]:
    """A Ray head on 127.0.0.1 with 2 CPUs, no dashboard, no usage stats, a token of its
    own; stopped (its process group only) at the end."""
    tmp = tempfile.mkdtemp(prefix="jray-")  # short: Ray's socket paths have a length limit
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    port = _free_port()
    ports = {
        "--dashboard-agent-listen-port": _free_port(),
        "--dashboard-agent-grpc-port": _free_port(),
        "--metrics-export-port": _free_port(),
        "--runtime-env-agent-port": _free_port(),
    }
    log = Path(tmp) / "head.log"
    with log.open("w") as sink:
        head = subprocess.Popen(
            [
                str(RAY),
                "start",
                "--head",
                "--block",
                "--node-ip-address=127.0.0.1",
                f"--port={port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={tmp}",
                *(f"{k}={v}" for k, v in ports.items()),
            ],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        for _ in range(1800):
            if "Ray runtime started" in log.read_text():
                break
            if head.poll() is not None:
                pytest.fail(f"ray start failed: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        else:
            pytest.fail("the Ray head did not start in 180 s")
        yield f"127.0.0.1:{port}", env, head.pid
    finally:
        head.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.timeout(300)
def test_ray_and_local_give_the_same_rows(tmp_path, ray_head):
    address, env, session = ray_head
    assert _non_loopback_listeners(session) == []
    sweep = small_sweep(tmp_path, seeds=2, variants=2)
    local = tmp_path / "local.jsonl"
    run_sweep(load_sweep(sweep), local, LocalPool(2), "local")
    on_ray = tmp_path / "ray.jsonl"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "joiner.cli.main",
            "sweep",
            str(sweep),
            "-o",
            str(on_ray),
            "--ray",
            address,
            "-q",
        ],
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(rows(on_ray)) == len(load_sweep(sweep).cells) == 4
    assert rows(on_ray) == rows(local)
    assert '"backend":"ray"' in on_ray.read_text()
    assert _non_loopback_listeners(session) == []
