#!/usr/bin/env bash
# Two-host test bed on one machine (root): two network namespaces,
# loggp-h0 and loggp-h1, joined by a veth pair (10.77.0.1/24 and
# 10.77.0.2/24, addresses that exist only inside the namespaces, so no
# traffic leaves this machine). scripts/netns-exec.sh enters one of them in
# a UTS namespace of its own whose hostname is the namespace's name, so MPI
# sees two nodes; it is also the remote-shell agent the launchers use.
#
#   scripts/netns.sh up      create (idempotent; the default)
#   scripts/netns.sh down    remove
#   scripts/netns.sh check   exit 0 when the test bed is up and usable
#
# Exit status 3: this machine (or container) does not support network
# namespaces; the tests that need the bed then skip and say so.
set -euo pipefail
H0=loggp-h0 H1=loggp-h1
A0=10.77.0.1 A1=10.77.0.2
up() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "netns.sh: needs root (network namespaces)" >&2
    exit 1
  fi
  command -v ip >/dev/null || { echo "netns.sh: needs ip (iproute2)" >&2; exit 1; }
  command -v unshare >/dev/null || { echo "netns.sh: needs unshare (util-linux)" >&2; exit 1; }
  for ns in $H0 $H1; do
    if ! ip netns list | grep -qw "^$ns"; then
      ip netns add "$ns" || { echo "netns.sh: cannot create network namespace $ns (no namespace support here)" >&2; exit 3; }
    fi
    ip -n "$ns" link set lo up
    # Name resolution inside the namespace (ip netns exec bind-mounts it
    # over /etc/hosts there; the machine's own /etc/hosts is untouched).
    mkdir -p "/etc/netns/$ns"
    printf '127.0.0.1 localhost\n%s %s\n%s %s\n' "$A0" "$H0" "$A1" "$H1" >"/etc/netns/$ns/hosts"
  done
  if ! ip -n $H0 link show veth-h0 >/dev/null 2>&1; then
    ip -n $H1 link del veth-h1 2>/dev/null || true
    ip link add veth-h0 netns $H0 type veth peer name veth-h1 netns $H1
  fi
  ip -n $H0 addr replace $A0/24 dev veth-h0
  ip -n $H1 addr replace $A1/24 dev veth-h1
  ip -n $H0 link set veth-h0 up
  ip -n $H1 link set veth-h1 up
}
down() {
  for ns in $H0 $H1; do
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
}
check() {
  [ "$(id -u)" -eq 0 ] || { echo "not root"; exit 1; }
  ip -n $H0 addr show veth-h0 2>/dev/null | grep -q "$A0" || { echo "test bed is not up"; exit 1; }
}
case "${1:-up}" in
  up) up ;;
  down) down ;;
  check) check ;;
  *) echo "netns.sh: unknown command ${1}; accepted: up, down, check" >&2; exit 2 ;;
esac
