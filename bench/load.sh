#!/usr/bin/env bash
# latscope load side by side with its peers, in one run, on this machine.
#
#   bench/load.sh [rps] [open] [mem] [h2]      default: all four sections
#
# Target: a private nginx (PEERS_DIR/nginx-target.sh) on 127.0.0.1:$NGX_PORT serving
# /1k over keep-alive, pinned to CPU $NGX_CPU; every tool pinned to CPU $TOOL_CPU with
# one worker thread; CPU seconds and peak RSS from /usr/bin/time -v.
#   rps   closed model, $CONNS connections, $DURATION s, HTTP/1.1: wrk, h2load --h1,
#         hey and oha (if installed) and latscope (--engine epoll, then io_uring: the
#         row `latscope`), alternated $ROUNDS times; RPS_TOOLS picks a subset. The headline is
#         requests per tool CPU-second (nginx on one core is the bottleneck, so rps ties).
#   open  latscope --rate $OPEN_RATE (nginx sustains it): achieved rate vs target; then
#         --rate $OVER_RATE (more than one core can send): dropped / latency say so.
#   mem   latscope with 5,000 keep-alive connections flat out (10 s), and RSS after
#         10 s vs 60 s at 50 connections (memory must not grow with requests).
#   h2    h2load -m vs latscope --http2 --streams against `latscope lab --http2` (h2c).
# Raw outputs go to $OUTDIR; a summary is printed at the end.
#
# Env: PEERS_DIR (/work/shared/bench)  LATSCOPE (target/release/latscope)
#      NGX_PORT (18181)  NGX_DIR (/tmp/bench-nginx-latscope)  NGX_CPU (0)  TOOL_CPU (1)
#      CONNS (50)  DURATION (10)  ROUNDS (3)  OPEN_RATE (20000)  OVER_RATE (150000)
#      OUTDIR (/tmp/bench-load/<timestamp>)
# Needs: wrk, h2load, nginx (PEERS_DIR/peers-install.sh installs them), python3.
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
CONNS=${CONNS:-50}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
OPEN_RATE=${OPEN_RATE:-20000}
OVER_RATE=${OVER_RATE:-150000}
OUTDIR=${OUTDIR:-/tmp/bench-load/$(date +%Y%m%d-%H%M%S)}
URL=http://127.0.0.1:$NGX_PORT/1k
export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p "$OUTDIR"
SECTIONS=("$@")
((${#SECTIONS[@]})) || SECTIONS=(rps open mem h2)
want() { [[ " ${SECTIONS[*]} " == *" $1 "* ]]; }

[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)"

STARTED_NGINX=0
LAB_PID=
cleanup() {
  [[ -n $LAB_PID ]] && kill "$LAB_PID" 2>/dev/null || true
  [[ $STARTED_NGINX == 1 ]] && "$PEERS_DIR/nginx-target.sh" stop >/dev/null 2>&1 || true
}
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
  /usr/bin/time -v -o "$OUTDIR/$name.time" timeout -k 5 $((DURATION * 6 + 60)) \
    taskset -c "$TOOL_CPU" "$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err" </dev/null || true
}

# parse NAME TOOL -> "rps p50_ms p99_ms requests cpu_s rss_mb req_per_cpu_s"
parse() {
  python3 - "$OUTDIR" "$1" "$2" <<'PY'
import json, re, sys
d, name, tool = sys.argv[1:4]
out = open(f"{d}/{name}.out", errors="replace").read()
tv = open(f"{d}/{name}.time", errors="replace").read()
unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}
def dur(t):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", t.strip())
    return float(m.group(1)) * unit[m.group(2)] if m else float("nan")
rps = p50 = p99 = n = float("nan")
if tool == "wrk":
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    p50 = dur(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = dur(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    n = int(re.search(r"(\d+) requests in", out).group(1))
elif tool == "h2load":
    n = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
    rps = float(re.search(r"finished in [0-9.]+\w+, ([0-9.]+) req/s", out).group(1))
elif tool == "hey":
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    p50 = float(re.search(r"50%+ in ([0-9.]+) secs", out).group(1)) * 1e3
    p99 = float(re.search(r"99%+ in ([0-9.]+) secs", out).group(1)) * 1e3
    n = sum(int(x) for x in re.findall(r"\[\d+\]\s+(\d+) responses", out))
elif tool == "oha":
    j = json.loads(out)
    rps = j["summary"]["requestsPerSec"]
    p50 = j["latencyPercentiles"]["p50"] * 1e3
    p99 = j["latencyPercentiles"]["p99"] * 1e3
    n = sum(j["statusCodeDistribution"].values())
else:
    j = json.loads(out)
    rps, n = j["rps"], j["requests"]
    p50, p99 = j["latency_ms"]["p50"], j["latency_ms"]["p99"]
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv).group(1)) / 1024
cpu = float(re.search(r"User time \(seconds\): ([0-9.]+)", tv).group(1)) + \
      float(re.search(r"System time \(seconds\): ([0-9.]+)", tv).group(1))
print(f"{rps:.0f} {p50:.3f} {p99:.3f} {n} {cpu:.2f} {rss:.1f} {n / cpu if cpu else 0:.0f}")
PY
}

SUMMARY=$OUTDIR/summary.txt
{
  echo "# bench/load.sh  $(date -Is)  $(uname -r)  cpus=$(nproc)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# nginx 1 worker on CPU $NGX_CPU, tools on CPU $TOOL_CPU, $URL; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$SUMMARY"

if want rps; then
  echo "## rps: closed model, $CONNS connections, ${DURATION}s, 1 thread" | tee -a "$SUMMARY"
  printf '%-14s %5s %8s %8s %8s %9s %7s %7s %10s\n' tool round rps p50_ms p99_ms requests cpu_s rss_mb req/cpu_s | tee -a "$SUMMARY"
  tools=(wrk h2load)
  command -v hey >/dev/null && tools+=(hey)
  command -v oha >/dev/null && tools+=(oha)
  tools+=(latscope-epoll latscope)
  # RPS_TOOLS="wrk latscope-epoll latscope": only these (latscope is --engine io_uring).
  [[ -n ${RPS_TOOLS:-} ]] && read -r -a tools <<<"$RPS_TOOLS"
  for r in $(seq 1 "$ROUNDS"); do
    for t in "${tools[@]}"; do
      case $t in
        wrk) time_run "wrk-$r" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$URL" ;;
        h2load) time_run "h2load-$r" h2load --h1 -t 1 -c "$CONNS" -D "$DURATION" "$URL" ;;
        hey) time_run "hey-$r" env GOMAXPROCS=1 hey -z "${DURATION}s" -c "$CONNS" "$URL" ;;
        oha) time_run "oha-$r" oha --no-tui --output-format json --worker-threads 1 -z "${DURATION}s" -c "$CONNS" "$URL" ;;
        latscope) time_run "latscope-$r" "$LATSCOPE" load "$URL" -c "$CONNS" -d "${DURATION}s" --threads 1 --engine io_uring --json --no-save ;;
        latscope-epoll) time_run "latscope-epoll-$r" "$LATSCOPE" load "$URL" -c "$CONNS" -d "${DURATION}s" --threads 1 --engine epoll --json --no-save ;;
      esac
      read -r rps p50 p99 n cpu rss per < <(parse "$t-$r" "$t")
      printf '%-14s %5s %8s %8s %8s %9s %7s %7s %10s\n' "$t" "$r" "$rps" "$p50" "$p99" "$n" "$cpu" "$rss" "$per" | tee -a "$SUMMARY"
      sleep 1
    done
  done
  python3 - "$SUMMARY" <<'PY' | tee -a "$SUMMARY"
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.split() and l.split()[0] in ("wrk", "h2load", "hey", "oha", "latscope", "latscope-epoll")]
by = {}
for r in rows:
    try: by.setdefault(r[0], []).append((int(r[1]), float(r[8])))
    except ValueError: pass
l = dict(by.get("latscope", []))
for peer in ("wrk", "h2load", "hey", "oha", "latscope-epoll"):
    if peer not in by or not l:
        continue
    w = dict(by[peer])
    ratios = [l[k] / w[k] for k in sorted(w) if k in l and w[k] > 0]
    if ratios:
        print(f"latscope/{peer} req per CPU-second, per round: " + ", ".join(f"{x:.2f}" for x in ratios)
              + f"; median {statistics.median(ratios):.2f}")
PY
fi

if want open; then
  echo "## open model, ${DURATION}s, 1 thread" | tee -a "$SUMMARY"
  for rate in "$OPEN_RATE" "$OVER_RATE"; do
    time_run "open-$rate" "$LATSCOPE" load "$URL" --rate "$rate" -c 1000 -d "${DURATION}s" --threads 1 --json --no-save
    python3 - "$OUTDIR/open-$rate.out" "$rate" <<'PY' | tee -a "$SUMMARY"
import json, sys
j = json.load(open(sys.argv[1])); rate = float(sys.argv[2])
arr = j["requests"] + j["dropped"] + j["incomplete"]
print(f"rate {rate:.0f}/s: completed {j['requests']} ({j['requests'] / j['duration_s']:.0f}/s over {j['duration_s']:.2f} s, "
      f"{100 * (j['requests'] / j['duration_s'] / rate - 1):+.2f}% vs target), dropped {j['dropped']}, incomplete {j['incomplete']}, "
      f"arrivals {arr}; latency p50 {j['latency_ms']['p50']:.2f} ms p99 {j['latency_ms']['p99']:.2f} ms; "
      f"service p99 {j['service_time_ms']['p99']:.2f} ms; cpu {j['client_cpu_pct']:.0f}%")
PY
    sleep 1
  done
fi

if want mem; then
  echo "## memory (peak RSS, 1 thread)" | tee -a "$SUMMARY"
  for c in 5000 10000; do
    time_run "mem-c$c" "$LATSCOPE" load "$URL" -c "$c" -d 10s --threads 1 --json --no-save
    read -r rps p50 p99 n cpu rss per < <(parse "mem-c$c" latscope)
    ok=$(python3 -c "import json; j=json.load(open('$OUTDIR/mem-c$c.out')); print(j['ok'], j['connections_opened'])")
    echo "c=$c flat out 10 s: rss ${rss} MB, $n requests ($rps/s), ok+opened: $ok, $per req/cpu_s" | tee -a "$SUMMARY"
    sleep 2
  done
  for d in 10 60; do
    time_run "mem-d$d" "$LATSCOPE" load "$URL" -c "$CONNS" -d "${d}s" --threads 1 --json --no-save
    read -r rps p50 p99 n cpu rss per < <(parse "mem-d$d" latscope)
    echo "c=$CONNS ${d} s: rss ${rss} MB after $n requests" | tee -a "$SUMMARY"
    sleep 2
  done
fi

if want h2; then
  echo "## HTTP/2 (h2c) against latscope lab --http2 on CPU $NGX_CPU: 10 connections x 10 streams, ${DURATION}s" | tee -a "$SUMMARY"
  LAB_PORT=$((NGX_PORT + 1))
  taskset -c "$NGX_CPU" "$LATSCOPE" lab --listen "127.0.0.1:$LAB_PORT" --http2 >"$OUTDIR/lab.out" 2>&1 &
  LAB_PID=$!
  for _ in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:$LAB_PORT/" 2>/dev/null && break; sleep 0.1; done
  H2URL=http://127.0.0.1:$LAB_PORT/bytes/1k
  time_run h2-h2load h2load -t 1 -c 10 -m 10 -D "$DURATION" "$H2URL"
  read -r rps p50 p99 n cpu rss per < <(parse h2-h2load h2load)
  echo "h2load   : $rps req/s, $n requests, cpu ${cpu}s, rss ${rss} MB, $per req/cpu_s" | tee -a "$SUMMARY"
  sleep 1
  time_run h2-latscope "$LATSCOPE" load "$H2URL" --http2 -c 10 --streams 10 -d "${DURATION}s" --threads 1 --json --no-save
  read -r rps p50 p99 n cpu rss per < <(parse h2-latscope latscope)
  echo "latscope : $rps req/s, $n requests, p50 $p50 ms p99 $p99 ms, cpu ${cpu}s, rss ${rss} MB, $per req/cpu_s" | tee -a "$SUMMARY"
fi
echo "# raw outputs: $OUTDIR" | tee -a "$SUMMARY"
