#!/usr/bin/env bash
# Benchmark of the shim itself, np=2, Debian's two MPIs unless builds are
# named (any name of `loggp shim-path --list`, e.g. openmpi-5.0):
#   scripts/bench-shim.sh [openmpi|mpich|openmpi-5.0|mpich-5.0 ...]
# Prints, per MPI: native vs shim at zero (pass-through) vs shim with virtual
# time on and every knob zero (3 interleaved rounds, median of the rounds):
# latency, message rate, bandwidth; then the decomposition of the cost of one
# message under virtual time (the shim's own time per send and per receive,
# the MPI calls it makes on the side, measured natively by
# bench/side_calls.c, and how often the gate held a delivery at zero
# knobs, from LOGGP_REPORT); then requested vs realised L, o_s, o_r at
# 1, 5, 20, 100 us, realised = median with the knob - median with VT on at 0.
# One MPI job at a time (flock /tmp/loggp-mpi.lock). Needs scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/bench; mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpis=${*:-openmpi mpich}
for mpi in $mpis; do
  case $mpi in
    openmpi|mpich) family=$mpi; mpicc=mpicc.$mpi; mpirun=mpirun.$mpi ;;
    *)
      line=$(target/release/loggp shim-path --list | awk -v n="$mpi" '$1 == n')
      [ -n "$line" ] || { echo "bench-shim: no build named $mpi (loggp shim-path --list)" >&2; exit 1; }
      family=$(echo "$line" | awk '{print $2}')
      mpicc=$(echo "$line" | awk '{print $4}')
      mpirun=$(dirname "$mpicc")/mpirun
      ;;
  esac
  "$mpicc" -O2 -o "$out/shim_bench-$mpi" bench/shim_bench.c
  "$mpicc" -O2 -o "$out/side_calls-$mpi" bench/side_calls.c -lpthread
  shim=$PWD/target/release/libloggp-$mpi.so
  [ -f "$shim" ] || { echo "bench-shim: $shim missing; run scripts/build.sh" >&2; exit 1; }
  run() { # run LABEL [VAR=VALUE...]
    local label=$1; shift
    local args=()
    if [ "$label" != native ]; then
      if [ "$family" = openmpi ]; then args+=(-x "LD_PRELOAD=$shim"); else args+=(-genv LD_PRELOAD "$shim"); fi
      for kv in "$@"; do
        if [ "$family" = openmpi ]; then args+=(-x "$kv"); else args+=(-genv "${kv%%=*}" "${kv#*=}"); fi
      done
    fi
    local line
    line=$(flock /tmp/loggp-mpi.lock timeout 120 "$mpirun" -np 2 "${args[@]}" "$out/shim_bench-$mpi" 400)
    echo "$label $line"
  }
  {
    for round in 1 2 3; do
      run native
      run zero
      run vt LOGGP_VT=on "LOGGP_REPORT=$PWD/$out/report-vt-$mpi-$round.json"
    done
    echo "side $(flock /tmp/loggp-mpi.lock timeout 60 "$mpirun" -np 1 "$out/side_calls-$mpi")"
    for v in 1 5 20 100; do
      run "L=${v}us" "LOGGP_L=${v}us"
      run "o_s=${v}us" "LOGGP_O_S=${v}us"
      run "o_r=${v}us" "LOGGP_O_R=${v}us"
    done
  } > "$out/raw-$mpi.txt"
  python3 - "$mpi" "$out/raw-$mpi.txt" "$out" <<'PY'
import json, statistics, sys
mpi, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
rows, rounds = {}, {}
for line in open(path):
    label, *kv = line.split()
    d = {k: float(v) for k, v in (x.split("=") for x in kv)}
    rounds.setdefault(label, []).append(d)
for label, ds in rounds.items():
    rows[label] = {k: statistics.median(d[k] for d in ds) for k in ds[0]}
n, z, v = rows["native"], rows["zero"], rows["vt"]
def spread(label, k):
    xs = [d[k] for d in rounds[label]]
    return f"{min(xs):.3f}..{max(xs):.3f}"
print(f"\n== {mpi}, np=2 ({path})")
print(f"{'metric':<22}{'native':>12}{'shim, zero':>12}{'shim, VT on':>13}{'zero-native':>13}{'VT-native':>12}")
for k, unit in [("half_rtt_8", "us"), ("o_s", "us"), ("o_r", "us"), ("gap", "us"), ("half_rtt_1m", "us")]:
    print(f"{k+' ('+unit+')':<22}{n[k]:>12.3f}{z[k]:>12.3f}{v[k]:>13.3f}{(z[k]-n[k])*1000:>11.0f}ns{(v[k]-n[k])*1000:>10.0f}ns")
print(f"{'call (ns)':<22}{n['call_ns']:>12.2f}{z['call_ns']:>12.2f}{v['call_ns']:>13.2f}{z['call_ns']-n['call_ns']:>11.2f}ns{v['call_ns']-n['call_ns']:>10.2f}ns")
print(f"{'1 MiB time, VT/native':<22}{v['half_rtt_1m']/n['half_rtt_1m']*100-100:>+11.2f}%   (8 B half RTT p10..p90 native {n['half_rtt_8_p10']:.3f}..{n['half_rtt_8_p90']:.3f} us)")
print(f"{'8 B half RTT, 3 rounds':<22} native {spread('native','half_rtt_8')}  zero {spread('zero','half_rtt_8')}  VT {spread('vt','half_rtt_8')} us (min..max)")
for k, unit in [("rate_8", "M msg/s"), ("bw_16k", "GB/s"), ("bw_1m", "GB/s")]:
    print(f"{k+' ('+unit+')':<22}{n[k]:>12.3f}{z[k]:>12.3f}{v[k]:>13.3f}   VT/native {v[k]/n[k]:.3f}  (VT rounds {spread('vt',k)})")
s = rows["side"]
print(f"\nDecomposition of one 8-byte message under virtual time at zero knobs ({mpi}):")
if "inband_rtt_16" in n:
    f16 = n["inband_rtt_16"]
    print(f"  8 B half round trip: native {n['half_rtt_8']*1000:6.1f} ns, native behind a 16-byte header (copied in and out) {f16*1000:6.1f} ns, VT {v['half_rtt_8']*1000:6.1f} ns:")
    print(f"    the in-band header's size and copies {(f16-n['half_rtt_8'])*1000:+6.1f} ns, the shim's own work above that {(v['half_rtt_8']-f16)*1000:+6.1f} ns")
print(f"  time per MPI_Send in a burst:      native {n['send_ns']:6.1f} ns, VT {v['send_ns']:6.1f} ns: shim's own {v['send_ns']-n['send_ns']:+6.1f} ns")
print(f"  time per MPI_Recv of an arrived 8 B: native {n['recv_ns']:6.1f} ns, VT {v['recv_ns']:6.1f} ns: shim's own {v['recv_ns']-n['recv_ns']:+6.1f} ns")
print("  MPI calls the shim makes on the side, ns each (native, one rank; bench/side_calls.c):")
print("    send: type_size + get_extent + get_true_extent = %.1f" % (s['type_size'] + s['get_extent'] + s['get_true_extent']))
print("    receive: the same + test_cancelled (not in a blocking Recv) + get_elements_x + set_elements_x (only when the status is read) = %.1f" % (s['type_size'] + s['get_extent'] + s['get_true_extent'] + s['test_cancelled'] + s['get_elements_x'] + s['set_elements_x']))
print(f"    clock: clock_gettime {s['clock']:.1f}, rdtsc {s.get('rdtsc', float('nan')):.1f} (the shim reads the TSC where the kernel's clocksource is tsc); one read per send, one per receive")
print(f"    state lock (pthread mutex lock+unlock) {s['mutex']:.1f}: taken only under MPI_THREAD_MULTIPLE")
holds = recvs = wait = 0
for r in (1, 2, 3):
    try:
        rep = json.load(open(f"{out}/report-vt-{mpi}-{r}.json"))
    except OSError:
        continue
    for pr in rep["per_rank"]:
        holds += pr.get("gate_holds", 0); recvs += pr["recvs"]; wait += pr["gate_wait_ns"]
if recvs:
    print(f"  gate at zero knobs: held {holds} of {recvs} deliveries ({100*holds/recvs:.2f} %), {wait/max(holds,1):.0f} ns per hold, {wait/recvs:.2f} ns per delivery on average")
print(f"\n{'knob':<6}{'requested':>10}{'realised':>10}{'error':>9}{'error %':>9}   {'vs VT at 0':>10}{'error %':>9}")
print("  realised = median with the knob - median natively (Leon's method);")
print("  'vs VT at 0' subtracts the shim's run with virtual time on and every knob 0.")
metric = {"L": "half_rtt_8", "o_s": "o_s", "o_r": "o_r"}
for knob in ("L", "o_s", "o_r"):
    for req in (1, 5, 20, 100):
        m = rows[f"{knob}={req}us"][metric[knob]]
        r = m - n[metric[knob]]
        rv = m - v[metric[knob]]
        print(f"{knob:<6}{req:>8}us{r:>8.3f}us{(r-req)*1000:>7.0f}ns{(r-req)/req*100:>+8.2f}%   {rv:>8.3f}us{(rv-req)/req*100:>+8.2f}%")
PY
done
