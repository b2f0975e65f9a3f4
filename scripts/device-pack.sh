#!/usr/bin/env bash
# Packs .device-bundle/ for the 16-core device machine (../shared/device/README.md)
# with what scripts/device-bench.sh needs there: the shared pack (binaries,
# kernels, bench/, tests/progs) stripped to fit the 64 MiB a call carries,
# and .device-bundle/shims/ with the Open MPI shim and one built for the
# MPICH 5.0.2 wheel (the machine has Open MPI 4.1.6 and no MPICH), named
# libloggp-openmpi.so and libloggp-mpich.so as scripts/bench-compare.sh
# expects, beside the wheel itself. Run after scripts/build.sh; then
#   run: bash scripts/device-bench.sh   carry: [".device-bundle"]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-mpi-wheels.sh mpich5
bash scripts/build-shims.sh "$PWD/target/mpis/mpich5/bin/mpicc" >/dev/null
grep -qx '/.device-bundle/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.device-bundle/' >>.git/info/exclude; }
bash ../shared/device/pack.sh >/dev/null
b=.device-bundle
# Debian's MPICH builds do not run there.
rm -f "$b"/target/release/libloggp-mpich*.so "$b"/target/release/*-mpich
rm -rf "$b"/target/examples/mpich
mkdir -p "$b/shims" "$b/wheels"
cp target/release/libloggp-openmpi.so "$b/shims/"
cp target/release/libloggp-mpich-5.0.so "$b/shims/libloggp-mpich.so"
strip "$b"/target/release/* "$b"/shims/*.so
v=$(sed 's/^mpich==//' target/mpis/mpich5/.installed)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d "$b/wheels" "mpich==$v"
du -sh "$b"
