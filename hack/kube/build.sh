#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kubectl and etcd from this
# tools module into DIR (default .testenv/bin of the repository), once: a
# stamp file records the Kubernetes version, the hash of go.sum and the Go
# version, and a later run with the same stamp and every binary present does
# nothing. Everything comes from the Go module proxy; no system package is
# needed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-$root/.testenv/bin}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

version="$(awk '$1 == "k8s.io/kubernetes" { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$here/go.mod")"
if [ -z "$version" ]; then
  echo "build.sh: no k8s.io/kubernetes requirement in $here/go.mod" >&2
  exit 1
fi
stamp="$version $(sha256sum "$here/go.sum" | cut -d' ' -f1) $(go env GOVERSION)"
bins=(kube-apiserver kube-controller-manager kubectl etcd)
current=1
for b in "${bins[@]}"; do [ -x "$dir/$b" ] || current=0; done
if [ "$current" = 1 ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "testenv: ${bins[*]} ($version) already in $dir"
  exit 0
fi

minor="${version#v1.}"; minor="${minor%%.*}"
# The proxy's checksum database has no entries for some staging modules
# (and the proxy serves endpointslice, kube-controller-manager and
# kube-scheduler only up to v0.31.13, which go.mod's replace pins); go.sum
# pins every hash, so skipping the database for them is safe.
export GONOSUMDB="k8s.io/cluster-bootstrap,k8s.io/dynamic-resource-allocation,k8s.io/kube-aggregator,k8s.io/pod-security-admission,k8s.io/endpointslice,k8s.io/kube-controller-manager,k8s.io/kube-scheduler${GONOSUMDB:+,$GONOSUMDB}"
export GOFLAGS="-mod=readonly"
export CGO_ENABLED=0
ldflags="-s -w"
for kv in "gitVersion=$version" gitMajor=1 "gitMinor=$minor" gitTreeState=clean; do
  ldflags="$ldflags -X k8s.io/component-base/version.$kv"
done
echo "testenv: building ${bins[*]} ($version) into $dir (minutes when cold)"
rm -f "$dir/.stamp"
cd "$here"
# Built into a temporary directory and moved into place, so that an
# interrupted build never leaves a half-written binary that looks current.
tmp="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
# etcd's main package is its server module's root, which go build would name v3.
go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
for b in "${bins[@]}"; do mv -f "$tmp/$b" "$dir/$b"; done
"$dir/kube-apiserver" --version
"$dir/kube-controller-manager" --version
"$dir/kubectl" version --client
"$dir/etcd" --version | head -1
echo "$stamp" > "$dir/.stamp"
