# Sourced first, with the script's arguments, by build.sh and gotool.sh (so by
# build-helm.sh and build-karpenter.sh): what every build script of the test stack starts
# with. The sourcing script sets:
#   log_name  the prefix of its log lines (kube-stack, helm, karpenter)
#   go_min    the Go version to name when go is missing
# This file then reads versions.env, sets cache_root and bin_dir, answers --print-bin-dir
# (and refuses any other argument), defines log, checks that go is on PATH and exports the
# build environment (CGO off; -mod=mod so the wrapper modules resolve through the proxy and
# may update go.sum in place, keeping whatever GOFLAGS the machine already sets).

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}"
bin_dir="$cache_root/$KUBE_VERSION/bin"

if [[ "${1-}" == "--print-bin-dir" ]]; then
  echo "$bin_dir"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: $(basename "$0") [--print-bin-dir]" >&2
  exit 2
fi

log() { echo "$log_name: $*" >&2; }
command -v go >/dev/null || { log "go is not on PATH (Go >= $go_min is needed)"; exit 1; }

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod -buildvcs=false"
