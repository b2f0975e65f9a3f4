# Sourced by scripts/bench-instr.sh and scripts/bench-instr-pingpong.sh:
# one np=2 MPI job under valgrind --tool=callgrind, natively or through
# the shim. Not a command of its own.
#
#   cg_init NAME MPI OUT   checks valgrind and the shim (SHIM=PATH, else
#                          target/release/libloggp-MPI.so), sets $shim and
#                          $wrap (OUT/vg.sh: valgrind per rank)
#   cg_run CG_OUT native|shim [VAR=VALUE ...] -- PROGRAM [ARGS ...]
#                          callgrind files CG_OUT.<rank>; through the shim
#                          with LOGGP_VT=on and the variables given. One MPI
#                          job at a time (flock /tmp/loggp-mpi.lock).

cg_init() {
  local name=$1 mpi=$2 out=$3
  command -v valgrind >/dev/null || { echo "$name: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  cg_mpi=$mpi
  shim=${SHIM:-$PWD/target/release/libloggp-$mpi.so}
  [ -f "$shim" ] || { echo "$name: $shim missing; run scripts/build.sh" >&2; exit 1; }
  mkdir -p "$out"
  wrap=$out/vg.sh
  cat >"$wrap" <<'EOS'
#!/bin/sh
rank=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}
exec valgrind -q --tool=callgrind --callgrind-out-file="$CG_OUT.$rank" "$@"
EOS
  chmod +x "$wrap"
}

cg_run() {
  local cg_out=$1 how=$2; shift 2
  local args=(-np 2)
  if [ "$cg_mpi" = openmpi ]; then
    args+=(-x "CG_OUT=$cg_out")
    [ "$how" = native ] || args+=(-x "LD_PRELOAD=$shim" -x LOGGP_VT=on)
  else
    args+=(-genv UCX_NET_DEVICES lo -genv CG_OUT "$cg_out")
    [ "$how" = native ] || args+=(-genv LD_PRELOAD "$shim" -genv LOGGP_VT on)
  fi
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    if [ "$cg_mpi" = openmpi ]; then args+=(-x "$1"); else args+=(-genv "${1%%=*}" "${1#*=}"); fi
    shift
  done
  shift
  flock /tmp/loggp-mpi.lock timeout 600 "mpirun.$cg_mpi" "${args[@]}" "$wrap" "$@" >/dev/null
}
