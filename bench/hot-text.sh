#!/usr/bin/env bash
# Regenerates link/hot-text.ld: the functions a `latscope load` run executes, placed
# together at the front of the code (issue 21, 50 connections <= 8 MB).
#
#   bench/hot-text.sh
#
# Why: the kernel maps a binary's code in 64 KiB windows around each page it faults
# (fault-around), and those pages count in RSS. A 50-connection run executes ~1.3 MB
# of the ~9 MB of code, spread over most of it, so ~3.7 MB of code was resident; laid
# out together it is ~2.7 MB (bench/RESULTS.md).
#
# How: builds the `profiling` profile (the release code with symbols), runs it under
# callgrind (every function executed, startup and output included) against the bench
# nginx with the cases the memory bench measures (50 connections, one thread; JSON and
# text output; io_uring and epoll), and writes one input-section pattern per function
# executed, without rustc's legacy symbol hash (`17h<16 hex>E`), which changes with the
# build's profile and the crate's version: `.text.<mangled path>*`. build.rs hands the
# file to the linker (INSERT BEFORE .text keeps its default layout for the rest). A
# stale file costs nothing but the grouping: names that no longer exist match nothing.
#
# Env: PEERS_DIR (/work/shared/bench)  NGX_PORT (18181)  NGX_DIR (/tmp/bench-nginx-latscope)
# Needs: valgrind, nginx (PEERS_DIR/peers-install.sh), python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PEERS_DIR=${PEERS_DIR:-/work/shared/bench}
export NGX_PORT=${NGX_PORT:-18181}
export NGX_DIR=${NGX_DIR:-/tmp/bench-nginx-latscope}
export PATH="$HOME/.cargo/bin:$PATH"
OUT=$ROOT/link/hot-text.ld
WORK=$(mktemp -d /tmp/latscope-hot-text.XXXXXX)
URL=http://127.0.0.1:$NGX_PORT/1k

command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
STARTED_NGINX=0
cleanup() {
  [[ $STARTED_NGINX == 1 ]] && "$PEERS_DIR/nginx-target.sh" stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
if ! "$PEERS_DIR/nginx-target.sh" status >/dev/null 2>&1; then
  "$PEERS_DIR/nginx-target.sh" start >/dev/null
  STARTED_NGINX=1
fi
curl -fsS -o /dev/null "$URL"

EXE=$ROOT/target/profiling/latscope
CASES=("--json" "" "--json --engine epoll" "--engine epoll")
(cd "$ROOT" && cargo build --profile profiling)
nm --defined-only "$EXE" >"$WORK/nm"

# Every function executed under callgrind. Under valgrind the run is client-bound,
# so the load findings' rules do not run: the real-speed passes below add them.
i=0
for args in "${CASES[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # $args is a list of flags
  timeout 300 valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.$i" \
    "$EXE" load "$URL" -c 50 -d 2s --threads 1 --no-save $args >/dev/null 2>"$WORK/cg.$i.err" \
    || { echo "callgrind run $i ($args) failed:" >&2; tail -5 "$WORK/cg.$i.err" >&2; exit 1; }
  grep -ohP '^c?fn=\(\d+\) \K\S+$' "$WORK/cg.$i" >>"$WORK/names" || true
done

write() {
  python3 "$HERE/hot_text.py" "$WORK/names" "$WORK/nm" "$OUT"
}
write

# Real-speed passes: the functions that fault a code page in (the first executed in
# each 64 KiB window outside the hot section) are added, the binary relinked, again.
if command -v perf >/dev/null; then
  for round in 1 2; do
    (cd "$ROOT" && cargo build --profile profiling)
    nm --defined-only "$EXE" >"$WORK/nm"
    for args in "${CASES[@]}"; do
      # shellcheck disable=SC2086 # $args is a list of flags
      perf record -q -e page-faults -c 1 -o "$WORK/pf.data" -- \
        "$EXE" load "$URL" -c 50 -d 2s --threads 1 --no-save $args >/dev/null 2>&1
      perf script -i "$WORK/pf.data" -F ip,sym,dso --no-demangle 2>/dev/null \
        | awk -v exe="($EXE)" '$3 == exe {print $2}' >>"$WORK/names"
    done
    echo "real-speed round $round:"
    write
  done
fi
