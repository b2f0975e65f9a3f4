#!/usr/bin/env bash
# Where the shim's cost per message goes, in instructions (callgrind counts
# them exactly: no noise from a shared machine, unlike timings).
#
#   scripts/bench-instr.sh [openmpi|mpich] [VAR=VALUE ...]
#
# Runs bench/rate.c (windows of 64 8-byte Isends against 64 Irecvs, Waitall,
# acknowledgement; np=2; with WAIT=1 set, one MPI_Wait per request instead)
# under valgrind --tool=callgrind, natively and through the shim with
# LOGGP_VT=on plus the VAR=VALUE given (e.g. LOGGP_L=1ns), each with 1000
# and with 3000 windows; the difference, divided by the 128,000 messages
# between them, leaves out start-up and MPI_Finalize. Prints per message:
#   - the shim's own instructions in MPI_Isend (its wrapper less the
#     library's PMPI_Isend), in MPI_Irecv (likewise), and in MPI_Waitall
#     (MPI_Wait) on each side (less the library's, which also counts the
#     polling while a rank waits, and so is left out);
#   - the library's own PMPI_Isend / PMPI_Irecv (what the shim pays to MPI
#     for the message itself: its header makes it 40 bytes of MPI_PACKED);
#   - MPI calls the shim makes on the side (count and instructions).
# Needs valgrind (apt-get install valgrind; not needed by the tests) and
# scripts/build.sh; SHIM=PATH measures another build of the shim. One MPI
# job at a time (flock /tmp/loggp-mpi.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-openmpi}
shift || true
out=target/bench/instr
. scripts/callgrind-job.sh
cg_init bench-instr "$mpi" "$out"
"mpicc.$mpi" -O2 -o "$out/rate-$mpi" bench/rate.c
run() { # run LABEL WINDOWS [VAR=VALUE...]
  local label=$1 windows=$2; shift 2
  local how=shim
  [ "${label%-*}" = native ] && how=native
  cg_run "$PWD/$out/cg.$label" "$how" "$@" -- "$out/rate-$mpi" "$windows" ${WAIT:+wait}
}
for w in 1000 3000; do
  run "native-$w" "$w"
  run "shim-$w" "$w" "$@"
done
python3 - "$out" "$mpi" "$*" "${WAIT:+MPI_Wait}" <<'PY'
import re, subprocess, sys
out, mpi, extra = sys.argv[1], sys.argv[2], sys.argv[3]
done = sys.argv[4] or "MPI_Waitall"
msgs = 2000 * 64

def inclusive(path):
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes",
                           "--threshold=100", path], capture_output=True, text=True).stdout
    d = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(\S+?)(?:\s+\[(.*)\])?\s*$", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        fm = re.match(r"^(.*?\.(?:rs|c|S|h)|\?\?\?):(.*)$", m.group(2))
        file, name = (fm.group(1), fm.group(2)) if fm else ("", m.group(2))
        obj = m.group(3) or ""
        # Inlined code is listed under its source file without an object.
        if "libloggp" in obj or "shim/src/" in file:
            where = "shim"
        else:
            where = obj.rsplit("/", 1)[-1] or "?"
        key = (name, where)
        d[key] = max(d.get(key, 0), n)
    return d

def get(d, name, where):
    return d.get((name, where), 0) / msgs

def per_message(label, rank):
    """Instructions per message: 3000 windows less 1000 windows."""
    a = inclusive(f"{out}/cg.{label}-1000.{rank}")
    b = inclusive(f"{out}/cg.{label}-3000.{rank}")
    return {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b)}

rows = []
for label in ["native", "shim"]:
    for rank in [0, 1]:
        rows.append((label, rank, per_message(label, rank)))

def libget(d, name):
    return max((v for (n, w), v in d.items() if n == name and w != "shim"), default=0) / msgs

print(f"bench-instr: {mpi}, np=2, windows of 64 8-byte messages completed by {done}; shim: LOGGP_VT=on {extra}".rstrip())
print("instructions per message (callgrind)")
nat0, nat1 = rows[0][2], rows[1][2]
sh0, sh1 = rows[2][2], rows[3][2]
def wrapper(d, name):
    """The shim's exported wrapper, inclusive (as MPI_x or PMPI_x: the
    linker may keep either body)."""
    return max(get(d, name, "shim"), get(d, "P" + name, "shim"))

isend_shim = wrapper(sh0, "MPI_Isend") - libget(sh0, "PMPI_Isend")
irecv_shim = wrapper(sh1, "MPI_Irecv") - libget(sh1, "PMPI_Irecv")
wa0 = wrapper(sh0, done) - libget(sh0, "P" + done)
wa1 = wrapper(sh1, done) - libget(sh1, "P" + done)
print(f"  sender   shim in MPI_Isend      {isend_shim:7.0f}   library PMPI_Isend {libget(sh0, 'PMPI_Isend'):5.0f} (native {libget(nat0, 'PMPI_Isend'):5.0f})")
print(f"  sender   shim in {done:15s} {wa0:7.0f}")
print(f"  receiver shim in MPI_Irecv      {irecv_shim:7.0f}   library PMPI_Irecv {libget(sh1, 'PMPI_Irecv'):5.0f} (native {libget(nat1, 'PMPI_Irecv'):5.0f})")
print(f"  receiver shim in {done:15s} {wa1:7.0f}")
side = ["PMPI_Get_elements_x", "PMPI_Status_set_elements_x", "PMPI_Test_cancelled",
        "PMPI_Type_size", "PMPI_Type_get_envelope", "PMPI_Iprobe", "PMPI_Request_get_status",
        "PMPI_Get_count"]
for name in side:
    a, b = libget(sh0, name), libget(sh1, name)
    if a + b >= 1:
        print(f"  side call {name:28s} sender {a:5.0f}  receiver {b:5.0f}")
for fn in ["loggp_shim::clock::now", "__memcpy_avx_unaligned_erms", "malloc", "free"]:
    a = max((v for (n, w), v in sh0.items() if n == fn), default=0) / msgs
    b = max((v for (n, w), v in sh1.items() if n == fn), default=0) / msgs
    if a + b >= 1:
        print(f"  inside   {fn:29s} sender {a:5.0f}  receiver {b:5.0f}  (waiting loops included)")

PY
