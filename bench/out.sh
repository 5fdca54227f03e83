#!/usr/bin/env bash
# What `--out prometheus=URL` costs the load: requests per latscope CPU-second with and
# without it, alternated round by round.
#
#   bench/out.sh
#
# Target: a private nginx (PEERS_DIR/nginx-target.sh) on 127.0.0.1:$NGX_PORT serving
# /1k over keep-alive, pinned to CPU $NGX_CPU together with a private Prometheus
# (remote-write receiver, TSDB in a temp dir); latscope pinned to CPU $TOOL_CPU with one
# worker thread, closed model, $CONNS connections, $DURATION s. CPU seconds (user +
# sys, the sender thread included) from /usr/bin/time, and the sender thread's own CPU
# time (`latscope-out`, from /proc, 10 ms ticks) — the direct cost, immune to the noise
# of a shared machine. The headline is the ratio of req/cpu_s with --out to without
# (the issue asks ≥ 0.95).
#
# Env: PEERS_DIR (/work/shared/bench)  LATSCOPE (target/release/latscope)
#      NGX_PORT (18182)  NGX_DIR (/tmp/bench-nginx-latscope-out)  NGX_CPU (0)  TOOL_CPU (1)
#      PROM_PORT (19190)  CONNS (50)  DURATION (10)  ROUNDS (3)
#      OUTDIR (/tmp/bench-out/<timestamp>)
# Needs: nginx, prometheus, python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/work/shared/bench}
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
export NGX_PORT=${NGX_PORT:-18182}
export NGX_DIR=${NGX_DIR:-/tmp/bench-nginx-latscope-out}
export NGX_CPU=${NGX_CPU:-0}
TOOL_CPU=${TOOL_CPU:-1}
PROM_PORT=${PROM_PORT:-19190}
CONNS=${CONNS:-50}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
OUTDIR=${OUTDIR:-/tmp/bench-out/$(date +%Y%m%d-%H%M%S)}
URL=http://127.0.0.1:$NGX_PORT/1k
WRITE=http://127.0.0.1:$PROM_PORT/api/v1/write
mkdir -p "$OUTDIR"

[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }

STARTED_NGINX=0
PROM_PID=
cleanup() {
  [[ -n $PROM_PID ]] && kill "$PROM_PID" 2>/dev/null || true
  [[ $STARTED_NGINX == 1 ]] && "$PEERS_DIR/nginx-target.sh" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
if ! "$PEERS_DIR/nginx-target.sh" status >/dev/null 2>&1; then
  "$PEERS_DIR/nginx-target.sh" start >/dev/null
  STARTED_NGINX=1
fi
for p in $("$PEERS_DIR/nginx-target.sh" pids); do taskset -pc "$NGX_CPU" "$p" >/dev/null; done
curl -fsS -o /dev/null "$URL"

mkdir -p "$OUTDIR/prom"
printf 'global:\n  scrape_interval: 15s\n' >"$OUTDIR/prom/prometheus.yml"
taskset -c "$NGX_CPU" prometheus --config.file="$OUTDIR/prom/prometheus.yml" \
  --storage.tsdb.path="$OUTDIR/prom/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
  --web.enable-remote-write-receiver >"$OUTDIR/prom/log" 2>&1 &
PROM_PID=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "http://127.0.0.1:$PROM_PORT/-/ready"

# run NAME ARGS...: one pinned latscope run; prints "requests cpu_s failed_writes"
run() {
  local name=$1; shift
  /usr/bin/time -f '%U %S' -o "$OUTDIR/$name.time" timeout -k 5 $((DURATION * 3 + 30)) \
    taskset -c "$TOOL_CPU" "$LATSCOPE" load "$URL" -c "$CONNS" -d "${DURATION}s" --threads 1 \
    --no-save --json "$@" >"$OUTDIR/$name.json" 2>"$OUTDIR/$name.err" </dev/null || true
  python3 - "$OUTDIR/$name.json" "$OUTDIR/$name.time" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
failed = sum(o["failed"] for o in doc.get("outputs", []))
writes = sum(o["writes"] for o in doc.get("outputs", []))
print(doc["requests"], f"{u + s:.2f}", f"{failed}/{writes}")
PY
}

# sender_cpu TAG: polls the CPU time (user + sys, s) of the `latscope-out` thread of the
# latscope whose command line holds TAG until that process exits; prints the last value.
sender_cpu() {
  python3 - "$1" <<'PY'
import os, sys, time
tag, tck, last, seen = sys.argv[1], os.sysconf("SC_CLK_TCK"), 0.0, False
deadline = time.time() + 600
while time.time() < deadline:
    found = False
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if tag.encode() not in open(f"/proc/{pid}/cmdline", "rb").read():
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                if open(f"/proc/{pid}/task/{tid}/comm").read().strip() == "latscope-out":
                    f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                    last, found = (int(f[11]) + int(f[12])) / tck, True
        except OSError:
            pass
    if found:
        seen = True
    elif seen:
        break
    time.sleep(0.2)
print(f"{last:.2f}" if seen else "n/a")
PY
}

printf '| round | mode | requests | cpu s | req/cpu_s | failed writes | sender thread cpu s |\n|---|---|---|---|---|---|---|\n' >"$OUTDIR/table.md"
ratios=()
for r in $(seq "$ROUNDS"); do
  read -r req0 cpu0 _ < <(run "plain-$r")
  sender_cpu "bench=out-$r" >"$OUTDIR/sender-$r" &
  watcher=$!
  read -r req1 cpu1 fw < <(run "out-$r" --out "prometheus=$WRITE" --out-label "bench=out-$r")
  wait "$watcher" || true
  scpu=$(<"$OUTDIR/sender-$r")
  e0=$(python3 -c "print(f'{$req0/$cpu0:.0f}')")
  e1=$(python3 -c "print(f'{$req1/$cpu1:.0f}')")
  printf '| %s | without --out | %s | %s | %s | – | – |\n' "$r" "$req0" "$cpu0" "$e0" >>"$OUTDIR/table.md"
  printf '| %s | --out prometheus | %s | %s | %s | %s | %s |\n' "$r" "$req1" "$cpu1" "$e1" "$fw" "$scpu" >>"$OUTDIR/table.md"
  ratios+=("$(python3 -c "print(f'{$e1/$e0:.3f}')")")
done
cat "$OUTDIR/table.md"
echo
echo "req/cpu_s with --out / without, per round: ${ratios[*]} (median $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p"))"
echo "raw outputs: $OUTDIR"
