#!/usr/bin/env bash
# Builds only the two shims (release) into target/release/libloggp-{openmpi,mpich}.so.
set -euo pipefail
cd "$(dirname "$0")/.."
for mpi in openmpi mpich; do
  LOGGP_SHIM_MPI=$mpi cargo build --release --quiet -p loggp-shim --target-dir "target/shim-$mpi"
  mkdir -p target/release
  cp -f "target/shim-$mpi/release/libloggp_shim.so" "target/release/libloggp-$mpi.so"
done
