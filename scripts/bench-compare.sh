#!/usr/bin/env bash
# Side-by-side cost of virtual time at zero knobs for several shim builds,
# np=2, Debian's two MPIs (MPIS="openmpi mpich"), ROUNDS interleaved rounds
# (default 5) of: native, then each build with LOGGP_VT=on.
#
#   scripts/bench-compare.sh LABEL=DIR [LABEL=DIR ...]
#
# DIR holds libloggp-openmpi.so and libloggp-mpich.so (a checkout's
# target/release, or a copy). A spec may add variables for that build's
# runs: LABEL=DIR,VAR=VALUE[,VAR=VALUE...] (e.g. nosplit=target/release,
# LOGGP_SPLIT=off). Prints per MPI and build the median [min..max] over
# rounds of bench/shim_bench.c's 8 B and 1 MiB half round trips (us),
# message rate (M msg/s), time per MPI_Send and per MPI_Recv of an arrived
# message (ns) and 16 KiB and 1 MiB streaming bandwidth (GB/s). One MPI job at a time
# (flock /tmp/loggp-mpi.lock). Example, before and after a change:
#   git worktree add /tmp/base HEAD~1 && (cd /tmp/base && bash scripts/build-shims.sh)
#   scripts/bench-compare.sh before=/tmp/base/target/release after=target/release
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench-compare.sh LABEL=DIR [LABEL=DIR ...]" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/bench; mkdir -p "$out"
raw=$out/compare.txt; : >"$raw"
for mpi in ${MPIS:-openmpi mpich}; do
  b=$out/shim_bench-$mpi
  "mpicc.$mpi" -O2 -o "$b" bench/shim_bench.c
  for spec in "$@"; do
    dir=${spec#*=} dir=${dir%%,*}
    [ -f "$dir/libloggp-$mpi.so" ] || { echo "bench-compare: $dir/libloggp-$mpi.so missing" >&2; exit 1; }
  done
  for _ in $(seq 1 "${ROUNDS:-5}"); do
    echo "$mpi native $(flock /tmp/loggp-mpi.lock timeout 120 "mpirun.$mpi" -np 2 "$b" 400)" >>"$raw"
    for spec in "$@"; do
      label=${spec%%=*} dir=${spec#*=} dir=${dir%%,*}
      so=$(cd "$dir" && pwd)/libloggp-$mpi.so
      vars=(LD_PRELOAD="$so" LOGGP_VT=on)
      rest=${spec#*=}
      if [ "$rest" != "$dir" ]; then IFS=, read -r -a more <<<"${rest#*,}"; vars+=("${more[@]}"); fi
      a=()
      for v in "${vars[@]}"; do
        if [ "$mpi" = openmpi ]; then a+=(-x "$v"); else a+=(-genv "${v%%=*}" "${v#*=}"); fi
      done
      echo "$mpi $label $(flock /tmp/loggp-mpi.lock timeout 120 "mpirun.$mpi" -np 2 "${a[@]}" "$b" 400)" >>"$raw"
    done
  done
done
python3 - "$raw" <<'PY'
import statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    mpi, label, *kv = line.split()
    rows.setdefault((mpi, label), []).append({k: float(v) for k, v in (x.split("=") for x in kv)})
for (mpi, label), ds in rows.items():
    def f(k):
        xs = [d[k] for d in ds]
        return f"{st.median(xs):.3f} [{min(xs):.3f}..{max(xs):.3f}]"
    print(f"{mpi:8} {label:10} half_rtt_8 {f('half_rtt_8')}  rate_8 {f('rate_8')}  "
          f"send_ns {f('send_ns')}  recv_ns {f('recv_ns')}  bw_16k {f('bw_16k')}  bw_1m {f('bw_1m')}  "
          f"half_rtt_1m {f('half_rtt_1m')}")
PY
