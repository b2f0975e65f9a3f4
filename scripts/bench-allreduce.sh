#!/usr/bin/env bash
# Back-to-back MPI_Allreduce calls of COUNT doubles (bench/allreduce_loop.c)
# at np = NP (default 2), natively and through each shim build given with
# LOGGP_VT=on, ROUNDS interleaved rounds (default 5); prints per build the
# median [min..max] of the time per call (us) and of its per-round ratios to
# native and to the first build:
#   scripts/bench-allreduce.sh openmpi|mpich COUNT CALLS LABEL=DIR [LABEL=DIR ...]
# DIR holds libloggp-MPI.so (a checkout's target/release). Example, the
# collectives' scratch before and after a change, 1 MiB:
#   scripts/bench-allreduce.sh openmpi 131072 2000 base=/tmp/base/target/release new=target/release
# One MPI job at a time (flock /tmp/loggp-mpi.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { echo "usage: bench-allreduce.sh openmpi|mpich COUNT CALLS LABEL=DIR [...]" >&2; exit 2; }
mpi=$1 count=$2 calls=$3; shift 3
case $mpi in openmpi | mpich) ;; *) echo "bench-allreduce: MPI \"$mpi\" is not accepted: expected openmpi or mpich" >&2; exit 2 ;; esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/bench; mkdir -p "$out"
prog=$out/allreduce_loop-$mpi raw=$out/allreduce-$mpi.txt
: >"$raw"
"mpicc.$mpi" -O2 -o "$prog" bench/allreduce_loop.c
env_args() { # VAR=VALUE ... as this MPI's launcher takes them
  for v in "$@"; do
    if [ "$mpi" = openmpi ]; then printf '%s\n' -x "$v"; else printf '%s\n' -genv "${v%%=*}" "${v#*=}"; fi
  done
}
net=()
[ "$mpi" = mpich ] && net=(-genv UCX_NET_DEVICES lo)
for _ in $(seq 1 "${ROUNDS:-5}"); do
  for spec in native= "$@"; do
    label=${spec%%=*} dir=${spec#*=}
    [ "$label" != "$spec" ] || { echo "bench-allreduce: \"$spec\" is not accepted: expected LABEL=DIR" >&2; exit 2; }
    vars=()
    if [ "$label" != native ]; then
      lib=$(cd "$dir" && pwd)/libloggp-$mpi.so
      [ -f "$lib" ] || { echo "bench-allreduce: $lib missing" >&2; exit 1; }
      vars=(LD_PRELOAD="$lib" LOGGP_VT=on)
    fi
    mapfile -t a < <(env_args "${vars[@]}")
    line=$(flock /tmp/loggp-mpi.lock timeout 300 "mpirun.$mpi" -np "${NP:-2}" "${net[@]}" "${a[@]}" "$prog" "$count" "$calls")
    echo "$label ${line##*us=}" >>"$raw"
  done
done
python3 - "$raw" "$mpi" "$count" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
labels = list(dict.fromkeys(r[0] for r in rows))
vals = {l: [float(r[1]) for r in rows if r[0] == l] for l in labels}
n = min(len(v) for v in vals.values())
f = lambda xs: f"{st.median(xs):10.3f} [{min(xs):.3f}..{max(xs):.3f}]"
print(f"== {sys.argv[2]}: Allreduce of {sys.argv[3]} doubles, {n} rounds; us per call, median [min..max]; ratios per round")
for l in labels:
    line = f"  {l:10} {f(vals[l][:n])}"
    if l != "native":
        line += f"   /native {f([x / y for x, y in zip(vals[l][:n], vals['native'][:n])])}"
    if l not in ("native", labels[1]):
        line += f"   /{labels[1]} {f([x / y for x, y in zip(vals[l][:n], vals[labels[1]][:n])])}"
    print(line)
PY
