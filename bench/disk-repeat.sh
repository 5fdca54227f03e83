#!/usr/bin/env bash
# Issue 31 item 4's bench: the database suite three times (N) on each of the volumes
# tests/disk_suite.rs builds — 5 MiB/s, +5 ms per I/O, 1.5 s stalls every 6 s, +20 ms
# per flush — and tests/repeatability.rs' disk cases build (unthrottled, 500 IOPS;
# run here without its CPU hogs) — each run checked as the test checks one, and
# every run of a volume required to name the same warn/crit findings. Prints a
# Markdown table for bench/RESULTS.md: per volume, the runs, the verdicts and the
# warn/crit ids of each run.
#
#   sudo bench/disk-repeat.sh        (root: loop devices, cgroup v1 blkio, FUSE)
#
# Env: N (3)  OUTDIR (/tmp/bench-disk-repeat/<timestamp>)
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
N=${N:-3}
OUTDIR=${OUTDIR:-/tmp/bench-disk-repeat/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"
cd "$ROOT"

start=$(date +%s)
LATSCOPE_DISK_RUNS=$N cargo test --test tests -- disk_suite --test-threads=1 --nocapture \
    >"$OUTDIR/test.log" 2>&1
rc=$?
LATSCOPE_REPEAT=$N LATSCOPE_HOGS=0 cargo test --test repeatability -- --test-threads=1 \
    --nocapture repeatability_unthrottled repeatability_iops_cap >>"$OUTDIR/test.log" 2>&1
rc2=$?
[ "$rc" = 0 ] && rc=$rc2
took=$(( $(date +%s) - start ))

python3 - "$OUTDIR/test.log" "$N" "$rc" "$took" <<'PY'
import collections, re, sys
log, n, rc, took = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
runs = collections.defaultdict(list)
for line in open(log, errors="replace"):
    m = re.search(r"disk-repeat (\S+) (\d+) fit=(\S+) (.*)$", line.strip())
    if m:
        runs[m.group(1)].append((m.group(3), m.group(4)))
print(f"| volume | runs | verdicts | warn/crit ids, each run | same in every run |")
print("|---|---|---|---|---|")
for case, rs in runs.items():
    fits = ", ".join(f for f, _ in rs)
    ids = " · ".join(i for _, i in rs)
    same = "yes" if len({i for _, i in rs}) == 1 else "NO"
    print(f"| {case} | {len(rs)} | {fits} | {ids} | {same} |")
failed = [l.strip() for l in open(log, errors="replace") if l.startswith("test ") and "FAILED" in l]
print(f"\nN = {n} per volume; cargo test exit {rc}; {took} s. Failed: {failed or 'none'}")
PY
echo "log: $OUTDIR/test.log" >&2
