#!/usr/bin/env bash
# Where the shim's cost per collective goes, in instructions (callgrind):
#
#   scripts/bench-instr-coll.sh [openmpi|mpich] [VAR=VALUE ...]
#
# Runs bench/coll_loop.c (back-to-back 8-byte Allreduces, np=2; with
# NB=1, MPI_Iallreduce + MPI_Wait; with OP=b an 8-byte MPI_Bcast, with
# OP=B an MPI_Barrier, with OP=r an 8-byte MPI_Reduce; OP=p and OP=g time
# the probe path of calibrate's or_call and gr_burst, see coll_loop.c; with
# OP=x SIZE=BYTES, an MPI_Sendrecv exchange of BYTES each way) through the shim
# with LOGGP_VT=on plus the VAR=VALUE given, with 2000 and with 6000
# calls; the difference, divided by the 4000 calls between them, leaves out
# start-up and MPI_Finalize. Prints per Allreduce and rank: the shim's own
# instructions (its functions' self counts) with the largest of them,
# malloc/calloc/free (all callers: the shim's collectives allocated per
# step), the library's datatype queries, and its MPI_Reduce_local with
# what it calls (the shim reduces predefined types itself). Whole-rank totals are not
# printed: the ranks' waiting loops make them noisy. With OP=p or OP=g,
# also the count outside the probe's polling (the shim's own less
# probe_once, iprobe, pull (pull_one), progress_all and the probe wrappers, plus
# malloc/free/memcpy), which moves far less between runs. Needs valgrind and
# scripts/build.sh; SHIM=PATH measures another build. One MPI job at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-openmpi}
shift || true
out=target/bench/instr-coll
. scripts/callgrind-job.sh
cg_init bench-instr-coll "$mpi" "$out"
"mpicc.$mpi" -O2 -o "$out/coll_loop-$mpi" bench/coll_loop.c
for n in 2000 6000; do
  cg_run "$PWD/$out/cg.$n" shim "$@" -- "$out/coll_loop-$mpi" "$n" ${NB:+i} ${OP:-} ${OP:+${SIZE:-}}
done
what="8-byte MPI_Allreduce"
[ -z "${NB:-}" ] || what="8-byte MPI_Iallreduce + MPI_Wait"
[ -n "${NB:-}" ] || [ "${OP:-}" != b ] || what="8-byte MPI_Bcast"
[ -n "${NB:-}" ] || [ "${OP:-}" != B ] || what="MPI_Barrier"
[ -n "${NB:-}" ] || [ "${OP:-}" != r ] || what="8-byte MPI_Reduce"
[ -n "${NB:-}" ] || [ "${OP:-}" != p ] || what="MPI_Probe + MPI_Recv of one 8-byte message (rank 1; rank 0 Isends it)"
[ -n "${NB:-}" ] || [ "${OP:-}" != g ] || what="MPI_Probe of the last of 16 8-byte messages, then 16 MPI_Recv (rank 1)"
[ -n "${NB:-}" ] || [ "${OP:-}" != x ] || what="MPI_Sendrecv exchange of ${SIZE:-0} bytes each way"
python3 - "$out" "$mpi" "$*" "$what" "${NB:+nb}${OP:-}" <<'PY'
import collections, re, subprocess, sys
out, mpi, extra, what, op = sys.argv[1:6]
calls = 4000
POLLING = re.compile(r"probe_once|::iprobe|::pull(_one)?\b|progress_all|MPI_Probe|MPI_Iprobe")

def self_counts(path):
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                          capture_output=True, text=True).stdout
    d = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.+?)(?:\s+\[([^\]]*)\])?\s*$", line)
        if not m:
            continue
        fm = re.match(r"^(.*?\.(?:rs|c|S|h)|\?\?\?):(.*)$", m.group(2))
        file, name = (fm.group(1), fm.group(2)) if fm else ("", m.group(2))
        obj = m.group(3) or ""
        # Inlined code is listed under its source file without an object.
        shim = "libloggp" in obj or "shim/src" in file or "core/src" in file \
            or ((file.startswith("/rustc") or "/rust/deps" in file) and not obj)
        d[("shim" if shim else obj.rsplit("/", 1)[-1], name)] += int(m.group(1).replace(",", ""))
    return d

def library_reductions(path):
    # The library's MPI_Reduce_local with all it calls (inclusive): what the
    # shim paid for a local reduction before it computed the predefined
    # ones itself (loggp_core::reduce).
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes",
                           "--threshold=100", path], capture_output=True, text=True).stdout
    n = 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\?\?\?:PMPI_Reduce_local\s", line)
        if m:
            n += int(m.group(1).replace(",", ""))
    return n

print(f"bench-instr-coll: {mpi}, np=2, {what}; shim: LOGGP_VT=on {extra}".rstrip())
print("instructions per call (callgrind)")
for rank in (0, 1):
    a, b = self_counts(f"{out}/cg.2000.{rank}"), self_counts(f"{out}/cg.6000.{rank}")
    diff = {k: (b[k] - a[k]) / calls for k in set(a) | set(b)}
    shim = {k: v for k, v in diff.items() if k[0] == "shim"}
    alloc = sum(v for k, v in diff.items() if k[0].startswith("libc.so")
                and re.search(r"malloc|calloc|free|realloc", k[1]))
    types = sum(v for k, v in diff.items() if re.search(r"Type_|datatype", k[1]))
    red = (library_reductions(f"{out}/cg.6000.{rank}")
           - library_reductions(f"{out}/cg.2000.{rank}")) / calls
    print(f"  rank {rank}: shim's own {sum(shim.values()):6.0f}   malloc/calloc/free {alloc:5.0f}"
          f"   datatype queries {types:5.0f}   library's MPI_Reduce_local {red:5.0f}")
    if op in ("p", "g"):
        # The probe's polling moves by hundreds between runs (it spins
        # until the message has come): the rest, with the libc calls the
        # shim makes for its buffers, is what a change of the path shows.
        rest = sum(v for k, v in shim.items() if not POLLING.search(k[1]))
        rest += sum(v for k, v in diff.items() if k[0].startswith("libc.so")
                    and re.search(r"malloc|calloc|free|realloc|memcpy|memmove", k[1]))
        print(f"          outside the probe's polling (shim + malloc/free/memcpy) {rest:6.0f}")
    for (_, name), v in sorted(shim.items(), key=lambda kv: -kv[1])[:8]:
        print(f"      {v:6.0f}  {name[:90]}")
PY
