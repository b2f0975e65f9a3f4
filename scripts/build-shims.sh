#!/usr/bin/env bash
# Builds the two shims (release) into target/release/libloggp-{openmpi,mpich}.so.
# Each has its own target directory: its build script probes one MPI's
# headers (LOGGP_SHIM_MPI), and cargo would not rebuild when that changes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/release
for mpi in openmpi mpich; do
  LOGGP_SHIM_MPI=$mpi cargo build --release --quiet -p loggp-shim --target-dir "target/shim-$mpi"
  # Replace by rename, never in place: processes that have the old library
  # mapped keep their copy (an in-place copy crashes them).
  cp -f "target/shim-$mpi/release/libloggp_shim.so" "target/release/.libloggp-$mpi.so.tmp"
  mv -f "target/release/.libloggp-$mpi.so.tmp" "target/release/libloggp-$mpi.so"
done
