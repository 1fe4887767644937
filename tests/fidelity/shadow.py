"""Shadow mode beside the real Karpenter: ``joiner run --dry-run`` and Karpenter-kwok on one
cluster (issue 14). Run by tests/e2e/test_shadow_karpenter.py in a private network
namespace (Karpenter's servers bind every interface; see tests/e2e/karpenter.py).

1. Start the stack, install Karpenter's CRDs (the pinned module's), a KWOKNodeClass and a
   NodePool; record every CRD's and the NodePool's resourceVersion.
2. Start ``joiner run --dry-run --report FILE`` first, with ``kwokInstanceTypes`` set to the
   file Karpenter reads; wait until it is ready.
3. Start Karpenter; create a batch of pending pods; wait until stable.
4. Write JSON: Karpenter's NodeClaims (type, zone, capacity type), the shadow report's
   ``launch`` entries, the managers of every NodeClaim and Node, the Leases, the
   resourceVersions again, and the report's actions.

Usage: python tests/fidelity/shadow.py OUT.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "e2e")]

import cases  # noqa: E402
import catalog  # noqa: E402
import harness  # noqa: E402
import render  # noqa: E402
import yaml  # noqa: E402
from karpenter import Karpenter, build_karpenter, in_private_netns, install_crds  # noqa: E402
from kubestack import KubeStack, _free_port, _get, build_stack, stack_paths  # noqa: E402
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition  # noqa: E402
from lightkube.resources.coordination_v1 import Lease  # noqa: E402
from lightkube.resources.core_v1 import Node  # noqa: E402

CASE = cases.Case(
    "shadow",
    ("shadow mode",),
    {"default": cases.pool()},
    # One shape only: with pods of several shapes Karpenter may pin an undecided NodeClaim's
    # zone differently (its choice among equal domains is not ordered), which this test is
    # not about (docs/fidelity.md compares such cases).
    cases.pods("spread", 3, topologySpreadConstraints=[cases.spread(cases.ZONE, "spread")]),
)


def _versions(cluster: harness.Cluster, crds: list[str]) -> dict[str, str]:
    out = {
        f"crd/{n}": str(cluster.client.get(CustomResourceDefinition, n).metadata.resourceVersion)
        for n in crds
    }
    for np in cluster.nodepools(CASE):
        # Karpenter updates its NodePools' status and hash annotation; their spec
        # (generation) is what another writer would change, and Joiner would show up as a
        # field manager.
        meta = np["metadata"]
        spec_managers = sorted(
            {f["manager"] for f in meta.get("managedFields") or [] if not f.get("subresource")}
        )
        out[f"nodepool/{meta['name']}"] = f"generation {meta['generation']}"
        out[f"nodepool/{meta['name']}/joiner-writes"] = str("joiner" in spec_managers)
    return out


def main(out_file: str) -> int:
    if not in_private_netns():
        print("shadow.py must run in a private network namespace (unshare -n)", file=sys.stderr)
        return 2
    work = Path(out_file).parent
    paths = stack_paths()
    if paths.missing():
        paths = build_stack(work / "stack-build.log")
    kpaths = build_karpenter(work / "karpenter-build.log")
    types_file = catalog.write(work / "instance-types.json")
    report_file = work / "shadow-report.jsonl"
    report_file.unlink(missing_ok=True)
    with KubeStack(paths) as stack:
        crds = install_crds(stack, kpaths)
        cluster = harness.Cluster(stack.kubeconfig)
        cluster.apply([render.KWOK_NODECLASS, *render.base_objects(CASE)])
        before = _versions(cluster, crds)
        settings = work / "shadow-settings.yaml"
        settings.write_text(
            yaml.safe_dump({"kwokInstanceTypes": str(types_file), "batchIdleDuration": "1s"})
        )
        health = _free_port()
        joiner_log = (work / "joiner.log").open("wb")
        joiner = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from joiner.cli.main import main; main()",
                "run",
                "--kubeconfig",
                str(stack.kubeconfig),
                "--settings",
                str(settings),
                "--cloud",
                "simulated",
                "--dry-run",
                "--report",
                str(report_file),
                "--health-port",
                str(health),
                "--metrics-port",
                str(_free_port()),
            ],
            stdout=joiner_log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            deadline = time.monotonic() + 120
            while _get(f"http://127.0.0.1:{health}/readyz") != 200:
                if joiner.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("joiner run --dry-run did not become ready")
                time.sleep(0.5)
            with Karpenter(stack, kpaths, types_file, log=work / "karpenter.log"):
                cluster.apply(render.batch_pods(CASE))
                cluster.wait_stable([render.namespace(CASE)], harness.QUIET_S)
                time.sleep(2)
                claims = cluster.nodeclaims()
                nodes = [n.to_dict() for n in cluster.client.list(Node)]
                leases = [
                    f"{lease.metadata.namespace}/{lease.metadata.name}"
                    for lease in cluster.client.list(Lease, namespace="*")
                ]
                after = _versions(cluster, crds)
                pods = cluster.pods(render.namespace(CASE))
        finally:
            joiner.terminate()
            joiner.wait(timeout=30)
            joiner_log.close()
    actions = [json.loads(line) for line in report_file.read_text().splitlines() if line]

    def managers(obj: dict[str, object]) -> list[str]:
        meta = obj.get("metadata") or {}
        assert isinstance(meta, dict)
        return sorted({str(f.get("manager")) for f in meta.get("managedFields") or []})

    result = {
        "karpenterNodeClaims": [
            {
                "name": c["metadata"]["name"],
                "instanceType": c["metadata"]["labels"].get(harness.IT),
                "zone": c["metadata"]["labels"].get(harness.ZONE),
                "capacityType": c["metadata"]["labels"].get(harness.CT),
                "managers": managers(c),
            }
            for c in claims
        ],
        "nodeManagers": sorted({m for n in nodes for m in managers(n)}),
        "podsUnbound": [p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")],
        "leases": sorted(leases),
        "versionsBefore": before,
        "versionsAfter": after,
        "actions": actions,
    }
    Path(out_file).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
