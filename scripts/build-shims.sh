#!/usr/bin/env bash
# Builds the shim (release).
#   scripts/build-shims.sh          Debian's two: target/release/libloggp-{openmpi,mpich}.so
#   scripts/build-shims.sh MPICC    the MPI behind that compiler wrapper:
#                                   target/release/libloggp-<family>-<major.minor>.so
#                                   (prints the name, e.g. openmpi-5.0, on stdout)
# Each has its own target directory: its build script probes one MPI's
# headers, and cargo would not rebuild when that changes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/release

install() { # install TARGET_DIR NAME
  # Replace by rename, never in place: processes that have the old library
  # mapped keep their copy (an in-place copy crashes them).
  cp -f "$1/release/libloggp_shim.so" "target/release/.libloggp-$2.so.tmp"
  mv -f "target/release/.libloggp-$2.so.tmp" "target/release/libloggp-$2.so"
}

if [ $# -eq 0 ]; then
  for mpi in openmpi mpich; do
    LOGGP_SHIM_MPI=$mpi MPICC= cargo build --release --quiet -p loggp-shim --target-dir "target/shim-$mpi"
    install "target/shim-$mpi" "$mpi"
  done
  exit 0
fi

cc=$1
name=$(bash scripts/mpi-name.sh "$cc")
MPICC=$cc LOGGP_SHIM_MPI= cargo build --release --quiet -p loggp-shim --target-dir "target/shim-$name"
install "target/shim-$name" "$name"
echo "$name"
