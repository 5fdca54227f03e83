#!/usr/bin/env bash
# What the live view costs: `latscope load` with the full-screen view (in a detached
# tmux session of 110×34, a real terminal) against the same run with --no-tui (same
# session), alternated round by round. Headline: requests per latscope CPU-second
# (user + sys from /usr/bin/time -v, the UI thread included), and the view's cost
# = 1 - (with view) / (without).
#
#   bench/live.sh
#
# Target: `latscope lab` on 127.0.0.1:$PORT (pinned to CPU $LAB_CPU), GET /; latscope
# pinned to CPU $TOOL_CPU with one worker thread, $CONNS connections, $DURATION s.
# Env: LATSCOPE (target/release/latscope)  PORT (18432)  LAB_CPU (0)  TOOL_CPU (1)
#      CONNS (16)  DURATION (10)  ROUNDS (3)  OUTDIR (/tmp/bench-live/<timestamp>)
# Needs: tmux, /usr/bin/time, taskset, python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
PORT=${PORT:-18432}
LAB_CPU=${LAB_CPU:-0}
TOOL_CPU=${TOOL_CPU:-1}
CONNS=${CONNS:-16}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
OUTDIR=${OUTDIR:-/tmp/bench-live/$(date +%Y%m%d-%H%M%S)}
SOCK=latscope-bench-live-$$
mkdir -p "$OUTDIR"
[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }

LAB_PID=
cleanup() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  [[ -n $LAB_PID ]] && kill "$LAB_PID" 2>/dev/null || true
}
trap cleanup EXIT
taskset -c "$LAB_CPU" "$LATSCOPE" lab --listen "127.0.0.1:$PORT" >"$OUTDIR/lab.log" 2>&1 &
LAB_PID=$!
for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null && break; sleep 0.1; done
tmux -L "$SOCK" -f /dev/null new-session -d -s b -x 110 -y 34

# one NAME FLAGS: a run in the tmux pane; waits for its marker file.
one() {
  local name=$1 flags=$2
  rm -f "$OUTDIR/$name.done"
  tmux -L "$SOCK" send-keys -t b "clear; /usr/bin/time -v -o $OUTDIR/$name.time taskset -c $TOOL_CPU \
$LATSCOPE load http://127.0.0.1:$PORT/ -c $CONNS -d ${DURATION}s --threads 1 --db $OUTDIR/$name.db $flags; \
touch $OUTDIR/$name.done" Enter
  # The view's own thread ("latscope-live") against the whole process, read from
  # /proc (schedstat, ns) one second before the run ends: a share that the machine's noise moves less
  # than two separate runs' req/cpu_s.
  python3 - "$OUTDIR/$name.threads" "$PORT" "$DURATION" <<'PY' &
import os, sys, time
out, port, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
needle = f"load\0http://127.0.0.1:{port}/".encode()
pid, t0 = None, time.time()
while pid is None and time.time() - t0 < 30:
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                cmd = open(f"/proc/{p}/cmdline", "rb").read()
            except OSError:
                continue
            if needle in cmd and b"taskset" not in cmd and b"time" not in cmd.split(b"\0")[0]:
                pid = p
    time.sleep(0.05)
if pid is None:
    sys.exit(0)
time.sleep(max(duration - 1.0 - (time.time() - t0), 0))
live = total = 0
for tid in os.listdir(f"/proc/{pid}/task"):
    try:
        stat = open(f"/proc/{pid}/task/{tid}/stat").read()
    except OSError:
        continue
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    try:
        ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
    except (OSError, ValueError, IndexError):
        f = stat[stat.rindex(")") + 2 :].split()
        ns = (int(f[11]) + int(f[12])) * 10_000_000
    total += ns
    if comm == "latscope-live":
        live += ns
open(out, "w").write(f"{live} {total}\n")
PY
  SAMPLER=$!
  for _ in $(seq $((DURATION * 10 + 600))); do [[ -e $OUTDIR/$name.done ]] && break; sleep 0.1; done
  wait "$SAMPLER"
  tmux -L "$SOCK" capture-pane -p -t b >"$OUTDIR/$name.screen"
  "$LATSCOPE" runs --json --db "$OUTDIR/$name.db" >"$OUTDIR/$name.json"
}

for r in $(seq "$ROUNDS"); do
  one "view-$r" ""
  one "plain-$r" "--no-tui"
done

python3 - "$OUTDIR" "$ROUNDS" <<'PY'
import json, re, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def row(name):
    run = json.load(open(f"{d}/{name}.json"))[0]
    tv = open(f"{d}/{name}.time").read()
    cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", tv).group(1)) for k in ("User", "System"))
    n = run["headline"]["requests"]
    return n, cpu, n / cpu, run["headline"]["rps"]
def share(name):
    try:
        live, total = map(int, open(f"{d}/{name}.threads").read().split())
        return live / total if total else float("nan")
    except (OSError, ValueError):
        return float("nan")
print("| round | view req/s | view req/cpu_s | --no-tui req/s | --no-tui req/cpu_s | difference | view thread's CPU share |")
print("|---|---|---|---|---|---|---|")
costs, shares = [], []
for r in range(1, rounds + 1):
    v, p = row(f"view-{r}"), row(f"plain-{r}")
    cost = 1 - v[2] / p[2]
    costs.append(cost)
    sh = share(f"view-{r}")
    shares.append(sh)
    print(f"| {r} | {v[3]:,.0f} | {v[2]:,.0f} | {p[3]:,.0f} | {p[2]:,.0f} | {cost*100:+.1f} % | {sh*100:.2f} % |")
costs.sort(); shares.sort()
print(f"\nmedian difference in requests per CPU-second (view vs --no-tui): {costs[len(costs)//2]*100:+.1f} %")
print(f"median share of latscope's CPU spent in the view's thread: {shares[len(shares)//2]*100:.2f} %")
PY
echo "raw outputs: $OUTDIR"
