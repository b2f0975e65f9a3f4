#!/usr/bin/env bash
# Builds the example MPI programs of examples/ for both MPI libraries:
#   target/examples/{openmpi,mpich}/{pingpong,stencil,farm,cg,transpose}
# C with mpicc.<mpi>, Fortran with mpifort.<mpi>, Rust with rustc linking
# the MPI library directly (transpose.rs declares the MPI functions it uses).
# A program is rebuilt only when its source is newer than the binary.
#   scripts/build-examples.sh NAME MPICC   the C programs (and cg when an
#   mpifort sits beside MPICC) for another MPI, into target/examples/NAME/
set -euo pipefail
cd "$(dirname "$0")/.."
src=examples
build() { # build NAME SOURCE COMMAND...
  local name=$1 source=$2
  shift 2
  if [ ! -x "$out/$name" ] || [ "$source" -nt "$out/$name" ] || [ "$0" -nt "$out/$name" ]; then
    "$@"
  fi
}
if [ $# -eq 2 ]; then
  out="target/examples/$1"
  mkdir -p "$out"
  for c in pingpong stencil farm; do
    build "$c" "$src/$c.c" "$2" -O2 -Wall -o "$out/$c" "$src/$c.c" -lm
  done
  fort="$(dirname "$2")/mpifort"
  if [ -x "$fort" ]; then
    build cg "$src/cg.f90" "$fort" -O2 -Wall -fallow-argument-mismatch -J "$out" -o "$out/cg" "$src/cg.f90"
  fi
  echo "built: $out/{pingpong,stencil,farm}$([ -x "$fort" ] && echo ",cg")" >&2
  exit 0
fi
for mpi in openmpi mpich; do
  out="target/examples/$mpi"
  mkdir -p "$out"
  for c in pingpong stencil farm; do
    build "$c" "$src/$c.c" "mpicc.$mpi" -O2 -Wall -o "$out/$c" "$src/$c.c" -lm
  done
  # -fallow-argument-mismatch: MPICH's `use mpi` module is built with it and
  # gfortran >= 10 refuses the generic buffer arguments otherwise.
  build cg "$src/cg.f90" "mpifort.$mpi" -O2 -Wall -fallow-argument-mismatch -J "$out" -o "$out/cg" "$src/cg.f90"
  case $mpi in
    openmpi) libdir=$(mpicc.openmpi --showme:libdirs | awk '{print $1}'); lib=mpi ;;
    mpich) libdir=/usr/lib/x86_64-linux-gnu; lib=mpich ;;
  esac
  build transpose "$src/transpose.rs" rustc -O --edition 2021 -D warnings --cfg "$mpi" \
    --check-cfg 'cfg(openmpi, mpich)' -L "$libdir" -l "$lib" -o "$out/transpose" "$src/transpose.rs"
done
echo "built: target/examples/{openmpi,mpich}/{pingpong,stencil,farm,cg,transpose}" >&2
