#!/usr/bin/env bash
# The test command: installs what is missing (Debian packages), builds
# everything in release mode, checks formatting and lints (cargo fmt,
# clippy -D warnings, the shim for both MPIs), then runs every test: the pure core's unit
# tests and the integration tests, which launch real mpirun jobs under Open
# MPI and MPICH with the real shim preloaded. Ends with one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# Format and lints first: the workspace (core, cli) and the shim as built
# for each MPI (its build script probes one MPI's headers).
cargo fmt --all -- --check
cargo clippy --release --quiet -p loggp-core -p loggp --all-targets -- -D warnings
for mpi in openmpi mpich; do
  LOGGP_SHIM_MPI=$mpi cargo clippy --release --quiet -p loggp-shim --target-dir "target/shim-$mpi" -- -D warnings
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
