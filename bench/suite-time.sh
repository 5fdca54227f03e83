#!/usr/bin/env bash
# Issue 27's two budgets for the suite on 2 cores, each measured the way CI runs it:
# `scripts/test.sh` in a fresh clone of HEAD (a clean build, no incremental caches),
# strict (a skipped test fails the run), one after the other, nothing else running.
#
#   filed  the suite as it stood when issue 27 was filed (8b3d298: "today's suite …
#          ≤ 12 minutes"): every unit and doc test, and the integration tests of the
#          modules that existed then (LATSCOPE_TESTS_AS_OF, scripts/test.sh), in the
#          same three processes and the same alone phase; not the wave's new suites
#          (repeatability, disk_suite, stack_*, page, serve, edge_hop, …).
#   whole  all of it (≤ 25 minutes), as CI runs it.
#
#   bench/suite-time.sh [filed|whole|both]      (as root, like CI; default both)
#
# Prints each phase's wall time (scripts/test.sh's `took` lines) and the total, with
# the load average before and after; the logs stay in the printed directory.
set -euo pipefail
cd "$(dirname "$0")/.."
FILED=8b3d298
what=${1:-both}
case "$what" in
  filed | whole | both) ;;
  *) echo "usage: bench/suite-time.sh [filed|whole|both]" >&2; exit 2 ;;
esac
out=$(mktemp -d "${TMPDIR:-/tmp}/latscope-suite-time-XXXXXX")
# As CI's clone is: readable by all, for the tests that run latscope as nobody.
chmod 755 "$out"
echo "logs: $out; HEAD $(git rev-parse --short HEAD); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"

run() { # NAME [VAR=VALUE…]
  local name=$1
  shift
  rm -rf "$out/$name"
  git clone -q . "$out/$name"
  echo "$name: load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  local rc=0 start=$SECONDS
  (cd "$out/$name" && env -u CI "$@" LATSCOPE_STRICT=1 bash scripts/test.sh) \
    >"$out/$name.log" 2>&1 </dev/null || rc=$?
  echo "$name: rc=$rc, $((SECONDS - start)) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -- '^--- scripts/test.sh:' "$out/$name.log" | sed 's/^--- scripts\/test.sh: /  /'
  grep -E '^test result: ' "$out/$name.log" \
    | awk '{p += $4; f += $6} END {print "  tests: " p " passed, " f " failed"}'
  # The clone's target directory is ~10 GB; the log is what is kept.
  rm -rf "$out/$name"
  return 0
}

[ "$what" = whole ] || run filed LATSCOPE_TESTS_AS_OF="$FILED"
[ "$what" = filed ] || run whole
