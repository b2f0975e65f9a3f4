#!/usr/bin/env bash
# Builds everything in release mode:
#   target/release/loggp                       the command
#   target/release/libloggp-{openmpi,mpich}.so  the shim, one per MPI
#   target/release/loggp-prtt-{openmpi,mpich}   the calibration kernel
#   target/release/loggp-collbench-{openmpi,mpich}  the collective kernel (calibrate --collectives)
#   target/examples/{openmpi,mpich}/            the example programs
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --quiet -p loggp
bash scripts/build-shims.sh
for mpi in openmpi mpich; do
  "mpicc.$mpi" -O2 -Wall -o "target/release/loggp-prtt-$mpi" calibrate/prtt.c -lm
  "mpicc.$mpi" -O2 -Wall -o "target/release/loggp-collbench-$mpi" calibrate/collbench.c
done
if [ -f scripts/build-examples.sh ]; then
  bash scripts/build-examples.sh
fi
echo "built: target/release/loggp, target/release/libloggp-{openmpi,mpich}.so" >&2
