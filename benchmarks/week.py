"""Seven days of a few-hundred-node cluster under Joiner and under the Cluster Autoscaler
baseline: wall seconds per policy, and the process's CPU seconds (steadier when the machine
is shared), printed as JSON (``make bench``; goal: under 60 s on the project's 2-core
machine for both together).

The cluster: one NodePool of six instance types (spot and on-demand, three zones), a web
Deployment (1 CPU, 2 GiB per replica) behind an HPA following a generated weekly
request-rate trace (a diurnal cycle, weekends at 60 %, and a short morning spike each day),
peaking near 1,800 replicas (about 250 m5.2xlarge-sized nodes), and a worker Deployment at
a fixed 300 replicas. Usage: ``python benchmarks/week.py [days] [peak-replicas]``.
"""

from __future__ import annotations

import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

from joiner.operator.compare import prepare_policies
from joiner.sim.scenario import load_scenario

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - key: node.kubernetes.io/instance-type
          operator: In
          values: [m5.2xlarge, m6i.2xlarge, m5a.2xlarge, c5.4xlarge, c6i.4xlarge, r5.2xlarge]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: bench
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {bench: "true"}}]
  securityGroupSelectorTerms: [{tags: {bench: "true"}}]
"""

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: bench}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web, resources: {requests: {cpu: "1", memory: 2Gi}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker, namespace: bench}
spec:
  replicas: 300
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      containers: [{name: w, image: w, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""

SCENARIO = """\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: week}}
spec:
  duration: {hours}h
  seed: 7
  startTime: "2025-01-06T00:00:00Z"
  manifests: [nodepool.yaml, app.yaml]
  compare: [joiner, cluster-autoscaler]
  cloud:
    subnets:
      - {{id: subnet-a, zone: us-east-1a, tags: {{bench: "true"}}}}
      - {{id: subnet-b, zone: us-east-1b, tags: {{bench: "true"}}}}
      - {{id: subnet-c, zone: us-east-1c, tags: {{bench: "true"}}}}
    securityGroups: [{{id: sg-1, tags: {{bench: "true"}}}}]
  workloads:
    - deployment: bench/web
      hpa:
        file: traffic.csv
        targetPerReplica: 10
        min: 50
        max: 4000
        dailyMultipliers: [{{name: morning, start: "09:00", duration: 20m, factor: 1.5}}]
"""


def traffic(minutes: int, peak_replicas: int) -> str:
    """A deterministic weekly request rate per minute (requests; 10 per replica)."""
    rows = ["minute,value"]
    for m in range(minutes):
        day, minute_of_day = divmod(m, 1440)
        diurnal = 0.55 - 0.45 * math.cos(2 * math.pi * (minute_of_day - 120) / 1440)
        weekend = 0.6 if day % 7 >= 5 else 1.0
        rows.append(f"{m},{round(10 * peak_replicas / 1.5 * diurnal * weekend, 1)}")
    return "\n".join(rows) + "\n"


def main() -> None:
    days = float(sys.argv[1]) if len(sys.argv) > 1 else 7.0
    peak = int(sys.argv[2]) if len(sys.argv) > 2 else 1800
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "nodepool.yaml").write_text(NODEPOOL)
        (d / "app.yaml").write_text(APP)
        (d / "traffic.csv").write_text(traffic(int(days * 1440) + 1, peak))
        (d / "scenario.yaml").write_text(SCENARIO.format(hours=days * 24))
        start = time.perf_counter()
        cpu_start = time.process_time()
        scenario = load_scenario(d / "scenario.yaml")
        runs = {}
        seconds = {}
        for name, runtime in prepare_policies(scenario):
            t0 = time.perf_counter()
            runs[name] = runtime.run()
            seconds[name] = round(time.perf_counter() - t0, 2)
        total = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    policies = {}
    for name, run in runs.items():
        s = run.summary
        peak_nodes = 0
        events = sorted(
            [(n["launchedAtSeconds"], 1) for n in s["nodes"]]
            + [(n["deletedAtSeconds"], -1) for n in s["nodes"] if n["deletedAtSeconds"]]
        )
        live = 0
        for _, delta in events:
            live += delta
            peak_nodes = max(peak_nodes, live)
        policies[name] = {
            "wallSeconds": seconds[name],
            "nodesLaunched": len(s["nodes"]),
            "peakNodes": peak_nodes,
            "podsScheduled": s["pods"]["scheduled"],
            "costUsd": s["cost"]["total"],
            "pendingSecondsP95": s["pods"]["pendingSeconds"]["p95"],
        }
    print(
        json.dumps(
            {
                "benchmark": "week",
                "python": platform.python_version(),
                "machine": platform.machine(),
                "virtualDays": days,
                "wallSeconds": round(total, 2),
                "cpuSeconds": round(cpu, 2),
                "goalWallSeconds": 60,
                "policies": policies,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
