#!/usr/bin/env bash
# On the 16-core device machine, from the bundle of scripts/device-pack.sh
# (run: `bash scripts/device-bench.sh`, carry: [".device-bundle"]): issue
# 12's figures, written to $OUT/bench.txt with the raw rows beside it.
#   1. the clock source and the side calls' cost there (bench/side_calls.c);
#   2. scripts/bench-compare.sh at COLL_NP=16: Open MPI 4.1.6 (virtual time
#      at zero and the pass-through) and MPICH 5.0 (virtual time at zero);
#   3. scripts/bench-coll.sh at 16, 8 and 4 ranks: the library's own
#      Allreduce algorithm (recursive doubling, Rabenseifner's) beside the
#      shim's, to tell the shim's cost per message from the algorithm;
#   4. the collective model check at P = 2, 4, 8, 16 (Open MPI; sizes up to
#      64 KiB, so Rabenseifner's Allreduce is checked too), its report in
#      $OUT/coll.txt and its directory in $OUT/coll.tgz.
# Each part has its own timeout; the whole takes about 2-3 minutes there.
set -u
cd "$(dirname "$0")/.."
source .device-bundle/setup.sh
export OMPI_MCA_hwloc_base_use_hwthreads_as_cpus=1 SHIM_DIR=.device-bundle/shims
out=${OUT:-target/device}; mkdir -p "$out"
log=$out/bench.txt; : >"$log"
t0=$(date +%s)
el() { echo "[+$(($(date +%s) - t0))s] $*" | tee -a "$log"; }
{
  nproc; lscpu | grep -E "Model name|Core|Socket"; mpirun --version | head -1
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
  mpicc.openmpi -O2 -o /tmp/side_calls bench/side_calls.c && timeout 30 mpirun.openmpi -np 1 /tmp/side_calls
} >>"$log" 2>&1
S=$SHIM_DIR
el "bench-compare openmpi COLL_NP=16"
MPIS=openmpi COLL_NP=16 ROUNDS=${ROUNDS:-5} timeout 200 scripts/bench-compare.sh vt=$S pt=$S,LOGGP_VT=off >>"$log" 2>&1
cp target/bench/compare.txt "$out/raw-compare-openmpi.txt"
el "bench-compare mpich COLL_NP=16"
MPIS=mpich COLL_NP=16 ROUNDS=3 timeout 120 scripts/bench-compare.sh vt=$S >>"$log" 2>&1
cp target/bench/compare.txt "$out/raw-compare-mpich.txt"
D=OMPI_MCA_coll_tuned_use_dynamic_rules=1,OMPI_MCA_coll_tuned_allreduce_algorithm
for np in 16 8 4; do
  el "bench-coll openmpi np=$np"
  NP=$np ROUNDS=3 timeout 120 scripts/bench-coll.sh openmpi native= n_rd=$D=3 n_rab=$D=6 \
    vt=shim vt_rd=shim,LOGGP_COLL_ALLREDUCE=recursive_doubling \
    vt_rab=shim,LOGGP_COLL_ALLREDUCE=rabenseifner >>"$log" 2>&1
done
M=MPIR_CVAR_DEVICE_COLLECTIVES=none,MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM
el "bench-coll mpich np=16"
NP=16 ROUNDS=3 timeout 120 scripts/bench-coll.sh mpich native= n_rd=$M=recursive_doubling \
  n_rab=$M=reduce_scatter_allgather vt=shim vt_rd=shim,LOGGP_COLL_ALLREDUCE=recursive_doubling >>"$log" 2>&1
el "calibrate --collectives --np 2,4,8,16"
(cd .device-bundle && timeout 200 target/release/loggp calibrate --collectives --np 2,4,8,16 --quick \
  --sizes 8,1024,16KiB,64KiB --out /tmp/loggp-coll >"$out/coll.txt" 2>&1; echo "rc=$?" >>"$out/coll.txt")
tar czf "$out/coll.tgz" -C /tmp loggp-coll 2>/dev/null
el done
