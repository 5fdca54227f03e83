#!/usr/bin/env bash
# Issue 29 item 5: does `latscope load --find-max` give the same answer three times?
# Against two Python servers written here (no lab: real servers): a worker pool of 4
# workers × 20 ms (200 req/s in theory, Little's law) and a CPU-bound handler (2 ms of
# hashing per request under the GIL: its capacity is the machine's). Each search is
# `--find-max 'p99<100ms' --step 3s --min-rate 50`, N times in a row; the table gives
# each answer, its bracket, and the spread (max − min) over the median.
#
#   bench/find-max-repeat.sh
#
# Env: LATSCOPE (target/release/latscope)  N (3)  OUTDIR (/tmp/bench-find-max/<timestamp>)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
N=${N:-3}
OUTDIR=${OUTDIR:-/tmp/bench-find-max/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"

cat >"$OUTDIR/server.py" <<'PY'
import hashlib, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
mode = sys.argv[1]
pool = threading.Semaphore(4)
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1
    def do_GET(self):
        if mode == "pool":
            with pool:
                time.sleep(0.020)
        else:
            x, t = b"page", time.process_time()
            while time.process_time() - t < 0.002:
                x = hashlib.sha256(x).digest()
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
echo "| server | run | answer req/s | bracket | steps |"
echo "|---|---|---|---|---|"
for mode in pool cpu; do
    python3 "$OUTDIR/server.py" "$mode" >"$OUTDIR/$mode.port" 2>"$OUTDIR/$mode.err" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$OUTDIR/$mode.port" ] && break; sleep 0.05; done
    port=$(head -1 "$OUTDIR/$mode.port")
    for run in $(seq "$N"); do
        "$LATSCOPE" load "http://127.0.0.1:$port/" --find-max 'p99<100ms' --step 3s \
            --min-rate 50 --json --no-save >"$OUTDIR/$mode-$run.json" 2>/dev/null || true
        python3 - "$OUTDIR/$mode-$run.json" "$mode" "$run" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["capacity"]
f = lambda x: "—" if x is None else f"{x:.0f}"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {f(c.get('level'))} | {f(c['bracket'][0])}..{f(c['bracket'][1])} | {len(d['steps'])} |")
PY
    done
done
python3 - "$OUTDIR" "$N" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
for mode in ("pool", "cpu"):
    levels = [json.load(open(f"{out}/{mode}-{r}.json"))["capacity"].get("level") for r in range(1, n + 1)]
    levels = [x for x in levels if x is not None]
    if not levels:
        print(f"\n{mode}: no answer")
        continue
    med = statistics.median(levels)
    print(f"\n{mode}: answers {', '.join(f'{x:.0f}' for x in levels)} req/s; spread {100 * (max(levels) - min(levels)) / med:.1f} % of the median")
PY
echo "outputs: $OUTDIR" >&2
