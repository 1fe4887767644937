#!/usr/bin/env bash
# Build the test binary of Karpenter's scheduling package, with its scheduling benchmark
# (build tag test_performance), into a cache outside the repository:
#
#   ${JOINER_KARPENTER_BENCH_CACHE:-$HOME/.cache/joiner/karpenter-bench}/<VERSION>/scheduling.test
#
# The module sigs.k8s.io/karpenter at VERSION (the one tools/kube-stack/karpenter/go.mod pins)
# is fetched through the Go module proxy and copied next to the binary; one test file is added
# to the copy: a benchmark, BenchmarkJoinerMix, that builds one mix of the benchmark's own pods
# (KBENCH_MIX, KBENCH_PODS) with the benchmark file's pod generators, runs the benchmark file's
# benchmarkScheduler on them and reports the process's CPU time (getrusage, every thread) of
# the scheduler's setup and solve, and of the setup alone, so the solve's own CPU time is the
# difference. With KBENCH_DUMP=PATH it first writes the pods it built as JSON (labels,
# requests, constraint), so the same pods can be solved by Joiner
# (benchmarks/versus_karpenter.py). Nothing of this is in the repository but this script.
#
# A stamp (hash of this script, the version and the Go version) makes a warm run cost nothing.
# Usage: build.sh [--print-bin]
# Environment: JOINER_KARPENTER_BENCH_CACHE, GOMODCACHE/GOCACHE/GOPROXY as for go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(sed -n 's|^require sigs.k8s.io/karpenter \(v[^ ]*\)$|\1|p' \
  "$here/../kube-stack/karpenter/go.mod")"
cache="${JOINER_KARPENTER_BENCH_CACHE:-$HOME/.cache/joiner/karpenter-bench}/$version"
bin="$cache/scheduling.test"
if [[ "${1-}" == "--print-bin" ]]; then
  echo "$bin"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: $(basename "$0") [--print-bin]" >&2
  exit 2
fi
log() { echo "karpenter-bench: $*" >&2; }
command -v go >/dev/null || { log "go is not on PATH"; exit 1; }

want="$( (cat "$0"; echo "$version"; go env GOVERSION) | sha256sum | cut -d' ' -f1)"
if [[ -x "$bin" && "$(cat "$cache/.stamp" 2>/dev/null)" == "$want" ]]; then
  log "scheduling.test of karpenter $version: up to date"
  exit 0
fi

mkdir -p "$cache"
src="$(cd /tmp && go mod download -json "sigs.k8s.io/karpenter@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
rm -rf "$cache/src"
cp -r "$src" "$cache/src"
chmod -R u+w "$cache/src"
pkg="$cache/src/pkg/controllers/provisioning/scheduling"

cat >"$pkg/joiner_mix_benchmark_test.go" <<'GO'
//go:build test_performance

package scheduling_test

import (
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
)

func joinerMixPods(mix string, n int) []*corev1.Pod {
	switch mix {
	case "resources-only":
		return makeGenericPods(n)
	case "diverse":
		return makeDiversePods(n)
	case "zonal-spread":
		return makeTopologySpreadPods(n, corev1.LabelTopologyZone)
	case "hostname-spread":
		return makeTopologySpreadPods(n, corev1.LabelHostname)
	case "zonal-affinity":
		return makePodAffinityPods(n, corev1.LabelTopologyZone)
	case "hostname-anti-affinity":
		return makePodAntiAffinityPods(n, corev1.LabelHostname)
	}
	panic("unknown mix " + mix)
}

type joinerPod struct {
	Labels   map[string]string `json:"labels"`
	CPU      int64             `json:"cpuMilli"`
	Memory   int64             `json:"memoryBytes"`
	Kind     string            `json:"kind"`
	Key      string            `json:"topologyKey,omitempty"`
	Selector map[string]string `json:"selector,omitempty"`
}

func joinerDump(path string, pods []*corev1.Pod) {
	out := make([]joinerPod, 0, len(pods))
	for _, p := range pods {
		req := p.Spec.Containers[0].Resources.Requests
		jp := joinerPod{Labels: p.Labels, CPU: req.Cpu().MilliValue(), Memory: req.Memory().Value(), Kind: "plain"}
		if c := p.Spec.TopologySpreadConstraints; len(c) > 0 {
			jp.Kind, jp.Key, jp.Selector = "spread", c[0].TopologyKey, c[0].LabelSelector.MatchLabels
		}
		if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			t := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
			jp.Kind, jp.Key, jp.Selector = "affinity", t.TopologyKey, t.LabelSelector.MatchLabels
		}
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			t := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
			jp.Kind, jp.Key, jp.Selector = "anti-affinity", t.TopologyKey, t.LabelSelector.MatchLabels
		}
		out = append(out, jp)
	}
	data, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		panic(err)
	}
}

func joinerCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func BenchmarkJoinerMix(b *testing.B) {
	n, err := strconv.Atoi(os.Getenv("KBENCH_PODS"))
	if err != nil {
		b.Fatalf("KBENCH_PODS: %s", err)
	}
	pods := joinerMixPods(os.Getenv("KBENCH_MIX"), n)
	if path := os.Getenv("KBENCH_DUMP"); path != "" {
		joinerDump(path, pods)
	}
	runtime.GC()
	start := joinerCPUSeconds()
	benchmarkScheduler(b, pods)
	runtime.GC()
	mid := joinerCPUSeconds()
	if _, err := setupScheduler(ctx, pods, scheduling.NumConcurrentReconciles(5)); err != nil {
		b.Fatalf("setup: %s", err)
	}
	runtime.GC()
	end := joinerCPUSeconds()
	b.ReportMetric((mid-start)/float64(b.N), "setup+solve-cpu-s/op")
	b.ReportMetric(end-mid, "setup-cpu-s")
}
GO

tmp="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
log "building scheduling.test of karpenter $version"
start=$SECONDS
(cd "$pkg" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod -buildvcs=false" \
  go test -c -tags test_performance -o "$tmp/scheduling.test" .)
mv -f "$tmp/scheduling.test" "$bin"
echo "$want" >"$cache/.stamp"
log "built in $((SECONDS - start)) s: $bin"
