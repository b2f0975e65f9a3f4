#!/usr/bin/env bash
# Mid-sized messages (above the shim's 224-byte slots, up to
# LOGGP_INLINE_MAX), where the shim stages or sends a struct datatype:
# bench/stage_bw.c at np=2, natively and through each shim build given
# with LOGGP_VT=on, ROUNDS interleaved rounds (default 3), Debian's two
# MPIs (MPIS="openmpi mpich"), sizes SIZES (default "1024 4096 8192 16384"):
#   - streaming: windows of 64 Isends of SIZE bytes from and into distinct
#     parts of one buffer (`stage_bw direct SIZE 500`), GB/s;
#   - half round trip of SIZE bytes (`stage_bw pingpong SIZE 2000`), us.
# Prints per MPI and size the median [min..max] of each, and per build the
# median of its per-round ratios to native. With NATIVE_MODES=1 also the
# piggyback's forms without the shim (`stage_bw staged|rstruct|sstruct|both`:
# which side stages and which sends or receives a struct datatype).
#
#   scripts/bench-midsize.sh LABEL=DIR[,VAR=VALUE...] [LABEL=DIR ...]
#
# DIR holds libloggp-openmpi.so and libloggp-mpich.so (a checkout's
# target/release). Example, before and after a change:
#   scripts/bench-midsize.sh base=/tmp/base/target/release new=target/release
# One MPI job at a time (flock /tmp/loggp-mpi.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench-midsize.sh LABEL=DIR[,VAR=VALUE...] [...]" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/bench; mkdir -p "$out"
raw=$out/midsize.txt; : >"$raw"
for mpi in ${MPIS:-openmpi mpich}; do
  prog=$out/stage_bw-$mpi
  "mpicc.$mpi" -O2 -Wno-stringop-overflow -o "$prog" bench/stage_bw.c
  for spec in "$@"; do
    dir=${spec#*=}; dir=${dir%%,*}
    [ -f "$dir/libloggp-$mpi.so" ] || { echo "bench-midsize: $dir/libloggp-$mpi.so missing" >&2; exit 1; }
  done
  job() { # job LABEL SPEC|"" ARGS...: one line "mpi label size metric value"
    local label=$1 spec=$2; shift 2
    local args=(-np 2)
    if [ "$mpi" = mpich ]; then args+=(-genv UCX_NET_DEVICES lo); fi
    if [ -n "$spec" ]; then
      local dir=${spec#*=} extra=()
      dir=${dir%%,*}
      case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
      if [ "$spec" != "${spec#*,}" ]; then IFS=, read -ra extra <<<"${spec#*,}"; fi
      local vars=("LD_PRELOAD=$dir/libloggp-$mpi.so" LOGGP_VT=on "${extra[@]}")
      for kv in "${vars[@]}"; do
        if [ "$mpi" = openmpi ]; then args+=(-x "$kv"); else args+=(-genv "${kv%%=*}" "${kv#*=}"); fi
      done
    fi
    flock /tmp/loggp-mpi.lock timeout 300 "mpirun.$mpi" "${args[@]}" "$prog" "$@" |
      sed -n 's/^mode=\([a-z]*\) size=\([0-9]*\) [a-z_]*=\([0-9.]*\)$/\2 \1 \3/p' |
      while read -r size m v; do echo "$mpi $label $size $m $v"; done
  }
  for round in $(seq "${ROUNDS:-3}"); do
    for n in ${SIZES:-1024 4096 8192 16384}; do
      if [ -n "${NATIVE_MODES:-}" ]; then
        for m in staged rstruct sstruct both; do
          job "native-$m" "" "$m" "$n" 500 | sed "s/^/$round /" >>"$raw"
        done
      fi
      for spec in native "$@"; do
        label=${spec%%=*}
        [ "$spec" = native ] && s="" || s=$spec
        job "$label" "$s" direct "$n" 500 | sed "s/^/$round /" >>"$raw"
        job "$label" "$s" pingpong "$n" 2000 | sed "s/^/$round /" >>"$raw"
      done
    done
  done
done
python3 - "$raw" <<'PY'
import collections, statistics as st, sys
rows = collections.defaultdict(dict)   # (mpi, size, metric) -> label -> {round: value}
order = []
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) != 6:
        continue
    rnd, mpi, label, size, metric, v = p
    key = (mpi, int(size), {"direct": "GB/s", "pingpong": "half_rtt us"}.get(metric, metric + " GB/s"))
    rows[key].setdefault(label, {})[rnd] = float(v)
    if label not in order:
        order.append(label)
for key in sorted(rows):
    mpi, size, metric = key
    print(f"== {mpi} {size} B, {metric}")
    by = rows[key]
    nat = by.get("native", {})
    for label in order:
        if label not in by:
            continue
        vals = list(by[label].values())
        line = f"  {label:14} {st.median(vals):9.3f} [{min(vals):.3f}..{max(vals):.3f}]"
        ratios = [v / nat[r] for r, v in by[label].items() if r in nat and nat[r] > 0]
        if label != "native" and ratios and not label.startswith("native-"):
            line += f"   /native {st.median(ratios):.3f} [{min(ratios):.3f}..{max(ratios):.3f}]"
        print(line)
PY
