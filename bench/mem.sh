#!/usr/bin/env bash
# Peak RSS of latscope load beside wrk (and oha if installed), in one run.
#
#   bench/mem.sh
#
# nginx (PEERS_DIR/nginx-target.sh, 1 worker, worker_connections 12000) on CPU $NGX_CPU,
# each tool on CPU $TOOL_CPU with one thread, /1k over keep-alive, flat out. Cases:
# 50 and $C connections for $DURATION s (tools alternated), then latscope at 50
# connections for $DURATION s and $LONG s (memory must not grow with run length).
# Peak RSS from /usr/bin/time -v; for latscope also the anonymous / file-backed split
# of its largest sampled RSS (/proc/PID/status every 0.2 s): file-backed pages are the
# binary's and libc's code, shared with the page cache.
#
# With SMAPS=1, bench/smaps.py also breaks latscope's largest RSS down by mapping
# (the binary's code, relocated data, libc, heap, arenas, thread stacks, io_uring).
#
# Env: PEERS_DIR (/work/shared/bench)  LATSCOPE (target/release/latscope)  C (5000)
#      DURATION (10)  LONG (60)  NGX_PORT (18181)  NGX_CPU (0)  TOOL_CPU (1)
#      ENGINES ("auto"; e.g. "io_uring epoll": latscope once per engine)  SMAPS (0)
#      CASES ("50 $C long": which cases run; long = 50 connections for $LONG s)
#      OUTDIR (/tmp/bench-mem-latscope/<timestamp>)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/work/shared/bench}
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
C=${C:-5000}
DURATION=${DURATION:-10}
LONG=${LONG:-60}
export NGX_PORT=${NGX_PORT:-18181}
export NGX_DIR=${NGX_DIR:-/tmp/bench-nginx-latscope}
export NGX_CPU=${NGX_CPU:-0}
export NGX_WORKER_CONNECTIONS=${NGX_WORKER_CONNECTIONS:-12000}
TOOL_CPU=${TOOL_CPU:-1}
ENGINES=${ENGINES:-auto}
SMAPS=${SMAPS:-0}
OUTDIR=${OUTDIR:-/tmp/bench-mem-latscope/$(date +%Y%m%d-%H%M%S)}
URL=http://127.0.0.1:$NGX_PORT/1k
export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p "$OUTDIR"
[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }
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

# run NAME SECONDS CMD...: pinned, timed; samples VmRSS/RssAnon/RssFile of the tool.
run() {
  local name=$1 secs=$2; shift 2
  /usr/bin/time -v -o "$OUTDIR/$name.time" timeout -k 5 $((secs + 60)) \
    taskset -c "$TOOL_CPU" "$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err" </dev/null &
  local tpid=$! pid="" i
  for i in $(seq 50); do pid=$(pgrep -P "$(pgrep -P $tpid | head -1)" 2>/dev/null | head -1 || true); [[ -n $pid ]] && break; sleep 0.1; done
  : >"$OUTDIR/$name.samples"
  local spid=""
  if [[ $SMAPS == 1 && -n $pid && $name == latscope* ]]; then
    python3 "$HERE/smaps.py" "$pid" "$OUTDIR/$name.smaps" >"$OUTDIR/$name.smaps.txt" 2>&1 &
    spid=$!
  fi
  for i in $(seq $(((secs + 60) * 5))); do
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || break
    awk '/^(VmRSS|RssAnon|RssFile):/{printf "%s ", $2} END{print ""}' "/proc/$pid/status" >>"$OUTDIR/$name.samples" 2>/dev/null || true
    sleep 0.2
  done
  wait "$tpid" || true
  [[ -n $spid ]] && wait "$spid"
  local peak split
  peak=$(awk '/Maximum resident/{printf "%.1f", $NF/1024}' "$OUTDIR/$name.time")
  split=$(sort -n "$OUTDIR/$name.samples" | tail -1 | awk 'NF==3{printf "anon %.1f + file %.1f MB", $2/1024, $3/1024}')
  printf '%-30s peak %6s MB   (largest sample: %s)\n' "$name" "$peak" "${split:--}" | tee -a "$OUTDIR/summary.txt"
  [[ -s $OUTDIR/$name.smaps.txt ]] && sed -n '1,14s/^/    /p' "$OUTDIR/$name.smaps.txt" | tee -a "$OUTDIR/summary.txt"
  sleep 2
}

{
  echo "# bench/mem.sh  $(date -Is)  $(uname -r)  cpus=$(nproc)  load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# nginx 1 worker on CPU $NGX_CPU, tools on CPU $TOOL_CPU, $URL, 1 thread each, flat out"
} | tee "$OUTDIR/summary.txt"
CASES=${CASES:-50 $C long}
for c in 50 "$C"; do
  [[ " $CASES " == *" $c "* ]] || continue
  run "wrk-c$c" "$DURATION" wrk -t1 -c"$c" -d"${DURATION}s" -T 30s "$URL"
  command -v oha >/dev/null && run "oha-c$c" "$DURATION" oha --no-tui --output-format json --worker-threads 1 -c "$c" -z "${DURATION}s" "$URL"
  for e in $ENGINES; do
    run "latscope-$e-c$c" "$DURATION" "$LATSCOPE" load "$URL" -c "$c" -d "${DURATION}s" --threads 1 --json --no-save --engine "$e"
  done
done
[[ " $CASES " == *" long "* ]] && for e in $ENGINES; do
  run "latscope-$e-c50-${LONG}s" "$LONG" "$LATSCOPE" load "$URL" -c 50 -d "${LONG}s" --threads 1 --json --no-save --engine "$e"
done
echo "# raw outputs: $OUTDIR" | tee -a "$OUTDIR/summary.txt"
