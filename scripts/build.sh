#!/usr/bin/env bash
# Builds everything in release mode:
#   target/release/loggp                 the command
#   target/release/libloggp-openmpi.so   the shim for Open MPI 4.1
#   target/release/libloggp-mpich.so     the shim for MPICH 4.0
#   target/release/loggp-prtt-{openmpi,mpich}  the calibration kernel
# Each shim has its own target directory: its build script probes one MPI's
# headers and cargo would not rebuild when the MPI changes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --quiet -p loggp
for mpi in openmpi mpich; do
  LOGGP_SHIM_MPI=$mpi cargo build --release --quiet -p loggp-shim --target-dir "target/shim-$mpi"
  cp -f "target/shim-$mpi/release/libloggp_shim.so" "target/release/libloggp-$mpi.so"
  if [ -f calibrate/prtt.c ]; then
    "mpicc.$mpi" -O2 -Wall -o "target/release/loggp-prtt-$mpi" calibrate/prtt.c -lm
  fi
done
echo "built: target/release/loggp, target/release/libloggp-{openmpi,mpich}.so" >&2
