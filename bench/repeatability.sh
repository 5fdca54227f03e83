#!/usr/bin/env bash
# Issue 29's repeatability bench: the repeatability suite (tests/repeatability.rs:
# nginx static, a MISS-only nginx proxy with --origin, a hitting Varnish with
# --origin, the lab's planted cold start) with N diagnoses per case, once with two
# CPU hogs (stress-ng --cpu 2) and once without; per case and finding, how many of
# the N runs it fired in, and whether every run had the same warn/crit ids.
#
#   bench/repeatability.sh
#
# Env: N (10)  LATSCOPE_BIN (the suite's own build; e.g. another worktree's binary
#      to compare)  OUTDIR (/tmp/bench-repeatability/<timestamp>)
# Prints a Markdown table for bench/RESULTS.md. A case that differs between runs
# fails its test; the script goes on and counts it.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
N=${N:-10}
OUTDIR=${OUTDIR:-/tmp/bench-repeatability/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"
cd "$ROOT"

for hogs in 1 0; do
    LATSCOPE_REPEAT=$N LATSCOPE_HOGS=$hogs LATSCOPE_REPEAT_LOG="$OUTDIR/runs.jsonl" \
        cargo test --test repeatability -- --test-threads=1 \
        >"$OUTDIR/test-hogs$hogs.log" 2>&1 || true
done

python3 - "$OUTDIR/runs.jsonl" "$N" <<'EOF'
import collections, json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r in runs:
    by[(r["case"], r["hogs"])].append(r)
print(f"| case | hogs | runs | identical warn/crit | findings (runs fired of {sys.argv[2]}) |")
print("|---|---|---|---|---|")
for (case, hogs), rs in sorted(by.items()):
    sets = collections.Counter(tuple(r["serious"]) for r in rs)
    same = sets.most_common(1)[0][1]
    fired = collections.Counter(f for r in rs for f in set(r["findings"]))
    cells = ", ".join(f"{f} {n}/{len(rs)}" for f, n in sorted(fired.items())) or "none"
    print(f"| {case} | {'stress-ng --cpu 2' if hogs else 'none'} | {len(rs)} | {same}/{len(rs)} | {cells} |")
EOF
echo "runs: $OUTDIR/runs.jsonl" >&2
