#!/usr/bin/env bash
# Side-by-side cost of virtual time at zero knobs for several shim builds,
# Debian's two MPIs (MPIS="openmpi mpich"), ROUNDS interleaved rounds
# (default 5) of: native, then each build with LOGGP_VT=on.
#
#   scripts/bench-compare.sh LABEL=DIR [LABEL=DIR ...]
#
# DIR holds libloggp-openmpi.so and libloggp-mpich.so (a checkout's
# target/release, or a copy). A spec may add variables for that build's
# runs: LABEL=DIR,VAR=VALUE[,VAR=VALUE...] (e.g. nosplit=target/release,
# LOGGP_SPLIT=off). Each run is bench/shim_bench.c at np=2 (8 B and 1 MiB
# half round trips in us, message rate in M msg/s, the 8 B half round trip
# and the rate natively with the payload behind a 16- or 32-byte header
# (the floor and the ceiling an in-band piggyback leaves, printed under
# half_rtt_8 and rate_8, with each build's time above the 16-byte floor), time per MPI_Send and
# per MPI_Recv of an arrived message in ns, 16 KiB and 1 MiB streaming
# bandwidth in GB/s) followed by bench/coll_bench.c at np=COLL_NP (default
# 2; osu_allreduce-style time per Allreduce of 8 B, 2 KiB, 16 KiB, 64 KiB and 1 MiB, Bcast of
# 8 B, 2 KiB and 64 KiB, Barrier, and an 8-byte Iallreduce + Wait, us). Prints per MPI, metric and build the median
# [min..max] over rounds, and the median [min..max] of the per-round
# ratios to native (and to the first build), which a shared machine's
# slow and fast phases move far less than the values themselves, and
# beside the metrics issue 12 sets a target for, whether the median ratio
# (or, for the 8 B half round trip, the added time) meets it. A spec
# that sets LOGGP_VT replaces the default LOGGP_VT=on: with
# LABEL=DIR,LOGGP_VT=off that build is the pass-through, and call_ns (an
# MPI_Test on MPI_REQUEST_NULL) is held to issue 12's "<= 5 ns per call".
# One MPI job at a time (flock /tmp/loggp-mpi.lock). Example, before and
# after a change:
#   git worktree add /tmp/base HEAD~1 && (cd /tmp/base && bash scripts/build-shims.sh)
#   scripts/bench-compare.sh before=/tmp/base/target/release after=target/release
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench-compare.sh LABEL=DIR [LABEL=DIR ...]" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/bench; mkdir -p "$out"
raw=$out/compare.txt; : >"$raw"
pt=$out/compare-passthrough.txt; : >"$pt"
for mpi in ${MPIS:-openmpi mpich}; do
  b=$out/shim_bench-$mpi c=$out/coll_bench-$mpi
  "mpicc.$mpi" -O2 -Wno-stringop-overflow -o "$b" bench/shim_bench.c
  "mpicc.$mpi" -O2 -o "$c" bench/coll_bench.c
  np=${COLL_NP:-2}
  for spec in "$@"; do
    dir=${spec#*=} dir=${dir%%,*}
    [ -f "$dir/libloggp-$mpi.so" ] || { echo "bench-compare: $dir/libloggp-$mpi.so missing" >&2; exit 1; }
  done
  for _ in $(seq 1 "${ROUNDS:-5}"); do
    echo "$mpi native $(flock /tmp/loggp-mpi.lock timeout 120 "mpirun.$mpi" -np 2 "$b" 400) $(flock /tmp/loggp-mpi.lock timeout 300 "mpirun.$mpi" -np "$np" "$c")" >>"$raw"
    for spec in "$@"; do
      label=${spec%%=*} dir=${spec#*=} dir=${dir%%,*}
      so=$(cd "$dir" && pwd)/libloggp-$mpi.so
      vars=(LD_PRELOAD="$so")
      rest=${spec#*=}
      more=()
      if [ "$rest" != "$dir" ]; then IFS=, read -r -a more <<<"${rest#*,}"; fi
      case ",${rest#*,}," in
        *,LOGGP_VT=off,*) echo "$label" >>"$pt" ;;
        *,LOGGP_VT=*) ;;
        *) vars+=(LOGGP_VT=on) ;;
      esac
      vars+=("${more[@]}")
      a=()
      for v in "${vars[@]}"; do
        if [ "$mpi" = openmpi ]; then a+=(-x "$v"); else a+=(-genv "${v%%=*}" "${v#*=}"); fi
      done
      echo "$mpi $label $(flock /tmp/loggp-mpi.lock timeout 120 "mpirun.$mpi" -np 2 "${a[@]}" "$b" 400) $(flock /tmp/loggp-mpi.lock timeout 300 "mpirun.$mpi" -np "$np" "${a[@]}" "$c")" >>"$raw"
    done
  done
done
python3 - "$raw" "$pt" <<'PY'
import statistics as st, sys
rows = [line.split() for line in open(sys.argv[1])]
passthrough = set(open(sys.argv[2]).read().split())
keys = ["half_rtt_8", "rate_8", "send_ns", "recv_ns", "call_ns", "bw_16k", "bw_1m", "half_rtt_1m",
        "allreduce_8", "allreduce_2k", "allreduce_16k", "allreduce_64k", "allreduce_1m", "bcast_8", "bcast_2k", "bcast_64k", "barrier", "iallreduce_8"]
for mpi in dict.fromkeys(r[0] for r in rows):
    labels = list(dict.fromkeys(r[1] for r in rows if r[0] == mpi))
    rr = [r for r in rows if r[0] == mpi]
    # One round: native, then every build, in that order.
    rounds = [rr[i:i + len(labels)] for i in range(0, len(rr) - len(labels) + 1, len(labels))]
    vals = [{x[1]: dict((kv.split("=")[0], float(kv.split("=")[1])) for kv in x[2:]) for x in r}
            for r in rounds]
    def f(xs):
        return f"{st.median(xs):.3f} [{min(xs):.3f}..{max(xs):.3f}]"
    # Issue 12's targets (virtual time at zero knobs against native); the
    # Allreduce one is set at 16 ranks (COLL_NP=16 on a 16-core machine).
    targets = {
        "half_rtt_8": ("diff", 0.10, "adds <= 0.10 us"),
        "rate_8": ("ratio", 0.8, ">= 0.8x native"),
        "bw_1m": ("ratio", 0.97, ">= 0.97x native"),
        "half_rtt_1m": ("ratio", 1.03, "<= 1.03x native"),
        "allreduce_8": ("ratio", 1.5, "<= 1.5x native at 16 ranks"),
        "allreduce_64k": ("ratio", 1.5, "<= 1.5x native at 16 ranks"),
    }
    print(f"== {mpi}: {len(rounds)} rounds, median [min..max]; ratios are per round")
    for k in keys:
        if not all(k in v[l] for v in vals for l in labels):
            continue
        print(f"  {k}")
        for j, l in enumerate(labels):
            line = f"    {l:10} {f([v[l][k] for v in vals])}"
            if j > 0:
                line += f"   /native {f([v[l][k] / v[labels[0]][k] for v in vals])}"
            if j > 1:
                line += f"   /{labels[1]} {f([v[l][k] / v[labels[1]][k] for v in vals])}"
            # Issue 12's targets are for virtual time at zero; the
            # pass-through's is call_ns alone.
            t = None if l in passthrough else targets.get(k)
            if k == "call_ns":
                t = ("diff", 5.0, "pass-through adds <= 5 ns", "ns") if l in passthrough else None
            if j > 0 and t:
                how, bound, text, unit = t if len(t) == 4 else t + ("us",)
                if how == "diff":
                    got = st.median([v[l][k] - v[labels[0]][k] for v in vals])
                    ok = got <= bound
                    line += f"   target {text}: +{got:.3f} {unit}"
                else:
                    got = st.median([v[l][k] / v[labels[0]][k] for v in vals])
                    ok = got >= bound if bound < 1 else got <= bound
                    line += f"   target {text}"
                line += " (met)" if ok else " (NOT met)"
            print(line)
        if k == "half_rtt_8" and all("inband_rtt_16" in v[labels[0]] for v in vals):
            # The floor any in-band piggyback leaves of the native latency
            # (native runs: 8 B behind a 16- or 32-byte header in one
            # message, copied in and out), and what each build adds above
            # the 16-byte one: the shim's own work per half round trip.
            for h in ("16", "32"):
                xs = [v[labels[0]]["inband_rtt_" + h] - v[labels[0]]["half_rtt_8"] for v in vals]
                print(f"    floor of an in-band {h}-byte header (native, 8+{h} B ping-pong): +{f(xs)} us over native")
            for l in labels[1:]:
                xs = [v[l]["half_rtt_8"] - v[labels[0]]["inband_rtt_16"] for v in vals]
                print(f"    {l:10} above that 16-byte floor: {f(xs)} us")
        if k == "rate_8" and all("inband_32" in v[labels[0]] for v in vals):
            # What any in-band piggyback leaves of the native rate in the
            # library alone (native runs: 8 B behind a 16- or 32-byte header
            # in one message, copied in and out; bench/shim_bench.c).
            for h in ("16", "32"):
                xs = [v[labels[0]]["inband_" + h] / v[labels[0]]["rate_8"] for v in vals]
                print(f"    ceiling of an in-band {h}-byte header (native, 8+{h} B messages): {f(xs)} x native")
PY
