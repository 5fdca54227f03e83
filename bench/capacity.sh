#!/usr/bin/env bash
# The overhead of `latscope load --find-max`: what latscope's own CPU costs per step
# of a capacity search, and what the search adds beyond its steps' worker threads.
#
#   bench/capacity.sh
#
# Target: `latscope lab --capacity $CAPACITY` (a queue served at exactly that rate) on
# 127.0.0.1:$PORT, in its own process. One open-model search at 'p99<100ms' with
# --step $STEP runs under /usr/bin/time -v; per step the JSON gives the worker
# threads' CPU (client_cpu_pct, percent of one core over the step's run); the whole
# process's CPU (user + sys) minus the steps' worker CPU is the search's own cost
# (settling, judging, joining, storing, the controller thread).
#
# Env: LATSCOPE (target/release/latscope)  CAPACITY (2000)  PORT (18282)  STEP (5s)
#      OUTDIR (/tmp/bench-capacity/<timestamp>)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
CAPACITY=${CAPACITY:-2000}
PORT=${PORT:-18282}
STEP=${STEP:-5s}
OUTDIR=${OUTDIR:-/tmp/bench-capacity/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"

"$LATSCOPE" lab --listen "127.0.0.1:$PORT" --capacity "$CAPACITY" >"$OUTDIR/lab.out" 2>&1 &
LAB=$!
trap 'kill $LAB 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    grep -q http "$OUTDIR/lab.out" 2>/dev/null && break
    sleep 0.05
done

/usr/bin/time -v "$LATSCOPE" load "http://127.0.0.1:$PORT/" --find-max 'p99<100ms' \
    --step "$STEP" --min-rate "$((CAPACITY / 8))" --json --no-save \
    >"$OUTDIR/search.json" 2>"$OUTDIR/time.txt" || true

python3 - "$OUTDIR" <<'EOF'
import json, re, sys
out = sys.argv[1]
d = json.load(open(f"{out}/search.json"))
t = open(f"{out}/time.txt").read()
cpu = sum(float(re.search(p + r": ([\d.]+)", t).group(1))
          for p in ("User time \\(seconds\\)", "System time \\(seconds\\)"))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", t).group(1)
print(f"answer: {d['capacity']['answer']}")
print("| step | level req/s | achieved req/s | result | worker CPU % of a core | worker CPU s | CPU µs / request sent |")
print("|---|---|---|---|---|---|---|")
steps_cpu = 0.0
for i, s in enumerate(d["steps"]):
    secs = s["settle_s"] + s["duration_s"]
    cpu_s = s["client_cpu_pct"] / 100 * s["elapsed_s"]
    steps_cpu += cpu_s
    sent = s["level"] * secs
    print(f"| {i+1} | {s['level']:.0f} | {s['achieved']:.0f} | {'pass' if s['pass'] else 'FAIL'} "
          f"| {s['client_cpu_pct']:.1f} | {cpu_s:.3f} | {cpu_s / max(sent, 1) * 1e6:.1f} |")
print(f"\nprocess CPU {cpu:.2f} s (user+sys), steps' worker threads {steps_cpu:.2f} s, "
      f"the search's own {cpu - steps_cpu:.2f} s over {len(d['steps'])} steps "
      f"({(cpu - steps_cpu) / len(d['steps']) * 1e3:.0f} ms a step); wall {wall}; peak RSS {rss / 1024:.1f} MiB")
EOF
echo "raw outputs: $OUTDIR"
