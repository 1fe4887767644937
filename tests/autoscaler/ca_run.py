"""``make diff-autoscaler``: Joiner's Cluster Autoscaler baseline against the real Cluster
Autoscaler, case by case.

Builds (or reuses) the test stack and Cluster Autoscaler 1.36.1 with its kwok provider,
starts the stack, and runs the corpus of ca_cases.py in batches: cases with the same flags
share one Cluster Autoscaler process (each case fenced by its own node groups, which only
its pods select; a case with a cluster-wide limit runs alone). For each batch: the kwok
template Nodes generated from Joiner's resolved node groups go into the provider's
ConfigMap, Cluster Autoscaler starts, phase 1's workloads are applied and left until
stable, then phase 2's (scale-down cases), then the cluster is wiped. Joiner's baseline runs
each case's Scenario in virtual time. Writes the JSON and Markdown reports.

Usage: python tests/autoscaler/ca_run.py [--cases a,b] [--out DIR] [--markdown FILE] [--batch N]
The last line printed is ``agreement: A/N cases (P%)``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "e2e")]

import ca_cases as corpus  # noqa: E402
import ca_harness as harness  # noqa: E402
import ca_render as render  # noqa: E402
import ca_report as report  # noqa: E402
from autoscaler import VERSION, ClusterAutoscaler, build_autoscaler  # noqa: E402
from ca_casekit import Case, Obj  # noqa: E402
from kubestack import KubeStack, build_stack, stack_paths  # noqa: E402


def _configure(cluster: harness.Cluster, batch: list[Case], ns: str, nodes: list[Obj]) -> None:
    """The kwok provider's ConfigMaps (and the priority expander's) for one batch, in the
    namespace its Cluster Autoscaler reads; ``nodes`` are its template Nodes."""
    listing = {"apiVersion": "v1", "kind": "List", "items": nodes}
    cluster.put_configmap(ns, "kwok-provider-templates", {"templates": yaml.safe_dump(listing)})
    cluster.put_configmap(ns, "kwok-provider-config", {"config": render.provider_config()})
    prio = render.priority_configmap(batch, ns)
    if prio is not None:
        cluster.apply([prio])


@dataclass
class BatchRun:
    """One batch on the stack: its own Cluster Autoscaler (flags of its cases) reading its
    own configuration namespace, beside the other batches' (their cases never share a node
    or a node group)."""

    index: int
    batch: list[Case]
    #: the kwok template Nodes (built before the threads start: Joiner's objects are not
    #: shared between threads)
    templates: list[Obj]
    sides: dict[str, harness.Side] = field(default_factory=dict)
    timings: list[dict[str, object]] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    def run(self, stack: KubeStack, binary: Path, out: Path) -> None:
        """Run it; an exception becomes ``error`` (the batch's cases are reported with it)."""
        t0 = time.monotonic()
        cluster = harness.Cluster(stack.kubeconfig)
        try:
            self._run(stack, cluster, binary, out)
        except Exception as exc:  # reported as the batch's cases' error
            self.error = f"{type(exc).__name__}: {exc}"
            print(f"error in batch {self.index}: {self.error}", file=sys.stderr, flush=True)
            try:
                cluster.wipe(self.batch)
            except Exception as wipe_exc:  # the error above is the one reported
                print(f"error: wipe failed: {wipe_exc}", file=sys.stderr, flush=True)
        self.seconds = time.monotonic() - t0

    def _run(self, stack: KubeStack, cluster: harness.Cluster, binary: Path, out: Path) -> None:
        ns = f"ca-config-{self.index}"
        _configure(cluster, self.batch, ns, self.templates)
        self.sides = {c.id: harness.Side() for c in self.batch}
        seen: dict[str, str] = {}
        log = out / f"cluster-autoscaler-{self.index}.log"
        # Phase 1's pods are all made and found unschedulable before Cluster Autoscaler
        # starts; it is paused while phase 2's change is made (``ca_harness.apply_phase``).
        harness.apply_phase(cluster, self.batch, 1)
        with ClusterAutoscaler(
            stack, binary, self.batch[0].flags(), log=log, namespace=ns
        ) as autoscaler:
            for phase in (1, 2):
                todo = self.batch if phase == 1 else [c for c in self.batch if c.scale_down]
                if not todo:
                    break
                if phase == 2:
                    autoscaler.pause()
                    harness.apply_phase(cluster, todo, phase)
                    autoscaler.resume()
                settled = harness.settle(cluster, self.batch, seen)
                self.timings.append(
                    {
                        "cases": [c.id for c in todo],
                        "phase": phase,
                        "stableSeconds": round(settled.seconds, 1),
                        "firstNodeAddedSeconds": _round(settled.first_added_s),
                        "firstNodeRemovedSeconds": _round(settled.first_removed_s),
                    }
                )
                for c in todo:
                    nodes, pending = harness.observe(cluster, c)
                    self.sides[c.id].nodes.append(nodes)
                    self.sides[c.id].pending.append(pending)
        for c in self.batch:
            self.sides[c.id].added = harness.added_per_case(c, seen)
        cluster.wipe(self.batch)


def run_stack(
    stack: KubeStack, binary: Path, runs: list[BatchRun], out: Path, parallel: int
) -> None:
    """Batches whose cases can share the cluster run ``parallel`` at a time; a batch of a
    case with a cluster-wide limit (it counts every node) runs with the cluster to itself."""
    shared = [r for r in runs if not r.batch[0].config_key().startswith("alone:")]
    alone = [r for r in runs if r not in shared]
    for start in range(0, len(shared), parallel):
        group = shared[start : start + parallel]
        print(f"batches: {'; '.join(', '.join(c.id for c in r.batch) for r in group)}", flush=True)
        threads = [threading.Thread(target=r.run, args=(stack, binary, out)) for r in group]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for r in alone:
        print(f"alone: {', '.join(c.id for c in r.batch)}", flush=True)
        r.run(stack, binary, out)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    parser.add_argument("--out", default="joiner-out/fidelity-autoscaler", help="report directory")
    parser.add_argument("--markdown", default="", help="also write the Markdown report here")
    parser.add_argument("--batch", type=int, default=12, help="cases per Cluster Autoscaler")
    parser.add_argument(
        "--parallel", type=int, default=12, help="Cluster Autoscalers running side by side"
    )
    parser.add_argument("--keep", action="store_true", help="keep the stack's work directory")
    args = parser.parse_args(argv)
    try:
        selected = corpus.by_id([c for c in args.cases.split(",") if c])
    except KeyError as exc:
        print(f"diff-autoscaler: {exc.args[0]}", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # Joiner's own warnings about the cases' manifests go to a file, not the report.
    handler = logging.FileHandler(out / "joiner.log", mode="w")
    logging.getLogger("joiner").addHandler(handler)
    logging.getLogger("joiner").propagate = False
    t0 = time.monotonic()
    paths = stack_paths()
    if paths.missing():
        paths = build_stack(out / "stack-build.log")
    binary = build_autoscaler(out / "autoscaler-build.log")
    results: list[harness.Result] = []
    runs = [
        BatchRun(i, b, harness.templates(b, out / "work"))
        for i, b in enumerate(harness.batches(selected, args.batch))
    ]
    with KubeStack(paths, keep=args.keep) as stack:
        harness.Cluster(stack.kubeconfig).apply(render.HOSTNAME_POLICY)
        setup_s = time.monotonic() - t0
        run_stack(stack, binary, runs, out, max(1, args.parallel))
    for r in runs:
        share = r.seconds / len(r.batch)
        for c in r.batch:
            k = harness.Side(error=r.error) if r.error else r.sides[c.id]
            j = harness.joiner_side(c, out / "work")
            results.append(harness.Result(c, k, j, harness.compare(c, k, j), share))
    timings = [t for r in runs for t in r.timings]
    order = {c.id: i for i, c in enumerate(corpus.CASES)}
    results.sort(key=lambda r: order[r.case.id])
    doc = report.as_json(results, VERSION, time.monotonic() - t0, setup_s, timings)
    (out / "report.json").write_text(json.dumps(doc, indent=1))
    md = report.markdown(doc)
    (out / "report.md").write_text(md)
    if args.markdown:
        Path(args.markdown).write_text(report.page(md, Path(args.markdown)))
    print(md)
    print(report.headline(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
