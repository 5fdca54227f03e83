#!/usr/bin/env bash
# HTTP/2 (h2c, prior knowledge) side by side: h2load vs latscope on a private nginx.
#
#   bench/h2.sh            rounds of: h2load -m M, latscope --streams M, for M in $STREAMS
#
# nginx (1 worker, `listen … http2` = h2c, /1k, keep-alive for 10M requests so no
# connection is recycled) runs from a config in $NGX_DIR on 127.0.0.1:$NGX_PORT, pinned
# to CPU $NGX_CPU; each tool is pinned to CPU $TOOL_CPU with one thread; CPU seconds
# and peak RSS from /usr/bin/time -v. The headline is requests per tool CPU-second
# (nginx on one core is the bottleneck, so req/s ties), per round and the median ratio.
#
# Env: LATSCOPE (target/release/latscope)  NGX_PORT (18191)  NGX_DIR (/tmp/bench-nginx-h2)
#      NGX_CPU (0)  TOOL_CPU (1)  CONNS (10)  STREAMS ("10 100")  DURATION (10)  ROUNDS (3)
#      OUTDIR (/tmp/bench-h2/<timestamp>)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
NGX_PORT=${NGX_PORT:-18191}
NGX_DIR=${NGX_DIR:-/tmp/bench-nginx-h2}
NGX_CPU=${NGX_CPU:-0}
TOOL_CPU=${TOOL_CPU:-1}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10 100}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
OUTDIR=${OUTDIR:-/tmp/bench-h2/$(date +%Y%m%d-%H%M%S)}
URL=http://127.0.0.1:$NGX_PORT/1k
mkdir -p "$OUTDIR" "$NGX_DIR"/{www,logs,tmp}
[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }
command -v h2load >/dev/null || { echo "h2load missing (apt-get install nghttp2-client)" >&2; exit 2; }

# shellcheck source=bench/h2-nginx.sh
source "$HERE/h2-nginx.sh"
h2_nginx_start

time_run() {
  local name=$1; shift
  /usr/bin/time -v -o "$OUTDIR/$name.time" timeout -k 5 $((DURATION + 60)) \
    taskset -c "$TOOL_CPU" "$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err" </dev/null || true
}

# parse NAME TOOL -> "rps requests errors cpu_s rss_mb req_per_cpu_s"
parse() {
  python3 - "$OUTDIR" "$1" "$2" <<'PY'
import json, re, sys
d, name, tool = sys.argv[1:4]
out = open(f"{d}/{name}.out", errors="replace").read()
tv = open(f"{d}/{name}.time", errors="replace").read()
if tool == "h2load":
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", out)
    n, err = int(m.group(2)), int(m.group(3)) + int(m.group(4))
    rps = float(re.search(r"finished in [0-9.]+\w+, ([0-9.]+) req/s", out).group(1))
else:
    j = json.loads(out)
    rps, n, err = j["rps"], j["ok"], j["requests"] - j["ok"]
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv).group(1)) / 1024
cpu = float(re.search(r"User time \(seconds\): ([0-9.]+)", tv).group(1)) + \
      float(re.search(r"System time \(seconds\): ([0-9.]+)", tv).group(1))
print(f"{rps:.0f} {n} {err} {cpu:.2f} {rss:.1f} {n / cpu if cpu else 0:.0f}")
PY
}

SUMMARY=$OUTDIR/summary.txt
{
  echo "# bench/h2.sh  $(date -Is)  $(uname -r)  cpus=$(nproc)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# nginx $(nginx -v 2>&1 | cut -d/ -f2) h2c 1 worker on CPU $NGX_CPU, tools on CPU $TOOL_CPU, $URL, $CONNS connections, ${DURATION}s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-9s %7s %5s %8s %9s %6s %7s %7s %10s\n' tool streams round rps ok errors cpu_s rss_mb ok/cpu_s
} | tee "$SUMMARY"
for r in $(seq 1 "$ROUNDS"); do
  for m in $STREAMS; do
    for t in h2load latscope; do
      case $t in
        h2load) time_run "$t-m$m-$r" h2load -t 1 -c "$CONNS" -m "$m" -D "$DURATION" "$URL" ;;
        latscope) time_run "$t-m$m-$r" "$LATSCOPE" load "$URL" --http2 -c "$CONNS" --streams "$m" \
                    -d "${DURATION}s" --threads 1 --json --no-save --no-tui ;;
      esac
      read -r rps n err cpu rss per < <(parse "$t-m$m-$r" "$t")
      printf '%-9s %7s %5s %8s %9s %6s %7s %7s %10s\n' "$t" "$m" "$r" "$rps" "$n" "$err" "$cpu" "$rss" "$per" | tee -a "$SUMMARY"
      sleep 1
    done
  done
done
python3 - "$SUMMARY" <<'PY' | tee -a "$SUMMARY"
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.split() and l.split()[0] in ("h2load", "latscope")]
by = {}
for r in rows:
    by[(r[0], r[1], r[2])] = float(r[8])
for m in sorted({k[1] for k in by}, key=int):
    ratios = [by[("latscope", m, r)] / by[("h2load", m, r)] for (t, mm, r) in by
              if t == "h2load" and mm == m and ("latscope", m, r) in by and by[("h2load", m, r)] > 0]
    if ratios:
        print(f"streams {m}: latscope/h2load ok per CPU-second, per round: "
              + ", ".join(f"{x:.2f}" for x in ratios) + f"; median {statistics.median(ratios):.2f}")
PY
echo "# raw outputs: $OUTDIR" | tee -a "$SUMMARY"
