#!/usr/bin/env bash
# Installs what loggp-shim needs from Debian's packages: Open MPI and MPICH
# (each with its compiler wrappers), gfortran, the real applications the
# tests run (LAMMPS, ScaLAPACK's tests, HPCC) and Slurm (the srun tests
# start a one-node Slurm, scripts/slurm.sh). Skips apt when all is there.
set -euo pipefail
need=()
# ip (iproute2) and unshare (util-linux): the two-host test bed, scripts/netns.sh.
for cmd in mpicc.openmpi mpirun.openmpi mpicc.mpich mpirun.mpich gfortran mpifort.openmpi mpifort.mpich lmp hpcc ip unshare srun slurmctld slurmd munged; do
  command -v "$cmd" >/dev/null 2>&1 || need+=("$cmd")
done
# Real applications for the tests (cli/tests/mpi_apps.rs): LAMMPS (lmp),
# HPCC (hpcc, Open MPI) and ScaLAPACK's test programs (xdlu) for both MPIs.
for f in /usr/lib/x86_64-linux-gnu/scalapack/{openmpi,mpich}-tests/xdlu; do
  [ -x "$f" ] || need+=("$f")
done
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: missing ${need[*]}; installing Debian packages" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran gcc libc6-dev make \
  lammps hpcc scalapack-mpi-test iproute2 util-linux slurm-wlm >/dev/null
