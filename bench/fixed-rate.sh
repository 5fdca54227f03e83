#!/usr/bin/env bash
# What a request costs at a fixed rate (issue 36 item 2), which batching cannot
# game: latscope's open model (--rate) against oha's -q (with --latency-correction,
# so both count latency from the intended send time) and k6's constant-arrival-rate,
# in one run, alternating tools over $ROUNDS rounds per rate.
#
#   bench/fixed-rate.sh            RATES="5000 20000 50000" by default
#
# Target: a private nginx (PEERS_DIR/nginx-target.sh) on 127.0.0.1:$NGX_PORT serving
# /1k over keep-alive, pinned to CPU $NGX_CPU; every tool pinned to CPU $TOOL_CPU with
# one worker thread (k6: GOMAXPROCS=1), a pool of $CONNS connections (VUs for k6).
# Per run: the achieved rate (completed / duration), p50/p99 latency, CPU seconds
# (user + system, /usr/bin/time) and CPU µs per completed request. The headline is
# latscope's CPU per request over the best peer's that reached the same rate (within
# 2 % of the target); a peer that fell short of the rate is shown, not compared.
#
# Env: PEERS_DIR (/work/shared/bench)  LATSCOPE (target/release/latscope)
#      NGX_PORT (18181)  NGX_DIR (/tmp/bench-nginx-latscope)  NGX_CPU (0)  TOOL_CPU (1)
#      RATES ("5000 20000 50000")  CONNS (200)  DURATION (10)  ROUNDS (3)
#      OUTDIR (/tmp/bench-rate/<timestamp>)
# Needs: nginx, oha, k6 (PEERS_DIR/peers-install.sh installs them), python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/work/shared/bench}
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
export NGX_PORT=${NGX_PORT:-18181}
export NGX_DIR=${NGX_DIR:-/tmp/bench-nginx-latscope}
export NGX_CPU=${NGX_CPU:-0}
export NGX_WORKER_CONNECTIONS=${NGX_WORKER_CONNECTIONS:-12000}
TOOL_CPU=${TOOL_CPU:-1}
RATES=${RATES:-5000 20000 50000}
CONNS=${CONNS:-200}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
OUTDIR=${OUTDIR:-/tmp/bench-rate/$(date +%Y%m%d-%H%M%S)}
URL=http://127.0.0.1:$NGX_PORT/1k
export PATH="$HOME/.cargo/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
mkdir -p "$OUTDIR"

[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }
for t in oha k6; do
  command -v "$t" >/dev/null || { echo "$t missing: run $PEERS_DIR/peers-install.sh" >&2; exit 2; }
done
ulimit -n "$(ulimit -Hn)"

STARTED_NGINX=0
cleanup() { [[ $STARTED_NGINX == 1 ]] && "$PEERS_DIR/nginx-target.sh" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
if ! "$PEERS_DIR/nginx-target.sh" status >/dev/null 2>&1; then
  "$PEERS_DIR/nginx-target.sh" start >/dev/null
  STARTED_NGINX=1
fi
for p in $("$PEERS_DIR/nginx-target.sh" pids); do taskset -pc "$NGX_CPU" "$p" >/dev/null; done
curl -fsS -o /dev/null "$URL"

# time_run NAME CMD...: runs CMD pinned and timed; output in $OUTDIR/NAME.{out,err,time}
time_run() {
  local name=$1; shift
  /usr/bin/time -v -o "$OUTDIR/$name.time" timeout -k 5 $((DURATION * 4 + 60)) \
    taskset -c "$TOOL_CPU" "$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err" </dev/null || true
}

# parse NAME TOOL -> "achieved_rps p50_ms p99_ms completed cpu_s us_per_req"
parse() {
  python3 - "$OUTDIR" "$1" "$2" "$DURATION" <<'PY'
import json, re, sys
d, name, tool, dur = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
tv = open(f"{d}/{name}.time", errors="replace").read()
cpu = float(re.search(r"User time \(seconds\): ([0-9.]+)", tv).group(1)) + \
      float(re.search(r"System time \(seconds\): ([0-9.]+)", tv).group(1))
n = p50 = p99 = float("nan")
secs = dur
try:
    if tool == "oha":
        j = json.load(open(f"{d}/{name}.out"))
        n = sum(j["statusCodeDistribution"].values())
        secs = j["summary"]["total"]
        p50 = j["latencyPercentiles"]["p50"] * 1e3
        p99 = j["latencyPercentiles"]["p99"] * 1e3
    elif tool == "k6":
        j = json.load(open(f"{d}/{name}.summary.json"))
        m = j["metrics"]
        n = m["http_reqs"]["values"]["count"]
        secs = n / m["http_reqs"]["values"]["rate"] if m["http_reqs"]["values"]["rate"] else dur
        p50 = m["http_req_duration"]["values"]["med"]
        p99 = m["http_req_duration"]["values"]["p(99)"]
    else:
        j = json.load(open(f"{d}/{name}.out"))
        n = j["requests"]
        secs = j["duration_s"]
        p50, p99 = j["latency_ms"]["p50"], j["latency_ms"]["p99"]
except Exception as e:
    print(f"nan nan nan 0 {cpu:.2f} nan  # {name}: {e}")
    sys.exit(0)
print(f"{n / secs:.0f} {p50:.3f} {p99:.3f} {n} {cpu:.2f} {1e6 * cpu / n if n else float('nan'):.2f}")
PY
}

SUMMARY=$OUTDIR/summary.txt
{
  echo "# bench/fixed-rate.sh  $(date -Is)  $(uname -r)  cpus=$(nproc)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# nginx 1 worker on CPU $NGX_CPU, tools on CPU $TOOL_CPU (1 thread), $URL, pool $CONNS, ${DURATION}s"
  echo "# $("$LATSCOPE" --version)  $(oha --version)  $(k6 version 2>/dev/null | head -1)"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-9s %6s %5s %9s %8s %8s %9s %6s %9s\n' tool rate round achieved p50_ms p99_ms completed cpu_s us/req
} | tee "$SUMMARY"

for rate in $RATES; do
  for r in $(seq 1 "$ROUNDS"); do
    for t in latscope oha k6; do
      name="$t-$rate-$r"
      case $t in
        latscope) time_run "$name" "$LATSCOPE" load "$URL" --rate "$rate" -c "$CONNS" -d "${DURATION}s" \
                    --threads 1 --engine epoll --json --no-save ;;
        oha) time_run "$name" oha --no-tui --output-format json --worker-threads 1 -z "${DURATION}s" \
               -c "$CONNS" -q "$rate" --latency-correction "$URL" ;;
        k6) time_run "$name" env GOMAXPROCS=1 k6 run --no-usage-report -q -e BENCH_URL="$URL" \
              -e BENCH_RATE="$rate" -e BENCH_VUS="$CONNS" -e BENCH_DURATION="${DURATION}s" \
              -e BENCH_SUMMARY="$OUTDIR/$name.summary.json" "$HERE/k6-rate.js" ;;
      esac
      read -r ach p50 p99 n cpu per < <(parse "$name" "$t")
      printf '%-9s %6s %5s %9s %8s %8s %9s %6s %9s\n' "$t" "$rate" "$r" "$ach" "$p50" "$p99" "$n" "$cpu" "$per" | tee -a "$SUMMARY"
      sleep 1
    done
  done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$SUMMARY"

python3 - "$SUMMARY" <<'PY' | tee -a "$SUMMARY"
import math, statistics, sys
rows = {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 9 or f[0] not in ("latscope", "oha", "k6"):
        continue
    try:
        rows.setdefault((f[0], int(f[1])), []).append(
            dict(round=int(f[2]), ach=float(f[3]), p50=float(f[4]), p99=float(f[5]), cpu=float(f[7]), per=float(f[8])))
    except ValueError:
        pass
for rate in sorted({r for _, r in rows}):
    med = {}
    for t in ("latscope", "oha", "k6"):
        rs = rows.get((t, rate), [])
        if not rs:
            continue
        m = {k: statistics.median(x[k] for x in rs) for k in ("ach", "p50", "p99", "per")}
        m["reached"] = m["ach"] >= 0.98 * rate
        med[t] = m
        per_round = ", ".join("%.2f" % x["per"] for x in rs)
        print(f"rate {rate}: {t:8s} achieved {m['ach']:.0f}/s ({'reached' if m['reached'] else 'SHORT'}), "
              f"{m['per']:.2f} µs CPU/req (per round {per_round}), "
              f"p50 {m['p50']:.2f} ms, p99 {m['p99']:.2f} ms")
    l = med.get("latscope")
    peers = [(t, m) for t, m in med.items() if t != "latscope" and m["reached"]]
    if l and peers:
        best_t, best = min(peers, key=lambda x: x[1]["per"])
        print(f"rate {rate}: latscope CPU per request / best peer that reached the rate ({best_t}): "
              f"{l['per'] / best['per']:.2f}  (goal ≤ 0.80); p99 {l['p99']:.2f} vs {best['p99']:.2f} ms"
              + ("" if l["reached"] else "  — latscope fell short of the rate"))
    elif l:
        print(f"rate {rate}: no peer reached the rate; latscope {'reached' if l['reached'] else 'fell short of'} it")
PY
echo "raw outputs: $OUTDIR"
