#!/usr/bin/env bash
# Builds everything in release mode:
#   target/release/loggp                       the command
#   target/release/libloggp-{openmpi,mpich}.so  the shim, one per MPI
#   target/release/loggp-prtt-{openmpi,mpich}   the calibration kernel
#   target/release/loggp-collbench-{openmpi,mpich}  the collective kernel (calibrate --collectives)
#   target/examples/{openmpi,mpich}/            the example programs
# for Debian's Open MPI and MPICH (installed when missing).
#
# MPICC=/path/to/mpicc scripts/build.sh builds the same for the MPI behind
# that compiler wrapper (any Open MPI or MPICH; a cluster's module), named
# by family and version so that several coexist beside Debian's two:
#   target/release/libloggp-<name>.so, loggp-prtt-<name>, loggp-collbench-<name>,
#   target/examples/<name>/   with <name> e.g. openmpi-5.0, mpich-5.0
# Debian's two are then built too when their wrappers are installed (no
# packages are installed in this mode: no root needed).
set -euo pipefail
# A wrapper given by a relative path is made absolute before leaving the
# caller's directory (the shim's build script runs elsewhere).
case ${MPICC:-} in
  /*|"") ;;
  */*) MPICC="$(cd "$(dirname "$MPICC")" && pwd)/$(basename "$MPICC")" ;;
esac
cd "$(dirname "$0")/.."
kernels() { # kernels NAME MPICC
  "$2" -O2 -Wall -o "target/release/loggp-prtt-$1" calibrate/prtt.c -lm
  "$2" -O2 -Wall -o "target/release/loggp-collbench-$1" calibrate/collbench.c
}
debian=yes
if [ -n "${MPICC:-}" ]; then
  command -v mpicc.openmpi >/dev/null 2>&1 && command -v mpicc.mpich >/dev/null 2>&1 || debian=no
else
  bash scripts/install-deps.sh
fi
cargo build --release --quiet -p loggp
if [ $debian = yes ]; then
  bash scripts/build-shims.sh
  for mpi in openmpi mpich; do
    kernels "$mpi" "mpicc.$mpi"
  done
  if [ -f scripts/build-examples.sh ]; then
    bash scripts/build-examples.sh
  fi
  echo "built: target/release/loggp, target/release/libloggp-{openmpi,mpich}.so" >&2
fi
if [ -n "${MPICC:-}" ]; then
  name=$(bash scripts/build-shims.sh "$MPICC")
  kernels "$name" "$MPICC"
  bash scripts/build-examples.sh "$name" "$MPICC"
  echo "built for MPICC=$MPICC: target/release/libloggp-$name.so, loggp-prtt-$name, loggp-collbench-$name, target/examples/$name/" >&2
fi
