#!/usr/bin/env bash
# MPI_Sendrecv exchanges between two ranks (bench/exchange.c) of each SIZE,
# natively and through each shim build given with LOGGP_VT=on, ROUNDS
# interleaved rounds (default 5); prints per size and build the median
# [min..max] of the time per exchange (us), and of its per-round ratio to
# native, its per-round excess over native (us) and its ratio to the first
# build:
#   scripts/bench-exchange.sh openmpi|mpich LABEL=DIR[,VAR=VALUE...] [...] -- SIZE...
# DIR holds libloggp-MPI.so (a checkout's target/release); VAR=VALUE pairs
# go to that build's runs (a later LOGGP_VT replaces the default on),
# e.g. nosplit=target/release,LOGGP_SPLIT=off. Example, the
# light lane's mid slots against the build before them:
#   scripts/bench-exchange.sh mpich base=/tmp/base new=target/release -- 8 512 2048 3900 4096
# Each round also times, natively, the size each message has on the shim's
# wire (`native@wire`: SIZE plus its 16-byte compact header up to 16 bytes,
# plus the 32-byte header above; exact within the light lane, up to 4000
# bytes on Open MPI and 16352 on MPICH), and each build's time over it:
# what the library charges for the header's bytes (a message's size class
# in its shared-memory transport) apart from the shim's own cost.
# One MPI job at a time (flock /tmp/loggp-mpi.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: bench-exchange.sh openmpi|mpich LABEL=DIR[,VAR=VALUE...] [...] -- SIZE..." >&2; exit 2; }
[ $# -ge 3 ] || usage
mpi=$1; shift
case $mpi in openmpi | mpich) ;; *) echo "bench-exchange: MPI \"$mpi\" is not accepted: expected openmpi or mpich" >&2; exit 2 ;; esac
builds=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do builds+=("$1"); shift; done
[ $# -ge 2 ] || usage
shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/bench; mkdir -p "$out"
prog=$out/exchange-$mpi raw=$out/exchange-$mpi.txt
: >"$raw"
"mpicc.$mpi" -O2 -o "$prog" bench/exchange.c
net=() bind=()
[ "$mpi" = mpich ] && net=(-genv UCX_NET_DEVICES lo)
[ "$mpi" = openmpi ] && bind=(--bind-to core)
# The shim's wire size of each SIZE (engine/wire.rs: HDR 32, COMPACT 16,
# COMPACT_MAX 16), and back.
wire=()
declare -A of_wire
for s in "$@"; do
  w=$((s <= 16 ? s + 16 : s + 32)); wire+=("$w"); of_wire[$w]=$s
done
for round in $(seq 1 "${ROUNDS:-5}"); do
  for spec in native= "${builds[@]}"; do
    label=${spec%%=*} rest=${spec#*=}
    [ "$label" != "$spec" ] || { echo "bench-exchange: \"$spec\" is not accepted: expected LABEL=DIR[,VAR=VALUE...]" >&2; exit 2; }
    dir=${rest%%,*} more=()
    if [ "$rest" != "$dir" ]; then IFS=, read -r -a more <<<"${rest#*,}"; fi
    vars=()
    if [ "$label" != native ]; then
      lib=$(cd "$dir" && pwd)/libloggp-$mpi.so
      [ -f "$lib" ] || { echo "bench-exchange: $lib missing" >&2; exit 1; }
      for kv in "LD_PRELOAD=$lib" LOGGP_VT=on "${more[@]}"; do
        case $kv in *=*) ;; *) echo "bench-exchange: \"$kv\" in \"$spec\" is not accepted: expected VAR=VALUE" >&2; exit 2 ;; esac
        if [ "$mpi" = openmpi ]; then vars+=(-x "$kv"); else vars+=(-genv "${kv%%=*}" "${kv#*=}"); fi
      done
    fi
    flock /tmp/loggp-mpi.lock timeout 300 "mpirun.$mpi" -np 2 "${bind[@]}" "${net[@]}" "${vars[@]}" "$prog" "$@" \
      | while read -r size us; do echo "$round $label $size $us"; done >>"$raw"
  done
  flock /tmp/loggp-mpi.lock timeout 300 "mpirun.$mpi" -np 2 "${bind[@]}" "${net[@]}" "$prog" "${wire[@]}" \
    | while read -r w us; do echo "$round native@wire ${of_wire[$w]} $us"; done >>"$raw"
done
python3 - "$raw" "$mpi" <<'PY'
import collections, statistics as st, sys
v = collections.defaultdict(dict)
labels = []
for line in open(sys.argv[1]):
    r, label, size, us = line.split()
    v[(int(size), label)][int(r)] = float(us)
    if label not in labels:
        labels.append(label)
f = lambda xs: f"{st.median(xs):.3f} [{min(xs):.3f}..{max(xs):.3f}]"
print(f"== {sys.argv[2]}: MPI_Sendrecv exchange, np=2; us per exchange, median [min..max] over rounds; ratios to native, time over native and over native@wire (the shim's wire size, natively) per round")
for size in sorted({k[0] for k in v}):
    nat = v[(size, "native")]
    print(f"  {size} B")
    for l in labels:
        me = v[(size, l)]
        rs = sorted(set(me) & set(nat))
        line = f"    {l:10} {f([me[r] for r in rs])}"
        if l not in ("native", "native@wire"):
            line += f"   /native {f([me[r] / nat[r] for r in rs])}   over native {f([me[r] - nat[r] for r in rs])} us"
            wire = v[(size, "native@wire")]
            rw = sorted(set(me) & set(wire))
            if rw:
                line += f"   over native@wire {f([me[r] - wire[r] for r in rw])} us"
            first = v[(size, labels[1])]
            if l != labels[1]:
                line += f"   /{labels[1]} {f([me[r] / first[r] for r in rs if r in first])}"
        print(line)
PY
