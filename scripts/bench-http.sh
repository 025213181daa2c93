#!/usr/bin/env bash
# bench-http: GET /v1/resolve on registryd against a bare net/http handler
# that writes a constant answer of the same size, both under wrk -t2 -c32
# in the same run, and the ratio of their requests/s (target: >= 0.80);
# beside them, the catalog's HTML template page (GET /t/REF) in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk not installed (apt-get install wrk)"; exit 1; }
DURATION=${DURATION:-10s}
REF=${REF:-redis:v1.0}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/barehttp" ./scripts/barehttp
bin/registryd --addr 127.0.0.1:18080 --registry-dir github.com/acme/templates=./registry-example \
  --cache-dir "$tmp/cache" 2>"$tmp/registryd.log" &
pids+=($!)
for _ in $(seq 100); do curl -fs http://127.0.0.1:18080/readyz >/dev/null 2>&1 && break; sleep 0.1; done
url="http://127.0.0.1:18080/v1/resolve?ref=$REF"
size=$(curl -fs "$url" | wc -c)
echo "answer: $size bytes from $url"
"$tmp/barehttp" --addr 127.0.0.1:18081 --size "$size" &
pids+=($!)
for _ in $(seq 100); do curl -fs http://127.0.0.1:18081/ >/dev/null 2>&1 && break; sleep 0.1; done

rps() { wrk -t2 -c32 -d"$DURATION" "$1" | awk '/Requests\/sec/{print $2}'; }
# Warm both, then alternate so drift on the machine hits both alike.
wrk -t2 -c32 -d2s "$url" >/dev/null; wrk -t2 -c32 -d2s http://127.0.0.1:18081/ >/dev/null
b1=$(rps http://127.0.0.1:18081/); r1=$(rps "$url")
r2=$(rps "$url"); b2=$(rps http://127.0.0.1:18081/)
page="http://127.0.0.1:18080/t/$REF"
curl -fs "$page" >/dev/null
wrk -t2 -c32 -d2s "$page" >/dev/null
t1=$(rps "$page")
awk -v b1="$b1" -v b2="$b2" -v r1="$r1" -v r2="$r2" -v t1="$t1" 'BEGIN {
  b = (b1 + b2) / 2; r = (r1 + r2) / 2
  printf "bare net/http:      %.0f req/s (%s, %s)\n", b, b1, b2
  printf "registryd resolve:  %.0f req/s (%s, %s)\n", r, r1, r2
  printf "ratio:              %.2f (target >= 0.80)\n", r / b
  printf "catalog /t/ page:   %.0f req/s (HTML template page, same run)\n", t1
}'
