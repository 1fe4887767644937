"""Print, as a JSON list, every Prometheus metric Karpenter registers, read from its Go source.

The modules are ``sigs.k8s.io/karpenter`` at the version ``tools/kube-stack/karpenter/go.mod``
requires (the version the test stack builds, as ``tools/kube-stack/gotool.sh`` reads it) and
``github.com/aws/karpenter-provider-aws`` at the same version, located with
``go mod download -json``. The Go program ``tools/karpenter_metrics/extract.go`` (standard
library only) walks their syntax trees: each ``NewPrometheusCounter/Gauge/Histogram/Summary``
call, its namespace, subsystem and name joined, constants resolved across packages and
modules. Usage::

    .venv/bin/python tools/karpenter_metrics.py [--offline] [--out FILE]

Each entry: ``name`` (as exposed: a counter's ends ``_total``), ``type`` (``counter``,
``gauge``, ``histogram``, ``summary``), ``labels`` (in order), ``dynamic_labels`` (the Go
expression of labels known only at run time, when any), ``buckets`` (a histogram's bucket
expression, ``prometheus.DefBuckets`` when it has none) and ``bucket_values`` (their upper
bounds), ``objectives`` (a summary's), ``module`` and ``file``.

Exit status 3: Go or a module is missing (``--offline``: not in the module cache); the
reason is on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WRAPPER = ROOT / "tools" / "kube-stack" / "karpenter" / "go.mod"
EXTRACT = ROOT / "tools" / "karpenter_metrics" / "extract.go"
KARPENTER = "sigs.k8s.io/karpenter"
KARPENTER_AWS = "github.com/aws/karpenter-provider-aws"
MISSING = 3


class Missing(Exception):
    """Go, or a module, is not available."""


def karpenter_version(go_mod: Path = WRAPPER) -> str:
    """The ``require sigs.k8s.io/karpenter vX`` version of the test stack's wrapper module.

    Raises:
        ValueError: ``go_mod`` has no such line.
    """
    for line in go_mod.read_text().splitlines():
        parts = line.split()
        if parts[:2] == ["require", KARPENTER] and len(parts) == 3:
            return parts[2]
    raise ValueError(f"{go_mod}: no 'require {KARPENTER} vX' line")


def _go_env(offline: bool) -> dict[str, str]:
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    if offline:
        env["GOPROXY"] = "off"
    return env


def module_dir(module: str, version: str, *, offline: bool = False) -> Path:
    """The module cache directory of ``module@version`` (downloaded unless ``offline``).

    Raises:
        Missing: go is not on PATH, or the module cannot be had.
    """
    if shutil.which("go") is None:
        raise Missing("the Go toolchain (go) is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=tmp,
            env=_go_env(offline),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    info: dict[str, Any] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if proc.returncode != 0 or not info.get("Dir"):
        why = info.get("Error") or proc.stderr.strip() or f"exit {proc.returncode}"
        raise Missing(f"{module}@{version} is not available: {why}")
    return Path(info["Dir"])


def extract(dirs: list[Path], *, offline: bool = False) -> list[dict[str, Any]]:
    """The metrics the modules in ``dirs`` register (module docstring), sorted by name.

    Raises:
        Missing: go is not on PATH.
        subprocess.CalledProcessError: the extraction program failed.
    """
    if shutil.which("go") is None:
        raise Missing("the Go toolchain (go) is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        # Outside any module, so `go run` builds the one file with the standard library only.
        main = Path(tmp) / "extract.go"
        shutil.copyfile(EXTRACT, main)
        proc = subprocess.run(
            ["go", "run", str(main), *map(str, dirs)],
            cwd=tmp,
            env=_go_env(offline),
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    out: list[dict[str, Any]] = json.loads(proc.stdout)
    return out


def karpenter_metrics(*, offline: bool = False) -> list[dict[str, Any]]:
    """Every metric Karpenter and its AWS provider register, at the test stack's version.

    Raises:
        Missing: go or a module is not available.
    """
    version = karpenter_version()
    dirs = [module_dir(m, version, offline=offline) for m in (KARPENTER, KARPENTER_AWS)]
    return extract(dirs, offline=offline)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offline", action="store_true", help="read the module cache only")
    parser.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    args = parser.parse_args(argv)
    try:
        metrics = karpenter_metrics(offline=args.offline)
    except Missing as exc:
        print(f"karpenter_metrics: {exc}", file=sys.stderr)
        return MISSING
    text = json.dumps(metrics, indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
