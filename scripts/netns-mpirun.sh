#!/usr/bin/env bash
# Runs an MPI job across the two "hosts" of the test bed (scripts/netns.sh
# up first): the launcher runs on loggp-h0 and starts the ranks of
# loggp-h1 through scripts/netns-exec.sh, its remote-shell agent.
#
#   netns-mpirun.sh openmpi|mpich PER_HOST NP [launcher options...] PROG [ARGS...]
#
# PER_HOST ranks go to each host, filled host by host (ranks 0..PER_HOST-1
# on loggp-h0). Open MPI runs over TCP (btl tcp,vader,self; its out-of-band
# channel and TCP on the veth's subnet), MPICH over UCX (UCX_TLS=tcp,self,
# plus shared memory between ranks of one host). Options before PROG go to
# the launcher (e.g. -x VAR=value for Open MPI, -genv VAR value for MPICH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 4 ] || { echo "usage: netns-mpirun.sh openmpi|mpich PER_HOST NP [options] PROG [ARGS...]" >&2; exit 2; }
mpi=$1 per=$2 np=$3
shift 3
case "$mpi" in
  openmpi)
    hf=$(mktemp /tmp/loggp-hostfile.XXXXXX)
    trap 'rm -f "$hf"' EXIT
    printf 'loggp-h0 slots=%s\nloggp-h1 slots=%s\n' "$per" "$per" >"$hf"
    # Both "hosts" share this machine's cores. With 2 ranks per host each
    # host binds its ranks to cores 0 and 1, so the same pairs share a core
    # in every run: unbound, the scheduler placed them anew each job and an
    # off-node pair's round trip was 5.5 us in one job and 12 us (one core,
    # a context switch per message) in the next.
    bind=()
    [ "$per" -ge 2 ] && bind=(--bind-to core)
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      "$here/netns-exec.sh" --run loggp-h0 mpirun.openmpi --hostfile "$hf" -np "$np" \
      --mca plm_rsh_agent "$here/netns-exec.sh" \
      "${bind[@]}" --mca btl tcp,vader,self --mca mpi_yield_when_idle 1 \
      --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 \
      "$@"
    ;;
  mpich)
    "$here/netns-exec.sh" --run loggp-h0 env UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n \
      mpirun.mpich -hosts "loggp-h0:$per,loggp-h1:$per" -np "$np" \
      -launcher ssh -launcher-exec "$here/netns-exec.sh" "$@"
    ;;
  *) echo "netns-mpirun.sh: unknown MPI $mpi; accepted: openmpi, mpich" >&2; exit 2 ;;
esac
