# Sourced by ../shared/bench/peers-rps.sh (EXTRA_FILE=bench/peers-extra.sh): adds
# latscope to the peers with the same pinning, time limit and /usr/bin/time -v
# accounting. LATSCOPE defaults to this checkout's release build.
LATSCOPE=${LATSCOPE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/release/latscope}
LATSCOPE_LINE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/latscope-bench-line.sh
cmd_latscope() { echo "$LATSCOPE_LINE" "$LATSCOPE" "$CONNS" "$DURATION" "$URL"; }
BIN[latscope]=$LATSCOPE
THREADS[latscope]="1 (--threads 1)"
EXTRA_TOOLS+=(latscope)
