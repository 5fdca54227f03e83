#!/usr/bin/env bash
# RUSTC_WORKSPACE_WRAPPER for scripts/test.sh: every latscope unit goes through
# clippy-driver (its lints deny warnings: one compile lints and builds), and the
# test harnesses (`--test`: the unit tests and the integration test binaries) are
# compiled without optimisation.
#
# Why (issue 27, bench/RESULTS.md "The suite's time, part 5"): the library is
# compiled twice, once as itself (for the binary the integration tests run) and once
# with its unit tests, and at opt-level 1 each took ~150 s of a 2-core machine, most
# of it in LLVM. The binary keeps opt-level 1: the lab's wire forwards every packet
# in latscope's own code, and a test at 600 requests/s over it measured the debug
# build, not the wire (tests/shards_wire.rs). The harnesses only call into it, and
# their own code is checked the same either way (debug assertions stay on).
#
# Cargo runs `$RUSTC_WORKSPACE_WRAPPER $RUSTC ARGS…`; LATSCOPE_CLIPPY_DRIVER names
# clippy-driver.
set -euo pipefail
driver=${LATSCOPE_CLIPPY_DRIVER:?scripts/rustc-wrapper.sh: LATSCOPE_CLIPPY_DRIVER names clippy-driver}
args=("$@")
harness=0
for a in "$@"; do
  [ "$a" = --test ] && harness=1
done
if [ "$harness" = 1 ]; then
  for i in "${!args[@]}"; do
    [ "${args[$i]}" = opt-level=1 ] && args[$i]=opt-level=0
  done
fi
exec "$driver" "${args[@]}"
