#!/bin/sh
# Long fuzzing of latscope's hand-written parsers on stable Rust (issue 28): the
# entry points of latscope::fuzzing, each fed LATSCOPE_FUZZ_CASES seeded random
# inputs and mutations of valid seeds, optimised, niced (the machine is shared).
# cargo test runs the same test with 20,000 cases per target; with a nightly
# toolchain, `cargo +nightly fuzz run TARGET` (fuzz/) runs them coverage-guided.
#
#   bench/fuzz.sh [CASES_PER_TARGET] [SEED]      defaults: 2000000, the date
set -eu
cd "$(dirname "$0")/.."
cases=${1:-2000000}
seed=${2:-$(date +%Y%m%d)}
echo "fuzzing: $cases cases per target, seed $seed"
start=$(date +%s)
LATSCOPE_FUZZ_CASES=$cases LATSCOPE_FUZZ_SEED=$seed \
  nice -n 19 cargo test --release --lib -- fuzzing:: --nocapture
echo "fuzzing: done in $(( $(date +%s) - start )) s ($cases cases x $(grep -c '^    ("' src/fuzzing.rs) targets)"
