#!/usr/bin/env bash
# Build the real Cluster Autoscaler with its kwok cloud provider (`go build -tags kwok`) into
# the test stack's cache directory:
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/cluster-autoscaler
#
# The Go module proxy does not serve k8s.io/autoscaler/cluster-autoscaler, so its source comes
# from the upstream archive kept beside the repository (shared/upstream, see its README:
# the cluster-autoscaler/ folder of kubernetes/autoscaler at tag cluster-autoscaler-1.36.1,
# trimmed to the kwok provider). The archive's sha256 is checked; its dependencies come
# through the module proxy. The source is unpacked into a temporary directory of the cache
# and removed after the build: never into the repository. A stamp (hash of the archive, the
# link flags and the Go version) makes a warm run cost nothing.
#
# Usage: build-autoscaler.sh [--print-bin-dir]
# Environment: JOINER_KUBE_STACK_CACHE; JOINER_CA_ARCHIVE (default: ../shared/upstream/
# cluster-autoscaler-1.36.1.tgz beside the repository); GOMODCACHE/GOCACHE/GOPROXY as for go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log_name=cluster-autoscaler
go_min=1.26.0
# shellcheck source=preamble.sh
source "$here/preamble.sh" "$@"

ca_version=1.36.1
ca_sha256=6b81aaafbc394f0b74d797e959d0a1d359a0a8e9f92e1958af7715aeb725dc17
archive="${JOINER_CA_ARCHIVE:-$here/../../../shared/upstream/cluster-autoscaler-$ca_version.tgz}"

# The stamp names the archive by its expected sha256, so a cached build needs no archive.
ldflags="-s -w"
want="$(echo "$ca_sha256" "$ldflags" kwok "$(go env GOVERSION)" | sha256sum | cut -d' ' -f1)"
mkdir -p "$bin_dir"
if [[ -x "$bin_dir/cluster-autoscaler" && "$(cat "$bin_dir/.cluster-autoscaler.stamp" 2>/dev/null)" == "$want" ]]; then
  log "cluster-autoscaler $ca_version: up to date"
  exit 0
fi
[[ -f "$archive" ]] || {
  log "no Cluster Autoscaler source archive at $archive (set JOINER_CA_ARCHIVE to the archive's path)"
  exit 1
}
got="$(sha256sum "$archive" | cut -d' ' -f1)"
[[ "$got" == "$ca_sha256" ]] || { log "$archive: sha256 $got, expected $ca_sha256"; exit 1; }
work="$(mktemp -d "$bin_dir/.build-cluster-autoscaler.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
log "building cluster-autoscaler $ca_version (kwok provider) from $archive"
start=$SECONDS
tar -xzf "$archive" -C "$work"
(cd "$work/cluster-autoscaler" &&
  go build -tags kwok -trimpath -ldflags "$ldflags" -o "$work/cluster-autoscaler.bin" .)
mv -f "$work/cluster-autoscaler.bin" "$bin_dir/cluster-autoscaler"
echo "$want" >"$bin_dir/.cluster-autoscaler.stamp"
log "built cluster-autoscaler in $((SECONDS - start)) s; binary in $bin_dir"
