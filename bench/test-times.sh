#!/usr/bin/env bash
# How long the integration suite takes, test by test: runs the test binary once on
# one thread, heavy tests included (every test's own time, no waiting on the wire
# lock or on a neighbour), then as scripts/test.sh runs it — the heavy tests
# (`#[ignore = "heavy…"]`) one at a time in a process of their own beside the rest on
# the machine's threads — and prints the top tests, the sum and the walls with the
# load average before and after.
#
#   bench/test-times.sh [TOP]        (TOP: how many rows, default 20)
#
# libtest's per-test times (`--report-time`, JSON) are unstable options: the test
# binary accepts them at run time with RUSTC_BOOTSTRAP=1, on a stable toolchain. Two
# full runs never overlap: both hold /tmp/latscope-fullsuite.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
top=${1:-20}
out=$(mktemp -d "${TMPDIR:-/tmp}/latscope-test-times-XXXXXX")
bin=$(cargo test --no-run --message-format json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "tests" and m.get("executable"):
        print(m["executable"])')
run() { # NAME ARGS…
  local name=$1; shift
  echo "$name: load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  local start=$SECONDS
  env RUSTC_BOOTSTRAP=1 "$bin" "$@" \
    -Z unstable-options --format json --report-time >"$out/$name.json" 2>"$out/$name.err" || true
  echo "$name: $((SECONDS - start)) s wall; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
exec 9>/tmp/latscope-fullsuite.lock
flock 9
run serial --test-threads=1 --include-ignored
start=$SECONDS
run heavy --ignored --test-threads=1 &
run rest
wait
echo "heavy and rest side by side: $((SECONDS - start)) s wall"
python3 - "$out/serial.json" "$top" <<'EOF'
import json, sys
rows, failed = [], []
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("type") == "test" and "exec_time" in d:
        rows.append((d["exec_time"], d["name"]))
        if d["event"] == "failed":
            failed.append(d["name"])
rows.sort(reverse=True)
print(f"{len(rows)} tests, {sum(t for t, _ in rows):.0f} s on one thread; failed: {failed or 'none'}")
print("| s | test |\n|---:|---|")
for t, n in rows[: int(sys.argv[2])]:
    print(f"| {t:.1f} | {n} |")
EOF
echo "JSON and stderr of both runs: $out"
