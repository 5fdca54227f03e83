#!/usr/bin/env bash
# Issue 34's performance bar: a scenario with checks and extraction keeps >= 80 % of a
# plain scenario's requests per CPU-second.
#
#   bench/scenario.sh
#
# Target: a private nginx on 127.0.0.1:$NGX_PORT (CPU $NGX_CPU, 1 worker) answering
# /login with a small JSON token and /me with a small JSON user. latscope (CPU
# $TOOL_CPU, one worker thread, --engine epoll for both: scripted scenarios run on
# epoll) runs, alternated $ROUNDS times, for $DURATION s at $CONNS connections:
#   plain    the two requests as plain scenario entries (encoded once for the run)
#   scripted the same two, /login checked (status, json) with its token extracted, /me
#            sent with `Authorization: Bearer {{token}}` (encoded per VU) and checked
#            (status, a header, body_contains, json path equals); cookie jar on
# The figure is requests per latscope CPU-second (JSON: requests / (client_cpu_pct x
# duration_s)); the ratio scripted/plain is printed per round. PROTO=h2 runs both over
# HTTP/2 (nginx h2c, `--http2 --streams $STREAMS`: $CONNS connections x $STREAMS VUs);
# ENGINE=io_uring runs both on io_uring (HTTP/1.1 only).
#
# Env: LATSCOPE (target/release/latscope) NGX_PORT (18182) NGX_CPU (0) TOOL_CPU (1)
#      CONNS (50) DURATION (10) ROUNDS (3) PROTO (h1|h2) STREAMS (10) ENGINE (epoll)
#      OUTDIR (/tmp/bench-scenario/<timestamp>)
# Needs: nginx, python3, taskset.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
NGX_PORT=${NGX_PORT:-18182}
NGX_CPU=${NGX_CPU:-0}
TOOL_CPU=${TOOL_CPU:-1}
CONNS=${CONNS:-50}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
PROTO=${PROTO:-h1}
ENGINE=${ENGINE:-epoll}
STREAMS=${STREAMS:-10}
LISTEN_OPT=
PROTO_ARGS=()
if [[ $PROTO == h2 ]]; then
  LISTEN_OPT=" http2"
  PROTO_ARGS=(--http2 --streams "$STREAMS")
fi
OUTDIR=${OUTDIR:-/tmp/bench-scenario/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"

NGX_DIR="$OUTDIR/nginx"
mkdir -p "$NGX_DIR/logs"
cat >"$NGX_DIR/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $NGX_DIR/nginx.pid;
error_log $NGX_DIR/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$NGX_PORT$LISTEN_OPT;
    location = /login { default_type application/json; return 200 '{"token":"tok-kim","user":"kim"}'; }
    location = /me { default_type application/json; return 200 '{"user":"kim","plan":"pro","orders":[1,2,3]}'; }
  }
}
EOF
taskset -c "$NGX_CPU" nginx -p "$NGX_DIR" -c "$NGX_DIR/nginx.conf" &
NGX=$!
trap 'kill $NGX 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -fsS ${LISTEN_OPT:+--http2-prior-knowledge} "http://127.0.0.1:$NGX_PORT/me" >/dev/null 2>&1 && break
  sleep 0.1
done

cat >"$OUTDIR/plain.toml" <<EOF
base_url = "http://127.0.0.1:$NGX_PORT"
[[request]]
name = "login"
path = "/login"
[[request]]
name = "me"
path = "/me"
EOF
cat >"$OUTDIR/scripted.toml" <<EOF
base_url = "http://127.0.0.1:$NGX_PORT"
[[request]]
name = "login"
path = "/login"
check = { status = 200, json = { user = "kim" } }
extract = { token = { json = "\$.token" } }
[[request]]
name = "me"
path = "/me"
headers = { Authorization = "Bearer {{token}}" }
[request.check]
status = 200
headers = { Content-Type = "application/json" }
body_contains = '"plan":"pro"'
json = { "orders[2]" = 3 }
EOF

run() { # name → prints "req/cpu_s requests cpu_s"
  local out="$OUTDIR/$1-$2.json"
  taskset -c "$TOOL_CPU" "$LATSCOPE" load -f "$OUTDIR/$1.toml" -c "$CONNS" -d "${DURATION}s" \
    --threads 1 --engine "$ENGINE" "${PROTO_ARGS[@]}" --json --no-save >"$out"
  python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = d["client_cpu_pct"] / 100 * d["duration_s"]
checks = d.get("checks") or {}
print(f'{d["requests"] / cpu:.0f} {d["requests"]} {cpu:.2f} {checks.get("passed_pct", "-")}')
PY
}

echo "| round | plain req/cpu_s | scripted req/cpu_s | scripted/plain | checks passed % |"
echo "|---|---|---|---|---|"
for r in $(seq "$ROUNDS"); do
  read -r p_rate _ _ _ < <(run plain "$r")
  read -r s_rate _ _ s_checks < <(run scripted "$r")
  ratio=$(python3 -c "print(f'{$s_rate / $p_rate:.2f}')")
  echo "| $r | $p_rate | $s_rate | $ratio | $s_checks |"
done
echo "raw outputs: $OUTDIR"
