#!/usr/bin/env bash
# A one-node Slurm on this machine, for the tests of `loggp run -- srun`:
#
#   scripts/slurm.sh up     install (Debian's slurm-wlm) and start munged,
#                           slurmctld and slurmd if they are not running;
#                           exit 3 when Slurm cannot run here (not root,
#                           no package)
#   scripts/slurm.sh down   stop them (munged too when the configuration
#                           is ours)
#
# The node is this host, with all its processors, in partition "debug";
# state and logs under /tmp/loggp-slurm. Nothing else on the machine is
# changed but /etc/slurm/slurm.conf (written only if absent or ours).
set -euo pipefail
dir=/tmp/loggp-slurm
conf=/etc/slurm/slurm.conf
mark="# written by loggp-shim scripts/slurm.sh"

down() {
  pkill -x slurmd 2>/dev/null || true
  pkill -x slurmctld 2>/dev/null || true
  # munged too, when the configuration is ours (we started it): the tests
  # leave the machine as they found it.
  if grep -q "$mark" "$conf" 2>/dev/null; then
    pkill -x munged 2>/dev/null || true
  fi
  # They take some seconds to finish their job steps and go.
  for _ in $(seq 1 100); do
    pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || pgrep -x munged >/dev/null || return 0
    sleep 0.2
  done
  pkill -9 -x slurmstepd 2>/dev/null || true
  pkill -9 -x slurmd 2>/dev/null || true
  pkill -9 -x slurmctld 2>/dev/null || true
}

up() {
  [ "$(id -u)" = 0 ] || { echo "slurm.sh: not root: cannot start Slurm's daemons" >&2; exit 3; }
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm >/dev/null 2>&1 ||
      { echo "slurm.sh: cannot install slurm-wlm" >&2; exit 3; }
  fi
  if [ -f "$conf" ] && ! grep -q "$mark" "$conf"; then
    echo "slurm.sh: $conf exists and is not ours: using it as it is" >&2
  else
    local host cpus mem
    host=$(hostname -s)
    cpus=$(nproc)
    mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024))
    mkdir -p /etc/slurm "$dir/state" "$dir/spool"
    cat >"$conf" <<EOF
$mark
ClusterName=loggp
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  fi
  pgrep -x munged >/dev/null || { mkdir -p /run/munge && chown munge:munge /run/munge && runuser -u munge -- munged; }
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  # Until the node takes jobs.
  for _ in $(seq 1 60); do
    if timeout 10 srun -n 1 true >/dev/null 2>&1; then
      return 0
    fi
    scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true
    sleep 0.5
  done
  echo "slurm.sh: Slurm does not run jobs here (see $dir/*.log)" >&2
  exit 3
}

case ${1:-} in
  up) up ;;
  down) down ;;
  *) echo "usage: slurm.sh up|down" >&2; exit 2 ;;
esac
