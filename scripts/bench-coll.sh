#!/usr/bin/env bash
# Collectives natively and through the shim, side by side:
# bench/coll_bench.c (osu_allreduce-style time per call, us) at NP ranks
# (default 4), ROUNDS interleaved rounds (default 3) of every spec.
#
#   scripts/bench-coll.sh MPI LABEL=SPEC [LABEL=SPEC ...]
#
# MPI is openmpi or mpich (mpirun.MPI and mpicc.MPI on PATH). SPEC is a
# comma-separated list of VAR=VALUE for that run's ranks, empty for none; a
# first item `shim` preloads SHIM_DIR/libloggp-MPI.so (default
# target/release) with LOGGP_VT=on, `shim:DIR` DIR/libloggp-MPI.so (another
# build, e.g. the one before a change). CALLS (and BATCHES, default 15)
# go to coll_bench: calls per batch (default 200; the 1 MiB Allreduce
# makes a fiftieth of them). Prints per metric and spec the median
# [min..max] over rounds and the median [min..max] of the per-round ratios
# to the first spec. The library's own algorithm beside the shim's, to tell
# the shim's per-message cost from the choice of algorithm (Open MPI 4.1's
# tuned numbering: Allreduce 3 recursive doubling, 4 ring, 6 Rabenseifner;
# Barrier 4 Bruck; MPICH's by name):
#   NP=16 scripts/bench-coll.sh openmpi native= \
#     native_rd=OMPI_MCA_coll_tuned_use_dynamic_rules=1,OMPI_MCA_coll_tuned_allreduce_algorithm=3 \
#     vt=shim vt_rab=shim,LOGGP_COLL_ALLREDUCE=rabenseifner
# One MPI job at a time (flock /tmp/loggp-mpi.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench-coll.sh openmpi|mpich LABEL=SPEC [LABEL=SPEC ...]" >&2; exit 2; }
mpi=$1; shift
case $mpi in openmpi | mpich) ;; *) echo "bench-coll: MPI \"$mpi\" is not accepted: expected openmpi or mpich" >&2; exit 2 ;; esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/bench; mkdir -p "$out"
raw=$out/coll-$mpi.txt; : >"$raw"
prog=$out/coll_bench-$mpi
"mpicc.$mpi" -O2 -o "$prog" bench/coll_bench.c
so=$(cd "${SHIM_DIR:-target/release}" && pwd)/libloggp-$mpi.so
np=${NP:-4}
for _ in $(seq 1 "${ROUNDS:-3}"); do
  for spec in "$@"; do
    label=${spec%%=*} rest=${spec#*=}
    [ "$label" != "$spec" ] || { echo "bench-coll: \"$spec\" is not accepted: expected LABEL=SPEC" >&2; exit 2; }
    vars=()
    IFS=, read -r -a items <<<"$rest"
    for v in "${items[@]}"; do
      if [ "$v" = shim ] || [ "${v%%:*}" = shim ]; then
        lib=$so
        [ "$v" = shim ] || lib=$(cd "${v#shim:}" && pwd)/libloggp-$mpi.so
        [ -f "$lib" ] || { echo "bench-coll: $lib missing" >&2; exit 1; }
        vars+=(LD_PRELOAD="$lib" LOGGP_VT=on)
      elif [ -n "$v" ]; then
        vars+=("$v")
      fi
    done
    a=()
    for v in "${vars[@]}"; do
      if [ "$mpi" = openmpi ]; then a+=(-x "$v"); else a+=(-genv "${v%%=*}" "${v#*=}"); fi
    done
    echo "$label $(flock /tmp/loggp-mpi.lock timeout 300 "mpirun.$mpi" -np "$np" "${a[@]}" "$prog" ${CALLS:-} ${CALLS:+${BATCHES:-15}})" >>"$raw"
  done
done
python3 - "$raw" "$np" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
labels = list(dict.fromkeys(r[0] for r in rows))
vals = {l: [dict(kv.split("=") for kv in r[1:]) for r in rows if r[0] == l] for l in labels}
n = min(len(v) for v in vals.values())
def f(xs):
    return f"{st.median(xs):10.3f} [{min(xs):.3f}..{max(xs):.3f}]"
print(f"== {n} rounds at np={sys.argv[2]}; us per call, median [min..max]; ratios per round")
for k in vals[labels[0]][0]:
    print(f"  {k}")
    for l in labels:
        if any(k not in vals[l][i] for i in range(n)):
            print(f"    {l:12} (a run failed: {sys.argv[1]})")
            continue
        xs = [float(vals[l][i][k]) for i in range(n)]
        line = f"    {l:12} {f(xs)}"
        if l != labels[0] and all(k in v for v in vals[labels[0]][:n]):
            line += f"   /{labels[0]} {f([x / float(vals[labels[0]][i][k]) for i, x in enumerate(xs)])}"
        print(line)
PY
