"""A big live cluster: ``joiner plan``, ``joiner disrupt`` and the controller's reconcile over
a dump of thousands of nodes and tens of thousands of pods.

The dump is generated with a fixed seed, as ``kubectl get -o yaml`` prints a List: three
NodePools (general c/m/r spot and on-demand, compute c on-demand, memory r spot) and their
EC2NodeClass with its status, ``NODES`` Nodes of 4 and 8 vCPU types from the packaged
catalog (us-east-1a/b/c, the capacity, allocatable and well-known labels of the catalog's
instance type) with their NodeClaims, two DaemonSets with one pod on every node, Deployments
with their ReplicaSets and running pods bound to the nodes (requests that fit: each pod
goes to the next node of its pool with room for it; requests are scaled so that the running
pods take about 70% of the nodes' allocatable), PodDisruptionBudgets
for a quarter of the Deployments, and a pending batch (``--pending``, default 1,000 pods of
five new Deployments, two of them spread over zones). ``PODS`` counts every bound pod,
DaemonSet pods included.

Each measured run is a process of its own (``os.wait4``: its CPU seconds, user and system,
and its peak RSS), with bytecode caching on as ``benchmarks/realistic.py`` runs its children:

* ``plan``: ``joiner plan -f DUMP -o json``;
* ``disrupt``: ``joiner disrupt -f DUMP -o json --at AT``;
* ``disruptNoPending``: the same on the dump without the pending batch;
* ``reconcile``: the controller of ``joiner run --dry-run`` built without an API server (its
  informers' first lists delivered from the dump's documents, as
  ``tests/cluster/test_controller_node_overlay.py`` does), then one provisioning reconcile
  of the pending batch (``ControllerReactions._provision``). The child reports the seconds
  of building the state (``feedStartSeconds``) and of the reconcile (``reconcileSeconds``,
  ``reconcileCpuSeconds``) and how many NodeClaims it launched.

Prints one JSON document: the date, the machine's ``calibrationCpuSeconds``
(``benchmarks/realistic.py``), and per size the dump's counts and each run's figures.
Target (scale work): plan and disrupt of 5,000 nodes and 50,000 pods within 10 s of wall
time and 2 GiB on a 2-core machine; the reconcile of 1,000 pending pods in the same order.
Never asserted in tests.

Usage: ``python benchmarks/bigdump.py [--pending N] [--repeat R] [--limit S] [--write
FILE] [NODES:PODS ...]`` (default ``1000:10000 5000:50000``). ``--limit S`` stops a command
still running after S wall seconds (default 600; its row says ``timedOut``). ``--write
FILE`` writes the dump of the first size and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

sys.path.append(str(Path(__file__).resolve().parent))
import realistic  # benchmarks/realistic.py: the calibration and the children's environment

from joiner.api import labels, quantity
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.types import InstanceType

REPO = Path(__file__).resolve().parents[1]
JOINER = [sys.executable, "-m", "joiner.cli.main"]
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
#: The instant the nodes were created, and ``joiner disrupt --at``.
CREATED = "2026-11-20T08:00:00Z"
AT = "2026-12-06T12:00:00Z"
#: Node types by pool: (name, share of the pool's nodes).
POOL_TYPES = {
    "general": ("m5.xlarge", "m6i.xlarge", "c6i.2xlarge", "r6i.xlarge", "m6i.2xlarge"),
    "compute": ("c5.2xlarge", "c6i.2xlarge"),
    "memory": ("r5.xlarge", "r6i.xlarge"),
}
POOL_SHARE = (("general", 0.7), ("compute", 0.15), ("memory", 0.15))
CPUS_M = (100, 200, 250, 500, 750)
MEMS_MI = (128, 256, 512, 768, 1024)
DAEMONSETS = (("kube-system", "aws-node", 25, 64), ("monitoring", "node-exporter", 50, 96))
#: Leave this share of each node's cpu and memory free when placing running pods.
HEADROOM = 0.05
#: The pending batch's Deployments: (name, cpu m, memory Mi, zonal spread).
PENDING_APPS = (
    ("batch-api", 500, 1024, True),
    ("batch-worker", 1000, 2048, False),
    ("batch-web", 250, 512, True),
    ("batch-cache", 500, 4096, False),
    ("batch-etl", 2000, 4096, False),
)


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": CREATED, **extra}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def nodepools() -> list[dict[str, Any]]:
    """The three NodePools (module docstring), Ready."""
    reqs = {
        "general": [
            _req(labels.CAPACITY_TYPE, "In", "spot", "on-demand"),
            _req("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"),
            _req("karpenter.k8s.aws/instance-generation", "Gt", "4"),
        ],
        "compute": [
            _req(labels.CAPACITY_TYPE, "In", "on-demand"),
            _req("karpenter.k8s.aws/instance-category", "In", "c"),
        ],
        "memory": [
            _req(labels.CAPACITY_TYPE, "In", "spot"),
            _req("karpenter.k8s.aws/instance-category", "In", "r"),
        ],
    }
    out = []
    for name, pool_reqs in reqs.items():
        spec = {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "expireAfter": "720h",
            "requirements": [_req(labels.ARCH, "In", "amd64"), *pool_reqs],
        }
        if name != "general":
            spec["taints"] = [{"key": "workload", "value": name, "effect": "NoSchedule"}]
        out.append(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": _meta(name, generation=1),
                "spec": {
                    "weight": 50 if name == "general" else 10,
                    "template": {"spec": spec},
                    "disruption": {
                        "consolidationPolicy": "WhenEmptyOrUnderutilized",
                        "consolidateAfter": "5m",
                        "budgets": [{"nodes": "10%"}],
                    },
                    "limits": {"cpu": "100000"},
                },
                "status": {"conditions": [_ready("Ready")]},
            }
        )
    return out


def _ready(kind: str) -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": kind, "lastTransitionTime": CREATED}


def nodeclass(zone_ids: dict[str, str]) -> dict[str, Any]:
    """The EC2NodeClass ``default`` with its resolved status."""
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": _meta("default", generation=1),
        "spec": {
            "role": "KarpenterNodeRole-big",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "big"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "big"}}],
        },
        "status": {
            "conditions": [_ready("Ready")],
            "subnets": [
                {"id": f"subnet-0{i}big", "zone": z, "zoneID": zone_ids[z]}
                for i, z in enumerate(ZONES)
            ],
            "securityGroups": [{"id": "sg-0big", "name": "big"}],
            "amis": [{"id": "ami-0big", "name": "al2023"}],
        },
    }


def _type_labels(it: InstanceType) -> dict[str, str]:
    """The instance type's single-valued well-known labels (zone and capacity type aside)."""
    out = {}
    for key in it.requirements:
        if key in (labels.ZONE, labels.ZONE_ID, labels.CAPACITY_TYPE):
            continue
        r = it.requirements.get(key)
        if r is not None and len(r.values) == 1 and r.operator == "In":
            out[key] = next(iter(r.values))
    return out


def _mi(n_bytes: int) -> str:
    return f"{n_bytes // 1024}Ki"


def _resources(res: dict[str, int]) -> dict[str, str]:
    return {
        "cpu": f"{res[quantity.CPU]}m",
        "memory": _mi(res[quantity.MEMORY]),
        "pods": str(res[quantity.PODS]),
    }


class Dump:
    """The dump being built: its items and each node's room left (cpu m, memory bytes,
    pods)."""

    def __init__(self, nodes: int, seed: int) -> None:
        self.rng = random.Random(seed)
        catalog = Catalog.load()
        zones = [z for z in catalog.zones(REGION) if z[0] in ZONES]
        self.zone_ids = dict(zones)
        types = {it.name: it for it in build_instance_types(catalog, REGION, zones)}
        self.items: list[dict[str, Any]] = [*nodepools(), nodeclass(self.zone_ids)]
        self.room: list[list[int]] = []
        self.node_names: list[str] = []
        self.node_pools: list[str] = []
        self.node_count = nodes
        for i in range(nodes):
            self._node(i, types)
        self.cursor = 0
        self.uid = 0

    def _pool_of(self, i: int) -> str:
        frac = (i * 0.618034) % 1.0  # spread the pools over the nodes evenly
        acc = 0.0
        for pool, share in POOL_SHARE:
            acc += share
            if frac < acc:
                return pool
        return POOL_SHARE[-1][0]

    def _node(self, i: int, types: dict[str, InstanceType]) -> None:
        pool = self._pool_of(i)
        it = types[self.rng.choice(POOL_TYPES[pool])]
        zone = ZONES[i % len(ZONES)]
        ct = {"general": self.rng.choice(("spot", "on-demand")), "compute": "on-demand"}.get(
            pool, "spot"
        )
        name = f"ip-10-{i >> 16 & 255}-{i >> 8 & 255}-{i & 255}.ec2.internal"
        pid = f"aws:///{zone}/i-0{i + 1:016x}"
        lab = {
            **_type_labels(it),
            labels.ZONE: zone,
            labels.ZONE_ID: self.zone_ids[zone],
            labels.CAPACITY_TYPE: ct,
            labels.NODEPOOL: pool,
            "karpenter.k8s.aws/ec2nodeclass": "default",
            labels.HOSTNAME: name,
            "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true",
        }
        taints = (
            [{"key": "workload", "value": pool, "effect": "NoSchedule"}]
            if pool != "general"
            else []
        )
        capacity, allocatable = _resources(dict(it.capacity)), _resources(dict(it.allocatable))
        claim = f"{pool}-{i:05d}"
        self.items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": _meta(name, labels=lab, finalizers=[labels.TERMINATION_FINALIZER]),
                "spec": {"providerID": pid, "taints": taints},
                "status": {
                    "capacity": capacity,
                    "allocatable": allocatable,
                    "conditions": [_ready("Ready")],
                },
            }
        )
        self.items.append(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": _meta(
                    claim,
                    labels={k: v for k, v in lab.items() if k != labels.HOSTNAME},
                    finalizers=[labels.TERMINATION_FINALIZER],
                ),
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "taints": taints,
                    "requirements": [
                        _req(labels.NODEPOOL, "In", pool),
                        _req(labels.INSTANCE_TYPE, "In", it.name),
                        _req(labels.CAPACITY_TYPE, "In", ct),
                    ],
                },
                "status": {
                    "providerID": pid,
                    "nodeName": name,
                    "capacity": capacity,
                    "allocatable": allocatable,
                    "conditions": [_ready(c) for c in ("Launched", "Registered", "Initialized")],
                    "lastPodEventTime": CREATED,
                },
            }
        )
        a = it.allocatable
        self.room.append(
            [
                int(a[quantity.CPU] * (1 - HEADROOM)),
                int(a[quantity.MEMORY] * (1 - HEADROOM)),
                a[quantity.PODS],
            ]
        )
        self.node_names.append(name)
        self.node_pools.append(pool)

    def place(self, cpu_m: int, mem: int, pool: str) -> int:
        """The next node of ``pool`` (round robin from the last placement) with room for a
        pod of ``cpu_m`` and ``mem`` bytes; its room is taken.

        Raises:
            ValueError: no node of the pool has room (the dump's sizes do not fit).
        """
        n = self.node_count
        for step in range(n):
            i = (self.cursor + step) % n
            r = self.room[i]
            if self.node_pools[i] == pool and r[0] >= cpu_m and r[1] >= mem and r[2] >= 1:
                r[0] -= cpu_m
                r[1] -= mem
                r[2] -= 1
                self.cursor = (i + 1) % n
                return i
        raise ValueError(f"no node of pool {pool} has room for a pod of {cpu_m}m, {mem} bytes")

    def next_uid(self) -> str:
        self.uid += 1
        return f"{self.uid:08x}-0000-4000-8000-000000000000"


def _pod_spec(cpu_m: int, mem_mi: int, app: str, pool: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": app,
                "image": f"registry.example/{app}:1",
                "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}},
            }
        ]
    }
    if pool not in (None, "general"):
        spec["tolerations"] = [{"key": "workload", "value": pool, "effect": "NoSchedule"}]
        spec["nodeSelector"] = {labels.NODEPOOL: pool}
    return spec


def _pod(
    d: Dump, name: str, ns: str, app: str, spec: dict[str, Any], owner: tuple[str, str]
) -> dict[str, Any]:
    node = spec.get("nodeName")
    status: dict[str, Any] = (
        {"phase": "Running", "startTime": CREATED}
        if node
        else {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            name,
            ns,
            uid=d.next_uid(),
            labels={"app": app},
            ownerReferences=[
                {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "controller": True}
            ],
        ),
        # the Priority admission plugin's fields, on every Pod a cluster has admitted
        "spec": {**spec, "priority": 0, "preemptionPolicy": "PreemptLowerPriority"},
        "status": status,
    }


def daemonsets(d: Dump) -> int:
    """Both DaemonSets and their pod on every node; returns the pods made."""
    made = 0
    for ns, name, cpu_m, mem_mi in DAEMONSETS:
        spec = _pod_spec(cpu_m, mem_mi, name, None)
        spec["tolerations"] = [{"operator": "Exists"}]
        d.items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": _meta(name, ns, generation=1),
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
                },
            }
        )
        for i, node in enumerate(d.node_names):
            d.room[i][0] -= cpu_m
            d.room[i][1] -= mem_mi * quantity.MIB
            d.room[i][2] -= 1
            pod_spec = {**spec, "nodeName": node}
            d.items.append(_pod(d, f"{name}-{i:05x}", ns, name, pod_spec, ("DaemonSet", name)))
            made += 1
    return made


def _workload(
    d: Dump, ns: str, app: str, replicas: int, spec: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """A Deployment of ``replicas`` and its ReplicaSet; returns the ReplicaSet's name and
    the pods' template."""
    rs = f"{app}-7d9f8c6b5"
    template = {"metadata": {"labels": {"app": app}}, "spec": spec}
    selector = {"matchLabels": {"app": app}}
    for kind, name in (("Deployment", app), ("ReplicaSet", rs)):
        d.items.append(
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "metadata": _meta(name, ns, generation=1),
                "spec": {"replicas": replicas, "selector": selector, "template": template},
                "status": {"replicas": replicas},
            }
        )
    return rs, template


def _pdb(d: Dump, ns: str, app: str, replicas: int) -> None:
    d.items.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(app, ns, generation=1),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
            "status": {
                "currentHealthy": replicas,
                "desiredHealthy": replicas - 1,
                "disruptionsAllowed": 1,
                "expectedPods": replicas,
            },
        }
    )


def deployments(d: Dump, pods: int) -> int:
    """Deployments of 5 to 40 replicas until ``pods`` running pods, each bound to a node of
    its pool with room; returns the pods made. Requests are drawn from ``CPUS_M`` and
    ``MEMS_MI``, then scaled per pool so that the pods fill ``FILL`` of the room the nodes
    leave (a packed cluster, as Karpenter keeps it)."""
    drawn: list[tuple[str, str, str, int, int, int]] = []
    made, k = 0, 0
    while made < pods:
        replicas = min(pods - made, d.rng.randint(5, 40))
        cpu_m, mem_mi = d.rng.choice(CPUS_M), d.rng.choice(MEMS_MI)
        pool = d._pool_of(k * 7 + 3)
        drawn.append((pool, f"team-{k % 40:02d}", f"app-{k:05d}", replicas, cpu_m, mem_mi))
        made += replicas
        k += 1
    scale = _scales(d, drawn)
    for k, (pool, ns, app, replicas, cpu_m, mem_mi) in enumerate(drawn):
        cpu_m = max(10, int(cpu_m * scale[pool][0]))
        mem_mi = max(16, int(mem_mi * scale[pool][1]))
        spec = _pod_spec(cpu_m, mem_mi, app, pool)
        rs, _ = _workload(d, ns, app, replicas, spec)
        if k % 4 == 0 and replicas > 1:
            _pdb(d, ns, app, replicas)
        for r in range(replicas):
            node = d.place(cpu_m, mem_mi * quantity.MIB, pool)
            pod_spec = {**spec, "nodeName": d.node_names[node]}
            d.items.append(_pod(d, f"{rs}-{r:05x}", ns, app, pod_spec, ("ReplicaSet", rs)))
    return made


#: The share of the nodes' room (after ``HEADROOM`` and the DaemonSet pods) the running
#: pods take.
FILL = 0.75


def _scales(
    d: Dump, drawn: list[tuple[str, str, str, int, int, int]]
) -> dict[str, tuple[float, float]]:
    """Per pool, the factors (cpu, memory) that make the drawn requests fill ``FILL`` of
    the pool's room."""
    out = {}
    for pool, _ in POOL_SHARE:
        room_cpu = sum(r[0] for r, p in zip(d.room, d.node_pools, strict=True) if p == pool)
        room_mem = sum(r[1] for r, p in zip(d.room, d.node_pools, strict=True) if p == pool)
        want_cpu = sum(w[3] * w[4] for w in drawn if w[0] == pool)
        want_mem = sum(w[3] * w[5] * quantity.MIB for w in drawn if w[0] == pool)
        out[pool] = (
            FILL * room_cpu / want_cpu if want_cpu else 1.0,
            FILL * room_mem / want_mem if want_mem else 1.0,
        )
    return out


def pending_batch(d: Dump, pending: int) -> None:
    """``pending`` unbound pods of the batch's Deployments (``PENDING_APPS``), in equal
    parts."""
    per, extra = divmod(pending, len(PENDING_APPS))
    for j, (app, cpu_m, mem_mi, spread) in enumerate(PENDING_APPS):
        replicas = per + (1 if j < extra else 0)
        if replicas == 0:
            continue
        spec = _pod_spec(cpu_m, mem_mi, app, None)
        if spread:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": labels.ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": app}},
                }
            ]
        rs, _ = _workload(d, "batch", app, replicas, spec)
        for r in range(replicas):
            d.items.append(_pod(d, f"{rs}-{r:05x}", "batch", app, spec, ("ReplicaSet", rs)))


class _KubectlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """YAML as kubectl prints it: every object written out, never an anchor and alias for a
    value the generator shared between objects."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def generate(nodes: int, pods: int, pending: int, seed: int = 1) -> tuple[str, str, dict[str, int]]:
    """The dump's YAML text, the same without the pending batch, and the dump's counts
    (module docstring).

    Raises:
        ValueError: ``pods`` do not fit on ``nodes``.
    """
    d = Dump(nodes, seed)
    ds_pods = daemonsets(d)
    app_pods = deployments(d, max(0, pods - ds_pods))
    steady = len(d.items)
    pending_batch(d, pending)
    counts: dict[str, int] = {"boundPods": ds_pods + app_pods, "pendingPods": pending}
    for item in d.items:
        counts[item["kind"]] = counts.get(item["kind"], 0) + 1
    texts = [
        yaml.dump(
            {"apiVersion": "v1", "kind": "List", "items": items},
            Dumper=_KubectlDumper,
            sort_keys=False,
        )
        for items in (d.items, d.items[:steady])
    ]
    return texts[0], texts[1], counts


#: A command still running after this many wall seconds is stopped and reported as such
#: (``--limit``).
LIMIT_S = [600.0]
#: The commands ``--only`` keeps (empty: every command).
ONLY: set[str] = set()


def _measure(cmd: list[str]) -> tuple[dict[str, Any], str]:
    """One run of ``cmd`` in a process of its own: its figures and its stdout (empty when
    it was stopped at ``LIMIT_S``: ``timedOut``).

    Raises:
        RuntimeError: the command failed (with the end of its stderr).
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, env=realistic.child_env(), stdout=out, stderr=err)
        stopper = threading.Timer(LIMIT_S[0], proc.kill)
        stopper.start()
        _, status, usage = os.wait4(proc.pid, 0)
        stopper.cancel()
        wall = time.perf_counter() - start
        out.seek(0)
        stdout = out.read()
        err.seek(0)
        stderr = err.read()
    row: dict[str, Any] = {
        "wallSeconds": round(wall, 3),
        "cpuSeconds": round(usage.ru_utime + usage.ru_stime, 3),
        "peakMemoryBytes": usage.ru_maxrss * 1024,
    }
    if os.WIFSIGNALED(status) and wall >= LIMIT_S[0]:
        row["timedOut"] = True
        return row, ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {code}: {stderr[-2000:]}")
    return row, stdout


def run_plan(dump: Path) -> dict[str, Any]:
    """``joiner plan -f DUMP -o json``, measured, with how many NodeClaims it plans."""
    row, out = _measure([*JOINER, "plan", "-f", str(dump), "-o", "json"])
    if out:
        plan = json.loads(out)
        row["nodeClaims"] = len(plan["nodeClaims"])
        row["placements"] = len(plan["placements"])
    return row


def run_disrupt(dump: Path) -> dict[str, Any]:
    """``joiner disrupt -f DUMP -o json --at AT``, measured, with how many commands."""
    row, out = _measure([*JOINER, "disrupt", "-f", str(dump), "-o", "json", "--at", AT])
    if out:
        plan = json.loads(out)
        row["commands"] = len(plan["commands"])
        row["unconsolidatable"] = len(plan["unconsolidatable"])
    return row


def run_reconcile(dump: Path) -> dict[str, Any]:
    """The controller's state from the dump and one reconcile (``reconcile_child``),
    measured in a process of its own."""
    row, out = _measure([sys.executable, __file__, RECONCILE, str(dump)])
    if out:
        row.update(json.loads(out))
    return row


#: The hidden argument that makes this script run ``reconcile_child`` on a dump.
RECONCILE = "--reconcile-child"
#: The hidden first argument of the child that generates a size's two dumps into a directory.
GENERATE = "--generate-child"


def reconcile_child(dump: Path) -> dict[str, Any]:
    """In this process: the controller of ``joiner run --dry-run`` (simulated cloud) built
    without an API server, its informers' first lists delivered from the dump, the feed
    started, and one provisioning reconcile timed."""
    import asyncio

    from joiner.api.manifests.yamlio import parse_documents
    from joiner.operator.controller import ControllerRuntime

    # the List as an API server's lists would give it, read with Joiner's own reader
    (items,) = parse_documents(dump.read_text(), str(dump))
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for item in items["items"]:
        by_kind.setdefault(item["kind"], []).append(item)
    runtime = ControllerRuntime(None, dry_run=True, metrics_port=None, health_port=None)
    loop = asyncio.new_event_loop()
    try:
        runtime._build(loop)
        start = time.perf_counter()
        for kind in runtime.watched:
            runtime.feed.deliver(kind, "SYNC", by_kind.get(kind.kind, []))
        runtime.feed.start()
        feed_s = time.perf_counter() - start
        before = set(runtime.state.nodeclaims)
        pending = len(runtime.state.pending_pods())
        start, start_cpu = time.perf_counter(), time.process_time()
        runtime._provision()
        reconcile_s = time.perf_counter() - start
        reconcile_cpu_s = time.process_time() - start_cpu
    finally:
        loop.close()
    return {
        "feedStartSeconds": round(feed_s, 3),
        "pendingPods": pending,
        "reconcileSeconds": round(reconcile_s, 3),
        "reconcileCpuSeconds": round(reconcile_cpu_s, 3),
        "launchedNodeClaims": len(set(runtime.state.nodeclaims) - before),
    }


def one_size(nodes: int, pods: int, pending: int, repeat: int) -> dict[str, Any]:
    """Generate the dump of ``nodes`` and ``pods`` and run each command ``repeat`` times
    (``disruptNoPending``: ``joiner disrupt`` on the dump without the pending batch)."""
    with tempfile.TemporaryDirectory() as tmp:
        dump, dump_steady = Path(tmp) / "dump.yaml", Path(tmp) / "steady.yaml"
        # Generated in a process of its own: a child's peak memory as the kernel reports it
        # starts from what its parent held when it was started (the parent's memory is the
        # child's until exec), so this process stays small.
        start = time.perf_counter()
        made = subprocess.run(
            [sys.executable, __file__, GENERATE, tmp, str(nodes), str(pods), str(pending)],
            check=True,
            capture_output=True,
            text=True,
        )
        counts = json.loads(made.stdout)
        row: dict[str, Any] = {
            "nodes": nodes,
            "pods": pods,
            "counts": counts,
            "dumpBytes": dump.stat().st_size,
            "generateSeconds": round(time.perf_counter() - start, 2),
        }
        runs = (
            ("plan", lambda: run_plan(dump)),
            ("disrupt", lambda: run_disrupt(dump)),
            ("disruptNoPending", lambda: run_disrupt(dump_steady)),
            ("reconcile", lambda: run_reconcile(dump)),
        )
        for name, run in runs:
            if ONLY and name not in ONLY:
                continue
            row[name] = []
            for _ in range(repeat):
                row[name].append(run())
                print(f"{nodes}:{pods} {name}: {json.dumps(row[name][-1])}", file=sys.stderr)
    return row


def _size(text: str) -> tuple[int, int]:
    nodes, _, pods = text.partition(":")
    return int(nodes), int(pods)


def main(argv: list[str]) -> int:
    if argv[:1] == [RECONCILE]:
        print(json.dumps(reconcile_child(Path(argv[1]))))
        return 0
    if argv[:1] == [GENERATE]:
        text, steady, counts = generate(int(argv[2]), int(argv[3]), int(argv[4]))
        (Path(argv[1]) / "dump.yaml").write_text(text)
        (Path(argv[1]) / "steady.yaml").write_text(steady)
        print(json.dumps(counts))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "sizes", nargs="*", type=_size, help="NODES:PODS (default 1000:10000 5000:50000)"
    )
    parser.add_argument("--pending", type=int, default=1000, help="pending pods (default 1000)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command per size")
    parser.add_argument(
        "--limit", type=float, default=LIMIT_S[0], help="stop a command after this many s"
    )
    parser.add_argument("--write", type=Path, help="write the first size's dump here and exit")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated commands to run (plan, disrupt, disruptNoPending, reconcile)",
    )
    args = parser.parse_args(argv)
    LIMIT_S[0] = args.limit
    ONLY.update(name for name in args.only.split(",") if name)
    sizes = args.sizes or [(1000, 10000), (5000, 50000)]
    if args.write is not None:
        args.write.write_text(generate(*sizes[0], args.pending)[0])
        return 0
    doc = {
        "date": datetime.now(UTC).date().isoformat(),
        "python": platform.python_version(),
        "calibrationCpuSeconds": realistic.calibration_cpu_s(),
        "pending": args.pending,
        "sizes": [one_size(n, p, args.pending, args.repeat) for n, p in sizes],
    }
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
