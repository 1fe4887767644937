"""Joiner's scheduler against Karpenter's own scheduling benchmark, mix by mix, as CPU-time
ratios: one command, prints one JSON object.

Karpenter's side is its scheduling benchmark (sigs.k8s.io/karpenter
pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go, build tag
test_performance), built by ``tools/karpenter-bench/build.sh`` into a cache outside the
repository with one added benchmark, ``BenchmarkJoinerMix``: it builds one mix with the
benchmark file's own pod generators and runs the file's ``benchmarkScheduler`` on them (400
instance types of ``fake.InstanceTypes``, one NodePool). The mixes are the benchmark's pod
kinds: ``resources-only`` (its generic pods), ``zonal-spread`` and ``hostname-spread``
(topology spread, maxSkew 1, DoNotSchedule), ``zonal-affinity`` (zonal self-affinity),
``hostname-anti-affinity`` (hostname anti-affinity, every pod against every other) and
``diverse`` (the five in equal parts, the benchmark's own ``makeDiversePods``).

Joiner's side solves the same pods (Karpenter's run writes the pods it built, so labels,
selectors, requests and order are the same) on the same instance types
(``scheduling.karpenter_fake_types``), each run in its own process, Karpenter and Joiner
alternately. Karpenter's runs are ``-test.count 1`` each in a fresh process rather than one
``-test.count N``: the benchmark draws its pods from one seeded source for the whole
process, so a second count in the same process would solve different pods.

CPU time, not wall: Go's ``ns/op`` is the solve's wall time and Karpenter's solve runs
goroutines (and the garbage collector) on both cores, so the comparison is by CPU seconds.
Karpenter's figure is the solve's: the test process's user and system time over all its
threads (getrusage, read by the benchmark itself) around ``benchmarkScheduler`` (the
scheduler's setup and ``Solve``), less a second setup alone, measured in the same process.
Joiner's is the process time of ``Scheduler().solve`` (its own topology and queue setup
included). Both processes' whole user and system times (``os.wait4``) are printed beside
them: they also hold start-up and building the pods. ``ratio`` is Karpenter's median solve CPU
over Joiner's; the machine's calibration (``benchmarks/realistic.py``) is printed with them.

Usage: ``python benchmarks/versus_karpenter.py [--repeats N] [--mix MIX ...] [COUNTS...]``
(defaults: 3 repeats, every mix, 2,000 and 20,000 pods). Needs Go (the build is skipped when
its stamp is current).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "tools" / "karpenter-bench" / "build.sh"
MIXES = [
    "resources-only",
    "diverse",
    "zonal-spread",
    "hostname-spread",
    "zonal-affinity",
    "hostname-anti-affinity",
]
COUNTS = [2000, 20000]


def _waited(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[str, float]:
    """Run ``cmd``; its stdout and its user + system CPU seconds (``os.wait4``)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}:\n{text[-3000:]}")
    return text, usage.ru_utime + usage.ru_stime


def _metrics(text: str) -> dict[str, float]:
    """The value of each unit on the ``BenchmarkJoinerMix`` line of ``go test`` output."""
    line = next(ln for ln in text.splitlines() if ln.startswith("BenchmarkJoinerMix"))
    fields = line.split()[2:]
    return {unit: float(value) for value, unit in zip(fields[::2], fields[1::2], strict=True)}


def run_karpenter(binary: Path, mix: str, n: int, dump: Path | None) -> dict[str, Any]:
    """One run of Karpenter's benchmark on ``mix`` at ``n`` pods (writing the pods to
    ``dump`` when given)."""
    env = dict(os.environ, KBENCH_MIX=mix, KBENCH_PODS=str(n))
    if dump is not None:
        env["KBENCH_DUMP"] = str(dump)
    cmd = [str(binary), "-test.run", "^$", "-test.bench", "^BenchmarkJoinerMix$"]
    cmd += ["-test.benchtime", "1x", "-test.count", "1"]
    text, process_cpu = _waited(cmd, env, cwd=binary.parent)
    m = _metrics(text)
    return {
        "solveCpuSeconds": round(m["setup+solve-cpu-s/op"] - m["setup-cpu-s"], 4),
        "setupCpuSeconds": round(m["setup-cpu-s"], 4),
        "solveWallSeconds": round(m["ns/op"] / 1e9, 4),
        "processCpuSeconds": round(process_cpu, 4),
        "nodes": int(m["nodes"]),
        "scheduled": int(m["pods"]),
    }


def run_joiner(dump: Path) -> dict[str, Any]:
    """One run of Joiner's solve of the pods in ``dump``, in a process of its own."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    text, process_cpu = _waited([sys.executable, __file__, "--joiner-child", str(dump)], env)
    row: dict[str, Any] = json.loads(text.strip().splitlines()[-1])
    row["processCpuSeconds"] = round(process_cpu, 4)
    return row


def joiner_solve(dump: Path) -> dict[str, Any]:
    """Solve the pods Karpenter's benchmark wrote to ``dump`` on its instance types."""
    sys.path.append(str(Path(__file__).resolve().parent))
    import scheduling as bench  # benchmarks/scheduling.py: the instance types

    from joiner.api import quantity
    from joiner.api.objects import (
        DO_NOT_SCHEDULE,
        PodAffinityTerm,
        PodTemplate,
        TopologySpreadConstraint,
    )
    from joiner.api.requirements import Requirements
    from joiner.scheduling import NodePoolTemplate, PodRequest, Scheduler, SchedulingInput
    from joiner.testing.builders import make_nodepool

    templates: dict[str, PodTemplate] = {}

    def template(p: dict[str, Any]) -> PodTemplate:
        key = json.dumps(p, sort_keys=True)
        if key not in templates:
            kwargs: dict[str, Any] = {}
            sel = Requirements.from_labels(p.get("selector") or {})
            topo = p.get("topologyKey", "")
            if p["kind"] == "spread":
                kwargs["spread"] = (TopologySpreadConstraint(topo, 1, sel, DO_NOT_SCHEDULE),)
            elif p["kind"] == "affinity":
                kwargs["pod_affinity"] = (PodAffinityTerm(topo, sel),)
            elif p["kind"] == "anti-affinity":
                kwargs["pod_anti_affinity"] = (PodAffinityTerm(topo, sel),)
            requests = {quantity.CPU: p["cpuMilli"], quantity.MEMORY: p["memoryBytes"]}
            templates[key] = PodTemplate(
                requests={**requests, quantity.PODS: 1},
                labels=tuple(sorted(p["labels"].items())),
                **kwargs,
            )
        return templates[key]

    raw = json.loads(dump.read_text())
    pods = tuple(PodRequest(f"pod-{i:05d}", template(p), i) for i, p in enumerate(raw))
    types = tuple(bench.karpenter_fake_types())
    inp = SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(make_nodepool(), types),))
    start, start_cpu = time.perf_counter(), time.process_time()
    result = Scheduler().solve(inp)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    cost = sum(
        c.instance_types[0].cheapest_price(c.requirements) or 0.0 for c in result.new_nodeclaims
    )
    return {
        "solveCpuSeconds": round(cpu, 4),
        "solveWallSeconds": round(wall, 4),
        "nodes": len(result.new_nodeclaims),
        "scheduled": sum(len(c.pods) for c in result.new_nodeclaims),
        "unschedulable": len(result.unschedulable),
        "costPerHour": round(cost, 4),
    }


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 4)


def compare(binary: Path, mix: str, n: int, repeats: int, work: Path) -> dict[str, Any]:
    """``repeats`` runs of each side on ``mix`` at ``n`` pods, alternately; medians and
    their ratio."""
    dump = work / f"{mix}-{n}.json"
    karpenter, joiner = [], []
    for i in range(repeats):
        karpenter.append(run_karpenter(binary, mix, n, dump if i == 0 else None))
        joiner.append(run_joiner(dump))
        print(
            json.dumps({"mix": mix, "pods": n, "karpenter": karpenter[-1], "joiner": joiner[-1]}),
            file=sys.stderr,
        )
    k_cpu, j_cpu = _median(karpenter, "solveCpuSeconds"), _median(joiner, "solveCpuSeconds")
    return {
        "mix": mix,
        "pods": n,
        "karpenterSolveCpuSeconds": k_cpu,
        "joinerSolveCpuSeconds": j_cpu,
        "ratio": round(k_cpu / j_cpu, 2) if j_cpu > 0 else None,
        "karpenterNodes": karpenter[0]["nodes"],
        "joinerNodes": joiner[0]["nodes"],
        "karpenter": karpenter,
        "joiner": joiner,
    }


def main(argv: list[str]) -> None:
    if argv[:1] == ["--joiner-child"]:
        print(json.dumps(joiner_solve(Path(argv[1]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("counts", nargs="*", type=int, default=COUNTS, help="pod counts")
    parser.add_argument("--mix", action="append", choices=MIXES, help="a mix (repeatable)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side per point")
    args = parser.parse_args(argv)
    subprocess.run([str(BUILD)], check=True)
    binary = Path(
        subprocess.run(
            [str(BUILD), "--print-bin"], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    sys.path.append(str(Path(__file__).resolve().parent))
    import realistic  # benchmarks/realistic.py: the calibration workload

    calibration = realistic.calibration_cpu_s()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            compare(binary, mix, n, args.repeats, Path(tmp))
            for n in args.counts
            for mix in args.mix or MIXES
        ]
    out = {
        "calibrationCpuSeconds": calibration,
        "calibrationAfterCpuSeconds": realistic.calibration_cpu_s(),
        "goMaxProcs": os.environ.get("GOMAXPROCS") or os.cpu_count(),
        "rows": rows,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
