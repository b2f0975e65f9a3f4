#!/usr/bin/env bash
# What one blocking round trip costs in instructions, natively, through
# the shim at zero knobs, and through the shim with the knobs given
# (callgrind counts them exactly; timings on a shared machine do not).
#
#   scripts/bench-instr-pingpong.sh [openmpi|mpich] [VAR=VALUE ...]
#
# Runs examples/pingpong.c (8-byte MPI_Send / MPI_Recv round trips, np=2)
# under valgrind --tool=callgrind with 2000 and with 6000 round trips;
# the difference, divided by 4000, leaves out start-up and MPI_Finalize.
# The default knobs, LOGGP_L=1ns, turn on the timed path (the one every
# non-zero row of `loggp calibrate` runs) at no emulated cost. Prints, per
# round trip and rank,
# the shim's own instructions (code in the shim's object, the core's
# inlined into it), which are exact. The MPI calls it makes are not
# counted: their waiting loops move with how long a rank waits, by
# thousands of instructions per round trip from one run to the next
# (callgrind serialises each rank, not the pair). For those, see
# `callgrind_annotate target/bench/instr-pp/cg.knobs-6000.1`.
# Needs valgrind (apt-get install valgrind; not needed by the tests) and
# scripts/build.sh; SHIM=PATH measures another build of the shim. One MPI
# job at a time (flock /tmp/loggp-mpi.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-openmpi}
shift || true
[ $# -gt 0 ] || set -- LOGGP_L=1ns
out=target/bench/instr-pp
. scripts/callgrind-job.sh
cg_init bench-instr-pingpong "$mpi" "$out"
"mpicc.$mpi" -O2 -o "$out/pingpong-$mpi" examples/pingpong.c
for n in 2000 6000; do
  cg_run "$PWD/$out/cg.native-$n" native -- "$out/pingpong-$mpi" "$n" 8
  cg_run "$PWD/$out/cg.zero-$n" shim -- "$out/pingpong-$mpi" "$n" 8
  cg_run "$PWD/$out/cg.knobs-$n" shim "$@" -- "$out/pingpong-$mpi" "$n" 8
done
python3 - "$out" "$mpi" "$*" <<'PY'
import re, subprocess, sys
out, mpi, extra = sys.argv[1], sys.argv[2], sys.argv[3]
trips = 4000

def self_counts(path):
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                          capture_output=True, text=True).stdout
    d, total = {}, 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(([^)]*)\)\s+(.*)$", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = n
            continue
        d[m.group(3).strip()] = d.get(m.group(3).strip(), 0) + n
    return d, total

def shim_self(d):
    # Inlined code is listed under its source file without an object.
    return sum(v for k, v in d.items() if "libloggp" in k or re.search(r"(shim|core)/src/|loggp_(shim|core)::", k))

res = {}
for label in ["native", "zero", "knobs"]:
    for rank in [0, 1]:
        a, ta = self_counts(f"{out}/cg.{label}-2000.{rank}")
        b, tb = self_counts(f"{out}/cg.{label}-6000.{rank}")
        res[label, rank] = {
            "shim": (shim_self(b) - shim_self(a)) / trips,
            "total": (tb - ta) / trips,
        }
print(f"bench-instr-pingpong: {mpi}, np=2, 8-byte blocking round trips; knobs: LOGGP_VT=on {extra}")
print("instructions per round trip (callgrind)      native    zero   knobs")
for rank in [0, 1]:
    r = [res[l, rank] for l in ["native", "zero", "knobs"]]
    print(f"  rank {rank} shim's own code                  {r[0]['shim']:7.0f} {r[1]['shim']:7.0f} {r[2]['shim']:7.0f}")
PY
