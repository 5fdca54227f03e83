#!/usr/bin/env bash
# Runs `latscope load` for ../shared/bench/peers-rps.sh and prints the harness's
#   BENCH rps=<x> p50_ms=<x> p99_ms=<x> requests=<n>
# line from latscope's JSON (the wrapper's own CPU, a few ms of bash and python, is
# counted with latscope's by /usr/bin/time -v; it is negligible next to a 10 s run).
#   latscope-bench-line.sh LATSCOPE CONNS DURATION_S URL
set -euo pipefail
latscope=$1 conns=$2 duration=$3 url=$4
"$latscope" load "$url" -c "$conns" -d "${duration}s" --threads 1 --no-save --json |
  python3 -c '
import json, sys
d = json.load(sys.stdin)
lat = d["latency_ms"]
print("BENCH rps=%.1f p50_ms=%.3f p99_ms=%.3f requests=%d" % (d["rps"], lat["p50"], lat["p99"], d["requests"]))
'
