#!/usr/bin/env bash
# What a load tool's HTTP/2 requests cost the server: nginx's CPU per request and the
# requests per second it reached, h2load beside one or two latscope binaries, rounds
# alternating (issue 36: with nginx at ~99 % of its core, the tool whose requests are
# cheaper to serve gets more of them).
#
#   bench/h2-server-cost.sh                       h2load vs target/release/latscope
#   B=/tmp/latscope-old bench/h2-server-cost.sh   … and another build beside it
#
# nginx: 1 worker on CPU $NGX_CPU, h2c, /1k (the config of bench/h2.sh); each tool on
# CPU $TOOL_CPU with one thread, 10 connections × $M streams, $DUR s a run. nginx's CPU
# is read from /proc/<worker>/stat before and after each run. Prints one line per run
# and the medians per tool: req/s, nginx µs per request, tool req per CPU-second.
#
# Env: A (target/release/latscope)  B (unset)  M (100)  DUR (3)  ROUNDS (7)
#      NGX_PORT (18191)  NGX_DIR (/tmp/bench-nginx-h2)  NGX_CPU (0)  TOOL_CPU (1)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
A=${A:-$HERE/../target/release/latscope}
B=${B:-}
M=${M:-100}
DUR=${DUR:-3}
ROUNDS=${ROUNDS:-7}
NGX_PORT=${NGX_PORT:-18191}
NGX_DIR=${NGX_DIR:-/tmp/bench-nginx-h2}
NGX_CPU=${NGX_CPU:-0}
TOOL_CPU=${TOOL_CPU:-1}
URL=http://127.0.0.1:$NGX_PORT/1k
OUT=$(mktemp -d /tmp/bench-h2cost.XXXXXX)
command -v h2load >/dev/null || { echo "h2load missing (apt-get install nghttp2-client)" >&2; exit 2; }
[[ -x $A ]] || { echo "build first: cargo build --release ($A missing)" >&2; exit 2; }

# shellcheck source=bench/h2-nginx.sh
source "$HERE/h2-nginx.sh"
h2_nginx_start
worker=$(pgrep -P "$(cat "$NGX_DIR/nginx.pid")")
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
hz=$(getconf CLK_TCK)

# run NAME CMD…: one line "NAME rps ngx_us_per_req tool_req_per_cpu_s"
run() {
  local name=$1; shift
  local a b t0 t1
  a=$(ticks); t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$OUT/time" timeout -k 5 $((DUR + 60)) taskset -c "$TOOL_CPU" "$@" >"$OUT/out" 2>&1 </dev/null || true
  b=$(ticks); t1=$(date +%s.%N)
  python3 - "$name" "$OUT" "$a" "$b" "$t0" "$t1" "$hz" <<'PY'
import json, re, sys
name, d, a, b, t0, t1, hz = sys.argv[1:8]
out = open(f"{d}/out", errors="replace").read()
m = re.search(r"finished in [0-9.]+\w+, ([0-9.]+) req/s", out)
rps = float(m.group(1)) if m else float(json.loads(out)["rps"])
u, s = map(float, open(f"{d}/time").read().split()[-2:])
ngx_s = (float(b) - float(a)) / float(hz)
wall = float(t1) - float(t0)
print(f"{name} {rps:.0f} {ngx_s * 1e6 / (rps * wall):.2f} {rps * wall / (u + s):.0f}")
PY
}

tools=(h2load A)
[[ -n $B ]] && tools+=(B)
echo "# bench/h2-server-cost.sh $(date -Is) $(uname -r) cpus=$(nproc), 10 connections x $M streams, ${DUR}s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# tool rps nginx_us_per_request tool_requests_per_cpu_s"
for _ in $(seq "$ROUNDS"); do
  for t in "${tools[@]}"; do
    case $t in
      h2load) run h2load h2load -t 1 -c 10 -m "$M" -D "$DUR" "$URL" ;;
      A) run A "$A" load "$URL" --http2 -c 10 --streams "$M" -d "${DUR}s" --threads 1 --json --no-save --no-tui ;;
      B) run B "$B" load "$URL" --http2 -c 10 --streams "$M" -d "${DUR}s" --threads 1 --json --no-save --no-tui ;;
    esac
  done
done | tee "$OUT/rows"
python3 - "$OUT/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
by = {}
for name, rps, us, per in rows:
    by.setdefault(name, []).append((float(rps), float(us), float(per)))
h = by.get("h2load")
for name, v in by.items():
    med = [statistics.median(x[i] for x in v) for i in range(3)]
    line = f"median {name}: {med[0]:.0f} req/s, nginx {med[1]:.2f} us a request, {med[2]:.0f} requests per tool CPU-second"
    if h and name != "h2load":
        ratio = [x[0] / y[0] for x, y in zip(v, h)]
        line += f"; req/s vs h2load per round {', '.join(f'{r:.2f}' for r in ratio)} (median {statistics.median(ratio):.2f})"
    print(line)
PY
