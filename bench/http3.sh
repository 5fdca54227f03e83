#!/usr/bin/env bash
# HTTP/3 vs HTTP/2 over TLS in latscope load: requests per CPU-second of the load
# tool, both against the same `latscope lab --tls --http2 --http3`, in one run.
#
#   bench/http3.sh
#
# The lab (its own process, pinned to CPU $LAB_CPU) serves h2 over TLS on TCP and h3
# on the same port over UDP, with one certificate. latscope load (one worker thread,
# pinned to CPU $TOOL_CPU) runs `--http3` then `--http2`, $CONNS connections x
# $STREAMS streams, $DURATION s each on $ROUTE, alternated for $ROUNDS rounds (the
# first protocol swaps every round). CPU seconds (user + sys) and peak RSS come from
# /usr/bin/time -v; req/cpu_s = requests / CPU seconds of the whole load process.
# Prints a Markdown table and the h3/h2 ratio per round (and the median).
#
# Env: LATSCOPE (target/release/latscope)  PORT (18383)  LAB_CPU (0)  TOOL_CPU (1)
#      CONNS (10)  STREAMS (10)  DURATION (10)  ROUNDS (3)  ROUTE (/bytes/1k)
#      OUTDIR (/tmp/bench-http3/<timestamp>)
# Needs: python3, curl, taskset, /usr/bin/time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
PORT=${PORT:-18383}
LAB_CPU=${LAB_CPU:-0}
TOOL_CPU=${TOOL_CPU:-1}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
ROUTE=${ROUTE:-/bytes/1k}
OUTDIR=${OUTDIR:-/tmp/bench-http3/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"
[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }

CERT=$OUTDIR/lab.pem
taskset -c "$LAB_CPU" "$LATSCOPE" lab --listen "127.0.0.1:$PORT" --tls --http2 --http3 \
  --cert-out "$CERT" >"$OUTDIR/lab.out" 2>"$OUTDIR/lab.err" &
LAB=$!
trap 'kill $LAB 2>/dev/null || true' EXIT
URL=https://127.0.0.1:$PORT$ROUTE
for _ in $(seq 100); do
  curl -fsS --cacert "$CERT" -o /dev/null "$URL" 2>/dev/null && break
  sleep 0.1
done
curl -fsS --cacert "$CERT" -o /dev/null "$URL"

# run NAME FLAG: one timed load run; output in $OUTDIR/NAME.{json,err,time}
run() {
  /usr/bin/time -v -o "$OUTDIR/$1.time" timeout -k 5 $((DURATION * 4 + 60)) \
    taskset -c "$TOOL_CPU" "$LATSCOPE" load "$URL" "$2" --cacert "$CERT" -c "$CONNS" \
    --streams "$STREAMS" -d "${DURATION}s" --threads 1 --json --no-save \
    >"$OUTDIR/$1.json" 2>"$OUTDIR/$1.err" </dev/null || true
}

# parse NAME -> "rps p50_ms p99_ms requests errors cpu_s rss_mb req_per_cpu_s"
parse() {
  python3 - "$OUTDIR" "$1" <<'PY'
import json, re, sys
d, name = sys.argv[1:3]
j = json.load(open(f"{d}/{name}.json"))
tv = open(f"{d}/{name}.time").read()
cpu = float(re.search(r"User time \(seconds\): ([0-9.]+)", tv).group(1)) + \
      float(re.search(r"System time \(seconds\): ([0-9.]+)", tv).group(1))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv).group(1)) / 1024
n = j["requests"]
errors = n - j["ok"]
print(f"{j['rps']:.0f} {j['latency_ms']['p50']:.3f} {j['latency_ms']['p99']:.3f} {n} {errors} "
      f"{cpu:.2f} {rss:.1f} {n / cpu if cpu else 0:.0f}")
PY
}

{
  echo "# bench/http3.sh  $(date -Is)  $(uname -r)  cpus=$(nproc)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# lab on CPU $LAB_CPU, latscope load on CPU $TOOL_CPU (1 thread), $URL, $CONNS connections x $STREAMS streams, ${DURATION}s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| protocol | round | req/s | p50 ms | p99 ms | requests | errors | CPU s | RSS MB | req/cpu_s |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} | tee "$OUTDIR/summary.md"
ratios=()
for r in $(seq 1 "$ROUNDS"); do
  order=(h3 h2)
  ((r % 2 == 0)) && order=(h2 h3)
  declare -A per=()
  for p in "${order[@]}"; do
    flag=--http3
    [[ $p == h2 ]] && flag=--http2
    run "$p-$r" "$flag"
    read -r rps p50 p99 n errors cpu rss pcs < <(parse "$p-$r")
    per[$p]=$pcs
    echo "| $p ($flag) | $r | $rps | $p50 | $p99 | $n | $errors | $cpu | $rss | $pcs |" | tee -a "$OUTDIR/summary.md"
    sleep 1
  done
  ratios+=("$(python3 -c "print(f'{${per[h3]} / ${per[h2]}:.2f}')")")
done
echo | tee -a "$OUTDIR/summary.md"
echo "h3/h2 req/cpu_s per round: ${ratios[*]} (median $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n "$(( (${#ratios[@]} + 1) / 2 ))p"))" | tee -a "$OUTDIR/summary.md"
echo "raw outputs: $OUTDIR"
