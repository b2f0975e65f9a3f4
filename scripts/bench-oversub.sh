#!/usr/bin/env bash
# Benchmark of the shim where ranks outnumber cores: 2x this machine's cores
# (NP=... to choose), Debian's two MPIs unless named:
#   scripts/bench-oversub.sh [openmpi|mpich ...]
#   ROUNDS=5 NP=4 SHIM_mpich=/path/to/other/libloggp-mpich.so scripts/bench-oversub.sh mpich
# Runs tests/progs/oversub.c (nonblocking ring exchanges, blocking
# ping-pong, blocking and nonblocking collectives; see its header) and
# tests/progs/hello.c (start-up and shut-down alone), natively, under the
# shim with LOGGP_VT=on at zero knobs, and with every knob set (L=2us
# o_s=1us o_r=1us g_s=3us g_r=3us G=1GB/s), ROUNDS interleaved rounds
# (default 3). Prints per workload the median and min..max of the job's
# wall time (mpirun start to end) and of the work alone (the program's
# own timer), and the ratios of the medians to native.
# SHIM_<mpi>=path benchmarks another build of the shim (a "before").
# One MPI job at a time (flock /tmp/loggp-mpi.lock). Needs scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/bench; mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo}
cores=$(nproc)
np=${NP:-$((2 * cores))}
rounds=${ROUNDS:-3}
mpis=${*:-openmpi mpich}
# workload: program, arguments
workloads=("hello:hello" "nbx:oversub nbx 300" "pp:oversub pp 2000" "coll:oversub coll 200" "icoll:oversub icoll 100")
knobs=(LOGGP_L=2us LOGGP_O_S=1us LOGGP_O_R=1us LOGGP_G_S=3us LOGGP_G_R=3us LOGGP_G=1GB/s)
for mpi in $mpis; do
  for p in oversub hello; do
    "mpicc.$mpi" -O2 -w -o "$out/$p-$mpi" "tests/progs/$p.c"
  done
  var=SHIM_$mpi
  shim=${!var:-$PWD/target/release/libloggp-$mpi.so}
  [ -f "$shim" ] || { echo "bench-oversub: $shim missing; run scripts/build.sh" >&2; exit 1; }
  run() { # run CONFIG PROGRAM ARGS...: prints "job=<s> work=<s>"
    local cfg=$1; shift
    local args=() vars=()
    case $cfg in
      native) ;;
      vt) vars=(LD_PRELOAD="$shim" LOGGP_VT=on) ;;
      knobs) vars=(LD_PRELOAD="$shim" "${knobs[@]}") ;;
    esac
    for kv in "${vars[@]}"; do
      if [ "$mpi" = openmpi ]; then args+=(-x "$kv"); else args+=(-genv "${kv%%=*}" "${kv#*=}"); fi
    done
    [ "$mpi" = openmpi ] && args+=(--oversubscribe)
    local prog=$1; shift
    flock /tmp/loggp-mpi.lock bash -c '
      t0=$(date +%s%N)
      o=$(timeout 300 "$@" 2>&1); rc=$?
      t1=$(date +%s%N)
      w=$(echo "$o" | grep -o " s=[0-9.]*" | head -1 | cut -d= -f2)
      if [ $rc -ne 0 ]; then echo "FAILED rc=$rc: $o" | head -5 >&2; fi
      echo "job=$(( (t1 - t0) / 1000000 ))e-3 work=${w:-nan} rc=$rc"
    ' _ "mpirun.$mpi" -np "$np" "${args[@]}" "$out/$prog-$mpi" "$@"
  }
  raw=$out/oversub-raw-$mpi.txt
  : > "$raw"
  for round in $(seq "$rounds"); do
    for w in "${workloads[@]}"; do
      name=${w%%:*}; cmd=${w#*:}
      for cfg in native vt knobs; do
        # shellcheck disable=SC2086 # cmd is words
        echo "$name $cfg $(run "$cfg" $cmd)" >> "$raw"
      done
    done
  done
  python3 - "$mpi" "$np" "$cores" "$raw" "$shim" <<'PY'
import statistics, sys
mpi, np_, cores, path, shim = sys.argv[1:]
data = {}
for line in open(path):
    name, cfg, *kv = line.split()
    d = dict(x.split("=") for x in kv)
    data.setdefault((name, cfg), []).append(d)
print(f"\n== {mpi}, {np_} ranks on {cores} cores, shim {shim} ({path})")
print(f"{'workload':<9}{'config':<8}{'job s: median':>14}{'min..max':>16}{'work s: median':>16}{'min..max':>16}{'job/native':>11}{'work/native':>12}  failed")
def col(ds, k):
    xs = [float(d[k]) for d in ds if d["rc"] == "0" and d[k] != "nan"]
    return xs
for name in dict.fromkeys(n for n, _ in data):
    nat = {k: col(data[(name, "native")], k) for k in ("job", "work")}
    for cfg in ("native", "vt", "knobs"):
        ds = data.get((name, cfg), [])
        failed = sum(d["rc"] != "0" for d in ds)
        cells = []
        ratios = []
        for k in ("job", "work"):
            xs = col(ds, k)
            if xs:
                cells += [f"{statistics.median(xs):14.3f}", f"{min(xs):7.3f}..{max(xs):<7.3f}"]
                ratios.append(f"{statistics.median(xs) / statistics.median(nat[k]):.2f}" if nat[k] else "-")
            else:
                cells += [f"{'-':>14}", f"{'-':>16}"]
                ratios.append("-")
        print(f"{name:<9}{cfg:<8}{cells[0]}  {cells[1]}{cells[2]}  {cells[3]}{ratios[0]:>11}{ratios[1]:>12}  {failed or ''}")
PY
done
