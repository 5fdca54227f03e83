#!/usr/bin/env bash
# latscope disk vs fio, one after the other on the same preconditioned file:
# 4k randread and randrw 70/30 at iodepth 1 and 32, O_DIRECT, same engine
# (io_uring). Prints a markdown table of IOPS and p50/p99 ratios (latscope / fio).
#
#   bench/disk.sh [DIR]          DIR: where the 1 GiB test file goes (a real
#                                filesystem; default target/bench-disk)
#   env: SIZE=1G RUNTIME=10 REPS=3 LATSCOPE=target/release/latscope NICE=-10
#        ENGINE=io_uring (or psync: fio psync with numjobs=iodepth vs latscope threads)
#        FIO_BATCH=4: fio submits up to 4 I/Os per system call and reaps up to iodepth,
#        as latscope's io_uring engine does (fio's default is 1 per call; on a
#        CPU-bound device such as a RAM-backed loop device that alone moves IOPS ~1.3×)
#
# Each configuration runs REPS times, fio and latscope alternating, and the table
# shows the medians (a shared 2-core machine is noisy; one pair alone is not enough).
#
# Latency definitions: latscope times an I/O from just before the system call that
# submits it to the reaped completion. fio's clat starts after that call returns
# (it leaves the submission out); its lat starts earlier, when fio prepares the I/O
# (it adds fio's own bookkeeping). latscope sits between the two, so both ratios
# are shown; clat is what fio prints by default and what fio users quote.
# Needs fio (apt-get install fio, or /work/shared/bench/peers-install.sh) and python3.
set -euo pipefail

cd "$(dirname "$0")/.."
DIR=${1:-$PWD/target/bench-disk}
SIZE=${SIZE:-1G}
RUNTIME=${RUNTIME:-10}
REPS=${REPS:-3}
ENGINE=${ENGINE:-io_uring}
FIO_BATCH=${FIO_BATCH:-}
LATSCOPE=${LATSCOPE:-target/release/latscope}
# Both tools run at the same raised priority (as root) so other work on a shared
# machine disturbs them less.
NICE=${NICE:--10}
[[ $(id -u) == 0 ]] || NICE=0
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
cargo build --release -q
case $ENGINE in
  io_uring) L_ENGINE=uring ;;
  psync) L_ENGINE=threads ;;   # fio psync ~ latscope threads (one thread per slot)
  *) echo "ENGINE must be io_uring or psync" >&2; exit 2 ;;
esac

mkdir -p "$DIR"
FILE=$DIR/bench.dat
OUT=$(mktemp -d /tmp/latscope-bench-disk.XXXXXX)
trap 'rm -rf "$OUT" "$FILE"' EXIT

echo "# laying out and preconditioning $FILE ($SIZE) with fio" >&2
fio --name=precondition --filename="$FILE" --size="$SIZE" --rw=write --bs=1M \
    --direct=1 --ioengine="$ENGINE" --iodepth=8 --end_fsync=1 --output=/dev/null

row() { # pattern iodepth
  local rw=$1 qd=$2 rep
  local psync_jobs=1 fio_qd=$qd
  if [[ $ENGINE == psync ]]; then psync_jobs=$qd; fio_qd=1; fi
  for rep in $(seq "$REPS"); do
    local fjob="$OUT/fio-$rw-$qd-$rep.json" ljob="$OUT/latscope-$rw-$qd-$rep.json"
    local fio_cmd=(fio --name=bench --filename="$FILE" --size="$SIZE" --rw="$rw"
      --rwmixread=70 --bs=4k --iodepth="$fio_qd" --numjobs="$psync_jobs" --group_reporting
      --direct=1 --ioengine="$ENGINE" --time_based --runtime="$RUNTIME" --norandommap
      --randrepeat=0 --lat_percentiles=1 --output-format=json --output="$fjob")
    [[ -n $FIO_BATCH ]] && fio_cmd+=(--iodepth_batch_submit="$FIO_BATCH" --iodepth_batch_complete_max="$fio_qd")
    echo "# ${fio_cmd[*]}" >&2
    nice -n "$NICE" "${fio_cmd[@]}"
    local l_cmd=("$LATSCOPE" disk "$FILE" --pattern "$rw" --mix 70 --bs 4k --iodepth "$qd"
      --direct --engine "$L_ENGINE" -d "${RUNTIME}s" --json --no-save)
    [[ $rw == randrw ]] && l_cmd+=(--write)
    echo "# ${l_cmd[*]}" >&2
    nice -n "$NICE" "${l_cmd[@]}" > "$ljob"
  done
  python3 - "$rw" "$qd" "$OUT" "$REPS" <<'PY'
import json, statistics, sys
rw, qd, out, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fio = [json.load(open(f"{out}/fio-{rw}-{qd}-{r}.json"))["jobs"][0] for r in range(1, reps + 1)]
lat = [json.load(open(f"{out}/latscope-{rw}-{qd}-{r}.json")) for r in range(1, reps + 1)]
med = statistics.median
def pct(d, q):
    return d["percentile"][q] / 1000.0  # ns -> us
for d in (["read"] if rw == "randread" else ["read", "write"]):
    fi = med(j[d]["iops"] for j in fio)
    li = med(j[d]["iops"] for j in lat)
    fl50 = med(pct(j[d]["lat_ns"], "50.000000") for j in fio)
    fl99 = med(pct(j[d]["lat_ns"], "99.000000") for j in fio)
    fc50 = med(pct(j[d]["clat_ns"], "50.000000") for j in fio)
    fc99 = med(pct(j[d]["clat_ns"], "99.000000") for j in fio)
    l50 = med(j[d]["lat_us"]["p50"] for j in lat)
    l99 = med(j[d]["lat_us"]["p99"] for j in lat)
    def spread(js, key):
        v = [j[d]["iops"] for j in js]
        return f"{min(v)/1000:.1f}k–{max(v)/1000:.1f}k"
    print(f"| {rw} | {qd} | {d} | {fi:,.0f} ({spread(fio, 'iops')}) "
          f"| {li:,.0f} ({spread(lat, 'iops')}) | **{li/fi:.2f}** "
          f"| {fc50:.0f} / {fl50:.0f} | {l50:.0f} | **{l50/fc50:.2f}** / {l50/fl50:.2f} "
          f"| {fc99:.0f} / {fl99:.0f} | {l99:.0f} | **{l99/fc99:.2f}** / {l99/fl99:.2f} |")
PY
}

echo "| pattern | iodepth | dir | fio IOPS (range) | latscope IOPS (range) | ratio | fio p50 µs clat / lat | latscope p50 µs | ratio vs clat / lat | fio p99 µs clat / lat | latscope p99 µs | ratio vs clat / lat |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for rw in randread randrw; do
  for qd in 1 32; do
    row "$rw" "$qd"
  done
done
