#!/usr/bin/env bash
# The calibration kernel's own o_r, g_r and o_s at zero knobs, natively and
# through several shim builds, ROUNDS interleaved rounds (default 10): what
# `loggp calibrate`'s row at 0 measures, without the rest of a calibration.
#
#   scripts/bench-prtt-zero.sh [openmpi|mpich] LABEL=DIR [LABEL=DIR ...]
#
# DIR holds libloggp-MPI.so (a checkout's target/release). Each run is
# target/release/loggp-prtt-MPI --no-fit --reps 200 at np = 2 (scripts/build.sh
# builds it), with LOGGP_VT=on through a build. Per run: o_r, the median
# or_call (one MPI_Recv of a message that has arrived, after an MPI_Probe
# of it); g_r, (T(n) - T(1)) / (n - 1) of the gr_burst medians (MPI_Recv
# of n arrived messages after a probe of the last); o_s, the median
# gs_burst at n = 1 (one MPI_Send). Prints per quantity and build the
# median [min..max] over rounds, ns. One MPI job at a time (flock
# /tmp/loggp-mpi.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-openmpi}
shift || true
exec python3 - "$mpi" "${ROUNDS:-10}" "$@" <<'PY'
import os, statistics as S, subprocess, sys
mpi, rounds, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
builds = {"native": None}
for spec in specs:
    label, d = spec.split("=", 1)
    builds[label] = os.path.abspath(f"{d}/libloggp-{mpi}.so")
prog = f"target/release/loggp-prtt-{mpi}"
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
res = {k: {"o_r": [], "g_r": [], "o_s": []} for k in builds}
for _ in range(rounds):
    for k, so in builds.items():
        if mpi == "openmpi":
            shim = ["-x", f"LD_PRELOAD={so}", "-x", "LOGGP_VT=on"] if so else []
            cmd = ["mpirun.openmpi", "-np", "2"] + shim
        else:
            shim = ["-genv", "LD_PRELOAD", so, "-genv", "LOGGP_VT", "on"] if so else []
            cmd = ["mpirun.mpich", "-np", "2", "-genv", "UCX_NET_DEVICES", "lo"] + shim
        cmd = ["flock", "/tmp/loggp-mpi.lock", "timeout", "120"] + cmd + [prog, "--no-fit", "--reps", "200"]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
        rows = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 6 and f[0] in ("or_call", "gr_burst", "gs_burst"):
                rows.setdefault((f[0], int(f[1])), []).append(float(f[5]))
        ns = sorted(n for (kind, n) in rows if kind == "gr_burst")
        t1, tn = S.median(rows["gr_burst", ns[0]]), S.median(rows["gr_burst", ns[-1]])
        res[k]["o_r"].append(S.median(rows["or_call", 1]))
        res[k]["g_r"].append((tn - t1) / (ns[-1] - ns[0]))
        res[k]["o_s"].append(S.median(rows["gs_burst", 1]))
print(f"bench-prtt-zero: {mpi}, np=2, {rounds} rounds; ns, median [min..max] over rounds")
for p in ("o_r", "g_r", "o_s"):
    print(f"  {p}")
    for k, v in ((k, res[k][p]) for k in builds):
        print(f"    {k:10s} {S.median(v):7.1f} [{min(v):.1f}..{max(v):.1f}]")
PY
