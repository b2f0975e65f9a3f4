#!/usr/bin/env bash
# The test command: installs what is missing (Debian packages; Open MPI 5
# and MPICH 5 from PyPI into target/mpis/), builds everything in release
# mode for the four MPIs, checks formatting and lints (cargo fmt, clippy -D
# warnings, the shim as built for each MPI), then runs every test: the pure
# core's unit tests and the integration tests, which launch real mpirun jobs
# under Open MPI and MPICH (Debian's, and the knob, integrity, probe,
# symbol and calibrate tests on the PyPI ones too) with the real shim
# preloaded. Ends with one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# Open MPI 5 and MPICH 5 from PyPI (virtual environments under
# target/mpis/), and the shim, kernels and examples built for each.
bash scripts/install-mpi-wheels.sh
wheels=(openmpi5 mpich5)
for w in "${wheels[@]}"; do
  MPICC="$PWD/target/mpis/$w/bin/mpicc" bash scripts/build.sh
done
# Format and lints first: the workspace (core, cli) and the shim as built
# for each MPI (its build script probes one MPI's headers).
cargo fmt --all -- --check
cargo clippy --release --quiet -p loggp-core -p loggp --all-targets -- -D warnings
for mpi in openmpi mpich; do
  LOGGP_SHIM_MPI=$mpi MPICC= cargo clippy --release --quiet -p loggp-shim --target-dir "target/shim-$mpi" -- -D warnings
done
for w in "${wheels[@]}"; do
  cc="$PWD/target/mpis/$w/bin/mpicc"
  MPICC=$cc LOGGP_SHIM_MPI= cargo clippy --release --quiet -p loggp-shim \
    --target-dir "target/shim-$(bash scripts/mpi-name.sh "$cc")" -- -D warnings
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Integration tests serialise their MPI jobs with a lock; more test threads
# only add contention on a small machine. (No doc-tests exist.)
set +e
cargo test --workspace --release --no-fail-fast --lib --bins --tests -- --test-threads=2 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
sum() { grep -E '^test result:' "$log" | grep -Eo "[0-9]+ $1" | awk '{s += $1} END {print s + 0}'; }
echo "tests: $(sum passed) passed, $(sum failed) failed"
exit "$rc"
