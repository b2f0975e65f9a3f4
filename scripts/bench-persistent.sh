#!/usr/bin/env bash
# Large messages by persistent and by nonblocking requests, natively and
# through shim builds at zero knobs (LOGGP_VT=on), side by side:
#
#   MPIS="openmpi mpich" SIZES="65536 1048576" ROUNDS=3 \
#     scripts/bench-persistent.sh LABEL=DIR [LABEL=DIR ...]
#
# DIR holds libloggp-openmpi.so and libloggp-mpich.so (a checkout's
# target/release). Each round runs bench/persistent_bw.c at np = 2 once
# natively and once per build, for each size; the program prints, per
# pairing of the sender's and the receiver's kind of request (isend/irecv,
# persistent/persistent, isend/persistent-recv, persistent-send/irecv),
# the median GB/s of 30 windows of 16 messages. Prints per MPI, size,
# pairing and build the median [min..max] over rounds and the median of
# the per-round ratios to native. Debian's MPIs; one MPI job at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 LABEL=DIR [LABEL=DIR ...]" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=target/bench/persistent
mkdir -p "$out"
rounds=${ROUNDS:-3}
log="$out/runs.txt"
: > "$log"
for mpi in ${MPIS:-openmpi mpich}; do
  "mpicc.$mpi" -O2 -w -Ibench -o "$out/persistent_bw-$mpi" bench/persistent_bw.c
  for spec in "$@"; do
    [ -f "$(realpath -m "${spec#*=}")/libloggp-$mpi.so" ] || { echo "no ${spec#*=}/libloggp-$mpi.so" >&2; exit 2; }
  done
  for ((r = 0; r < rounds; r++)); do
    for size in ${SIZES:-65536 1048576}; do
      for spec in native "$@"; do
        label=${spec%%=*}
        lib=$(realpath -m "${spec#*=}")/libloggp-$mpi.so
        run=(timeout 300)
        if [ "$mpi" = openmpi ]; then
          run+=(mpirun.openmpi -np 2)
          [ "$spec" = native ] || run+=(-x "LD_PRELOAD=$lib" -x LOGGP_VT=on)
        else
          run+=(env UCX_NET_DEVICES=lo mpirun.mpich -np 2)
          [ "$spec" = native ] || run+=(-env LD_PRELOAD "$lib" -env LOGGP_VT on)
        fi
        flock /tmp/loggp-mpi.lock "${run[@]}" "$out/persistent_bw-$mpi" "$size" 1 |
          sed "s/^/$mpi $r $label /" >> "$log"
      done
    done
  done
done
python3 - "$log" <<'PY'
import collections, statistics, sys
# "<mpi> <round> <label> round 0 size <size> <pairing> <gbs> GB/s [..]"
v = collections.defaultdict(dict)
labels = []
for line in open(sys.argv[1]):
    f = line.split()
    mpi, rnd, label, size, pairing, gbs = f[0], int(f[1]), f[2], int(f[6]), f[7], float(f[8])
    v[(mpi, size, pairing)].setdefault(label, {})[rnd] = gbs
    if label not in labels:
        labels.append(label)
for (mpi, size, pairing), by in v.items():
    print(f"{mpi} {size} B {pairing}")
    nat = by.get("native", {})
    for label in labels:
        xs = by.get(label, {})
        if not xs:
            continue
        vals = sorted(xs.values())
        line = f"    {label:<10} {statistics.median(vals):6.2f} GB/s [{vals[0]:.2f}..{vals[-1]:.2f}]"
        if label != "native":
            rs = [xs[r] / nat[r] for r in xs if r in nat and nat[r] > 0]
            if rs:
                line += f"   /native {statistics.median(rs):.3f} [{min(rs):.3f}..{max(rs):.3f}]"
        print(line)
PY
