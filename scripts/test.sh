#!/usr/bin/env bash
# The one command that runs latscope's checks: format, lints, every test.
# Installs what the tests need first (as root, from Debian's packages and PyPI) when
# missing. In strict mode (LATSCOPE_STRICT=1, or CI=true; .ci/run sets it) a tool that
# cannot be installed stops the run here, a test whose tool is missing fails instead
# of skipping (tests/util_require.rs), and a run that printed SKIPPED or ignored a
# test fails: the suite cannot go green with its real-server coverage gone.
set -euo pipefail

# Each part's wall time on stderr, for the suite's time budget (bench/RESULTS.md).
start=$SECONDS
part=$SECONDS
took() {
  echo "--- scripts/test.sh: $1: $((SECONDS - part)) s (from the start: $((SECONDS - start)) s)" >&2
  part=$SECONDS
}
cd "$(dirname "$0")/.."

strict=0
if [ -n "${LATSCOPE_STRICT:-}" ]; then
  [ "$LATSCOPE_STRICT" = 0 ] || strict=1
elif [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
  strict=1
fi
export LATSCOPE_STRICT=$strict

# Whether a program is installed (on PATH, or in the sbin directories an ordinary
# user's PATH leaves out).
have() {
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]
}

need=()
want() { have "$1" || need+=("$2"); }
want curl curl                           # tests/probe.rs: phases agree with curl's
want ip iproute2                         # namespaces and veth pairs (wire, --watch)
want unshare util-linux                  # private network and mount namespaces
want script bsdutils                     # a pty for the disk progress test
want losetup mount                       # loop devices for the disk findings
want mkfs.ext4 e2fsprogs                 # … formatted ext4; chattr for disk_errors.rs
want openssl openssl                     # self-signed certificates for the TLS tests
[ -x /usr/bin/time ] || need+=(time)     # peak memory (VmHWM) of the hostile cases
# Python servers written in the tests, and the DNS responders in tests/data.
[ -x /usr/bin/python3 ] || need+=(python3)
have pip3 || need+=(python3-pip)
# Real servers: nginx (TLS, proxy_cache, the wire tests), the caches' conformance
# suite (Varnish, Apache's mod_cache_disk), Caddy (HTTP/3's real peer).
want nginx nginx
want varnishd varnish
want apache2 apache2
want caddy caddy
want haproxy haproxy                     # a proxy without a cache (tests/no_cache_invented.rs)
want unbound unbound                     # a caching resolver (tests/findings_dns.rs: dns-cold)
# Prometheus (remote-write receiver, promtool), node_exporter and PostgreSQL for the
# ecosystem tests (--out prometheus, --watch, export --format openmetrics).
want prometheus prometheus
want prometheus-node-exporter prometheus-node-exporter
# blackbox_exporter: `latscope serve`'s /probe agrees with it (tests/serve.rs).
want prometheus-blackbox-exporter prometheus-blackbox-exporter
[ -d /usr/lib/postgresql ] || need+=(postgresql)
[ -d /usr/lib/python3/dist-packages/psycopg2 ] || need+=(python3-psycopg2) # tests/watch.rs
# The HTML report's browser test opens it in headless Chromium.
[ -x /usr/bin/chromium ] || need+=(chromium)
# The disk suite's volumes (tests/disk_suite.rs): a FUSE filesystem that adds latency
# (tests/data/slowfs.c, built against libfuse3) under a loop device; SQLite's own
# commits through python3's sqlite3.
want fusermount3 fuse3
[ -f /usr/include/fuse3/fuse.h ] || need+=(libfuse3-dev)
want pkg-config pkg-config
want cc gcc
# The live view's tests drive the real binary in tmux.
want tmux tmux
# Stack detection and advice (tests/stack_*.rs): WordPress on MariaDB and DokuWiki,
# run by a PHP-FPM of the tests' own behind nginx, Apache, Caddy, Varnish and
# HAProxy. The tests start every daemon themselves; the packages' services need not
# run (and are kept from starting while installing, below).
want haproxy haproxy
want php-fpm8.2 php-fpm
want php php-cli
want mariadbd mariadb-server
[ -f /usr/share/wordpress/wp-load.php ] || need+=(wordpress php-mysql)
[ -f /usr/share/dokuwiki/doku.php ] || need+=(dokuwiki)
# … and a Django site behind nginx (tests/stack_django.rs, run by /usr/bin/python3).
[ -d /usr/lib/python3/dist-packages/django ] || need+=(python3-django)
# Two CPU hogs for the repeatability suite (tests/repeatability.rs, issue 29).
want stress-ng stress-ng
[ -x /usr/bin/time ] || need+=(time)  # GNU time: peak memory of an import (tests/schema.rs)

missing() {
  echo "scripts/test.sh: $1" >&2
  if [ "$strict" = 1 ]; then
    echo "scripts/test.sh: strict mode (LATSCOPE_STRICT=1 or CI=true) needs every tool the tests use; stopping" >&2
    exit 1
  fi
  echo "scripts/test.sh: the tests that need it will say SKIPPED" >&2
}

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing: ${need[*]}"
    # Without systemd, invoke-rc.d would start mariadb, php-fpm, nginx … from their
    # init scripts; nothing needs them running (the tests start their own), so a
    # policy-rc.d that says no is in place while installing, unless one is already.
    made_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
      chmod +x /usr/sbin/policy-rc.d
      made_policy=1
    fi
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }; then
      [ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
      missing "apt-get install ${need[*]} failed"
    fi
    [ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  else
    missing "missing ${need[*]} (run as root to install them: sudo bash scripts/test.sh)"
  fi
fi

# From PyPI: httplint (the engine behind REDbot) is the suite's second opinion on
# RFC 9111 (tests/caches.rs); kubernetes-validate checks `latscope k8s job`'s
# manifests against Kubernetes' schemas offline (tests/k8s.rs).
pip_need=()
for p in httplint kubernetes-validate; do
  have "$p" || pip_need+=("$p")
done
if [ ${#pip_need[@]} -gt 0 ]; then
  echo "installing from PyPI: ${pip_need[*]}"
  if ! have pip3 || ! { pip3 install --quiet "${pip_need[@]}" 2>/dev/null \
      || pip3 install --quiet --break-system-packages "${pip_need[@]}"; }; then
    missing "pip3 install ${pip_need[*]} failed"
  fi
  hash -r
  for p in "${pip_need[@]}"; do
    have "$p" || missing "$p is still not on PATH after pip3 install"
  done
fi

took "installs"
cargo fmt --all -- --check
# Clippy's lints run inside the test build: `cargo clippy` is `cargo check` with
# clippy-driver (rustc with clippy's lints) in rustc's place for latscope's own
# crates, its arguments in CLIPPY_ARGS. The same two variables on `cargo test`
# lint the same targets (lib, bin, tests, each also in test mode: all of
# `--all-targets` here) while they are compiled for real, instead of a second,
# check-only compile of every crate (~3.5 of CI's minutes). Exported for every
# cargo below: they are part of the build's fingerprint, and without them the
# test runs would build latscope again. What it changes in the binaries tested:
# clippy-driver compiles latscope's own crates (never the dependencies) with MIR
# optimisations off and without the debug build's alignment and null checks on raw
# pointer dereferences; latscope's dereferences of pointers it did not type itself
# (the io_uring buffer ring's mapping) assert their alignment themselves.
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$clippy_driver" ] || clippy_driver=$(command -v clippy-driver || true)
if [ -z "$clippy_driver" ]; then
  echo "scripts/test.sh: clippy-driver not found (rustup component add clippy)" >&2
  exit 1
fi
# Every latscope unit is compiled through clippy-driver (one compile lints and builds),
# the test harnesses without optimisation (scripts/rustc-wrapper.sh says why).
export LATSCOPE_CLIPPY_DRIVER="$clippy_driver"
export RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/rustc-wrapper.sh"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# A fresh clone (CI) gains nothing from incremental compilation's caches and pays
# for writing them (~10 % of the library's compile).
[ -d target/debug ] || export CARGO_INCREMENTAL=0
# The canary: a known lint under the same driver and arguments fails, so lints that
# stopped running (a renamed variable in a later clippy) cannot pass unseen.
canary=$(mktemp -d "${TMPDIR:-/tmp}/latscope-clippy-XXXXXX")
printf 'pub fn f(v: &Vec<u8>) -> usize { v.len() }\n' >"$canary/lib.rs"
if "$RUSTC_WORKSPACE_WRAPPER" rustc --crate-type lib --edition 2021 --emit=metadata \
    -o "$canary/lib.rmeta" "$canary/lib.rs" >"$canary/out" 2>&1 \
    || ! grep -q 'clippy::ptr.arg' "$canary/out"; then
  cat "$canary/out" >&2
  echo "scripts/test.sh: clippy-driver did not deny a known lint: clippy would not run" >&2
  rm -rf "$canary"
  exit 1
fi
rm -rf "$canary"
took "fmt and the clippy canary"

# LATSCOPE_TESTS_AS_OF=REV (bench/suite-time.sh, never CI): only the integration test
# modules that existed at REV, and no repeatability suite, for issue 27's budget of
# the suite as it stood when the issue was filed (every unit and doc test still runs).
as_of=${LATSCOPE_TESTS_AS_OF:-}
only=()
if [ -n "$as_of" ]; then
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "scripts/test.sh: LATSCOPE_TESTS_AS_OF runs part of the suite; CI runs all of it" >&2
    exit 2
  fi
  while read -r m; do
    only+=("$m::")
  done < <(git ls-tree --name-only "$as_of" tests/ | sed -n 's|^tests/\([a-z0-9_]*\)\.rs$|\1|p' \
             | grep -v -e '^util' -e '^tests$' -e '^repeatability$')
  [ ${#only[@]} -gt 0 ] || { echo "scripts/test.sh: no test modules at $as_of" >&2; exit 2; }
  # Filters match by substring ("caches::" would take in stack_caches::): the modules
  # added since are skipped by name.
  for f in tests/*.rs; do
    m=$(basename "$f" .rs)
    case $m in util* | tests | repeatability) continue ;; esac
    case " ${only[*]} " in *" $m:: "*) ;; *) only+=(--skip "$m::") ;; esac
  done
  echo "--- scripts/test.sh: the suite as of $as_of: its integration test modules (${only[*]}), no repeatability suite" >&2
fi
# Whether a test name filter (`module::`, `module::test`) is part of this run.
selected() {
  [ -z "$as_of" ] && return 0
  case " ${only[*]} " in *" --skip ${1%%::*}:: "*) return 1 ;; esac
  return 0
}

log=$(mktemp "${TMPDIR:-/tmp}/latscope-test-XXXXXX.log")
heavy=$(mktemp "${TMPDIR:-/tmp}/latscope-heavy-XXXXXX.log")
quiet=$(mktemp "${TMPDIR:-/tmp}/latscope-quiet-XXXXXX.log")
searches=$(mktemp "${TMPDIR:-/tmp}/latscope-searches-XXXXXX.log")
trap 'rm -f "$log" "$heavy" "$quiet" "$searches"' EXIT
cargo test --locked --no-run
took "the test build, with clippy's lints"
# Unit tests, then tests/repeatability.rs alone (it runs CPU hogs).
repeatability=(--test repeatability)
[ -z "$as_of" ] || repeatability=()
cargo test --locked --lib --bins "${repeatability[@]}" 2>&1 | tee "$log"
took "unit tests and the repeatability suite"
cargo test --locked --doc 2>&1 | tee -a "$log"
took "doc tests"
# The integration suite in three processes side by side: the heavy tests (wires, disk
# suites, the demo: `#[ignore = "heavy…"]`) one at a time, the capacity searches two
# at a time, and the rest two at a time. They coordinate through the wire lock
# (tests/util_wire.rs, a file lock), so no wire runs beside another or beside a
# capacity search; in one process a test waiting for the lock keeps a test thread
# idle (the searches, which share it among themselves, waited ~100 s of the rest's
# two threads for the heavy tests to let go of it).
# In a session of its own, so that leaving early (Ctrl-C, a failure) stops the whole
# heavy run too: a background job of a script ignores the terminal's Ctrl-C.
# The heavy tests that compare timings closely wait for a third run, with nothing
# beside them: two capacity searches whose brackets must overlap, the FUSE volumes of
# the disk suite (their daemon is a process the neighbours can starve, which latscope's
# own schedstat cannot see), the periodic-spike detector. Beside two neighbours each
# of them failed a clean-clone run once.
alone=()
for t in capacity::find_max_stops_decided_steps_early disk_suite:: \
         findings_real::outages_behind_the_server_are_periodic_spikes; do
  selected "$t" && alone+=("$t")
done
skip=()
for t in "${alone[@]}"; do skip+=(--skip "$t"); done
setsid cargo test --locked --test tests -- --ignored --test-threads=1 "${skip[@]}" "${only[@]}" \
  >"$heavy" 2>&1 &
heavy_pid=$!
searched=(capacity::)
selected capacity:: || searched=(--exact no-test-has-this-name)
setsid cargo test --locked --test tests -- "${searched[@]}" >"$searches" 2>&1 &
searches_pid=$!
# (`|| true`: under `set -e` a failing command in the trap, here the kill of a session
# that already ended, would turn the script's exit status into 1.)
trap 'kill -TERM -- "-$heavy_pid" "-$searches_pid" 2>/dev/null || true; rm -f "$log" "$heavy" "$quiet" "$searches"' EXIT
rest=0
cargo test --locked --test tests -- --skip capacity:: "${only[@]}" 2>&1 | tee -a "$log" || rest=$?
heavy_rc=0
wait "$heavy_pid" || heavy_rc=$?
searches_rc=0
wait "$searches_pid" || searches_rc=$?
took "the integration suite (the rest beside the capacity searches and the heavy tests)"
echo "--- the capacity searches (cargo test --test tests -- capacity::):"
cat "$searches"
cat "$searches" >>"$log"
echo "--- the heavy tests, one at a time (cargo test --test tests -- --ignored --test-threads=1):"
cat "$heavy"
[ "$rest" = 0 ] && [ "$heavy_rc" = 0 ] && [ "$searches_rc" = 0 ] || exit 1
if [ ${#alone[@]} -gt 0 ]; then
  echo "--- the heavy tests that run alone: ${alone[*]}"
  cargo test --locked --test tests -- --ignored --test-threads=1 "${alone[@]}" 2>&1 | tee "$quiet"
fi
took "the heavy tests that run alone"

# Every ignored test is a heavy one, and the two heavy runs ran each of them: the
# count the suite left for them is the count they passed.
count() { grep -E '^test result: ' "$1" | grep -oE "[0-9]+ $2" | awk '{s += $1} END {print s + 0}'; }
left=$(count "$log" ignored)
ran=$(( $(count "$heavy" passed) + $(count "$quiet" passed) ))
if [ "$left" != "$ran" ] || [ "$(count "$heavy" ignored)" != 0 ] || [ "$(count "$quiet" ignored)" != 0 ]; then
  echo "scripts/test.sh: $left test(s) left for the heavy runs, which passed $ran" >&2
  exit 1
fi
cat "$heavy" "$quiet" >>"$log"
# A skipped test says `SKIPPED name: why (hint)` on stderr (never in strict mode,
# where it fails instead).
skipped=$(grep -c '^SKIPPED ' "$log" || true)
if [ "$skipped" -gt 0 ]; then
  grep -E '^SKIPPED ' "$log" >&2 || true
  echo "scripts/test.sh: $skipped test(s) skipped" >&2
  [ "$strict" = 1 ] && { echo "scripts/test.sh: strict mode: a skipped test fails the run" >&2; exit 1; }
fi
exit 0
