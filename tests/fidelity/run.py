"""``make diff-karpenter``: Joiner against the real Karpenter, case by case.

Builds (or reuses) the test stack and Karpenter, starts both in a private network namespace
(Karpenter's servers bind every interface; see tests/e2e/karpenter.py), runs the corpus of
cases.py and, with ``--generated N``, ``N`` cases generated from a seed (generator.py;
``--seed S`` or a fresh seed, printed), and writes the JSON and Markdown reports.

Isolation (docs/fidelity.md, "Cases and isolation"): provisioning cases run side by side in
batches (each fenced in its own namespace and NodePools; a case that could see others runs
alone; a batch's cases expect at most ``ROUND_CLAIMS_MAX`` NodeClaims together), and a
batch's namespaces and NodePools are deleted, and their NodeClaims waited out, before the
next batch starts. Disruption cases run on a second stack with its own Karpenter, at the
same time (``SecondStack``: a child run of this script, in its own network namespace, whose
output is in ``OUT/disruption``; ``--serial`` runs them after the provisioning cases on the
one stack instead). They make their nodes together (under ``consolidateAfter: Never``),
then change and settle one at a time, since Karpenter's disruption controller considers
every NodePool's candidates together; once judged, a case's NodePools are frozen (budget
``nodes: "0"``) so they never join another's decision.

Usage: python tests/fidelity/run.py [--cases a,b] [--generated N] [--seed S] [--skip-fixed]
[--out DIR] [--markdown FILE] [--batch N] [--serial]
``--cases`` may name generated cases (``gen-<seed>-<i>``): they are generated again from
their seed. The last two lines printed are ``generated agreement: A/N cases (P%), seed S``
(with generated cases) and ``agreement: A/N cases (P%)`` (the fixed corpus); each adds
``; R more agree with Karpenter's plan (kube-scheduler race), D disagree`` when some case
disagrees only through a kube-scheduler race (harness module docstring).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "e2e")]

import cases as corpus  # noqa: E402
import catalog  # noqa: E402
import generator  # noqa: E402
import harness  # noqa: E402
import render  # noqa: E402
import report  # noqa: E402
from karpenter import (  # noqa: E402
    Karpenter,
    build_karpenter,
    in_private_netns,
    install_crds,
    karpenter_version,
)
from kubestack import KubeStack, build_stack, stack_paths  # noqa: E402
from lightkube.core.exceptions import ApiError  # noqa: E402

from joiner.api.featuregates import FeatureGates  # noqa: E402
from joiner.cloudprovider.kwok import load_instance_types  # noqa: E402

#: Karpenter's ``FEATURE_GATES`` for the whole run: its default (pkg/operator/options/
#: options.go ``AddFlags``) with NodeOverlay and StaticCapacity on, which the cases with
#: NodeOverlays and static NodePools need (a case without either is unaffected). Joiner
#: runs with the same gates (``harness.joiner_gates``).
KARPENTER_FEATURE_GATES = (
    "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,"
    "NodeOverlay=true,StaticCapacity=true,CapacityBuffer=false"
)


def _netns_command(argv: list[str]) -> list[str] | None:
    """The command that runs this script with ``argv`` in a new private network namespace
    with loopback up, or None (printed) without the unshare command."""
    unshare = shutil.which("unshare")
    if unshare is None:
        print("diff-karpenter: the unshare command is needed (util-linux)", file=sys.stderr)
        return None
    flags = ["--net"] if os.geteuid() == 0 else ["--net", "--map-root-user"]
    script = 'ip link set lo up 2>/dev/null || true; exec "$@"'
    return [unshare, *flags, "--", "sh", "-c", script, "sh", sys.executable, __file__, *argv]


def _reexec_in_netns(argv: list[str]) -> int:
    """Run this script again in a private network namespace with loopback up."""
    cmd = _netns_command(argv)
    return 2 if cmd is None else subprocess.call(cmd)


#: ``--part``: the cases a run takes (``disrupt``: the second stack's run, ``SecondStack``).
PARTS = ("all", "provision", "disrupt")
#: The second stack's run writes its results here, in its output directory (pickled).
RESULTS = "results.pickle"
#: How long the run waits for the second stack's after its own cases (seconds).
SECOND_STACK_WAIT_S = 3600.0


#: The most NodeClaims a shared batch is expected to launch in one scheduling round. Before
#: each pod Karpenter sorts the round's in-flight NodeClaims, every case's, by pod count
#: (``scheduler.go`` ``Scheduler.add``, Go's ``sort.Slice``): up to 12 an insertion sort,
#: stable, so the order among one case's NodeClaims of equal count does not depend on the
#: other cases'; above, pdqsort, whose order among equal counts does (gen-1818-0: 43
#: NodeClaims in its round put a relaxed pod on another case-mate NodeClaim; alone, it
#: agrees).
ROUND_CLAIMS_MAX = 12


def _batches(
    items: list[corpus.Case], size: int, claims: Callable[[corpus.Case], int] = lambda _c: 0
) -> list[list[corpus.Case]]:
    """Provisioning cases in batches of at most ``size`` whose expected NodeClaims
    (``claims``: Joiner's plan's count, ``harness.expected_claims``) add up to at most
    ``ROUND_CLAIMS_MAX``, first fit in order; a case that expects more, or that could see
    other cases (``Case.alone``), runs alone."""
    batches: list[tuple[list[corpus.Case], int]] = []
    alone: list[list[corpus.Case]] = []
    for c in items:
        n = claims(c)
        if c.alone or n > ROUND_CLAIMS_MAX:
            alone.append([c])
            continue
        for i, (batch, total) in enumerate(batches):
            if len(batch) < size and total + n <= ROUND_CLAIMS_MAX:
                batch.append(c)
                batches[i] = (batch, total + n)
                break
        else:
            batches.append(([c], n))
    return [b for b, _ in batches] + alone


def _failed(cases: list[corpus.Case], exc: Exception) -> list[harness.Result]:
    err = harness.Side(error=f"{type(exc).__name__}: {exc}")
    print(f"error: {err.error}", file=sys.stderr, flush=True)
    return [harness.Result(c, err, err, [err.error], 0.0) for c in cases]


def _isolate(cluster: harness.Cluster, batch: list[corpus.Case]) -> None:
    """Delete the batch's namespaces and NodePools and wait until their NodeClaims are gone,
    so no later case sees them (a failure is printed: the later cases still run)."""
    try:
        for c in batch:
            cluster.delete_case(c)
        cluster.wait_claims_gone(batch)
    except Exception as exc:  # reported; the next batch's isolation is then not assured
        print(f"isolation: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def _freeze(cluster: harness.Cluster, case: corpus.Case) -> None:
    """A judged disruption case's NodePools take no further part: budget ``nodes: "0"``
    (Karpenter's ``BuildDisruptionBudgetMapping`` then gives them no disruptions, and the
    consolidation methods skip their candidates) and ``consolidateAfter: Never``."""
    frozen = {"disruption": {"consolidateAfter": "Never", "budgets": [{"nodes": "0"}]}}
    for current in cluster.nodepools(case):
        spec = render.merge(current["spec"], frozen)
        name = current["metadata"]["name"]
        kind = {k: current[k] for k in ("apiVersion", "kind")}
        cluster.apply([{**kind, "metadata": {"name": name}, "spec": spec}])


def _settle(cluster: harness.Cluster, batch: list[corpus.Case], quiet_s: float) -> float:
    return cluster.wait_stable([render.namespace(c) for c in batch], quiet_s)


def run_provisioning(
    cluster: harness.Cluster,
    batch: list[corpus.Case],
    types: list,
    out: Path,
    gates: FeatureGates,
    log: Path,
) -> list[harness.Result]:
    """Run one batch of provisioning cases side by side; ``log`` is Karpenter's log, read
    from where it stands now for the batch's scheduling rounds (``harness.Trace``)."""
    t0 = time.monotonic()
    offset = log.stat().st_size if log.is_file() else 0
    failed: dict[str, str] = {}

    def apply(case: corpus.Case, docs: list[corpus.Obj]) -> None:
        try:
            cluster.apply(docs)
        except ApiError as exc:  # the case is reported with the API's refusal
            failed.setdefault(case.id, f"apply refused: {exc.status.message}")

    for c in batch:
        apply(c, render.base_objects(c))
    if any(c.before for c in batch):
        for c in batch:
            apply(c, render.before_pods(c))
        _settle(cluster, batch, harness.QUIET_S)
    snaps = {c.id: harness.snapshot(cluster, c) for c in batch}
    for c in batch:
        apply(c, render.batch_pods(c))
    _settle(cluster, batch, harness.QUIET_S)
    elapsed = time.monotonic() - t0
    log_text = log.read_bytes()[offset:].decode(errors="replace") if log.is_file() else ""
    results = []
    for c in batch:
        if c.id in failed:
            err = harness.Side(error=failed[c.id])
            results.append(harness.Result(c, err, err, [failed[c.id]], elapsed / len(batch)))
            continue
        results.append(_judge(cluster, c, snaps[c.id], (types, out, gates), log_text))
        results[-1].seconds = elapsed / len(batch)
    return results


def _judge(
    cluster: harness.Cluster,
    case: corpus.Case,
    before: harness.Snapshot,
    joiner_args: tuple[list, Path, FeatureGates],
    log_text: str,
) -> harness.Result:
    """Both sides of a provisioning case, compared; a disagreement with a kube-scheduler
    race on Karpenter's side is compared with Karpenter's first decision too."""
    k = harness.karpenter_provisioned(cluster, case, before)
    trace = harness.karpenter_trace(cluster, case, before, log_text)
    types, out, gates = joiner_args
    j = harness.joiner_plan(case, before, types, out, gates)
    diffs = harness.compare(case, k, j)
    tie = None
    if diffs and case.zone_ties and not j.error:
        docs = harness.read_input(out / f"{case.id}.plan-input.json")
        tie = harness.tie_order_agreement(case, k, docs, out / "instance-types.json", gates)
        if tie is None:
            tie = harness.tie_choice_agreement(case, k, docs, types, gates)
    if tie is not None:
        return harness.Result(case, k, j, [], 0.0, trace, tie_order=tie, tie_differences=diffs)
    first, plan = harness.compare_with_plan(case, trace, j) if diffs else (None, None)
    if first is not None and plan and case.zone_ties and not j.error:
        # Karpenter's first decision breaks the same zone ties in its own order
        docs = harness.read_input(out / f"{case.id}.plan-input.json")
        tie = harness.tie_order_agreement(
            case, first, docs, out / "instance-types.json", gates, decided=True
        )
        if tie is None:
            tie = harness.tie_choice_agreement(case, first, docs, types, gates, decided=True)
        if tie is not None:
            return harness.Result(
                case, k, j, diffs, 0.0, trace, first, [], tie_order=tie, tie_differences=plan
            )
    return harness.Result(case, k, j, diffs, 0.0, trace, first, plan)


def run_disruption(
    cluster: harness.Cluster,
    todo: list[corpus.Case],
    types: list,
    out: Path,
    karpenter: Karpenter,
    gates: FeatureGates,
) -> list[harness.Result]:
    t0 = time.monotonic()
    for c in todo:
        cluster.apply(render.base_objects(c))
        cluster.apply(render.before_pods(c))
    _settle(cluster, todo, harness.QUIET_S)
    shared = (time.monotonic() - t0) / max(1, len(todo))
    results = []
    for c in todo:
        t1 = time.monotonic()
        assert c.change is not None
        ns = render.namespace(c)
        before = harness.snapshot(cluster, c)
        offset = karpenter.log.stat().st_size
        pools = {render.pool_name(c, p) for p in c.pools}
        counted = harness.decisions(karpenter.metrics(), pools)
        if c.change.not_ready:  # before the NodePools allow consolidation
            nodes = harness.nodes_of_pods(cluster.pods(ns), c.change.not_ready)
            cluster.make_unreachable(nodes)
        for name, patch in render.pool_patches(c).items():
            current = next(p for p in cluster.nodepools(c) if p["metadata"]["name"] == name)
            merged = render.merge({k: current[k] for k in ("apiVersion", "kind", "spec")}, patch)
            merged["metadata"] = {"name": name}
            cluster.apply([merged])
        for p in c.change.delete_pods:
            cluster.delete_pod(ns, p)
        cluster.wait_pods_gone(ns, c.change.delete_pods)
        after_change = harness.snapshot(cluster, c)
        j = harness.joiner_disrupt(c, after_change, types, out, gates)
        _settle(cluster, [c], harness.DISRUPT_QUIET_S)
        delta = harness.decisions(karpenter.metrics(), pools)
        delta.subtract(counted)
        k = harness.karpenter_disrupted(cluster, c, before, karpenter.log, offset, +delta)
        shapes = harness.node_shapes(after_change)
        for side in (k, j):
            side.removed_shapes = sorted(shapes.get(n, n) for n in side.removed)
        seconds = shared + time.monotonic() - t1
        results.append(harness.Result(c, k, j, harness.compare(c, k, j), seconds))
        _freeze(cluster, c)
    return results


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    parser.add_argument("--generated", type=int, default=0, help="generated cases to add")
    parser.add_argument("--seed", type=int, default=None, help="their seed (default: fresh)")
    parser.add_argument("--skip-fixed", action="store_true", help="only generated cases")
    parser.add_argument("--out", default="joiner-out/fidelity", help="report directory")
    parser.add_argument("--markdown", default="", help="also write the Markdown report here")
    parser.add_argument("--batch", type=int, default=16, help="provisioning cases at once")
    parser.add_argument("--keep", action="store_true", help="keep the stack's work directory")
    parser.add_argument(
        "--serial",
        action="store_true",
        help="run the disruption cases after the provisioning ones on the same stack "
        "(default: on a second stack, at the same time)",
    )
    parser.add_argument("--part", choices=PARTS, default="all", help=argparse.SUPPRESS)
    parser.add_argument("--results", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _generated_ids(ids: list[str]) -> tuple[int | None, int]:
    """The seed and case count ``gen-<seed>-<i>`` ids ask for (None, 0 without any).

    Raises:
        ValueError: ids of two seeds, or not of the form ``gen-<seed>-<i>``.
    """
    parsed = set()
    for i in ids:
        parts = i.split("-")
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            raise ValueError(f"--cases: {i!r} is not a generated case id gen-<seed>-<i>")
        parsed.add((int(parts[1]), int(parts[2])))
    seeds = {s for s, _ in parsed}
    if len(seeds) > 1:
        raise ValueError(f"--cases: generated cases of several seeds {sorted(seeds)}")
    return (seeds.pop(), max(n for _, n in parsed) + 1) if parsed else (None, 0)


def _select(args: argparse.Namespace) -> tuple[list[corpus.Case], list[corpus.Case], int]:
    """The fixed cases, the generated cases and their seed the arguments ask for."""
    ids = [c for c in args.cases.split(",") if c]
    gen_ids = [i for i in ids if i.startswith("gen-")]
    fixed_ids = [i for i in ids if not i.startswith("gen-")]
    seed, count = _generated_ids(gen_ids)
    seed = seed if seed is not None else args.seed
    if seed is None:  # a fresh seed, printed so that a disagreement can be reproduced
        seed = random.SystemRandom().randrange(1_000_000)
    generated = generator.generate(seed, max(count, args.generated))
    if gen_ids:
        generated = [c for c in generated if c.id in gen_ids]
    skip = args.skip_fixed or bool(gen_ids and not fixed_ids)
    return ([] if skip else corpus.by_id(fixed_ids)), generated, seed


def _run_all(
    cluster: harness.Cluster,
    selected: list[corpus.Case],
    types: list,
    out: Path,
    karpenter: Karpenter,
    batch_size: int,
    gates: FeatureGates,
) -> list[harness.Result]:
    results: list[harness.Result] = []
    # fixed cases first; generated ones fill the last shared batch (each case is fenced)
    prov = [c for c in selected if c.kind == "provision"]
    expected = {c.id: harness.expected_claims(c, types, gates) for c in prov}
    for batch in _batches(prov, batch_size, lambda c: expected[c.id]):
        print(f"provisioning: {', '.join(c.id for c in batch)}", flush=True)
        try:
            results += run_provisioning(cluster, batch, types, out, gates, karpenter.log)
        except Exception as exc:  # the batch's cases are reported as errors
            results += _failed(batch, exc)
        _isolate(cluster, batch)
    disrupt = [c for c in selected if c.kind == "disrupt"]
    if disrupt:
        print(f"disruption: {', '.join(c.id for c in disrupt)}", flush=True)
        try:
            results += run_disruption(cluster, disrupt, types, out, karpenter, gates)
        except Exception as exc:  # the cases not yet reported are errors
            done = {r.case.id for r in results}
            results += _failed([c for c in disrupt if c.id not in done], exc)
    return results


def _child_argv(args: argparse.Namespace, seed: int, out: Path) -> list[str]:
    """The arguments of the disruption run on the second stack: the same selection."""
    argv = ["--part", "disrupt", "--seed", str(seed), "--generated", str(args.generated)]
    argv += ["--out", str(out), "--results", str(out / RESULTS)]
    if args.cases:
        argv += ["--cases", args.cases]
    if args.skip_fixed:
        argv.append("--skip-fixed")
    if args.keep:
        argv.append("--keep")
    return argv


class SecondStack:
    """The disruption cases run on a second test stack with its own Karpenter, in a child
    run of this script in a network namespace of its own, while this one runs the
    provisioning cases: most of a disruption case is waiting (Karpenter's 10 s poll, 15 s
    validation, the quiet period), and cases on two stacks cannot touch each other.

    Raises:
        RuntimeError: no unshare command.
    """

    def __init__(self, args: argparse.Namespace, seed: int, out: Path) -> None:
        self.out = out / "disruption"
        self.out.mkdir(parents=True, exist_ok=True)
        cmd = _netns_command(_child_argv(args, seed, self.out))
        if cmd is None:
            raise RuntimeError("the unshare command is needed (util-linux)")
        self.log = self.out / "run.log"
        with self.log.open("w") as log:
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    def results(self, cases: list[corpus.Case]) -> list[harness.Result]:
        """Wait for the child run (at most ``SECOND_STACK_WAIT_S``) and return its results;
        a case it did not report is an error naming its log."""
        try:
            rc = self._proc.wait(timeout=SECOND_STACK_WAIT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            rc = self._proc.returncode
        text = self.log.read_text(errors="replace")
        print(f"--- disruption cases on the second stack ({self.log}): exit {rc} ---", flush=True)
        print(text, end="" if text.endswith("\n") or not text else "\n", flush=True)
        path = self.out / RESULTS
        got: list[harness.Result] = []
        if rc == 0 and path.is_file():
            got = pickle.loads(path.read_bytes())
        done = {r.case.id for r in got}
        missing = [c for c in cases if c.id not in done]
        if missing:
            why = RuntimeError(f"the second stack's run exited {rc} without them; see {self.log}")
            got += _failed(missing, why)
        return got

    def stop(self) -> None:
        """Stop the child run if it still runs (SIGTERM, then SIGKILL after 30 s)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def _split(
    args: argparse.Namespace, selected: list[corpus.Case]
) -> tuple[list[corpus.Case], list[corpus.Case]]:
    """The cases this run takes on its own stack and those for a second stack (``--part``;
    without ``--serial``, the disruption cases go to the second stack when both kinds are
    selected)."""
    if args.part != "all":
        return [c for c in selected if c.kind == args.part], []
    disrupt = [c for c in selected if c.kind == "disrupt"]
    if args.serial or not disrupt or len(disrupt) == len(selected):
        return selected, []
    return [c for c in selected if c.kind != "disrupt"], disrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parse(argv)
    if not in_private_netns():
        return _reexec_in_netns(argv)
    fixed, generated, seed = _select(args)
    gates = harness.joiner_gates(KARPENTER_FEATURE_GATES)
    if generated and args.part == "all":
        print(f"generated: {len(generated)} cases, seed {seed}", flush=True)
    out = Path(args.out).resolve()  # Karpenter runs in the stack's directory
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    paths = stack_paths()
    if paths.missing():
        paths = build_stack(out / "stack-build.log")
    kpaths = build_karpenter(out / "karpenter-build.log")
    types_file = catalog.write(out / "instance-types.json")
    types = load_instance_types(types_file)
    gen_ids = {c.id for c in generated}
    mine, theirs = _split(args, fixed + generated)
    second = SecondStack(args, seed, out) if theirs else None
    if second is not None:
        print(f"disruption: {len(theirs)} cases on a second stack ({second.log})", flush=True)
    try:
        with KubeStack(paths, keep=args.keep) as stack:
            install_crds(stack, kpaths)
            cluster = harness.Cluster(stack.kubeconfig)
            cluster.apply([render.KWOK_NODECLASS])
            with Karpenter(
                stack,
                kpaths,
                types_file,
                log=out / "karpenter.log",
                extra_env={"FEATURE_GATES": KARPENTER_FEATURE_GATES},
            ) as karpenter:
                setup_s = time.monotonic() - t0
                results = _run_all(cluster, mine, types, out, karpenter, args.batch, gates)
        if second is not None:
            results += second.results(theirs)
    finally:
        if second is not None:
            second.stop()
    if args.results:  # a second stack's run: its parent reports
        Path(args.results).write_bytes(pickle.dumps(results))
        return 0
    order = {c.id: i for i, c in enumerate(corpus.CASES + generated)}
    results.sort(key=lambda r: order[r.case.id])
    doc = report.as_json(
        [r for r in results if r.case.id not in gen_ids],
        karpenter_version(),
        time.monotonic() - t0,
        setup_s,
        generated=[r for r in results if r.case.id in gen_ids],
        seed=seed,
    )
    (out / "report.json").write_text(json.dumps(doc, indent=1))
    md = report.markdown(doc)
    (out / "report.md").write_text(md)
    if args.markdown:
        Path(args.markdown).write_text(report.fidelity_page(md))
    print(md)
    if generated:
        print(report.generated_headline(doc))
    print(report.headline(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
