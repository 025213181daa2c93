#!/usr/bin/env bash
# Builds kube-apiserver and kubectl from this tools module into DIR
# (default .testenv/bin of the repository), once: a stamp file records the
# Kubernetes version and the hash of go.sum, and a later run with the same
# stamp and both binaries present does nothing.
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
if [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kubectl" ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "testenv: kube-apiserver and kubectl $version already in $dir"
  exit 0
fi

minor="${version#v1.}"; minor="${minor%%.*}"
# The proxy's checksum database has no entries for these staging modules at
# v0.31.14; go.sum pins their hashes, so skipping the database is safe.
export GONOSUMDB="k8s.io/cluster-bootstrap,k8s.io/dynamic-resource-allocation,k8s.io/kube-aggregator,k8s.io/pod-security-admission${GONOSUMDB:+,$GONOSUMDB}"
export GOFLAGS="-mod=readonly"
export CGO_ENABLED=0
ldflags="-s -w"
for kv in "gitVersion=$version" gitMajor=1 "gitMinor=$minor" gitTreeState=clean; do
  ldflags="$ldflags -X k8s.io/component-base/version.$kv"
done
echo "testenv: building kube-apiserver and kubectl $version into $dir (about 5 minutes cold)"
rm -f "$dir/.stamp"
cd "$here"
go build -trimpath -ldflags "$ldflags" -o "$dir/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
"$dir/kube-apiserver" --version
"$dir/kubectl" version --client
echo "$stamp" > "$dir/.stamp"
