#!/usr/bin/env bash
# Prints the build name of the MPI behind a C compiler wrapper:
# <family>-<major>.<minor> (openmpi-5.0, mpich-4.0), read from its mpi.h by
# compiling the shim's ABI probe with it.
#   scripts/mpi-name.sh /path/to/mpicc
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${1:?usage: scripts/mpi-name.sh MPICC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$cc" -O0 -o "$tmp/probe" shim/probe/abi_probe.c 2>"$tmp/err"; then
  echo "mpi-name: MPICC=$cc cannot compile shim/probe/abi_probe.c (an Open MPI or MPICH mpicc is accepted):" >&2
  head -5 "$tmp/err" >&2
  exit 1
fi
"$tmp/probe" > "$tmp/abi.rs" || { echo "mpi-name: the ABI probe built by $cc failed: $(cat "$tmp/abi.rs" | head -1)" >&2; exit 1; }
family=$(sed -n 's/^pub const FLAVOUR: Flavour = Flavour::\(.*\);$/\1/p' "$tmp/abi.rs")
version=$(sed -n 's/^pub const LIB_VERSION: &str = "\(.*\)";$/\1/p' "$tmp/abi.rs")
case $family in
  OpenMpi) family=openmpi ;;
  Mpich) family=mpich ;;
  *) echo "mpi-name: $cc: unknown MPI family '$family'" >&2; exit 1 ;;
esac
majmin=$(echo "$version" | grep -Eo '^[0-9]+\.[0-9]+')
[ -n "$majmin" ] || { echo "mpi-name: $cc: cannot read a version from '$version'" >&2; exit 1; }
echo "$family-$majmin"
