#!/usr/bin/env bash
# Runs a command on a "host" of the test bed (scripts/netns.sh): in network
# namespace HOST, in a UTS namespace of its own whose hostname is HOST.
#
#   netns-exec.sh --run HOST CMD ARGS...  run CMD with ARGS as given (exec)
#   netns-exec.sh [-opts] HOST WORDS...   remote-shell form, as mpirun's and
#       Hydra's ssh launchers call their agent: leading options are ignored
#       and the words are joined into one shell command line, as ssh does.
#
# NETNS_H1_ENV="VAR=value ...": variables set only on loggp-h1 (for
# example LOGGP_TEST_CLOCK, so that one host's clock disagrees).
set -euo pipefail
shell=1
if [ "${1:-}" = "--run" ]; then
  shell=0
  shift
fi
while [ "$shell" -eq 1 ] && [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
  shift
done
[ $# -ge 2 ] || { echo "usage: netns-exec.sh HOST CMD..." >&2; exit 2; }
host=$1
shift
case "$host" in
  loggp-h0 | loggp-h1) ;;
  *) echo "netns-exec.sh: unknown host $host; accepted: loggp-h0, loggp-h1" >&2; exit 2 ;;
esac
# A launcher passes one shell command line (possibly split into words).
if [ "$shell" -eq 1 ]; then
  set -- sh -c "$*"
fi
if [ "$host" = loggp-h1 ] && [ -n "${NETNS_H1_ENV:-}" ]; then
  # Word splitting intended: VAR=value pairs without spaces.
  # shellcheck disable=SC2086
  set -- env $NETNS_H1_ENV "$@"
fi
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
