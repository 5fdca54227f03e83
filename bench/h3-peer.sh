#!/usr/bin/env bash
# HTTP/3 load against a peer (issue 36 item 3): latscope `load --http3` and oha
# `--http-version 3` (built with its http3 feature; Debian's h2load has no QUIC) against
# the same Caddy, in one run, alternating tools over $ROUNDS rounds.
#
#   bench/h3-peer.sh
#
# Caddy (GOMAXPROCS=1, pinned to CPU $SRV_CPU, `tls internal`) answers /1k with 1 KiB
# over h3 on 127.0.0.1:$PORT/udp. Each tool (one worker thread, pinned to CPU
# $TOOL_CPU) runs $CONNS QUIC connections x $STREAMS concurrent streams for $DURATION s.
# CPU seconds (user + sys) and peak RSS from /usr/bin/time -v. Printed per run: the
# achieved req/s, p50/p99, requests, CPU s and requests per CPU-second; then the
# latscope/oha ratios of both (median over rounds).
#
# Env: LATSCOPE (target/release/latscope)  OHA_H3 (oha with http3; default `oha`)
#      PORT (18443)  SRV_CPU (0)  TOOL_CPU (1)  CONNS (10)  STREAMS (10)  DURATION (10)
#      ROUNDS (3)  OUTDIR (/tmp/bench-h3-peer/<timestamp>)
# Needs: caddy, oha built with `--features http3`
#   (cargo install oha --version 1.16.0 --locked --features http3 --root /tmp/oha-h3),
#   python3, curl, taskset, /usr/bin/time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LATSCOPE=${LATSCOPE:-$ROOT/target/release/latscope}
OHA_H3=${OHA_H3:-oha}
PORT=${PORT:-18443}
SRV_CPU=${SRV_CPU:-0}
TOOL_CPU=${TOOL_CPU:-1}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
OUTDIR=${OUTDIR:-/tmp/bench-h3-peer/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"
[[ -x $LATSCOPE ]] || { echo "build first: cargo build --release ($LATSCOPE missing)" >&2; exit 2; }
if "$OHA_H3" --no-tui --http-version 3 -n 1 --insecure "https://127.0.0.1:9/" 2>&1 | grep -q "not been built with HTTP/3"; then
  echo "$OHA_H3 has no HTTP/3: cargo install oha --version 1.16.0 --locked --features http3 --root /tmp/oha-h3" >&2
  exit 2
fi

SRV=$OUTDIR/caddy
mkdir -p "$SRV"
BODY=$(head -c 1024 /dev/zero | tr '\0' a)
cat >"$SRV/Caddyfile" <<EOC
{
	admin off
	local_certs
	skip_install_trust
	http_port $((PORT + 1))
	https_port $PORT
	auto_https disable_redirects
	storage file_system $SRV/data
	log {
		output discard
	}
}
https://localhost:$PORT, https://127.0.0.1:$PORT {
	bind 127.0.0.1
	tls internal
	respond /1k "$BODY" 200
}
EOC
HOME=$SRV XDG_DATA_HOME=$SRV/xdg XDG_CONFIG_HOME=$SRV/xdg GOMAXPROCS=1 \
  taskset -c "$SRV_CPU" caddy run --adapter caddyfile --config "$SRV/Caddyfile" >"$SRV/log" 2>&1 &
CADDY=$!
trap 'kill $CADDY 2>/dev/null || true' EXIT
URL=https://localhost:$PORT/1k
CA=$SRV/data/pki/authorities/local/root.crt
for _ in $(seq 100); do
  [[ -f $CA ]] && curl -fsS --cacert "$CA" -o /dev/null "$URL" 2>/dev/null && break
  sleep 0.2
done
curl -fsS --cacert "$CA" -o /dev/null "$URL"

# time_run NAME CMD...: one timed run; output in $OUTDIR/NAME.{out,err,time}
time_run() {
  local name=$1; shift
  /usr/bin/time -v -o "$OUTDIR/$name.time" timeout -k 5 $((DURATION * 4 + 60)) \
    taskset -c "$TOOL_CPU" "$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err" </dev/null || true
}

# parse NAME TOOL -> "rps p50_ms p99_ms requests cpu_s rss_mb req_per_cpu_s"
parse() {
  python3 - "$OUTDIR" "$1" "$2" "$DURATION" <<'PY'
import json, re, sys
d, name, tool, dur = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
tv = open(f"{d}/{name}.time", errors="replace").read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv).group(1)) / 1024
cpu = float(re.search(r"User time \(seconds\): ([0-9.]+)", tv).group(1)) + \
      float(re.search(r"System time \(seconds\): ([0-9.]+)", tv).group(1))
try:
    j = json.load(open(f"{d}/{name}.out"))
    if tool == "oha":
        ok = j["statusCodeDistribution"].get("200", 0)
        # oha's h3 run goes on ~30 s past -z waiting for its QUIC connections to
        # close (wall 40 s at ~14 % CPU): its requests were sent within -z.
        rps = ok / min(j["summary"]["total"], dur)
        p50, p99 = j["latencyPercentiles"]["p50"] * 1e3, j["latencyPercentiles"]["p99"] * 1e3
    else:
        ok = j["ok"]
        rps = ok / j["duration_s"]
        p50, p99 = j["latency_ms"]["p50"], j["latency_ms"]["p99"]
except Exception as e:
    print(f"nan nan nan 0 {cpu:.2f} {rss:.1f} nan  # {name}: {e}")
    sys.exit(0)
print(f"{rps:.0f} {p50:.2f} {p99:.2f} {ok} {cpu:.2f} {rss:.1f} {ok / cpu if cpu else 0:.0f}")
PY
}

SUMMARY=$OUTDIR/summary.txt
{
  echo "# bench/h3-peer.sh  $(date -Is)  $(uname -r)  cpus=$(nproc)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# Caddy $(caddy version | cut -d' ' -f1) GOMAXPROCS=1 on CPU $SRV_CPU; tools on CPU $TOOL_CPU, 1 thread; $URL; $CONNS conns x $STREAMS streams, ${DURATION}s"
  echo "# $("$LATSCOPE" --version)  $("$OHA_H3" --version)  load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-9s %5s %8s %8s %8s %9s %7s %7s %10s\n' tool round rps p50_ms p99_ms ok cpu_s rss_mb req/cpu_s
} | tee "$SUMMARY"
for r in $(seq 1 "$ROUNDS"); do
  order=(latscope oha)
  ((r % 2 == 0)) && order=(oha latscope)
  for t in "${order[@]}"; do
    case $t in
      latscope) time_run "$t-$r" "$LATSCOPE" load "$URL" --http3 --cacert "$CA" -c "$CONNS" \
                  --streams "$STREAMS" -d "${DURATION}s" --threads 1 --json --no-save ;;
      oha) time_run "$t-$r" env SSL_CERT_FILE="$CA" "$OHA_H3" --no-tui --output-format json \
             --worker-threads 1 --http-version 3 -c "$CONNS" -p "$STREAMS" -z "${DURATION}s" "$URL" ;;
    esac
    read -r rps p50 p99 n cpu rss per < <(parse "$t-$r" "$t")
    printf '%-9s %5s %8s %8s %8s %9s %7s %7s %10s\n' "$t" "$r" "$rps" "$p50" "$p99" "$n" "$cpu" "$rss" "$per" | tee -a "$SUMMARY"
    sleep 1
  done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$SUMMARY"
python3 - "$SUMMARY" <<'PY' | tee -a "$SUMMARY"
import statistics, sys
by = {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) >= 9 and f[0] in ("latscope", "oha"):
        try:
            by.setdefault(f[0], {})[int(f[1])] = (float(f[2]), float(f[8]))
        except ValueError:
            pass
l, o = by.get("latscope", {}), by.get("oha", {})
rounds = sorted(set(l) & set(o))
for i, what in ((0, "achieved req/s"), (1, "requests per CPU-second")):
    ratios = [l[k][i] / o[k][i] for k in rounds if o[k][i] > 0]
    if ratios:
        print(f"latscope/oha {what}, per round: " + ", ".join(f"{x:.2f}" for x in ratios)
              + f"; median {statistics.median(ratios):.2f}")
PY
echo "raw outputs: $OUTDIR"
