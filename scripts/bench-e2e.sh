#!/usr/bin/env bash
# bench-e2e: whole-process numbers for registryd and dm on a synthetic
# registry of 10,000 template versions:
#   - registryd resident memory with the index loaded (target <= 100 MB);
#   - how long after a cold start every version's example is tested (in
#     the background: readiness does not wait for it);
#   - restart to ready from the persisted snapshot with no network
#     (target <= 200 ms): the restarted registryd tracks GitHub at an
#     address where nothing listens, so it can only serve the snapshot;
#   - `dm resolve t:v1.2` against the running registryd (target <= 20 ms).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
ADDR=127.0.0.1:18090
now_ms() { date +%s%3N; }
wait_ready() { for _ in $(seq 2000); do curl -fs "http://$ADDR/readyz" >/dev/null 2>&1 && return 0; sleep 0.005; done; return 1; }

go run ./scripts/genregistry --dir "$tmp/reg"
echo "registry: $(find "$tmp/reg" -type f | wc -l) files"

start=$(now_ms)
bin/registryd --addr $ADDR --registry-dir "github.com/bench/reg=$tmp/reg" --cache-dir "$tmp/cache" 2>"$tmp/first.log" &
pid=$!
wait_ready
ready=$(( $(now_ms) - start ))
curl -fs "http://$ADDR/v1/resolve?ref=t7:v1.1" >/dev/null
rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
echo "registryd RSS with 10,000 versions: $((rss / 1024)) MB (target <= 100 MB)"
# Examples are tested in the background after the index: readiness does
# not wait for them.
tested() { curl -fs "http://$ADDR/metrics" | awk '/^registryd_example_tests\{status="(ok|error)"\}/{n+=$2} /^registryd_example_tests\{status="pending"\}/{p=$2} END{exit !(n>=10000 && p==0)}'; }
for _ in $(seq 1200); do tested && break; sleep 0.1; done
done_ms=$(( $(now_ms) - start ))
rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
echo "cold start: ready in ${ready} ms; examples of 10,000 versions tested ${done_ms} ms after start; RSS then $((rss / 1024)) MB"
kill $pid; wait $pid 2>/dev/null || true; pid=

best=999999
for i in 1 2 3 4 5; do
  start=$(now_ms)
  bin/registryd --addr $ADDR --github bench/reg --github-api http://127.0.0.1:9/ --refresh 1h \
    --cache-dir "$tmp/cache" 2>"$tmp/restart.log" &
  pid=$!
  wait_ready
  t=$(( $(now_ms) - start ))
  [ "$t" -lt "$best" ] && best=$t
  if [ "$i" = 5 ]; then
    curl -fs "http://$ADDR/v1/resolve?ref=t7:v1.1" | head -c 200; echo
  else
    kill $pid; wait $pid 2>/dev/null || true; pid=
  fi
done
echo "restart to ready from snapshot, no network: best of 5 ${best} ms (target <= 200 ms)"

export DM_SERVER=http://$ADDR
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 5 --runs 50 "bin/dm --registry bench/reg resolve t7:v1.1" 2>&1 | grep -E "Time|Range"
else
  start=$(now_ms); for _ in $(seq 20); do bin/dm --registry bench/reg resolve t7:v1.1 >/dev/null; done
  echo "dm resolve: $(( ($(now_ms) - start) / 20 )) ms per run (target <= 20 ms)"
fi
